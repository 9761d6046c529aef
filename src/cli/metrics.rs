//! `mesh-host metrics --local`: the metrics text computed from the state
//! directory, for a node where no daemon runs.

use super::args::{Cli, EXIT_FAILED, EXIT_OK};
use crate::store::Store;

/// Print the metrics text.
pub fn run_local(cli: &Cli) -> u8 {
    let text = Store::open(&cli.state_dir)
        .map_err(|e| e.to_string())
        .and_then(|store| crate::metrics::service::local(&store));
    match text {
        Ok(text) => {
            crate::out!("{text}");
            EXIT_OK
        }
        Err(msg) => {
            crate::errln!("mesh-host: {msg}");
            EXIT_FAILED
        }
    }
}
