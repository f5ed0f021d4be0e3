//! What `run.json` and `journal.jsonl` hold.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::board::Entry;
use crate::plan::WorkModule;
use crate::record::{HandoffState, RunPhase, RunSettings, RunState, RunStatus};
use crate::team::{AgentSpec, Team, TeamConfig, TeamError};

/// The format version this build writes; newer files are refused clearly.
pub const RUN_FORMAT_VERSION: u32 = 2;

/// The contents of `run.json`: the run's state plus what is needed to
/// start it again (the team and the settings, never a secret).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunRecord {
    /// The format version ([`RUN_FORMAT_VERSION`] when written by this build).
    pub version: u32,
    /// When the run started, milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// When this snapshot was written.
    pub saved_ms: u64,
    /// The team, whole, so a resume does not depend on files that changed.
    pub team: TeamSnapshot,
    /// The settings the run was started with.
    pub settings: RunSettings,
    /// The length of `journal.jsonl` when this snapshot was written: a
    /// resume replays only the records after it (absent in files written
    /// before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_len: Option<u64>,
    /// The highest turn id in `turns.jsonl` when this snapshot was
    /// written: a call that a resume makes again and that a turn filed
    /// after it answered (a kill came between the turn and the step it
    /// led to) is answered from that turn, not made again (absent in
    /// files written before it existed: nothing is answered so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_turn: Option<u32>,
    /// Task, round, phase, board, plan, usage, status, answer.
    #[serde(flatten)]
    pub state: RunState,
}

/// A team as stored in `run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TeamSnapshot {
    /// The team's name.
    pub name: String,
    /// The directory it was loaded from, if any.
    #[serde(default)]
    pub dir: Option<PathBuf>,
    /// `team.yaml`.
    #[serde(default)]
    pub config: TeamConfig,
    /// Every agent with its soul.
    pub agents: Vec<AgentSpec>,
}

impl TeamSnapshot {
    /// The snapshot of a team.
    #[must_use]
    pub fn of(team: &Team) -> Self {
        TeamSnapshot {
            name: team.name().to_string(),
            dir: team
                .dir()
                .map(|d| d.canonicalize().unwrap_or_else(|_| d.to_path_buf())),
            config: without_secrets(team.config()),
            agents: team.agents().to_vec(),
        }
    }

    /// `team.json`: the snapshot with each agent's settings left at their
    /// defaults left out (they read back as those defaults).
    pub(crate) fn to_saved_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut value = serde_json::to_value(self)?;
        let agents = value
            .get_mut("agents")
            .and_then(serde_json::Value::as_array_mut);
        for agent in agents.into_iter().flatten() {
            if let serde_json::Value::Object(fields) = agent {
                fields.retain(|k, v| !(DEFAULTED.contains(&k.as_str()) && is_default(v)));
                // A source where the team's files put it goes without
                // saying; no source at all is said.
                let name = fields.get("name").and_then(|n| n.as_str()).unwrap_or("");
                let usual = self.usual_source(name).map(serde_json::Value::from);
                match fields.get("source") {
                    Some(s) if Some(s) == usual.as_ref() => {
                        fields.remove("source");
                    }
                    Some(_) => {}
                    None => {
                        fields.insert("source".into(), serde_json::Value::Null);
                    }
                }
            }
        }
        if let serde_json::Value::Object(fields) = &mut value {
            fields.insert(SOURCES.into(), USUAL_SOURCE.into());
        }
        serde_json::to_vec(&value)
    }

    /// Where the team's files put agent `name`'s file.
    fn usual_source(&self, name: &str) -> Option<String> {
        let dir = self.dir.as_deref()?;
        Some(
            dir.join("agents")
                .join(format!("{name}.md"))
                .to_string_lossy()
                .into_owned(),
        )
    }

    /// Reads `team.json` (written by [`TeamSnapshot::to_saved_json`], or
    /// whole by an earlier build).
    pub(crate) fn from_saved_json(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        let mut value: serde_json::Value = serde_json::from_slice(bytes)?;
        let usual = value
            .as_object_mut()
            .and_then(|f| f.remove(SOURCES))
            .is_some();
        let mut team: TeamSnapshot = serde_json::from_value(value.clone())?;
        if usual {
            let agents = value.get("agents").and_then(|a| a.as_array());
            for (spec, saved) in team.agents.iter_mut().zip(agents.into_iter().flatten()) {
                if saved.get("source").is_none() {
                    let dir = team.dir.as_deref();
                    spec.source = dir.map(|d| d.join("agents").join(format!("{}.md", spec.name)));
                }
            }
        }
        Ok(team)
    }

    /// The team again, as it was when the run started.
    ///
    /// # Errors
    ///
    /// A [`TeamError`] when the stored agents do not make a valid team
    /// (a hand-edited file).
    pub fn to_team(&self) -> Result<Team, TeamError> {
        let mut config = self.config.clone();
        // The saved MCP `env` values are redacted: take them from the team
        // directory as it is now, or leave them to the inherited environment.
        let live = self.dir.as_deref().and_then(|d| Team::load(d).ok());
        for (name, server) in &mut config.mcp_servers {
            let fresh = live.as_ref().and_then(|t| t.config().mcp_servers.get(name));
            match fresh {
                Some(fresh) => {
                    server.env = fresh.env.clone();
                    server.headers = fresh.headers.clone();
                    server.url = fresh.url.clone();
                }
                None => {
                    server.env.retain(|_, v| v != REDACTED);
                    server.headers.retain(|_, v| v != REDACTED);
                }
            }
        }
        Team::validate(
            self.name.clone(),
            self.dir.clone(),
            config,
            self.agents.clone(),
        )
    }
}

/// The key of `team.json` that says an agent without a `source` has its
/// file where the team's files put it ([`USUAL_SOURCE`]).
const SOURCES: &str = "sources";
const USUAL_SOURCE: &str = "agents/<name>.md";

/// An agent's settings that read back as their default when absent.
const DEFAULTED: &[&str] = &[
    "description",
    "can_challenge",
    "model",
    "tools",
    "temperature",
    "max_tokens",
    "notes",
];

/// Whether `v` is what an absent setting reads as.
fn is_default(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Null => true,
        serde_json::Value::Bool(b) => !b,
        serde_json::Value::String(s) => s.is_empty(),
        serde_json::Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// What stands in `run.json` for a secret.
const REDACTED: &str = "***";

/// The team's settings as `run.json` may hold them: MCP servers' `env`
/// and `headers` values (where tokens live) and credentials in model and
/// MCP URLs are redacted.
fn without_secrets(config: &TeamConfig) -> TeamConfig {
    let mut config = config.clone();
    for server in config.mcp_servers.values_mut() {
        for value in server.env.values_mut().chain(server.headers.values_mut()) {
            *value = REDACTED.to_string();
        }
        server.url = server.url.as_deref().map(crate::model::redact_url);
    }
    for model in config.models.values_mut() {
        match model {
            crate::team::ModelConfig::Spec(spec) => *spec = crate::model::redact_url(spec),
            crate::team::ModelConfig::Endpoint(e) => {
                e.base_url = e.base_url.as_deref().map(crate::model::redact_url);
            }
        }
    }
    config
}

/// One line of `journal.jsonl`: something that changed in the middle of
/// a phase, tagged with the phase so a resume replays only what belongs
/// to the phase that was cut off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub(crate) enum JournalRecord {
    /// An entry landed on the board.
    Entry {
        round: u32,
        phase: RunPhase,
        entry: Entry,
    },
    /// A work module changed (its transcript saved as the turns'
    /// ids when it was built of turns).
    Module {
        round: u32,
        phase: RunPhase,
        #[serde(serialize_with = "crate::plan::serialize_saved")]
        module: WorkModule,
    },
    /// A model call returned; its tokens count toward the run.
    Usage {
        round: u32,
        phase: RunPhase,
        agent: String,
        usage: crate::model::Usage,
    },
    /// A handoff run took a step (or a routing decision) at `round`: the
    /// state it left, journaled before the (slower, fsynced) snapshot, so
    /// a kill in between does not call the step's model again on resume.
    Handoff {
        round: u32,
        status: RunStatus,
        phase: RunPhase,
        #[serde(default)]
        answer: Option<String>,
        handoff: HandoffState,
    },
}
