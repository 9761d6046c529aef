//! The docs say what the code does: figures and lists they quote are read
//! from the code here, so the two cannot part in silence. (The README's
//! list of events, the journal page's table and the catalog's entries
//! for each event: src/events.rs; every event the docs, units and the
//! catalog name, and the paged ones: here.) No node needed.

use std::path::Path;
use std::process::Command;

use mesh_host::apply::report::ApplyReport;
use mesh_host::events::Event;

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

#[test]
fn the_readme_lists_every_resource_type_the_schema_knows() {
    let readme = repo_file("README.md");
    let from = readme
        .find("Resource types: ")
        .expect("README.md lists the resource types after \"Resource types: \"");
    let sentence = &readme[from..];
    let sentence = &sentence[..sentence.find(". ").expect("the list ends")];
    // The types, not what a parenthesis says of one (`run-once`).
    let mut depth = 0;
    let outside: String = sentence
        .chars()
        .filter(|c| {
            depth += i32::from(*c == '(') - i32::from(*c == ')');
            depth == 0 && *c != ')'
        })
        .collect();
    let listed: Vec<&str> = outside.split('`').skip(1).step_by(2).collect();
    assert_eq!(
        listed,
        resource_types(),
        "README.md's resource types against the schema's, in its order"
    );
}

/// The lines of the first fenced block after `marker` in `text`.
fn block_after<'a>(text: &'a str, marker: &str) -> &'a str {
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("{marker:?} not found"));
    let rest = &text[at..];
    let open = rest.find("```").expect("a fenced block follows");
    let body = &rest[open..];
    let body = &body[body.find('\n').expect("the fence's line") + 1..];
    &body[..body.find("```").expect("the block ends")]
}

#[test]
fn the_apply_pages_report_is_as_the_code_prints_it_times_included() {
    let page = repo_file("docs/apply.md");
    let shown = block_after(
        &page,
        "One line per resource, `ID ACTION[: reason]`, then the open windows",
    );
    // The report those lines say, built back: each resource's line, each
    // window with the time read as either form a time may take.
    let mut lines = Vec::new();
    let mut windows = Vec::new();
    for line in shown.lines().filter(|l| !l.starts_with("apply ")) {
        if let Some(rest) = line.strip_prefix("window ") {
            let (step, rest) = rest.split_once(" open since ").expect("a window's line");
            let (since, held) = rest.split_once(", holding ").expect("what it holds");
            let since = chrono::DateTime::parse_from_rfc3339(since)
                .map(|t| t.to_utc())
                .or_else(|_| {
                    chrono::NaiveDateTime::parse_from_str(since, "%Y-%m-%d %H:%M:%S UTC")
                        .map(|t| t.and_utc())
                })
                .unwrap_or_else(|e| panic!("docs/apply.md's window time {since:?}: {e}"));
            windows.push(serde_json::json!({"step": step, "since": since,
                "held": held.split(", ").collect::<Vec<_>>()}));
            continue;
        }
        let (id, rest) = line.split_once(' ').expect("ID ACTION");
        let (action, reason) = match rest.split_once(": ") {
            Some((action, reason)) => (action, Some(reason)),
            None => (rest, None),
        };
        lines.push(serde_json::json!({"id": id, "action": action, "reason": reason}));
    }
    assert!(!lines.is_empty() && !windows.is_empty(), "{shown}");
    let report: ApplyReport = serde_json::from_value(serde_json::json!({
        "ok": true, "started-at": "2026-03-29T10:00:00Z", "finished-at": "2026-03-29T10:00:04Z",
        "lines": lines, "windows": windows}))
    .expect("a report");
    assert_eq!(
        format!("{report}\n"),
        shown,
        "docs/apply.md's report against what the code prints for it"
    );

    // `--json`: the example is a report, and reads back as itself.
    let example = block_after(&page, "`--json` prints the same as one object:");
    let value: serde_json::Value = serde_json::from_str(example).expect("the example is JSON");
    let report: ApplyReport = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("docs/apply.md's --json example is no report: {e}"));
    assert_eq!(
        serde_json::to_value(&report).expect("serialise"),
        value,
        "docs/apply.md's --json example against what the code prints for it"
    );
}

/// Every `MESH_EVENT=NAME` in a file, with the file's path.
fn event_mentions(path: &Path, found: &mut Vec<(String, String)>) {
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .map(|e| e.expect("an entry").path())
            .collect();
        entries.sort();
        for entry in entries {
            event_mentions(&entry, found);
        }
        return;
    }
    let Ok(text) = std::fs::read_to_string(path) else {
        return; // not text
    };
    for (at, _) in text.match_indices("MESH_EVENT=") {
        let name: String = text[at + "MESH_EVENT=".len()..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '-')
            .collect();
        if !name.is_empty() {
            let shown = path
                .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                .unwrap_or(path);
            found.push((shown.display().to_string(), name));
        }
    }
}

#[test]
fn every_event_the_docs_units_and_catalog_name_is_one_the_code_logs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for place in [
        "README.md",
        "docs",
        "units",
        "examples",
        "contrib",
        "packaging",
    ] {
        event_mentions(&root.join(place), &mut found);
    }
    assert!(found.len() > Event::ALL.len(), "too few read: {found:?}");
    for (path, name) in &found {
        assert!(
            Event::ALL.iter().any(|e| e.name() == name),
            "{path} names MESH_EVENT={name}, which the code never logs"
        );
    }
    // Each catalog entry is an event's, under its own MESSAGE_ID.
    let catalog = repo_file("units/mesh-host.catalog");
    let entries: Vec<&str> = catalog.split("\n-- ").skip(1).collect();
    assert_eq!(
        entries.len(),
        Event::ALL.len(),
        "units/mesh-host.catalog has an entry per event, no more"
    );
    for entry in entries {
        let id = entry.split_whitespace().next().unwrap_or_default();
        let event = Event::ALL
            .iter()
            .find(|e| e.message_id() == id)
            .unwrap_or_else(|| panic!("the catalog's entry {id} is no event's MESSAGE_ID"));
        assert!(
            entry.contains(&format!("MESH_EVENT={}", event.name())),
            "the catalog's entry {id} does not name its event, {}",
            event.name()
        );
    }
}

#[test]
fn the_paged_events_the_docs_list_are_those_that_page() {
    for (doc, marker) in [
        ("README.md", "that template for every "),
        ("docs/metrics.md", "For every "),
    ] {
        let text = repo_file(doc);
        let at = text
            .find(marker)
            .unwrap_or_else(|| panic!("{doc} no longer lists the paged events after {marker:?}"));
        let list = &text[at..];
        let list = &list[..list.find(" event").expect("the list ends")];
        let listed: Vec<&str> = list.split('`').skip(1).step_by(2).collect();
        assert_eq!(listed, mesh_host::page::PAGED, "{doc}'s paged events");
    }
}

#[test]
fn the_status_example_is_as_the_code_prints_it_on_both_pages() {
    use mesh_host::answer::status::{recorded_apply, Status};
    use mesh_host::answer::Answer;
    use mesh_host::schedule::scheduler::StepStatus;

    let at = |t: &str| -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::parse_from_rfc3339(t)
            .expect("time")
            .to_utc()
    };
    let applied = serde_json::from_value(serde_json::json!({
        "format": 1, "declaration": {"declaration": 1, "resources": []}, "applied-at": "2026-03-29T10:00:04Z", "ok": true,
        "lines": [{"id": "registry", "action": "unchanged"},
                  {"id": "garbage-collect", "action": "installed"}]
    }))
    .expect("an applied state");
    let status = Status {
        declaration: "/etc/mesh-host/declaration.json".into(),
        state_dir: "/var/lib/mesh-host".into(),
        daemon_listening: false,
        last_apply: Some(recorded_apply(&applied, false)),
        empty_declaration_refused: None,
        open_windows: Vec::new(),
        health: serde_json::json!([]),
        shared_folders: Vec::new(),
        steps: mesh_host::answer::status::Steps::Listed(vec![StepStatus {
            step: "garbage-collect".into(),
            schedule: "30 3 * * *".into(),
            zone: "Etc/UTC".into(),
            next_fire: Some(at("2026-03-30T03:30:00Z")),
            delay_ms: None,
            running: false,
            ready: None,
            suspended_since: None,
            history: serde_json::from_value(serde_json::json!({
                "last-due": "2026-03-29T03:30:00Z", "last-run": "2026-03-29T03:30:41Z",
                "last-outcome": "succeeded", "last-exit-status": 0,
                "last-success": "2026-03-29T03:30:41Z"
            }))
            .expect("a step's history"),
        }]),
        steps_scheduled: 1,
        attention: Vec::new(),
    };
    let text = status.text();
    for (page, heading) in [
        ("docs/apply.md", "## status --local"),
        ("docs/status.md", "## The text"),
    ] {
        let page_text = repo_file(page);
        assert_eq!(
            block_after(&page_text, heading),
            text,
            "{page}'s status example against what the code prints for it"
        );
    }
}
