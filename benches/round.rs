//! Round wall time for N members whose model calls each block for L.
//!
//! Model calls block on I/O, so a round of N members should take about L,
//! whatever the number of cores. Three baselines are measured in the same
//! run: members called one after another, members on rayon's global pool
//! (one thread per core), and the floor of a run that starts its threads:
//! N bare threads started, each sleeping L, and joined, with no agent
//! logic at all. Prints a table of ratios; asserts nothing.
//!
//! Run with `cargo bench`. `BENCH_SIZES=1,8,64` and `BENCH_LATENCY_MS=50`
//! change the sizes and the latency.

use std::time::{Duration, Instant};

use boardroom::board::EntryKind;
use boardroom::testing::{Sim, SimOptions};
use boardroom::{AgentSpec, ChatModel, ChatRequest, Message, Phase, Runtime, Team, TeamConfig};
use rayon::prelude::*;

/// Sizes above this are measured without the two baselines.
const MAX_BASELINE: usize = 256;

fn team(n: usize) -> Team {
    let mut agents = vec![AgentSpec::master("master", "You lead.")];
    agents.extend((0..n).map(|i| AgentSpec::member(format!("m{i:03}"), "a member", "You work.")));
    Team::new("bench", TeamConfig::default(), agents).expect("a valid team")
}

fn sim(latency: Duration) -> Sim {
    // Only drafts wait: the table measures the round of members, not the
    // master's turns around it.
    Sim::with_options(SimOptions {
        latency,
        latency_phases: vec![Phase::Draft],
        ..SimOptions::default()
    })
}

fn draft_request(i: usize) -> ChatRequest {
    ChatRequest::new(
        format!("m{i:03}"),
        Phase::Draft,
        1,
        vec![
            Message::system("You work."),
            Message::user("<task>\nbench\n</task>\n<assignment>\npart\n</assignment>"),
        ],
    )
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

/// N named threads with the members' stack size, each sleeping `latency`,
/// started and joined: what starting a round's threads costs by itself.
fn bare_threads(n: usize, latency: Duration) -> Duration {
    time(|| {
        std::thread::scope(|s| {
            for i in 0..n {
                std::thread::Builder::new()
                    .name(format!("bare-{i}"))
                    .stack_size(1024 * 1024)
                    .spawn_scoped(s, || std::thread::sleep(latency))
                    .expect("a thread");
            }
        });
    })
}

fn time(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` does not, and
    // then one quick pass checks that the benchmark still runs.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let sizes: Vec<usize> = match std::env::var("BENCH_SIZES") {
        Ok(s) => s.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        Err(_) if smoke => vec![1, 8],
        Err(_) => vec![1, 8, 64, 256, 512, 2048],
    };
    let default_ms = if smoke { 5 } else { 50 };
    let latency = Duration::from_millis(
        std::env::var("BENCH_LATENCY_MS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default_ms),
    );
    let l = latency.as_secs_f64();
    println!(
        "round of N members, sim latency {} ms, {} cores, rayon global pool {} threads",
        latency.as_millis(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        rayon::current_num_threads()
    );
    println!();
    println!(
        "|    N | boardroom wall | wall/L | bare threads/L | sequential/L | global pool/L | sequential÷ours | global÷ours |"
    );
    println!(
        "|-----:|---------------:|-------:|---------------:|-------------:|--------------:|----------------:|------------:|"
    );
    for n in sizes {
        let team = team(n);
        // Ours: a whole run (plan, the round, review) with waits only in the round.
        let reps = if n <= 64 { 5 } else { 3 };
        let ours = median(
            (0..reps)
                .map(|_| {
                    let runtime = Runtime::new(team.clone(), sim(latency));
                    time(|| {
                        let run = runtime.run("bench").expect("the run finishes");
                        let drafts = run
                            .board
                            .iter()
                            .filter(|e| e.kind == EntryKind::Draft)
                            .count();
                        assert_eq!(drafts, n, "every member drafted");
                    })
                })
                .collect(),
        );
        let o = ours.as_secs_f64();
        let bare = median((0..reps).map(|_| bare_threads(n, latency)).collect()).as_secs_f64();
        // The baselines take N·L and N·L/cores: measured up to 256 only.
        if n > MAX_BASELINE {
            println!(
                "| {n:>4} | {:>11.1} ms | {:>6.2} | {:>14.2} | {:>12} | {:>13} | {:>15} | {:>11} |",
                o * 1e3,
                o / l,
                bare / l,
                "-",
                "-",
                "-",
                "-"
            );
            continue;
        }
        // Baseline 1: one member after another.
        let model = sim(latency);
        let sequential = time(|| {
            for i in 0..n {
                model
                    .chat(&draft_request(i), &mut |_| {})
                    .expect("sim answers");
            }
        });
        // Baseline 2: rayon's global pool, sized by cores.
        let global = time(|| {
            (0..n).into_par_iter().for_each(|i| {
                model
                    .chat(&draft_request(i), &mut |_| {})
                    .expect("sim answers");
            });
        });
        let (s, g) = (sequential.as_secs_f64(), global.as_secs_f64());
        println!(
            "| {n:>4} | {:>11.1} ms | {:>6.2} | {:>14.2} | {:>12.2} | {:>13.2} | {:>14.1}x | {:>10.1}x |",
            o * 1e3,
            o / l,
            bare / l,
            s / l,
            g / l,
            s / o,
            g / o
        );
    }
}
