//! Issue 28, finding 4: the view's `state.json` holds a bounded part of a
//! run's `turns.jsonl`, however large it grew; the rest is counted.

mod support;

use std::io::Write;
use std::time::Duration;

use boardroom::Runtime;
use boardroom::testing::Scripted;
use boardroom::view::ViewServer;

/// This process's peak resident memory in MiB (`VmHWM`).
fn peak_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM in /proc/self/status")
        / 1024
}

#[test]
fn a_huge_turns_file_is_served_in_a_bounded_part() {
    let tmp = tempfile::tempdir().unwrap();
    let model = Scripted::new()
        .reply("master", "ASSIGN:writer:Write")
        .reply("writer", "A draft.")
        .reply("critic", "AGREE")
        .reply("master", "DONE\nok");
    let id = Runtime::new(support::teams::trio("owls"), model)
        .runs_dir(tmp.path())
        .run("Plan")
        .unwrap()
        .run_id;
    // 40 turns of 1 MB and one of 5 MB: 45 MB of turns.
    let turns = tmp.path().join(&id).join("turns.jsonl");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&turns)
        .unwrap();
    let mb = "x".repeat(1 << 20);
    for i in 0..40 {
        writeln!(
            f,
            "{{\"turn_id\":{},\"agent\":\"writer\",\"prompt\":\"{mb}\"}}",
            1000 + i
        )
        .unwrap();
    }
    writeln!(
        f,
        "{{\"turn_id\":2000,\"prompt\":\"{}\"}}",
        "y".repeat(5 << 20)
    )
    .unwrap();
    drop((f, mb));
    let before = peak_mib();

    let view = ViewServer::start(tmp.path(), "127.0.0.1", 0).unwrap();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    let url = format!("{}/state.json", view.run_url(&id));
    for _ in 0..3 {
        let body = agent
            .get(&url)
            .call()
            .unwrap()
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .unwrap();
        let peak = peak_mib();
        assert!(
            peak < before + 60,
            "peak RSS rose from {before} to {peak} MiB serving a 45 MB turns file"
        );
        assert!(body.len() < 9 << 20, "{} bytes of state", body.len());
        let state: serde_json::Value = serde_json::from_str(&body).unwrap();
        let omitted = state["turns_omitted"].as_u64().unwrap();
        assert!(omitted >= 33, "{omitted} turns left out");
        let last = state["turns"].as_array().unwrap().last().unwrap()["turn_id"].clone();
        assert_eq!(last, 1039, "the newest turns that fit are kept");
    }
    view.stop();
    let peak = peak_mib();
    assert!(
        peak < before + 60,
        "peak RSS rose from {before} to {peak} MiB serving a 45 MB turns file three times"
    );
}
