//! The container runtime at the daemon's start: waited for a while, as
//! dockerd may start after mesh-host.

use std::sync::Arc;
use std::time::Duration;

use crate::runtime::{ContainerRuntime, DockerRuntime};

/// How long the daemon keeps trying to reach the container runtime at start.
const RUNTIME_WAIT: Duration = Duration::from_secs(90);

/// Connect to the runtime, waiting for it a while (dockerd may start after us).
pub(super) async fn connect_runtime(
    host: Option<&str>,
) -> Result<Arc<dyn ContainerRuntime>, String> {
    let deadline = tokio::time::Instant::now() + RUNTIME_WAIT;
    loop {
        match DockerRuntime::connect(host).await {
            Ok(rt) => return Ok(Arc::new(rt)),
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::warn!("{e}; trying again");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            Err(e) => return Err(crate::runtime::explain(&e)),
        }
    }
}
