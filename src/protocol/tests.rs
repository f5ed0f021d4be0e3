//! Table-driven tests over replies as real models write them.

use super::*;
use crate::util::text::{closest, edit_distance};

const MEMBERS: &[&str] = &["researcher", "writer", "critic", "data_analyst"];

fn a(member: &str, task: &str) -> Assignment {
    Assignment {
        member: member.into(),
        task: task.into(),
    }
}

enum Want {
    Assign(Vec<Assignment>),
    Done(&'static str),
    Nothing,
}

fn check(reply: &str, want: Want, errors: &[&str]) {
    let got = parse_master(reply, MEMBERS, "master");
    let want = match want {
        Want::Assign(v) => Some(Decision::Assign(v)),
        Want::Done(s) => Some(Decision::Done(s.into())),
        Want::Nothing => None,
    };
    assert_eq!(got.decision, want, "decision for reply:\n{reply}");
    let got_errors: Vec<String> = got.errors.iter().map(ToString::to_string).collect();
    assert_eq!(got_errors, errors, "errors for reply:\n{reply}");
}

#[test]
fn master_replies_as_models_write_them() {
    use Want::*;
    let cases: Vec<(&str, Want, Vec<&str>)> = vec![
        // 1. The canonical form.
        (
            "ASSIGN:researcher:Find the facts",
            Assign(vec![a("researcher", "Find the facts")]),
            vec![],
        ),
        // 2. Several lines with a preamble.
        (
            "Here is the plan.\nASSIGN:researcher:Find facts\nASSIGN:writer:Write it up",
            Assign(vec![
                a("researcher", "Find facts"),
                a("writer", "Write it up"),
            ]),
            vec![],
        ),
        // 3. Leading spaces.
        (
            "   ASSIGN:writer:Draft",
            Assign(vec![a("writer", "Draft")]),
            vec![],
        ),
        // 4. Dash bullets.
        (
            "- ASSIGN:writer:Draft\n- ASSIGN:critic:Review",
            Assign(vec![a("writer", "Draft"), a("critic", "Review")]),
            vec![],
        ),
        // 5. Star bullets.
        (
            "* ASSIGN:writer:Draft",
            Assign(vec![a("writer", "Draft")]),
            vec![],
        ),
        // 6. Numbered list.
        (
            "1. ASSIGN:researcher:A\n2) ASSIGN:writer:B",
            Assign(vec![a("researcher", "A"), a("writer", "B")]),
            vec![],
        ),
        // 7. Bold keyword.
        (
            "**ASSIGN:writer:** Draft the intro",
            Assign(vec![a("writer", "Draft the intro")]),
            vec![],
        ),
        // 8. Bold keyword only, spaces around colons.
        (
            "**ASSIGN**: writer: Draft",
            Assign(vec![a("writer", "Draft")]),
            vec![],
        ),
        // 9. Lower-case keyword, capitalised member.
        (
            "assign:Writer:Draft",
            Assign(vec![a("writer", "Draft")]),
            vec![],
        ),
        // 10. Upper-case member.
        (
            "Assign: RESEARCHER: dig",
            Assign(vec![a("researcher", "dig")]),
            vec![],
        ),
        // 11. Bold member name.
        (
            "ASSIGN: **writer**: Draft",
            Assign(vec![a("writer", "Draft")]),
            vec![],
        ),
        // 12. Code markers.
        (
            "`ASSIGN:writer:Draft`",
            Assign(vec![a("writer", "Draft")]),
            vec![],
        ),
        // 13. Task continuing on following lines, ended by a blank line.
        (
            "ASSIGN:writer:Write the guide.\nCover water temperature.\nKeep it short.\n\nThanks team.",
            Assign(vec![a(
                "writer",
                "Write the guide.\nCover water temperature.\nKeep it short.",
            )]),
            vec![],
        ),
        // 14. Task continuing until the next directive.
        (
            "ASSIGN:researcher:Find\nsources\nASSIGN:writer:Write",
            Assign(vec![a("researcher", "Find\nsources"), a("writer", "Write")]),
            vec![],
        ),
        // 15. Space instead of the first colon.
        (
            "ASSIGN writer: Draft",
            Assign(vec![a("writer", "Draft")]),
            vec![],
        ),
        // 16. Dash separator between member and task.
        (
            "ASSIGN: writer - Draft it",
            Assign(vec![a("writer", "Draft it")]),
            vec![],
        ),
        // 17. Underscore in a member name survives the marker stripping.
        (
            "ASSIGN:data_analyst:Crunch",
            Assign(vec![a("data_analyst", "Crunch")]),
            vec![],
        ),
        // 18. Unknown member next to a valid one: the valid one runs.
        (
            "ASSIGN:writer:Draft\nASSIGN:bob:Help",
            Assign(vec![a("writer", "Draft")]),
            vec!["line 2: unknown member 'bob'"],
        ),
        // 19. A typo gets a suggestion.
        (
            "ASSIGN:reseacher:Dig",
            Nothing,
            vec!["line 1: unknown member 'reseacher' (did you mean 'researcher'?)"],
        ),
        // 20. The master assigning itself.
        (
            "ASSIGN:master:Do it all",
            Nothing,
            vec!["line 1: the master cannot assign work to itself"],
        ),
        // 21. An empty task.
        (
            "ASSIGN:writer:",
            Nothing,
            vec!["line 1: ASSIGN to 'writer' has no task"],
        ),
        // 22. No directive at all.
        (
            "I think we should research first.",
            Nothing,
            vec!["no directive found: expected ASSIGN:<member>:<task> lines or DONE"],
        ),
        // 23. DONE with the answer on the same line.
        (
            "DONE: Steep at 80C for 2 minutes.",
            Done("Steep at 80C for 2 minutes."),
            vec![],
        ),
        // 24. DONE on its own line, answer below.
        (
            "The team did well.\nDONE\n# Green tea\nSteep gently.",
            Done("# Green tea\nSteep gently."),
            vec![],
        ),
        // 25. Bold lower-case done.
        ("**done**\nAnswer here", Done("Answer here"), vec![]),
        // 26. DONE with nothing after it: the runtime asks for the report.
        ("All good.\nDONE", Done(""), vec![]),
        // 27. ASSIGN lines ended by a bare DONE marker: the assignments stand.
        (
            "ASSIGN:writer:Draft\nDONE",
            Assign(vec![a("writer", "Draft")]),
            vec![],
        ),
        // 28. Prose that starts with "done" is not a directive.
        (
            "Done with planning, now:\nASSIGN:critic:Check",
            Assign(vec![a("critic", "Check")]),
            vec![],
        ),
        // 29. Headings and quotes around a directive.
        (
            "## ASSIGN:writer:Draft\n> ASSIGN:critic:Check",
            Assign(vec![a("writer", "Draft"), a("critic", "Check")]),
            vec![],
        ),
        // 30. "Assignment" is not "ASSIGN".
        (
            "Assignments follow below.\nASSIGN:writer:Go",
            Assign(vec![a("writer", "Go")]),
            vec![],
        ),
        // 31. ASSIGN with no member.
        (
            "ASSIGN::Draft",
            Nothing,
            vec!["line 1: ASSIGN needs a member: ASSIGN:<member>:<task>"],
        ),
        // 32. Windows line endings.
        (
            "ASSIGN:writer:Draft\r\nASSIGN:critic:Check\r\n",
            Assign(vec![a("writer", "Draft"), a("critic", "Check")]),
            vec![],
        ),
        // 33. Same member twice: two modules.
        (
            "ASSIGN:writer:Part one\nASSIGN:writer:Part two",
            Assign(vec![a("writer", "Part one"), a("writer", "Part two")]),
            vec![],
        ),
    ];
    assert!(cases.len() >= 25);
    for (reply, want, errors) in cases {
        check(reply, want, &errors);
    }
}

#[test]
fn challenger_verdicts() {
    let cases: Vec<(&str, Result<Verdict, ()>)> = vec![
        ("AGREE", Ok(Verdict::Agree)),
        ("agree.", Ok(Verdict::Agree)),
        ("**AGREE** - looks right", Ok(Verdict::Agree)),
        ("I read it all.\n- Agree", Ok(Verdict::Agree)),
        (
            "CHALLENGE: the water is too hot",
            Ok(Verdict::Challenge("the water is too hot".into())),
        ),
        (
            "challenge:temperature wrong\nIt should be 80C.",
            Ok(Verdict::Challenge(
                "temperature wrong\nIt should be 80C.".into(),
            )),
        ),
        (
            "**CHALLENGE:** missing sources",
            Ok(Verdict::Challenge("missing sources".into())),
        ),
        (
            "AGREE with most.\nCHALLENGE: but step 3 is wrong",
            Ok(Verdict::Challenge("but step 3 is wrong".into())),
        ),
        ("We should challenge the assumption.", Err(())),
        ("Looks fine to me.", Err(())),
        ("CHALLENGE:", Err(())),
    ];
    for (reply, want) in cases {
        let got = parse_verdict(reply).map_err(|_| ());
        assert_eq!(got, want, "verdict for {reply:?}");
    }
}

#[test]
fn edit_distance_finds_typos() {
    assert_eq!(edit_distance("kitten", "sitting"), 3);
    assert_eq!(closest("writr", MEMBERS).as_deref(), Some("writer"));
    assert_eq!(closest("zzz", MEMBERS), None);
}
