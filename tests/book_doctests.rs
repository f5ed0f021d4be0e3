//! Every page of the book (docs/*.md) is a doctest module in src/lib.rs, so
//! its Rust blocks are compiled and run by `cargo test --doc` like the
//! README's (issue 21). A page added without its line fails here.

use std::path::Path;

#[test]
fn every_book_page_is_compiled_as_doctests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).expect("src/lib.rs");
    assert!(
        lib.contains("include_str!(\"../README.md\")"),
        "src/lib.rs no longer includes the README as doctests"
    );
    let mut missing = Vec::new();
    let mut pages = 0;
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let name = entry.expect("a docs/ entry").file_name();
        let name = name.to_string_lossy();
        // Notes by other branches are folded into the book by hand first.
        if !name.ends_with(".md") || name.starts_with("notes-") {
            continue;
        }
        pages += 1;
        let line = format!("include_str!(\"../docs/{name}\")");
        if !lib.contains(&line) {
            missing.push(format!("    #[doc = {line}]"));
        }
    }
    assert!(pages >= 5, "docs/ has only {pages} pages");
    assert!(
        missing.is_empty(),
        "these book pages are not doctest modules; add them to `mod book` in src/lib.rs:\n{}",
        missing.join("\n")
    );
}
