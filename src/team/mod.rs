//! Teams: agents with their souls, loaded from disk or built in code.
//!
//! On disk a team is a directory with `agents/<name>.md` (YAML front matter
//! and optional notes), `souls/<name>.md` (the persona, plain Markdown) and
//! an optional `team.yaml`. Every mistake is reported with its file and
//! line.

mod agent;
mod approve;
mod bound;
mod builtin;
mod check;
mod config;
mod error;
mod handoff;
mod mcp;
mod profile;
mod protocols;
mod template;
mod yaml;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) use agent::read_text;
pub use agent::{AgentRole, AgentSpec};
use agent::{check_name, load_agent, split_front_matter};
pub(crate) use check::front_matter_item_line;
pub use config::{HandoffRuleConfig, ModelConfig, Process, TeamConfig};
pub use error::TeamError;
pub use handoff::{AfterWork, HandoffRule, HandoffSettings};
pub(crate) use mcp::check_server_name;
pub use mcp::{Elicitation, McpServerConfig};
pub(crate) use profile::role_name;
pub use profile::{AgentState, FlowAction, FlowRule, Observer, Profile, Segment};
pub use protocols::{
    ArchivedMessage, BriefingError, BriefingField, BriefingSource, HandoverProtocol, ModuleView,
    PARTNER_TO_PRINCIPAL, PRINCIPAL_TO_ASSOCIATE, Protocols,
};
pub use template::{
    TemplateError, VarError, Variables, apply_var_flags, check_template, parse_var_flag, render,
    render_task,
};

#[derive(Debug)]
struct TeamInner {
    name: String,
    dir: Option<PathBuf>,
    config: TeamConfig,
    agents: Vec<AgentSpec>,
    handoff: Option<HandoffSettings>,
    /// Handover protocols: the team's `protocols/*.yaml` over the built-in ones.
    protocols: Protocols,
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
        mcp::merge_mcp_json(&mut config, &dir.join("mcp.json"))?;
        let agents = load_agents(&files, &dir.join("souls"))?;
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
        let protocols = Protocols::load(dir)?;
        let team = Team::validate_with(name, Some(dir.to_path_buf()), config, agents, source)?;
        Ok(team.with_protocols(protocols))
    }

    /// The team with these handover protocols.
    fn with_protocols(mut self, protocols: Protocols) -> Team {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.protocols = protocols;
        }
        self
    }

    /// The team's handover protocols (its `protocols/*.yaml` over the
    /// built-in ones).
    #[must_use]
    pub fn protocols(&self) -> &Protocols {
        &self.inner.protocols
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
        // Patterns set in code (files are checked at their lines on load).
        for p in &config.approve {
            approve::check_pattern(p).map_err(|why| TeamError::in_file(&team_path, why))?;
        }
        // Names seen so far, in lower case: a name's first holder.
        let mut seen: std::collections::HashMap<String, &AgentSpec> =
            std::collections::HashMap::with_capacity(agents.len());
        for a in &agents {
            if let Err(why) = check_name(&a.name) {
                return Err(TeamError::in_file(where_(a), why));
            }
            for p in &a.approve {
                approve::check_pattern(p).map_err(|why| TeamError::in_file(where_(a), why))?;
            }
            if let Some(first) = seen.insert(a.name.to_ascii_lowercase(), a) {
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
        let known = config.context_variables.names();
        for a in &agents {
            profile::check_profile(a, &known, config.process)?;
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
            [_] if config.process != Process::Handoff
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
                protocols: Protocols::default(),
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
                protocols: self.inner.protocols.clone(),
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

/// Agents from this many files on are read on several threads.
const PARALLEL_FROM: usize = 64;

/// Reads and parses the agent files (and their souls), in file order. A
/// large team is read on a few threads, each a contiguous share of the
/// files: two files an agent, each opened, checked, read and parsed, were
/// most of the time before a thousand-agent run's first call. The first
/// error in file order is the one reported, as a serial read would.
fn load_agents(files: &[PathBuf], souls: &Path) -> Result<Vec<AgentSpec>, TeamError> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(8);
    if files.len() < PARALLEL_FROM || threads < 2 {
        return files.iter().map(|p| load_agent(p, souls)).collect();
    }
    let share = files.len().div_ceil(threads);
    let parts: Vec<Result<Vec<AgentSpec>, TeamError>> = std::thread::scope(|s| {
        let handles: Vec<_> = files
            .chunks(share)
            .map(|chunk| {
                let read = move || chunk.iter().map(|p| load_agent(p, souls)).collect();
                (chunk, std::thread::Builder::new().spawn_scoped(s, read))
            })
            .collect();
        handles
            .into_iter()
            .map(|(chunk, handle)| match handle {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                // No thread to be had: this share is read here.
                Err(_) => chunk.iter().map(|p| load_agent(p, souls)).collect(),
            })
            .collect()
    });
    let mut agents = Vec::with_capacity(files.len());
    for part in parts {
        agents.extend(part?);
    }
    Ok(agents)
}

#[cfg(test)]
mod tests;
