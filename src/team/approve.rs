//! Which tool calls wait for a person's decision: the `approve:` patterns
//! of an agent (its front matter) and of the team (`team.yaml`). A pattern
//! is a tool's name as granted (`workspace_write`, `remote.search`) or a
//! glob over it: `*` any run of characters, `?` one character
//! (`remote.*`, `workspace_*`).

/// Why `pattern` is not an approval pattern, if it is not one.
pub(crate) fn check_pattern(pattern: &str) -> Result<(), String> {
    if pattern.trim().is_empty() {
        return Err("approve: an empty pattern: name a tool or a glob such as 'remote.*'".into());
    }
    if pattern.len() > 128 {
        return Err(format!(
            "approve: the pattern '{}…' is longer than 128 characters",
            pattern.chars().take(40).collect::<String>()
        ));
    }
    let bad = pattern
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '*' | '?')));
    match bad {
        Some(c) => Err(format!(
            "approve: bad pattern '{pattern}': {c:?} is not allowed (tool names use letters, \
             digits, '_', '-' and '.'; '*' and '?' are wildcards)"
        )),
        None => Ok(()),
    }
}

/// Whether `tool` (a granted name) matches `pattern`.
pub(crate) fn matches(pattern: &str, tool: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), tool.chars().collect());
    // Iterative glob match with one backtrack point per '*'.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if c == '?' || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Checks every pattern of a list read from `path`; `line` gives the line
/// of its item `i`.
pub(crate) fn check_list(
    path: &std::path::Path,
    patterns: &[String],
    line: impl Fn(usize) -> usize,
) -> Result<(), super::TeamError> {
    for (i, p) in patterns.iter().enumerate() {
        check_pattern(p).map_err(|why| super::TeamError::at(path, line(i), why))?;
    }
    Ok(())
}

impl super::Team {
    /// Whether a call of `tool` (its name as granted) by `agent` waits for
    /// a person's decision: a pattern of the agent's `approve:` or the
    /// team's matches it.
    #[must_use]
    pub fn needs_approval(&self, agent: &super::AgentSpec, tool: &str) -> bool {
        agent
            .approve
            .iter()
            .chain(&self.config().approve)
            .any(|p| matches(p, tool))
    }

    /// The `approve:` patterns that match none of `tools` (a mistyped
    /// one leaves its tool ungated): the agent whose list has it (`None`:
    /// the team's) and the pattern.
    #[must_use]
    pub fn approve_patterns_matching_none(&self, tools: &[String]) -> Vec<(Option<&str>, &str)> {
        let none = |p: &String| !tools.iter().any(|t| matches(p, t));
        let agents = self.agents().iter().flat_map(|a| {
            a.approve
                .iter()
                .filter(|p| none(p))
                .map(move |p| (Some(a.name.as_str()), p.as_str()))
        });
        let team = self.config().approve.iter().filter(|p| none(p));
        agents.chain(team.map(|p| (None, p.as_str()))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_tool_names() {
        assert!(matches("workspace_write", "workspace_write"));
        assert!(!matches("workspace_write", "workspace_read"));
        assert!(matches("remote.*", "remote.search"));
        assert!(!matches("remote.*", "remoteX.search"));
        assert!(matches("workspace_*", "workspace_write"));
        assert!(matches("*", "anything.at_all"));
        assert!(matches("w?rk*_write", "workspace_write"));
        assert!(!matches("remote.*", "remote"));
        assert!(matches("*.search", "a.b.search"));
    }

    #[test]
    fn bad_patterns_are_refused_with_the_reason() {
        assert!(check_pattern("remote.*").is_ok());
        assert_eq!(
            check_pattern("remote tools").unwrap_err(),
            "approve: bad pattern 'remote tools': ' ' is not allowed (tool names use letters, \
             digits, '_', '-' and '.'; '*' and '?' are wildcards)"
        );
        assert!(check_pattern(" ").is_err());
        assert!(check_pattern("[abc]").is_err());
    }
}
