//! `mesh-host take ID`: the declaration file read here, the consent
//! recorded and answered by [`crate::answer::take`].

use super::args::{Cli, EXIT_REFUSED};
use super::output::print_local;
use crate::declaration;

/// Run the command.
pub fn run(cli: &Cli, id: &str, json: bool) -> u8 {
    let file = &cli.declaration;
    let bytes = match super::check::read_or_refuse(file) {
        Ok(b) => b,
        Err(code) => return code,
    };
    let decl = match declaration::parse(&bytes) {
        Ok(d) => d,
        Err(refusal) => {
            crate::errln!("mesh-host: {} is refused:\n{refusal}", file.display());
            return EXIT_REFUSED;
        }
    };
    print_local(
        &crate::answer::take::take(&cli.state_dir, &decl, file, id),
        json,
    )
}
