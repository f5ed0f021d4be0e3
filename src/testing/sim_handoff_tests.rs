//! The sim plays whole handoff chains through the protocol's own prompts
//! and parsers, as a driver would use them.

use crate::model::{ChatModel, ChatRequest, Phase};
use crate::protocol::handoff::*;
use crate::team::Variables;
use crate::testing::Sim;

const SEQ: &[(&str, &str)] = &[
    ("researcher", "Finds and checks facts"),
    ("publisher", "Formats and publishes the final text"),
    ("reviewer", "Reviews drafts for errors"),
    ("writer", "Writes the text"),
];

struct Chain {
    /// (agent, handed off to, how: tool / line / rule N / router / none)
    steps: Vec<(String, Option<String>, String)>,
    last_text: String,
    calls: usize,
}

/// A small driver: turns, interception, rules then router, no after-work.
fn play(
    roster: &[(&str, &str)],
    entry: &str,
    rules: &[(&str, &str, &str)],
    tools: bool,
    vars: &Variables,
) -> Chain {
    let sim = Sim::new();
    let names: Vec<&str> = roster.iter().map(|(n, _)| *n).collect();
    let mut history: Vec<HistoryStep> = Vec::new();
    let mut chain = Chain {
        steps: Vec::new(),
        last_text: String::new(),
        calls: 0,
    };
    let mut active = entry.to_string();
    for turn in 0..12u32 {
        let mine: Vec<(&str, Option<&str>)> = rules
            .iter()
            .filter(|(f, t, _)| (*f == active || *f == "*") && *t != active)
            .map(|(_, t, c)| (*t, Some(*c)))
            .collect();
        let msgs = turn_prompt(&TurnInput {
            agent: &active,
            soul: "You do your part.",
            task: "A short guide to brewing green tea",
            variables: vars,
            roster,
            rules: &mine,
            history: &history,
            tools,
        });
        let mut req = ChatRequest::new(active.clone(), Phase::Converse, turn, msgs);
        let others: Vec<&str> = names.iter().copied().filter(|n| *n != active).collect();
        if tools {
            req.tools = vec![handoff_tool_spec(&others)];
        }
        let resp = sim.chat(&req, &mut |_| {}).unwrap();
        chain.calls += 1;
        let (directive, how) = match resp.tool_calls.first() {
            Some(call) => {
                assert_eq!(call.name, HANDOFF_TOOL);
                (Some(parse_handoff_args(&call.arguments).unwrap()), "tool")
            }
            None => (parse_handoff_line(&resp.text), "line"),
        };
        let text = strip_handoff_lines(&resp.text);
        chain.last_text = text.clone();
        let mut next = directive.map(|d| {
            let to = resolve_destination(&d.to, &active, &names).unwrap();
            (to, how.to_string(), d.reason)
        });
        history.push(HistoryStep {
            agent: active.clone(),
            // As the driver keeps it: the HANDOFF line stays in the text.
            text: resp.text.clone(),
            artifacts: Vec::new(),
            handoff_to: next.as_ref().map(|n| n.0.clone()),
            reason: next.as_ref().map(|n| n.2.clone()),
        });
        if next.is_none() && !mine.is_empty() {
            let routing: Vec<RoutingRule<'_>> = mine
                .iter()
                .map(|(t, c)| RoutingRule {
                    to_agent: t,
                    condition: *c,
                })
                .collect();
            let (msgs, schema) = rule_routing_prompt(&active, "tea", &routing, &history);
            let mut req = ChatRequest::new(active.clone(), Phase::Converse, turn, msgs);
            req.schema = Some(schema);
            let answer = sim.chat(&req, &mut |_| {}).unwrap().text;
            chain.calls += 1;
            if let Some(i) = parse_rule_choice(&answer, routing.len()) {
                next = Some((
                    mine[i].0.to_string(),
                    format!("rule {}", i + 1),
                    String::new(),
                ));
            }
        }
        if next.is_none() {
            let candidates: Vec<(&str, &str)> = roster
                .iter()
                .copied()
                .filter(|(n, _)| *n != active)
                .collect();
            let (msgs, _) = roster_routing_prompt(&active, "tea", &candidates, &history);
            let req = ChatRequest::new(active.clone(), Phase::Converse, turn, msgs);
            let answer = sim.chat(&req, &mut |_| {}).unwrap().text;
            chain.calls += 1;
            let cand: Vec<&str> = candidates.iter().map(|(n, _)| *n).collect();
            if let Some(n) = parse_agent_choice(&answer, &cand) {
                next = Some((n, "router".into(), String::new()));
            }
        }
        match next {
            Some((to, how, _)) => {
                chain.steps.push((active.clone(), Some(to.clone()), how));
                active = to;
            }
            None => {
                chain.steps.push((active.clone(), None, "none".into()));
                return chain;
            }
        }
    }
    chain
}

fn flow(c: &Chain) -> Vec<String> {
    c.steps
        .iter()
        .map(|(a, to, how)| match to {
            Some(to) => format!("{a}->{to} ({how})"),
            None => format!("{a} ends"),
        })
        .collect()
}

const SEQ_RULES: &[(&str, &str, &str)] = &[
    ("researcher", "writer", "the research is complete"),
    ("writer", "reviewer", "the draft is complete"),
    ("reviewer", "publisher", "the review is done"),
];

#[test]
fn sequential_chain_by_tool_and_by_line() {
    let vars = Variables::default();
    let c = play(SEQ, "researcher", SEQ_RULES, true, &vars);
    assert_eq!(
        flow(&c),
        vec![
            "researcher->writer (tool)",
            "writer->reviewer (tool)",
            "reviewer->publisher (tool)",
            "publisher ends",
        ]
    );
    // The publisher's answer is the reviewed draft under the task's title,
    // marked as simulated (issue 21): the researcher's facts, the writer's
    // advice and the reviewer's added check all show; one roster call
    // found nobody left.
    let t = &c.last_text;
    assert!(
        t.starts_with("# A short guide to brewing green tea\n\n> Simulated answer:"),
        "{t}"
    );
    assert!(t.contains("## What matters most"), "{t}");
    assert!(t.contains("Check the result at the end"), "{t}");
    assert!(!t.contains("Draft") && !t.contains("VERDICT"), "{t}");
    assert_eq!(c.calls, 5);
    let c = play(SEQ, "researcher", SEQ_RULES, false, &vars);
    assert_eq!(flow(&c)[0], "researcher->writer (line)");
    assert_eq!(flow(&c).len(), 4);
}

#[test]
fn without_rules_the_roster_order_bounds_the_chain() {
    let c = play(SEQ, "researcher", &[], false, &Variables::default());
    assert_eq!(
        flow(&c),
        vec![
            "researcher->publisher (line)",
            "publisher->reviewer (line)",
            "reviewer->writer (line)",
            "writer ends",
        ]
    );
}

const ITER: &[(&str, &str)] = &[
    ("writer", "Writes the text"),
    ("publisher", "Publishes the approved text"),
    ("reviewer", "Reviews drafts"),
];

const ITER_RULES: &[(&str, &str, &str)] = &[
    ("reviewer", "publisher", "the draft is approved"),
    ("writer", "reviewer", "a draft or a revision is ready"),
    (
        "reviewer",
        "writer",
        "revisions are needed and fewer than 3 were made",
    ),
];

#[test]
fn iterative_chain_revises_once_then_publishes() {
    let vars = Variables::declare([("max_revisions", serde_json::json!(3))]);
    let c = play(ITER, "writer", ITER_RULES, true, &vars);
    assert_eq!(
        flow(&c),
        vec![
            "writer->reviewer (tool)",
            "reviewer->writer (tool)",
            "writer->reviewer (tool)",
            "reviewer->publisher (tool)",
            "publisher ends",
        ]
    );
    // The revision the reviewer asked for (a reason to every point) shows
    // in the published text.
    assert!(c.last_text.contains(" Why: "), "{}", c.last_text);
    assert!(
        c.last_text.contains("> Simulated answer:"),
        "{}",
        c.last_text
    );
    // max_revisions = 0: approved at once.
    let vars = Variables::declare([("max_revisions", serde_json::json!(0))]);
    let c = play(ITER, "writer", ITER_RULES, false, &vars);
    assert_eq!(
        flow(&c),
        vec![
            "writer->reviewer (line)",
            "reviewer->publisher (line)",
            "publisher ends"
        ]
    );
}

#[test]
fn ping_pong_rules_never_end_by_themselves() {
    let rules = [
        ("writer", "reviewer", "always"),
        ("reviewer", "writer", "always"),
    ];
    let c = play(ITER, "writer", &rules, true, &Variables::default());
    assert_eq!(c.steps.len(), 12, "{:?}", flow(&c));
}

#[test]
fn routing_calls_answer_in_lines_and_json() {
    let sim = Sim::new();
    let history = vec![HistoryStep {
        agent: "reviewer".into(),
        text: "Review: fine.\nVERDICT: APPROVED".into(),
        ..HistoryStep::default()
    }];
    let rules = [
        RoutingRule {
            to_agent: "writer",
            condition: Some("revisions are needed"),
        },
        RoutingRule {
            to_agent: "publisher",
            condition: Some("the text is approved"),
        },
        RoutingRule {
            to_agent: "fixer",
            condition: Some("an error was found"),
        },
    ];
    let (msgs, schema) = rule_routing_prompt("reviewer", "tea", &rules, &history);
    let mut req = ChatRequest::new("reviewer", Phase::Converse, 1, msgs);
    assert_eq!(sim.chat(&req, &mut |_| {}).unwrap().text, "RULE: 2");
    req.schema = Some(schema);
    let answer = sim.chat(&req, &mut |_| {}).unwrap().text;
    assert_eq!(parse_rule_choice(&answer, 3), Some(1), "{answer}");
    // Only conditions that never hold: none.
    let (msgs, _) = rule_routing_prompt("reviewer", "tea", &rules[2..], &history);
    let req = ChatRequest::new("reviewer", Phase::Converse, 1, msgs);
    assert_eq!(sim.chat(&req, &mut |_| {}).unwrap().text, "NONE");

    let candidates = [("reviewer", "Reviews"), ("publisher", "Publishes")];
    let (msgs, schema) = roster_routing_prompt("writer", "tea", &candidates, &history);
    let mut req = ChatRequest::new("writer", Phase::Converse, 1, msgs);
    assert_eq!(sim.chat(&req, &mut |_| {}).unwrap().text, "NEXT: publisher");
    req.schema = Some(schema);
    let answer = sim.chat(&req, &mut |_| {}).unwrap().text;
    assert_eq!(
        parse_agent_choice(&answer, &["reviewer", "publisher"]).as_deref(),
        Some("publisher")
    );
}

#[test]
fn the_users_reply_is_taken_up() {
    let vars = Variables::default();
    let history = vec![
        HistoryStep {
            agent: "writer".into(),
            text: "Draft: tea".into(),
            ..HistoryStep::default()
        },
        HistoryStep {
            agent: "user".into(),
            text: "Make it shorter & warmer.".into(),
            ..HistoryStep::default()
        },
    ];
    let msgs = turn_prompt(&TurnInput {
        agent: "writer",
        soul: "You write.",
        task: "tea",
        variables: &vars,
        roster: ITER,
        rules: &[],
        history: &history,
        tools: false,
    });
    let req = ChatRequest::new("writer", Phase::Converse, 2, msgs);
    let text = Sim::new().chat(&req, &mut |_| {}).unwrap().text;
    assert!(
        text.starts_with("Taking your reply into account: \"Make it shorter & warmer.\"."),
        "{text}"
    );
    // Everyone else has acted? No: publisher and reviewer have not.
    assert!(
        text.ends_with("HANDOFF:publisher:publisher has not worked on this yet"),
        "{text}"
    );
}

#[test]
fn blackboard_prompts_are_not_taken() {
    let req = ChatRequest::new(
        "writer",
        Phase::Draft,
        1,
        vec![crate::model::Message::user(
            "<task>tea</task>\n<assignment>write</assignment>",
        )],
    );
    let text = Sim::new().chat(&req, &mut |_| {}).unwrap().text;
    assert!(!text.contains("HANDOFF"), "{text}");
}

/// Issue 15: the sims read prompts back with one unescape, the inverse of
/// the board's escape_xml, whatever the text holds.
#[test]
fn unescape_inverts_the_boards_escape() {
    for text in [
        "a < b && c > d",
        "\"quoted\" and 'single'",
        "already &lt;escaped&gt; &amp;amp;",
        "&",
        "",
    ] {
        let escaped = crate::util::text::escape_xml(text);
        assert_eq!(super::unescape(&escaped), text, "{escaped}");
    }
}
