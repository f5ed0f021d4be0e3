//! A headless Chromium driven over WebDriver (Debian's `chromium-driver`,
//! installed by scripts/setup-chromium.sh): start, open a page, run a
//! script in it, read the DOM. Plain HTTP with ureq; the browser and the
//! driver end when the value drops.

#![allow(dead_code)] // each test file uses a different part

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::free_port;

pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    agent: ureq::Agent,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver and a headless chromium session. Fails (does
    /// not skip) when they are not installed.
    pub fn start() -> Browser {
        let port = free_port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver not found: run scripts/setup-chromium.sh");
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(30)))
            .http_status_as_error(false)
            .build()
            .into();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let ready = agent
                .get(&format!("{base}/status"))
                .call()
                .ok()
                .and_then(|mut r| r.body_mut().read_to_string().ok())
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .is_some_and(|v| v["value"]["ready"] == true);
            if ready {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        let profile = tempfile::tempdir().unwrap();
        let args = vec![
            "--headless".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--disable-dev-shm-usage".into(),
            "--window-size=1200,900".into(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args}
        }}});
        let mut browser = Browser {
            driver,
            base,
            session: String::new(),
            agent,
            _profile: profile,
        };
        let v = browser.post("/session", &caps);
        browser.session = v["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {v}"))
            .to_string();
        browser
    }

    fn post(&self, path: &str, body: &Value) -> Value {
        let mut resp = self
            .agent
            .post(&format!("{}{path}", self.base))
            .header("Content-Type", "application/json")
            .send(body.to_string())
            .unwrap();
        let text = resp.body_mut().read_to_string().unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        v["value"].clone()
    }

    /// Opens `url` and waits for its load event.
    pub fn open(&self, url: &str) {
        let v = self.post(
            &format!("/session/{}/url", self.session),
            &json!({ "url": url }),
        );
        assert!(v.is_null(), "navigation failed: {v}");
    }

    /// Runs `script` (a function body; `return` gives the value) in the page.
    pub fn eval(&self, script: &str) -> Value {
        self.post(
            &format!("/session/{}/execute/sync", self.session),
            &json!({ "script": script, "args": [] }),
        )
    }

    /// Polls `script` until it returns true (at most `secs` seconds).
    pub fn wait_for(&self, script: &str, secs: u64) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while self.eval(script) != Value::Bool(true) {
            assert!(
                Instant::now() < deadline,
                "page never satisfied: {script}\n{}",
                self.eval("return document.body.innerText")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The status of every node of the call graph: `agent@round` → status
    /// (the master has a node per round it decides in: 0 the plan, r the review).
    pub fn nodes(&self) -> Vec<(String, String)> {
        let v = self.eval(
            "return [...document.querySelectorAll('#graph g.node')].map(g => \
             [g.dataset.agent + '@' + g.dataset.round, g.dataset.status]);",
        );
        v.as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p[0].as_str().unwrap().to_string(),
                    p[1].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self
                .agent
                .delete(&format!("{}/session/{}", self.base, self.session))
                .call();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
