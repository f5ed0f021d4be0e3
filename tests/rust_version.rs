//! The `rust-version` in Cargo.toml is true (issue 21): no locked
//! dependency of the default build needs a newer Rust than it declares.
//!
//! Reads `cargo metadata` (offline, locked, for the host platform) and walks
//! the resolved graph from boardroom along normal and build edges, so
//! dev-dependencies (the test suite's own crates) do not count.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// A `rust_version` as numbers: "1.88" and "1.88.0" compare equal.
fn version(text: &str) -> Vec<u64> {
    let mut parts: Vec<u64> = text
        .split('.')
        .map(|p| {
            p.parse()
                .unwrap_or_else(|_| panic!("rust_version '{text}' is not numeric"))
        })
        .collect();
    parts.resize(3, 0);
    parts
}

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let host = String::from_utf8(
        Command::new("rustc")
            .arg("-vV")
            .output()
            .expect("rustc -vV runs")
            .stdout,
    )
    .expect("rustc -vV prints UTF-8");
    let host = host
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_string();
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline", "--locked"])
        .args(["--filter-platform", &host, "--manifest-path", manifest])
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

/// Every locked package the default build of boardroom compiles, with its
/// `rust_version` (None when it declares none).
fn default_graph(meta: &Value) -> (String, Option<String>, BTreeMap<String, Option<String>>) {
    let packages: BTreeMap<&str, &Value> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| (p["id"].as_str().expect("package id"), p))
        .collect();
    let resolve = &meta["resolve"];
    let root = resolve["root"].as_str().expect("a root package");
    let nodes: BTreeMap<&str, &Value> = resolve["nodes"]
        .as_array()
        .expect("resolve nodes")
        .iter()
        .map(|n| (n["id"].as_str().expect("node id"), n))
        .collect();
    let rust_version = |id: &str| packages[id]["rust_version"].as_str().map(str::to_string);
    let mut seen = BTreeSet::new();
    let mut stack = vec![root];
    let mut found = BTreeMap::new();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        if id != root {
            let name = format!(
                "{} {}",
                packages[id]["name"].as_str().unwrap_or("?"),
                packages[id]["version"].as_str().unwrap_or("?")
            );
            found.insert(name, rust_version(id));
        }
        for dep in nodes[id]["deps"].as_array().into_iter().flatten() {
            let not_dev = dep["dep_kinds"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|k| k["kind"].as_str() != Some("dev"));
            if not_dev {
                stack.push(dep["pkg"].as_str().expect("dep pkg"));
            }
        }
    }
    let name = packages[root]["name"].as_str().unwrap_or("?").to_string();
    (name, rust_version(root), found)
}

#[test]
fn no_locked_dependency_needs_a_newer_rust_than_cargo_toml_declares() {
    let meta = metadata();
    let (name, declared, deps) = default_graph(&meta);
    let declared =
        declared.unwrap_or_else(|| panic!("{name}: Cargo.toml declares no rust-version"));
    assert!(
        deps.len() > 20,
        "the walk found only {} packages: {deps:?}",
        deps.len()
    );
    let too_new: Vec<String> = deps
        .iter()
        .filter_map(|(pkg, rv)| {
            let rv = rv.as_deref()?;
            (version(rv) > version(&declared)).then(|| format!("{pkg} needs {rv}"))
        })
        .collect();
    assert!(
        too_new.is_empty(),
        "Cargo.toml declares rust-version = \"{declared}\", but the lockfile needs more:\n  {}\n\
         raise rust-version in Cargo.toml (and the README's \"Rust ... or newer\") to the highest",
        too_new.join("\n  ")
    );
}
