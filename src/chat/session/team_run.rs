//! The run a chat launched: started on a background thread, its events
//! turned into team news for the partner's inbox, its status, stopping it.

use std::sync::Arc;
use std::thread::JoinHandle;

use super::{Chat, ChatEvent, ChatIo, chat_thread_error};
use crate::chat::ChatError;
use crate::chat::news::{NewsTracker, recent_line};
use crate::chat::tools;
use crate::core::{InboxItem, TeamNews};
use crate::event::{Event, RunStatus};
use crate::plan::Plan;
use crate::runtime::{Cancel, Runtime};

/// Events kept for `team_status`.
const RECENT: usize = 8;

/// A run launched from the chat.
pub(super) struct ActiveRun {
    run_id: String,
    cancel: Cancel,
    watcher: JoinHandle<()>,
}

impl Chat {
    /// The run under way, if any.
    pub fn running(&self) -> Option<&str> {
        self.active
            .as_ref()
            .filter(|r| !r.watcher.is_finished())
            .map(|r| r.run_id.as_str())
    }

    /// Resumes run `run_id` of this chat on a background thread (after the
    /// user said yes).
    ///
    /// # Errors
    ///
    /// [`ChatError::Run`] when a run is already under way or the thread
    /// cannot be started.
    pub fn resume_run(&mut self, run_id: &str, io: &mut dyn ChatIo) -> Result<(), ChatError> {
        if let Some(id) = self.running() {
            return Err(ChatError::Run(crate::runtime::RunError::StillRunning {
                run_id: id.to_string(),
            }));
        }
        let dir = self.runs_dir.join(run_id);
        let plan = crate::store::load_run(&dir)
            .map(|r| r.state.plan)
            .unwrap_or_default();
        self.start(io, plan, |rt| rt.start_resume(&dir))?;
        Ok(())
    }

    /// The runs of this chat that can be resumed, with how they ended:
    /// `interrupted` (cut off: a `running` snapshot that no process holds)
    /// or `stopped` (stopped before they finished).
    pub fn interrupted_runs(&self) -> Vec<(String, &'static str)> {
        self.runs
            .iter()
            .filter_map(|id| {
                let dir = self.runs_dir.join(id);
                let state = crate::store::load_run(&dir).ok()?.state;
                if crate::store::run_holder(&dir).is_some() {
                    return None;
                }
                match (state.status, state.phase) {
                    (RunStatus::Running, _) => Some((id.clone(), "interrupted")),
                    (RunStatus::Cancelled, p) if p != crate::record::RunPhase::Finished => {
                        Some((id.clone(), "stopped"))
                    }
                    _ => None,
                }
            })
            .collect()
    }

    /// The runs of this chat that finished while no chat heard of it (the
    /// chat was killed between the run's end and its report): no one holds
    /// them, their snapshot is finished, and the transcript holds no
    /// report of theirs. Resuming one ([`Chat::resume_run`]) takes the
    /// memory note it still owes, writes its report if it has none, and
    /// brings its news (and report) to this chat.
    pub fn unreported_runs(&self) -> Vec<String> {
        let reported: Vec<String> = self
            .store
            .as_ref()
            .map(|(store, _, _)| store.transcript())
            .unwrap_or_default()
            .iter()
            .filter(|e| e["type"] == "report")
            .filter_map(|e| e["run_id"].as_str().map(str::to_string))
            .collect();
        self.runs
            .iter()
            .filter(|id| !reported.contains(id))
            .filter(|id| {
                let dir = self.runs_dir.join(id);
                let Ok(record) = crate::store::load_run(&dir) else {
                    return false;
                };
                let s = &record.state;
                s.phase == crate::record::RunPhase::Finished
                    && !matches!(
                        s.status,
                        RunStatus::Cancelled | RunStatus::AwaitingUser | RunStatus::Failed
                    )
                    && crate::store::run_holder(&dir).is_none()
            })
            .cloned()
            .collect()
    }

    pub(super) fn start(
        &mut self,
        io: &mut dyn ChatIo,
        plan: Plan,
        go: impl FnOnce(&Runtime) -> Result<crate::runtime::RunHandle, crate::runtime::RunError>,
    ) -> Result<String, ChatError> {
        self.reap();
        let mut rt = self
            .runtime
            .clone()
            .events_per_run()
            .parent(&self.partner.name);
        if let Some((_, chat_id, _)) = &self.store {
            rt = rt.session(chat_id);
        }
        let mut handle = go(&rt)?;
        drop(rt);
        // The run's own channel: the forwarder ends when the run is closed
        // (not once it is freed and its threads have ended).
        let rx = handle.take_events().unwrap_or_else(|| {
            let (_, closed) = crossbeam_channel::bounded::<Event>(0);
            closed
        });
        let run_id = handle.run_id().to_string();
        let modules = plan.tasks.len();
        let recent = Arc::clone(&self.recent);
        recent.lock().clear();
        let inbox = Arc::clone(&self.inbox);
        let wake = self.wake.0.clone();
        let out = self.events_out.clone();
        let forwarder = {
            let inbox = Arc::clone(&inbox);
            let wake = wake.clone();
            std::thread::Builder::new()
                .name("boardroom-chat-events".into())
                .spawn(move || {
                    let mut tracker = NewsTracker::new(plan);
                    for e in rx {
                        if let Some(line) = recent_line(&e) {
                            let mut r = recent.lock();
                            if r.len() == RECENT {
                                r.pop_front();
                            }
                            r.push_back(line);
                        }
                        for news in tracker.observe(&e) {
                            inbox.push(InboxItem::TeamEvent(news));
                            let _ = wake.send(());
                        }
                        if let Some(out) = &out {
                            let _ = out.send(e);
                        }
                    }
                })
                .map_err(chat_thread_error)?
        };
        let cancel = handle.canceller();
        let report = self
            .runs_dir
            .join(&run_id)
            .join("workspace")
            .join("report.md");
        let watched = run_id.clone();
        let watcher = std::thread::Builder::new()
            .name("boardroom-chat-run".into())
            .spawn(move || {
                let outcome = handle.wait();
                let _ = forwarder.join();
                let news = match outcome {
                    Ok(o) if o.status == RunStatus::AwaitingUser => TeamNews::AwaitingUser {
                        run_id: watched,
                        question: o.answer,
                    },
                    Ok(o) => TeamNews::RunFinished {
                        run_id: watched,
                        status: o.status,
                        report: (o.status != RunStatus::Cancelled && report.is_file())
                            .then(|| report.display().to_string()),
                    },
                    Err(e) => TeamNews::RunFailed {
                        run_id: watched,
                        error: e.to_string(),
                    },
                };
                crate::store::crash_point("chat-run-ended");
                inbox.push(InboxItem::TeamEvent(news));
                let _ = wake.send(());
            })
            .map_err(chat_thread_error)?;
        if !self.runs.contains(&run_id) {
            self.runs.push(run_id.clone());
        }
        self.active = Some(ActiveRun {
            run_id: run_id.clone(),
            cancel,
            watcher,
        });
        self.show(
            io,
            ChatEvent::RunLaunched {
                run_id: run_id.clone(),
                modules,
            },
        );
        self.save();
        Ok(run_id)
    }

    /// `team_status`: the run's snapshot (status, round, modules) and its
    /// recent events, in a `<team_status>` element; before a launch, the
    /// draft plan.
    pub(super) fn status(&self) -> String {
        let Some(run_id) = self.runs.last() else {
            let plan = self.plan.lock();
            return format!(
                "no team has been launched yet. The draft plan has {} modules:\n{}",
                plan.tasks.len(),
                tools::module_lines(&plan)
            );
        };
        let running = self.running().is_some();
        let mut out = match crate::store::load_run(&self.runs_dir.join(run_id)) {
            Ok(r) => {
                let s = &r.state;
                let done = s
                    .plan
                    .tasks
                    .iter()
                    .filter(|m| m.status == crate::plan::ModuleStatus::Completed)
                    .count();
                format!(
                    "run {run_id}: {}, round {} of at most {}; {done} of {} modules completed:\n{}",
                    if running {
                        "working".to_string()
                    } else {
                        s.status.as_str().to_string()
                    },
                    s.round,
                    r.settings.max_rounds,
                    s.plan.tasks.len(),
                    tools::module_lines(&s.plan)
                )
            }
            Err(_) => format!(
                "run {run_id}: {}; it has not saved its first phase yet. The plan it was given:\n{}",
                if running { "starting" } else { "not found" },
                tools::module_lines(&self.plan.lock())
            ),
        };
        let recent = self.recent.lock();
        if !recent.is_empty() {
            out.push_str("recent events:\n");
            for line in recent.iter() {
                out.push_str("- ");
                out.push_str(line);
                out.push('\n');
            }
        }
        // The run's text (module descriptions, assignments) is data from
        // the team, not instructions: escaped in its element, as a
        // `<team_event>` is.
        format!(
            "<team_status run=\"{}\">\n{}\n</team_status>",
            crate::util::text::escape_xml(run_id),
            crate::util::text::escape_xml(out.trim_end())
        )
    }

    /// Asks the run under way to stop (it stays resumable) and waits for
    /// it to end; the id of the run stopped (`None` when no run was under
    /// way: one that had already ended is not "stopped").
    pub fn stop_run(&mut self) -> Option<String> {
        let run = self.active.take()?;
        let under_way = !run.watcher.is_finished();
        run.cancel.cancel();
        let _ = run.watcher.join();
        under_way.then_some(run.run_id)
    }

    /// Waits for the run under way to end (its news lands in the inbox).
    pub fn wait_run(&mut self) {
        if let Some(run) = self.active.take() {
            let _ = run.watcher.join();
        }
    }

    /// Joins the threads of a run that has ended.
    pub(super) fn reap(&mut self) {
        if self
            .active
            .as_ref()
            .is_some_and(|r| r.watcher.is_finished())
        {
            self.wait_run();
        }
        let (done, alive): (Vec<_>, Vec<_>) = std::mem::take(&mut self.abandoned)
            .into_iter()
            .partition(JoinHandle::is_finished);
        for t in done {
            let _ = t.join();
        }
        self.abandoned = alive;
    }
}
