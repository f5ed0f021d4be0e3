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

    /// The WebDriver id of the first element `css` selects.
    fn element(&self, css: &str) -> String {
        let v = self.post(
            &format!("/session/{}/element", self.session),
            &json!({ "using": "css selector", "value": css }),
        );
        let id = v
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str);
        id.unwrap_or_else(|| panic!("no element {css}: {v}"))
            .to_string()
    }

    /// Clicks the element `css` selects, as a user would (WebDriver's
    /// element click: scrolled into view, hit-tested).
    pub fn click(&self, css: &str) {
        let id = self.element(css);
        let v = self.post(
            &format!("/session/{}/element/{id}/click", self.session),
            &json!({}),
        );
        assert!(v.is_null(), "click on {css} failed: {v}");
    }

    /// Types `text` into the element `css` selects.
    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css);
        let v = self.post(
            &format!("/session/{}/element/{id}/value", self.session),
            &json!({ "text": text }),
        );
        assert!(v.is_null(), "typing into {css} failed: {v}");
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

impl Browser {
    /// Saves a PNG of the page, as the browser draws it, to `path`.
    pub fn screenshot(&self, path: &std::path::Path) {
        let mut resp = self
            .agent
            .get(&format!(
                "{}/session/{}/screenshot",
                self.base, self.session
            ))
            .call()
            .unwrap();
        let text = resp.body_mut().read_to_string().unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let png = base64(v["value"].as_str().expect("a screenshot"));
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, png).unwrap();
    }

    /// Resizes the window so the whole page fits, for a screenshot.
    pub fn fit_page(&self) {
        let h = self
            .eval("return document.documentElement.scrollHeight")
            .as_u64()
            .unwrap_or(900)
            .clamp(600, 4000);
        self.post(
            &format!("/session/{}/window/rect", self.session),
            &json!({ "width": 1200, "height": h + 120 }),
        );
    }
}

/// Standard base64 (what WebDriver sends a screenshot in).
fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let digits: Vec<u8> = text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
        .map(value)
        .collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, d)| n | (u32::from(*d) << (18 - 6 * i)));
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
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
