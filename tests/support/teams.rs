//! The small teams built in code that many tests run: `master` ("You
//! lead."), `writer` ("Writes", "You write.") and, in the trio, the
//! challenger `critic` ("Checks", "You check.").

use boardroom::{AgentSpec, Team, TeamConfig};

/// `master` and `writer`.
fn master_and_writer() -> Vec<AgentSpec> {
    vec![
        AgentSpec::master("master", "You lead."),
        AgentSpec::member("writer", "Writes", "You write."),
    ]
}

/// Team `name`: `master` and `writer`.
pub fn duo(name: &str) -> Team {
    Team::new(name, TeamConfig::default(), master_and_writer()).unwrap()
}

/// Team `name`: `master`, `writer` and the challenger `critic`.
pub fn trio(name: &str) -> Team {
    let mut agents = master_and_writer();
    agents.push(AgentSpec::member("critic", "Checks", "You check.").challenger());
    Team::new(name, TeamConfig::default(), agents).unwrap()
}
