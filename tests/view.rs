//! Issue 13, the web view: a real headless Chromium (over WebDriver) loads
//! the page of a finished run and of a live one; the CLI's errors; no URL
//! reaches outside the runs directory.

#![cfg(feature = "view")]

mod support;
mod view_support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use boardroom::testing::Scripted;
use boardroom::view::ViewServer;
use boardroom::{Runtime, Team};
use view_support::Browser;

const XSS: &str = "Menu: <script>document.body.setAttribute('data-pwned','script')</script>\
<img src=x onerror=\"document.body.setAttribute('data-pwned','img')\"> and </pre><b>bold</b>";

/// The `owls`: master, writer and the challenger critic.
fn team() -> Team {
    support::teams::trio("owls")
}

/// A finished run, saved under `dir`: the writer's draft is an XSS attempt.
fn finished_run(dir: &Path) -> String {
    let model = Scripted::new()
        .reply(
            "master",
            "ASSIGN:writer:Write the menu\nASSIGN:critic:List the risks",
        )
        .reply("writer", XSS)
        .reply("critic", "Rain. Ants.")
        .reply("critic", "AGREE")
        .reply("master", "DONE\nA picnic with a menu.");
    Runtime::new(team(), model)
        .runs_dir(dir)
        .run("Plan a picnic")
        .unwrap()
        .run_id
}

/// A child process killed and reaped when dropped, even when a test fails.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn get(url: &str) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let mut resp = agent.get(url).call().unwrap();
    let status = resp.status().as_u16();
    (status, resp.body_mut().read_to_string().unwrap_or_default())
}

#[test]
fn a_finished_runs_page_draws_every_agent_the_board_and_keeps_model_text_inert() {
    let tmp = tempfile::tempdir().unwrap();
    let id = finished_run(tmp.path());
    let view = ViewServer::start(tmp.path(), "127.0.0.1", 0).unwrap();
    let browser = Browser::start();
    browser.open(&view.run_url(&id));
    browser.wait_for("return document.body.dataset.phase === 'finished'", 20);

    let mut nodes = browser.nodes();
    nodes.sort();
    assert_eq!(
        nodes,
        vec![
            ("critic@1".to_string(), "done".to_string()),
            ("master@0".to_string(), "done".to_string()),
            ("master@1".to_string(), "done".to_string()),
            ("writer@1".to_string(), "done".to_string()),
        ]
    );
    // The plan calls each member of round 1; each feeds the review.
    let edges = browser.eval(
        "return [...document.querySelectorAll('#graph path.edge')].map(p => p.classList[1] + ':' + p.dataset.from + '>' + p.dataset.to).sort()",
    );
    assert_eq!(
        edges,
        serde_json::json!([
            "board:critic@1>master@1",
            "board:writer@1>master@1",
            "call:master@0>critic@1",
            "call:master@0>writer@1"
        ])
    );
    assert_eq!(
        browser.eval("return document.querySelector('#graph g[data-agent=critic]').dataset.role"),
        "member challenger"
    );

    // The board shows both drafts (and the master's review), each expandable.
    // (Members draft in parallel: either draft may come first.)
    let authors = browser.eval(
        "return [...document.querySelectorAll('#board details.entry')].map(d => d.dataset.author + ':' + d.dataset.kind).sort()",
    );
    assert_eq!(
        authors,
        serde_json::json!(["critic:draft", "master:review", "writer:draft"])
    );
    browser.eval("document.querySelector('#board details[data-author=writer] summary').click()");
    assert_eq!(
        browser.eval("return document.querySelector('#board details[data-author=writer]').open"),
        true
    );
    // The XSS draft is text: shown as written, no element made of it, nothing ran.
    let text = browser.eval(
        "return document.querySelector('#board details[data-author=writer] pre').textContent",
    );
    assert_eq!(text, XSS);
    assert_eq!(
        browser.eval("return document.querySelectorAll('#board script, #board img, #board b, main img').length"),
        0
    );
    assert_eq!(
        browser.eval("return document.body.dataset.pwned || null"),
        serde_json::Value::Null
    );
    // ... and in the turns, prompts and answers alike.
    assert_eq!(
        browser.eval("return [...document.querySelectorAll('#turns pre')].some(p => p.textContent.includes(\"<img src=x onerror\"))"),
        true
    );
    // Totals and the plan.
    assert_eq!(
        browser.eval("return document.getElementById('status').textContent"),
        "done"
    );
    assert_eq!(
        browser.eval(
            "return document.querySelectorAll('#plan tr.module[data-status=completed]').length"
        ),
        2
    );
    assert_eq!(
        browser.eval("return document.querySelectorAll('#totals tr[data-agent]').length"),
        3
    );
    drop(browser);
    view.stop();
}

#[test]
fn a_live_runs_page_fills_in_as_members_finish() {
    let tmp = tempfile::tempdir().unwrap();
    let browser = Browser::start();
    let mut child = Killed(
        Command::new(env!("CARGO_BIN_EXE_boardroom"))
            .args([
                "run",
                "--view",
                "Plan a picnic",
                "--model",
                // Only the members wait, and long: a browser that is slow to
                // start under a loaded CI machine still sees them at work.
                "sim:latency=6s,latency_phases=draft",
            ])
            .arg("--runs-dir")
            .arg(tmp.path())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // `view: http://127.0.0.1:PORT/runs/ID` once the run has its id.
    let mut lines = BufReader::new(child.0.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("the run ended before printing its URL")
            .unwrap();
        if let Some(u) = line.strip_prefix("view: ").filter(|u| u.contains("/runs/")) {
            break u.to_string();
        }
    };
    // The rest of stderr drains on a thread so the run never blocks on it.
    let drain = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    browser.open(&url);
    let mut seen: Vec<Vec<(String, String)>> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while browser.eval("return document.body.dataset.phase") != "finished" {
        assert!(Instant::now() < deadline, "the live page never finished");
        let nodes = browser.nodes();
        if seen.last() != Some(&nodes) {
            seen.push(nodes);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let last = browser.nodes();
    if seen.last() != Some(&last) {
        seen.push(last.clone());
    }
    let members = ["analyst", "critic", "researcher", "writer"];
    for m in members {
        assert!(
            last.contains(&(format!("{m}@1"), "done".to_string())),
            "{m} is not done: {last:?}"
        );
    }
    assert!(
        last.contains(&("master@1".to_string(), "done".to_string())),
        "{last:?}"
    );
    // While the run worked, the page showed members that were not done yet
    // (all of them are at the end): their statuses changed live.
    let unfinished = seen
        .iter()
        .flatten()
        .filter(|(k, s)| !k.starts_with("master@") && s != "done")
        .count();
    assert!(unfinished > 0, "never saw a member at work: {seen:?}");
    assert!(seen.len() >= 2, "the page never changed: {seen:?}");

    drop(browser);
    drop(child); // `run --view` serves until stopped
    let rest = drain.join().unwrap().join("\n");
    assert!(rest.contains("still serving"), "{rest}");
}

#[test]
fn unknown_runs_and_paths_outside_the_runs_dir_are_404() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let id = finished_run(&runs);
    std::fs::write(tmp.path().join("secret.txt"), "top secret").unwrap();
    let view = ViewServer::start(&runs, "127.0.0.1", 0).unwrap();
    let base = view.url();

    let (code, list) = get(&base);
    assert_eq!(code, 200);
    assert!(list.contains(&format!("href=\"/runs/{id}\"")), "{list}");
    assert_eq!(get(&view.run_url(&id)).0, 200);
    let (code, state) = get(&format!("{}/state.json", view.run_url(&id)));
    assert_eq!(code, 200);
    assert!(state.contains("Rain. Ants."));

    let (code, body) = get(&format!("{base}runs/no-such-run"));
    assert_eq!(code, 404);
    assert!(body.contains("No run 'no-such-run' here."), "{body}");
    for path in [
        "runs/..",
        "runs/../secret.txt",
        "runs/%2e%2e/secret.txt",
        "runs/..%2fsecret.txt",
        "secret.txt",
        "runs/.",
        "runs/%2e%2e%2fruns%2f",
        "../secret.txt",
        "runs/%3Cscript%3E",
    ] {
        let (code, body) = get(&format!("{base}{path}"));
        assert_eq!(code, 404, "{path}");
        assert!(!body.contains("top secret"), "{path}");
        assert!(!body.contains("<script>"), "{path}");
    }
    for path in [
        "events.jsonl",
        "run.json",
        "workspace/plan.json",
        "state.json/../run.json",
    ] {
        assert_eq!(get(&format!("{base}runs/{id}/{path}")).0, 404, "{path}");
    }
    // A page elsewhere that rebinds its own DNS name to 127.0.0.1 cannot
    // read the runs: only requests naming this address are served.
    let raw = |host: &str| {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(view.addr()).unwrap();
        write!(
            s,
            "GET /runs/{id}/state.json HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    };
    let port = view.addr().port();
    assert!(raw(&format!("evil.example:{port}")).starts_with("HTTP/1.1 421"));
    assert!(raw(&format!("localhost:{port}")).starts_with("HTTP/1.1 200"));
    view.stop();
    // Another loopback address (`--host 127.0.0.2`) answers to its own name.
    let other = ViewServer::start(&runs, "127.0.0.2", 0).unwrap();
    let (code, body) = get(&other.run_url(&id));
    assert_eq!(code, 200, "{body}");
    other.stop();
}

#[test]
fn view_says_when_the_port_is_taken_there_are_no_runs_or_the_run_is_unknown() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_boardroom");

    let out = Command::new(bin)
        .args(["view", "--runs-dir"])
        .arg(tmp.path().join("runs"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no runs in"), "{err}");
    assert!(
        err.contains("yet: start one with `boardroom run --view \"TASK\"`"),
        "{err}"
    );

    let runs = tmp.path().join("runs");
    finished_run(&runs);
    let out = Command::new(bin)
        .args(["view", "nope", "--runs-dir"])
        .arg(&runs)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error: run 'nope': not found in"), "{err}");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let out = Command::new(bin)
        .args(["view", "last", "--port", &port.to_string(), "--runs-dir"])
        .arg(&runs)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.trim(),
        format!(
            "error: view: cannot listen on 127.0.0.1:{port}: the port is in use (choose another with --port, or --port 0 for a free one)"
        )
    );
}

/// `run --view` goes on serving the finished run; Ctrl-C then stops it
/// and the process exits with the run's own code (0 for a run that was
/// done, 1 for one that failed), not as killed by a signal.
#[test]
fn ctrl_c_after_run_view_exits_with_the_runs_code() {
    let tmp = tempfile::tempdir().unwrap();
    for (model, code) in [("sim", 0), ("sim:fail=master", 1)] {
        let mut child = Killed(
            Command::new(env!("CARGO_BIN_EXE_boardroom"))
                .args([
                    "run",
                    "--view",
                    "Plan a picnic",
                    "--no-memory",
                    "--model",
                    model,
                ])
                .arg("--runs-dir")
                .arg(tmp.path())
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let mut lines = BufReader::new(child.0.stderr.take().unwrap()).lines();
        let serving = loop {
            let line = lines
                .next()
                .expect("the run ended before saying it still serves")
                .unwrap();
            if line.contains("still serving") {
                break line;
            }
        };
        assert!(serving.contains("Ctrl-C"), "{serving}");
        let page = serving
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap();
        assert_eq!(get(page).0, 200, "{serving}");
        let drain = std::thread::spawn(move || lines.map_while(Result::ok).count());

        support::cli::ctrl_c(&child.0);
        let status = support::cli::exit_within(
            &mut child.0,
            Duration::from_secs(10),
            "Ctrl-C did not stop the view",
        );
        assert_eq!(status.code(), Some(code), "{model}: {status:?}");
        drain.join().unwrap();
    }
}

/// `workspace/plan.json` is a file members may write with workspace_write:
/// whatever it holds, the page still draws (as text) and nothing in it runs.
#[test]
fn a_plan_file_a_member_wrote_cannot_break_the_page() {
    let tmp = tempfile::tempdir().unwrap();
    let id = finished_run(tmp.path());
    std::fs::write(
        tmp.path().join(&id).join("workspace").join("plan.json"),
        r#"{"tasks":[{"task_id":{"a":1},"status":"completed","assigned_agent":["<img src=x onerror=document.body.dataset.pwned=1>"],"description":{"x":"<script>document.body.dataset.pwned=2</script>"}},5,null,"<b>x</b>"]}"#,
    )
    .unwrap();
    let view = ViewServer::start(tmp.path(), "127.0.0.1", 0).unwrap();
    let browser = Browser::start();
    browser.open(&view.run_url(&id));
    browser.wait_for("return document.body.dataset.phase === 'finished'", 20);
    assert_eq!(
        browser.eval("return document.querySelectorAll('#plan tr.module').length"),
        1
    );
    assert!(
        browser
            .eval("return document.querySelector('#plan tr.module').textContent")
            .as_str()
            .unwrap()
            .contains("<img src=x")
    );
    assert_eq!(
        browser.eval("return document.querySelectorAll('main img, main script, #plan b').length"),
        0
    );
    assert_eq!(
        browser.eval("return document.body.dataset.pwned || null"),
        serde_json::Value::Null
    );
    // The sections after the plan are drawn too.
    assert!(
        browser
            .eval("return document.querySelectorAll('#turns details.turn').length")
            .as_u64()
            .unwrap()
            > 0
    );
    drop(browser);
    view.stop();
}

/// The id of the one run under `runs` (its `memory/` aside).
fn only_run(runs: &Path) -> String {
    std::fs::read_dir(runs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n != "memory")
        .expect("a run")
}

/// `boardroom ARGS --runs-dir RUNS`, which must succeed.
fn cli(args: &[&str], runs: &Path) {
    let out = support::cli::with_runs_dir(args, runs);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        support::cli::text(&out.stderr)
    );
}

/// Opens run `id`'s page, waits for the end of its events, returns the
/// browser on it.
fn finished_page(view: &ViewServer, id: &str) -> Browser {
    let browser = Browser::start();
    browser.open(&view.run_url(id));
    browser.wait_for("return document.body.dataset.phase === 'finished'", 30);
    browser
}

/// Keeps a PNG of the page under target/ (a test artifact) and says where.
fn keep_screenshot(browser: &Browser, name: &str) {
    browser.fit_page();
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    browser.screenshot(&path);
    println!("screenshot: {}", path.display());
}

/// What every node of the graph says, in the order drawn: its name line,
/// its status line and its cost line (tokens and time, or a message).
fn node_texts(browser: &Browser) -> Vec<Vec<String>> {
    serde_json::from_value(browser.eval(
        "return [...document.querySelectorAll('#graph g.node')].map(g => \
         [...g.querySelectorAll('text')].map(t => t.textContent));",
    ))
    .unwrap()
}

/// The edge labels' boxes, pairwise: none may cross another.
fn overlapping_labels(browser: &Browser) -> serde_json::Value {
    browser.eval(
        "const boxes = [...document.querySelectorAll('#graph text.elabel')].map(t => t.getBBox()); \
         const hit = []; \
         for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) { \
           const a = boxes[i], b = boxes[j]; \
           if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height) hit.push([i, j]); \
         } \
         return hit;",
    )
}

/// Issue 21: a handoff run is drawn as its steps: one node per step of
/// run.json, `step N · agent`, the handoff's reason on the edge into the
/// next step, no "round N" label, no label over another, and every node
/// with the tokens and the time its calls took (sim latency 50 ms: never
/// "0 ms").
#[test]
fn a_handoff_run_is_drawn_as_its_steps_with_reasons_tokens_and_times() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let team = support::cli::repo().join("examples/teams/sequential");
    cli(
        &[
            "run",
            "Write a short guide to brewing green tea",
            "--team",
            team.to_str().unwrap(),
            "--model",
            "sim:latency=50ms",
        ],
        &runs,
    );
    let id = only_run(&runs);
    // The saved run, whole (run.json is a summary since format 2).
    let saved = serde_json::to_value(boardroom::store::load_run(&runs.join(&id)).unwrap()).unwrap();
    let steps = saved["handoff"]["steps"].as_array().unwrap().clone();
    assert_eq!(steps.len(), 4, "{saved}");
    let view = ViewServer::start(&runs, "127.0.0.1", 0).unwrap();
    let browser = finished_page(&view, &id);

    let nodes = node_texts(&browser);
    assert_eq!(nodes.len(), steps.len(), "{nodes:?}");
    for (i, (node, step)) in nodes.iter().zip(&steps).enumerate() {
        let agent = step["agent"].as_str().unwrap();
        assert_eq!(node[0], format!("step {} · {agent}", i + 1), "{nodes:?}");
        assert!(node[1].starts_with("done"), "{nodes:?}");
        let tokens: u64 = node[2].split(' ').next().unwrap().parse().unwrap();
        assert!(tokens > 0, "{nodes:?}");
        assert!(!node[2].ends_with(" 0 ms"), "{nodes:?}");
        assert!(!node[2].contains("<1 ms"), "{nodes:?}");
    }
    // The edges: step N to step N+1, labelled with the reason of its handoff.
    let edges = browser.eval(
        "return [...document.querySelectorAll('#graph text.elabel')].map(t => \
         [t.dataset.from + '>' + t.dataset.to, t.querySelector('title').textContent]);",
    );
    let expected: Vec<serde_json::Value> = steps
        .iter()
        .take(steps.len() - 1)
        .enumerate()
        .map(|(i, s)| {
            serde_json::json!([
                format!("step{}>step{}", i + 1, i + 2),
                s["reason"].as_str().unwrap()
            ])
        })
        .collect();
    assert_eq!(edges, serde_json::Value::Array(expected));
    let text = browser.eval("return document.getElementById('graph').textContent");
    assert!(!text.as_str().unwrap().contains("round"), "{text}");
    assert_eq!(overlapping_labels(&browser), serde_json::json!([]));
    keep_screenshot(&browser, "view-handoff.png");
    drop(browser);
    view.stop();
}

/// Issue 21: after `resume --message` on a finished run, the follow-up
/// round is drawn done like the first, with no node for the user's
/// message and no node left pending; a handoff run shows the message as
/// its own step, followed by the agent that took it.
#[test]
fn a_follow_up_on_a_finished_run_is_drawn_done_with_no_stray_node() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let task = "Write a short guide to brewing green tea";
    cli(&["run", task, "--model", "sim:latency=50ms"], &runs);
    let id = only_run(&runs);
    cli(
        &[
            "resume",
            &id,
            "--message",
            "make it shorter",
            "--model",
            "sim:latency=50ms",
        ],
        &runs,
    );
    let view = ViewServer::start(&runs, "127.0.0.1", 0).unwrap();
    let browser = finished_page(&view, &id);
    let nodes = browser.nodes();
    let members = ["analyst", "critic", "researcher", "writer"];
    let mut expected: Vec<(String, String)> = ["master@0", "master@1", "master@2"]
        .iter()
        .map(|k| (k.to_string(), "done".to_string()))
        .collect();
    for round in [1, 2] {
        for m in members {
            expected.push((format!("{m}@{round}"), "done".to_string()));
        }
    }
    let mut sorted = nodes.clone();
    sorted.sort();
    expected.sort();
    assert_eq!(sorted, expected);
    for node in node_texts(&browser) {
        assert!(!node[2].ends_with(" 0 ms"), "{node:?}");
        assert!(!node[2].starts_with("0 tok"), "{node:?}");
    }
    assert_eq!(overlapping_labels(&browser), serde_json::json!([]));
    keep_screenshot(&browser, "view-followup.png");
    drop(browser);

    // A handoff run: the message is step 5, the publisher takes it in step 6.
    let handoff_runs = tmp.path().join("handoff");
    let team = support::cli::repo().join("examples/teams/sequential");
    let team = team.to_str().unwrap();
    cli(
        &["run", task, "--team", team, "--model", "sim:latency=50ms"],
        &handoff_runs,
    );
    let id = only_run(&handoff_runs);
    cli(
        &[
            "resume",
            &id,
            "--message",
            "make it shorter",
            "--model",
            "sim:latency=50ms",
        ],
        &handoff_runs,
    );
    let handoff_view = ViewServer::start(&handoff_runs, "127.0.0.1", 0).unwrap();
    let browser = finished_page(&handoff_view, &id);
    let names: Vec<String> = node_texts(&browser)
        .into_iter()
        .map(|n| n[0].clone())
        .collect();
    assert_eq!(
        names,
        [
            "step 1 · researcher",
            "step 2 · writer",
            "step 3 · reviewer",
            "step 4 · publisher",
            "step 5 · user",
            "step 6 · publisher"
        ]
    );
    let statuses: Vec<(String, String)> = browser.nodes();
    assert!(statuses.iter().all(|(_, s)| s == "done"), "{statuses:?}");
    let user = &node_texts(&browser)[4];
    assert_eq!(user[2], "“make it shorter”");
    keep_screenshot(&browser, "view-handoff-followup.png");
    drop(browser);
    handoff_view.stop();
    view.stop();
}
