//! Issue 8: property tests. No input panics: the line and JSON protocol
//! parsers, model specs (sim and openai, durations included), agent front
//! matter and team.yaml. Each property runs 10,000 cases (proptest), with
//! inputs shaped like the real thing (directives, options, keys) mixed
//! with arbitrary text, so that the parsers get past their first check.

use boardroom::Team;
use boardroom::protocol::{parse_master, parse_master_json, parse_verdict, parse_verdict_json};
use proptest::prelude::*;

const CASES: u32 = 10_000;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        // Shrinking is for failures; a failure here is a panic to fix.
        max_shrink_iters: 2_000,
        ..ProptestConfig::default()
    }
}

const MEMBERS: &[&str] = &["writer", "analyst", "Research-2"];

/// Numbers as people (and fuzzers) write them: huge, tiny, negative, NaN.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<f64>().prop_map(|f| f.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        "[0-9]{1,30}",
        "[-+.0-9eE]{1,14}",
        Just("1e308".to_string()),
        Just("NaN".to_string()),
        Just("inf".to_string()),
        Just(".nan".to_string()),
        Just("-0".to_string()),
    ]
}

fn duration() -> impl Strategy<Value = String> {
    (number(), prop_oneof!["", "s", "ms", "m", "h", "us", " s"]).prop_map(|(n, u)| n + &u)
}

fn protocol_line() -> impl Strategy<Value = String> {
    prop_oneof![
        "(ASSIGN|assign|Assign|\\*\\*ASSIGN\\*\\*)[: ]{0,2}(writer|ANALYST|research-2|master|nobody|)[: ]{0,2}\\PC{0,20}",
        "[ \\-*>0-9.]{0,4}(DONE|done|Done|\\*\\*DONE\\*\\*)[: ]?\\PC{0,20}",
        "(CHALLENGE|challenge|AGREE|agree|HANDOFF|ASK)[: ]?\\PC{0,20}",
        "\\PC{0,40}",
        any::<String>(),
        Just(String::new()),
    ]
}

fn json_value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        number(),
        "\"(writer|analyst|master|done|assign|agree|challenge|\\PC{0,8})\"",
    ];
    leaf.prop_recursive(4, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec(
                (
                    "(decision|assignments|member|task|answer|verdict|reason|\\PC{0,6})",
                    inner
                ),
                0..5
            )
            .prop_map(|kv| {
                let fields: Vec<String> = kv
                    .into_iter()
                    .map(|(k, v)| format!("{}:{v}", serde_json::to_string(&k).unwrap()))
                    .collect();
                format!("{{{}}}", fields.join(","))
            }),
        ]
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn line_protocol_never_panics(lines in prop::collection::vec(protocol_line(), 0..12)) {
        let reply = lines.join("\n");
        let _ = parse_master(&reply, MEMBERS, "master");
        let _ = parse_verdict(&reply);
    }

    #[test]
    fn json_protocol_never_panics(
        json in prop_oneof![json_value(), any::<String>()],
        fence in any::<bool>(),
    ) {
        let reply = if fence { format!("```json\n{json}\n```") } else { json };
        let _ = parse_master_json(&reply, MEMBERS, "master");
        let _ = parse_verdict_json(&reply);
    }

    #[test]
    fn sim_specs_never_panic(
        options in prop::collection::vec(
            prop_oneof![
                duration().prop_map(|d| format!("latency={d}")),
                "latency_phases=(draft|plan|review|x)(\\+(challenge|final|y)){0,2}",
                number().prop_map(|n| format!("challenge={n}")),
                "(fail|panic)=\\PC{0,6}",
                "never_done",
                "tool=\\PC{0,20}",
                "[^,]{0,12}",
            ],
            0..5,
        ),
    ) {
        let spec = format!("sim:{}", options.join(","));
        if let Ok(model) = boardroom::openai::resolve_model(&spec) {
            prop_assert_eq!(model.name(), "sim");
        }
    }

    #[test]
    fn openai_specs_never_panic(
        head in prop_oneof![
            "openai(:[a-z0-9.-]{0,10})?",
            "https?://(127\\.0\\.0\\.1|\\[::1\\]?|\\[::1|[a-z.]{0,8}|:[0-9]{0,6}|user:pw@h)(:[0-9]{0,7})?(/v1)?/?(#\\PC{0,8})?",
            "\\PC{0,20}",
        ],
        options in prop::collection::vec(
            prop_oneof![
                duration().prop_map(|d| format!("timeout={d}")),
                number().prop_map(|n| format!("max_in_flight={n}")),
                "stream=\\PC{0,5}",
                "key_env=[A-Z_]{0,8}",
                "[^,]{0,12}",
            ],
            0..5,
        ),
    ) {
        let spec = if options.is_empty() { head } else { format!("{head},{}", options.join(",")) };
        let _ = boardroom::openai::resolve_model(&spec);
    }
}

/// One team directory rewritten for every case (creating 10,000 temp
/// directories would test the file system, not the parser).
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("agents")).unwrap();
        std::fs::create_dir_all(dir.path().join("souls")).unwrap();
        std::fs::write(
            dir.path().join("agents/master.md"),
            "---\nname: master\nrole: master\n---\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("souls/master.md"), "You lead.").unwrap();
        std::fs::write(dir.path().join("souls/writer.md"), "You write.").unwrap();
        Scratch { dir }
    }

    fn load(&self, agent: Option<&[u8]>, team_yaml: Option<&[u8]>) -> Result<Team, String> {
        let p = self.dir.path();
        // Remove, then create: overwriting (a truncate) makes ext4 flush
        // the file to disk on every case.
        let _ = std::fs::remove_file(p.join("agents/writer.md"));
        let _ = std::fs::remove_file(p.join("team.yaml"));
        match agent {
            Some(a) => std::fs::write(p.join("agents/writer.md"), a).unwrap(),
            None => {
                let _ = std::fs::remove_file(p.join("agents/writer.md"));
            }
        }
        match team_yaml {
            Some(y) => std::fs::write(p.join("team.yaml"), y).unwrap(),
            None => {
                let _ = std::fs::remove_file(p.join("team.yaml"));
            }
        }
        let team = Team::load(p).map_err(|e| e.to_string())?;
        team.check_models().map_err(|e| e.to_string())?;
        Ok(team)
    }
}

fn yaml_value() -> impl Strategy<Value = String> {
    prop_oneof![
        number(),
        "\\PC{0,12}",
        "'\\PC{0,8}'",
        "\\[\\PC{0,10}\\]",
        "(true|false|null|~|-|master|member|sim|sim:latency=1e308s|ftp://x|http://\\[::1)",
        Just("\n  - a\n  - b".to_string()),
    ]
}

fn front_matter() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        (
            "(name|role|description|can_challenge|model|tools|temperature|max_tokens|nmae|)",
            yaml_value()
        )
            .prop_map(|(k, v)| format!("{k}: {v}")),
        "\\PC{0,20}",
        Just("name: writer".to_string()),
        Just("role: member".to_string()),
    ];
    (
        any::<bool>(),
        prop::collection::vec(line, 0..8),
        prop_oneof![Just("---"), Just(""), Just("--- ")],
        prop::collection::vec(any::<u8>(), 0..4),
    )
        .prop_map(|(bom, lines, close, junk)| {
            let mut out = if bom {
                b"\xEF\xBB\xBF".to_vec()
            } else {
                Vec::new()
            };
            out.extend_from_slice(
                format!("---\n{}\n{close}\nnotes\n", lines.join("\n")).as_bytes(),
            );
            out.extend_from_slice(&junk);
            out
        })
}

fn team_yaml() -> impl Strategy<Value = Vec<u8>> {
    let endpoint_key =
        prop_oneof!["(base_url|model|api_key_env|timeout|max_in_flight|stream|timout)",];
    let model = prop_oneof![
        yaml_value().prop_map(|v| format!("  default: {v}")),
        prop::collection::vec((endpoint_key, yaml_value()), 0..4).prop_map(|kv| {
            let body: Vec<String> = kv
                .into_iter()
                .map(|(k, v)| format!("    {k}: {v}"))
                .collect();
            format!("  gpt:\n{}", body.join("\n"))
        }),
    ];
    let top = prop_oneof![
        prop::collection::vec(model, 0..3).prop_map(|m| format!("models:\n{}", m.join("\n"))),
        (
            "(name|description|process|max_rounds|max_parallel|token_budget|protocol|nmae)",
            yaml_value()
        )
            .prop_map(|(k, v)| format!("{k}: {v}")),
        (yaml_value(), yaml_value())
            .prop_map(|(t, c)| format!("mcpServers:\n  fs:\n    command: {c}\n    timeout: {t}")),
        "\\PC{0,20}",
    ];
    prop::collection::vec(top, 0..4).prop_map(|parts| parts.join("\n").into_bytes())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn front_matter_never_panics(agent in front_matter()) {
        SCRATCH.with(|s| {
            let _ = s.load(Some(&agent), None);
        });
    }

    #[test]
    fn team_yaml_never_panics(yaml in team_yaml()) {
        SCRATCH.with(|s| {
            let _ = s.load(None, Some(&yaml));
        });
    }
}

thread_local! {
    static SCRATCH: Scratch = Scratch::new();
}
