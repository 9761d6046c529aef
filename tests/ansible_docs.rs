//! The Ansible collection's module documentation is YAML that
//! `ansible-doc` and Galaxy parse: a stray `: ` in a sentence makes it a
//! mapping and the whole module's documentation unreadable. The node test
//! of the collection (fleet_node) finds that late and only with a node;
//! this reads every module's `DOCUMENTATION`, `EXAMPLES` and `RETURN`
//! with a YAML parser in the fast suite.

use std::path::{Path, PathBuf};

const MODULES: &str = "contrib/ansible/ansible_collections/meshhost/node/plugins/modules";
const BLOCKS: [&str; 3] = ["DOCUMENTATION", "EXAMPLES", "RETURN"];

/// The text of `NAME = r"""..."""` in a module's source.
fn block<'a>(source: &'a str, name: &str) -> Option<&'a str> {
    let start = source.find(&format!("{name} = r\"\"\""))?;
    let body = &source[start..];
    let body = &body[body.find("\"\"\"")? + 3..];
    Some(&body[..body.find("\"\"\"")?])
}

/// The parser's first error in `text`, with its line and column.
fn yaml_error(text: &str) -> Option<String> {
    let mut parser = saphyr_parser::Parser::new_from_str(text);
    while let Some(event) = parser.next_event() {
        if let Err(e) = event {
            return Some(e.to_string());
        }
    }
    None
}

fn modules() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(MODULES);
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .collect();
    out.sort();
    out
}

#[test]
fn every_module_documents_itself_in_yaml_that_parses() {
    let modules = modules();
    assert!(!modules.is_empty(), "no module under {MODULES}");
    let mut problems = Vec::new();
    for path in &modules {
        let source = std::fs::read_to_string(path).expect("a module's source");
        for name in BLOCKS {
            match block(&source, name) {
                None => problems.push(format!("{}: no {name}", path.display())),
                Some(text) => {
                    if let Some(e) = yaml_error(text) {
                        problems.push(format!("{}: {name}: {e}", path.display()));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_colon_inside_a_sentence_is_an_error_the_check_sees() {
    let doc =
        "description:\n  - Returns what it read from the cgroup: the figures.\n    And more.\n";
    assert!(yaml_error(doc).is_some());
    assert!(yaml_error("description:\n  - Returns what it read.\n").is_none());
}
