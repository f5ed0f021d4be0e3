//! A team's context variables: declared names with scalar values, saved
//! with a run. Plain data, below the templates that render them (the team)
//! and the prompts that show them (the protocol).

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
