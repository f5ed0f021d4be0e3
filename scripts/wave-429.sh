#!/usr/bin/env bash
# Issue 28, finding 6, as it was run: a team of N members (default 2048)
# against the loopback server, which answers the first request of each
# distinct body with 429 and `Retry-After: SECS` (each agent refused once,
# the plan call too), then answers it. Before the fix, 572 of 2048 members
# failed on the 5-minute call deadline and the run still exited 0.
#
#   cargo build --release --features loopback --bins
#   scripts/wave-429.sh [N=2048] [SECS=1]
#
# Prints the run's exit code, its status, how many members drafted and how
# many failed (`error` entries on the board), the wall time, and the
# server's counts (requests, refusals, peak in flight). Exit code: the
# run's. The binaries: BOARDROOM_BIN and LOOPBACK_BIN, else target/release.
set -euo pipefail

N=${1:-2048}
SECS=${2:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BOARDROOM_BIN:-$ROOT/target/release/boardroom}
LB=${LOOPBACK_BIN:-$ROOT/target/release/boardroom-loopback}
for b in "$BIN" "$LB"; do
  [ -x "$b" ] || { echo "missing $b: cargo build --release --features loopback --bins" >&2; exit 2; }
done
WORK=$(mktemp -d)
LB_PID=
trap '[ -n "$LB_PID" ] && kill "$LB_PID" 2>/dev/null; rm -rf "$WORK"' EXIT

# Raise the soft limit of open files where the hard limit allows: the run
# holds a connection per member in flight (finding 7 is another script's).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

. "$ROOT/scripts/loopback.sh"
start_loopback --latency 100ms --refuse-once "$SECS"
BASE=$LB_URL

# A team of N members, as files.
TEAM=$WORK/team
"$ROOT/scripts/gen-team.sh" "$N" "$TEAM"

t0=$(date +%s%3N)
set +e
"$BIN" run --team "$TEAM" --runs-dir "$WORK/runs" --model "$BASE#loopback" --rounds 1 \
  --no-memory --json "Write a short guide in parts." >"$WORK/events.jsonl" 2>"$WORK/run.err"
code=$?
set -e
t1=$(date +%s%3N)
STATS=$(curl -s "${BASE%/v1}/stats" || echo '{}')

python3 - "$WORK/runs" "$code" "$((t1 - t0))" "$N" "$STATS" <<'EOF'
import json, pathlib, sys
runs, code, wall, n, stats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
dirs = [d for d in pathlib.Path(runs).iterdir() if d.is_dir()] if pathlib.Path(runs).exists() else []
status, drafted, failed, first = "?", 0, 0, ""
if dirs:
    run = json.loads((dirs[0] / "run.json").read_text())
    status = run.get("status", "?")
    journal = dirs[0] / "journal.jsonl"
    for line in journal.read_text().splitlines() if journal.exists() else []:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        e = r.get("entry") or {}
        if r.get("record") != "entry" or e.get("author") == "master":
            continue
        if e.get("kind") == "draft":
            drafted += 1
        elif e.get("kind") == "error":
            failed += 1
            first = first or e.get("text", "")[:160]
print(f"members: {n}  drafted: {drafted}  failed: {failed}  status: {status}  exit code: {code}")
print(f"wall: {wall / 1000:.1f} s  server: {stats}")
if first:
    print(f"first failure: {first}")
EOF
tail -3 "$WORK/run.err" >&2
exit "$code"
