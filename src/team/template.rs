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

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The team's context variables: declared names with their current values,
/// in declaration order.
///
/// A value is a scalar (text, number, boolean). Saved with a run, so that a
/// resumed run sees the values as they were.
///
/// # Examples
///
/// ```
/// use boardroom::template::Variables;
/// let mut vars = Variables::declare([("max_revisions", 3.into())]);
/// vars.set("max_revisions", "5").unwrap();
/// assert_eq!(boardroom::template::render("at most {{ max_revisions }}", &vars).unwrap(), "at most 5");
/// assert!(vars.set("max_revision", "5").is_err());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Variables {
    vars: Vec<(String, serde_json::Value)>,
    /// Where each name is in `vars`: a look-up costs one probe, so that
    /// checking a team with many variables is linear (issue 28, finding 22).
    index: HashMap<String, usize>,
}

impl PartialEq for Variables {
    fn eq(&self, other: &Self) -> bool {
        self.vars == other.vars
    }
}

/// How many name look-ups [`Variables`] made on this thread: a test counts
/// them to show that checking a team costs one per variable, not one per
/// pair.
#[cfg(test)]
pub(crate) mod probes {
    use std::cell::Cell;
    thread_local!(static PROBES: Cell<usize> = const { Cell::new(0) });
    pub(crate) fn count() {
        PROBES.with(|p| p.set(p.get() + 1));
    }
    pub(crate) fn take() -> usize {
        PROBES.with(|p| p.replace(0))
    }
}

/// Why a variable could not be set.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VarError {
    /// The name is not declared in `context_variables:`.
    Unknown {
        /// The name as given.
        name: String,
        /// The declared names, in order.
        known: Vec<String>,
    },
    /// A `--var` flag that is not `name=value`.
    BadFlag {
        /// The flag's value as given.
        value: String,
    },
}

impl fmt::Display for VarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VarError::Unknown { name, known } => {
                write!(
                    f,
                    "unknown context variable '{name}' ({})",
                    known_names(known)
                )
            }
            VarError::BadFlag { value } => {
                write!(f, "--var '{value}': expected name=value")
            }
        }
    }
}

impl std::error::Error for VarError {}

/// "known: a, b" or "the team declares none".
pub(crate) fn known_names(known: &[String]) -> String {
    if known.is_empty() {
        "the team declares no context_variables".to_string()
    } else {
        format!("known: {}", known.join(", "))
    }
}

impl Variables {
    /// Variables with these names and defaults, in this order.
    pub fn declare<I, S>(vars: I) -> Variables
    where
        I: IntoIterator<Item = (S, serde_json::Value)>,
        S: Into<String>,
    {
        Variables::from_vec(vars.into_iter().map(|(n, v)| (n.into(), v)).collect())
    }

    /// Indexes `vars` (a name declared twice: the first stands).
    fn from_vec(vars: Vec<(String, serde_json::Value)>) -> Variables {
        let mut index = HashMap::with_capacity(vars.len());
        for (i, (name, _)) in vars.iter().enumerate() {
            index.entry(name.clone()).or_insert(i);
        }
        Variables { vars, index }
    }

    /// Where `name` is in `vars`.
    fn position(&self, name: &str) -> Option<usize> {
        #[cfg(test)]
        probes::count();
        self.index.get(name).copied()
    }

    /// The value of a declared variable.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&serde_json::Value> {
        self.position(name).map(|i| &self.vars[i].1)
    }

    /// The value as text, as a template prints it.
    pub fn get_text(&self, name: &str) -> Option<String> {
        self.get(name).map(value_text)
    }

    /// The declared names, in order.
    #[must_use]
    pub fn names(&self) -> Vec<String> {
        self.vars.iter().map(|(n, _)| n.clone()).collect()
    }

    /// Names and values, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &serde_json::Value)> {
        self.vars.iter().map(|(n, v)| (n.as_str(), v))
    }

    /// Whether no variable is declared.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// Sets a declared variable from text. The text keeps the kind of the
    /// current value where it fits: `"5"` for a number is the number 5,
    /// `"true"` for a boolean is true; anything else is text.
    ///
    /// # Errors
    ///
    /// [`VarError::Unknown`] when the name is not declared, naming the
    /// declared ones.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), VarError> {
        let Some(i) = self.position(name) else {
            return Err(VarError::Unknown {
                name: name.to_string(),
                known: self.names(),
            });
        };
        let slot = &mut self.vars[i].1;
        *slot = coerce(value, slot);
        Ok(())
    }

    /// A copy with `--var` overrides applied, in order.
    ///
    /// # Errors
    ///
    /// [`VarError::Unknown`] for the first undeclared name.
    pub fn with_overrides(&self, overrides: &[(String, String)]) -> Result<Variables, VarError> {
        let mut out = self.clone();
        for (name, value) in overrides {
            out.set(name, value)?;
        }
        Ok(out)
    }

    /// The template context: every variable by name.
    fn context(&self) -> minijinja::Value {
        minijinja::Value::from_pairs(
            self.vars
                .iter()
                .map(|(n, v)| (n.as_str(), to_template_value(v)))
                .collect::<Vec<_>>(),
        )
    }
}

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

/// The text a template prints for a value.
fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "none".to_string(),
        other => other.to_string(),
    }
}

fn coerce(text: &str, like: &serde_json::Value) -> serde_json::Value {
    let t = text.trim();
    match like {
        serde_json::Value::Number(_) => {
            if let Ok(n) = t.parse::<i64>() {
                return n.into();
            }
            if let Some(n) = t.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
                return serde_json::Value::Number(n);
            }
        }
        serde_json::Value::Bool(_) => {
            if t.eq_ignore_ascii_case("true") {
                return true.into();
            }
            if t.eq_ignore_ascii_case("false") {
                return false.into();
            }
        }
        _ => {}
    }
    serde_json::Value::String(text.to_string())
}

fn to_template_value(v: &serde_json::Value) -> minijinja::Value {
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

/// Saved as a JSON object in declaration order.
impl Serialize for Variables {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.vars.len()))?;
        for (n, v) in &self.vars {
            map.serialize_entry(n, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Variables {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Variables;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping of variable names to scalar values")
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Variables, E> {
                Ok(Variables::default())
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Variables, A::Error> {
                let mut vars: Vec<(String, serde_json::Value)> = Vec::new();
                let mut seen = std::collections::HashSet::new();
                while let Some((name, value)) = map.next_entry::<String, serde_json::Value>()? {
                    if value.is_array() || value.is_object() {
                        return Err(serde::de::Error::custom(format!(
                            "context variable '{name}' must be text, a number or a boolean"
                        )));
                    }
                    if !seen.insert(name.clone()) {
                        return Err(serde::de::Error::custom(format!(
                            "context variable '{name}' is declared twice"
                        )));
                    }
                    vars.push((name, value));
                }
                Ok(Variables::from_vec(vars))
            }
        }
        d.deserialize_any(V)
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

fn environment() -> minijinja::Environment<'static> {
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
    let env = environment();
    let tmpl = env.template_from_str(template).map_err(syntax_error)?;
    let mut out = super::bound::Capped {
        buf: Vec::new(),
        limit: super::bound::output_limit(template),
        over: false,
    };
    match tmpl.render_captured_to(vars.context(), &mut out) {
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

fn syntax_error(e: minijinja::Error) -> TemplateError {
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
