//! `mesh-host apply FILE --local`: converge this machine to a declaration in
//! this process.
//!
//! FILE is validated, then installed as the node's declaration (the
//! `--declaration` file, see [`crate::apply::node_declaration`]) and the
//! machine converged to it, both under the apply lock: the daemon's
//! reconcile, reload and restart, `run`, `plan` and `status` then work from
//! what was applied. A refused FILE changes nothing, the installed file
//! included.
//!
//! Before applying, windows whose owner died are closed
//! ([`Windows::resume`](crate::window::Windows::resume)): on a node
//! with no daemon, the next local command is what finishes a dead owner's
//! window, so an apply never leaves a service held by a process that no
//! longer exists. Windows whose owner still runs are honoured (their
//! containers are `held-still`).

use std::path::Path;

use serde::Serialize;

use super::check::read_or_refuse;
use super::local::{block_on, LocalHost};
use super::output::print_json;
use super::{Cli, EXIT_FAILED, EXIT_OK, EXIT_REFUSED};
use crate::apply::{Applier, ApplyReport};
use crate::declaration::{self, Problem};

/// A refused declaration, as `--json` prints it.
#[derive(Debug, Serialize)]
struct Refused<'a> {
    file: String,
    accepted: bool,
    problems: &'a [Problem],
}

/// Run `apply FILE --local`.
pub fn run_local(cli: &Cli, file: &Path, allow_empty: bool, json: bool) -> u8 {
    let shown = file.display().to_string();
    let bytes = match read_or_refuse(file) {
        Ok(b) => b,
        Err(code) => return code,
    };
    // Refused before anything is touched: a refused declaration changes nothing.
    let decl = match declaration::parse(&bytes) {
        Ok(d) => d,
        Err(refusal) => {
            if json {
                print_json(&Refused {
                    file: shown,
                    accepted: false,
                    problems: &refusal.problems,
                });
            } else {
                crate::errln!(
                    "mesh-host: {shown} is refused, nothing was applied; {} problem(s):",
                    refusal.problems.len()
                );
                for p in &refusal.problems {
                    crate::errln!("  {p}");
                }
            }
            return EXIT_REFUSED;
        }
    };
    block_on(async {
        let host = match LocalHost::ready(cli).await {
            Ok(h) => h,
            Err(code) => return code,
        };
        let (reporter, rx) = crate::progress::Reporter::channel();
        let applier = crate::apply::units::with_systemd(
            Applier::new(
                host.store.clone(),
                host.runtime.clone(),
                host.windows.clone(),
            ),
            &cli.unit_dir,
        )
        .await
        .with_progress(reporter);
        let mut view = super::progress::View::apply(std::time::Instant::now());
        let applied = super::progress::show(
            super::progress::style(json),
            &mut view,
            rx,
            None,
            applier.install_and_apply(&decl, &bytes, &cli.declaration, allow_empty),
            |_| false,
        )
        .await;
        let report = match applied {
            Ok(report) => report,
            Err(refused) => {
                print_empty_refused(&shown, &refused, "", json);
                return EXIT_REFUSED;
            }
        };
        print_report(&report, json);
        if report.ok {
            EXIT_OK
        } else {
            EXIT_FAILED
        }
    })
}

/// Print an apply report: text (`ID ACTION[: reason]` lines) or JSON.
///
/// The text is formatted whole first: stdout is line-buffered, so
/// formatting straight into it would cost one write per resource.
pub fn print_report(report: &ApplyReport, json: bool) {
    if json {
        print_json(report);
    } else {
        let text = report.to_string();
        crate::outln!("{text}");
    }
}

/// A declaration of nothing refused over applied resources, as `apply`
/// (and `diff`, with `said` before the reason) prints it.
pub(super) fn print_empty_refused(
    shown: &str,
    refused: &crate::apply::EmptyRefused,
    said: &str,
    json: bool,
) {
    if json {
        print_json(&serde_json::json!({
            "file": shown,
            "accepted": false,
            "error": refused.to_string(),
            "empty": refused,
        }));
    } else {
        crate::errln!("mesh-host: {shown}: {said}{refused}");
    }
}
