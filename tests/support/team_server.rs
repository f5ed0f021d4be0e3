//! The blackboard protocol played straight by a loopback server, for the
//! tests of in-flight limits (tests/adaptive_limit.rs, tests/openai_limits.rs):
//! the team of `mNN` members, who is asking, the answer such a team
//! expects, a server that takes at most K requests at once and answers 429
//! above that, and who drafted.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use boardroom::board::EntryKind;
use boardroom::{AgentSpec, RunOutcome, Team, TeamConfig};

use super::{Reply, Request, Server};

/// Team `name`: the master `lead` and `members` members `m00`, `m01`, ...
/// (soul `You are mNN.`), member `i` on model `model_of(i)`.
pub fn team(
    name: &str,
    members: usize,
    config: TeamConfig,
    model_of: impl Fn(usize) -> Option<String>,
) -> Team {
    let mut agents = vec![AgentSpec::master("lead", "You lead the team.")];
    for i in 0..members {
        let mut a = AgentSpec::member(
            format!("m{i:02}"),
            "Writes one part",
            format!("You are m{i:02}."),
        );
        a.model = model_of(i);
        agents.push(a);
    }
    Team::new(name, config, agents).unwrap()
}

/// The members who drafted.
pub fn drafts(outcome: &RunOutcome) -> HashSet<String> {
    outcome
        .board
        .iter()
        .filter(|e| e.kind == EntryKind::Draft)
        .map(|e| e.author.clone())
        .collect()
}

/// Who is asking, from the prompt: `plan`, `review` or `final` for the
/// master, else the member by its soul (`You are mNN.`).
pub fn role(req: &Request) -> String {
    let text = req.all_text();
    if text.contains("Split this task") {
        "plan".into()
    } else if text.contains("is over. This is the board") {
        "review".into()
    } else if text.contains("The work is over") {
        "final".into()
    } else {
        text.split("You are ")
            .nth(1)
            .and_then(|r| r.get(..3))
            .unwrap_or("unknown")
            .to_string()
    }
}

/// The protocol for a team of `members` members `m00`, `m01`, ...: the
/// plan assigns everyone, members draft, the review says DONE.
pub fn brain(req: &Request, members: usize) -> Reply {
    let text = match role(req).as_str() {
        "plan" => (0..members)
            .map(|i| format!("ASSIGN:m{i:02}:write part {i}\n"))
            .collect(),
        "review" => "DONE\nThe parts, merged.".to_string(),
        "final" => "The parts, merged.".to_string(),
        member => format!("Draft of {member}."),
    };
    Reply::answer(req, &text)
}

/// A server that takes at most `k` requests at once (429 at once above
/// that), answers each accepted one after `latency`, and plays
/// [`brain`] for `members` members; it counts refusals and the most
/// requests it accepted at once.
pub struct Capped {
    pub server: Server,
    rejected: Arc<AtomicUsize>,
    peak_accepted: Arc<AtomicUsize>,
}

impl Capped {
    pub fn start(k: usize, members: usize, latency: Duration) -> Capped {
        let now = Arc::new(AtomicUsize::new(0));
        let rejected = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let (r, p) = (Arc::clone(&rejected), Arc::clone(&peak));
        let server = Server::start(move |req| {
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            if n > k {
                now.fetch_sub(1, Ordering::SeqCst);
                r.fetch_add(1, Ordering::SeqCst);
                return Reply::status(429, r#"{"error":{"message":"too many requests at once"}}"#);
            }
            p.fetch_max(n, Ordering::SeqCst);
            std::thread::sleep(latency);
            let reply = brain(req, members);
            now.fetch_sub(1, Ordering::SeqCst);
            reply
        });
        Capped {
            server,
            rejected,
            peak_accepted: peak,
        }
    }

    /// Requests refused with 429 so far.
    pub fn rejected(&self) -> usize {
        self.rejected.load(Ordering::SeqCst)
    }

    /// The most requests accepted at once so far.
    pub fn peak_accepted(&self) -> usize {
        self.peak_accepted.load(Ordering::SeqCst)
    }
}
