//! Issue 27, the page `boardroom serve` serves: a real headless Chromium
//! (over WebDriver) is given the token once, starts a run from the form
//! with real clicks and watches its answer arrive; approves one tool call
//! and denies another from the page, each run going on to its end.

#![cfg(feature = "serve")]

mod serve_support;
mod support;
mod view_support;

use std::path::Path;

use boardroom::serve::{ServeConfig, Server};
use serde_json::Value;
use serve_support::{TOKEN, approving_team, server};
use view_support::Browser;

/// Opens the page and gives it the token, as a user pastes it.
fn unlocked(srv: &Server) -> Browser {
    let browser = Browser::start();
    browser.open(&srv.url());
    browser.wait_for("return document.body.dataset.phase === 'locked'", 30);
    browser.type_into("#token", TOKEN);
    browser.click("#unlock");
    browser.wait_for("return document.body.dataset.phase === 'ready'", 30);
    browser
}

/// Fills the form (task, model; the team the server offers first) and
/// clicks Start.
fn start_from_form(browser: &Browser, task: &str, model: &str) {
    browser.eval(
        "document.getElementById('task').value = ''; document.getElementById('model').value = '';",
    );
    browser.type_into("#task", task);
    browser.type_into("#model", model);
    browser.click("#start");
    browser.wait_for("return !!document.body.dataset.run", 30);
}

fn text(browser: &Browser, css: &str) -> String {
    browser
        .eval(&format!(
            "const e = document.querySelector('{css}'); return e ? e.textContent : null;"
        ))
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Keeps a PNG of the page under target/ (a test artifact).
fn keep_screenshot(browser: &Browser, name: &str) {
    browser.fit_page();
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    browser.screenshot(&path);
    println!("screenshot: {}", path.display());
}

#[test]
fn the_page_takes_the_token_once_starts_a_run_and_shows_it_live_to_its_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = server(tmp.path(), 4);
    // The page and its script are open; the teams it offers need the token.
    assert_eq!(
        serve_support::call(srv.addr(), "GET", "/page.js", None, None).0,
        200
    );
    assert_eq!(
        serve_support::call(srv.addr(), "GET", "/v1/teams", None, None).0,
        401
    );
    // A wrong token is refused and asked for again; then the right one.
    let browser = Browser::start();
    browser.open(&srv.url());
    browser.wait_for("return document.body.dataset.phase === 'locked'", 30);
    browser.type_into("#token", "not-the-token-0123456789");
    browser.click("#unlock");
    browser.wait_for(
        "return document.getElementById('token-error').textContent.includes('refused')",
        30,
    );
    assert_eq!(
        browser.eval("return sessionStorage.getItem('boardroom.token')"),
        Value::Null
    );
    browser.type_into("#token", TOKEN);
    browser.click("#unlock");
    browser.wait_for("return document.body.dataset.phase === 'ready'", 30);
    // Kept in the tab, never in the address.
    assert_eq!(
        browser.eval("return sessionStorage.getItem('boardroom.token')"),
        Value::String(TOKEN.into())
    );
    assert!(
        !browser
            .eval("return location.href")
            .to_string()
            .contains(TOKEN)
    );
    // The built-in team is offered.
    assert_eq!(
        browser.eval("return [...document.querySelectorAll('#team option')].map(o => o.value)"),
        serde_json::json!(["builtin"])
    );

    // The drafts wait for `go`, written once the page has shown the run
    // live: a browser slow on a loaded machine still sees it at work (300 ms
    // calls could end the run before the page looked).
    let held = tempfile::tempdir().unwrap();
    let go = held.path().join("go");
    start_from_form(
        &browser,
        "Plan a picnic by the river",
        &format!("sim:hold={}", go.display()),
    );
    // Live: the run is shown running, with members at work, before its answer.
    browser.wait_for(
        "return document.body.dataset.phase === 'live' \
         && document.querySelectorAll('#members span').length > 0 \
         && document.getElementById('answer').textContent === ''",
        60,
    );
    std::fs::write(&go, "").unwrap();
    assert_eq!(text(&browser, "#run-task"), "Plan a picnic by the river");
    browser.wait_for(
        "return document.getElementById('run-status').textContent === 'done' \
         && document.getElementById('answer').textContent.length > 0",
        120,
    );
    let answer = text(&browser, "#answer");
    let id = browser.eval("return document.body.dataset.run");
    let (status, _, saved) = serve_support::call(
        srv.addr(),
        "GET",
        &format!("/v1/runs/{}", id.as_str().unwrap()),
        Some(TOKEN),
        None,
    );
    assert_eq!(status, 200);
    assert_eq!(
        saved["answer"].as_str(),
        Some(answer.as_str()),
        "the page shows the saved answer"
    );
    // The events arrived over the stream: the log shows the run's start and end.
    let kinds =
        browser.eval("return [...document.querySelectorAll('#log .ev')].map(e => e.dataset.type)");
    let kinds: Vec<String> = serde_json::from_value(kinds).unwrap();
    assert!(kinds.contains(&"run_started".into()), "{kinds:?}");
    assert!(kinds.contains(&"run_finished".into()), "{kinds:?}");

    // A reload does not ask again: the token stays in the tab.
    browser.open(&srv.url());
    browser.wait_for("return document.body.dataset.phase === 'ready'", 30);
    browser.wait_for(
        "return document.querySelectorAll('#runs li').length === 1",
        30,
    );
    keep_screenshot(&browser, "serve-page-ready.png");
}

#[test]
fn the_page_approves_one_tool_call_and_denies_another() {
    let tmp = tempfile::tempdir().unwrap();
    let team = approving_team(&tmp.path().join("team"));
    let runs = tmp.path().join("runs");
    let srv = Server::start(ServeConfig::new(&runs, TOKEN).memory(false).team(team)).unwrap();
    let browser = unlocked(&srv);

    // Approve: the call waits, the click lets it run, the run finishes.
    start_from_form(&browser, "Plan a picnic", "sim:tool=writer:plan_read");
    browser.wait_for(
        "return !!document.querySelector('.card.approval[data-state=waiting]')",
        60,
    );
    assert!(text(&browser, ".card.approval b").contains("plan_read"));
    keep_screenshot(&browser, "serve-page-approval.png");
    browser.click(".card.approval .approve");
    browser.wait_for(
        "return document.querySelector('.card.approval').dataset.state === 'approved' \
         && document.getElementById('run-status').textContent === 'done'",
        120,
    );
    let first = browser.eval("return document.body.dataset.run");
    let ran = |id: &Value| {
        std::fs::read_to_string(runs.join(id.as_str().unwrap()).join("events.jsonl"))
            .unwrap()
            .lines()
            .any(|l| {
                l.contains("\"type\":\"tool_result\"") || l.contains("\"type\":\"tool_finished\"")
            })
    };
    assert!(ran(&first), "the approved call ran");

    // Deny, with a reason: the page shows the denial, the call never runs.
    start_from_form(
        &browser,
        "Plan a second picnic",
        "sim:tool=writer:plan_read",
    );
    browser.wait_for(
        "return document.body.dataset.run !== arguments[0] \
         && !!document.querySelector('.card.approval[data-state=waiting]')"
            .replace("arguments[0]", &first.to_string())
            .as_str(),
        60,
    );
    browser.type_into(".card.approval .reason", "not today");
    browser.click(".card.approval .deny");
    browser.wait_for(
        "return document.querySelector('.card.approval').dataset.state === 'denied' \
         && document.getElementById('run-status').textContent === 'done'",
        120,
    );
    assert_eq!(text(&browser, ".card.approval .said"), "denied: not today");
    let second = browser.eval("return document.body.dataset.run");
    assert_ne!(first, second);
    assert!(!ran(&second), "the denied call never ran");
}

#[test]
fn the_page_shows_the_masters_question_and_sends_the_reply() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = server(tmp.path(), 4);
    let browser = unlocked(&srv);
    start_from_form(&browser, "Plan a picnic", "sim:ask=Which city?");
    browser.wait_for(
        "return !document.getElementById('question').hidden \
         && !document.getElementById('message-form').hidden",
        60,
    );
    assert_eq!(text(&browser, "#question-text"), "Which city?");
    browser.type_into("#message", "Lisbon, in May");
    browser.click("#send");
    browser.wait_for(
        "return document.getElementById('run-status').textContent === 'done' \
         && document.getElementById('answer').textContent.includes('Lisbon, in May')",
        120,
    );
    assert_eq!(
        browser.eval("return document.getElementById('question').hidden"),
        Value::Bool(true)
    );
}

#[test]
fn the_page_talks_to_the_partner_and_its_yes_launches_a_run_that_finishes() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(
        ServeConfig::new(tmp.path().join("runs"), TOKEN)
            .chats_dir(tmp.path().join("chats"))
            .memory(false),
    )
    .unwrap();
    let browser = unlocked(&srv);
    // The team and model are the run form's; the first message starts the chat.
    browser.type_into("#model", "sim");
    browser.type_into(
        "#chat-text",
        "Plan a team offsite for about 20 people over two days",
    );
    browser.click("#chat-send");
    browser.wait_for(
        "return document.getElementById('chat').dataset.state === 'awaiting_consent' \
         && !document.getElementById('chat-consent').hidden",
        120,
    );
    assert_eq!(
        text(&browser, "#chat-question"),
        "Launch the team on these 4 modules? [y/N]"
    );
    assert!(text(&browser, "#chat-log .ev[data-type=user_message] pre").contains("team offsite"));
    assert!(!text(&browser, "#chat-log .ev[data-type=partner_message] pre").is_empty());
    keep_screenshot(&browser, "serve-page-chat-consent.png");

    // Yes: the team is launched, its run finishes and its report is shown.
    browser.click("#chat-yes");
    browser.wait_for(
        "return !!document.querySelector('#chat-log .ev[data-type=run_launched]')",
        120,
    );
    assert_eq!(
        text(&browser, "#chat-log .ev[data-type=consent] pre"),
        "yes"
    );
    browser.wait_for(
        "return !!document.querySelector('#chat-log .ev[data-type=report]') \
         && document.getElementById('chat').dataset.state === 'idle'",
        180,
    );
    let run_id = browser.eval(
        "return document.querySelector('#chat-log .ev[data-type=run_launched] .follow').dataset.run",
    );
    let report = text(&browser, "#chat-log .ev[data-type=report] pre");
    assert!(report.contains("finished"), "{report}");
    assert!(report.contains(run_id.as_str().unwrap()), "{report}");
    let (status, _, run) = serve_support::call(
        srv.addr(),
        "GET",
        &format!("/v1/runs/{}", run_id.as_str().unwrap()),
        Some(TOKEN),
        None,
    );
    assert_eq!(
        (status, run["status"].as_str()),
        (200, Some("done")),
        "{run}"
    );

    // Its button follows the launched run in the run view.
    browser.click("#chat-log .ev[data-type=run_launched] .follow");
    browser.wait_for(
        "return document.body.dataset.run === arguments[0] \
         && document.getElementById('run-status').textContent === 'done'"
            .replace("arguments[0]", &run_id.to_string())
            .as_str(),
        60,
    );
    keep_screenshot(&browser, "serve-page-chat.png");
}
