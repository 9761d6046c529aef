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

use super::args::{Cli, EXIT_REFUSED};
use super::check::read_or_refuse;
use super::local::{block_on, LocalHost};
use super::output::print_on_file;
use crate::answer::apply::Applied;
use crate::answer::Answer;
use crate::apply::{Applier, InstallRefused};
use crate::declaration;

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
        Err(refusal) => return refused_apply(refusal, &shown, json),
    };
    block_on(async {
        let host = match LocalHost::ready(cli).await {
            Ok(h) => h,
            Err(code) => return code,
        };
        let (reporter, rx) = crate::progress::Reporter::channel();
        let applier = crate::apply::with_systemd(
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
        let answer = Applied::from(applied.map_err(InstallRefused::Empty));
        print_on_file(&answer.response(), &shown, json)
    })
}

/// FILE as text, for the daemon's request. One that is not UTF-8 cannot
/// be sent: it is refused here as `--local` refuses it, the parse's
/// refusal handed to `refused` to answer (so `--json` prints the same
/// document either way).
pub(super) fn read_text(
    file: &Path,
    refused: impl FnOnce(declaration::Refusal) -> u8,
) -> Result<String, u8> {
    let bytes = read_or_refuse(file)?;
    String::from_utf8(bytes).map_err(|e| match declaration::parse(e.as_bytes()) {
        Err(refusal) => refused(refusal),
        Ok(_) => {
            crate::errln!("mesh-host: {} is not UTF-8 text", file.display());
            EXIT_REFUSED
        }
    })
}

/// `apply`'s answer to a FILE refused before anything is touched.
pub(super) fn refused_apply(refusal: declaration::Refusal, shown: &str, json: bool) -> u8 {
    let answer = Applied::from(Err(InstallRefused::Invalid(refusal)));
    print_on_file(&answer.response(), shown, json)
}
