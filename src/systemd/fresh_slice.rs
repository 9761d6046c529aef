//! A step's slice started afresh for each fire (Docker's and Podman's
//! systemd cgroup driver).
//!
//! The runtime's scope for the step container sits in the step's slice and
//! is gone with the container, so the fire's figures are the slice's
//! ([`crate::accounting`]). The kernel keeps a group's peak memory for its
//! whole life: a slice that served earlier fires holds their peak. So
//! before a fire's unit is made, its slice is stopped when nothing can be
//! using it, and started again new: no unit this process made for the step
//! is alive (a fire's, or the one made ahead of the next fire, whose stop
//! watch would take the stop for an operator's), and systemd lists no
//! process in it (a run of another mesh-host process, a container started
//! by hand). Otherwise it serves as it is, and the fire's peak is given
//! only when it rose above the slice's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::systemd::jobs::JobEnds;
use zbus_systemd::systemd1::ManagerProxy;

/// How long stopping an idle slice may take.
const STOP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// The step slices this process has units in, and how many.
#[derive(Debug, Clone, Default)]
pub struct Slices {
    live: Arc<Mutex<HashMap<String, usize>>>,
}

/// One unit's hold on its step's slice, given back when dropped (the unit
/// ended, or was made ahead and never used).
#[derive(Debug)]
pub struct Lease {
    live: Arc<Mutex<HashMap<String, usize>>>,
    name: String,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = live.get_mut(&self.name) {
            *n -= 1;
            if *n == 0 {
                live.remove(&self.name);
            }
        }
    }
}

impl Slices {
    /// A hold on slice `name`, and whether it is the only one.
    pub fn lease(&self, name: &str) -> (Lease, bool) {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let n = live.entry(name.to_string()).or_default();
        *n += 1;
        let alone = *n == 1;
        (
            Lease {
                live: self.live.clone(),
                name: name.to_string(),
            },
            alone,
        )
    }
}

/// Stop slice `name` when it is loaded and holds no process, waiting for
/// the stop to be done; whether it was stopped. Call it only with the only
/// [`Lease`] on the slice, and before watching the slice for stops.
pub async fn stop_if_idle(manager: &ManagerProxy<'_>, name: &str) -> Result<bool, String> {
    if manager.get_unit(name.to_string()).await.is_err() {
        // Not loaded: the fire starts it new.
        return Ok(false);
    }
    // Every process of the slice's cgroup and the groups below it.
    let processes = manager
        .get_unit_processes(name.to_string())
        .await
        .map_err(|e| format!("cannot list the processes of {name}: {e}"))?;
    if !processes.is_empty() {
        return Ok(false);
    }
    let mut ends = JobEnds::listen(manager).await?;
    let job = ends
        .queue(manager.stop_unit(name.to_string(), "fail".to_string()))
        .await
        .map_err(|e| format!("cannot stop {name}: {e}"))?;
    let done = async {
        match ends.result(&job).await {
            Some(result) => Ok(result == "done"),
            None => Err(format!("lost systemd's signals while stopping {name}")),
        }
    };
    tokio::time::timeout(STOP_TIMEOUT, done)
        .await
        .map_err(|_| format!("systemd did not stop {name} in {STOP_TIMEOUT:?}"))?
}

/// The cgroup systemd gives the slice `name` (it must be active).
pub async fn control_group(conn: &zbus::Connection, name: &str) -> Result<String, String> {
    let path = ManagerProxy::new(conn)
        .await
        .map_err(|e| format!("systemd manager: {e}"))?
        .get_unit(name.to_string())
        .await
        .map_err(|e| format!("GetUnit {name}: {e}"))?;
    zbus_systemd::systemd1::SliceProxy::builder(conn)
        .path(path)
        .build()
        .await
        .map_err(|e| format!("{name}: {e}"))?
        .control_group()
        .await
        .map_err(|e| format!("{name} ControlGroup: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_count_the_units_on_a_slice() {
        let slices = Slices::default();
        let (a, alone) = slices.lease("s.slice");
        assert!(alone);
        let (b, alone) = slices.lease("s.slice");
        assert!(!alone, "a second unit on the slice");
        let (_other, alone) = slices.lease("t.slice");
        assert!(alone, "another step's slice");
        drop(a);
        let (c, alone) = slices.lease("s.slice");
        assert!(!alone, "b still holds it");
        drop((b, c));
        assert!(slices.lease("s.slice").1, "every unit on it ended");
    }
}
