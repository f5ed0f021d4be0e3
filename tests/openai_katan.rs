//! Whole runs against a real third-party OpenAI-compatible server:
//! llm-katan's echo backend (installed by scripts/setup-llm-katan.sh into
//! .venv/). These tests fail, never skip, when it is missing.
//!
//! The echo backend answers with the last user message, so it never writes
//! a directive of its own: a task that holds an `ASSIGN:` line is echoed
//! back as the plan (members draft, challengers give no verdict and are
//! asked again, the review assigns again until the round cap, the master
//! writes the final answer), and a plain task takes the logical retry path
//! (no usable plan: an error entry, then the master's final answer).

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use boardroom::board::EntryKind;
use boardroom::openai::RetryPolicy;
use boardroom::testing::OpenAiProbe;
use boardroom::{OpenAi, RunStatus, Runtime, Team};

struct Katan {
    child: Child,
    port: u16,
    _stats: tempfile::TempDir,
}

impl Katan {
    fn start(extra: &[&str]) -> Katan {
        let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/llm-katan");
        assert!(
            bin.exists(),
            "llm-katan not found at {}: run scripts/setup-llm-katan.sh",
            bin.display()
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let stats = tempfile::tempdir().unwrap();
        let stats_file = stats.path().join("stats.json");
        let child = Command::new(&bin)
            .args([
                "--model",
                "test-model",
                "--backend",
                "echo",
                "--host",
                "127.0.0.1",
            ])
            .args(["--port", &port.to_string(), "--max-concurrent", "16"])
            .args(["--log-level", "warning", "--disable-dashboard"])
            .arg("--stats-file")
            .arg(&stats_file)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start llm-katan");
        let katan = Katan {
            child,
            port,
            _stats: stats,
        };
        katan.wait_ready();
        katan
    }

    /// Polls until the server answers /health (a readiness cap, not a
    /// timing assertion: it starts in about a second).
    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let url = format!("http://127.0.0.1:{}/health", self.port);
        while Instant::now() < deadline {
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok()
                && ureq::get(&url).call().is_ok()
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("llm-katan did not become ready on port {}", self.port);
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    fn model(&self, stream: bool) -> OpenAi {
        OpenAi::builder(self.base_url(), "test-model")
            .api_key("katan-test-key")
            .stream(stream)
            .retry(RetryPolicy {
                max_attempts: 8,
                base_delay: Duration::from_millis(50),
                max_delay: Duration::from_millis(500),
            })
            .build()
            .unwrap()
    }
}

impl Drop for Katan {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const TASK: &str = "Write a haiku about tea\nASSIGN:writer:Write a haiku about green tea";

fn whole_run(katan: &Katan, stream: bool) -> boardroom::RunOutcome {
    let outcome = Runtime::new(Team::builtin().unwrap(), katan.model(stream))
        .max_rounds(2)
        .run(TASK)
        .unwrap();
    assert_eq!(outcome.status, RunStatus::RoundLimit, "{outcome:?}");
    assert!(outcome.answer.starts_with("[echo]"), "{}", outcome.answer);
    let drafts: Vec<_> = outcome
        .board
        .iter()
        .filter(|e| e.kind == EntryKind::Draft)
        .collect();
    // Round 2 may hold more than one: the echoed board repeats the line.
    assert!(drafts.iter().any(|d| d.round == 1) && drafts.iter().any(|d| d.round == 2));
    assert!(drafts.iter().all(|d| d.author == "writer"));
    assert!(outcome.usage.total() > 0);
    assert!(outcome.usage_by_agent.contains_key("writer"));
    outcome
}

#[test]
fn a_whole_run_streaming() {
    let katan = Katan::start(&[]);
    whole_run(&katan, true);
}

#[test]
fn a_whole_run_not_streaming() {
    let katan = Katan::start(&[]);
    whole_run(&katan, false);
}

#[test]
fn a_whole_run_survives_a_30_percent_error_rate() {
    let katan = Katan::start(&["--error-rate", "0.3"]);
    let model = katan.model(true);
    whole_run_with(&model);
    assert!(
        !model.retry_waits().is_empty(),
        "some of the ~20 calls met a 500 and were retried"
    );
}

fn whole_run_with(model: &OpenAi) {
    let outcome = Runtime::new(Team::builtin().unwrap(), model.clone())
        .max_rounds(2)
        .run(TASK)
        .unwrap();
    assert_eq!(outcome.status, RunStatus::RoundLimit, "{outcome:?}");
    assert!(outcome.answer.starts_with("[echo]"));
    assert!(
        outcome.board.iter().all(|e| e.kind != EntryKind::Error),
        "{:?}",
        outcome.board
    );
}

#[test]
fn a_master_that_never_plans_fails_the_run_after_the_logical_retry() {
    // Issue 9: with no plan, no member drafts; the run fails and says why
    // instead of answering with the master's echo of its prompt.
    let katan = Katan::start(&[]);
    let err = Runtime::new(Team::builtin().unwrap(), katan.model(true))
        .run("Write a haiku about tea")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "no member produced a usable draft (the master gave no usable plan)"
    );
}

#[test]
fn the_cli_completes_prints_usage_and_never_the_key() {
    let katan = Katan::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let key = "sk-katan-cli-7opsecret";
    let out = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(["run", TASK, "--rounds", "1"])
        .current_dir(dir.path())
        .env("BOARDROOM_HOME", dir.path())
        // As the acceptance test: no --model, only the environment.
        .env_remove("BOARDROOM_MODEL")
        .env("OPENAI_BASE_URL", katan.base_url())
        .env("OPENAI_API_KEY", key)
        .env("RUST_LOG", "trace")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.starts_with("[echo]"), "{stdout}");
    assert!(stderr.contains("tokens by agent:"), "{stderr}");
    assert!(stderr.contains("  writer"), "{stderr}");
    assert!(!stdout.contains("7opsecret") && !stderr.contains("7opsecret"));
}
