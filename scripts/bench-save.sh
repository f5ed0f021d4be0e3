#!/usr/bin/env bash
# What saving a run costs (issue 25): `boardroom run` (which saves the run)
# against `boardroom bench` (which saves nothing) on the same generated team,
# against the loopback server, interleaved so each pair shares its minute.
#
#   cargo build --release --features loopback --bins
#   scripts/bench-save.sh [N_BIG=1024] [N_SMALL=256] [REPS=3]
#
# Prints, for N_BIG members: the median wall of `run` as users run it (the
# whole process: loading the team from its files, the run, saving it, its
# progress lines and answer printed) and of `bench` (the run alone, in
# process, saving nothing), their ratio; `bench --save` (the same, saving
# the run as `run` does) over `bench`; the size of `run.json` and of the
# whole run directory; for N_SMALL members: `run`'s median wall over the
# ideal of three latencies (3 × 100 ms).
set -euo pipefail

N_BIG=${1:-1024}
N_SMALL=${2:-256}
REPS=${3:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BOARDROOM_BIN:-$ROOT/target/release/boardroom}
LB=${LOOPBACK_BIN:-$ROOT/target/release/boardroom-loopback}
WORK=$(mktemp -d)
trap 'kill "$LB_PID" 2>/dev/null || true; rm -rf "$WORK"' EXIT

. "$ROOT/scripts/loopback.sh"
start_loopback --latency 100ms
URL="$LB_URL#loopback"

# The team `boardroom bench` builds in memory, as files.
team() {
  "$ROOT/scripts/gen-team.sh" "$1" "$WORK/team-$1"
  echo "$WORK/team-$1"
}

now_ms() { date +%s%3N; }

# One `run` of team $1 into runs dir $2: prints its wall in ms.
run_once() {
  local t0 t1
  t0=$(now_ms)
  "$BIN" run --team "$1" --runs-dir "$2" --model "$URL" --rounds 1 --no-memory \
    "Write a short guide in parts." >/dev/null 2>"$WORK/run.err" || { cat "$WORK/run.err" >&2; exit 1; }
  t1=$(now_ms)
  echo $((t1 - t0))
}

bench_once() {
  "$BIN" bench --members "$1" --latency 100ms --rounds 1 --in-process --json --model "$URL" ${2:-} |
    python3 -c 'import json,sys; d=json.load(sys.stdin); r=d["rows"][0] if "rows" in d else d[0]; print(round(r["wall_ms"]))'
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

BIG=$(team "$N_BIG")
SMALL=$(team "$N_SMALL")
: >"$WORK/runs.txt"; : >"$WORK/bench.txt"; : >"$WORK/small.txt"; : >"$WORK/saved.txt"
for r in $(seq "$REPS"); do
  bench_once "$N_BIG" >>"$WORK/bench.txt"
  bench_once "$N_BIG" --save >>"$WORK/saved.txt"
  run_once "$BIG" "$WORK/runs-big-$r" >>"$WORK/runs.txt"
  run_once "$SMALL" "$WORK/runs-small-$r" >>"$WORK/small.txt"
done
RUN=$(median <"$WORK/runs.txt")
BENCH=$(median <"$WORK/bench.txt")
SAVED=$(median <"$WORK/saved.txt")
SMALL_MS=$(median <"$WORK/small.txt")
DIR=$(ls -d "$WORK"/runs-big-1/*/ | head -1)
RUN_JSON=$(stat -c %s "$DIR/run.json")
DIR_BYTES=$(du -sb "$DIR" | cut -f1)
echo "run ${N_BIG}: $(paste -sd' ' "$WORK/runs.txt") ms; bench ${N_BIG}: $(paste -sd' ' "$WORK/bench.txt") ms; bench --save ${N_BIG}: $(paste -sd' ' "$WORK/saved.txt") ms; run ${N_SMALL}: $(paste -sd' ' "$WORK/small.txt") ms"
echo "files of one ${N_BIG}-member run:"
(cd "$DIR" && find . -type f -printf "  %-24p %10s\n" | sort)
python3 - "$RUN" "$BENCH" "$SMALL_MS" "$RUN_JSON" "$DIR_BYTES" "$N_BIG" "$N_SMALL" "$SAVED" <<'EOF'
import sys
run, bench, small, rj, d, nb, ns, saved = map(int, sys.argv[1:])
print(f"| figure | value |\n|---|---:|")
print(f"| `run` ÷ `bench`, {nb} members, medians | {run/bench:.2f} ({run} ms / {bench} ms) |")
print(f"| `bench --save` ÷ `bench`, {nb} members (the saving alone, in process) | {saved/bench:.2f} ({saved} ms) |")
print(f"| `run` with {ns} members ÷ ideal (3 × 100 ms) | {small/300:.2f} ({small} ms) |")
print(f"| `run.json` after the run | {rj/1024:.1f} KB |")
print(f"| the whole run directory | {d/1e6:.2f} MB |")
EOF
