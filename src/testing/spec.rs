//! The sim's options, as a spec writes them after `sim:`
//! (`sim:latency=50ms,challenge=1,fail=writer,never_done`).

use super::{SimOptions, SimToolCall};
use crate::model::Phase;

/// Parses `latency=50ms,challenge=1,fail=writer,panic=writer,never_done,
/// latency_phases=draft+challenge`.
pub(crate) fn parse_sim_options(options: &str) -> Result<SimOptions, String> {
    let mut o = SimOptions::default();
    for part in options.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        match key {
            "latency" => o.latency = crate::util::duration::SIM_LATENCY.parse("latency", value)?,
            "latency_phases" => {
                for p in value.split('+') {
                    o.latency_phases.push(parse_phase(p)?);
                }
            }
            "challenge" => {
                o.challenge_round = Some(
                    value
                        .parse()
                        .map_err(|_| format!("challenge: '{value}' is not a round number"))?,
                )
            }
            "fail" if !value.is_empty() => o.fail_agent = Some(value.to_string()),
            "panic" if !value.is_empty() => o.panic_agent = Some(value.to_string()),
            "never_done" => o.never_done = true,
            "tool" => o.tool_calls.push(parse_tool_call(value)?),
            "ask" if !value.trim().is_empty() => o.ask = Some(value.trim().to_string()),
            "hold" if !value.trim().is_empty() => o.hold = Some(value.trim().into()),
            _ => {
                return Err(format!(
                    "unknown sim option '{part}' (known: latency=DUR, latency_phases=P+P, challenge=ROUND, \
                     fail=AGENT, panic=AGENT, never_done, tool=AGENT:TOOL[:JSON], ask=QUESTION, hold=FILE)"
                ));
            }
        }
    }
    Ok(o)
}

/// `AGENT:TOOL` or `AGENT:TOOL:{json args}` (the args may not hold a comma:
/// commas separate options).
fn parse_tool_call(value: &str) -> Result<SimToolCall, String> {
    let mut parts = value.splitn(3, ':');
    let (Some(agent), Some(tool)) = (parts.next(), parts.next()) else {
        return Err(format!("tool: '{value}' is not AGENT:TOOL[:JSON]"));
    };
    let args = match parts.next() {
        Some(json) => serde_json::from_str(json)
            .map_err(|e| format!("tool: arguments '{json}' are not JSON: {e}"))?,
        None => serde_json::json!({}),
    };
    if agent.is_empty() || tool.is_empty() {
        return Err(format!("tool: '{value}' is not AGENT:TOOL[:JSON]"));
    }
    Ok(SimToolCall::new(agent, tool, args))
}

fn parse_phase(p: &str) -> Result<Phase, String> {
    serde_json::from_value(serde_json::Value::String(p.trim().to_string()))
        .map_err(|_| format!("unknown phase '{p}'"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn sim_specs() {
        let o = parse_sim_options("latency=50ms,challenge=1,fail=writer,never_done").unwrap();
        assert_eq!(o.latency, Duration::from_millis(50));
        assert_eq!(o.challenge_round, Some(1));
        assert_eq!(o.fail_agent.as_deref(), Some("writer"));
        let h = parse_sim_options("hold=/tmp/go").unwrap();
        assert_eq!(h.hold.as_deref(), Some(std::path::Path::new("/tmp/go")));
        let t = parse_sim_options(
            r#"tool=writer:everything.echo:{"message":"hi"},tool=writer:plan_read"#,
        )
        .unwrap();
        assert_eq!(t.tool_calls[0].tool, "everything.echo");
        assert_eq!(t.tool_calls[0].arguments, r#"{"message":"hi"}"#);
        assert_eq!(t.tool_calls[1].arguments, "{}");
        assert!(o.never_done);
        assert_eq!(
            parse_sim_options("latency_phases=draft+challenge")
                .unwrap()
                .latency_phases,
            vec![Phase::Draft, Phase::Challenge]
        );
        assert!(
            parse_sim_options("latncy=5")
                .unwrap_err()
                .contains("unknown sim option 'latncy=5'")
        );
    }
}
