//! The window engine of one process, as the rest of mesh-host sees it:
//! open, close, take over, look. Each act is carried out by the type of
//! its concept (`open.rs`, `close.rs`, `takeover.rs`, ...), on the engine's
//! shared parts (`engine.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::clock::Clock;
use crate::runtime::{ContainerRuntime, ContainerSpec};
use crate::store::{Store, StoreError};

use super::close::{CloseReport, Closing};
use super::engine::Engine;
use super::handle::OpenWindow;
use super::open::{OpenError, Opening};
use super::owner::Owner;
use super::plan::WindowPlan;
use super::record::{Moment, WindowRecord};
use super::records::Records;
use super::shared;
use super::takeover::{Resumed, Takeover};

/// The window engine of one process. Cheap to clone: clones share what
/// they know (the armed declaration's holds, the lease renewer).
#[derive(Debug, Clone)]
pub struct Windows {
    engine: Engine,
}

impl Windows {
    /// A window engine over this store and runtime, owned by `owner`.
    pub fn new(
        store: Store,
        runtime: Arc<dyn ContainerRuntime>,
        clock: Arc<dyn Clock>,
        owner: Owner,
    ) -> Self {
        Windows {
            engine: Engine::new(store, runtime, clock, owner),
        }
    }

    /// Remember how each container held by a declared step is declared
    /// (replacing what was known; the scheduler calls it whenever it arms
    /// its steps): a window closed without its opener's
    /// plan at hand — resumed at start-up, taken over from a dead owner,
    /// owed starts — still creates again a held container someone removed
    /// during it, rather than reporting it lost.
    pub fn know_held_specs(&self, specs: BTreeMap<String, Arc<ContainerSpec>>) {
        *self
            .engine
            .known_specs
            .write()
            .unwrap_or_else(|e| e.into_inner()) = specs;
    }

    /// The same engine, told by `stopping` turning true that the process is
    /// stopping (the daemon's SIGTERM): a window it took over then stops
    /// its step and closes instead of waiting for the step to end, as the
    /// daemon's own fires do.
    pub fn stopping_on(mut self, stopping: tokio::sync::watch::Receiver<bool>) -> Self {
        self.engine.stopping = Some(stopping);
        self
    }

    /// The store the records live in.
    pub fn store(&self) -> &Store {
        &self.engine.store
    }

    /// The window records.
    pub fn records(&self) -> &Records {
        &self.engine.records
    }

    /// This process as window owner.
    pub fn owner(&self) -> &Owner {
        &self.engine.owner
    }

    /// Now, as records are measured.
    pub fn moment(&self) -> Moment {
        self.engine.moment()
    }

    /// The records that hold something now: of this boot, and within their
    /// bound or with their owner alive. A file that cannot be read as a
    /// record is left out: it is moved aside, with an alert, by whoever
    /// next holds `windows.lock` ([`Records::set_aside_unreadable`]).
    pub fn live_records(&self) -> Result<Vec<WindowRecord>, StoreError> {
        let at = self.engine.moment();
        Ok(self
            .engine
            .records
            .scan()?
            .records
            .into_iter()
            .filter(|r| r.holds_at(&at))
            .collect())
    }

    /// Open a window over `plan`: record first, then stop (`open.rs`).
    pub async fn open(&self, plan: &WindowPlan) -> Result<OpenWindow, OpenError> {
        Opening::new(&self.engine, plan).open().await
    }

    /// Close a window, whatever its step did. Runs on its own task so that
    /// cancelling the caller cannot cut it short, within the closing
    /// budget (`close.rs`).
    pub async fn close(&self, window: &mut OpenWindow) -> CloseReport {
        Closing::open_window(&self.engine, window).await
    }

    /// The step of this window could not be confirmed stopped (the runtime
    /// did not answer for the whole closing budget): starting the held
    /// containers could run them beside it. Each is alerted, and the record
    /// stays, marked owed: the daemon waits for the runtime, for the step to
    /// end (within the window's bound), then starts them.
    pub async fn close_unconfirmed(&self, window: &mut OpenWindow, reason: &str) -> CloseReport {
        Closing::unconfirmed(&self.engine, window, reason).await
    }

    /// Take over every record whose owner is gone (or whose lease lapsed)
    /// and close it, each on its own task (`takeover.rs`).
    pub async fn resume(&self) -> Result<Vec<Resumed>, StoreError> {
        Takeover::new(&self.engine).resume().await
    }

    /// Take over the record of `step` and close it, when it needs it: its
    /// owner gone, its lease lapsed, or this process's own and owed
    /// (`takeover.rs`). `None` when there is nothing to take over.
    pub async fn adopt(&self, step: &str) -> Result<Option<Resumed>, StoreError> {
        Takeover::new(&self.engine).adopt(step).await
    }

    /// A fire of `step` in this process ended without closing its window
    /// (it panicked): its record is left owed, to the adopter.
    pub fn hand_over(&self, step: &str) {
        Takeover::new(&self.engine).hand_over(step)
    }

    /// Move every file of `windows/` that is not a readable record aside,
    /// alerting each (under `windows.lock`).
    pub async fn set_aside_unreadable(&self) -> Result<(), StoreError> {
        self.engine.records.set_aside_unreadable().await
    }

    /// The step of a window record that would make a window of `step`,
    /// holding `holds` (runtime names), skip its fire now (`shared.rs`).
    pub fn opening_blocked_by(
        &self,
        step: &str,
        holds: &[String],
    ) -> Result<Option<String>, StoreError> {
        shared::opening_blocked_by(
            &self.engine.records,
            &self.engine.owner.boot_id,
            step,
            holds,
        )
    }

    #[cfg(test)]
    /// After a stop of `name` for the window `held` returned: whether the
    /// window is still this process's, undoing the stop if it is not
    /// (`restore.rs`).
    pub(crate) async fn after_stop(&self, held: &WindowRecord, name: &str) -> super::fence::Fence {
        self.engine.restorer.after_stop(held, name).await
    }

    #[cfg(test)]
    /// Renew the lease of every record this process owns, now (`lease.rs`).
    pub(crate) async fn renew_once(&self) -> Result<usize, StoreError> {
        self.engine.renewer.renew_once().await
    }

    /// Whether a lease renewer runs for this engine.
    #[cfg(test)]
    pub(crate) fn renews_leases(&self) -> bool {
        self.engine.renewer.runs()
    }
}
