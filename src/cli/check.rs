//! `mesh-host check FILE`: validate a declaration, changing nothing.

use std::path::Path;

use serde::Serialize;

use super::args::{EXIT_OK, EXIT_REFUSED};
use super::output::print_json;
use crate::declaration::{self, Declaration, ResourceKind, Role};

#[derive(Debug, Serialize)]
struct CheckResult<'a> {
    file: String,
    accepted: bool,
    summary: Option<String>,
    problems: Vec<&'a declaration::Problem>,
    warnings: Vec<declaration::Warning>,
    notes: Vec<declaration::Note>,
}

/// Read a declaration file (or standard input for `-`) for a command, or
/// say why not (exit 2): regular files only, bounded
/// ([`crate::declaration::input`]).
pub fn read_or_refuse(file: &Path) -> Result<Vec<u8>, u8> {
    declaration::input::read(file).map_err(|e| {
        crate::errln!("mesh-host: {e}");
        EXIT_REFUSED
    })
}

/// Run the command.
pub fn run(file: &Path, json: bool) -> u8 {
    let shown = file.display().to_string();
    let bytes = match read_or_refuse(file) {
        Ok(b) => b,
        Err(code) => return code,
    };
    // An identity is also checked against the machine's accounts: a name
    // or number taken by another account is refused like a bad field.
    let mut unchecked = None;
    let parsed = declaration::parse(&bytes).and_then(|decl| {
        let accounts = match crate::accounts::Accounts::system() {
            Ok(accounts) => accounts,
            Err(e) => {
                unchecked = Some(e);
                return Ok(decl);
            }
        };
        let problems = crate::accounts::problems(&decl, &accounts);
        if problems.is_empty() {
            Ok(decl)
        } else {
            Err(declaration::Refusal { problems })
        }
    });
    match parsed {
        Ok(decl) => {
            let warnings = declaration::lint(&decl);
            // Notes and warnings together stay within one bound of lines.
            let room = declaration::lint::MAX_WARNINGS.saturating_sub(warnings.len());
            let notes = declaration::notes(&decl, room);
            if let Some(e) = unchecked {
                crate::errln!(
                    "mesh-host: identities not checked against this machine's accounts: {e}"
                );
            }
            let summary = summarize(&decl);
            if json {
                print_json(&CheckResult {
                    file: shown,
                    accepted: true,
                    summary: Some(summary),
                    problems: Vec::new(),
                    warnings,
                    notes,
                });
            } else {
                crate::outln!("{shown}: accepted: {summary}");
                for w in &warnings {
                    crate::outln!("warning: {w}");
                }
                for n in &notes {
                    crate::outln!("note: {n}");
                }
            }
            EXIT_OK
        }
        Err(refusal) => {
            if json {
                print_json(&CheckResult {
                    file: shown,
                    accepted: false,
                    summary: None,
                    problems: refusal.problems.iter().collect(),
                    warnings: Vec::new(),
                    notes: Vec::new(),
                });
            } else {
                crate::outln!("{shown}: refused, {} problem(s):", refusal.problems.len());
                for p in &refusal.problems {
                    crate::outln!("  {p}");
                }
            }
            EXIT_REFUSED
        }
    }
}

/// "5 resources: 2 containers, 1 scheduled step, 1 file, 1 directory".
pub fn summarize(decl: &Declaration) -> String {
    let (mut services, mut run_once, mut steps, mut files, mut dirs, mut units) =
        (0, 0, 0, 0, 0, 0);
    let (mut identities, mut folders, mut networks, mut volumes) = (0, 0, 0, 0);
    for r in &decl.resources {
        match &r.kind {
            ResourceKind::Container(c) => match c.role {
                Role::Service => services += 1,
                Role::RunOnce => run_once += 1,
                Role::Scheduled(_) => steps += 1,
            },
            ResourceKind::File(_) => files += 1,
            ResourceKind::Directory(_) => dirs += 1,
            ResourceKind::Unit(_) => units += 1,
            ResourceKind::Identity(_) => identities += 1,
            ResourceKind::SharedFolder(_) => folders += 1,
            ResourceKind::Network(_) => networks += 1,
            ResourceKind::Volume(_) => volumes += 1,
        }
    }
    let parts: Vec<String> = [
        (services, "service container", "service containers"),
        (run_once, "run-once step", "run-once steps"),
        (steps, "scheduled step", "scheduled steps"),
        (files, "file", "files"),
        (dirs, "directory", "directories"),
        (units, "unit", "units"),
        (identities, "identity", "identities"),
        (folders, "shared folder", "shared folders"),
        (networks, "network", "networks"),
        (volumes, "volume", "volumes"),
    ]
    .iter()
    .filter(|(n, _, _)| *n > 0)
    .map(|(n, one, many)| format!("{n} {}", if *n == 1 { one } else { many }))
    .collect();
    format!(
        "{} resource(s){}{}",
        decl.resources.len(),
        if parts.is_empty() { "" } else { ": " },
        parts.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any declaration a reader accepts travels whole through the socket.
    #[test]
    fn the_socket_carries_the_largest_declaration() {
        assert_eq!(
            crate::control::MAX_DECLARATION as u64,
            declaration::input::MAX_BYTES
        );
        let largest = "\"".repeat(crate::control::MAX_DECLARATION);
        let request = crate::control::Request::Apply {
            declaration: largest,
            allow_empty: true,
            progress: true,
            every_line: true,
        };
        let sent = serde_json::to_vec(&request).expect("encodes");
        assert!(sent.len() <= crate::control::MAX_REQUEST, "{}", sent.len());
    }
}
