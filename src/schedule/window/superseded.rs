//! An owner that lost its window and died before it undid its late stop.
//!
//! An owner whose lease lapsed (stopped, hung) loses its window to a taker,
//! which closes it. A stop that owner had already passed its check for can
//! land later; the owner itself undoes it ([`Windows::after_stop`]) — unless
//! it is killed between the stop landing and that look. So the taker
//! watches the superseded owner: once it is gone, every container of the
//! window found stopped, that no window of this boot keeps stopped or is
//! starting, is started again and said restored.

use std::time::Duration;

use crate::store::WindowRecord;

use super::Windows;

/// How often the superseded owner is looked at.
const OWNER_POLL: Duration = Duration::from_secs(1);

impl Windows {
    /// Watch `record`'s owner (alive, its lease lapsed, its window taken
    /// over by this process) on a task of its own until it is gone, then
    /// start what its late stops left stopped.
    pub(super) fn watch_superseded(&self, record: WindowRecord) {
        let this = self.clone();
        tokio::spawn(async move {
            while record.owner_alive() {
                tokio::time::sleep(OWNER_POLL).await;
            }
            this.restore_after_superseded(&record).await;
        });
    }

    async fn restore_after_superseded(&self, record: &WindowRecord) {
        let _records = match self.store.records_lock_async().await {
            Ok(lock) => lock,
            Err(e) => {
                tracing::warn!(MESH_STEP = %record.step, "cannot lock the window records to look at what pid {} left: {e}", record.pid);
                return;
            }
        };
        let records = match self.store.scan_windows() {
            Ok(scan) => scan.records,
            Err(e) => {
                tracing::warn!(MESH_STEP = %record.step, "cannot read the window records to look at what pid {} left: {e}", record.pid);
                return;
            }
        };
        for name in record.held_names() {
            // A window of this boot that holds it (or is starting it, or
            // recorded it stopped when it opened) decides on it.
            if records
                .iter()
                .any(|r| r.boot_id == self.owner.boot_id && r.held.iter().any(|c| c.name == name))
            {
                continue;
            }
            match self.runtime.inspect(name).await {
                Ok(Some(info)) if !info.running => {}
                Ok(_) => continue,
                Err(e) => {
                    tracing::warn!(MESH_STEP = %record.step, MESH_CONTAINER = %name, "cannot inspect {name} after pid {} died: {e}", record.pid);
                    continue;
                }
            }
            // See `after_stop`: an opener that looked before the lock
            // looks again.
            if let Err(e) = self.store.bump_windows_epoch() {
                tracing::error!(MESH_STEP = %record.step, MESH_CONTAINER = %name, "cannot note the start of {name} for windows opening meanwhile: {e}");
            }
            match tokio::time::timeout(Duration::from_secs(10), self.runtime.start(name)).await {
                Ok(Ok(())) => tracing::warn!(
                    MESH_STEP = %record.step,
                    MESH_CONTAINER = %name,
                    "{name} restored: pid {}, which lost the window of {}, died with {name} stopped (its late stop landed); no window holds {name}, so it was started again",
                    record.pid,
                    record.step
                ),
                Ok(Err(e)) => {
                    crate::mesh_alert!(
                        MESH_STEP = %record.step,
                        MESH_CONTAINER = %name,
                        "container {name} WILL NOT START AGAIN: pid {}, which lost the window of {}, died with it stopped, and starting it failed: {e}",
                        record.pid,
                        record.step
                    );
                }
                Err(_) => {
                    crate::mesh_alert!(
                        MESH_STEP = %record.step,
                        MESH_CONTAINER = %name,
                        "container {name} WILL NOT START AGAIN: pid {}, which lost the window of {}, died with it stopped, and the container runtime did not answer its start within 10 s; the next apply starts it",
                        record.pid,
                        record.step
                    );
                }
            }
        }
    }
}
