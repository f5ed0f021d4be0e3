//! `boardroom-loopback`, the benchmarks' loopback server and raw client
//! (built with `--features loopback`; `scripts/test.sh` runs this file with
//! it): it answers chat completions, streamed or whole, playing the
//! protocol; its latency holds requests (counted in flight, never timed);
//! it refuses above `--max-concurrent`; `/stats` counts and reports its
//! CPU; the raw client counts its requests; `boardroom bench` runs whole
//! runs against it over HTTP.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_boardroom-loopback");

/// A running `boardroom-loopback serve`, killed (by its own handle) on drop.
struct Loopback {
    child: Child,
    url: String,
    /// One client, keeping its connections alive.
    agent: ureq::Agent,
}

impl Loopback {
    fn start(args: &[&str]) -> Loopback {
        let mut child = Command::new(BIN)
            .arg("serve")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start boardroom-loopback");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("its base url");
        let url = line.trim().to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");
        assert!(url.ends_with("/v1"), "{url:?}");
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(20)))
            .build()
            .into();
        Loopback { child, url, agent }
    }

    /// A chat completion: status, content type, body.
    fn chat(&self, body: &Value) -> (u16, String, String) {
        let mut r = self
            .agent
            .post(&format!("{}/chat/completions", self.url))
            .header("Content-Type", "application/json")
            .send(body.to_string())
            .expect("an answer");
        let ct = r
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        (
            r.status().as_u16(),
            ct,
            r.body_mut().read_to_string().unwrap(),
        )
    }

    fn stats(&self) -> Value {
        let base = self.url.trim_end_matches("/v1");
        let text = self
            .agent
            .get(&format!("{base}/stats"))
            .call()
            .unwrap()
            .body_mut()
            .read_to_string()
            .unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// `n` plan requests sent at once from `n` threads (released together
    /// once all have started): their statuses.
    fn chat_at_once(&self, n: usize, stream: bool) -> Vec<u16> {
        let ready = std::sync::Barrier::new(n);
        std::thread::scope(|s| {
            let hs: Vec<_> = (0..n)
                .map(|_| {
                    s.spawn(|| {
                        ready.wait();
                        self.chat(&plan_request(stream)).0
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    /// `boardroom-loopback raw` against this server: its JSON line.
    fn raw(&self, args: &[&str]) -> Value {
        let out = Command::new(BIN)
            .args(["raw", "--url", &self.url])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn reset(&self) {
        let base = self.url.trim_end_matches("/v1");
        self.agent
            .post(&format!("{base}/stats/reset"))
            .send("")
            .unwrap();
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn plan_request(stream: bool) -> Value {
    json!({"model": "lb", "stream": stream, "messages": [
        {"role": "system", "content": "You lead."},
        {"role": "user", "content": "<roster>\n- ann: writes\n- bob: edits\n</roster>\n\nSplit this task among the members of your roster."}
    ]})
}

#[test]
fn it_answers_chat_completions_whole_and_streamed_playing_the_protocol() {
    let lb = Loopback::start(&[]);
    let (status, ct, body) = lb.chat(&plan_request(false));
    assert_eq!(status, 200, "{body}");
    assert_eq!(ct, "application/json");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["model"], "lb");
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "ASSIGN:ann:write your part\nASSIGN:bob:write your part\n"
    );
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert!(v["usage"]["prompt_tokens"].as_u64().unwrap() > 0);

    let (status, ct, body) = lb.chat(&plan_request(true));
    assert_eq!(status, 200, "{body}");
    assert_eq!(ct, "text/event-stream");
    let events: Vec<&str> = body
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .collect();
    assert_eq!(events.len(), 3, "{body}");
    assert_eq!(events[2], "[DONE]");
    let first: Value = serde_json::from_str(events[0]).unwrap();
    assert_eq!(
        first["choices"][0]["delta"]["content"],
        "ASSIGN:ann:write your part\nASSIGN:bob:write your part\n"
    );
    let last: Value = serde_json::from_str(events[1]).unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert!(last["usage"]["total_tokens"].as_u64().unwrap() > 0);

    // A member's turn and the review.
    let member =
        json!({"model": "lb", "messages": [{"role": "user", "content": "Write your part."}]});
    let (_, _, body) = lb.chat(&member);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "A part, written.");
    let review = json!({"model": "lb", "messages": [{"role": "user", "content": "Round 1 of at most 1 is over. This is the board"}]});
    let (_, _, body) = lb.chat(&review);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert!(
        v["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .starts_with("DONE\n")
    );

    let stats = lb.stats();
    assert_eq!(stats["requests"], 4, "{stats}");
    assert_eq!(stats["streamed"], 1, "{stats}");
    let sent: usize = [plan_request(false), plan_request(true), member, review]
        .iter()
        .map(|b| b.to_string().len())
        .sum();
    assert_eq!(stats["request_bytes"], sent as u64, "{stats}");
    assert_eq!(stats["connections"], 1, "kept alive: {stats}");
    assert_eq!(stats["rejected"], 0);
    assert_eq!(stats["in_flight"], 0);
    assert!(stats["cpu_ms"].is_u64(), "its own CPU time: {stats}");
}

#[test]
fn its_latency_holds_requests_at_once_and_it_refuses_above_the_cap() {
    // Latency 0: one connection's requests never overlap.
    let fast = Loopback::start(&["--latency", "0"]);
    for _ in 0..5 {
        assert_eq!(fast.chat(&plan_request(false)).0, 200);
    }
    assert_eq!(fast.stats()["peak_in_flight"], 1);

    // A latency long enough that 8 parallel requests are all held at once
    // (the count proves the hold; nothing is timed). 1.5 s raced with the
    // threads' start on a loaded machine.
    let slow = Loopback::start(&["--latency", "5s"]);
    assert_eq!(slow.chat_at_once(8, true), vec![200; 8]);
    let stats = slow.stats();
    assert_eq!(stats["requests"], 8, "{stats}");
    assert_eq!(stats["peak_in_flight"], 8, "{stats}");
    slow.reset();
    let stats = slow.stats();
    assert_eq!(stats["requests"], 0, "{stats}");
    assert_eq!(stats["peak_in_flight"], 0, "{stats}");

    // Above --max-concurrent it answers 429 at once.
    let capped = Loopback::start(&["--latency", "5s", "--max-concurrent", "3"]);
    let statuses = capped.chat_at_once(8, false);
    assert_eq!(statuses.iter().filter(|&&s| s == 200).count(), 3);
    assert_eq!(statuses.iter().filter(|&&s| s == 429).count(), 5);
    let stats = capped.stats();
    assert_eq!(stats["rejected"], 5, "{stats}");
    assert_eq!(stats["peak_in_flight"], 3, "{stats}");
}

#[test]
fn the_raw_client_and_a_boardroom_bench_count_their_requests_against_it() {
    let lb = Loopback::start(&["--latency", "5ms"]);
    let v = lb.raw(&["--threads", "4", "--requests", "12"]);
    assert_eq!(v["requests"], 12);
    assert_eq!(v["failed"], 0);
    assert_eq!(v["stream"], false);
    assert!(v["requests_per_s"].as_f64().unwrap() > 0.0);
    assert_eq!(lb.stats()["requests"], 12);
    assert!(
        lb.stats()["connections"].as_u64().unwrap() <= 5,
        "4 threads, kept alive"
    );

    // Boardroom's shape: streamed, a body of about 900 bytes.
    lb.reset();
    let v = lb.raw(&[
        "--threads",
        "2",
        "--requests",
        "4",
        "--stream",
        "--body-bytes",
        "900",
    ]);
    assert_eq!(v["failed"], 0, "{v}");
    assert_eq!(v["body_bytes"], 900, "{v}");
    let stats = lb.stats();
    assert_eq!(stats["streamed"], 4, "{stats}");
    assert_eq!(stats["request_bytes"], 4 * 900, "{stats}");

    // A whole boardroom run over HTTP: plan, 16 members, review.
    lb.reset();
    let out = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args([
            "bench",
            "--members",
            "16",
            "--latency",
            "5ms",
            "--rounds",
            "1",
            "--json",
            "--in-process",
            "--model",
            &format!("{}#loopback", lb.url),
        ])
        .env_remove("BOARDROOM_MODEL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rows"][0]["drafts"], 16, "{v}");
    let stats = lb.stats();
    assert_eq!(stats["requests"], 18, "plan, 16 drafts, review: {stats}");
    assert_eq!(stats["streamed"], 18, "{stats}");
    assert_eq!(stats["rejected"], 0);
    // Boardroom keeps its connections alive: at most one per member and
    // the master's (reused by its review), and this test's own client.
    assert!(stats["connections"].as_u64().unwrap() <= 18, "{stats}");
}

#[test]
fn bad_flags_exit_2_naming_the_flag_and_value() {
    let out = Command::new(BIN)
        .args(["serve", "--latency", "soon"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "boardroom-loopback: --latency: 'soon' is not a duration (100ms, 0.2s, 0)\n"
    );
    let out = Command::new(BIN).arg("fly").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage: boardroom-loopback serve"));
}
