//! Handover protocols (Common Ground's `handover_protocols/`): which parts
//! of the source context go into a briefing, and how it reads.
//!
//! A protocol is a YAML file `protocols/NAME.yaml` in a team directory; a
//! team without one gets the built-in protocol of that name. Two are used:
//!
//! - `partner_to_principal`: the briefing a chat partner's `launch_team`
//!   gives the run (the user's request, the modules agreed with the user,
//!   the associates chosen for them);
//! - `principal_to_associate`: the briefing the dispatcher gives one
//!   associate (the request, its module, the module's inherited archive,
//!   the context variables).
//!
//! ```yaml
//! include: [request, module, archive]   # the fields the template may use
//! archive_messages: 6                   # the last N archived messages
//! template: |
//!   <module id="{{ module.id }}">{{ module.description | e }}</module>
//! ```
//!
//! A template sees only the fields it includes (using another is an error
//! at load, with the file and line); values are escaped with `| e` where
//! the template says so, so a model's text cannot pose as the briefing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::TeamError;
use super::yaml::{Step, read_checked};

/// The protocol a chat partner's `launch_team` briefs a run with.
pub const PARTNER_TO_PRINCIPAL: &str = "partner_to_principal";
/// The protocol the principal's dispatcher briefs an associate with.
pub const PRINCIPAL_TO_ASSOCIATE: &str = "principal_to_associate";

/// The protocols there are, by file name.
const NAMES: &[&str] = &[PARTNER_TO_PRINCIPAL, PRINCIPAL_TO_ASSOCIATE];

/// Keys a protocol file may hold.
const KEYS: &[&str] = &["description", "include", "archive_messages", "template"];

/// A field of the source context a briefing may include.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BriefingField {
    /// The user's request (the run's task).
    Request,
    /// The modules chosen (a list of `id`, `description`, `agent`, `status`).
    Modules,
    /// The module being briefed (`id`, `description`, `agent`, `note`).
    Module,
    /// The module's inherited archive: earlier messages (`role`,
    /// `content`) and the last deliverable (`deliverable`).
    Archive,
    /// The context variables (name to value).
    Variables,
    /// The team's associates (`name`, `description`).
    Team,
}

impl BriefingField {
    fn key(self) -> &'static str {
        match self {
            BriefingField::Request => "request",
            BriefingField::Modules => "modules",
            BriefingField::Module => "module",
            BriefingField::Archive => "archive",
            BriefingField::Variables => "variables",
            BriefingField::Team => "team",
        }
    }
}

/// One handover protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HandoverProtocol {
    /// What it is for.
    #[serde(default)]
    pub description: String,
    /// The fields of the source context the template sees.
    pub include: Vec<BriefingField>,
    /// The last this many archived messages are inherited (default 6).
    #[serde(default = "default_archive")]
    pub archive_messages: usize,
    /// The briefing, a template over the included fields.
    pub template: String,
    /// The file it was read from (none for a built-in one).
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

fn default_archive() -> usize {
    6
}

/// A module as a briefing sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModuleView {
    /// Its id (`task_001`).
    pub id: String,
    /// What is to be done.
    pub description: String,
    /// The associate chosen for it, if any.
    pub agent: Option<String>,
    /// Where it stands.
    pub status: String,
    /// The principal's note when it was sent back for rework.
    pub note: Option<String>,
}

/// An archived message as a briefing sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArchivedMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// Its text.
    pub content: String,
}

/// The source context a briefing is drawn from: everything a protocol may
/// include; it takes only what it names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BriefingSource {
    /// The user's request.
    pub request: String,
    /// The modules chosen.
    pub modules: Vec<ModuleView>,
    /// The module being briefed.
    pub module: Option<ModuleView>,
    /// The module's archive so far, oldest first.
    pub archive: Vec<ArchivedMessage>,
    /// The module's last deliverable, as JSON text.
    pub deliverable: Option<String>,
    /// The context variables.
    pub variables: BTreeMap<String, String>,
    /// The associates: name and description.
    pub team: Vec<(String, String)>,
}

/// The protocols of a team: its own files over the built-in ones.
#[derive(Debug, Clone, PartialEq)]
pub struct Protocols {
    by_name: BTreeMap<String, HandoverProtocol>,
}

impl Default for Protocols {
    fn default() -> Self {
        let mut by_name = BTreeMap::new();
        for name in NAMES {
            by_name.insert((*name).to_string(), builtin(name));
        }
        Protocols { by_name }
    }
}

impl Protocols {
    /// The built-in protocols, replaced by the team's `protocols/*.yaml`.
    ///
    /// # Errors
    ///
    /// A [`TeamError`] naming the file and line: an unknown protocol name,
    /// an unknown key or field, a template that does not render over the
    /// fields it includes.
    pub fn load(dir: &Path) -> Result<Protocols, TeamError> {
        let mut protocols = Protocols::default();
        let dir = dir.join("protocols");
        if !dir.is_dir() {
            return Ok(protocols);
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|source| TeamError::Io {
                path: dir.clone(),
                source,
            })?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
            .collect();
        files.sort();
        for path in files {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if !NAMES.contains(&name.as_str()) {
                return Err(TeamError::in_file(
                    &path,
                    format!(
                        "unknown protocol '{name}' (the protocols are {})",
                        NAMES.join(", ")
                    ),
                ));
            }
            let text = super::read_text(&path).map_err(|why| TeamError::in_file(&path, why))?;
            let protocol = parse(&path, &text)?;
            protocols.by_name.insert(name, protocol);
        }
        Ok(protocols)
    }

    /// The protocol of this name (a built-in one unless the team has its
    /// own).
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&HandoverProtocol> {
        self.by_name.get(name)
    }

    /// Every protocol, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &HandoverProtocol)> {
        self.by_name.iter().map(|(n, p)| (n.as_str(), p))
    }
}

/// Reads and checks one protocol file.
fn parse(path: &Path, text: &str) -> Result<HandoverProtocol, TeamError> {
    let (mut protocol, outline): (HandoverProtocol, _) = read_checked(path, text, 1, KEYS)?;
    protocol.source = Some(path.to_path_buf());
    let line_of = |key: &str| outline.line(&[Step::Key(key)]).unwrap_or(1);
    if protocol.template.trim().is_empty() {
        return Err(TeamError::at(path, line_of("template"), "template: empty"));
    }
    if let Err(e) = protocol.render(&BriefingSource::sample()) {
        // A block scalar's text starts on the line after its key.
        let at = line_of("template") + e.line.unwrap_or(1);
        return Err(TeamError::at(path, at, format!("template: {}", e.detail)));
    }
    Ok(protocol)
}

/// Why a briefing could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BriefingError {
    /// The template's line, from 1, where known.
    pub line: Option<usize>,
    /// What is wrong.
    pub detail: String,
}

impl std::fmt::Display for BriefingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.detail),
            None => f.write_str(&self.detail),
        }
    }
}

impl std::error::Error for BriefingError {}

impl HandoverProtocol {
    /// The briefing for `source`: the template over the fields it includes.
    ///
    /// # Errors
    ///
    /// A template that uses a field it does not include, or fails to render.
    pub fn render(&self, source: &BriefingSource) -> Result<String, BriefingError> {
        let mut ctx = BTreeMap::<&str, minijinja::Value>::new();
        for field in &self.include {
            let value = match field {
                BriefingField::Request => minijinja::Value::from(source.request.clone()),
                BriefingField::Modules => value(&serde_json::json!(&source.modules)),
                BriefingField::Module => value(&serde_json::json!(
                    source.module.clone().unwrap_or_default()
                )),
                BriefingField::Archive => {
                    let skip = source.archive.len().saturating_sub(self.archive_messages);
                    let messages = &source.archive[skip..];
                    value(&serde_json::json!({
                        "messages": messages,
                        "deliverable": source.deliverable,
                        "empty": messages.is_empty() && source.deliverable.is_none(),
                    }))
                }
                BriefingField::Variables => value(&serde_json::json!(&source.variables)),
                BriefingField::Team => {
                    let team: Vec<serde_json::Value> = source
                        .team
                        .iter()
                        .map(|(n, d)| serde_json::json!({"name": n, "description": d}))
                        .collect();
                    value(&serde_json::json!(team))
                }
            };
            ctx.insert(field.key(), value);
        }
        let env = super::template::environment();
        let error = |e: minijinja::Error| BriefingError {
            line: e.line(),
            detail: e
                .detail()
                .map_or_else(|| e.kind().to_string(), str::to_string),
        };
        let tmpl = env.template_from_str(&self.template).map_err(error)?;
        let text = tmpl.render(ctx).map_err(error)?;
        Ok(text.trim().to_string())
    }
}

impl BriefingSource {
    /// A source with every field filled, to check templates against.
    fn sample() -> Self {
        let module = ModuleView {
            id: "task_001".into(),
            description: "a module".into(),
            agent: Some("associate".into()),
            status: "pending".into(),
            note: Some("a note".into()),
        };
        BriefingSource {
            request: "a request".into(),
            modules: vec![module.clone()],
            module: Some(module),
            archive: vec![ArchivedMessage {
                role: "assistant".into(),
                content: "earlier work".into(),
            }],
            deliverable: Some("{}".into()),
            variables: BTreeMap::from([("name".to_string(), "value".to_string())]),
            team: vec![("associate".into(), "does things".into())],
        }
    }
}

/// A JSON value as a template value.
fn value(v: &serde_json::Value) -> minijinja::Value {
    use serde_json::Value as J;
    match v {
        J::Null => minijinja::Value::from(()),
        J::Bool(b) => minijinja::Value::from(*b),
        J::Number(n) => n.as_i64().map_or_else(
            || minijinja::Value::from(n.as_f64().unwrap_or_default()),
            minijinja::Value::from,
        ),
        J::String(s) => minijinja::Value::from(s.clone()),
        J::Array(items) => minijinja::Value::from(items.iter().map(value).collect::<Vec<_>>()),
        J::Object(map) => minijinja::Value::from(
            map.iter()
                .map(|(k, v)| (k.clone(), value(v)))
                .collect::<BTreeMap<String, minijinja::Value>>(),
        ),
    }
}

/// The built-in protocol of a name.
fn builtin(name: &str) -> HandoverProtocol {
    let (description, include, template) = match name {
        PARTNER_TO_PRINCIPAL => (
            "The briefing a chat partner's launch_team gives the principal.",
            vec![
                BriefingField::Request,
                BriefingField::Modules,
                BriefingField::Team,
            ],
            PARTNER_TEMPLATE,
        ),
        _ => (
            "The briefing the dispatcher gives one associate for one module.",
            vec![
                BriefingField::Request,
                BriefingField::Module,
                BriefingField::Archive,
                BriefingField::Variables,
            ],
            ASSOCIATE_TEMPLATE,
        ),
    };
    HandoverProtocol {
        description: description.into(),
        include,
        archive_messages: default_archive(),
        template: template.into(),
        source: None,
    }
}

const PARTNER_TEMPLATE: &str = "\
{{ request }}
{% if modules %}

The plan agreed with the user (work modules):
{% for m in modules %}
- {{ m.id }}: {{ m.description | e }}{% if m.agent %} (associate: {{ m.agent }}){% endif %}

{% endfor %}
{% endif %}
{% if team %}
The associates agreed with the user: {% for a in team %}{{ a.name }}{% if not loop.last %}, {% endif %}{% endfor %}.
{% endif %}
";

const ASSOCIATE_TEMPLATE: &str = "\
<request>{{ request | e }}</request>
<module id=\"{{ module.id }}\">{{ module.description | e }}</module>
{% if module.note %}
<review_note>{{ module.note | e }}</review_note>
{% endif %}
{% if variables %}
<context_variables>
{% for k, v in variables | items %}
<variable name=\"{{ k }}\">{{ v | e }}</variable>
{% endfor %}
</context_variables>
{% endif %}
{% if not archive.empty %}
<inherited_archive>
{% for m in archive.messages %}
<message role=\"{{ m.role }}\">{{ m.content | e }}</message>
{% endfor %}
{% if archive.deliverable %}
<previous_deliverable>{{ archive.deliverable | e }}</previous_deliverable>
{% endif %}
</inherited_archive>
{% endif %}
Work on this module only. When your work is done, call generate_message_summary and follow its instructions.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join("protocols");
        std::fs::create_dir_all(&p).unwrap();
        let file = p.join(name);
        std::fs::write(&file, text).unwrap();
        file
    }

    #[test]
    fn the_builtin_protocols_render_their_fields() {
        let p = Protocols::default();
        let mut source = BriefingSource::sample();
        source.request = "Write <b>".into();
        let text = p
            .get(PRINCIPAL_TO_ASSOCIATE)
            .unwrap()
            .render(&source)
            .unwrap();
        assert!(
            text.contains("<request>Write &lt;b&gt;</request>"),
            "{text}"
        );
        assert!(
            text.contains("<module id=\"task_001\">a module</module>"),
            "{text}"
        );
        assert!(text.contains("<review_note>a note</review_note>"), "{text}");
        assert!(text.contains("earlier work"), "{text}");
        let text = p
            .get(PARTNER_TO_PRINCIPAL)
            .unwrap()
            .render(&source)
            .unwrap();
        assert!(
            text.contains("- task_001: a module (associate: associate)"),
            "{text}"
        );
    }

    #[test]
    fn a_team_protocol_replaces_the_builtin_one_and_sees_only_what_it_includes() {
        let dir = std::env::temp_dir().join(format!("proto-ok-{}", std::process::id()));
        write(
            &dir,
            "principal_to_associate.yaml",
            "include: [module]\ntemplate: |\n  Do {{ module.id }}.\n",
        );
        let p = Protocols::load(&dir).unwrap();
        let text = p
            .get(PRINCIPAL_TO_ASSOCIATE)
            .unwrap()
            .render(&BriefingSource::sample())
            .unwrap();
        assert_eq!(text, "Do task_001.");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_bad_protocol_is_named_with_its_file_and_line() {
        let dir = std::env::temp_dir().join(format!("proto-bad-{}", std::process::id()));
        // A field the template uses but does not include: line 4 of the file.
        let file = write(
            &dir,
            "principal_to_associate.yaml",
            "include: [module]\ntemplate: |\n  Do {{ module.id }}\n  for {{ request }}.\n",
        );
        let err = Protocols::load(&dir).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("{}:4: template: ", file.display())),
            "{err}"
        );
        // An unknown field in include, at its line.
        write(
            &dir,
            "principal_to_associate.yaml",
            "template: x\ninclude:\n  - module\n  - modul\n",
        );
        let err = Protocols::load(&dir).unwrap_err().to_string();
        assert!(err.contains(":4:"), "{err}");
        assert!(err.contains("modul"), "{err}");
        // An unknown protocol name.
        std::fs::remove_file(&file).unwrap();
        let other = write(&dir, "partner_to_boss.yaml", "include: []\ntemplate: x\n");
        let err = Protocols::load(&dir).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "{}: unknown protocol 'partner_to_boss'",
                other.display()
            )),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
