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
//! A network peer (`network: "container:NAME"`) is an implicit
//! `depends-on` with condition started ([`after`]): declared before its
//! follower, waited for in the batch, and a peer that failed leaves the
//! follower not made or started (`network peer vpn: vpn failed, ...`).
//!
//! `condition: healthy` is waited for by the executor (`execute/health.rs`).

use std::collections::BTreeSet;

use super::plan::{Decision, Kind, Work};
use super::report::{Action, ReportLine};
use crate::declaration::depends::Condition;
use crate::declaration::{Container, Declaration};

/// One container another is made or started after: a `depends-on`
/// entry, or its network peer (`network: "container:NAME"`, an implicit
/// `depends-on` with condition started), by resource id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct After {
    /// The resource id of what it waits for.
    pub(crate) id: String,
    /// Whether it is the network peer.
    pub(crate) peer: bool,
}

impl After {
    /// How the line names it: `depends-on db`, `network peer vpn`.
    fn named(&self) -> String {
        let how = if self.peer {
            "network peer"
        } else {
            "depends-on"
        };
        format!("{how} {}", self.id)
    }
}

/// What `c` is made or started after, in order: its `depends-on`, then
/// its network peer.
pub(crate) fn after(decl: &Declaration, c: &Container) -> Vec<After> {
    let mut out: Vec<After> = c
        .depends_on
        .iter()
        .map(|d| After {
            id: d.id.to_string(),
            peer: false,
        })
        .collect();
    if let Some((peer, _)) = decl.peer_of(c) {
        out.push(After {
            id: peer.id.to_string(),
            peer: true,
        });
    }
    out
}

/// Why a service is not started: `dep` failed.
pub(crate) fn not_started(dep: &After) -> String {
    format!(
        "{}: {} failed, so this was not started",
        dep.named(),
        dep.id
    )
}

/// Why a run-once step is not run: `dep` failed (the apply halts there,
/// as compose stops at a dependency that did not come up).
pub(crate) fn not_run(dep: &After) -> String {
    format!(
        "{}: {} failed, so this step was not run",
        dep.named(),
        dep.id
    )
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

/// What `c` is made or started after among `failed`, when `decision`
/// (of `c`) would make or start it.
pub(crate) fn failed_dependency(
    failed: &BTreeSet<String>,
    decl: &Declaration,
    c: &Container,
    decision: &Decision,
) -> Option<After> {
    if !starts(decision) {
        return None;
    }
    failed_of(failed, decl, c)
}

/// The first of what `c` is made or started after among `failed`.
pub(crate) fn failed_of(
    failed: &BTreeSet<String>,
    decl: &Declaration,
    c: &Container,
) -> Option<After> {
    after(decl, c)
        .into_iter()
        .find(|dep| failed.contains(&dep.id))
}

/// `decision` for `c`, or its failure when a dependency decided before it
/// is `failed`: a service is not made or started, a run-once step not
/// run, and, a step failing, the apply halts there.
pub(crate) fn after_failed(
    failed: &BTreeSet<String>,
    decl: &Declaration,
    c: &Container,
    decision: Decision,
) -> Decision {
    match failed_dependency(failed, decl, c, &decision) {
        Some(dep) => {
            let (why, work) = match decision.kind {
                Kind::RunOnce => (not_run(&dep), Work::Halt),
                _ => (not_started(&dep), Work::Nothing),
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
pub(crate) async fn gate(waits: Vec<(After, Started)>) -> Option<After> {
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
