#!/usr/bin/env python3
"""Load on `boardroom serve` with the offline sim model (issue 27).

Starts the server (the binary given, default target/release/boardroom,
else target/debug/boardroom) on a free port with a fresh runs directory,
then N client threads (default 50) each start runs one after another for
a while: POST /v1/runs, then read the run's server-sent events until the
first one. Reports runs started per second, the p50/p99 time from the
POST being sent to the first event read, 429s met, and the server's peak
RSS (VmHWM). Reports numbers, asserts none.

    python3 scripts/bench-serve.py [--clients 50] [--runs 400] [--max-runs 64] [--bin PATH]
"""
import argparse, http.client, json, os, re, subprocess, sys, tempfile, threading, time

p = argparse.ArgumentParser()
p.add_argument("--clients", type=int, default=50)
p.add_argument("--runs", type=int, default=400, help="runs to start in all")
p.add_argument("--max-runs", type=int, default=64)
p.add_argument("--model", default="sim")
p.add_argument("--bin")
a = p.parse_args()
binary = a.bin or next((b for b in ["target/release/boardroom", "target/debug/boardroom"] if os.path.exists(b)), None)
home = tempfile.mkdtemp(prefix="bench-serve-")
token = "bench-token-0123456789abcdef"
env = dict(os.environ, BOARDROOM_HOME=home, BOARDROOM_TOKEN=token, RUST_LOG="warn")
env.pop("BOARDROOM_RUNS_DIR", None)
log = open(os.path.join(home, "serve.log"), "w+")
srv = subprocess.Popen([binary, "serve", "--port", "0", "--no-memory", "--max-runs", str(a.max_runs)],
                       env=env, stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL)
try:
    port = None
    for _ in range(300):
        log.seek(0)
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", log.read())
        if m:
            port = int(m.group(1)); break
        time.sleep(0.05)
    assert port, "serve did not start"
    auth = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    lock = threading.Lock()
    todo = [a.runs]
    firsts, posts, refused, errors = [], [], [0], []

    def client():
        while True:
            with lock:
                if todo[0] == 0:
                    return
                todo[0] -= 1
            body = json.dumps({"task": "Plan a picnic", "model": a.model})
            while True:
                t0 = time.perf_counter()
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                c.request("POST", "/v1/runs", body, auth)
                r = c.getresponse(); data = r.read(); c.close()
                if r.status == 429:
                    with lock: refused[0] += 1
                    time.sleep(0.05); continue
                if r.status != 201:
                    errors.append((r.status, data[:200])); return
                break
            tp = time.perf_counter()
            rid = json.loads(data)["id"]
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            c.request("GET", f"/v1/runs/{rid}/events", headers=auth)
            r = c.getresponse()
            while True:
                line = r.fp.readline()
                if not line or line.startswith(b"data: "):
                    break
            t1 = time.perf_counter()
            c.close()
            with lock:
                firsts.append(t1 - t0); posts.append(tp - t0)

    start = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(a.clients)]
    for t in threads: t.start()
    for t in threads: t.join()
    wall = time.perf_counter() - start
    # Wait for the last runs to end, then read the peak RSS.
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for _ in range(600):
        c.request("GET", "/v1/runs", headers=auth)
        runs = json.loads(c.getresponse().read())["runs"]
        if all(not r.get("live") for r in runs): break
        time.sleep(0.1)
    done = sum(1 for r in runs if r.get("status") == "done")
    hwm = re.search(r"VmHWM:\s+(\d+) kB", open(f"/proc/{srv.pid}/status").read()).group(1)
    firsts.sort(); posts.sort()
    q = lambda f, xs=firsts: xs[min(len(xs) - 1, int(f * len(xs)))] * 1000
    print(f"binary {binary}; {a.clients} clients, {a.runs} sim runs ({a.model}), --max-runs {a.max_runs}")
    print(f"started {len(firsts)} runs in {wall:.2f} s: {len(firsts) / wall:.1f} runs/s; 429s met: {refused[0]}; errors: {len(errors)} {errors[:3]}")
    print(f"POST to first event: p50 {q(0.5):.1f} ms, p99 {q(0.99):.1f} ms, max {firsts[-1] * 1000:.1f} ms")
    print(f"the POST alone (201): p50 {q(0.5, posts):.1f} ms, p99 {q(0.99, posts):.1f} ms")
    print(f"runs listed {len(runs)}, done {done}; server peak RSS {int(hwm) / 1024:.1f} MiB")
finally:
    srv.terminate(); srv.wait()
