//! `boardroom chat` through a pipe (issue 12): one user line per message,
//! `y`/`n` at the consent prompt. The sim plays the partner: a clarifying
//! question for a short request, four modules, the launch on consent, a
//! status answer from the plan while the team runs, the report at the end.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

mod support;

use support::chat::{Ended, PipedChat, run_id_of};

/// `boardroom chat ARGS` in `dir` with `input` as all it is told.
fn chat(dir: &Path, args: &[&str], input: &str) -> Ended {
    PipedChat::start(dir, args, input, Duration::from_secs(60)).finish()
}

/// The position of `needle` in `hay`, or a failure that shows `hay`.
fn at(hay: &str, needle: &str) -> usize {
    hay.find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in:\n{hay}"))
}

/// Lets a held server call go when dropped: a test that fails while the
/// call is held does not leave the server's thread waiting (the server
/// joins it when it drops, after this guard, declared later, has gone).
struct Release(crossbeam_channel::Sender<()>);

impl Drop for Release {
    fn drop(&mut self) {
        let _ = self.0.try_send(());
    }
}

fn only_dir(dir: &Path) -> String {
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "memory")
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    names[0].clone()
}

#[test]
fn a_piped_conversation_clarifies_drafts_launches_answers_status_and_reports() {
    let tmp = tempfile::tempdir().unwrap();
    // The members' drafts wait for `go`, created once the partner has
    // answered the status question: the team is at work when it answers,
    // by construction (not by a margin of latency).
    let go = tmp.path().join("go");
    let model = format!("sim:latency=200ms,hold={}", go.display());
    let mut chat = PipedChat::start(
        tmp.path(),
        &["--model", &model],
        "Plan a team offsite\nabout 20 people, two days\ny\nhow is it going?\n",
        Duration::from_secs(60),
    );
    chat.until("status answer", |line| {
        line == "partner: Here is where the team stands:"
    });
    std::fs::write(&go, "").unwrap();
    let out = chat.finish();
    let t = out.stdout;
    assert!(out.status.success(), "{t}\n{}", out.stderr);
    let question = at(&t, "partner: Before I draft the work, two questions:");
    let list = at(
        &t,
        "1. Research the options to plan a team offsite (about 20 people, two days)",
    );
    assert!(
        t.contains("4. Estimate the budget to plan a team offsite"),
        "{t}"
    );
    let consent = at(&t, "Launch the team on these 4 modules? [y/N]");
    let launched = at(&t, "[team] run ");
    let status = at(&t, "partner: Here is where the team stands:\nrun ");
    let report = at(&t, "──── report (runs/");
    let end = at(
        &t,
        "partner: The team has finished (status done); the report is above.",
    );
    assert!(
        question < list && list < consent && consent < launched,
        "{t}"
    );
    assert!(launched < status && status < report && report < end, "{t}");
    // The status was given while the team worked, from the plan.
    let status_text = &t[status..report];
    assert!(status_text.contains(": working, round "), "{status_text}");
    assert!(status_text.contains("modules completed:"), "{status_text}");

    // The chat is saved with the run it launched, and the run is done.
    let chat_id = only_dir(&tmp.path().join("chats"));
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("chats").join(&chat_id).join("chat.json"))
            .unwrap(),
    )
    .unwrap();
    let run_id = only_dir(&tmp.path().join("runs"));
    assert_eq!(record["runs"], serde_json::json!([run_id]));
    let transcript = std::fs::read_to_string(
        tmp.path()
            .join("chats")
            .join(&chat_id)
            .join("transcript.jsonl"),
    )
    .unwrap();
    let consent: Vec<serde_json::Value> = transcript
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["type"] == "consent")
        .collect();
    assert_eq!(consent.len(), 1, "{transcript}");
    assert_eq!(consent[0]["granted"], true);
    let run = saved_run(tmp.path(), &run_id);
    assert_eq!(run["status"], "done");
    // The run was seeded with the partner's modules: the master assigned
    // those four (no others were added), and all are completed.
    let tasks = run["plan"]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 4, "{tasks:?}");
    for t in tasks {
        assert_eq!(t["status"], "completed", "{t}");
        assert_eq!(t["metadata"]["added_by"], "partner", "{t}");
        assert!(t["assigned_agent"].is_string(), "{t}");
    }
    // The partner is the run's parent: every event carries a parent.
    let events =
        std::fs::read_to_string(tmp.path().join("runs").join(&run_id).join("events.jsonl"))
            .unwrap();
    for line in events.lines() {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        let parent = e["parent"]
            .as_str()
            .unwrap_or_else(|| panic!("no parent: {line}"));
        if e["agent"] == "master" {
            assert_eq!(parent, "partner", "{line}");
        }
        // Issue 27: its start names the chat, the session its traces give.
        if e["type"] == "run_started" {
            assert_eq!(e["session"], chat_id.as_str(), "{line}");
        }
    }
}

#[test]
fn a_no_at_the_consent_prompt_launches_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = chat(
        tmp.path(),
        &["--model", "sim"],
        "Plan a team offsite\nabout 20 people, two days\nn\n",
    );
    let t = out.stdout;
    assert!(out.status.success(), "{t}");
    let consent = at(&t, "Launch the team on these 4 modules? [y/N]\nyou: n");
    let after = at(&t, "partner: All right, nothing was launched.");
    assert!(consent < after, "{t}");
    assert!(!t.contains("[team] run"), "{t}");
    assert!(!tmp.path().join("runs").exists(), "no run directory: {t}");
}

#[test]
fn a_team_without_a_partner_is_bad_input_that_says_how_to_add_one() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("agents")).unwrap();
    std::fs::create_dir_all(tmp.path().join("souls")).unwrap();
    for (name, role) in [("lead", "master"), ("writer", "member")] {
        std::fs::write(
            tmp.path().join(format!("agents/{name}.md")),
            format!("---\nname: {name}\nrole: {role}\n---\n"),
        )
        .unwrap();
        std::fs::write(tmp.path().join(format!("souls/{name}.md")), "A soul.").unwrap();
    }
    let out = chat(tmp.path(), &["--model", "sim"], "hello\n");
    assert_eq!(out.status.code(), Some(2));
    let err = out.stderr;
    assert!(
        err.contains("has no partner: add an agent with 'role: partner'"),
        "{err}"
    );
}

#[test]
fn a_second_partner_is_an_error_at_its_role_line() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("agents")).unwrap();
    std::fs::create_dir_all(tmp.path().join("souls")).unwrap();
    for (name, role) in [
        ("lead", "master"),
        ("writer", "member"),
        ("desk", "partner"),
        ("front", "partner"),
    ] {
        std::fs::write(
            tmp.path().join(format!("agents/{name}.md")),
            format!("---\nname: {name}\ndescription: x\nrole: {role}\n---\n"),
        )
        .unwrap();
        std::fs::write(tmp.path().join(format!("souls/{name}.md")), "A soul.").unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(["check", "--team"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let want = format!(
        "{}:4: a second partner 'front' (the first is 'desk'): a team has at most one",
        tmp.path().join("agents/front.md").display()
    );
    assert!(err.contains(&want), "{err}");
    // One partner is fine, and `check` lists it as such.
    std::fs::remove_file(tmp.path().join("agents/front.md")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_boardroom"))
        .args(["check", "--team"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let listed = support::cli::text(&out.stdout);
    assert!(listed.contains("  partner desk"), "{listed}");
}

#[test]
fn json_mode_prints_the_chat_and_the_run_as_json_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let out = chat(
        tmp.path(),
        &["--model", "sim", "--json"],
        "Plan a team offsite for about 20 people over two days\ny\n",
    );
    assert!(out.status.success(), "{}", out.stderr);
    let lines: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    let types: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    // A long request needs no clarifying question: modules at once.
    let first_partner = lines
        .iter()
        .find(|l| l["type"] == "partner_message")
        .unwrap();
    assert!(
        first_partner["text"]
            .as_str()
            .unwrap()
            .starts_with("Here is the work I would give the team:"),
        "{first_partner}"
    );
    for t in [
        "user_message",
        "consent_asked",
        "consent",
        "run_launched",
        "run_started",
        "task_assigned",
        "run_finished",
        "report",
    ] {
        assert!(types.contains(&t), "no {t} in {types:?}");
    }
}

/// The run.json of run `run_id` under `dir/runs`.
/// The saved run, whole (run.json is a summary since format 2).
fn saved_run(dir: &Path, run_id: &str) -> serde_json::Value {
    serde_json::to_value(boardroom::store::load_run(&dir.join("runs").join(run_id)).unwrap())
        .unwrap()
}

#[test]
fn a_run_killed_with_the_chat_is_shown_interrupted_on_resume_and_finishes() {
    let tmp = tempfile::tempdir().unwrap();
    // The drafts wait for a file never made: the run is at work when
    // it is killed, by construction.
    let model = format!(
        "sim:latency=400ms,hold={}",
        tmp.path().join("never").display()
    );
    let mut killed = PipedChat::start(
        tmp.path(),
        &["--model", &model],
        "Plan a team offsite for about 20 people over two days\ny\n",
        Duration::from_secs(60),
    );
    let launched = killed.until("launch", |line| line.starts_with("[team] run "));
    let run_id = run_id_of(&launched);
    // Kill it once the run has saved a phase, mid-run.
    let run_json = tmp.path().join("runs").join(&run_id).join("run.json");
    while !run_json.is_file() {
        assert!(!killed.late(), "no run.json");
        std::thread::sleep(Duration::from_millis(20));
    }
    killed.child.kill().unwrap();
    killed.finish();
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run_json).unwrap()).unwrap();
    assert_eq!(saved["status"], "running", "killed mid-run");

    let chat_id = only_dir(&tmp.path().join("chats"));
    let out = chat(tmp.path(), &["--resume", &chat_id, "--model", "sim"], "y\n");
    let t = out.stdout;
    assert!(out.status.success(), "{t}");
    let interrupted = at(&t, &format!("[boardroom] run {run_id} was interrupted"));
    let ask = at(&t, &format!("Resume run {run_id}? [y/N]\nyou: y"));
    let report = at(
        &t,
        &format!("──── report (runs/{run_id}/workspace/report.md)"),
    );
    assert!(interrupted < ask && ask < report, "{t}");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run_json).unwrap()).unwrap();
    assert_eq!(saved["status"], "done");
}

#[test]
fn ctrl_c_during_a_partner_turn_cancels_that_turn_and_the_chat_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    // The partner's model is a loopback server: its first call is held
    // until the test lets it go, so Ctrl-C lands while the call is in
    // flight by construction (it says when it has arrived).
    let (arrived, in_flight) = crossbeam_channel::bounded::<()>(1);
    let (release, released) = crossbeam_channel::bounded::<()>(1);
    let server = support::Server::start(move |req| {
        if req.index == 0 {
            let _ = arrived.send(());
            let _ = released.recv_timeout(Duration::from_secs(30));
            support::Reply::answer(req, "Before I draft the work, two questions:")
        } else {
            support::Reply::answer(req, "Here is the work I would give the team: one module.")
        }
    });
    // Dropped before the server, should an assertion fail while it holds.
    let release = Release(release);
    let model = format!("{}#partner", server.base_url());
    let mut chat = PipedChat::start(
        tmp.path(),
        &["--model", &model],
        "Plan a team offsite\n",
        Duration::from_secs(60),
    );
    in_flight
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("the partner's call never came:\n{}", chat.transcript()));
    support::cli::ctrl_c(&chat.child);
    chat.until("the cancelled turn", |line| {
        line == "[boardroom] the partner's turn was cancelled"
    });
    // The held call ends now; its answer is for a turn that is over.
    drop(release);
    // The chat goes on: the next message gets a real turn.
    chat.send("about 20 people, two days\n");
    let out = chat.finish();
    assert!(out.status.success(), "{}", out.stderr);
    let all = out.stdout;
    assert!(
        !all.contains("partner: Before I draft the work"),
        "the cancelled turn's answer is never shown:\n{all}"
    );
    let cancelled = at(&all, "[boardroom] the partner's turn was cancelled");
    let next = at(&all, "you: about 20 people, two days");
    let answer = at(&all, "partner: Here is the work I would give the team:");
    assert!(cancelled < next && next < answer, "{all}");
    assert_eq!(server.requests(), 2, "one call a turn");
}

#[test]
fn the_partner_relays_a_runs_question_and_the_users_answer_resumes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let mut chat = PipedChat::start(
        tmp.path(),
        &["--model", "sim:ask=Which city?"],
        "Plan a team offsite for about 20 people over two days\ny\n",
        Duration::from_secs(60),
    );
    chat.until("question relayed", |line| {
        line == "partner: The team has a question for you: Which city?"
    });
    // The next line is the answer: it resumes the run.
    chat.send("Lisbon\n");
    let out = chat.finish();
    assert!(out.status.success());
    let all = out.stdout;
    let answered = at(&all, "you: Lisbon");
    let resumed = at(&all[answered..], "[team] run ") + answered;
    let thanks = at(&all, "partner: Thank you: I passed your answer to the team");
    let report = at(&all, "──── report (runs/");
    assert!(
        answered < resumed && resumed < report && answered < thanks,
        "{all}"
    );
    let run_id = only_dir(&tmp.path().join("runs"));
    let run = saved_run(tmp.path(), &run_id);
    assert_eq!(run["status"], "done");
    assert_eq!(run["user_notes"][0]["message"], "Lisbon");
    assert_eq!(run["user_notes"][0]["question"], "Which city?");
}

#[test]
fn after_the_report_a_follow_up_runs_a_new_round_on_the_same_run_with_consent() {
    let tmp = tempfile::tempdir().unwrap();
    let mut chat = PipedChat::start(
        tmp.path(),
        &["--model", "sim"],
        "Plan a team offsite for about 20 people over two days\ny\n",
        Duration::from_secs(60),
    );
    chat.until("end of the run", |line| {
        line.starts_with("partner: The team has finished (status done)")
    });
    let before = chat.seen.len();
    chat.send("make it shorter\ny\n");
    let out = chat.finish();
    assert!(out.status.success());
    let rest: String = out
        .stdout
        .lines()
        .skip(before)
        .collect::<Vec<_>>()
        .join("\n");
    let run_id = only_dir(&tmp.path().join("runs"));
    // The user sees the message the team gets before saying yes.
    let ask = at(
        &rest,
        &format!(
            "[boardroom] the team would get this follow-up: make it shorter\n\
             Send this follow-up to run {run_id}? [y/N]\nyou: y"
        ),
    );
    let on_it = at(&rest, "partner: The team is on your follow-up");
    let report = at(
        &rest,
        &format!("──── report (runs/{run_id}/workspace/report.md)"),
    );
    assert!(ask < on_it && on_it < report, "{rest}");
    let run = saved_run(tmp.path(), &run_id);
    assert_eq!(run["status"], "done");
    assert_eq!(run["round"], 2, "a new round on the same run");
    assert_eq!(run["user_notes"][0]["message"], "make it shorter");
}

#[test]
fn ctrl_c_after_the_input_has_ended_stops_the_team_and_the_run_stays_resumable() {
    let tmp = tempfile::tempdir().unwrap();
    // The drafts wait for `go`: the team is at work when Ctrl-C comes.
    let go = tmp.path().join("go");
    let model = format!("sim:hold={}", go.display());
    let mut chat = PipedChat::start(
        tmp.path(),
        &["--model", &model],
        "Plan a team offsite for about 20 people over two days\ny\n",
        Duration::from_secs(30),
    );
    // The input ends after the consent: nobody is left to ask.
    chat.close_input();
    let launched = chat.until("launch", |line| line.starts_with("[team] run "));
    let run_id = run_id_of(&launched);
    chat.until("the partner's word", |line| {
        line.starts_with("partner: The team is on it")
    });
    // A press that lands while the partner's turn is still ending cancels
    // that turn instead: press again until the team is being stopped.
    let stopping = format!("[boardroom] stopping run {run_id}");
    'stop: loop {
        assert!(!chat.late(), "{}", chat.transcript());
        support::cli::ctrl_c(&chat.child);
        let pressed = std::time::Instant::now();
        while let Some(line) =
            chat.line_within(Duration::from_secs(1).saturating_sub(pressed.elapsed()))
        {
            if line.starts_with(&stopping) {
                break 'stop;
            }
        }
    }
    std::fs::write(&go, "").unwrap();
    let out = chat.finish();
    assert!(out.status.success(), "{}", out.stdout);
    let run = saved_run(tmp.path(), &run_id);
    assert_eq!(run["status"], "cancelled", "stopped, resumable");
    assert_ne!(run["phase"], "finished");
}

/// A chat is one process's at a time: a second `chat --resume` of a chat
/// another process has open is refused (exit 2, as for a run in use),
/// naming the chat and the process that holds it, and nothing is appended
/// to the chat; once the first one ends, the chat opens again.
#[test]
fn a_chat_resumed_twice_at_once_is_refused_in_the_second_process() {
    let tmp = tempfile::tempdir().unwrap();
    let first = chat(tmp.path(), &["--model", "sim"], "Plan a team offsite\n");
    assert!(first.status.success(), "{}", first.stderr);
    let chat_id = only_dir(&tmp.path().join("chats"));
    let transcript = tmp
        .path()
        .join("chats")
        .join(&chat_id)
        .join("transcript.jsonl");

    // One process has the chat open (its input stays open)...
    let mut holder = PipedChat::start(
        tmp.path(),
        &["--resume", &chat_id, "--model", "sim"],
        "",
        Duration::from_secs(60),
    );
    holder.until("the chat resumed", |line| {
        line.starts_with(&format!("[boardroom] chat {chat_id} resumed"))
    });
    let before = std::fs::read_to_string(&transcript).unwrap();
    // ...and a second one is refused.
    let second = chat(
        tmp.path(),
        &["--resume", &chat_id, "--model", "sim"],
        "about 20 people, two days\n",
    );
    assert_eq!(second.status.code(), Some(2), "{}", second.stdout);
    assert_eq!(
        second.stderr,
        format!(
            "error: chat {chat_id}: in use by another boardroom (pid {})\n",
            holder.child.id()
        )
    );
    assert_eq!(second.stdout, "", "the second process says nothing else");
    assert_eq!(
        std::fs::read_to_string(&transcript).unwrap(),
        before,
        "nothing appended by the second process"
    );

    // Once the first one ends, the chat is free again.
    assert!(holder.finish().status.success());
    let again = chat(
        tmp.path(),
        &["--resume", &chat_id, "--model", "sim"],
        "about 20 people, two days\n",
    );
    assert!(again.status.success(), "{}", again.stderr);
    assert!(
        again.stdout.contains("you: about 20 people, two days"),
        "{}",
        again.stdout
    );
}

/// The helper's `finish` is bounded by the session's deadline: a chat
/// that does not exit (its partner's call held by the server) is killed
/// and the test fails with what it printed, rather than waiting for it.
#[test]
fn finish_gives_up_on_a_chat_that_does_not_exit_by_the_deadline() {
    let tmp = tempfile::tempdir().unwrap();
    let (arrived, in_flight) = crossbeam_channel::bounded::<()>(1);
    let (release, released) = crossbeam_channel::bounded::<()>(1);
    let server = support::Server::start(move |req| {
        let _ = arrived.send(());
        // Far longer than the deadline below: only a bounded finish
        // returns before it (`_release` frees it when the test ends).
        let _ = released.recv_timeout(Duration::from_secs(60));
        support::Reply::answer(req, "Before I draft the work, two questions:")
    });
    let _release = Release(release);
    let model = format!("{}#partner", server.base_url());
    let chat = PipedChat::start(
        tmp.path(),
        &["--model", &model],
        "Plan a team offsite\n",
        Duration::from_secs(3),
    );
    // A debug chat's start on a loaded machine can take longer than the
    // deadline: then `finish` kills it at once, which is still the point.
    in_flight
        .recv_timeout(Duration::from_secs(30))
        .expect("the partner's call came");
    let pid = chat.child.id();
    let started = std::time::Instant::now();
    let finished = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| chat.finish()));
    let message = match finished {
        Ok(out) => panic!(
            "finish waited for the held call ({:?}): {:?}",
            started.elapsed(),
            out.status
        ),
        Err(panic) => panic.downcast_ref::<String>().cloned().unwrap_or_default(),
    };
    assert!(
        message.starts_with("the chat did not exit by its deadline (killed)"),
        "{message}"
    );
    // Killed: no such process any more (reaped when the helper dropped).
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the chat {pid} was left running"
    );
}

/// Issue 21: a change asked for while the team works is not "noted" and
/// dropped: the partner proposes it as a follow-up, the user agrees, and
/// once the run has finished it goes to the run as a new round, whose
/// report the user gets.
#[test]
fn a_message_typed_while_the_team_works_reaches_it_as_a_follow_up() {
    let tmp = tempfile::tempdir().unwrap();
    // The members' drafts wait for `go`: the message lands while the team
    // works, by construction.
    let go = tmp.path().join("go");
    let model = format!("sim:hold={}", go.display());
    let mut chat = PipedChat::start(
        tmp.path(),
        &["--model", &model],
        "Plan a team offsite for about 20 people over two days\ny\n",
        Duration::from_secs(60),
    );
    let launched = chat.until("launch", |line| line.starts_with("[team] run "));
    let run_id = run_id_of(&launched);
    chat.until("the partner's word", |line| {
        line.starts_with("partner: The team is on it")
    });
    let before = chat.seen.len();
    chat.send("Add a rainy-day plan\ny\n");
    chat.until("the partner's word", |line| {
        line.starts_with("partner: The team gets your follow-up")
    });
    std::fs::write(&go, "").unwrap();
    // Through a pipe the chat ends once the team has: the follow-up's
    // round, launched after the first report, is waited for too.
    chat.until("the follow-up sent", |line| {
        line.contains("your follow-up goes to it now")
    });
    let out = chat.finish();
    assert!(out.status.success(), "{}", out.stderr);
    let rest: String = out
        .stdout
        .lines()
        .skip(before)
        .collect::<Vec<_>>()
        .join("\n");
    let asked = at(
        &rest,
        &format!(
            "[boardroom] run {run_id} is still working; once it has finished, the team would get \
             this follow-up: Add a rainy-day plan\n\
             Send this follow-up to run {run_id} when it finishes? [y/N]\nyou: y"
        ),
    );
    let report = format!("──── report (runs/{run_id}/workspace/report.md)");
    let first = at(&rest, &report);
    let sent = at(
        &rest,
        &format!(
            "[boardroom] run {run_id} has finished; your follow-up goes to it now: Add a rainy-day plan"
        ),
    );
    let relaunched = at(&rest[sent..], &format!("[team] run {run_id} ")) + sent;
    let second = at(&rest[relaunched..], &report) + relaunched;
    assert!(
        asked < first && first < sent && sent < relaunched && relaunched < second,
        "{rest}"
    );
    assert!(!rest.contains("Noted:"), "{rest}");
    let run = saved_run(tmp.path(), &run_id);
    assert_eq!(run["status"], "done");
    assert_eq!(run["round"], 2, "a new round on the same run");
    assert_eq!(run["user_notes"][0]["message"], "Add a rainy-day plan");
}
