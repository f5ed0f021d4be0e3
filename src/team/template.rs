//! Context variables and the templates that use them.
//!
//! A team declares its variables with defaults in `team.yaml`
//! (`context_variables:`); `--var name=value` overrides one for a run and an
//! agent may change one with the `set_variable` tool. Souls, tasks and
//! handoff conditions are Jinja templates ([minijinja]) rendered with them:
//! `{{ max_revisions }}`, `{% if audience == "experts" %}...{% endif %}`.
//! Undefined is strict: a template that names a variable the team does not
//! declare is an error that names the variable and the known ones, at load
//! time for souls and conditions.

use std::fmt;

use crate::util::vars::known_names;
pub use crate::util::vars::{VarError, Variables};

/// Parses one `--var name=value` flag (the value may hold `=`; spaces
/// around the name are dropped).
///
/// # Errors
///
/// [`VarError::BadFlag`] when there is no `=` or no name.
pub fn parse_var_flag(flag: &str) -> Result<(String, String), VarError> {
    match flag.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.to_string()))
        }
        _ => Err(VarError::BadFlag {
            value: flag.to_string(),
        }),
    }
}

/// Parses every `--var` flag and applies them to the team's variables.
///
/// # Errors
///
/// A message naming the flag: `--var 'x=1': unknown context variable 'x'
/// (known: a, b)`, or the expected form.
pub fn apply_var_flags(vars: &Variables, flags: &[String]) -> Result<Variables, String> {
    let mut out = vars.clone();
    for flag in flags {
        let (name, value) = parse_var_flag(flag).map_err(|e| e.to_string())?;
        out.set(&name, &value)
            .map_err(|e| format!("--var '{flag}': {e}"))?;
    }
    Ok(out)
}

/// The template context: every variable by name.
pub(crate) fn context(vars: &Variables) -> minijinja::Value {
    minijinja::Value::from_pairs(
        vars.iter()
            .map(|(n, v)| (n, to_template_value(v)))
            .collect::<Vec<_>>(),
    )
}

pub(crate) fn to_template_value(v: &serde_json::Value) -> minijinja::Value {
    match v {
        serde_json::Value::Bool(b) => (*b).into(),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.into(),
            (None, Some(f)) => f.into(),
            _ => n.to_string().into(),
        },
        serde_json::Value::String(s) => s.as_str().into(),
        serde_json::Value::Null => minijinja::Value::from(()),
        other => other.to_string().into(),
    }
}

/// A variable's name is an identifier a template can use: an ASCII letter
/// or `_` first, then letters, digits and `_` (at most 64).
pub(crate) fn check_var_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 64;
    if ok {
        Ok(())
    } else {
        Err(format!(
            "bad variable name '{name}': use letters, digits and '_', starting with a letter \
             or '_' (at most 64), so that a template can name it"
        ))
    }
}

/// Why a template could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TemplateError {
    /// It names a variable the team does not declare.
    Undeclared {
        /// The variable.
        name: String,
        /// 1-based line in the template.
        line: usize,
        /// The declared names.
        known: Vec<String>,
    },
    /// It is not a valid template (an unclosed `{% if %}`, a bad tag), or
    /// rendering failed.
    Syntax {
        /// 1-based line in the template, where known.
        line: Option<usize>,
        /// What is wrong.
        detail: String,
    },
    /// It uses a construct that could make its output unbounded (text
    /// repeated with `*`, a `{% set %}`, a filter off the allowed list).
    Unbounded {
        /// 1-based line in the template.
        line: usize,
        /// What is not allowed, and what is.
        detail: String,
    },
    /// Its output would pass the limit: its own length plus 1 MiB.
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
}

impl TemplateError {
    /// The 1-based line of the template to blame, where known.
    #[must_use]
    pub fn line(&self) -> Option<usize> {
        match self {
            TemplateError::Undeclared { line, .. } => Some(*line),
            TemplateError::Syntax { line, .. } => *line,
            TemplateError::Unbounded { line, .. } => Some(*line),
            TemplateError::TooLarge { .. } => None,
        }
    }

    /// The message without its line.
    #[must_use]
    pub fn message(&self) -> String {
        match self {
            TemplateError::Undeclared { name, known, .. } => {
                format!(
                    "undeclared variable '{{{{ {name} }}}}' ({})",
                    known_names(known)
                )
            }
            TemplateError::Syntax { detail, .. } => format!("template: {detail}"),
            TemplateError::Unbounded { detail, .. } => format!("template: {detail}"),
            TemplateError::TooLarge { limit } => format!(
                "template: the output would pass {limit} bytes (the template's length plus \
                 {} bytes)",
                super::bound::RENDER_EXTRA_BYTES
            ),
        }
    }
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line() {
            Some(line) => write!(f, "line {line}: {}", self.message()),
            None => f.write_str(&self.message()),
        }
    }
}

impl std::error::Error for TemplateError {}

/// Names a template may use besides the variables: minijinja's global
/// functions.
const GLOBALS: &[&str] = &["range", "dict", "namespace", "debug"];

/// Instructions one render may run: far above any prompt's needs (a soul
/// with a loop over a few hundred items), far below a stuck run.
const RENDER_FUEL: u64 = 200_000;

pub(crate) fn environment() -> minijinja::Environment<'static> {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    // A bound on the work of one render: a task or soul with nested loops
    // (`{% for a in range(100000) %}{% for b in range(100000) %}`) stops
    // with an error instead of spinning a run's thread for hours.
    env.set_fuel(Some(RENDER_FUEL));
    // Prompts are text, not HTML.
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    // A tag on a line of its own leaves no blank line behind.
    if let Ok(syntax) = minijinja::syntax::SyntaxConfig::builder()
        .keep_trailing_newline(true)
        .trim_blocks(true)
        .lstrip_blocks(true)
        .build()
    {
        env.set_syntax(syntax);
    }
    env
}

/// Checks a template against the declared variables without rendering it.
///
/// # Errors
///
/// [`TemplateError::Syntax`] for a bad template, [`TemplateError::Undeclared`]
/// for the first undeclared name (by line).
pub fn check_template(template: &str, known: &[String]) -> Result<(), TemplateError> {
    if !template.contains("{{") && !template.contains("{%") {
        return Ok(());
    }
    super::bound::check_bound(template, None)?;
    let env = environment();
    let tmpl = env.template_from_str(template).map_err(syntax_error)?;
    let known_set: std::collections::HashSet<&str> = known.iter().map(String::as_str).collect();
    let mut undeclared: Vec<(usize, String)> = tmpl
        .undeclared_variables(false)
        .into_iter()
        .filter(|n| !known_set.contains(n.as_str()) && !GLOBALS.contains(&n.as_str()))
        .map(|n| (name_line(template, &n), n))
        .collect();
    undeclared.sort();
    match undeclared.into_iter().next() {
        Some((line, name)) => Err(TemplateError::Undeclared {
            name,
            line,
            known: known.to_vec(),
        }),
        None => Ok(()),
    }
}

/// Renders a template with the variables (strict: an undeclared name is an
/// error, never an empty string). Text without `{{` or `{%` comes back as
/// it is.
///
/// # Errors
///
/// A [`TemplateError`] naming the undeclared variable or the syntax error;
/// [`TemplateError::Unbounded`] for a construct that could make the output
/// unbounded (text repeated with `*`, `{% set %}`, a filter off the short
/// list) and [`TemplateError::TooLarge`] when the output would pass the
/// template's length plus 1 MiB, so that no template, task or soul can take
/// more memory than that.
///
/// # Examples
///
/// ```
/// use boardroom::template::{Variables, render};
/// let vars = Variables::declare([("audience", "experts".into())]);
/// let soul = "You write.{% if audience == 'experts' %} Skip the basics.{% endif %}";
/// assert_eq!(render(soul, &vars).unwrap(), "You write. Skip the basics.");
/// assert!(render("{{ tone }}", &vars).is_err());
/// ```
pub fn render(template: &str, vars: &Variables) -> Result<String, TemplateError> {
    if !template.contains("{{") && !template.contains("{%") {
        return Ok(template.to_string());
    }
    super::bound::check_bound(template, Some(vars))?;
    check_template(template, &vars.names())?;
    render_with(template, context(vars))
}

/// Renders a template (checked by the caller) with `ctx`, within the
/// bound [`render`] holds.
pub(crate) fn render_with(template: &str, ctx: minijinja::Value) -> Result<String, TemplateError> {
    let env = environment();
    let tmpl = env.template_from_str(template).map_err(syntax_error)?;
    let mut out = super::bound::Capped {
        buf: Vec::new(),
        limit: super::bound::output_limit(template),
        over: false,
    };
    match tmpl.render_captured_to(ctx, &mut out) {
        Ok(_) => String::from_utf8(out.buf).map_err(|_| TemplateError::Syntax {
            line: None,
            detail: "the output is not UTF-8".to_string(),
        }),
        Err(_) if out.over => Err(TemplateError::TooLarge { limit: out.limit }),
        Err(e) => Err(syntax_error(e)),
    }
}

/// Renders a task: the user's text (only on a team that declares
/// variables, within the bound [`render`] holds), which may use the team's variables
/// (`Write about {{ topic }}`) but may also be about template syntax
/// itself (`Explain {{ name }} in Jinja`). Where it is not a valid template
/// over the declared variables it is returned as written, never an error.
///
/// # Examples
///
/// ```
/// use boardroom::template::{Variables, render_task};
/// let vars = Variables::declare([("topic", "green tea".into())]);
/// assert_eq!(render_task("A guide to {{ topic }}", &vars), "A guide to green tea");
/// assert_eq!(render_task("What does {{ x }} do?", &vars), "What does {{ x }} do?");
/// assert_eq!(render_task("Fix {% if a %}", &vars), "Fix {% if a %}");
/// ```
#[must_use]
pub fn render_task(task: &str, vars: &Variables) -> String {
    // A team without variables has nothing to render into a task: the
    // user's text is not run as a template at all.
    if vars.is_empty() {
        return task.to_string();
    }
    match render(task, vars) {
        Ok(text) => text,
        Err(e) => {
            log::debug!(
                "the task is used as written: it is not a template over the variables ({e})"
            );
            task.to_string()
        }
    }
}

pub(crate) fn syntax_error(e: minijinja::Error) -> TemplateError {
    TemplateError::Syntax {
        line: e.line(),
        detail: e
            .detail()
            .map_or_else(|| e.kind().to_string(), str::to_string),
    }
}

/// The 1-based line where `name` first appears as a word inside a `{{ }}`
/// or `{% %}` tag (1 when not found).
fn name_line(template: &str, name: &str) -> usize {
    let mut rest = template;
    let mut offset = 0;
    loop {
        let open = match (rest.find("{{"), rest.find("{%")) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return 1,
        };
        let close_mark = if rest[open..].starts_with("{{") {
            "}}"
        } else {
            "%}"
        };
        let body_start = open + 2;
        let body_end = rest[body_start..]
            .find(close_mark)
            .map_or(rest.len(), |e| body_start + e);
        let body = &rest[body_start..body_end];
        if let Some(at) = word_at(body, name) {
            let abs = offset + body_start + at;
            return template[..abs].matches('\n').count() + 1;
        }
        let next = (body_end + close_mark.len()).min(rest.len());
        offset += next;
        rest = &rest[next..];
        if rest.is_empty() {
            return 1;
        }
    }
}

/// Where `name` appears in `text` as a whole identifier.
fn word_at(text: &str, name: &str) -> Option<usize> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(name).map(|(i, _)| i).find(|&i| {
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        !before.is_some_and(|c| is_ident(c) || c == '.') && !after.is_some_and(is_ident)
    })
}

#[cfg(test)]
mod tests;
