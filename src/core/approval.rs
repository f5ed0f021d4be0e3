//! Tool calls that wait for a person's decision: the run's approval desk,
//! where a paused agent turn waits, and [`Approvals`], the caller's side of
//! it ([`RunHandle::approvals`](crate::RunHandle::approvals)).
//!
//! An agent whose reply asks for a call that `approve:` names pauses
//! before any call of that reply runs; the run's other agents go on. With
//! [`Runtime::wait_for_approvals`](crate::Runtime::wait_for_approvals) the
//! agent waits for [`Approvals::decide`]; without it (the default), or when
//! the run's time limit passes while it waits, or after
//! [`Approvals::stop_waiting`], the run stops once the calls in flight
//! return and is saved with status
//! [`RunStatus::AwaitingApproval`](crate::RunStatus::AwaitingApproval),
//! resumable with decisions. No lock is held while an agent waits.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::record::approval::PausedTurn;
use crate::record::{Decision, PendingApproval};

/// Why a decision was not taken.
#[derive(Debug)]
#[non_exhaustive]
pub enum ApprovalError {
    /// No call with this id waits for a decision in the run (it was never
    /// asked for, or it is decided already).
    UnknownCall {
        /// The id given.
        call_id: String,
    },
    /// Edited arguments that are not a JSON object.
    BadArguments {
        /// The call's id.
        call_id: String,
        /// What is wrong with them.
        source: serde_json::Error,
    },
    /// Edited arguments that are JSON but not an object.
    NotAnObject {
        /// The call's id.
        call_id: String,
    },
    /// The run stopped waiting for decisions (its time limit passed, or
    /// [`Approvals::stop_waiting`]): the call is decided when the saved
    /// run is resumed.
    NoLongerWaiting {
        /// The call's id.
        call_id: String,
    },
    /// An approval of a resumed run's call whose arguments held a secret:
    /// the saved run has them masked, so the call is edited or denied.
    MaskedArguments {
        /// The call's id.
        call_id: String,
    },
}

impl std::fmt::Display for ApprovalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApprovalError::UnknownCall { call_id } => {
                write!(f, "no tool call '{call_id}' waits for a decision")
            }
            ApprovalError::BadArguments { call_id, source } => {
                write!(
                    f,
                    "tool call '{call_id}': the edited arguments are not JSON: {source}"
                )
            }
            ApprovalError::NotAnObject { call_id } => write!(
                f,
                "tool call '{call_id}': the edited arguments must be a JSON object"
            ),
            ApprovalError::MaskedArguments { call_id } => write!(
                f,
                "tool call '{call_id}': its arguments held a secret and were saved \
                 masked; edit them (with the secret) or deny the call"
            ),
            ApprovalError::NoLongerWaiting { call_id } => write!(
                f,
                "tool call '{call_id}': the run no longer waits for decisions \
                 (saved); decide it when the run is resumed"
            ),
        }
    }
}

impl std::error::Error for ApprovalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ApprovalError::BadArguments { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The run's approval desk.
#[derive(Debug, Default)]
pub(crate) struct Desk {
    inner: Mutex<Inner>,
    changed: Condvar,
    /// Set once a turn stopped waiting with calls undecided: the run ends
    /// with status `awaiting_approval`.
    parked: AtomicBool,
}

#[derive(Debug, Default)]
struct Inner {
    /// Turns paused at calls that wait: restored from a saved run, or
    /// pausing now.
    paused: Vec<PausedTurn>,
    /// Decisions given for calls of a saved run before its turn reached
    /// them (a resume with decisions).
    given: HashMap<String, Decision>,
    /// Nobody will decide now: turns stop waiting.
    stop_waiting: bool,
    /// The last serial given to a turn.
    next: u64,
}

impl Desk {
    /// The paused turns of a saved run, to go on from.
    pub(crate) fn restore(&self, paused: Vec<PausedTurn>) {
        let mut inner = self.inner.lock();
        for mut turn in paused {
            // Decisions the saved run had were told when they were taken.
            turn.told = turn.decided.keys().cloned().collect();
            turn.from_save = true;
            // Decisions given with the resume.
            for p in &turn.pending {
                if let Some(d) = inner.given.remove(&p.call_id) {
                    turn.decided.insert(p.call_id.clone(), d);
                }
            }
            inner.paused.push(turn);
        }
    }

    /// Decisions to apply to a saved run's calls when it is restored.
    pub(crate) fn give(&self, decisions: Vec<(String, Decision)>) {
        self.inner.lock().given.extend(decisions);
    }

    /// Checks the decisions given with a resume against the calls the
    /// saved run waits for: each names one, and none approves a call
    /// whose saved arguments are masked.
    pub(crate) fn check_given(&self, saved: &[PausedTurn]) -> Result<(), ApprovalError> {
        let inner = self.inner.lock();
        let mut given: Vec<(&String, &Decision)> = inner.given.iter().collect();
        given.sort_by_key(|(id, _)| id.as_str());
        for (id, decision) in given {
            let Some(turn) = saved
                .iter()
                .find(|t| t.undecided().any(|p| &p.call_id == id))
            else {
                return Err(ApprovalError::UnknownCall {
                    call_id: id.clone(),
                });
            };
            let restored = PausedTurn {
                from_save: true,
                ..turn.clone()
            };
            if !restored.allows(id, decision) {
                return Err(ApprovalError::MaskedArguments {
                    call_id: id.clone(),
                });
            }
        }
        Ok(())
    }

    /// The turns paused now (what a save writes).
    pub(crate) fn paused(&self) -> Vec<PausedTurn> {
        self.inner.lock().paused.clone()
    }

    /// Whether a turn stopped waiting with calls undecided.
    pub(crate) fn is_parked(&self) -> bool {
        self.parked.load(Ordering::Relaxed)
    }

    /// Claims a restored turn `agent` is taking now, if one is left: a
    /// job takes it for itself (so a second job with the same agent, round
    /// and task takes another, or none) and it stays on the desk, saved
    /// with the run, until its calls are decided.
    pub(crate) fn claim(
        &self,
        agent: &str,
        round: u32,
        phase: crate::model::Phase,
        task: Option<&str>,
    ) -> Option<PausedTurn> {
        let mut inner = self.inner.lock();
        inner.next += 1;
        let serial = inner.next;
        let turn = inner
            .paused
            .iter_mut()
            .find(|t| t.serial == 0 && t.is(agent, round, phase, task))?;
        turn.serial = serial;
        Some(turn.clone())
    }

    /// Files a turn that pauses now (or replaces the claimed one of the
    /// same serial) and returns its serial.
    pub(crate) fn pause(&self, mut turn: PausedTurn) -> u64 {
        let mut inner = self.inner.lock();
        if turn.serial == 0 {
            inner.next += 1;
            turn.serial = inner.next;
        }
        let serial = turn.serial;
        inner.paused.retain(|x| x.serial != serial);
        inner.paused.push(turn);
        drop(inner);
        self.changed.notify_all();
        serial
    }

    /// Takes the turn `serial` off the desk (its calls no longer wait).
    pub(crate) fn drop_turn(&self, serial: u64) {
        self.inner.lock().paused.retain(|x| x.serial != serial);
        self.changed.notify_all();
    }

    /// Waits until every call of the turn `serial` is decided, and
    /// takes the turn off the desk; `Err(true)` when the turn stops
    /// waiting with calls undecided (the run is then parked), `Err(false)`
    /// when `stop` says the run stops for another reason. `on_decided`
    /// hears each decision as it is taken (called with no lock held).
    pub(crate) fn wait(
        &self,
        serial: u64,
        wait: bool,
        deadline: Option<Instant>,
        stop: &dyn Fn() -> bool,
        on_decided: &mut dyn FnMut(&PendingApproval, &Decision),
    ) -> Result<PausedTurn, bool> {
        let mut told: Vec<String> = self
            .inner
            .lock()
            .paused
            .iter()
            .find(|t| t.serial == serial)
            .map(|t| t.told.clone())
            .unwrap_or_default();
        loop {
            let mut inner = self.inner.lock();
            let stop_waiting = inner.stop_waiting;
            let Some(at) = inner.paused.iter().position(|t| t.serial == serial) else {
                return Err(false);
            };
            let turn = &inner.paused[at];
            let fresh: Vec<(PendingApproval, Decision)> = turn
                .pending
                .iter()
                .filter(|p| !told.contains(&p.call_id))
                .filter_map(|p| turn.decided.get(&p.call_id).map(|d| (p.clone(), d.clone())))
                .collect();
            let done = turn.undecided().next().is_none();
            let turn = done.then(|| inner.paused.remove(at));
            drop(inner);
            for (p, d) in &fresh {
                told.push(p.call_id.clone());
                on_decided(p, d);
            }
            if let Some(turn) = turn {
                return Ok(turn);
            }
            if stop() {
                return Err(false);
            }
            let late = deadline.is_some_and(|d| Instant::now() >= d);
            if !wait || stop_waiting || late {
                self.parked.store(true, Ordering::Relaxed);
                return Err(true);
            }
            // Short waits: a cancel sets a flag and notifies nobody.
            let mut inner = self.inner.lock();
            let until = Instant::now() + Duration::from_millis(200);
            let until = deadline.map_or(until, |d| d.min(until));
            let undecided = inner
                .paused
                .iter()
                .find(|t| t.serial == serial)
                .is_some_and(|t| t.undecided().next().is_some());
            if undecided && !inner.stop_waiting {
                let _ = self.changed.wait_until(&mut inner, until);
            }
        }
    }
}

/// The caller's side of a run's tool-call approvals: the calls that wait
/// and the decisions about them. Cheap to clone; every clone is the same
/// run's. Get it from [`RunHandle::approvals`](crate::RunHandle::approvals).
///
/// # Examples
///
/// ```
/// use boardroom::testing::Scripted;
/// use boardroom::{AgentSpec, ChatResponse, Decision, Runtime, Team, TeamConfig, ToolCall};
///
/// // The writer may add work modules, each addition approved first.
/// let mut writer = AgentSpec::member("writer", "Writes", "You write.").with_tools(["plan_add_task"]);
/// writer.approve = vec!["plan_*".into()];
/// let team = Team::new(
///     "approving",
///     TeamConfig::default(),
///     vec![AgentSpec::master("lead", "You lead."), writer],
/// )?;
/// let asks = ChatResponse {
///     tool_calls: vec![ToolCall {
///         id: "call-1".into(),
///         name: "plan_add_task".into(),
///         arguments: r#"{"description": "Book the venue"}"#.into(),
///     }],
///     ..ChatResponse::default()
/// };
/// let model = Scripted::new()
///     .reply("lead", "ASSIGN:writer:Plan the picnic")
///     .respond("writer", asks)
///     .reply("writer", "Planned.")
///     .reply("lead", "DONE\nA picnic.");
/// let handle = Runtime::new(team, model)
///     .wait_for_approvals(true)
///     .start("Plan a picnic")?;
/// let approvals = handle.approvals();
/// // The writer pauses at its call until someone decides.
/// let call = loop {
///     if let Some(call) = approvals.wait_pending(std::time::Duration::from_secs(1)).pop() {
///         break call;
///     }
/// };
/// assert_eq!(call.tool, "plan_add_task");
/// approvals.decide(&call.call_id, Decision::Deny { reason: Some("not yet".into()) })?;
/// assert_eq!(handle.wait()?.answer, "A picnic.");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Approvals(pub(crate) Arc<Desk>);

impl Approvals {
    /// The calls that wait for a decision now, oldest first.
    #[must_use]
    pub fn pending(&self) -> Vec<PendingApproval> {
        let inner = self.0.inner.lock();
        inner
            .paused
            .iter()
            .flat_map(|t| t.undecided().cloned())
            .collect()
    }

    /// Blocks until a call waits for a decision or `timeout` passes, and
    /// returns the calls that wait (empty after the timeout).
    #[must_use]
    pub fn wait_pending(&self, timeout: Duration) -> Vec<PendingApproval> {
        let until = Instant::now() + timeout;
        let mut inner = self.0.inner.lock();
        loop {
            let pending: Vec<PendingApproval> = inner
                .paused
                .iter()
                .flat_map(|t| t.undecided().cloned())
                .collect();
            if !pending.is_empty() || self.0.changed.wait_until(&mut inner, until).timed_out() {
                return pending;
            }
        }
    }

    /// Decides about the call `call_id`: the agent that waits for it goes
    /// on (a denied call never runs; the model gets the denial as its
    /// result). The decision is sent as an `approval_decided` event and
    /// saved with the run while its turn waits for its other calls.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::UnknownCall`] when no call with this id waits;
    /// [`ApprovalError::NoLongerWaiting`] when the run stopped waiting;
    /// [`ApprovalError::MaskedArguments`] for an approval of a resumed
    /// run's call whose saved arguments are masked;
    /// [`ApprovalError::BadArguments`] or [`ApprovalError::NotAnObject`]
    /// for edited arguments that are not a JSON object.
    pub fn decide(&self, call_id: &str, decision: Decision) -> Result<(), ApprovalError> {
        check_decision(call_id, &decision)?;
        let mut inner = self.0.inner.lock();
        // A turn that stopped waiting is saved as it was: a decision
        // taken now would be lost.
        if self.0.is_parked() {
            let waits = inner
                .paused
                .iter()
                .any(|t| t.undecided().any(|p| p.call_id == call_id));
            if waits {
                return Err(ApprovalError::NoLongerWaiting {
                    call_id: call_id.to_string(),
                });
            }
        }
        let turn = inner.paused.iter_mut().find(|t| {
            t.pending.iter().any(|p| p.call_id == call_id) && !t.decided.contains_key(call_id)
        });
        let Some(turn) = turn else {
            return Err(ApprovalError::UnknownCall {
                call_id: call_id.to_string(),
            });
        };
        if !turn.allows(call_id, &decision) {
            return Err(ApprovalError::MaskedArguments {
                call_id: call_id.to_string(),
            });
        }
        turn.decided.insert(call_id.to_string(), decision);
        drop(inner);
        self.0.changed.notify_all();
        Ok(())
    }

    /// Ends every wait: the agents that wait stop, and the run ends with
    /// status `awaiting_approval` once the calls in flight return (saved;
    /// resume it with decisions).
    pub fn stop_waiting(&self) {
        self.0.inner.lock().stop_waiting = true;
        self.0.changed.notify_all();
    }
}

/// Edited arguments must be a JSON object.
pub(crate) fn check_decision(call_id: &str, decision: &Decision) -> Result<(), ApprovalError> {
    if let Decision::Edit { arguments } = decision {
        let value: serde_json::Value =
            serde_json::from_str(arguments).map_err(|source| ApprovalError::BadArguments {
                call_id: call_id.to_string(),
                source,
            })?;
        if !value.is_object() {
            return Err(ApprovalError::NotAnObject {
                call_id: call_id.to_string(),
            });
        }
    }
    Ok(())
}

impl super::Core<'_> {
    /// The decisions about the calls of `response` that need one (the
    /// agent's or the team's `approve:` names their tool), by call id;
    /// none when no call needs one. The turn pauses on the run's desk
    /// until all are decided. `adopted` is the restored turn the job
    /// claimed, whose reply `response` is: it goes on with the decisions
    /// it has.
    ///
    /// # Errors
    ///
    /// [`ModelError::Cancelled`](crate::model::ModelError::Cancelled)
    /// when the run stops while the turn waits (it stays on the desk and
    /// is saved with the run).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn approve_calls(
        &self,
        agent: &crate::team::AgentSpec,
        ask: &super::call::Ask<'_>,
        request: &crate::model::ChatRequest,
        step: usize,
        response: &crate::model::ChatResponse,
        verdicts: &[super::call::Intercepted],
        granted: &[Arc<dyn crate::tools::Tool>],
        adopted: Option<PausedTurn>,
    ) -> Result<HashMap<String, Decision>, crate::model::ModelError> {
        let needs: Vec<PendingApproval> = response
            .tool_calls
            .iter()
            .zip(verdicts)
            .filter(|(_, v)| **v == super::call::Intercepted::No)
            .filter_map(|(call, _)| {
                let tool = granted.iter().find(|t| {
                    t.name() == call.name || crate::tools::wire_name(t.name()) == call.name
                })?;
                self.team
                    .needs_approval(agent, tool.name())
                    .then(|| PendingApproval {
                        call_id: call.id.clone(),
                        agent: agent.name.clone(),
                        tool: tool.name().to_string(),
                        arguments: crate::util::secrets::mask(&call.arguments).into_owned(),
                        round: request.round,
                        masked: matches!(
                            crate::util::secrets::mask(&call.arguments),
                            std::borrow::Cow::Owned(_)
                        ),
                    })
            })
            .collect();
        let desk = self.approvals();
        // A restored turn goes on only with the reply it paused at.
        let same_reply = |t: &PausedTurn| {
            t.calls
                .iter()
                .map(|c| &c.id)
                .eq(response.tool_calls.iter().map(|c| &c.id))
        };
        let adopted = match adopted {
            Some(turn) if same_reply(&turn) && !needs.is_empty() => Some(turn),
            Some(turn) => {
                desk.drop_turn(turn.serial);
                None
            }
            None => None,
        };
        if needs.is_empty() {
            return Ok(HashMap::new());
        }
        let turn = match adopted {
            Some(turn) => turn,
            None => {
                let mut turn = PausedTurn {
                    agent: agent.name.clone(),
                    round: request.round,
                    phase: request.phase,
                    task: ask.task.map(str::to_string),
                    messages: request.messages.clone(),
                    text: response.text.clone(),
                    calls: response.tool_calls.clone(),
                    step,
                    pending: needs,
                    decided: std::collections::BTreeMap::new(),
                    serial: 0,
                    told: Vec::new(),
                    from_save: false,
                };
                turn.serial = desk.pause(turn.clone());
                turn
            }
        };
        let parent = self.parent_of(agent);
        for p in turn.undecided() {
            self.emit(
                &agent.name,
                parent,
                crate::event::EventKind::ApprovalRequested {
                    round: p.round,
                    id: p.call_id.clone(),
                    tool: p.tool.clone(),
                    arguments: p.arguments.clone(),
                    masked: p.masked,
                },
            );
        }
        let mut on_decided = |p: &PendingApproval, d: &Decision| {
            log::info!(
                "{}: tool call {} ({}) {}",
                p.agent,
                p.call_id,
                p.tool,
                d.as_str()
            );
            let (reason, arguments) = match d {
                Decision::Deny { reason } => (reason.clone(), None),
                Decision::Edit { arguments } => (
                    None,
                    Some(crate::util::secrets::mask(arguments).into_owned()),
                ),
                Decision::Approve => (None, None),
            };
            self.emit(
                &agent.name,
                parent,
                crate::event::EventKind::ApprovalDecided {
                    id: p.call_id.clone(),
                    tool: p.tool.clone(),
                    decision: d.as_str().to_string(),
                    reason,
                    arguments,
                },
            );
        };
        let wait = self.config.wait_for_approvals;
        match desk.wait(
            turn.serial,
            wait,
            self.deadline,
            &|| self.cancelled(),
            &mut on_decided,
        ) {
            Ok(turn) => Ok(turn.decided.into_iter().collect()),
            Err(parked) => {
                if parked {
                    log::info!(
                        "{}: tool calls wait for approval; the run stops here (saved)",
                        agent.name
                    );
                }
                Err(crate::model::ModelError::Cancelled)
            }
        }
    }
}
