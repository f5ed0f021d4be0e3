//! `boardroom check`: load a team as `run` would (agents, souls, models,
//! templates, MCP servers and their tools) and list it, as text or as one
//! JSON object (`--json`).

use std::path::{Path, PathBuf};

use boardroom::tools::ToolRegistry;
use boardroom::{ChatModel, Team};
use serde_json::{Value, json};

use super::exit::{CliError, Outcome};
use super::text::terminal_safe;
use super::{setup, team_info};

#[derive(Debug, clap::Args)]
pub(crate) struct CheckArgs {
    /// The team directory (default: ./ if it has agents/, else the built-in team).
    #[arg(long)]
    team: Option<PathBuf>,
    /// Print the team as one JSON object on stdout (on a problem:
    /// `{"ok": false, "error": "..."}`, the message on stderr, exit 2).
    #[arg(long)]
    json: bool,
}

pub(crate) fn check(args: &CheckArgs) -> Result<Outcome, CliError> {
    let (team, tools) = load(args.team.as_deref()).map_err(|message| {
        let document = json!({ "ok": false, "error": terminal_safe(&message) });
        let e = CliError::bad_input(message);
        if args.json {
            e.with_document(document.to_string())
        } else {
            e
        }
    })?;
    warn_unmatched_approvals(&team, &tools);
    if args.json {
        println!("{}", as_json(&team, &tools));
    } else {
        print_text(&team, &tools);
    }
    Ok(Outcome::Done)
}

/// The team and its tools, with the MCP servers its agents use started
/// (they end when the registry drops), or the first problem found.
fn load(dir: Option<&Path>) -> Result<(Team, ToolRegistry), String> {
    let team = setup::load_team(dir).map_err(|e| e.to_string())?;
    team.check_models().map_err(|e| e.to_string())?;
    // Templates that parse but fail when rendered fail here, not in a run.
    team.check_templates().map_err(|e| e.to_string())?;
    let tools = ToolRegistry::for_team(&team).map_err(|e| e.to_string())?;
    tools.check(&team).map_err(|e| e.to_string())?;
    // Every model an agent names must resolve (with the did-you-mean a
    // misspelt name gets), as `run` would build it.
    for a in team.agents() {
        let Some(m) = a.model.as_deref().filter(|m| *m != "default") else {
            continue;
        };
        if let Err(e) = team.model(m) {
            let at = a.source.as_ref().map_or_else(
                || format!("agent '{}'", a.name),
                |p| format!("{}:{}", p.display(), setup::key_line(p, "model")),
            );
            return Err(format!("{at}: model '{m}': {}", e.detail));
        }
    }
    Ok((team, tools))
}

fn role(a: &boardroom::AgentSpec) -> &'static str {
    match a.role {
        boardroom::AgentRole::Master => "master",
        boardroom::AgentRole::Partner => "partner",
        _ => "member",
    }
}

/// Warns (stderr) about each `approve:` pattern that matches no tool
/// granted to any agent: a typo there leaves the tool ungated.
fn warn_unmatched_approvals(team: &Team, tools: &ToolRegistry) {
    let mut all: Vec<String> = team
        .agents()
        .iter()
        .flat_map(|a| granted(tools, a))
        .collect();
    all.sort();
    all.dedup();
    for (agent, pattern) in team.approve_patterns_matching_none(&all) {
        let file = match agent {
            Some(name) => team
                .agents()
                .iter()
                .find(|a| a.name == name)
                .and_then(|a| a.source.clone()),
            None => team.dir().map(|d| PathBuf::from(d).join("team.yaml")),
        };
        let at = file.map_or_else(
            || format!("agent '{}'", agent.unwrap_or("team")),
            |p| format!("{}:{}", p.display(), setup::key_line(&p, "approve")),
        );
        let granted = if all.is_empty() {
            "none".to_string()
        } else {
            all.join(", ")
        };
        eprintln!(
            "warning: {}: approve: pattern '{}' matches no tool granted to any agent \
             (granted: {}); its tool would run without approval",
            terminal_safe(&at),
            terminal_safe(pattern),
            terminal_safe(&granted)
        );
    }
}

/// The names of the tools `a` is granted.
fn granted(tools: &ToolRegistry, a: &boardroom::AgentSpec) -> Vec<String> {
    tools
        .granted(a)
        .unwrap_or_default()
        .iter()
        .map(|t| t.name().to_string())
        .collect()
}

/// Whether `a` names a model with no tool calling (it is sent no tools).
fn model_without_tools(team: &Team, a: &boardroom::AgentSpec) -> bool {
    a.model
        .as_deref()
        .filter(|m| *m != "default")
        .and_then(|m| team.model(m).ok())
        .is_some_and(|m| !boardroom::ChatModel::supports_tools(&m))
}

/// The models the team names that are served over HTTP (team.yaml's
/// `models`, then agents' own specs), with where: never the key, only
/// whether it is set.
fn endpoints(team: &Team) -> Vec<(String, boardroom::EndpointInfo)> {
    let mut names: Vec<String> = team.config().models.keys().cloned().collect();
    for m in team.agents().iter().filter_map(|a| a.model.as_deref()) {
        if m != "default" && !names.iter().any(|n| n == m) {
            names.push(m.to_string());
        }
    }
    names
        .into_iter()
        .filter_map(|n| Some((n.clone(), team.model(&n).ok()?.endpoint()?)))
        .collect()
}

fn print_text(team: &Team, tools: &ToolRegistry) {
    let origin = team.dir().map_or_else(
        || "built in".to_string(),
        |d| PathBuf::from(d).display().to_string(),
    );
    println!(
        "team '{}' ({origin}): {} agents{}",
        team.name(),
        team.agents().len(),
        team_info::process_note(team)
    );
    for a in team.agents() {
        let mut flags = Vec::new();
        if a.can_challenge {
            flags.push("can challenge".to_string());
        }
        if let Some(m) = &a.model {
            flags.push(format!("model {m}"));
        }
        if !a.tools.is_empty() {
            // A named model with no tool calling is sent none of them.
            let note = if model_without_tools(team, a) {
                " (not sent: its model has no tool calling)"
            } else {
                ""
            };
            flags.push(format!("tools: {}{note}", granted(tools, a).join(", ")));
        }
        let flags = if flags.is_empty() {
            String::new()
        } else {
            format!(" [{}]", flags.join("; "))
        };
        println!("  {:<6} {:<14} {}{flags}", role(a), a.name, a.description);
        for line in a.profile.describe() {
            println!("         {:<14} {line}", "");
        }
    }
    for (name, e) in endpoints(team) {
        let key = if e.key_set { "set" } else { "not set" };
        println!(
            "  model  {name:<14} {} {} at {}, key {} {key}",
            e.provider, e.model, e.url, e.key_env
        );
    }
    for line in team_info::lines(team) {
        println!("{line}");
    }
    if let Some(pool) = tools.mcp() {
        for server in pool.servers() {
            let count = pool.tools(server).map_or(0, |t| t.len());
            let (version, name) = pool.server_info(server).unwrap_or_default();
            println!("  mcp    {server:<14} {name} (protocol {version}), {count} tools");
        }
    }
    println!("ok");
}

/// The team as `check --json` prints it. The field names are part of the
/// CLI's interface (docs/notes-clihabits.md lists them): add, never rename.
fn as_json(team: &Team, tools: &ToolRegistry) -> Value {
    let agents: Vec<Value> = team
        .agents()
        .iter()
        .map(|a| {
            json!({
                "name": a.name,
                "role": role(a),
                "description": a.description,
                "can_challenge": a.can_challenge,
                "model": a.model,
                "tools": granted(tools, a),
                "tools_sent": !a.tools.is_empty() && !model_without_tools(team, a),
                "profile": a.profile.describe(),
            })
        })
        .collect();
    let variables: serde_json::Map<String, Value> = team
        .variables()
        .iter()
        .map(|(name, _)| {
            let value = team.variables().get_text(name).unwrap_or_default();
            (name.to_string(), Value::String(value))
        })
        .collect();
    let handoff = team.handoff().map(|h| {
        json!({
            "entry": h.entry,
            "rules": h.rules.iter().map(|r| json!({
                "from": r.from_agent,
                "to": r.to_agent,
                "priority": r.priority,
                "condition": r.condition,
            })).collect::<Vec<_>>(),
            "after_work": h.after_work.as_str(),
            "max_handoffs": h.max_handoffs,
            "max_turns": h.max_turns,
        })
    });
    let mcp_servers: Vec<Value> = tools.mcp().map_or_else(Vec::new, |pool| {
        pool.servers()
            .map(|server| {
                let (version, name) = pool.server_info(server).unwrap_or_default();
                json!({
                    "name": server,
                    "server": name,
                    "protocol_version": version,
                    "tools": pool.tools(server).map_or(0, |t| t.len()),
                })
            })
            .collect()
    });
    json!({
        "ok": true,
        "team": team.name(),
        "dir": team.dir().map(|d| d.display().to_string()),
        "process": if team.handoff().is_some() { "handoff" } else { "blackboard" },
        "agents": agents,
        "variables": variables,
        "handoff": handoff,
        "mcp_servers": mcp_servers,
        "models": endpoints(team).into_iter().map(|(name, e)| json!({
            "name": name, "provider": e.provider, "model": e.model, "url": e.url,
            "key_env": e.key_env, "key_set": e.key_set,
        })).collect::<Vec<_>>(),
    })
}
