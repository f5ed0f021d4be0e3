#!/usr/bin/env bash
# Where a saved run's wall time goes (issue 25): `boardroom run` of a
# generated team against the loopback server, timed from outside, split by
# the run's own events (their `time_ms`). Two binaries alternate, so each
# pair shares its minute.
#
#   cargo build --release --features loopback --bins
#   scripts/run-phases.sh OLD_BIN NEW_BIN [REPS=9] [N=1024]
#
# Prints one line a run, then the medians of each binary, in ms:
#   total             the whole process
#   start             process start to the run_started event (the team's
#                     files, the run directory and its first snapshot)
#   run               run_started to the last review_decision
#   end               that decision to the last event (the last save)
#   exit              the last event to the process's end (the run freed,
#                     the threads ended, the answer printed)
set -euo pipefail

OLD=$1
NEW=$2
REPS=${3:-9}
N=${4:-1024}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LB=${LOOPBACK_BIN:-$ROOT/target/release/boardroom-loopback}
WORK=$(mktemp -d)
trap 'kill "$LB_PID" 2>/dev/null || true; rm -rf "$WORK"' EXIT

. "$ROOT/scripts/loopback.sh"
start_loopback --latency 100ms
URL="$LB_URL#loopback"

team=$WORK/team
"$ROOT/scripts/gen-team.sh" "$N" "$team"

now_ms() { date +%s%3N; }

one() {
  local name=$1 bin=$2 runs=$WORK/runs-$RANDOM t0 t1
  t0=$(now_ms)
  "$bin" run --team "$team" --runs-dir "$runs" --model "$URL" --rounds 1 --no-memory \
    "Write a short guide in parts." >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
  t1=$(now_ms)
  python3 - "$name" "$t0" "$t1" "$runs"/*/events.jsonl <<'PY'
import json, sys
name, t0, t1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ev = [json.loads(l) for l in open(sys.argv[4])]
started = next(e["time_ms"] for e in ev if e["type"] == "run_started")
review = [e["time_ms"] for e in ev if e["type"] == "review_decision"][-1]
last = ev[-1]["time_ms"]
print(name, t1 - t0, started - t0, review - started, last - review, t1 - last)
PY
  rm -rf "$runs"
}

echo "binary total start run end exit"
for _ in $(seq "$REPS"); do
  one old "$OLD"
  one new "$NEW"
done | tee "$WORK/rows"
python3 - "$WORK/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for name in ("old", "new"):
    cols = list(zip(*[map(int, r[1:]) for r in rows if r[0] == name]))
    print(name, "medians:", " ".join(str(statistics.median(c)) for c in cols))
PY
