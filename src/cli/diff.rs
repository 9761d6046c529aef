//! `mesh-host diff FILE`: what `apply FILE` would do, doing none of it.
//!
//! The preview is the apply's own walk with every act left out
//! ([`Applier::parse_and_preview`]): through the daemon by default (which
//! previews under the same apply lock), or in this process with `--local`.
//! A local preview opens the state directory and the runtime but does not
//! finish dead owners' windows first, as a local apply does: it changes
//! nothing. Exit codes as `diff(1)`: 0 nothing would change, 1 something
//! would, 2 refused or an error.

use std::path::Path;

use super::check::read_or_refuse;
use super::local::{block_on, LocalHost};
use super::output::print_json;
use super::{Cli, EXIT_REFUSED};
use crate::apply::{Applier, InstallRefused, PreviewText};
use crate::control::{client, Request};

/// `diff FILE` through the daemon.
pub fn run_remote(cli: &Cli, file: &Path, allow_empty: bool, json: bool) -> u8 {
    let declaration = match read_text(file) {
        Ok(text) => text,
        Err(code) => return code,
    };
    let request = Request::Diff {
        declaration,
        allow_empty,
    };
    block_on(async {
        let answer =
            client::call_for(&cli.control_socket, &request, super::remote::form(json)).await;
        super::remote::print_answer_or(answer, json, EXIT_REFUSED)
    })
}

/// `diff FILE --local`.
pub fn run_local(cli: &Cli, file: &Path, allow_empty: bool, json: bool) -> u8 {
    let shown = file.display().to_string();
    let bytes = match read_or_refuse(file) {
        Ok(b) => b,
        Err(code) => return code,
    };
    block_on(async {
        let host = match LocalHost::open(cli).await {
            Ok(h) => h,
            Err(msg) => {
                crate::errln!("mesh-host: {msg}");
                return EXIT_REFUSED;
            }
        };
        let applier = crate::apply::units::with_systemd(
            Applier::new(host.store, host.runtime, host.windows),
            &cli.unit_dir,
        )
        .await;
        match applier.parse_and_preview(&bytes, allow_empty).await {
            Ok(report) => {
                if json {
                    print_json(&report);
                } else {
                    crate::outln!("{}", PreviewText(&report));
                }
                report.diff_exit()
            }
            Err(InstallRefused::Invalid(refusal)) => {
                if json {
                    print_json(&serde_json::json!({
                        "file": shown,
                        "accepted": false,
                        "problems": refusal.problems,
                    }));
                } else {
                    crate::errln!(
                        "mesh-host: {shown} is refused; {} problem(s):",
                        refusal.problems.len()
                    );
                    for p in &refusal.problems {
                        crate::errln!("  {p}");
                    }
                }
                EXIT_REFUSED
            }
            Err(InstallRefused::Empty(refused)) => {
                super::apply::print_empty_refused(
                    &shown,
                    &refused,
                    "apply would refuse it: ",
                    json,
                );
                EXIT_REFUSED
            }
        }
    })
}

/// FILE as text, for the daemon's request.
fn read_text(file: &Path) -> Result<String, u8> {
    let bytes = read_or_refuse(file)?;
    String::from_utf8(bytes).map_err(|_| {
        crate::errln!("mesh-host: {} is not UTF-8 text", file.display());
        EXIT_REFUSED
    })
}
