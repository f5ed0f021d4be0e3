//! Filling in the `${VAR}`s of an MCP server's settings (see
//! [`McpServerConfig`](super::McpServerConfig)) from the environment when the server is opened.

/// Fills every `${VAR}` in `text` from the environment, pushing each value
/// filled in onto `values`. In a URL, the values filled into its
/// `user:password@` or its query, and a query value whose name says it is a
/// credential (`?token=...`), are remembered as secrets of the process
/// ([`crate::util::secrets`], issue 28); a host or path is not a secret. (Header
/// values are remembered by the caller, which knows the header's name.)
///
/// # Errors
///
/// The name of a variable that is not set (or not UTF-8), or a `${` with no
/// closing `}`.
pub(crate) fn expand_env(text: &str, values: &mut Vec<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| "'${' without a closing '}'".to_string())?;
        let name = &after[..end];
        let value =
            std::env::var(name).map_err(|_| format!("environment variable '{name}' is not set"))?;
        if in_url_secret(text, text.len() - rest.len() + start) {
            crate::util::secrets::remember(&value);
        }
        out.push_str(&value);
        values.push(value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    if text.contains("://") {
        crate::util::secrets::remember_url(&out);
    }
    Ok(out)
}

/// Whether byte `at` of the URL `text` is in its `user:password@` or its
/// query (false for text that is not a URL).
fn in_url_secret(text: &str, at: usize) -> bool {
    let Some(scheme_end) = text.find("://").map(|i| i + 3) else {
        return false;
    };
    if at < scheme_end {
        return false;
    }
    let authority_end = text[scheme_end..]
        .find(['/', '?', '#'])
        .map_or(text.len(), |i| scheme_end + i);
    let in_userinfo = at < authority_end && text[at..authority_end].contains('@');
    let in_query = text.find('?').is_some_and(|q| at > q);
    in_userinfo || in_query
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 28, finding 18: `${VAR}`s in a URL's credentials or query are
    /// secrets; in its host or path they are not.
    #[test]
    fn url_variables_in_credentials_and_query_are_secrets() {
        let t = "http://${U}:${P}@${HOST}:1/${PATH}?token=${T}&x=${X}";
        let at = |name: &str| t.find(&format!("${{{name}}}")).unwrap();
        assert!(in_url_secret(t, at("U")));
        assert!(in_url_secret(t, at("P")));
        assert!(!in_url_secret(t, at("HOST")));
        assert!(!in_url_secret(t, at("PATH")));
        assert!(in_url_secret(t, at("T")));
        assert!(in_url_secret(t, at("X")));
        assert!(!in_url_secret("Bearer ${T}", 7));
    }

    #[test]
    fn variables_come_from_the_environment() {
        // PATH is set in every test environment.
        let path = std::env::var("PATH").unwrap();
        let mut values = Vec::new();
        assert_eq!(
            expand_env("a ${PATH} b", &mut values).unwrap(),
            format!("a {path} b")
        );
        assert_eq!(values, vec![path]);
        assert_eq!(expand_env("no vars", &mut Vec::new()).unwrap(), "no vars");
        assert_eq!(
            expand_env("Bearer ${BOARDROOM_SURELY_UNSET_VAR}", &mut Vec::new()).unwrap_err(),
            "environment variable 'BOARDROOM_SURELY_UNSET_VAR' is not set"
        );
        assert_eq!(
            expand_env("x ${OPEN", &mut Vec::new()).unwrap_err(),
            "'${' without a closing '}'"
        );
    }
}
