//! Issue 28, secrets: two runs at once in one process (a library user, a
//! server running many runs), each on its own endpoint and key, each
//! endpoint echoing its key into its answers. Neither key, nor any piece
//! of 6 characters of it, is in either run's files, and the run that ends
//! first does not unmask the other's key for the rest of the other run.
//! (The set of known secrets is the process's: each run's files mask both
//! keys.)

mod support;

use std::path::Path;
use std::time::Duration;

use boardroom::{OpenAi, RunStatus, Runtime, TeamConfig};
use support::team_server::{self, drafts, role};
use support::{Reply, Server};

const MEMBERS: usize = 4;
const KEY_A: &str = "sk-first-run-Qx7Lm2Vb9Tz4Kp";
const KEY_B: &str = "sk-second-run-Hy3Wn8Rc5Jd1Gs";

/// A server whose members' drafts carry `key` (without its prefix too),
/// each after `delay`.
fn echoing(key: &'static str, delay: Duration) -> Server {
    Server::start(move |req| {
        let reply = if role(req).starts_with('m') {
            Reply::completion(&format!(
                "A draft. My key is {key}, or {}.",
                key.trim_start_matches("sk-")
            ))
        } else {
            team_server::brain(req, MEMBERS)
        };
        Reply::Delayed(delay, Box::new(reply))
    })
}

/// Every 6-character piece of `key` found in any file under `dir`.
fn pieces_in(dir: &Path, key: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
            for i in 0..=key.len() - 6 {
                if text.contains(&key[i..i + 6]) {
                    found.push(format!("{}: {}", p.display(), &key[i..i + 6]));
                }
            }
        }
    }
    found
}

#[test]
fn two_runs_at_once_mask_both_keys_to_the_end_of_each() {
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // A ends well before B: B's later writes come after A's end.
    let a_server = echoing(KEY_A, Duration::from_millis(20));
    let b_server = echoing(KEY_B, Duration::from_millis(400));
    let run = |server: &Server, key: &str, dir: &Path| {
        let model = OpenAi::builder(server.base_url(), "m")
            .api_key(key)
            .build()
            .unwrap();
        let team = team_server::team("keys", MEMBERS, TeamConfig::default(), |_| None);
        Runtime::new(team, model)
            .runs_dir(dir)
            .run("Write the parts")
            .unwrap()
    };
    let (a, b) = std::thread::scope(|s| {
        let b = s.spawn(|| run(&b_server, KEY_B, b_dir.path()));
        let a = s.spawn(|| run(&a_server, KEY_A, a_dir.path()));
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!(a.status, RunStatus::Done, "{}", a.answer);
    assert_eq!(b.status, RunStatus::Done, "{}", b.answer);
    assert_eq!(drafts(&a).len(), MEMBERS);
    assert_eq!(drafts(&b).len(), MEMBERS);
    for dir in [a_dir.path(), b_dir.path()] {
        for key in [KEY_A, KEY_B] {
            let found = pieces_in(dir, key);
            assert!(found.is_empty(), "{found:?}");
        }
    }
    for text in [&a.answer, &b.answer] {
        assert!(
            !text.contains("Qx7Lm2") && !text.contains("Hy3Wn8"),
            "{text}"
        );
    }
}
