#!/usr/bin/env bash
# Issue 25's first figure for two builds in the same minutes: each build's
# `run` (the whole process, as users run it) over its own `bench` (the run
# alone, in process, saving nothing), against one loopback server, the
# builds alternating rep by rep. The baseline may be any earlier release
# binary with `bench --in-process --json` (b0aa95c, before the work on
# saving, has it).
#
#   cargo build --release --features loopback --bins
#   scripts/run-vs-baseline.sh BASELINE_BIN NEW_BIN [REPS=15] [N=1024]
#
# Prints each rep's times and, per build, the medians (of an even count:
# the mean of the two middle ones) and `run` ÷ `bench`, then the baseline's
# `run` median over the new one's. The builds take turns going first (old,
# new; new, old; ...), so neither always follows the other.
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 BASELINE_BIN NEW_BIN [REPS=15] [N=1024]" >&2
  exit 2
fi
OLD=$1
NEW=$2
REPS=${3:-15}
N=${4:-1024}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LB=${LOOPBACK_BIN:-$ROOT/target/release/boardroom-loopback}
[ "$REPS" -ge 1 ] || { echo "REPS must be at least 1" >&2; exit 2; }
WORK=$(mktemp -d)
LB_PID=
trap '[ -n "$LB_PID" ] && kill "$LB_PID" 2>/dev/null; rm -rf "$WORK"' EXIT

. "$ROOT/scripts/loopback.sh"
start_loopback --latency 100ms
URL="$LB_URL#loopback"
"$ROOT/scripts/gen-team.sh" "$N" "$WORK/team"

now_ms() { date +%s%3N; }

run_once() {
  local t0 t1 runs=$WORK/runs-$RANDOM
  t0=$(now_ms)
  "$1" run --team "$WORK/team" --runs-dir "$runs" --model "$URL" --rounds 1 --no-memory \
    "Write a short guide in parts." >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
  t1=$(now_ms)
  rm -rf "$runs"
  echo $((t1 - t0))
}

bench_once() {
  "$1" bench --members "$N" --latency 100ms --rounds 1 --in-process --json --model "$URL" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); r=d["rows"][0] if "rows" in d else d[0]; print(round(r["wall_ms"]))'
}

both() {
  bench_once "$2" >>"$WORK/bench-$1"
  run_once "$2" >>"$WORK/run-$1"
}
for i in $(seq "$REPS"); do
  if [ $((i % 2)) -eq 1 ]; then
    both old "$OLD"; both new "$NEW"
  else
    both new "$NEW"; both old "$OLD"
  fi
done
for b in old new; do
  echo "$b: run $(paste -sd' ' "$WORK/run-$b") ms; bench $(paste -sd' ' "$WORK/bench-$b") ms"
done
python3 - "$WORK" <<'PY'
import statistics, sys
w = sys.argv[1]
med = lambda f: statistics.median(int(l) for l in open(f"{w}/{f}"))
ro, bo, rn, bn = med("run-old"), med("bench-old"), med("run-new"), med("bench-new")
print(f"| build | `run` median | `bench` median | `run` ÷ `bench` |\n|---|---:|---:|---:|")
print(f"| baseline | {ro:.0f} ms | {bo:.0f} ms | {ro / bo:.2f} |")
print(f"| new | {rn:.0f} ms | {bn:.0f} ms | {rn / bn:.2f} |")
print(f"baseline `run` ÷ new `run`: {ro / rn:.2f}")
PY
