//! Shared, counted holds: two windows may hold the same container.
//!
//! The records of a boot are the count. Every decision about a shared
//! container is made under `windows.lock` against the records on disk:
//!
//! - **Open**: a container another window of this boot keeps stopped is
//!   shared: recorded as held, never stopped a second time. The opener
//!   waits until it is stopped (the other window may still be stopping
//!   it) before its step runs, and stops it itself only if no other
//!   window keeps it stopped any more. A container another window's close
//!   is starting again ([`HeldContainer::starting`]) is waited for: the
//!   window opens once that start is done, and then stops it again. A
//!   container held by a record of another boot, not yet closed, still
//!   makes the fire skip.
//! - **Close**: for each container, in reverse stop order, the closer
//!   looks at the other records of its boot. If one still keeps the
//!   container stopped (or is starting it), the hold is handed over: the
//!   container leaves this record, in the same locked step, so that two
//!   windows closing at once never both leave it to the other. Otherwise
//!   this window is the last holder: the container is marked `starting`
//!   in its record (again in that step), started, then taken off the
//!   record. A crash between leaves the mark: whoever takes the record
//!   over starts it.
//!
//! [`HeldContainer::starting`]: crate::store::HeldContainer::starting

use std::time::Duration;

use crate::store::{StoreError, WindowRecord};

use super::fence::Fence;
use super::{close_budget, AtOpen, WindowPlan, Windows};

/// How often an opener looks again at a container it shares, or at one
/// another window is starting again.
const SHARED_POLL: Duration = Duration::from_millis(500);

/// What the close of a window does with one container it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum AtClose {
    /// This window is its last holder: it is marked `starting` in the
    /// record, which is now `record`; start it.
    Start(WindowRecord),
    /// Another window still holds it: it was taken off this record, which
    /// is now `record`; leave it stopped.
    HandedOver {
        /// The step of the window that holds it still.
        other: String,
        /// This window's record, without the container.
        record: WindowRecord,
    },
    /// This process no longer owns the window.
    Lost,
}

impl Windows {
    /// How the records see each container of `plan` (the caller holds
    /// `windows.lock`); `Err((step, container))` when a record of another
    /// boot not yet closed holds one: the fire is skipped.
    pub(super) fn holds_at_open(
        &self,
        plan: &WindowPlan,
        pending: &[WindowRecord],
    ) -> Result<Vec<AtOpen>, (String, String)> {
        let others: Vec<&WindowRecord> = pending.iter().filter(|r| r.step != plan.step).collect();
        let mut out = Vec::with_capacity(plan.holds.len());
        for (_, name) in &plan.holds {
            if let Some(other) = others
                .iter()
                .find(|r| r.boot_id != self.owner.boot_id && r.held_names().any(|n| n == name))
            {
                return Err((other.step.clone(), name.clone()));
            }
            let at = if let Some(other) = others.iter().find(|r| r.is_starting(name)) {
                AtOpen::Starting {
                    other: other.step.clone(),
                }
            } else if others.iter().any(|r| r.keeps_stopped(name)) {
                AtOpen::Shared
            } else {
                AtOpen::Own
            };
            out.push(at);
        }
        Ok(out)
    }

    /// How long an opener waits for another window's close to start a
    /// container again before it skips its fire.
    pub(super) fn starting_wait() -> Duration {
        close_budget()
    }

    /// Pause between two looks at the records while a start is waited for.
    pub(super) async fn pause_shared() {
        tokio::time::sleep(SHARED_POLL).await;
    }

    /// Whether a window other than `record`'s, of the same boot, keeps
    /// `name` stopped now (under `windows.lock`).
    async fn others_keep_stopped(&self, record: &WindowRecord, name: &str) -> bool {
        let look = async {
            let _records = self.store.records_lock_async().await?;
            let scan = self.store.scan_windows()?;
            Ok::<_, StoreError>(scan.records.iter().any(|r| {
                r.step != record.step && r.boot_id == record.boot_id && r.keeps_stopped(name)
            }))
        };
        match look.await {
            Ok(kept) => kept,
            Err(e) => {
                tracing::warn!(MESH_STEP = %record.step, "cannot read the window records while sharing {name}: {e}");
                false
            }
        }
    }

    /// A container this window shares with another: wait until it is
    /// stopped (the other window may still be stopping it) before the step
    /// runs. Should no other window keep it stopped any more (its opener
    /// could not stop it, or closed at once), or the closing budget pass,
    /// this window stops it itself.
    pub(super) async fn wait_shared_stopped(
        &self,
        record: &WindowRecord,
        name: &str,
    ) -> Result<Fence, crate::runtime::RuntimeError> {
        let deadline = tokio::time::Instant::now() + close_budget();
        loop {
            match self.runtime.inspect(name).await {
                Ok(Some(info)) if !info.running => return Ok(Fence::Own),
                // Removed: the last close creates it again.
                Ok(None) => return Ok(Fence::Own),
                Ok(Some(_)) | Err(_) => {}
            }
            let alone = !self.others_keep_stopped(record, name).await;
            if alone || tokio::time::Instant::now() >= deadline {
                if self.fence(record, &format!("stopping {name}")).await == Fence::Lost {
                    return Ok(Fence::Lost);
                }
                tracing::info!(
                    MESH_STEP = %record.step,
                    MESH_CONTAINER = %name,
                    "{name} is shared but still runs and no other window is stopping it: the window of {} stops it",
                    record.step
                );
                self.runtime.stop(name).await?;
                return Ok(self.after_stop(record, name).await);
            }
            Self::pause_shared().await;
        }
    }

    /// Decide, under `windows.lock`, whether the window `record` is the
    /// last holder of `name`, and write the decision in its record before
    /// the lock is released (see the module docs).
    pub(super) async fn decide_at_close(
        &self,
        record: &WindowRecord,
        name: &str,
    ) -> Result<AtClose, StoreError> {
        let _records = self.store.records_lock_async().await?;
        let scan = self.store.scan_windows()?;
        let Some(now) = scan
            .records
            .iter()
            .find(|r| r.step == record.step && r.same_window_and_owner(record))
        else {
            let now = self.store.window(&record.step)?;
            super::fence::say_lost(record, now.as_ref(), &format!("starting {name}"));
            return Ok(AtClose::Lost);
        };
        let holder = scan.records.iter().find(|r| {
            r.step != record.step
                && r.boot_id == now.boot_id
                && (r.keeps_stopped(name) || r.is_starting(name))
        });
        let mut new = now.clone();
        let decided = match holder {
            Some(other) => {
                new.held.retain(|c| c.name != name);
                AtClose::HandedOver {
                    other: other.step.clone(),
                    record: new.clone(),
                }
            }
            None => {
                for c in new.held.iter_mut().filter(|c| c.name == name) {
                    c.starting = true;
                }
                AtClose::Start(new.clone())
            }
        };
        if new != *now {
            self.store.write_window(&new)?;
        }
        Ok(decided)
    }

    /// `name` was started again (or given up, alerted) by the close of
    /// `record`: take it off the record, so that a window opening now
    /// holds it afresh. Kept when `owed`: the record owes its start.
    pub(super) async fn done_starting(
        &self,
        record: &WindowRecord,
        name: &str,
    ) -> Result<(WindowRecord, Fence), StoreError> {
        let mut new = record.clone();
        new.held.retain(|c| c.name != name);
        let _records = self.store.records_lock_async().await?;
        let fence = self.rewrite_if_own_locked(record, &new)?;
        Ok((new, fence))
    }
}
