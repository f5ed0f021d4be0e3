//! `boardroom bench`: whole runs of generated teams of N members, one table
//! row (or JSON object) per N. Each N runs in a child process of its own
//! (the same binary with `--in-process`), so that each row's peak RSS is
//! that size's alone: the kernel's high-water mark only grows.
//!
//! `--executor rayon,threads,auto` measures each size on each executor in
//! the same invocation, one after another, and prints them side by side.

use std::process::Command;
use std::time::Duration;

use boardroom::Executor;
use boardroom::bench::{BenchOptions, BenchRow, bench};

use super::exit::{CliError, Kind, Outcome};

#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    /// Team sizes to measure, comma-separated (each at least 1).
    #[arg(long, value_name = "N,N,...", value_delimiter = ',', default_value = "1,8,64,256,1024", value_parser = members)]
    pub(crate) members: Vec<usize>,
    /// The latency of one model call: the sim's, or what the endpoint's
    /// server is known to add (the ideal is computed from it): 100ms, 0.2s, 0.
    #[arg(long, value_name = "DUR", default_value = "100ms", value_parser = latency)]
    pub(crate) latency: Duration,
    /// The model: `sim` (default, waiting --latency on every call) or any
    /// spec `boardroom run --model` takes (`http://127.0.0.1:8080/v1#m`, ...).
    #[arg(long, value_name = "SPEC")]
    pub(crate) model: Option<String>,
    /// Whole runs per size; the median run is reported (at least 1).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = runs)]
    pub(crate) rounds: usize,
    /// What runs the members, comma-separated to compare them side by side
    /// in one table: auto, rayon, threads.
    #[arg(
        long,
        value_name = "E,E,...",
        value_delimiter = ',',
        default_value = "auto"
    )]
    pub(crate) executor: Vec<Executor>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Measure every size in this process (peak RSS is then the process's
    /// high-water mark over all sizes so far).
    #[arg(long)]
    pub(crate) in_process: bool,
    /// Save every run as `boardroom run` does (into a temp directory,
    /// removed after each run, outside the time): what users run. Without
    /// it the runs are not saved.
    #[arg(long)]
    pub(crate) save: bool,
}

fn members(v: &str) -> Result<usize, String> {
    match v.trim().parse::<usize>() {
        Ok(n) if (1..=100_000).contains(&n) => Ok(n),
        _ => Err(format!(
            "'{v}' is not a team size (allowed 1 to 100000, comma-separated)"
        )),
    }
}

fn runs(v: &str) -> Result<usize, String> {
    match v.trim().parse::<usize>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(format!("'{v}' is not a number of runs (allowed 1 to 1000)")),
    }
}

/// `100ms`, `0.2s`, `250us`, `0`.
fn latency(v: &str) -> Result<Duration, String> {
    let t = v.trim();
    let bad = || format!("'{v}' is not a latency (e.g. 100ms, 0.2s, 0; at most 60s)");
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if t == "0" {
        (t, 1.0)
    } else {
        return Err(bad());
    };
    let x: f64 = num.trim().parse().map_err(|_| bad())?;
    let secs = x * scale;
    if !(0.0..=60.0).contains(&secs) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(secs))
}

/// What the JSON output holds.
#[derive(serde::Serialize, serde::Deserialize)]
struct Report {
    model: String,
    latency_ms: f64,
    cores: usize,
    runs_per_size: usize,
    separate_processes: bool,
    rows: Vec<BenchRow>,
}

pub(crate) fn main(args: &BenchArgs) -> Result<Outcome, CliError> {
    let model = match args.model.as_deref().map(str::trim) {
        None | Some("sim") | Some("") => None,
        Some(spec) => Some(
            boardroom::openai::resolve_model(spec)
                .map_err(|e| CliError::context(Kind::BadInput, "--model", e).bare())?,
        ),
    };
    let name = model
        .as_ref()
        .map_or_else(|| "sim".to_string(), |m| m.name());
    // Each executor once, in the order given.
    let mut executors: Vec<Executor> = Vec::new();
    for &x in &args.executor {
        if !executors.contains(&x) {
            executors.push(x);
        }
    }
    let mut rows = Vec::new();
    for &n in &args.members {
        let mut side = Vec::new();
        for &executor in &executors {
            let row = if args.in_process {
                bench(&BenchOptions {
                    members: n,
                    latency: args.latency,
                    model: model.clone(),
                    rounds: args.rounds,
                    executor,
                    save: args.save,
                })
                .map_err(|e| e.to_string())
            } else {
                child(args, n, executor)
            };
            let row = row.map_err(|e| {
                let measured = format!("bench with {n} members on {executor}");
                CliError::context(Kind::Failed, measured, e).bare()
            })?;
            side.push(row);
        }
        if !args.json {
            if rows.is_empty() {
                header(&name, args, &executors);
            }
            match side.as_slice() {
                [row] => print_row(row),
                _ => print_side_by_side(&side),
            }
        }
        rows.extend(side);
    }
    if args.json {
        let report = Report {
            model: name,
            latency_ms: args.latency.as_secs_f64() * 1e3,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            runs_per_size: args.rounds,
            separate_processes: !args.in_process,
            rows,
        };
        let text = serde_json::to_string(&report)
            .map_err(|e| CliError::context(Kind::Failed, "bench", e).bare())?;
        println!("{text}");
    }
    Ok(Outcome::Done)
}

/// One size, measured by this binary in a child process.
fn child(args: &BenchArgs, n: usize, executor: Executor) -> Result<BenchRow, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.args(["bench", "--in-process", "--json", "--members"])
        .arg(n.to_string())
        .arg("--latency")
        .arg(format!("{}us", args.latency.as_micros()))
        .arg("--rounds")
        .arg(args.rounds.to_string())
        .arg("--executor")
        .arg(executor.to_string());
    if args.save {
        cmd.arg("--save");
    }
    if let Some(m) = &args.model {
        cmd.arg("--model").arg(m);
    }
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot start the child process: {e}"))?;
    if !out.status.success() {
        return Err(format!("the child process ended with {}", out.status));
    }
    let report: Report = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("the child process printed no report: {e}"))?;
    report
        .rows
        .into_iter()
        .next()
        .ok_or_else(|| "the child process measured nothing".to_string())
}

fn header(model: &str, args: &BenchArgs, executors: &[Executor]) {
    let names: Vec<String> = executors.iter().map(ToString::to_string).collect();
    println!(
        "boardroom bench · model {model} · latency {} ms · {} cores · median of {} run(s) · {} · executor {} (auto: rayon up to {} members) · {}",
        args.latency.as_secs_f64() * 1e3,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        args.rounds,
        if args.in_process {
            "one process (peak RSS is the process's so far)"
        } else {
            "each size in its own process"
        },
        names.join(", "),
        Executor::auto_limit(),
        if args.save {
            "runs saved as `run` saves them"
        } else {
            "runs not saved (--save: as `run` saves them)"
        },
    );
    println!();
    if let [_, _, ..] = executors {
        side_header(executors);
        return;
    }
    println!(
        "|     N |     wall | wall/ideal | round/L | members/s | p50 ms | p99 ms | peak in flight | threads | peak RSS | ran on  |"
    );
    println!(
        "|------:|---------:|-----------:|--------:|----------:|-------:|-------:|---------------:|--------:|---------:|:--------|"
    );
}

/// The figures compared side by side, each with a column per executor.
const SIDE: [&str; 4] = ["round/L", "members/s", "threads", "peak RSS MB"];

/// The header of the side-by-side table: `round/L rayon | round/L threads
/// | ...`, then what each `auto` ran on.
fn side_header(executors: &[Executor]) {
    let mut head = "|     N |".to_string();
    let mut rule = "|------:|".to_string();
    for figure in SIDE {
        for x in executors {
            let title = format!("{figure} {x}");
            head.push_str(&format!(" {title:>w$} |", w = title.len().max(9)));
            rule.push_str(&format!("{}:|", "-".repeat(title.len().max(9) + 1)));
        }
    }
    head.push_str(" auto ran on |");
    rule.push_str(":------------|");
    println!("{head}");
    println!("{rule}");
}

/// One size on every executor, side by side.
fn print_side_by_side(rows: &[BenchRow]) {
    let mut line = format!("| {:>5} |", rows.first().map_or(0, |r| r.members));
    for figure in SIDE {
        for r in rows {
            let title = format!("{figure} {}", r.executor);
            let value = match figure {
                "round/L" => ratio(r.round_over_latency),
                "members/s" => format!("{:.0}", r.members_per_s),
                "threads" => r.peak_threads.to_string(),
                _ => format!("{:.1}", r.peak_rss_kib as f64 / 1024.0),
            };
            line.push_str(&format!(" {value:>w$} |", w = title.len().max(9)));
        }
    }
    let auto = rows
        .iter()
        .find(|r| r.executor == Executor::Auto)
        .and_then(|r| r.ran_on)
        .map_or_else(|| "-".to_string(), |x| x.to_string());
    line.push_str(&format!(" {auto:<11} |"));
    println!("{line}");
}

fn print_row(r: &BenchRow) {
    println!(
        "| {:>5} | {:>5.0} ms | {:>10} | {:>7} | {:>9.0} | {:>6.0} | {:>6.0} | {:>14} | {:>7} | {:>5.1} MB | {:<7} |",
        r.members,
        r.wall_ms,
        ratio(r.wall_over_ideal),
        ratio(r.round_over_latency),
        r.members_per_s,
        r.p50_ms,
        r.p99_ms,
        r.peak_in_flight,
        r.peak_threads,
        r.peak_rss_kib as f64 / 1024.0,
        r.ran_on.map_or_else(|| "-".to_string(), |x| x.to_string())
    );
}

/// A ratio with two decimals, or `-` where there is none (latency 0).
fn ratio(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |x| format!("{x:.2}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies() {
        assert_eq!(latency("100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(latency("0.2s"), Ok(Duration::from_millis(200)));
        assert_eq!(latency("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(latency("0"), Ok(Duration::ZERO));
        assert!(latency("100").is_err());
        assert!(latency("-1s").is_err());
        assert!(latency("61s").is_err());
    }
}
