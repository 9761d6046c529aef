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
//! A run-once step's `depends-on` (compose's `service_completed_successfully`
//! target that itself depends on other services) is honoured the same
//! way: what it depends on is declared before it, so converged before it
//! runs; a dependency that failed leaves it not run, which halts the
//! apply as a failing run does.
//!
//! `condition: healthy` is waited for by the executor (`execute/health.rs`).

use std::collections::BTreeSet;

use super::plan::{Decision, Kind, Work};
use super::report::{Action, ReportLine};
use crate::declaration::depends::Condition;
use crate::declaration::{Container, Declaration};

/// Why a service is not started: `dep` failed.
pub(crate) fn not_started(dep: &str) -> String {
    format!("depends-on {dep}: {dep} failed, so this was not started")
}

/// Why a run-once step is not run: `dep` failed (the apply halts there,
/// as compose stops at a dependency that did not come up).
pub(crate) fn not_run(dep: &str) -> String {
    format!("depends-on {dep}: {dep} failed, so this step was not run")
}

/// Whether `decision` would make or start its container: a service's
/// that does, a run-once step's run.
fn starts(decision: &Decision) -> bool {
    match &decision.work {
        Work::Service(w) => w.starts(),
        Work::RunOnce(_) => true,
        _ => false,
    }
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
    failed_of(failed, c)
}

/// The first dependency of `c` among `failed`.
pub(crate) fn failed_of<'f>(failed: &'f BTreeSet<String>, c: &Container) -> Option<&'f str> {
    c.depends_on
        .iter()
        .find_map(|d| failed.get(d.id.as_str()).map(String::as_str))
}

/// `decision` for `c`, or its failure when a dependency decided before it
/// is `failed`: a service is not made or started, a run-once step not
/// run, and, a step failing, the apply halts there.
pub(crate) fn after_failed(
    failed: &BTreeSet<String>,
    c: &Container,
    decision: Decision,
) -> Decision {
    match failed_dependency(failed, c, &decision) {
        Some(dep) => {
            let (why, work) = match decision.kind {
                Kind::RunOnce => (not_run(dep), Work::Halt),
                _ => (not_started(dep), Work::Nothing),
            };
            let line = ReportLine::new(decision.line.id.clone(), Action::Failed, Some(why));
            Decision::new(decision.slot, decision.kind, line, work)
        }
        None => decision,
    }
}

/// `c`'s dependencies it waits to be healthy for (`condition: healthy`):
/// dependency id and container name.
pub(crate) fn healthy_first(decl: &Declaration, c: &Container) -> Vec<(String, String)> {
    c.depends_on
        .iter()
        .filter(|dep| dep.condition == Condition::Healthy)
        .filter_map(|dep| {
            let named = decl.container(dep.id.as_str())?;
            Some((dep.id.to_string(), named.name.to_string()))
        })
        .collect()
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
