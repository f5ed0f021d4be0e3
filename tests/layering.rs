//! The floor plan holds: every top-level module of `src/` imports only from
//! the floors below it (or earlier on its own floor), and no two top-level
//! modules import each other, directly or round a cycle.
//!
//! The order is written once, in [`FLOORS`]; `docs/architecture.md` draws
//! the same plan. The test reads the source as text: a `crate::name` path in
//! code (a `use`, a type, a call) is an import of `name`; comments, doc
//! comments and test-only code (`tests.rs`, `*_tests.rs`, a `#[cfg(test)]`
//! module) are not. `lib.rs` is the front door and re-exports from every
//! floor; the binary (`main.rs`, `cli/`, `bin/`) is the top.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors, bottom first. A module may import from any floor below its
/// own, and from the modules listed before it on its own floor.
const FLOORS: &[&[&str]] = &[
    &["util"],
    &["model"],
    &["board", "plan"],
    &["protocol"],
    &["testing", "connect"],
    &["record"],
    &["event"],
    &["team"],
    &["tools"],
    &["store"],
    &["memory"],
    &["core"],
    &["process"],
    &["runtime"],
    &["chat", "observe", "bench", "guide"],
    &["serve"],
];

/// Where a module stands: (floor, position on the floor).
fn rank(module: &str) -> Option<(usize, usize)> {
    FLOORS
        .iter()
        .enumerate()
        .find_map(|(f, floor)| floor.iter().position(|m| *m == module).map(|p| (f, p)))
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to, or `None` for the front door,
/// the binary and test-only files.
fn module_of(rel: &Path) -> Option<String> {
    let parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let file = parts.last()?;
    if file == "tests.rs" || file.ends_with("_tests.rs") || parts.iter().any(|p| p == "tests") {
        return None;
    }
    let top = parts[0].trim_end_matches(".rs").to_string();
    match top.as_str() {
        "lib" | "main" | "cli" | "bin" | "error_chains" => None,
        _ => Some(top),
    }
}

/// The code of a file without comments, string literals' contents and
/// `#[cfg(test)]` modules.
fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            // Skip the item that follows when it is a module with a body.
            if let Some(next) = lines.peek()
                && next.trim_start().starts_with("mod ")
                && next.trim_end().ends_with('{')
            {
                let mut depth = 0i64;
                for l in lines.by_ref() {
                    depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
                    if depth <= 0 {
                        break;
                    }
                }
            }
            continue;
        }
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// The top-level modules named by `crate::` paths in `code`, including the
/// heads of a grouped `use crate::{a::X, b, c::{..}}`.
fn imports(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue; // `$crate::` or part of a longer name
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut head = String::new();
            let mut at_head = true;
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
                if depth == 1 && (c == ',' || c.is_whitespace()) {
                    if !head.is_empty() {
                        found.insert(std::mem::take(&mut head));
                    }
                    at_head = true;
                } else if depth == 1 && at_head && (c.is_alphanumeric() || c == '_') {
                    head.push(c);
                } else if depth == 1 && c == ':' {
                    if !head.is_empty() {
                        found.insert(std::mem::take(&mut head));
                    }
                    at_head = false;
                }
            }
            if !head.is_empty() {
                found.insert(head);
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found.remove("self");
    found
}

/// Each top-level module's imports of the others, with the files that make
/// each one.
fn graph() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut graph: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&root).unwrap().to_path_buf();
        let Some(module) = module_of(&rel) else {
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        let entry = graph.entry(module.clone()).or_default();
        for target in imports(&code_of(&text)) {
            if target != module {
                entry
                    .entry(target)
                    .or_default()
                    .insert(rel.display().to_string());
            }
        }
    }
    graph
}

#[test]
fn every_module_stands_on_a_floor() {
    let unplaced: Vec<String> = graph()
        .keys()
        .filter(|m| rank(m).is_none())
        .cloned()
        .collect();
    assert!(
        unplaced.is_empty(),
        "top-level modules not in FLOORS (tests/layering.rs) nor in docs/architecture.md: {unplaced:?}"
    );
}

#[test]
fn no_module_imports_from_a_floor_above_it() {
    let mut wrong = Vec::new();
    for (module, targets) in graph() {
        let Some(me) = rank(&module) else { continue };
        for (target, files) in targets {
            let Some(them) = rank(&target) else {
                continue; // a crate-root re-export such as `crate::OpenAi`
            };
            if them >= me {
                wrong.push(format!(
                    "{module} (floor {}) imports {target} (floor {}) in {}",
                    me.0 + 1,
                    them.0 + 1,
                    files.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports from a floor above (see docs/architecture.md):\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn no_cycle_between_top_level_modules() {
    let graph = graph();
    // Depth-first search for a back edge; report the cycle it closes.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == node) {
            let mut cycle = path[i..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if !done.insert(node.to_string()) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flat_map(|t| t.keys()) {
            if graph.contains_key(next)
                && let Some(c) = visit(next, graph, path, done)
            {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if let Some(cycle) = visit(node, &graph, &mut Vec::new(), &mut done) {
            panic!("an import cycle: {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn the_reader_sees_grouped_and_plain_paths_but_not_comments_or_tests() {
    let code = code_of(
        "use crate::{board::Entry, event::{Event, RunStatus}, util};\n\
         // crate::cli in a comment\n\
         /// [`Sim`](crate::testing::Sim)\n\
         fn f() -> crate::model::Usage { $crate::ignored::x() }\n\
         #[cfg(test)]\n\
         mod tests {\n    use crate::runtime::Runtime;\n}\n",
    );
    let found: Vec<String> = imports(&code).into_iter().collect();
    assert_eq!(found, ["board", "event", "model", "util"]);
}

#[test]
fn the_plan_in_the_docs_matches_this_test() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .unwrap();
    for (f, floor) in FLOORS.iter().enumerate() {
        let line = format!(
            "| {} | {} |",
            f + 1,
            floor
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        assert!(
            doc.contains(&line),
            "docs/architecture.md should list floor {} as `{line}`",
            f + 1
        );
    }
}
