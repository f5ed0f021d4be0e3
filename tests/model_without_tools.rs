//! `ChatModel::supports_tools() == false` holds for every call: a
//! blackboard member whose model has no tool calling is sent none of its
//! granted tools, nor is the chat partner sent its own (counted on the
//! requests the model receives).

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use boardroom::chat::{Chat, ChatEvent, ChatIo};
use boardroom::testing::Sim;
use boardroom::{AgentSpec, Cancel, Phase, RunStatus, Runtime, Team, TeamConfig};

fn team() -> Team {
    Team::new(
        "no-tools",
        TeamConfig::default(),
        vec![
            AgentSpec::master("lead", "You lead."),
            AgentSpec::member("writer", "Writes", "You write.").with_tools(["workspace_write"]),
        ],
    )
    .unwrap()
}

/// Counts (member calls, calls that carried a tool) with a model that
/// does or does not call tools.
fn drafts(tools: bool) -> (usize, usize) {
    let (drafts, with_tools) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (d, w) = (Arc::clone(&drafts), Arc::clone(&with_tools));
    let model = support::models::Hooked::new("no-tools", Sim::new(), move |req, _| {
        if req.phase == Phase::Draft {
            d.fetch_add(1, Ordering::SeqCst);
        }
        if !req.tools.is_empty() {
            w.fetch_add(1, Ordering::SeqCst);
        }
    });
    let model = if tools { model } else { model.without_tools() };
    let ws = tempfile::tempdir().unwrap();
    let run = Runtime::new(team(), model)
        .workspace(ws.path())
        .run("Write a haiku")
        .unwrap();
    assert_eq!(run.status, RunStatus::Done, "{run:?}");
    (
        drafts.load(Ordering::SeqCst),
        with_tools.load(Ordering::SeqCst),
    )
}

#[test]
fn a_member_whose_model_has_no_tool_calling_is_sent_no_tools() {
    // The same run with a model that calls tools sends the grant, so the
    // count below can tell.
    let (calls, with_tools) = drafts(true);
    assert!(calls >= 1, "the writer drafted");
    assert!(with_tools >= 1, "the granted tool is sent to a tool model");
    let (calls, with_tools) = drafts(false);
    assert!(calls >= 1, "the writer drafted");
    assert_eq!(with_tools, 0, "no request carried a tool");
}

struct Quiet;

impl ChatIo for Quiet {
    fn emit(&mut self, _event: &ChatEvent) {}

    fn consent(&mut self, _question: &str) -> bool {
        false
    }
}

/// (partner calls, calls that carried a tool) for one chat turn.
fn partner_turn(tools: bool) -> (usize, usize) {
    let (calls, with_tools) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (c, w) = (Arc::clone(&calls), Arc::clone(&with_tools));
    let model = support::models::Hooked::new("no-tools", Sim::new(), move |req, _| {
        c.fetch_add(1, Ordering::SeqCst);
        if !req.tools.is_empty() {
            w.fetch_add(1, Ordering::SeqCst);
        }
    });
    let model = if tools { model } else { model.without_tools() };
    let runs = tempfile::tempdir().unwrap();
    let rt = Runtime::new(Team::builtin().unwrap(), Sim::new()).runs_dir(runs.path());
    let mut chat = Chat::new(rt, Arc::new(model), runs.path()).unwrap();
    chat.user_says("Plan a team offsite", &mut Quiet);
    chat.turn(&mut Quiet, &Cancel::new()).unwrap();
    (
        calls.load(Ordering::SeqCst),
        with_tools.load(Ordering::SeqCst),
    )
}

#[test]
fn a_partner_whose_model_has_no_tool_calling_is_sent_no_tools() {
    let (calls, with_tools) = partner_turn(true);
    assert!(calls >= 1, "the partner answered");
    assert_eq!(
        with_tools, calls,
        "a tool model is sent the partner's tools"
    );
    let (calls, with_tools) = partner_turn(false);
    assert!(calls >= 1, "the partner answered");
    assert_eq!(with_tools, 0, "no request carried a tool");
}
