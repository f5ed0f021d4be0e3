//! The page `boardroom serve` serves at `/` (issue 27), in headless
//! Chromium over WebDriver with real clicks: the token is given, a run
//! is started from the page, its writer's tool call waits, the Approve
//! button lets it run, and the run ends done.

mod serve_support;
mod support;
mod view_support;

use boardroom::serve::{ServeConfig, Server};
use serve_support::{TOKEN, approving_team};
use view_support::Browser;

#[test]
fn a_run_started_from_the_page_has_its_call_approved_there() {
    let tmp = tempfile::tempdir().unwrap();
    let team = approving_team(&tmp.path().join("team"));
    let name = team.name().to_string();
    let runs = tmp.path().join("runs");
    let srv = Server::start(ServeConfig::new(&runs, TOKEN).memory(false).team(team)).unwrap();
    let browser = Browser::start();
    browser.open(&srv.url());
    browser.type_into("#token", TOKEN);
    browser.click("#save");
    browser.type_into("#team", &name);
    browser.type_into("#model", "sim:tool=writer:plan_read");
    browser.type_into("#task", "Plan a picnic");
    browser.click("#start");
    browser.wait_for(
        "return !!document.querySelector('#approvals .approval button.approve')",
        60,
    );
    let tool = browser.eval("return document.querySelector('#approvals .approval').textContent");
    assert!(tool.as_str().unwrap().contains("plan_read"), "{tool}");
    browser.click("#approvals .approval button.approve");
    browser.wait_for(
        "return document.querySelector('#status').dataset.status === 'done'",
        60,
    );
    let log = browser.eval("return document.querySelector('#log').textContent");
    let log = log.as_str().unwrap();
    assert!(log.contains("writer: approval_decided"), "{log}");
    assert!(log.contains("run_finished"), "{log}");
    assert!(
        browser
            .eval("return document.querySelector('#answer').textContent.length > 0")
            .as_bool()
            .unwrap()
    );
    // The run is an ordinary run in the directory.
    assert_eq!(boardroom::store::list_runs(&runs).unwrap().len(), 1);
}
