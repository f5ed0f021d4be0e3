//! The default team, compiled into the program.

use std::path::PathBuf;

use super::agent::parse_agent;
use super::{Team, TeamConfig, TeamError};

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
