//! A service's `depends-on` with `condition: healthy`: before the apply
//! makes or starts it, it waits for each such dependency's health check
//! to say `healthy` (compose's `service_healthy`), bounded by how long
//! that check takes to decide. A dependency that turns unhealthy, stops,
//! or does not decide in time fails the dependent alone, naming why; the
//! rest of the apply goes on.

use std::time::Duration;

use super::tools::Tools;
use crate::progress::Progress;

/// Longest wait for one dependency, whatever its check says.
const MOST: Duration = Duration::from_secs(600);
/// Added to the check's own bound (a slow first start).
const MARGIN: Duration = Duration::from_secs(10);
/// Between two looks.
const POLL: Duration = Duration::from_millis(500);

/// Wait until each of `deps` (dependency id, container name) is healthy;
/// why not, for the first that never is.
pub(super) async fn wait(tools: &Tools, id: &str, deps: &[(String, String)]) -> Result<(), String> {
    for (dep, name) in deps {
        if let Err(why) = wait_healthy(tools, id, name).await {
            return Err(format!("depends-on {dep}: {why}"));
        }
    }
    Ok(())
}

/// Wait until `name` is healthy; why not, if it never is.
async fn wait_healthy(tools: &Tools, id: &str, name: &str) -> Result<(), String> {
    tools.progress.send(Progress::Waiting {
        id: Some(id.to_owned()),
        on: format!("{name} to be healthy (depends-on)"),
    });
    let started = tokio::time::Instant::now();
    loop {
        let info = tools
            .runtime
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
