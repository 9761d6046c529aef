//! `mesh-host suspend STEP --local` and `resume STEP --local`: the
//! suspension written to the state directory in this process, for a node
//! where no daemon runs; the next daemon reads it at start.
//!
//! With a daemon answering on the control socket they are refused: its
//! scheduler would not learn of the change, and the two would write the
//! same document. Without `--local` the daemon does it
//! ([`crate::schedule::scheduler::SchedulerHandle::suspend`]).

use super::args::Cli;
use super::local::load_step;
use super::output::{print_failure, print_local};
use crate::answer::suspend::Suspension;
use crate::answer::Failure;
use crate::schedule::suspend;
use crate::store::Store;

/// Suspend (`suspend` true) or resume `step_id` in the state directory.
pub fn run_local(cli: &Cli, step_id: &str, suspending: bool, json: bool) -> u8 {
    if std::os::unix::net::UnixStream::connect(&cli.control_socket).is_ok() {
        return print_failure(
            &Failure::refused(format!(
                "a daemon answers on {}: {} {step_id} without --local, so that its scheduler acts on it at once",
                cli.control_socket.display(),
                if suspending { "suspend" } else { "resume" }
            )),
            json,
        );
    }
    let store = match Store::open(&cli.state_dir) {
        Ok(s) => s,
        Err(e) => return print_failure(&Failure::failed(e.to_string()), json),
    };
    let answer = if suspending {
        // Only a declared step (the node's declaration file) is suspended.
        if let Err(f) = load_step(cli, step_id) {
            return print_failure(&f, json);
        }
        suspend::suspend(&store, step_id, chrono::Utc::now())
            .map(|(since, _)| Suspension::suspended(step_id, since))
            .map_err(|e| Failure::failed(format!("cannot suspend {step_id}: {e}")))
    } else {
        // A step that left the declaration may still be lifted.
        let known = suspend::load(&store)
            .map(|s| s.since(step_id).is_some())
            .unwrap_or(false);
        if !known {
            if let Err(f) = load_step(cli, step_id) {
                return print_failure(&f, json);
            }
        }
        suspend::resume(&store, step_id)
            .map(|(was, _)| Suspension::resumed(step_id, was))
            .map_err(|e| Failure::failed(format!("cannot resume {step_id}: {e}")))
    };
    print_local(&answer, json)
}
