//! The small teams built in code that many tests run: `master` ("You
//! lead."), `writer` ("Writes", "You write.") and, in the trio, the
//! challenger `critic` ("Checks", "You check.").

use boardroom::{AgentSpec, Team, TeamConfig};

/// Team `name`: `master` and `writer`.
pub fn duo(name: &str) -> Team {
    Team::new(
        name,
        TeamConfig::default(),
        vec![
            AgentSpec::master("master", "You lead."),
            AgentSpec::member("writer", "Writes", "You write."),
        ],
    )
    .unwrap()
}

/// Team `name`: `master`, `writer` and the challenger `critic`.
pub fn trio(name: &str) -> Team {
    Team::new(
        name,
        TeamConfig::default(),
        vec![
            AgentSpec::master("master", "You lead."),
            AgentSpec::member("writer", "Writes", "You write."),
            AgentSpec::member("critic", "Checks", "You check.").challenger(),
        ],
    )
    .unwrap()
}
