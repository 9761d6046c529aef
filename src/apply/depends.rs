//! A service's `depends-on` with `condition: healthy`: when the apply is
//! about to make or start it, it first waits for each such dependency's
//! health check to say `healthy` (compose's `service_healthy`), bounded by
//! how long that check takes to decide. A dependency that turns
//! unhealthy, stops, or does not decide in time fails the dependent
//! alone, naming why; the rest of the apply goes on.

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

impl Work {
    /// Whether executing it makes or starts the container.
    fn starts(&self) -> bool {
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
    /// `work` for `c`, or its failure when a healthy dependency is not.
    pub(super) async fn after_dependencies(
        &mut self,
        res: &Resource,
        c: &Container,
        work: Work,
    ) -> Work {
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
