//! Throughput measurement: whole runs of a generated team of N members
//! against the sim or any endpoint, timed from the run's own events and,
//! for the round, at the model in the members' own threads.
//!
//! One [`bench()`] call measures one size: it runs `rounds` whole runs (the
//! master's plan, one round of N drafts, the master's review) and reports
//! the median run's wall time against the ideal (one latency per sequential
//! step: every master call and every round), the round's wall time against
//! one latency, members per second, the 50th and 99th percentile of member
//! call latency, the most member calls in flight at once, the most threads
//! of the process and its peak resident memory.
//!
//! Peak RSS is the kernel's high-water mark of the whole process
//! (`VmHWM`): it only grows. `boardroom bench` measures each size in a
//! child process of its own for that reason.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::event::{Event, EventKind};
use crate::model::{
    ChatModel, ChatRequest, ChatResponse, LimitWatch, LimitWatcher, ModelError, Phase, SharedModel,
};
use crate::record::Executor;
use crate::runtime::Runtime;
use crate::team::{AgentSpec, Team, TeamConfig};
use crate::testing::{Sim, SimOptions};

/// The task every bench run is given.
pub const BENCH_TASK: &str = "Benchmark: each member writes one short part.";

/// What to measure.
#[derive(Clone)]
pub struct BenchOptions {
    /// Members in the generated team (at least 1).
    pub members: usize,
    /// The latency of one model call: the sim's, when `model` is `None`;
    /// for an endpoint, the latency the server is known to add (the ideal
    /// is computed from it).
    pub latency: Duration,
    /// The model; `None`: the sim, waiting `latency` on every call.
    pub model: Option<SharedModel>,
    /// Whole runs to time (the median is reported; at least 1).
    pub rounds: usize,
    /// What runs the members (`Auto`: as a run does by default).
    pub executor: Executor,
    /// Save each run as `boardroom run` does (its directory in a temp
    /// directory, removed after the run, outside the time): `false`, the
    /// runs are not saved at all.
    pub save: bool,
}

impl std::fmt::Debug for BenchOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BenchOptions")
            .field("members", &self.members)
            .field("latency", &self.latency)
            .field("model", &self.model.as_ref().map(|m| m.name()))
            .field("rounds", &self.rounds)
            .field("executor", &self.executor)
            .field("save", &self.save)
            .finish()
    }
}

/// One size's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRow {
    /// Members in the team.
    pub members: usize,
    /// The executor setting the runs were given.
    #[serde(default)]
    pub executor: Executor,
    /// The executor that ran the members, as the runs' `run_started`
    /// events name it (what `Auto` chose).
    #[serde(default)]
    pub ran_on: Option<Executor>,
    /// Whole runs timed.
    pub runs: usize,
    /// The median run's wall time, in milliseconds.
    pub wall_ms: f64,
    /// The ideal: one latency per sequential step (master calls and
    /// rounds), in milliseconds.
    pub ideal_ms: f64,
    /// `wall_ms / ideal_ms` (`None` for a latency of zero).
    pub wall_over_ideal: Option<f64>,
    /// The median round of the runs (first member call sent to last
    /// answer received, timed at the model in the members' own threads),
    /// in milliseconds.
    pub round_ms: f64,
    /// `round_ms` over one latency (`None` for a latency of zero).
    pub round_over_latency: Option<f64>,
    /// Member calls answered per second of round.
    pub members_per_s: f64,
    /// Median member call latency, in milliseconds (all runs; from the
    /// events' stamps, so to the millisecond).
    pub p50_ms: f64,
    /// 99th percentile member call latency, in milliseconds (all runs).
    pub p99_ms: f64,
    /// The most member calls in flight at once (any run).
    pub peak_in_flight: usize,
    /// The most threads the process had at once (sampled every 5 ms).
    pub peak_threads: usize,
    /// The process's peak resident memory (`VmHWM`), in KiB; 0 where the
    /// system does not say.
    pub peak_rss_kib: u64,
    /// Member drafts on the boards (all runs): `members × runs` when none
    /// was lost.
    pub drafts: usize,
    /// Changes of an endpoint's in-flight limit (all runs).
    pub limit_changes: usize,
    /// Whether the runs were saved as `boardroom run` saves them.
    #[serde(default)]
    pub saved: bool,
    /// The size of the median run's directory, in bytes (saved runs only).
    #[serde(default)]
    pub saved_bytes: u64,
}

/// Why a bench could not run.
#[derive(Debug)]
pub struct BenchError(pub String);

impl std::fmt::Display for BenchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BenchError {}

/// The team a bench runs: a master and `n` members `m0000`, `m0001`, ...
///
/// # Errors
///
/// A [`BenchError`] for `n` = 0.
pub fn bench_team(n: usize) -> Result<Team, BenchError> {
    if n == 0 {
        return Err(BenchError("a bench needs at least 1 member".into()));
    }
    let mut agents = Vec::with_capacity(n + 1);
    agents.push(AgentSpec::master(
        "master",
        "You lead. Give every member one part.",
    ));
    agents.extend((0..n).map(|i| {
        AgentSpec::member(
            format!("m{i:04}"),
            "writes one part",
            format!("You are m{i:04}. Write your part in one sentence."),
        )
    }));
    Team::new("bench", TeamConfig::default(), agents).map_err(|e| BenchError(e.to_string()))
}

/// Measures `opts.rounds` whole runs of `opts.members` members.
///
/// # Errors
///
/// A [`BenchError`] when the team cannot be built or a run fails.
pub fn bench(opts: &BenchOptions) -> Result<BenchRow, BenchError> {
    let team = bench_team(opts.members)?;
    let model: SharedModel = match &opts.model {
        Some(m) => std::sync::Arc::clone(m),
        None => std::sync::Arc::new(Sim::with_options(SimOptions {
            latency: opts.latency,
            ..SimOptions::default()
        })),
    };
    let sampler = Sampler::start();
    let idle_threads = quiet_threads();
    let mut runs = Vec::new();
    let mut latencies = Vec::new();
    for _ in 0..opts.rounds.max(1) {
        // The last run's threads end after it returns (their stacks are
        // unmapped as they go): each run starts in a quiet process, not
        // on cores still busy with the one before.
        settle(idle_threads);
        let (tx, rx) = crossbeam_channel::unbounded();
        let collector = std::thread::Builder::new()
            .name("boardroom-bench".into())
            .spawn(move || collect(&rx))
            .map_err(|e| BenchError(format!("cannot start the collector thread: {e}")))?;
        let watch = std::sync::Arc::new(Stopwatch::new(std::sync::Arc::clone(&model)));
        let timed: SharedModel = watch.clone();
        let mut runtime = Runtime::with_shared_model(team.clone(), timed)
            .max_rounds(1)
            .executor(opts.executor)
            .events(tx);
        let runs_dir = opts.save.then(saved_runs_dir).transpose()?;
        if let Some(dir) = &runs_dir {
            runtime = runtime.runs_dir(dir);
        }
        let started = Instant::now();
        let outcome = runtime.run(BENCH_TASK);
        let wall = started.elapsed();
        drop(runtime);
        let saved_bytes = runs_dir.as_deref().map_or(0, dir_bytes);
        if let Some(dir) = &runs_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        let mut seen = collector
            .join()
            .map_err(|_| BenchError("the collector thread panicked".into()))?;
        let outcome = outcome.map_err(|e| BenchError(format!("the run failed: {e}")))?;
        seen.drafts = outcome
            .board
            .iter()
            .filter(|e| e.kind == crate::board::EntryKind::Draft)
            .count();
        seen.wall = wall;
        seen.saved_bytes = saved_bytes;
        if let Some(round) = watch.round() {
            seen.round = round;
        }
        latencies.append(&mut seen.latencies);
        runs.push(seen);
    }
    let (peak_threads, peak_rss_kib) = sampler.stop();
    runs.sort_by_key(|r| r.wall);
    let median = &runs[runs.len() / 2];
    let l = opts.latency.as_secs_f64();
    let ideal = l * median.steps.max(1) as f64;
    let ratio = |x: f64, over: f64| (over > 0.0).then(|| x / over);
    let wall = median.wall.as_secs_f64();
    // The round's own median: the run with the median wall has the
    // median plan and review too, not the median round.
    let mut rounds: Vec<&Seen> = runs.iter().collect();
    rounds.sort_by_key(|r| r.round);
    let median_round = rounds[rounds.len() / 2];
    let round = median_round.round.as_secs_f64();
    latencies.sort();
    Ok(BenchRow {
        members: opts.members,
        executor: opts.executor,
        ran_on: runs.iter().find_map(|r| r.ran_on),
        runs: runs.len(),
        wall_ms: wall * 1e3,
        ideal_ms: ideal * 1e3,
        wall_over_ideal: ratio(wall, ideal),
        round_ms: round * 1e3,
        round_over_latency: ratio(round, l),
        members_per_s: if round > 0.0 {
            median_round.answered as f64 / round
        } else {
            0.0
        },
        p50_ms: percentile(&latencies, 0.50).as_secs_f64() * 1e3,
        p99_ms: percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        peak_in_flight: runs.iter().map(|r| r.peak).max().unwrap_or(0),
        peak_threads,
        peak_rss_kib,
        drafts: runs.iter().map(|r| r.drafts).sum(),
        limit_changes: runs.iter().map(|r| r.limit_changes).sum(),
        saved: opts.save,
        saved_bytes: median.saved_bytes,
    })
}

/// A fresh runs directory for one saved bench run, in the system's temp
/// directory.
fn saved_runs_dir() -> Result<std::path::PathBuf, BenchError> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "boardroom-bench-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir)
        .map_err(|e| BenchError(format!("cannot make {}: {e}", dir.display())))?;
    Ok(dir)
}

/// The bytes of the files under `dir`.
fn dir_bytes(dir: &std::path::Path) -> u64 {
    let Ok(read) = std::fs::read_dir(dir) else {
        return 0;
    };
    read.filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}

/// The process's thread count once it stops falling (threads of earlier
/// work still ending: a caller's, or `cargo bench`'s baselines), waiting
/// at most 2 s; `None` where the system does not say.
fn quiet_threads() -> Option<usize> {
    let until = Instant::now() + Duration::from_secs(2);
    let mut last = process_status()?.1;
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let now = process_status()?.1;
        if now >= last || Instant::now() > until {
            return Some(now);
        }
        last = now;
    }
}

/// Waits (at most 2 s) until the process has no more threads than `idle`;
/// says so when they do not end (a leak would show here).
fn settle(idle: Option<usize>) {
    let Some(idle) = idle else { return };
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        let Some((_, now)) = process_status() else {
            return;
        };
        if now <= idle {
            return;
        }
        if Instant::now() > until {
            log::warn!(
                "bench: {} threads of the last run still alive after 2 s",
                now - idle
            );
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The `q` quantile of sorted `xs` (nearest rank); zero for none.
fn percentile(xs: &[Duration], q: f64) -> Duration {
    if xs.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * xs.len() as f64).ceil() as usize).clamp(1, xs.len());
    xs[rank - 1]
}

/// Times a run's round at the model, in the members' own threads: the
/// first draft call sent to the last answer received, to the microsecond.
/// The events' millisecond stamps were ±1 ms on a latency-0 round of 5 to
/// 30 ms, a fifth of it at 64 members.
struct Stopwatch {
    inner: SharedModel,
    origin: Instant,
    /// Microseconds from `origin`: the first draft call's start (MAX: none
    /// yet) and the last one's end.
    first: std::sync::atomic::AtomicU64,
    last: std::sync::atomic::AtomicU64,
}

impl Stopwatch {
    fn new(inner: SharedModel) -> Self {
        Stopwatch {
            inner,
            origin: Instant::now(),
            first: std::sync::atomic::AtomicU64::new(u64::MAX),
            last: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn micros(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// The round, once a draft call has ended.
    fn round(&self) -> Option<Duration> {
        use std::sync::atomic::Ordering::SeqCst;
        let (a, b) = (self.first.load(SeqCst), self.last.load(SeqCst));
        (a != u64::MAX && b >= a).then(|| Duration::from_micros(b - a))
    }
}

impl ChatModel for Stopwatch {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn chat(
        &self,
        request: &ChatRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse, ModelError> {
        use std::sync::atomic::Ordering::SeqCst;
        if request.phase != Phase::Draft {
            return self.inner.chat(request, on_delta);
        }
        self.first.fetch_min(self.micros(), SeqCst);
        let answer = self.inner.chat(request, on_delta);
        self.last.fetch_max(self.micros(), SeqCst);
        answer
    }

    fn watch_limit(&self, f: LimitWatcher) -> Option<LimitWatch> {
        self.inner.watch_limit(f)
    }

    fn supports_tools(&self) -> bool {
        self.inner.supports_tools()
    }

    fn release_idle(&self, keep: &str) {
        self.inner.release_idle(keep);
    }
}

/// What one run's events say.
#[derive(Default)]
struct Seen {
    wall: Duration,
    round: Duration,
    /// Sequential steps: master calls and rounds.
    steps: usize,
    answered: usize,
    peak: usize,
    latencies: Vec<Duration>,
    drafts: usize,
    limit_changes: usize,
    /// The executor the run's `run_started` names.
    ran_on: Option<Executor>,
    /// Member calls in flight: their start stamps (ms).
    started: HashMap<u64, u64>,
    now_in_flight: usize,
    /// The first member call's start and the last one's end (ms).
    first: Option<u64>,
    last: Option<u64>,
    /// The run directory's size (a saved run).
    saved_bytes: u64,
}

/// Reads a run's events as they come, timing each from its own stamp (when
/// the run's thread emitted it), not from when this reader got it: on two
/// busy cores the reader lags, and a round timed by its lag looked longer
/// than it was. The reader drains what is queued and then sleeps a
/// millisecond instead of waiting on the channel: a waiting reader is woken
/// for every event (thousands a round), and those wake-ups take the cores
/// the members need.
fn collect(rx: &crossbeam_channel::Receiver<Event>) -> Seen {
    let mut seen = Seen::default();
    loop {
        let mut got = false;
        loop {
            match rx.try_recv() {
                Ok(event) => {
                    got = true;
                    seen.observe(&event);
                }
                Err(crossbeam_channel::TryRecvError::Empty) => break,
                Err(crossbeam_channel::TryRecvError::Disconnected) => {
                    seen.settle();
                    return seen;
                }
            }
        }
        if !got {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Seen {
    fn observe(&mut self, event: &Event) {
        let at = event.time_ms;
        match event.kind {
            EventKind::RunStarted { executor, .. } => self.ran_on = executor,
            EventKind::RoundStarted { .. } => self.steps += 1,
            EventKind::CallStarted {
                phase,
                call,
                attempt,
                ..
            } => {
                if phase == Phase::Draft {
                    self.started.insert(call, at);
                    self.first = Some(self.first.map_or(at, |f| f.min(at)));
                    self.now_in_flight += 1;
                    self.peak = self.peak.max(self.now_in_flight);
                } else if attempt == 0 {
                    self.steps += 1;
                }
            }
            EventKind::CallEnded {
                call,
                phase: Phase::Draft,
                ..
            } => {
                if let Some(t) = self.started.remove(&call) {
                    self.latencies
                        .push(Duration::from_millis(at.saturating_sub(t)));
                    self.answered += 1;
                    self.now_in_flight = self.now_in_flight.saturating_sub(1);
                    self.last = Some(self.last.map_or(at, |l| l.max(at)));
                }
            }
            EventKind::LimitChanged { .. } => self.limit_changes += 1,
            _ => {}
        }
    }

    /// The round: the first member call sent to the last answered.
    fn settle(&mut self) {
        if let (Some(a), Some(b)) = (self.first, self.last) {
            self.round = Duration::from_millis(b.saturating_sub(a));
        }
    }
}

/// `VmHWM` (peak resident memory) and `Threads` of this process, from
/// `/proc/self/status`; `None` where there is no such file.
#[must_use]
pub fn process_status() -> Option<(u64, usize)> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some((field("VmHWM:")?, field("Threads:")? as usize))
}

/// Samples the thread count while the runs go on.
struct Sampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<usize>>,
}

impl Sampler {
    fn start() -> Sampler {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = std::sync::Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("boardroom-bench-sampler".into())
            .spawn(move || {
                let mut peak = 0;
                while !s.load(std::sync::atomic::Ordering::Relaxed) {
                    if let Some((_, threads)) = process_status() {
                        peak = peak.max(threads);
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                peak
            })
            .ok();
        Sampler { stop, thread }
    }

    /// The peak thread count and the peak RSS in KiB.
    fn stop(mut self) -> (usize, u64) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let threads = self.thread.take().and_then(|t| t.join().ok()).unwrap_or(0);
        let rss = process_status().map_or(0, |(rss, _)| rss);
        (threads, rss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let xs: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&xs, 0.5), Duration::from_millis(50));
        assert_eq!(percentile(&xs, 0.99), Duration::from_millis(99));
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
        assert_eq!(
            percentile(&[Duration::from_millis(7)], 0.99),
            Duration::from_millis(7)
        );
    }

    /// The round is timed at the model, by draft calls only: a plan call
    /// leaves it unset, and a draft that waits 20 ms makes it at least that.
    #[test]
    fn the_stopwatch_times_draft_calls_only() {
        let sim = Sim::with_options(SimOptions {
            latency: Duration::from_millis(20),
            latency_phases: vec![Phase::Draft],
            ..SimOptions::default()
        });
        let watch = Stopwatch::new(std::sync::Arc::new(sim));
        let ask = |phase| {
            let messages = vec![crate::model::Message::user("<task>t</task>")];
            watch.chat(&ChatRequest::new("m0", phase, 1, messages), &mut |_| {})
        };
        ask(Phase::Plan).unwrap();
        assert_eq!(watch.round(), None, "a plan call is not the round");
        ask(Phase::Draft).unwrap();
        let round = watch.round().expect("a draft call times the round");
        assert!(round >= Duration::from_millis(20), "{round:?}");
    }

    #[test]
    fn issue25_a_saved_bench_saves_each_run_as_run_does_and_cleans_up() {
        let row = bench(&BenchOptions {
            members: 8,
            latency: Duration::ZERO,
            model: None,
            rounds: 1,
            executor: Executor::Threads,
            save: true,
        })
        .unwrap();
        assert!(row.saved);
        assert_eq!(row.drafts, 8);
        // run.json, team.json, state.jsonl, the logs: some kilobytes.
        assert!(row.saved_bytes > 4096, "{}", row.saved_bytes);
        let prefix = format!("boardroom-bench-{}-", std::process::id());
        let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn a_sim_bench_counts_every_member() {
        let row = bench(&BenchOptions {
            members: 16,
            latency: Duration::from_millis(20),
            model: None,
            rounds: 2,
            executor: Executor::Threads,
            save: false,
        })
        .unwrap();
        assert_eq!(row.members, 16);
        assert_eq!(row.ran_on, Some(Executor::Threads));
        assert_eq!(row.runs, 2);
        assert_eq!(row.drafts, 32, "every member drafted in both runs");
        assert_eq!(row.peak_in_flight, 16, "the whole round at once");
        // plan, the round, the review: three steps of one latency.
        assert_eq!(row.ideal_ms, 60.0);
        assert!(row.p99_ms >= row.p50_ms);
    }
}
