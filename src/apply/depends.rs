//! A service's `depends-on` with `condition: started`, honoured as compose
//! honours it:
//!
//! - a dependency in the same batch of services is waited for ([`gate`]:
//!   its runtime calls done) before the dependent's own calls begin, so a
//!   service never starts before what it depends on (a fixed address of
//!   the dependency is not taken by the dependent first), while services
//!   that depend on nothing still run side by side;
//! - a dependency that failed (decided `failed` before any call, or failed
//!   to be made or started) leaves its dependent not made or started, its
//!   line `failed` naming the dependency; a running dependent is left
//!   running, and the rest of the apply goes on. The plan says the first
//!   ([`after_failed`]), so `diff` does; the executor the second.
//!
//! `condition: healthy` is waited for by the executor (`execute/health.rs`).

use std::collections::BTreeSet;

use super::plan::{Decision, Kind, Work};
use super::report::{Action, ReportLine};
use crate::declaration::Container;

/// Why a service is not started: `dep` failed.
pub(crate) fn not_started(dep: &str) -> String {
    format!("depends-on {dep}: {dep} failed, so this was not started")
}

/// Whether a service `decision` would make or start its container.
fn starts(decision: &Decision) -> bool {
    matches!(&decision.work, Work::Service(w) if w.starts())
}

/// The dependency of `c` among `failed`, when `decision` (of `c`) would
/// make or start it.
pub(crate) fn failed_dependency<'f>(
    failed: &'f BTreeSet<String>,
    c: &Container,
    decision: &Decision,
) -> Option<&'f str> {
    if !starts(decision) {
        return None;
    }
    c.depends_on
        .iter()
        .find_map(|d| failed.get(d.id.as_str()).map(String::as_str))
}

/// `decision` for `c`, or its failure when a dependency decided before it
/// is `failed`.
pub(crate) fn after_failed(
    failed: &BTreeSet<String>,
    c: &Container,
    decision: Decision,
) -> Decision {
    match failed_dependency(failed, c, &decision) {
        Some(dep) => {
            let line = ReportLine::new(
                decision.line.id.clone(),
                Action::Failed,
                Some(not_started(dep)),
            );
            Decision::new(decision.slot, Kind::Service, line, Work::Nothing)
        }
        None => decision,
    }
}

/// Whether a dependency in the same batch started: `None` until its calls
/// are done, then whether it did not fail.
pub(crate) type Started = tokio::sync::watch::Receiver<Option<bool>>;

/// Wait for each dependency in the batch (`waits`) to be done; the first
/// that failed, if one did.
pub(crate) async fn gate(waits: Vec<(String, Started)>) -> Option<String> {
    for (dep, mut started) in waits {
        let ok = match started.wait_for(Option::is_some).await {
            Ok(done) => done.unwrap_or(false),
            // Its sender is gone without a word: it did not start.
            Err(_) => false,
        };
        if !ok {
            return Some(dep);
        }
    }
    None
}
