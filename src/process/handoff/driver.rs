//! The handoff loop, step by step:
//!
//! ```text
//! active = entry
//! loop (at most max_turns agent turns, max_handoffs handoffs; after the
//!       last allowed turn the run ends turn_limit, with no routing call
//!       and no handoff):
//!   turn: soul + variables + task + history (+ the handoff tool)  -> a step
//!     handoff tool call / HANDOFF: line  -> checked (corrective retry) -> next agent
//!     nobody: rules of this agent (one routing call)  -> rule N
//!             else the roster router (one routing call) -> router
//!             else after_work_behavior: terminate | continue | return_to_user
//! ```
//!
//! The run is saved after every step and after every routing decision, so
//! a resume never runs a completed step again. Here: the process as the
//! runtime starts it and the shared loop steps it, and how a run ends;
//! `turn.rs`: an agent's turn; `route.rs`: where control goes when the
//! agent handed off to nobody.

use std::path::Path;

use super::remember;
use super::state::{HandoffState, USER};
use crate::core::budget::Stop;
use crate::core::call::Ask;
use crate::core::persist::Opening;
use crate::core::{
    Core, Driver, Phases, RunConfig, RunContext, RunError, RunOutcome, TemplatePlace, drive,
};
use crate::event::{EventKind, RoomStatus, RunStatus};
use crate::model::Phase;
use crate::protocol::{HistoryStep, Protocol};
use crate::record::{ProcessKind, ProcessState, RunPhase, RunState};
use crate::store::{JournalRecord, RunRecord};
use crate::team::{AgentSpec, HandoffSettings, Team, render};

/// One handoff run in progress.
pub(crate) struct Handoff<'a> {
    pub(super) core: Core<'a>,
    pub(super) team: &'a Team,
    pub(super) settings: &'a HandoffSettings,
    /// The run's state but for its handoff part, which is `hs`.
    pub(super) state: RunState,
    pub(super) hs: HandoffState,
}

impl<'a> Driver<'a> for Handoff<'a> {
    fn prepare_resume(
        dir: &Path,
        record: RunRecord,
        message: Option<&str>,
    ) -> Result<RunState, RunError> {
        super::resume::prepare(dir, record, message)
    }

    fn start(
        config: &'a RunConfig,
        ctx: RunContext,
        mut state: RunState,
        opening: Opening,
    ) -> Result<Self, RunError> {
        let team = &config.team;
        let Some(settings) = team.handoff() else {
            return Err(RunError::NotAHandoffTeam {
                team: team.name().to_string(),
            });
        };
        let hs = match state.process.take_handoff() {
            Some(hs) => hs,
            None => {
                let variables = team
                    .variables()
                    .with_overrides(&config.vars)
                    .map_err(RunError::Variables)?;
                state.phase = RunPhase::Step;
                HandoffState {
                    active: settings.entry.clone(),
                    variables,
                    ..HandoffState::default()
                }
            }
        };
        // The first snapshot of a new run holds the variables set for it.
        state.process = ProcessState::Handoff(hs.clone());
        let core = Core::start(config, ctx, &mut state, opening)?;
        state.process = ProcessState::Blackboard;
        Ok(Handoff {
            core,
            team,
            settings,
            state,
            hs,
        })
    }

    fn core(&self) -> &Core<'a> {
        &self.core
    }

    /// Runs steps until the run ends, stops, or waits for its user.
    fn run(self) -> Result<RunOutcome, RunError> {
        drive(self)
    }
}

impl Phases for Handoff<'_> {
    fn core(&self) -> &Core<'_> {
        &self.core
    }

    fn started(&self) -> (String, EventKind) {
        let started = EventKind::RunStarted {
            task: crate::event::task_for_event(&self.state.task),
            team: self.team.name().to_string(),
            model: self.core.config.model.name(),
            members: self.chain().count(),
            max_rounds: self.settings.max_turns,
            process: ProcessKind::Handoff,
            executor: None,
            session: self.core.config.session.clone(),
        };
        (self.hs.active.clone(), started)
    }

    fn begin(&mut self) -> Result<(), RunError> {
        if !matches!(self.state.phase, RunPhase::Step | RunPhase::Finished) {
            // Only a hand-edited run.json gets here.
            return Err(RunError::ForeignPhase {
                run_id: self.core.run_id.clone(),
                phase: self.state.phase,
            });
        }
        // Saved before the first call: a user's message taken on resume
        // survives a kill in the call it leads to.
        self.checkpoint();
        Ok(())
    }

    fn next(&mut self) -> Option<(u32, RunPhase)> {
        if self.state.phase != RunPhase::Step {
            return None;
        }
        self.state.round = self.hs.steps.len() as u32;
        Some((self.state.round, RunPhase::Step))
    }

    fn step(&mut self) -> Result<(), RunError> {
        // The cap first: after the last allowed turn no routing call is
        // paid for, as the agent it picked could not take a turn.
        if self.turns_since_user() >= self.settings.max_turns {
            self.end_at_turn_cap();
            Ok(())
        } else if self.hs.routing {
            self.route();
            Ok(())
        } else {
            self.turn()
        }
    }

    fn stepped(&mut self) {
        // The step first, in the journal (one write, no fsync): a kill
        // before the snapshot below is written does not call this step's
        // model again on resume (issue 28, finding 11).
        self.journal_step();
        crate::store::crash_point("handoff-step-journaled");
        // Filed under the next step from here on: a resume replays the
        // usage of the calls that finish after this snapshot.
        self.state.round = self.hs.steps.len() as u32;
        self.core.at(self.state.round, RunPhase::Step);
        self.checkpoint();
    }

    fn end_early(&mut self, stop: Stop) -> Result<(), RunError> {
        Handoff::end_early(self, stop)
    }

    fn checkpoint(&self) {
        Handoff::checkpoint(self);
    }

    fn wrap_up(&mut self, _saved: bool) {}

    fn finish(&mut self) -> RunOutcome {
        Handoff::finish(self)
    }

    fn last_agent(&self) -> String {
        self.hs.active.clone()
    }

    fn remember(&mut self) {
        if remember::leaves_a_note(self.state.status) {
            self.update_memory();
            crate::store::crash_point("memory-noted");
        }
    }
}

impl Handoff<'_> {
    /// Asks the master for a memory note from the last answer and keeps
    /// it (when the runtime has a [`MasterMemory`](crate::store::MasterMemory),
    /// once a run).
    pub(super) fn update_memory(&self) {
        let Some(memory) = &self.core.config.master_memory else {
            return;
        };
        let answer = self.state.answer.clone().unwrap_or_default();
        if answer.trim().is_empty() || memory.remembers(&self.core.run_id) {
            return;
        }
        let master = self.team.master();
        let soul = render(&master.soul, &self.hs.variables).unwrap_or_else(|_| master.soul.clone());
        let messages = remember::prompt(&soul, &self.state.task, &answer);
        let ask = Ask {
            agent_tools: false,
            ..Ask::new(Phase::Memory, self.state.round, "a few short bullet points")
        };
        let asked = self
            .core
            .call_until(master, &ask, messages, |r| Ok(r.text.trim().to_string()));
        crate::process::memory_note::keep(memory, &self.core.run_id, &self.state.task, asked);
    }

    /// Agent turns since the user last spoke (against `max_turns`).
    pub(super) fn turns_since_user(&self) -> u32 {
        let steps = &self.hs.steps;
        steps.iter().rev().take_while(|s| s.agent != USER).count() as u32
    }

    /// Whether agents hand off with the tool (else a `HANDOFF:` line):
    /// unless the run or the team asks for the line protocol.
    pub(super) fn with_tools(&self) -> bool {
        self.core
            .config
            .protocol_setting()
            .is_none_or(|p| p != Protocol::Line)
    }

    /// The JSON schema of a routing call, where the run asks for JSON.
    pub(super) fn json(&self) -> bool {
        self.core.config.protocol_setting() == Some(Protocol::Json)
    }

    pub(super) fn history(&self) -> Vec<HistoryStep> {
        self.hs
            .steps
            .iter()
            .map(|s| HistoryStep {
                agent: s.agent.clone(),
                text: s.text.clone(),
                artifacts: s.artifacts.clone(),
                handoff_to: s.handoff_target.clone(),
                reason: s.reason.clone(),
            })
            .collect()
    }

    pub(super) fn rendered(
        &self,
        template: &str,
        place: TemplatePlace,
    ) -> Result<String, RunError> {
        render(template, &self.hs.variables).map_err(|source| RunError::Template { place, source })
    }

    /// The agents that take part in the chain: every agent but the
    /// partner, who talks with the user and is never on a run's roster.
    pub(super) fn chain(&self) -> impl Iterator<Item = &AgentSpec> {
        self.team
            .agents()
            .iter()
            .filter(|a| a.role != crate::team::AgentRole::Partner)
    }

    /// The text of the last agent step (the run's answer when it ends).
    pub(super) fn last_answer(&self) -> String {
        self.hs
            .steps
            .iter()
            .rev()
            .find(|s| s.agent != USER)
            .map(|s| s.text.clone())
            .unwrap_or_default()
    }

    /// Ends the run at the turn cap with the last answer.
    pub(super) fn end_at_turn_cap(&mut self) {
        self.end_with(
            RunStatus::TurnLimit,
            format!("the turn cap ({}) was reached", self.settings.max_turns),
        );
    }

    /// Ends the run at a cap with the last answer.
    pub(super) fn end_with(&mut self, status: RunStatus, why: String) {
        log::info!("run {}: {why}", self.core.run_id);
        self.hs.routing = false;
        self.state.status = status;
        self.state.answer = Some(self.last_answer());
        self.state.phase = RunPhase::Finished;
    }

    /// Ends the run before its agents finished: stopped (saved where it
    /// stands, resumable), or out of time or tokens (the last answer).
    pub(super) fn end_early(&mut self, stop: Stop) -> Result<(), RunError> {
        if matches!(stop, Stop::Cancelled | Stop::AwaitingApproval) {
            self.state.status = if stop == Stop::Cancelled {
                RunStatus::Cancelled
            } else {
                RunStatus::AwaitingApproval
            };
            self.checkpoint();
            return Ok(());
        }
        if self.hs.steps.iter().all(|s| s.agent == USER) {
            self.checkpoint();
            return Err(RunError::NoUsableDraft {
                reason: format!("{} before any agent answered", stop.what()),
            });
        }
        let status = if stop == Stop::TimedOut {
            RunStatus::TimedOut
        } else {
            RunStatus::BudgetExhausted
        };
        self.end_with(status, stop.what().to_string());
        self.checkpoint();
        Ok(())
    }

    /// Journals where the loop stands after a step or a routing decision,
    /// under the round it was taken at.
    pub(super) fn journal_step(&self) {
        if !self.core.journaling() {
            return;
        }
        self.core.journal(&JournalRecord::Handoff {
            round: self.state.round,
            status: self.state.status,
            phase: self.state.phase,
            answer: self.state.answer.clone(),
            handoff: self.hs.clone(),
        });
    }

    pub(super) fn checkpoint(&self) {
        let mut state = self.state.clone();
        state.process = ProcessState::Handoff(self.hs.clone());
        // Its answer is the last agent's text, also when it returns to
        // the user.
        self.core.save(state, true);
    }

    pub(super) fn finish(&mut self) -> RunOutcome {
        let answer = self.state.answer.clone().unwrap_or_default();
        let (usage, usage_by_agent) = self.core.usage();
        let agent = self.hs.active.clone();
        self.core.emit(
            &agent,
            None,
            EventKind::RoomStatus {
                // A run that returns to its user waits on them.
                status: if self.state.status == RunStatus::AwaitingUser {
                    RoomStatus::Pending
                } else {
                    RoomStatus::Done
                },
            },
        );
        let steps = self.hs.steps.clone();
        RunOutcome {
            run_id: self.core.run_id.clone(),
            answer,
            status: self.state.status,
            rounds: steps.len() as u32,
            board: Vec::new(),
            usage,
            usage_by_agent,
            plan: self.core.plan.lock().clone(),
            steps,
        }
    }
}
