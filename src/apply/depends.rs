//! A service's `depends-on`, honoured as compose honours it when the
//! apply makes or starts the service:
//!
//! - every dependency is converged first: one in the same batch of
//!   services is waited for ([`gate`]: its runtime calls done) before the
//!   dependent's own calls begin, so a service never starts before what it
//!   depends on (a fixed address of the dependency is not taken by the
//!   dependent first), while services that depend on nothing still run
//!   side by side;
//! - a dependency that failed (to be made or started) leaves its
//!   dependent not started, its line `failed` naming the dependency; the
//!   rest of the apply goes on;
//! - with `condition: healthy`, it first waits for each such dependency's
//!   health check to say `healthy` (compose's `service_healthy`), bounded
//!   by how long that check takes to decide. A dependency that turns
//!   unhealthy, stops, or does not decide in time fails the dependent
//!   alone, naming why.

use std::time::Duration;

use super::containers::Work;
use super::report::{Action, ReportLine};
use super::Run;
use crate::declaration::depends::Condition;
use crate::declaration::{Container, Resource};
use crate::progress::Progress;

/// Longest wait for one dependency, whatever its check says.
const MOST: Duration = Duration::from_secs(600);
/// Added to the check's own bound (a slow first start).
const MARGIN: Duration = Duration::from_secs(10);
/// Between two looks.
const POLL: Duration = Duration::from_millis(500);

/// Why a service is not started: `dep` failed.
fn not_started(dep: &str) -> String {
    format!("depends-on {dep}: {dep} failed, so this was not started")
}

/// Whether a dependency in the same batch started: `None` until its calls
/// are done, then whether it did not fail.
pub(super) type Started = tokio::sync::watch::Receiver<Option<bool>>;

/// `work` for `id` once each dependency in its batch (`waits`) is done, or
/// its failure when one failed: a service is never started before, nor
/// after the failure of, what it depends on.
pub(super) async fn gate(id: &str, work: Work, waits: Vec<(String, Started)>) -> Work {
    if !work.starts() {
        return work;
    }
    for (dep, mut started) in waits {
        let ok = match started.wait_for(Option::is_some).await {
            Ok(done) => done.unwrap_or(false),
            // Its sender is gone without a word: it did not start.
            Err(_) => false,
        };
        if !ok {
            return Work::Done(ReportLine::new(id, Action::Failed, Some(not_started(&dep))));
        }
    }
    work
}

impl Work {
    /// Whether executing it makes or starts the container.
    pub(super) fn starts(&self) -> bool {
        match self {
            Work::Done(_) => false,
            Work::Create { .. } | Work::Recreate { .. } => true,
            Work::Keep {
                running,
                restart_on,
                ..
            } => !running || restart_on.is_some(),
        }
    }
}

impl Run<'_> {
    /// `work` for `c`, or its failure when a dependency converged before
    /// it (in an earlier batch) failed.
    pub(super) fn after_failed(&self, res: &Resource, c: &Container, work: Work) -> Work {
        if !work.starts() {
            return work;
        }
        match c
            .depends_on
            .iter()
            .find(|d| self.failed.contains(d.id.as_str()))
        {
            Some(dep) => Work::Done(ReportLine::new(
                res.id.as_str(),
                Action::Failed,
                Some(not_started(dep.id.as_str())),
            )),
            None => work,
        }
    }

    /// `work` for `c`, or its failure when a healthy dependency is not.
    pub(super) async fn after_dependencies(
        &mut self,
        res: &Resource,
        c: &Container,
        work: Work,
    ) -> Work {
        let work = self.after_failed(res, c, work);
        if self.preview || !work.starts() {
            return work;
        }
        for dep in c
            .depends_on
            .iter()
            .filter(|d| d.condition == Condition::Healthy)
        {
            let Some(named) = self.decl.container(dep.id.as_str()) else {
                continue;
            };
            if let Err(why) = self
                .wait_healthy(res.id.as_str(), named.name.as_str())
                .await
            {
                let reason = format!("depends-on {}: {why}", dep.id);
                return Work::Done(ReportLine::new(
                    res.id.as_str(),
                    Action::Failed,
                    Some(reason),
                ));
            }
        }
        work
    }

    /// Wait until `name` is healthy; why not, if it never is.
    async fn wait_healthy(&mut self, id: &str, name: &str) -> Result<(), String> {
        self.applier.progress.send(Progress::Waiting {
            id: Some(id.to_owned()),
            on: format!("{name} to be healthy (depends-on)"),
        });
        let started = tokio::time::Instant::now();
        loop {
            let info = self
                .runtime()
                .inspect(name)
                .await
                .map_err(|e| crate::runtime::explain(&e))?
                .ok_or_else(|| format!("{name} does not exist"))?;
            if !info.running {
                return Err(format!("{name} is not running ({})", info.status));
            }
            let Some(health) = info.health else {
                return Err(format!(
                    "{name} has no health check: it can never be healthy"
                ));
            };
            match health.status.as_str() {
                "healthy" => return Ok(()),
                "unhealthy" => return Err(format!("{name} is unhealthy: {}", health.last_output)),
                _ => {}
            }
            let bound = health
                .decides_within
                .map_or(MOST, |d| (d + MARGIN).min(MOST));
            if started.elapsed() >= bound {
                return Err(format!(
                    "{name} was not healthy within {} s (still {})",
                    bound.as_secs(),
                    health.status
                ));
            }
            tokio::time::sleep(POLL).await;
        }
    }
}
