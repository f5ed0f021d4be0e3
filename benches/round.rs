//! The round of N members whose model calls each block for L.
//!
//! Model calls block on I/O, so a round of N members should take about L,
//! whatever the number of cores. Each size runs whole runs of a generated
//! team (the master's plan, one round of N drafts, the master's review;
//! every sim call waits L, as a real model's would) through
//! [`boardroom::bench::bench`], which times the round from the run's own
//! events: the first member call sent to the last one answered, on the
//! default executor (`auto`: rayon for narrow rounds, the run's own pool
//! for wide ones; the `ran on` column says which). Three
//! baselines are measured in the same run: N bare threads (started, each
//! sleeping L, joined: no agent logic at all, what starting a thread per
//! member costs on this machine in this minute), members called one after
//! another, and members on rayon's global pool (one thread per core).
//! Prints a table of ratios; asserts nothing.
//!
//! Run with `cargo bench`. `BENCH_SIZES=1,8,64` and `BENCH_LATENCY_MS=50`
//! change the sizes and the latency (100 ms by default).

use std::time::{Duration, Instant};

use boardroom::Executor;
use boardroom::bench::{BenchOptions, bench};
use boardroom::testing::{Sim, SimOptions};
use boardroom::{ChatModel, ChatRequest, Message, Phase};
use rayon::prelude::*;

/// Sizes above this are measured without the sequential and global-pool
/// baselines (they take N·L and N·L/cores).
const MAX_BASELINE: usize = 256;

fn draft_request(i: usize) -> ChatRequest {
    ChatRequest::new(
        format!("m{i:04}"),
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
    let default_ms = if smoke { 5 } else { 100 };
    let latency = Duration::from_millis(
        std::env::var("BENCH_LATENCY_MS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default_ms),
    );
    let l = latency.as_secs_f64();
    println!(
        "round of N members, sim latency {} ms on every call, {} cores, rayon global pool {} threads",
        latency.as_millis(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        rayon::current_num_threads()
    );
    println!();
    println!(
        "|    N | ran on  | round/L | run wall/ideal | bare threads/L | sequential/L | global pool/L | sequential÷round | global÷round |"
    );
    println!(
        "|-----:|:--------|--------:|---------------:|---------------:|-------------:|--------------:|-----------------:|-------------:|"
    );
    for n in sizes {
        let reps = if n <= 64 { 5 } else { 3 };
        let row = bench(&BenchOptions {
            members: n,
            latency,
            model: None,
            rounds: reps,
            executor: Executor::Auto,
            save: false,
        })
        .expect("the bench runs");
        assert_eq!(row.drafts, n * reps, "every member drafted");
        let round = row.round_ms / 1e3;
        let ran_on = row
            .ran_on
            .map_or_else(|| "-".to_string(), |x| x.to_string());
        let wall_ideal = row.wall_over_ideal.unwrap_or(0.0);
        let bare = median((0..reps).map(|_| bare_threads(n, latency)).collect()).as_secs_f64();
        if n > MAX_BASELINE {
            println!(
                "| {n:>4} | {ran_on:<7} | {:>7.2} | {:>14.2} | {:>14.2} | {:>12} | {:>13} | {:>16} | {:>12} |",
                round / l,
                wall_ideal,
                bare / l,
                "-",
                "-",
                "-",
                "-"
            );
            continue;
        }
        // Baseline 1: one member after another.
        let model = Sim::with_options(SimOptions {
            latency,
            ..SimOptions::default()
        });
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
            "| {n:>4} | {ran_on:<7} | {:>7.2} | {:>14.2} | {:>14.2} | {:>12.2} | {:>13.2} | {:>15.1}x | {:>11.1}x |",
            round / l,
            wall_ideal,
            bare / l,
            s / l,
            g / l,
            s / round.max(f64::EPSILON),
            g / round.max(f64::EPSILON)
        );
    }
}
