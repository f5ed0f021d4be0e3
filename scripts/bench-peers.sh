#!/usr/bin/env bash
# Side by side against one fast loopback server (boardroom-loopback, built
# with --features loopback): the same flow, master -> N members -> master
# review, run by boardroom (`boardroom bench`), by LangGraph (Send fan-out;
# sync as a new user writes it, and async), and N raw requests sent by a
# plain ureq loop on N threads with no agent logic. Prints wall/ideal and
# peak RSS of each, the server's own CPU time, then requests/s at latency 0
# against the raw loop at the same concurrency. The raw loop sends what
# boardroom sends: streamed answers, bodies of boardroom's average size (the
# server counts them), on kept-alive connections.
#
#   scripts/bench-peers.sh [N ...]      (default: 8 64 256 1024)
#   LATENCY_MS=100 (default)  SKIP_SYNC=1 (leave out LangGraph sync)
#
# Installs langgraph and langchain-openai into .venv-peers/ in the checkout
# (idempotent: nothing happens when the pinned versions are there).
set -euo pipefail
cd "$(dirname "$0")/.."

LANGGRAPH=1.2.22
LANGCHAIN_OPENAI=1.7.3
SIZES=${*:-8 64 256 1024}
LAT=${LATENCY_MS:-100}

have() {
  .venv-peers/bin/python -m pip show "$1" 2>/dev/null | grep -qx "Version: $2"
}
if ! { [ -x .venv-peers/bin/python ] && have langgraph "$LANGGRAPH" && have langchain-openai "$LANGCHAIN_OPENAI"; }; then
  python3 -m venv .venv-peers
  .venv-peers/bin/python -m pip install --quiet --disable-pip-version-check \
    "langgraph==$LANGGRAPH" "langchain-openai==$LANGCHAIN_OPENAI"
fi

cargo build --quiet --release --features loopback --bins
BIN=target/release
TMP=$(mktemp -d)
cleanup() {
  # Each server's pid is in a file: start_server runs in a $(...) subshell,
  # where a shell variable would be lost (the servers outlived the script).
  for f in "$TMP"/*.pid; do
    [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  rm -rf "$TMP"
}
trap cleanup EXIT

# Starts a server with latency $1 (ms); prints its base URL.
start_server() {
  local out="$TMP/server-$1.out"
  "$BIN/boardroom-loopback" serve --latency "$1ms" >"$out" &
  echo $! >"$TMP/server-$1.pid"
  for _ in $(seq 100); do
    [ -s "$out" ] && break
    sleep 0.05
  done
  head -1 "$out"
}
cpu_ms() { curl -s "${1%/v1}/stats" | .venv-peers/bin/python -c 'import json,sys; print(json.load(sys.stdin)["cpu_ms"])'; }
field() { .venv-peers/bin/python -c "import json,sys; d=json.load(sys.stdin); d=d['rows'][0] if 'rows' in d else d; print(d['$1'])"; }
fmt() { .venv-peers/bin/python -c "import sys; w,i=float(sys.argv[1]),float(sys.argv[2]); print(f'{w:8.0f} ms | {w/i:10.2f}')" "$1" "$2"; }
mb() { .venv-peers/bin/python -c "import sys; print(f'{int(sys.argv[1])/1024:6.1f} MB')" "$1"; }

URL=$(start_server "$LAT")
cores=$(nproc)
echo "bench-peers · loopback server latency L = ${LAT} ms · $cores cores · $(uname -sr)"
echo "ideal: 3 L for a run (plan, round, review), L for the raw loop; one run each; server CPU is its own user+system time"
echo
echo "|     N | runner           |        wall | wall/ideal | peak RSS | server CPU |"
echo "|------:|------------------|------------:|-----------:|---------:|-----------:|"
row() { # N name wall ideal rss cpu
  printf "| %5s | %-16s | %s | %8s | %7s ms |\n" "$1" "$2" "$(fmt "$3" "$4")" "$(mb "$5")" "$6"
}
for n in $SIZES; do
  ideal=$((3 * LAT))
  c0=$(cpu_ms "$URL")
  curl -s -X POST "${URL%/v1}/stats/reset" >/dev/null
  out=$("$BIN/boardroom" bench --members "$n" --latency "${LAT}ms" --rounds 1 --json --in-process --model "$URL#loopback")
  c1=$(cpu_ms "$URL")
  row "$n" boardroom "$(echo "$out" | field wall_ms)" "$ideal" "$(echo "$out" | field peak_rss_kib)" $((c1 - c0))
  # Boardroom's average request body, for the raw loop to send the same.
  BODY=$(curl -s "${URL%/v1}/stats" | .venv-peers/bin/python -c 'import json,sys; d=json.load(sys.stdin); print(d["request_bytes"]//max(1,d["requests"]))')
  for mode in async sync; do
    if [ "$mode" = sync ] && [ -n "${SKIP_SYNC:-}" ]; then continue; fi
    c0=$(cpu_ms "$URL")
    out=$(.venv-peers/bin/python scripts/bench_langgraph.py --url "$URL" --members "$n" --mode "$mode")
    c1=$(cpu_ms "$URL")
    drafts=$(echo "$out" | field drafts)
    [ "$drafts" = "$n" ] || echo "langgraph $mode: $drafts drafts of $n" >&2
    row "$n" "langgraph $mode" "$(echo "$out" | field wall_ms)" "$ideal" "$(echo "$out" | field peak_rss_kib)" $((c1 - c0))
  done
  c0=$(cpu_ms "$URL")
  out=$("$BIN/boardroom-loopback" raw --url "$URL" --threads "$n" --requests "$n" --stream --body-bytes "$BODY")
  c1=$(cpu_ms "$URL")
  row "$n" "raw ureq loop" "$(echo "$out" | field wall_ms)" "$LAT" "$(echo "$out" | field peak_rss_kib)" $((c1 - c0))
done

# Requests per second at latency 0, same concurrency: a boardroom round of
# N members (members/s of the round, the median of 15 runs on one model, so
# its connections are kept alive from run to run) against N raw threads
# sending N (one each, the round's shape) and 8 N (sustained), the raw
# requests of boardroom's shape (streamed, boardroom's average body), each
# raw figure the median of 3 runs. A round at latency 0 is 5-30 ms: one run
# of either side moves by a third on a shared machine.
URL0=$(start_server 0)
echo
echo "latency 0: requests/s, boardroom round of N members vs the raw ureq loop on N threads (streamed, same body size)"
echo
echo "|     N | boardroom members/s | raw, N requests/s | ratio | raw, 8 N requests/s | ratio |"
echo "|------:|--------------------:|------------------:|------:|--------------------:|------:|"
for n in 64 256; do
  curl -s -X POST "${URL0%/v1}/stats/reset" >/dev/null
  b=$("$BIN/boardroom" bench --members "$n" --latency 0 --rounds 15 --json --in-process --model "$URL0#loopback" | field members_per_s)
  BODY=$(curl -s "${URL0%/v1}/stats" | .venv-peers/bin/python -c 'import json,sys; d=json.load(sys.stdin); print(d["request_bytes"]//max(1,d["requests"]))')
  # The median of 3 raw runs; a run that fails ends the script, saying so.
  raw3() {
    local got=()
    for _ in 1 2 3; do
      local one
      if ! one=$("$BIN/boardroom-loopback" raw --url "$URL0" --threads "$n" --requests "$1" --stream --body-bytes "$BODY" | field requests_per_s) || [ -z "$one" ]; then
        echo "bench-peers: the raw loop failed (N = $n, $1 requests)" >&2
        exit 1
      fi
      got+=("$one")
    done
    printf '%s\n' "${got[@]}" | sort -g | sed -n 2p
  }
  r1=$(raw3 "$n")
  r8=$(raw3 $((8 * n)))
  .venv-peers/bin/python -c "import sys; n=int(sys.argv[1]); b,r1,r8=map(float,sys.argv[2:]); print(f'| {n:5d} | {b:19.0f} | {r1:17.0f} | {b/r1:5.2f} | {r8:19.0f} | {b/r8:5.2f} |')" "$n" "$b" "$r1" "$r8"
done
