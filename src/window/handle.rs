//! An open window, as its opener holds it: its record, the watcher
//! enforcing its holds, and how each held container is declared.

use std::time::Duration;

use super::plan::Specs;
use super::record::WindowRecord;
use super::watch_task::{Quitting, WatchTask};

/// An open window: its record and the watcher enforcing its holds.
#[derive(Debug)]
pub struct OpenWindow {
    pub(super) record: WindowRecord,
    pub(super) watcher: Option<WatchTask>,
    /// See [`super::WindowPlan::hold_specs`]; none for a resumed window.
    pub(super) specs: Specs,
    /// Where its watcher goes when it is dropped unclosed.
    pub(super) quitting: Quitting,
}

impl OpenWindow {
    /// The window's record as written.
    pub fn record(&self) -> &WindowRecord {
        &self.record
    }

    /// Stop enforcing the holds (before the close starts them again),
    /// waiting at most `bound` for a stop the watcher has in flight to
    /// land first.
    pub(super) async fn stop_watcher(&mut self, bound: Duration) {
        if let Some(watcher) = self.watcher.take() {
            if !watcher.quit(bound).await {
                tracing::warn!(
                    MESH_STEP = %self.record.step,
                    "the watch on the held containers did not end within {} s (a stop of one in flight): cut off",
                    bound.as_secs()
                );
            }
        }
    }
}

/// A window dropped without being closed — its fire panicked — stops
/// enforcing its holds: whoever closes it next (the adopter) starts the
/// held containers, which its watcher would otherwise stop again as a
/// violation. A stop the watcher has in flight is let finish, and that
/// close waits for it first: cut off, Docker would go on with it and it
/// could land after the close's start.
impl Drop for OpenWindow {
    fn drop(&mut self) {
        if let Some(watcher) = self.watcher.take() {
            watcher.leave(&self.record.step, &self.quitting);
        }
    }
}
