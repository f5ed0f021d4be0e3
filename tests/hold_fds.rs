//! Issue 28, finding 7: at a low open-file limit, many members over HTTP
//! lost members to "Too many open files" and the run exited 0. The
//! endpoint's limit now stays below what the open-file limit leaves room
//! for. This test binary lowers its own limit (soft and hard, so that
//! boardroom cannot raise it back): it holds one test only.

mod support;

use std::time::Duration;

use boardroom::{OpenAi, Runtime, TeamConfig};
use rustix::process::{Resource, Rlimit, setrlimit};
use support::team_server::{brain, drafts, team};
use support::{Reply, Server};

const MEMBERS: usize = 300;

#[test]
fn finding7_a_low_open_file_limit_loses_no_member() {
    // Every request held a while, so that all would be in flight at once;
    // each is two descriptors here (the client's and the server's).
    let server = Server::start(|req| {
        Reply::Delayed(Duration::from_millis(300), Box::new(brain(req, MEMBERS)))
    });
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(256),
            maximum: Some(256),
        },
    )
    .expect("lowering the open-file limit");
    let model = OpenAi::builder(server.base_url(), "fds").build().unwrap();
    assert!(
        model.in_flight_limit() < 128,
        "the limit leaves room: {}",
        model.in_flight_limit()
    );
    let team = team("fds", MEMBERS, TeamConfig::default(), |_| None);
    let outcome = Runtime::new(team, model)
        .max_rounds(1)
        .run("Write the parts")
        .unwrap();
    assert_eq!(outcome.draft_failures(), None);
    assert_eq!(drafts(&outcome).len(), MEMBERS);
}
