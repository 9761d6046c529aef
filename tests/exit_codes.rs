//! The exit codes are one type, `mesh_host::exit::Exit`; what tells of
//! them elsewhere is held to it: docs/exit-codes.md and the README's
//! table (a column per code, or a code said in prose as `exits 130`), the
//! man pages' EXIT STATUS (made from it), and the Ansible collection's
//! `module_utils` (`EXIT_OK = 0`, ... one line per code, by its name).
//! No node needed.

use std::collections::BTreeSet;
use std::process::Command;

use mesh_host::exit::Exit;

fn read(rel: &str) -> String {
    let path = format!("{}/{rel}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn codes() -> BTreeSet<u8> {
    Exit::ALL.iter().map(|e| e.code()).collect()
}

/// The codes a page tells of: the columns of its table of every command
/// (`| command | 0 | 1 | ...`), and each code said as "exits `N`" or
/// "exits N"; and the columns alone.
fn told(page: &str) -> (BTreeSet<u8>, BTreeSet<u8>) {
    let header = page
        .lines()
        .find(|l| l.starts_with("| command | 0 |"))
        .unwrap_or_else(|| panic!("no table of exit codes in:\n{page}"));
    let columns: BTreeSet<u8> = header
        .split('|')
        .map(str::trim)
        .filter(|c| !c.is_empty() && *c != "command")
        .map(|c| c.parse().unwrap_or_else(|_| panic!("column {c:?}")))
        .collect();
    let mut all = columns.clone();
    for (i, _) in page.match_indices("exits ") {
        let rest = page[i + "exits ".len()..].trim_start_matches('`');
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(code) = digits.parse() {
            all.insert(code);
        }
    }
    (all, columns)
}

#[test]
fn the_exit_codes_page_and_the_readme_tell_of_every_code_and_no_other() {
    for rel in ["docs/exit-codes.md", "README.md"] {
        let (all, columns) = told(&read(rel));
        assert_eq!(all, codes(), "{rel}: the codes it tells of");
        assert!(columns.is_subset(&codes()), "{rel}: {columns:?}");
    }
}

#[test]
fn the_man_pages_exit_status_is_every_code_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_mesh-host"))
        .args(["generate", dir.path().to_str().expect("path")])
        .output()
        .expect("run mesh-host");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    for page in ["mesh-host.8", "mesh-host-run.8", "mesh-host-status.8"] {
        let text = std::fs::read_to_string(dir.path().join(page)).expect("page");
        let section = text
            .split("\n.SH \"EXIT STATUS\"\n")
            .nth(1)
            .and_then(|s| s.split("\n.SH ").next())
            .unwrap_or_else(|| panic!("{page} has no EXIT STATUS"));
        let listed: Vec<u8> = section
            .lines()
            .filter_map(|l| l.strip_prefix(".B "))
            .map(|c| c.parse().unwrap_or_else(|_| panic!("{page}: .B {c}")))
            .collect();
        let want: Vec<u8> = Exit::ALL.iter().map(|e| e.code()).collect();
        assert_eq!(listed, want, "{page}");
    }
}

#[test]
fn the_ansible_module_utils_name_every_code_as_the_type_does() {
    let utils =
        read("contrib/ansible/ansible_collections/meshhost/node/plugins/module_utils/mesh_host.py");
    let defined: BTreeSet<(String, u8)> = utils
        .lines()
        .filter(|l| l.starts_with("EXIT_"))
        .map(|l| {
            let (name, value) = l.split_once(" = ").unwrap_or_else(|| panic!("{l}"));
            (
                name.to_string(),
                value.trim().parse().unwrap_or_else(|_| panic!("{l}")),
            )
        })
        .collect();
    let want: BTreeSet<(String, u8)> = Exit::ALL
        .iter()
        .map(|e| (e.name().to_string(), e.code()))
        .collect();
    assert_eq!(defined, want);
}
