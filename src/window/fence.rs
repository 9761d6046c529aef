//! Who may act on a window, and on the records directory.
//!
//! - **Unreadable files** in `windows/` are moved to `windows/unreadable/`
//!   under `windows.lock`, with an alert naming them (`record-unreadable`):
//!   they never keep the daemon from starting or a valid window from
//!   closing.
//! - **The lease** (`lease.rs`): a window whose lease has lapsed is taken
//!   over even though its owner's process exists.
//! - **Fencing**: before each stop, start, rewrite or erase, an owner
//!   checks under `windows.lock` that the record on disk is still its own
//!   (same window, same owner). One that is not has lost the window: it
//!   says so, and never acts on the window again. A record is erased only
//!   by the one who closed it, and only if it is still that record.

use crate::events::Event;
use crate::mesh_alert_of;
use crate::store::StoreError;

use super::budget::Deadline;
use super::owner::Owner;
use super::record::WindowRecord;
use super::records::Records;
use super::unreadable::UnreadableRecord;

/// Whether an owner may still act on its window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fence {
    /// The record on disk is still this window, this process's.
    Own,
    /// Someone else holds it now, or it is gone: said, and not acted on.
    Lost,
}

impl Records {
    /// Move every file of `windows/` that is not a readable record to
    /// `windows/unreadable/`, alerting each (under `windows.lock`).
    pub async fn set_aside_unreadable(&self) -> Result<(), StoreError> {
        let _records = self.lock_async().await?;
        let scan = self.scan()?;
        self.set_aside_locked(&scan.unreadable);
        Ok(())
    }

    /// [`Self::set_aside_unreadable`] for a caller holding `windows.lock`.
    pub(super) fn set_aside_locked(&self, unreadable: &[UnreadableRecord]) {
        for u in unreadable {
            match self.set_aside(&u.path) {
                Ok(Some((to, reason))) => mesh_alert_of!(
                    Event::RecordUnreadable,
                    MESH_FILE = %u.path.display(),
                    "window record {} cannot be read ({reason}): moved to {}; the containers it held, if any, are not known",
                    u.path.display(),
                    to.display()
                ),
                Ok(None) => {}
                Err(e) => tracing::error!(
                    MESH_FILE = %u.path.display(),
                    "window record {} cannot be read ({}) nor moved aside: {e}",
                    u.path.display(),
                    u.reason
                ),
            }
        }
    }

    /// Whether `held` (a window this process holds) is still its own on
    /// disk, looked at under `windows.lock`, before it `doing` something.
    /// A window lost is said (once per call). An error reading the record
    /// is not a loss: the owner acts (a held container must run again).
    pub(crate) async fn fence(&self, held: &WindowRecord, doing: &str) -> Fence {
        match self.lock_async().await {
            Ok(_records) => self.fence_locked(held, doing),
            Err(e) => {
                tracing::warn!(MESH_STEP = %held.step, "cannot lock the window records to check the window of {} is still this process's: {e}", held.step);
                Fence::Own
            }
        }
    }

    /// [`Self::fence`] within a close's `deadline` (see
    /// [`Records::lock_by`]): a lock that cannot be had in time is no loss.
    pub(super) async fn fence_by(
        &self,
        held: &WindowRecord,
        doing: &str,
        deadline: &Deadline,
    ) -> Fence {
        match self.lock_by(deadline).await {
            Ok(_records) => self.fence_locked(held, doing),
            Err(e) if e.said_before() => Fence::Own,
            Err(e) => {
                tracing::warn!(MESH_STEP = %held.step, "cannot lock the window records to check the window of {} is still this process's: {e}; acting as its owner", held.step);
                Fence::Own
            }
        }
    }

    /// [`Self::fence`] for a caller holding `windows.lock`.
    fn fence_locked(&self, held: &WindowRecord, doing: &str) -> Fence {
        match self.get(&held.step) {
            Ok(Some(now)) if now.same_window_and_owner(held) => Fence::Own,
            Ok(now) => {
                say_lost(held, now.as_ref(), doing);
                Fence::Lost
            }
            Err(e) => {
                tracing::warn!(MESH_STEP = %held.step, "cannot read the window record of {}: {e}; acting as its owner", held.step);
                Fence::Own
            }
        }
    }

    /// Mark the record of `step`, if `owner` holds it and it owes nothing
    /// yet, owed (under `windows.lock`): its window was left unclosed by a
    /// fire or a close that panicked, and the adopter ([`super::adopt`])
    /// waits for the step container and closes it.
    pub(super) fn hand_over(&self, step: &str, owner: &Owner) {
        let _records = match self.lock() {
            Ok(lock) => lock,
            Err(e) => {
                tracing::error!(MESH_STEP = %step, "cannot hand over the window of {step}: {e}");
                return;
            }
        };
        match self.get(step) {
            Ok(Some(record)) if owner.owns(&record) && !record.owed => {
                let owed = WindowRecord {
                    owed: true,
                    ..record
                };
                match self.write(&owed) {
                    Ok(()) => tracing::warn!(
                        MESH_STEP = %step,
                        "the window of {step} is left to be closed by the adopter"
                    ),
                    Err(e) => {
                        tracing::error!(MESH_STEP = %step, "cannot hand over the window of {step}: {e}")
                    }
                }
            }
            Ok(_) => {}
            Err(e) => {
                tracing::error!(MESH_STEP = %step, "cannot read the window record of {step}: {e}")
            }
        }
    }

    /// Erase the record of `held` if it is still that window, this
    /// process's, and holds nothing its close has not `seen` (the caller
    /// holds `windows.lock`); otherwise leave what is there.
    pub(super) fn erase_if_own(
        &self,
        held: &WindowRecord,
        seen: &[String],
    ) -> Result<Finished, StoreError> {
        match self.get(&held.step)? {
            Some(now) if now.same_window_and_owner(held) => {
                let handed = unseen(&now, seen);
                if !handed.is_empty() {
                    return Ok(Finished::Handed(handed));
                }
                self.remove(&held.step)?;
                Ok(Finished::Done)
            }
            now => {
                say_lost(held, now.as_ref(), "erasing its record");
                Ok(Finished::Lost)
            }
        }
    }

    /// Narrow the record of `held`, if it is still that window, this
    /// process's, to what its close still owes a start and mark it owed
    /// (the caller holds `windows.lock`): the containers named in `owed`,
    /// and any handed to it that the close has not `seen` (see
    /// [`Finished::Handed`]).
    pub(super) fn keep_owed_if_own(
        &self,
        held: &WindowRecord,
        owed: &[String],
        seen: &[String],
    ) -> Result<Fence, StoreError> {
        match self.get(&held.step)? {
            Some(now) if now.same_window_and_owner(held) => {
                let handed = unseen(&now, seen);
                let new = WindowRecord {
                    owed: true,
                    held: now
                        .held
                        .iter()
                        .filter(|c| {
                            c.was_running && (owed.contains(&c.name) || handed.contains(&c.name))
                        })
                        .cloned()
                        .collect(),
                    ..now
                };
                self.write(&new)?;
                Ok(Fence::Own)
            }
            now => {
                say_lost(held, now.as_ref(), "keeping its record owed");
                Ok(Fence::Lost)
            }
        }
    }

    /// Rewrite the record of `held` as `new` if it is still that window,
    /// this process's (the caller holds `windows.lock`).
    pub(super) fn rewrite_if_own(
        &self,
        held: &WindowRecord,
        new: &WindowRecord,
    ) -> Result<Fence, StoreError> {
        match self.get(&held.step)? {
            Some(now) if now.same_window_and_owner(held) => {
                let new = WindowRecord {
                    lease_since_boot_secs: now.lease_since_boot_secs,
                    ..new.clone()
                };
                self.write(&new)?;
                Ok(Fence::Own)
            }
            now => {
                say_lost(held, now.as_ref(), "rewriting its record");
                Ok(Fence::Lost)
            }
        }
    }
}

/// What a close's last write to its record found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Finished {
    /// The record was this window's, and is erased or rewritten.
    Done,
    /// Someone else holds it now, or it is gone: said, and not acted on.
    Lost,
    /// The record is still this window's, but holds containers its close
    /// has not seen: handed to it while it closed (a lost owner's late
    /// stop, see `restore.rs`). Kept: the close starts them, then erases.
    Handed(Vec<String>),
}

/// The containers `record` holds (that were running when they were
/// stopped) which are not among `seen`.
fn unseen(record: &WindowRecord, seen: &[String]) -> Vec<String> {
    record
        .held_names()
        .filter(|n| !seen.iter().any(|s| s == n))
        .map(str::to_string)
        .collect()
}

/// Say that this process lost the window `held` (to `now`'s owner, or its
/// record is gone) and does not `doing`.
pub(super) fn say_lost(held: &WindowRecord, now: Option<&WindowRecord>, doing: &str) {
    let who = match now {
        Some(r) if r.pid != held.pid || r.boot_id != held.boot_id => {
            format!("it was taken over by pid {}", r.pid)
        }
        Some(_) => "its record is another window's now".to_string(),
        None => "its record is gone (closed by another)".to_string(),
    };
    tracing::error!(
        MESH_STEP = %held.step,
        "lost the window of {}: {who}; not {doing}, and this process does nothing more to it",
        held.step
    );
}
