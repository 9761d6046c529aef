//! The docs say what the code does: figures and lists they quote are read
//! from the code here, so the two cannot part in silence. (Events against
//! the README, the journal page and the catalog: src/events.rs.) No node
//! needed.

use std::path::Path;
use std::process::Command;

fn repo_file(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The resource types the binary knows, from its JSON Schema (which
/// tests/cli.rs holds to `check`'s own list).
fn resource_types() -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_mesh-host"))
        .arg("schema")
        .output()
        .expect("run mesh-host schema");
    assert!(out.status.success(), "mesh-host schema: {out:?}");
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).expect("schema is JSON");
    schema["$defs"]["resource"]["properties"]["type"]["enum"]
        .as_array()
        .expect("the schema's type enum")
        .iter()
        .map(|t| t.as_str().expect("a type name").to_string())
        .collect()
}

#[test]
fn the_declaration_page_has_a_section_for_every_resource_type() {
    let page = repo_file("docs/declaration.md");
    let headings: Vec<&str> = page.lines().filter(|l| l.starts_with('#')).collect();
    let types = resource_types();
    assert!(types.len() >= 6, "too few types read: {types:?}");
    for kind in &types {
        let title = format!("`type: \"{kind}\"`");
        assert!(
            headings.iter().any(|h| h.ends_with(&title)),
            "docs/declaration.md has no heading ending in {title}"
        );
    }
    // And no section for a type the binary does not know.
    for heading in headings {
        if let Some(rest) = heading.split("`type: \"").nth(1) {
            let kind = rest.split('"').next().unwrap_or_default();
            assert!(
                types.iter().any(|t| t == kind),
                "docs/declaration.md documents type {kind:?}, which check refuses"
            );
        }
    }
}

/// The number that follows each occurrence of `marker` in `text`.
fn figures_after(text: &str, marker: &str) -> Vec<f64> {
    text.match_indices(marker)
        .map(|(at, _)| {
            let rest = &text[at + marker.len()..];
            let figure: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            figure
                .trim_end_matches('.')
                .parse()
                .unwrap_or_else(|_| panic!("no figure after {marker:?} in {rest:.40}"))
        })
        .collect()
}

#[test]
fn every_exposure_the_docs_quote_is_the_package_tests_threshold() {
    let test = repo_file("tests/package_node.rs");
    let threshold = figures_after(&test, "const SECURITY_EXPOSURE: f64 = ");
    assert_eq!(threshold.len(), 1, "SECURITY_EXPOSURE not found once");
    let threshold = threshold[0];
    // Each phrase the docs use to quote the current figure.
    let quotes = [
        ("README.md", "exposure is "),
        ("docs/packaging.md", "scores **"),
        ("docs/packaging.md", "rises above "),
        ("docs/security.md", "and fails above "),
        ("docs/security.md", "Neither changes the exposure ("),
        ("docs/security.md", "below) | **"),
    ];
    for (doc, marker) in quotes {
        let text = repo_file(doc);
        let found = figures_after(&text, marker);
        assert!(
            !found.is_empty(),
            "{doc} no longer quotes the exposure after {marker:?}: update this test with the phrase it uses now"
        );
        for figure in found {
            assert_eq!(
                figure, threshold,
                "{doc} quotes exposure {figure} after {marker:?}; the package test's threshold is {threshold}"
            );
        }
    }
}
