//! From a run's event stream to what the partner should hear: which
//! modules were completed (the master's review accepts every draft of the
//! round it reviewed), errors, and a short log of recent events for
//! `team_status`.

use crate::event::{Event, EventKind};
use crate::plan::Plan;

use crate::core::TeamNews;

/// Follows one run's events.
#[derive(Debug, Default)]
pub(crate) struct NewsTracker {
    /// The modules the run was seeded with (to name completed ones).
    seeded: Plan,
    /// (round, member, task) of every assignment so far.
    assigned: Vec<(u32, String, String)>,
    /// Rounds already reported as reviewed.
    reviewed: Vec<u32>,
}

impl NewsTracker {
    pub(crate) fn new(seeded: Plan) -> Self {
        NewsTracker {
            seeded,
            ..NewsTracker::default()
        }
    }

    /// The news in one event (most events carry none).
    pub(crate) fn observe(&mut self, e: &Event) -> Vec<TeamNews> {
        match &e.kind {
            EventKind::TaskAssigned {
                round,
                member,
                task,
            } => {
                self.assigned.push((*round, member.clone(), task.clone()));
                Vec::new()
            }
            EventKind::ReviewDecision { round, .. }
                if *round > 0 && !self.reviewed.contains(round) =>
            {
                self.reviewed.push(*round);
                self.assigned
                    .iter()
                    .filter(|(r, _, _)| r == round)
                    .map(|(_, member, task)| {
                        let seeded = self.seeded.tasks.iter().find(|m| {
                            task.starts_with(&m.task_id) || task.contains(m.description.trim())
                        });
                        TeamNews::ModuleCompleted {
                            run_id: e.run_id.clone(),
                            task_id: seeded
                                .map_or_else(|| format!("{member}'s part"), |m| m.task_id.clone()),
                            description: seeded
                                .map_or_else(|| first_line(task), |m| first_line(&m.description)),
                        }
                    })
                    .collect()
            }
            EventKind::Error { message, .. } => vec![TeamNews::Error {
                run_id: e.run_id.clone(),
                message: first_line(message),
            }],
            _ => Vec::new(),
        }
    }
}

fn first_line(s: &str) -> String {
    s.trim().lines().next().unwrap_or("").to_string()
}

/// One line for the recent-events log, for the events worth it.
pub(crate) fn recent_line(e: &Event) -> Option<String> {
    Some(match &e.kind {
        EventKind::RunStarted { members, .. } => format!("the run started with {members} members"),
        EventKind::TaskAssigned {
            round,
            member,
            task,
        } => format!(
            "round {round}: {member} was assigned \"{}\"",
            first_line(task)
        ),
        EventKind::BoardEntry { round, kind, .. } => {
            format!("round {round}: {} put a {kind:?} on the board", e.agent).to_lowercase()
        }
        EventKind::Challenge { round, text } => {
            format!(
                "round {round}: {} challenged: {}",
                e.agent,
                first_line(text)
            )
        }
        EventKind::ReviewDecision {
            round, decision, ..
        } => format!("round {round} reviewed by {}: {decision}", e.agent),
        EventKind::Error { round, message } => {
            format!("round {round}: error: {}", first_line(message))
        }
        EventKind::RunFinished { status, .. } => format!("the run finished: {}", status.as_str()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: EventKind) -> Event {
        Event::now("r1", "master", Some("partner"), kind)
    }

    #[test]
    fn a_review_completes_the_modules_of_its_round_once() {
        let mut seeded = Plan::default();
        seeded.add("Find a venue", None);
        seeded.add("Draft the agenda", None);
        let mut t = NewsTracker::new(seeded);
        for (member, task) in [
            ("researcher", "task_001: Find a venue"),
            ("writer", "Other work"),
        ] {
            assert!(
                t.observe(&ev(EventKind::TaskAssigned {
                    round: 1,
                    member: member.into(),
                    task: task.into(),
                }))
                .is_empty()
            );
        }
        let review = ev(EventKind::ReviewDecision {
            round: 1,
            decision: crate::event::ReviewVerdict::Done,
            assignments: 0,
            rejected: Vec::new(),
        });
        let news = t.observe(&review);
        assert_eq!(
            news,
            vec![
                TeamNews::ModuleCompleted {
                    run_id: "r1".into(),
                    task_id: "task_001".into(),
                    description: "Find a venue".into(),
                },
                TeamNews::ModuleCompleted {
                    run_id: "r1".into(),
                    task_id: "writer's part".into(),
                    description: "Other work".into(),
                },
            ]
        );
        assert!(t.observe(&review).is_empty(), "a round is reported once");
        assert_eq!(
            recent_line(&review).as_deref(),
            Some("round 1 reviewed by master: done")
        );
    }
}
