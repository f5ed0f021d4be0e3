//! Agents: an agent file's front matter (`agents/<name>.md`), its soul
//! (`souls/<name>.md`), and the spec they make.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::record::AgentRole;

use super::profile::{Profile, ProfileKeys, read_profile};
use super::{TeamError, yaml};

/// Keys an agent's front matter may hold.
const AGENT_KEYS: &[&str] = &[
    "name",
    "role",
    "description",
    "can_challenge",
    "model",
    "tools",
    "temperature",
    "max_tokens",
    "approve",
    "deliverable",
    "prompt_segments",
    "toolsets",
    "flow_decider",
    "pre_turn_observers",
    "post_turn_observers",
];

/// One agent: its settings and its soul.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentSpec {
    /// A unique identifier: letters, digits, `_` and `-`, starting with a letter.
    pub name: String,
    /// Master or member.
    pub role: AgentRole,
    /// One line for the master's roster.
    #[serde(default)]
    pub description: String,
    /// Whether it takes part in the challenge round.
    #[serde(default)]
    pub can_challenge: bool,
    /// A model name from `team.yaml`, or a model spec; `None` for the default.
    #[serde(default)]
    pub model: Option<String>,
    /// The tools it may use.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Its tool calls that wait for a person's decision before they run:
    /// tool names or globs (`workspace_write`, `remote.*`), beside the
    /// team's own `approve:` (see [`Team::needs_approval`](crate::Team::needs_approval)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approve: Vec<String>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Cap on completion tokens per call.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// The persona and standing instructions (the soul file).
    #[serde(default)]
    pub soul: String,
    /// Notes below the front matter of the agent file.
    #[serde(default)]
    pub notes: String,
    /// Where it was loaded from, if from disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<PathBuf>,
    /// The JSON schema of the deliverable it hands in as an associate of a
    /// principal team (`deliverable:` in its front matter), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deliverable: Option<serde_json::Value>,
    /// Its declarative profile (prompt segments, toolsets, flow decider,
    /// observers); empty when it declares none.
    #[serde(default, skip_serializing_if = "Profile::is_empty")]
    pub profile: Profile,
    /// A model given in code ([`AgentSpec::with_chat_model`]); it wins over
    /// `model`. Not saved with a run: a resumed run uses `model` or the
    /// default. Read it with [`AgentSpec::chat_model`]. Being private, it
    /// also keeps a struct literal of `AgentSpec` out of other crates: they
    /// build one with [`AgentSpec::member`] or [`AgentSpec::master`], so a
    /// new field is not a breaking change (no `#[non_exhaustive]` needed).
    #[serde(skip)]
    pub(crate) chat_model: Option<AgentModel>,
}

/// A model instance given to one agent in code. Compares by identity.
#[derive(Clone)]
pub(crate) struct AgentModel(pub(crate) crate::model::SharedModel);

impl std::fmt::Debug for AgentModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AgentModel({})", self.0.name())
    }
}

impl PartialEq for AgentModel {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl AgentSpec {
    /// The model given in code with [`AgentSpec::with_chat_model`], if any.
    #[must_use]
    pub fn chat_model(&self) -> Option<&crate::model::SharedModel> {
        self.chat_model.as_ref().map(|m| &m.0)
    }

    /// A member with the given name, description and soul.
    pub fn member(
        name: impl Into<String>,
        description: impl Into<String>,
        soul: impl Into<String>,
    ) -> Self {
        AgentSpec {
            name: name.into(),
            role: AgentRole::Member,
            description: description.into(),
            can_challenge: false,
            model: None,
            tools: Vec::new(),
            approve: Vec::new(),
            temperature: None,
            max_tokens: None,
            soul: soul.into(),
            notes: String::new(),
            source: None,
            deliverable: None,
            profile: Profile::default(),
            chat_model: None,
        }
    }

    /// The master with the given name and soul.
    pub fn master(name: impl Into<String>, soul: impl Into<String>) -> Self {
        AgentSpec {
            role: AgentRole::Master,
            ..Self::member(name, "Leads the team", soul)
        }
    }

    /// Sets the JSON schema of its deliverable (an associate of a
    /// principal team).
    #[must_use]
    pub fn with_deliverable(mut self, schema: serde_json::Value) -> Self {
        self.deliverable = Some(schema);
        self
    }

    /// Lets it take part in the challenge round.
    #[must_use]
    pub fn challenger(mut self) -> Self {
        self.can_challenge = true;
        self
    }

    /// Sets its model (a name from `team.yaml` or a spec).
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Gives it a model of its own, as a value (an [`OpenAi`](crate::OpenAi)
    /// endpoint, the offline `testing::Sim`, your own [`ChatModel`](crate::ChatModel)).
    #[must_use]
    pub fn with_chat_model(mut self, model: impl crate::model::ChatModel + 'static) -> Self {
        self.chat_model = Some(AgentModel(std::sync::Arc::new(model)));
        self
    }

    /// Grants it tools.
    #[must_use]
    pub fn with_tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tools = tools.into_iter().map(Into::into).collect();
        self
    }
}

/// An agent file's front matter. Unknown fields are refused: the typed
/// read alone then takes a file whole ([`yaml::read_agent_checked`]); the
/// outline's check still names an unknown key first, at its line.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FrontMatter {
    name: Option<String>,
    role: Option<AgentRole>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    can_challenge: bool,
    model: Option<String>,
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    approve: Vec<String>,
    temperature: Option<f32>,
    max_tokens: Option<u32>,
    deliverable: Option<serde_json::Value>,
    #[serde(default)]
    prompt_segments: Vec<super::profile::Segment>,
    #[serde(default)]
    toolsets: std::collections::BTreeMap<String, Vec<String>>,
    #[serde(default)]
    flow_decider: Vec<super::profile::FlowRule>,
    #[serde(default)]
    pre_turn_observers: Vec<super::profile::Observer>,
    #[serde(default)]
    post_turn_observers: Vec<super::profile::Observer>,
}

/// A name is an identifier: ASCII letter first, then letters, digits, `_`, `-`.
pub(super) fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && name.len() <= 64;
    if ok {
        Ok(())
    } else {
        Err(format!(
            "bad agent name '{name}': use letters, digits, '_' and '-', starting with a letter (at most 64)"
        ))
    }
}

/// Splits `---` front matter from the rest; returns (yaml, first yaml line,
/// notes).
pub(super) fn split_front_matter(
    path: &Path,
    text: &str,
) -> Result<(String, usize, String), TeamError> {
    // A UTF-8 byte order mark (some Windows editors write one) is not text.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    match lines.next() {
        Some(l) if l.trim_end() == "---" => {}
        _ => {
            return Err(TeamError::at(
                path,
                1,
                "expected front matter: the file must start with a '---' line",
            ));
        }
    }
    let mut yaml = Vec::new();
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            let notes: Vec<&str> = lines.collect();
            return Ok((yaml.join("\n"), 2, notes.join("\n").trim().to_string()));
        }
        yaml.push(line);
    }
    Err(TeamError::at(
        path,
        yaml.len() + 1,
        "front matter is not closed: add a '---' line after it",
    ))
}

/// Reads a team file as text, saying plainly when it is a directory or
/// not UTF-8. A leading byte order mark is dropped.
pub(crate) fn read_text(path: &Path) -> Result<String, String> {
    let bytes =
        crate::util::fs::read_capped(path, crate::util::fs::MAX_TEAM_FILE).map_err(|e| match e
            .kind()
        {
            std::io::ErrorKind::NotFound => "not found".to_string(),
            _ if path.is_dir() => "is a directory, not a file".to_string(),
            _ => e.to_string(),
        })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        format!("is not UTF-8 text (a bad byte at line {line}, byte offset {at}): save it as UTF-8")
    })?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

pub(super) fn load_agent(path: &Path, souls: &Path) -> Result<AgentSpec, TeamError> {
    let text = read_text(path).map_err(|why| TeamError::in_file(path, why))?;
    parse_agent(path, &text, |name| {
        let soul_path = souls.join(format!("{name}.md"));
        match read_text(&soul_path) {
            Ok(s) if s.trim().is_empty() => {
                Err(format!("the soul {} is empty", soul_path.display()))
            }
            Ok(s) => Ok(s),
            Err(why) if why == "not found" => Err(format!(
                "no soul for '{name}': {} not found",
                soul_path.display()
            )),
            Err(why) => Err(format!(
                "the soul for '{name}', {}, {why}",
                soul_path.display()
            )),
        }
    })
}

/// Parses an agent file; `soul` finds the soul for a name.
pub(super) fn parse_agent(
    path: &Path,
    text: &str,
    soul: impl FnOnce(&str) -> Result<String, String>,
) -> Result<AgentSpec, TeamError> {
    let (yaml_text, first, notes) = split_front_matter(path, text)?;
    let (fm, outline): (FrontMatter, _) =
        yaml::read_agent_checked(path, &yaml_text, first, AGENT_KEYS)?;
    // Maps of names (`toolsets`, a `deliverable` schema, what a profile
    // holds) are checked for a key written twice as the outline sees keys;
    // an agent of only plain settings needs no outline.
    let plain = fm.toolsets.is_empty()
        && fm.deliverable.is_none()
        && fm.prompt_segments.is_empty()
        && fm.flow_decider.is_empty()
        && fm.pre_turn_observers.is_empty()
        && fm.post_turn_observers.is_empty();
    if !plain {
        outline.check_duplicates_now(path)?;
    }
    let line_of = |key: &str| outline.line(&[yaml::Step::Key(key)]).unwrap_or(1);
    let Some(name) = fm.name else {
        return Err(TeamError::at(path, 1, "missing key 'name'"));
    };
    check_name(&name).map_err(|why| TeamError::at(path, line_of("name"), why))?;
    let Some(role) = fm.role else {
        return Err(TeamError::at(
            path,
            1,
            "missing key 'role' (master, member or partner)",
        ));
    };
    if let Some(t) = fm.temperature
        && !(0.0..=2.0).contains(&t)
    {
        return Err(TeamError::at(
            path,
            line_of("temperature"),
            format!("temperature {t} is outside 0..=2"),
        ));
    }
    if let Some(schema) = &fm.deliverable
        && !schema.is_object()
    {
        return Err(TeamError::at(
            path,
            line_of("deliverable"),
            "deliverable: a JSON schema is a mapping (type, properties, required)",
        ));
    }
    super::approve::check_list(path, &fm.approve, |i| {
        outline
            .line(&[yaml::Step::Key("approve"), yaml::Step::Item(i)])
            .unwrap_or_else(|| line_of("approve"))
    })?;
    let mut tools = fm.tools;
    let keys = ProfileKeys {
        prompt_segments: fm.prompt_segments,
        toolsets: fm.toolsets,
        flow_decider: fm.flow_decider,
        pre_turn_observers: fm.pre_turn_observers,
        post_turn_observers: fm.post_turn_observers,
    };
    let profile = read_profile(path, &outline, keys, &mut tools)?;
    let soul = soul(&name).map_err(|why| TeamError::at(path, line_of("name"), why))?;
    Ok(AgentSpec {
        name,
        role,
        description: fm.description.trim().to_string(),
        can_challenge: fm.can_challenge,
        model: fm.model,
        tools,
        approve: fm.approve,
        temperature: fm.temperature,
        max_tokens: fm.max_tokens,
        soul: soul.trim().to_string(),
        notes,
        source: Some(path.to_path_buf()),
        deliverable: fm.deliverable,
        profile,
        chat_model: None,
    })
}
