//! `mesh-host suspend STEP --local` and `resume STEP --local`: the
//! suspension written to the state directory in this process, for a node
//! where no daemon runs; the next daemon reads it at start.
//!
//! With a daemon answering on the control socket they are refused: its
//! scheduler would not learn of the change, and the two would write the
//! same document. Without `--local` the daemon does it
//! ([`crate::schedule::scheduler::SchedulerHandle::suspend`]).

use serde_json::json;

use super::local::load_step;
use super::output::print_json;
use super::{Cli, EXIT_FAILED, EXIT_OK, EXIT_REFUSED};
use crate::schedule::suspend;
use crate::store::Store;

/// Suspend (`suspend` true) or resume `step_id` in the state directory.
pub fn run_local(cli: &Cli, step_id: &str, suspending: bool, json: bool) -> u8 {
    if std::os::unix::net::UnixStream::connect(&cli.control_socket).is_ok() {
        crate::errln!(
            "mesh-host: a daemon answers on {}: {} {step_id} without --local, so that its scheduler acts on it at once",
            cli.control_socket.display(),
            if suspending { "suspend" } else { "resume" }
        );
        return EXIT_REFUSED;
    }
    let store = match Store::open(&cli.state_dir) {
        Ok(s) => s,
        Err(e) => {
            crate::errln!("mesh-host: {e}");
            return EXIT_FAILED;
        }
    };
    if suspending {
        // Only a declared step (the node's declaration file) is suspended.
        if let Err(code) = load_step(cli, step_id) {
            return code;
        }
        match suspend::suspend(&store, step_id, chrono::Utc::now()) {
            Ok((since, _)) => {
                if json {
                    print_json(&json!({"step": step_id, "suspended": true, "since": since}));
                } else {
                    crate::outln!(
                        "step {step_id} suspended since {}: its due times are logged step-suspended, not run and never caught up; mesh-host resume {step_id} lifts it",
                        crate::render::time(since)
                    );
                }
                EXIT_OK
            }
            Err(e) => {
                crate::errln!("mesh-host: cannot suspend {step_id}: {e}");
                EXIT_FAILED
            }
        }
    } else {
        // A step that left the declaration may still be lifted.
        let known = suspend::load(&store)
            .map(|s| s.since(step_id).is_some())
            .unwrap_or(false);
        if !known {
            if let Err(code) = load_step(cli, step_id) {
                return code;
            }
        }
        match suspend::resume(&store, step_id) {
            Ok((was, _)) => {
                if json {
                    print_json(
                        &json!({"step": step_id, "suspended": false, "was-suspended-since": was}),
                    );
                } else {
                    match was {
                        Some(since) => crate::outln!(
                            "step {step_id} resumed (suspended since {}): it fires again from its next due time",
                            crate::render::time(since)
                        ),
                        None => crate::outln!("step {step_id} was not suspended"),
                    }
                }
                EXIT_OK
            }
            Err(e) => {
                crate::errln!("mesh-host: cannot resume {step_id}: {e}");
                EXIT_FAILED
            }
        }
    }
}
