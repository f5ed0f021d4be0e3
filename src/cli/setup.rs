//! What the commands that run a team set up first: the team, its default
//! model (with the environment it needs), the flags a team's process
//! refuses, and saving and memory.

use std::path::Path;

use boardroom::store::MasterMemory;
use boardroom::{Runtime, SharedModel, Team};

/// The team: `--team DIR`, else `./` when it has `agents/`, else the
/// built-in default team.
pub(crate) fn load_team(dir: Option<&Path>) -> Result<Team, boardroom::TeamError> {
    match dir {
        Some(dir) => Team::load(dir),
        None if Path::new("agents").is_dir() => Team::load("."),
        None => Team::builtin(),
    }
}

pub(crate) fn default_model(team: &Team, spec: Option<&str>) -> Result<SharedModel, String> {
    // The spec's own errors first (a bad option says more than the env).
    let model = default_model_of(team, spec).map_err(|e| e.to_string())?;
    if let Some(spec) = spec {
        openai_env_check(team, spec, &model)?;
    }
    Ok(model)
}

/// `--model openai` with neither a key nor a server: say so before the
/// first request, instead of trying api.openai.com with no key (or DNS
/// five times on a machine with no network).
fn openai_env_check(team: &Team, spec: &str, model: &SharedModel) -> Result<(), String> {
    let resolved = match team.config().models.get(spec) {
        Some(boardroom::config::ModelConfig::Spec(s)) => s.as_str(),
        // An endpoint (or any other kind of model config) names its own server.
        Some(_) => return Ok(()),
        None => spec,
    };
    // `openai`, `openai:NAME`, `openai/NAME` and a bare OpenAI model name
    // all become the model `openai:NAME`.
    let is_openai = model.name().starts_with("openai:");
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    if is_openai
        && !resolved.contains("key_env=")
        && !set("OPENAI_API_KEY")
        && !set("OPENAI_BASE_URL")
    {
        return Err(format!(
            "--model {spec}: OPENAI_API_KEY and OPENAI_BASE_URL are unset: set OPENAI_API_KEY \
             for the OpenAI API, or OPENAI_BASE_URL for another OpenAI-compatible server \
             (e.g. http://127.0.0.1:8080/v1), or use --model sim to try boardroom offline"
        ));
    }
    // The same for Anthropic's API with no key (issue 26).
    if let Some(e) = model.endpoint().filter(|e| {
        e.provider == "anthropic"
            && !e.key_set
            && e.url
                .starts_with(boardroom::anthropic::ANTHROPIC_DEFAULT_BASE_URL)
    }) {
        return Err(format!(
            "--model {spec}: {} is unset: set it to your Anthropic API key, or use --model sim \
             to try boardroom offline",
            e.key_env
        ));
    }
    Ok(())
}

fn default_model_of(
    team: &Team,
    spec: Option<&str>,
) -> Result<SharedModel, boardroom::openai::ModelSpecError> {
    match spec {
        Some(spec) => team.model(spec),
        None if team.config().models.contains_key("default") => team.model("default"),
        // OPENAI_BASE_URL names a server: use it, as the official SDKs would.
        None if std::env::var("OPENAI_BASE_URL").is_ok_and(|u| !u.trim().is_empty()) => {
            team.model("openai")
        }
        None => {
            eprintln!(
                "boardroom: no model configured, using the offline 'sim' model (set --model or BOARDROOM_MODEL)"
            );
            team.model("sim")
        }
    }
}

/// Sets up saving and memory for `boardroom run`.
pub(crate) fn prepare(
    runtime: Runtime,
    runs_dir: &Path,
    no_memory: bool,
    model: Option<&str>,
) -> Runtime {
    let mut runtime = runtime.runs_dir(runs_dir);
    if let Some(spec) = model {
        runtime = runtime.model_spec(spec);
    }
    if !no_memory {
        let memory = MasterMemory::for_team(runs_dir, runtime.team().name());
        runtime = runtime.master_memory(memory);
    }
    runtime
}

/// Refuses `--rounds` and `--parallel` for a team whose process has no
/// rounds of parallel members (a handoff team), naming the flag and the
/// caps that team does have, rather than ignoring them.
pub(crate) fn blackboard_flags(
    process: boardroom::Process,
    team: &str,
    rounds: Option<u32>,
    parallel: Option<usize>,
) -> Result<(), String> {
    if process == boardroom::Process::Blackboard {
        return Ok(());
    }
    let flag = match (rounds, parallel) {
        (Some(_), _) => "--rounds",
        (None, Some(_)) => "--parallel",
        (None, None) => return Ok(()),
    };
    Err(format!(
        "{flag}: team '{team}' runs the handoff process, which has no rounds of parallel members: its caps are max_turns and max_handoffs in team.yaml"
    ))
}

/// The 1-based line of `key:` in a file's front matter (1 if not found).
pub(crate) fn key_line(path: &Path, key: &str) -> usize {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| {
            text.lines().position(|l| {
                l.trim_start()
                    .strip_prefix(key)
                    .is_some_and(|r| r.trim_start().starts_with(':'))
            })
        })
        .map_or(1, |i| i + 1)
}
