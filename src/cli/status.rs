//! `mesh-host status --local`: the answer of [`crate::answer::status_local::local`],
//! read from the state directory in this process (no daemon, no container
//! runtime needed), printed as the daemon's is.

use super::args::Cli;
use super::output::print_local;
use crate::answer::status_local::{local, LocalPaths};

/// Run `status --local`; `all_steps`: list every step however many
/// ([`crate::step_listing`]), as `--json` always does.
pub fn run_local(cli: &Cli, json: bool, all_steps: bool) -> u8 {
    let paths = LocalPaths {
        state_dir: &cli.state_dir,
        declaration: &cli.declaration,
        control_socket: &cli.control_socket,
    };
    print_local(&local(paths, !json && !all_steps), json)
}
