//! `boardroom bench` on the sim: the table's and the JSON's shape and
//! counts (never their times), bad flags, and a 1024-member round whose
//! every member call is in flight at once with an explicit pool size.

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use boardroom::testing::Sim;
use boardroom::{
    ChatModel, ChatRequest, ChatResponse, ModelError, Phase, Runtime, bench::bench_team,
};
use parking_lot::{Condvar, Mutex};

fn boardroom(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(args)
        .env_remove("BOARDROOM_MODEL")
        .env_remove("RUST_LOG")
        .output()
        .expect("run boardroom")
}

#[test]
fn bench_json_counts_every_member_of_every_run_in_a_process_per_size() {
    let out = boardroom(&[
        "bench",
        "--members",
        "1,5",
        "--latency",
        "5ms",
        "--rounds",
        "2",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["model"], "sim");
    assert_eq!(v["latency_ms"], 5.0);
    assert_eq!(v["runs_per_size"], 2);
    assert_eq!(v["separate_processes"], true);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for (row, n) in rows.iter().zip([1u64, 5]) {
        assert_eq!(row["members"], n);
        assert_eq!(row["runs"], 2);
        assert_eq!(row["drafts"], 2 * n, "every member drafted in both runs");
        assert_eq!(
            row["peak_in_flight"], n,
            "the whole round in flight at once"
        );
        // The plan, one round, the review: three latencies.
        assert_eq!(row["ideal_ms"], 15.0);
        for key in [
            "wall_ms",
            "wall_over_ideal",
            "round_ms",
            "round_over_latency",
            "members_per_s",
            "p50_ms",
            "p99_ms",
        ] {
            assert!(row[key].as_f64().is_some_and(|x| x > 0.0), "{key}: {row}");
        }
        assert!(row["peak_threads"].as_u64().unwrap() > n);
        assert!(row["peak_rss_kib"].as_u64().unwrap() > 0);
        assert_eq!(row["limit_changes"], 0);
    }
}

#[test]
fn bench_table_has_a_header_and_one_row_per_size() {
    let out = boardroom(&[
        "bench",
        "--members",
        "2,3,4",
        "--latency",
        "0",
        "--rounds",
        "1",
        "--in-process",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    // No latency, no ideal: the ratios are '-'.
    assert!(
        text.lines()
            .skip_while(|l| !l.starts_with("|--"))
            .skip(1)
            .all(|l| l.split('|').nth(3).unwrap().trim() == "-"),
        "{text}"
    );
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(lines.len(), 2 + 3, "{text}");
    assert!(lines[0].contains("wall/ideal") && lines[0].contains("peak RSS"));
    let sizes: Vec<&str> = lines[2..]
        .iter()
        .map(|l| l.split('|').nth(1).unwrap().trim())
        .collect();
    assert_eq!(sizes, ["2", "3", "4"]);
    assert!(text.starts_with("boardroom bench · model sim"), "{text}");
    assert!(text.contains("one process"));
}

#[test]
fn bad_bench_flags_name_the_flag_and_exit_2() {
    for (args, what) in [
        (&["bench", "--members", "8,0"][..], "--members"),
        (&["bench", "--latency", "fast"][..], "--latency"),
        (&["bench", "--rounds", "0"][..], "--rounds"),
        (&["bench", "--model", "nosuch:thing"][..], "--model"),
        (&["bench", "--executor", "rayon,tokio"][..], "--executor"),
    ] {
        let out = boardroom(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(what), "{args:?}: {err}");
    }
}

/// Issue 24: `--executor rayon,threads,auto` measures every size on each
/// executor in one invocation and prints them side by side; `auto` says
/// what it ran on. Counts and shapes only, never times.
#[test]
fn bench_compares_executors_side_by_side_in_one_invocation() {
    let args = [
        "bench",
        "--members",
        "2,3",
        "--latency",
        "5ms",
        "--rounds",
        "1",
        "--executor",
        "rayon,threads,auto",
    ];
    let out = boardroom(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(lines.len(), 2 + 2, "{text}");
    let head: Vec<&str> = lines[0].split('|').map(str::trim).collect();
    for figure in ["round/L", "members/s", "threads", "peak RSS MB"] {
        for x in ["rayon", "threads", "auto"] {
            let title = format!("{figure} {x}");
            assert!(head.contains(&title.as_str()), "{title}: {text}");
        }
    }
    assert_eq!(head.last(), Some(&""));
    assert_eq!(head[head.len() - 2], "auto ran on");
    for (line, n) in lines[2..].iter().zip(["2", "3"]) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert_eq!(cells.len(), head.len(), "{line}");
        assert_eq!(cells[1], n);
        assert_eq!(
            cells[cells.len() - 2],
            "rayon",
            "auto ran small teams on rayon"
        );
    }
    // The same as JSON: a row per size and executor, each naming both.
    let mut json = args.to_vec();
    json.push("--json");
    let out = boardroom(&json);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let got: Vec<(u64, &str, &str)> = rows
        .iter()
        .map(|r| {
            assert_eq!(r["drafts"], r["members"], "{r}");
            (
                r["members"].as_u64().unwrap(),
                r["executor"].as_str().unwrap(),
                r["ran_on"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (2, "rayon", "rayon"),
            (2, "threads", "threads"),
            (2, "auto", "rayon"),
            (3, "rayon", "rayon"),
            (3, "threads", "threads"),
            (3, "auto", "rayon"),
        ]
    );
}

/// The sim, but a member's draft waits until every member's draft has
/// arrived (or a deadline passes): all in flight at once is then a count.
struct Gate {
    sim: Sim,
    want: usize,
    arrived: Mutex<usize>,
    all_in: Condvar,
    /// Drafts that gave up waiting: the others never all arrived.
    gave_up: Mutex<usize>,
}

impl ChatModel for Gate {
    fn name(&self) -> String {
        "gate".into()
    }

    fn chat(
        &self,
        request: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        if request.phase == Phase::Draft {
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut n = self.arrived.lock();
            *n += 1;
            if *n >= self.want {
                self.all_in.notify_all();
            }
            while *n < self.want {
                if self.all_in.wait_until(&mut n, deadline).timed_out() {
                    *self.gave_up.lock() += 1;
                    break;
                }
            }
        }
        self.sim.chat(request, on_delta)
    }
}

#[test]
fn a_round_of_1024_members_is_all_in_flight_at_once_with_an_explicit_pool_size() {
    const N: usize = 1024;
    let gate = Arc::new(Gate {
        sim: Sim::new(),
        want: N,
        arrived: Mutex::new(0),
        all_in: Condvar::new(),
        gave_up: Mutex::new(0),
    });
    let model: boardroom::SharedModel = gate.clone();
    let outcome = Runtime::with_shared_model(bench_team(N).unwrap(), model)
        .max_parallel(N)
        .max_rounds(1)
        .run("all at once")
        .unwrap();
    assert_eq!(*gate.arrived.lock(), N);
    assert_eq!(
        *gate.gave_up.lock(),
        0,
        "all {N} member calls were in flight at once"
    );
    let drafts = outcome
        .board
        .iter()
        .filter(|e| e.kind == boardroom::board::EntryKind::Draft)
        .count();
    assert_eq!(drafts, N);
}
