//! Teams: agents with their souls, loaded from disk or built in code.
//!
//! On disk a team is a directory with `agents/<name>.md` (YAML front matter
//! and optional notes), `souls/<name>.md` (the persona, plain Markdown) and
//! an optional `team.yaml`. Every mistake is reported with its file and
//! line.

mod bound;
mod check;
mod config;
mod error;
mod handoff;
mod template;
mod yaml;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub(crate) use check::front_matter_item_line;
pub use config::{HandoffRuleConfig, ModelConfig, Process, TeamConfig};
pub use error::TeamError;
pub use handoff::{AfterWork, HandoffRule, HandoffSettings};
pub use template::{
    TemplateError, VarError, Variables, apply_var_flags, check_template, parse_var_flag, render,
    render_task,
};

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
];

/// An agent's place in the team.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum AgentRole {
    /// Splits the task, reviews the board, gives the answer. One per team.
    Master,
    /// Works on assignments.
    Member,
    /// Talks with the user in `boardroom chat`: clarifies the request,
    /// drafts the work modules and launches the team. At most one per
    /// team; never on the roster of a run.
    Partner,
}

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
            temperature: None,
            max_tokens: None,
            soul: soul.into(),
            notes: String::new(),
            source: None,
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
    /// endpoint, a [`Sim`](crate::testing::Sim), your own [`ChatModel`](crate::ChatModel)).
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

#[derive(Debug, Deserialize)]
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
    temperature: Option<f32>,
    max_tokens: Option<u32>,
}

#[derive(Debug)]
struct TeamInner {
    name: String,
    dir: Option<PathBuf>,
    config: TeamConfig,
    agents: Vec<AgentSpec>,
    handoff: Option<HandoffSettings>,
}

/// A validated team: exactly one master, unique valid names.
///
/// Cheap to clone.
#[derive(Debug, Clone)]
pub struct Team {
    inner: Arc<TeamInner>,
}

impl Team {
    /// Loads a team directory (`agents/`, `souls/`, optional `team.yaml`).
    ///
    /// # Errors
    ///
    /// A [`TeamError`] naming the file and line of the first problem: an
    /// unknown key, a missing soul, a second master, a bad or duplicate name.
    ///
    /// # Examples
    ///
    /// ```
    /// let team = boardroom::Team::load(".").unwrap();
    /// assert_eq!(team.master().name, "master");
    /// ```
    pub fn load(dir: impl AsRef<Path>) -> Result<Team, TeamError> {
        let dir = dir.as_ref();
        let agents_dir = dir.join("agents");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&agents_dir)
            .map_err(|source| TeamError::Io {
                path: agents_dir.clone(),
                source,
            })?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        files.sort();
        let config_path = dir.join("team.yaml");
        let mut outline = None;
        let mut config = if config_path.exists() {
            let (config, o) = TeamConfig::load_outlined(&config_path)?;
            outline = Some(o);
            config
        } else {
            TeamConfig::default()
        };
        crate::tools::merge_mcp_json(&mut config, &dir.join("mcp.json"))?;
        let mut agents = Vec::new();
        for path in &files {
            agents.push(load_agent(path, &dir.join("souls"))?);
        }
        let name = config.name.clone().unwrap_or_else(|| {
            dir.canonicalize()
                .ok()
                .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "team".into())
        });
        let source = outline.as_ref().map(|outline| handoff::Source {
            path: &config_path,
            outline,
        });
        Team::validate_with(name, Some(dir.to_path_buf()), config, agents, source)
    }

    /// Builds a team in code.
    ///
    /// # Errors
    ///
    /// A [`TeamError`] when there is not exactly one master or a name is bad
    /// or repeated.
    ///
    /// # Examples
    ///
    /// ```
    /// use boardroom::{AgentSpec, Team, TeamConfig};
    /// let team = Team::new("demo", TeamConfig::default(), vec![
    ///     AgentSpec::master("lead", "You lead."),
    ///     AgentSpec::member("writer", "Writes", "You write.").challenger(),
    /// ]).unwrap();
    /// assert_eq!(team.members().count(), 1);
    /// ```
    pub fn new(
        name: impl Into<String>,
        config: TeamConfig,
        agents: Vec<AgentSpec>,
    ) -> Result<Team, TeamError> {
        Team::validate(name.into(), None, config, agents)
    }

    pub(crate) fn validate(
        name: String,
        dir: Option<PathBuf>,
        config: TeamConfig,
        agents: Vec<AgentSpec>,
    ) -> Result<Team, TeamError> {
        Team::validate_with(name, dir, config, agents, None)
    }

    /// Validates; `source` is team.yaml's text, to name lines in errors.
    fn validate_with(
        name: String,
        dir: Option<PathBuf>,
        config: TeamConfig,
        agents: Vec<AgentSpec>,
        source: Option<handoff::Source<'_>>,
    ) -> Result<Team, TeamError> {
        let where_ = |a: &AgentSpec| {
            a.source
                .clone()
                .unwrap_or_else(|| PathBuf::from(format!("agent '{}'", a.name)))
        };
        let team_path = dir.clone().map_or_else(
            || PathBuf::from(format!("team '{name}'")),
            |d| d.join("agents"),
        );
        for (i, a) in agents.iter().enumerate() {
            if let Err(why) = check_name(&a.name) {
                return Err(TeamError::in_file(where_(a), why));
            }
            if let Some(first) = agents[..i]
                .iter()
                .find(|b| b.name.eq_ignore_ascii_case(&a.name))
            {
                return Err(TeamError::in_file(
                    where_(a),
                    format!(
                        "duplicate agent name '{}' (also in {})",
                        a.name,
                        where_(first).display()
                    ),
                ));
            }
        }
        let masters: Vec<&AgentSpec> = agents
            .iter()
            .filter(|a| a.role == AgentRole::Master)
            .collect();
        match masters.as_slice() {
            [] => {
                return Err(TeamError::in_file(
                    team_path,
                    "no master: exactly one agent needs 'role: master'",
                ));
            }
            [_] if config.process == Process::Blackboard
                && !agents.iter().any(|a| a.role == AgentRole::Member) =>
            {
                // The master's plan must assign work (a DONE in the plan is
                // no plan), so a blackboard team with nobody to assign to
                // cannot run. A handoff team of one agent can (an agent that
                // continues, or returns to its user).
                return Err(TeamError::in_file(
                    team_path,
                    "no member: the master's plan must assign work, so a team needs at least \
                     one agent with 'role: member'",
                ));
            }
            [_] => {}
            [first, second, ..] => {
                return Err(TeamError::in_file(
                    where_(second),
                    format!(
                        "a second master '{}' (the first is '{}'): a team has exactly one",
                        second.name, first.name
                    ),
                ));
            }
        }
        let souls = dir.as_ref().map(|d| d.join("souls"));
        let handoff = handoff::build(&name, &config, &agents, souls.as_deref(), source)?;
        check_one_partner(&agents, where_)?;
        // The master first, then members in name order, then the partner.
        let rank = |r: AgentRole| match r {
            AgentRole::Master => 0,
            AgentRole::Member => 1,
            AgentRole::Partner => 2,
        };
        let mut agents = agents;
        agents.sort_by(|a, b| (rank(a.role), &a.name).cmp(&(rank(b.role), &b.name)));
        Ok(Team {
            inner: Arc::new(TeamInner {
                name,
                dir,
                config,
                agents,
                handoff,
            }),
        })
    }

    /// The team's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The directory it was loaded from, if any.
    #[must_use]
    pub fn dir(&self) -> Option<&Path> {
        self.inner.dir.as_deref()
    }

    /// The `team.yaml` settings.
    #[must_use]
    pub fn config(&self) -> &TeamConfig {
        &self.inner.config
    }

    /// Every agent, the master first.
    #[must_use]
    pub fn agents(&self) -> &[AgentSpec] {
        &self.inner.agents
    }

    /// The master.
    #[must_use]
    pub fn master(&self) -> &AgentSpec {
        // validate() guarantees exactly one master, sorted first.
        &self.inner.agents[0]
    }

    /// The members, in name order.
    pub fn members(&self) -> impl Iterator<Item = &AgentSpec> {
        self.inner.agents[1..]
            .iter()
            .filter(|a| a.role == AgentRole::Member)
    }

    /// The partner (`role: partner`), if the team has one: the agent
    /// `boardroom chat` talks with.
    #[must_use]
    pub fn partner(&self) -> Option<&AgentSpec> {
        self.inner
            .agents
            .iter()
            .find(|a| a.role == AgentRole::Partner)
    }

    /// How a handoff team hands over: entry, rules, after-work behaviour,
    /// caps. `None` for a team of another process.
    #[must_use]
    pub fn handoff(&self) -> Option<&HandoffSettings> {
        self.inner.handoff.as_ref()
    }

    /// The declared context variables with their defaults, in file order.
    #[must_use]
    pub fn variables(&self) -> &Variables {
        &self.inner.config.context_variables
    }

    /// This team with every soul rendered over `vars`: the blackboard
    /// renders souls once a run (nothing changes its variables mid-run).
    /// A team that declares no variables is returned as it is (its souls
    /// were never checked as templates). The error names the agent.
    pub(crate) fn with_rendered_souls(
        &self,
        vars: &Variables,
    ) -> Result<Team, (String, TemplateError)> {
        if self.variables().is_empty() {
            return Ok(self.clone());
        }
        let mut agents = self.inner.agents.clone();
        for a in &mut agents {
            a.soul = render(&a.soul, vars).map_err(|e| (a.name.clone(), e))?;
        }
        Ok(Team {
            inner: Arc::new(TeamInner {
                name: self.inner.name.clone(),
                dir: self.inner.dir.clone(),
                config: self.inner.config.clone(),
                agents,
                handoff: self.inner.handoff.clone(),
            }),
        })
    }

    /// The agent with this name (exact spelling).
    #[must_use]
    pub fn agent(&self, name: &str) -> Option<&AgentSpec> {
        // The master first, then the members in name order, then at most
        // one partner (see `new`): the members are found by a binary
        // search. Every member's turn looks agents up a few times, and a
        // scan made a round of 2048 members O(N²) (issue 14).
        let agents = &self.inner.agents;
        let (master, rest) = agents.split_first()?;
        if master.name == name {
            return Some(master);
        }
        let members = match rest.split_last() {
            Some((last, members)) if last.role == AgentRole::Partner => {
                if last.name == name {
                    return Some(last);
                }
                members
            }
            _ => rest,
        };
        members
            .binary_search_by(|a| a.name.as_str().cmp(name))
            .ok()
            .map(|i| &members[i])
    }
}

/// At most one partner: a second is an error at its `role:` line.
fn check_one_partner(
    agents: &[AgentSpec],
    where_: impl Fn(&AgentSpec) -> PathBuf,
) -> Result<(), TeamError> {
    let mut partners = agents.iter().filter(|a| a.role == AgentRole::Partner);
    let (Some(first), Some(second)) = (partners.next(), partners.next()) else {
        return Ok(());
    };
    let path = where_(second);
    let line = check::front_matter_line(&path, "role").unwrap_or(1);
    Err(TeamError::at(
        path,
        line,
        format!(
            "a second partner '{}' (the first is '{}'): a team has at most one",
            second.name, first.name
        ),
    ))
}

/// A name is an identifier: ASCII letter first, then letters, digits, `_`, `-`.
fn check_name(name: &str) -> Result<(), String> {
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
fn split_front_matter(path: &Path, text: &str) -> Result<(String, usize, String), TeamError> {
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
    if path.is_dir() {
        return Err("is a directory, not a file".into());
    }
    let bytes =
        crate::store::read_capped(path, crate::store::MAX_TEAM_FILE).map_err(|e| {
            match e.kind() {
                std::io::ErrorKind::NotFound => "not found".to_string(),
                _ => e.to_string(),
            }
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

fn load_agent(path: &Path, souls: &Path) -> Result<AgentSpec, TeamError> {
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
fn parse_agent(
    path: &Path,
    text: &str,
    soul: impl FnOnce(&str) -> Result<String, String>,
) -> Result<AgentSpec, TeamError> {
    let (yaml_text, first, notes) = split_front_matter(path, text)?;
    let (fm, outline): (FrontMatter, _) = yaml::read_checked(path, &yaml_text, first, AGENT_KEYS)?;
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
    let soul = soul(&name).map_err(|why| TeamError::at(path, line_of("name"), why))?;
    Ok(AgentSpec {
        name,
        role,
        description: fm.description.trim().to_string(),
        can_challenge: fm.can_challenge,
        model: fm.model,
        tools: fm.tools,
        temperature: fm.temperature,
        max_tokens: fm.max_tokens,
        soul: soul.trim().to_string(),
        notes,
        source: Some(path.to_path_buf()),
        chat_model: None,
    })
}

/// The default team, built into the program from the repository's
/// `agents/` and `souls/`.
const BUILTIN: &[(&str, &str, &str)] = &[
    (
        "master",
        include_str!("../../agents/master.md"),
        include_str!("../../souls/master.md"),
    ),
    (
        "researcher",
        include_str!("../../agents/researcher.md"),
        include_str!("../../souls/researcher.md"),
    ),
    (
        "analyst",
        include_str!("../../agents/analyst.md"),
        include_str!("../../souls/analyst.md"),
    ),
    (
        "writer",
        include_str!("../../agents/writer.md"),
        include_str!("../../souls/writer.md"),
    ),
    (
        "critic",
        include_str!("../../agents/critic.md"),
        include_str!("../../souls/critic.md"),
    ),
    (
        "partner",
        include_str!("../../agents/partner.md"),
        include_str!("../../souls/partner.md"),
    ),
];

impl Team {
    /// The default team that ships with the program (the repository's
    /// `agents/` and `souls/`, compiled in), for use without a team
    /// directory.
    ///
    /// # Errors
    ///
    /// Only if the built-in files are broken, which the tests rule out.
    pub fn builtin() -> Result<Team, TeamError> {
        let mut agents = Vec::new();
        for (name, agent, soul) in BUILTIN {
            let path = PathBuf::from(format!("agents/{name}.md"));
            agents.push(parse_agent(&path, agent, |_| Ok((*soul).to_string()))?);
        }
        Team::validate("default".into(), None, TeamConfig::default(), agents)
    }
}

#[cfg(test)]
mod tests;
