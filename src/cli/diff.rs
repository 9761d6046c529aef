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

use super::apply::read_text;
use super::args::{Cli, EXIT_REFUSED};
use super::check::read_or_refuse;
use super::local::{block_on, LocalHost};
use super::output::print_on_file;
use crate::answer::apply::Previewed;
use crate::answer::Answer;
use crate::apply::{Applier, InstallRefused};
use crate::control::{client, Request};

/// `diff FILE` through the daemon.
pub fn run_remote(cli: &Cli, file: &Path, allow_empty: bool, json: bool) -> u8 {
    let shown = file.display().to_string();
    let declaration = match read_text(file, |refusal| {
        let answer = Previewed::from(Err(InstallRefused::Invalid(refusal)));
        print_on_file(&answer.response(), &shown, json)
    }) {
        Ok(text) => text,
        Err(code) => return code,
    };
    let request = Request::Diff {
        declaration,
        allow_empty,
    };
    block_on(async {
        match client::call_for(&cli.control_socket, &request, super::remote::form(json)).await {
            Ok(response) => print_on_file(&response, &file.display().to_string(), json),
            Err(e) => {
                crate::errln!("mesh-host: {e}");
                EXIT_REFUSED
            }
        }
    })
}

/// `diff FILE --local`.
pub fn run_local(cli: &Cli, file: &Path, allow_empty: bool, json: bool) -> u8 {
    let shown = file.display().to_string();
    let bytes = match read_or_refuse(file) {
        Ok(b) => b,
        Err(code) => return code,
    };
    // A refused FILE is said without the runtime, as apply --local says it.
    if let Err(refusal) = crate::declaration::parse(&bytes) {
        let answer = Previewed::from(Err(InstallRefused::Invalid(refusal)));
        return print_on_file(&answer.response(), &shown, json);
    }
    block_on(async {
        let host = match LocalHost::open(cli).await {
            Ok(h) => h,
            Err(msg) => {
                crate::errln!("mesh-host: {msg}");
                return EXIT_REFUSED;
            }
        };
        let applier = crate::apply::with_systemd(
            Applier::new(host.store, host.runtime, host.windows),
            &cli.unit_dir,
        )
        .await;
        let answer = Previewed::from(applier.parse_and_preview(&bytes, allow_empty).await);
        print_on_file(&answer.response(), &shown, json)
    })
}
