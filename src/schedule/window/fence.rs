//! Who may act on a window, and on the records directory.
//!
//! - **Unreadable files** in `windows/` are moved to `windows/unreadable/`
//!   under `windows.lock`, with an alert naming them (`record-unreadable`):
//!   they never keep the daemon from starting or a valid window from
//!   closing.
//! - **The lease**: a process renews, every [`LEASE_RENEW`], the lease of
//!   every record it owns. A window whose lease has lapsed for
//!   [`crate::store::LEASE_LAPSE`] is taken over even though its owner's
//!   process exists (stopped, hung, frozen).
//! - **Fencing**: before each stop, start, rewrite or erase, an owner
//!   checks under `windows.lock` that the record on disk is still its own
//!   (same window, same owner). One that is not has lost the window: it
//!   says so, and never acts on the window again. A record is erased only
//!   by the one who closed it, and only if it is still that record.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::events::Event;
use crate::store::{StoreError, UnreadableRecord, WindowRecord, LEASE_RENEW};
use crate::{mesh_alert, mesh_alert_of};

use super::Windows;

/// How long an owner that lost its window waits, under `windows.lock`,
/// for the start that undoes its late stop.
const RESTORE_WAIT: Duration = Duration::from_secs(10);

/// Whether an owner may still act on its window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fence {
    /// The record on disk is still this window, this process's.
    Own,
    /// Someone else holds it now, or it is gone: said, and not acted on.
    Lost,
}

impl Windows {
    /// Move every file of `windows/` that is not a readable record to
    /// `windows/unreadable/`, alerting each (under `windows.lock`).
    pub async fn set_aside_unreadable(&self) -> Result<(), StoreError> {
        let _records = self.store.records_lock_async().await?;
        let scan = self.store.scan_windows()?;
        self.set_aside_locked(&scan.unreadable);
        Ok(())
    }

    /// [`Self::set_aside_unreadable`] for a caller holding `windows.lock`.
    pub(super) fn set_aside_locked(&self, unreadable: &[UnreadableRecord]) {
        for u in unreadable {
            match self.store.set_aside(&u.path) {
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
        let _records = match self.store.records_lock_async().await {
            Ok(lock) => lock,
            Err(e) => {
                tracing::warn!(MESH_STEP = %held.step, "cannot lock the window records to check the window of {} is still this process's: {e}", held.step);
                return Fence::Own;
            }
        };
        match self.store.window(&held.step) {
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

    /// After a stop of `name` for the window `held` returned: whether the
    /// window is still this process's. A stop passes its fence check
    /// before it is sent; a process stopped or hung between the two may
    /// have lost the window meanwhile, and its stop then lands after the
    /// taker closed the window and started `name` again. So, under
    /// `windows.lock`: when the window is lost and no window of this boot
    /// keeps `name` stopped, `name` (running when the window opened) is
    /// started again, and that restoration is said. It is no act on the
    /// window: only what this process did is undone, and the lock keeps
    /// a window opening meanwhile from taking `name` for stopped.
    pub(crate) async fn after_stop(&self, held: &WindowRecord, name: &str) -> Fence {
        let _records = match self.store.records_lock_async().await {
            Ok(lock) => lock,
            Err(e) => {
                tracing::warn!(MESH_STEP = %held.step, "cannot lock the window records to check the window of {} is still this process's after stopping {name}: {e}", held.step);
                return Fence::Own;
            }
        };
        let scan = match self.store.scan_windows() {
            Ok(scan) => scan,
            Err(e) => {
                tracing::warn!(MESH_STEP = %held.step, "cannot read the window records after stopping {name}: {e}; acting as the owner of the window of {}", held.step);
                return Fence::Own;
            }
        };
        let now = scan.records.iter().find(|r| r.step == held.step);
        if now.is_some_and(|r| r.same_window_and_owner(held)) {
            return Fence::Own;
        }
        say_lost(held, now, &format!("holding {name}"));
        if !held.keeps_stopped(name) {
            return Fence::Lost;
        }
        // A record of this boot that keeps it stopped (its owner alive or
        // not: its closer starts it) holds it; one that is starting it
        // does not keep it stopped, and a second start is harmless.
        if let Some(other) = scan
            .records
            .iter()
            .find(|r| r.boot_id == held.boot_id && r.keeps_stopped(name))
        {
            tracing::info!(
                MESH_STEP = %held.step,
                MESH_CONTAINER = %name,
                "{name}, stopped by this process after it lost the window of {}, stays stopped: the window of {} holds it",
                held.step,
                other.step
            );
            return Fence::Lost;
        }
        // A window of this boot that opened after the stop landed (and
        // before this look) found `name` stopped and recorded it so: its
        // step may run now. Starting `name` would run it beside that step;
        // it is handed to that window instead, as held (it was running
        // before this process stopped it), and its close starts it.
        if let Some(other) = scan.records.iter().find(|r| {
            r.step != held.step
                && r.boot_id == held.boot_id
                && r.held.iter().any(|c| c.name == name && !c.was_running)
        }) {
            let mut handed = other.clone();
            for c in handed.held.iter_mut().filter(|c| c.name == name) {
                c.was_running = true;
            }
            match self.store.write_window(&handed) {
                Ok(()) => {
                    tracing::warn!(
                        MESH_STEP = %held.step,
                        MESH_CONTAINER = %name,
                        "{name}, stopped by this process after it lost the window of {}, is handed to the window of {}, which opened while it was stopped: that window's close starts it",
                        held.step,
                        other.step
                    );
                    return Fence::Lost;
                }
                Err(e) => tracing::error!(
                    MESH_STEP = %held.step,
                    MESH_CONTAINER = %name,
                    "cannot hand {name} to the window of {}: {e}; starting it again",
                    other.step
                ),
            }
        }
        // An opener that asked the runtime before it took the lock sees
        // that its look may be older than this start, and looks again.
        if let Err(e) = self.store.bump_windows_epoch() {
            tracing::error!(MESH_STEP = %held.step, "cannot note the start of {name} for windows opening meanwhile: {e}");
        }
        // Bounded, and the one runtime request made under `windows.lock`
        // besides a taker's own restore (superseded.rs): a window opening
        // meanwhile must find `name` running, or hand it over as above.
        match tokio::time::timeout(RESTORE_WAIT, self.runtime.start(name)).await {
            Ok(Ok(())) => tracing::warn!(
                MESH_STEP = %held.step,
                MESH_CONTAINER = %name,
                "{name} restored: this process's stop of it landed after its window of {} was taken over; no window holds {name}, so it was started again",
                held.step
            ),
            Ok(Err(e)) => {
                mesh_alert!(
                    MESH_STEP = %held.step,
                    MESH_CONTAINER = %name,
                    "container {name} WILL NOT START AGAIN: this process's stop of it landed after its window of {} was taken over, and starting it again failed: {e}",
                    held.step
                );
                self.record_alert(
                    crate::events::Event::WillNotStartAgain,
                    &held.step,
                    name,
                    format!("container {name} WILL NOT START AGAIN: its start after a lost window failed: {e}"),
                );
            }
            Err(_) => {
                mesh_alert!(
                    MESH_STEP = %held.step,
                    MESH_CONTAINER = %name,
                    "container {name} WILL NOT START AGAIN: this process's stop of it landed after its window of {} was taken over, and the container runtime did not answer its start within {} s (it may still land); the next apply starts it",
                    held.step,
                    RESTORE_WAIT.as_secs()
                );
                self.record_alert(
                    crate::events::Event::WillNotStartAgain,
                    &held.step,
                    name,
                    format!("container {name} WILL NOT START AGAIN: the runtime did not answer its start after a lost window"),
                );
            }
        }
        Fence::Lost
    }

    /// Erase the record of `held` if it is still that window, this
    /// process's (under `windows.lock`); otherwise leave what is there.
    pub(super) async fn erase_if_own(&self, held: &WindowRecord) -> Result<Fence, StoreError> {
        let _records = self.store.records_lock_async().await?;
        match self.store.window(&held.step)? {
            Some(now) if now.same_window_and_owner(held) => {
                self.store.remove_window(&held.step)?;
                Ok(Fence::Own)
            }
            now => {
                say_lost(held, now.as_ref(), "erasing its record");
                Ok(Fence::Lost)
            }
        }
    }

    /// Rewrite the record of `held` as `new` if it is still that window,
    /// this process's (under `windows.lock`).
    pub(super) async fn rewrite_if_own(
        &self,
        held: &WindowRecord,
        new: &WindowRecord,
    ) -> Result<Fence, StoreError> {
        let _records = self.store.records_lock_async().await?;
        self.rewrite_if_own_locked(held, new)
    }

    /// [`Self::rewrite_if_own`] for a caller holding `windows.lock`.
    pub(super) fn rewrite_if_own_locked(
        &self,
        held: &WindowRecord,
        new: &WindowRecord,
    ) -> Result<Fence, StoreError> {
        match self.store.window(&held.step)? {
            Some(now) if now.same_window_and_owner(held) => {
                let new = WindowRecord {
                    lease_since_boot_secs: now.lease_since_boot_secs,
                    ..new.clone()
                };
                self.store.write_window(&new)?;
                Ok(Fence::Own)
            }
            now => {
                say_lost(held, now.as_ref(), "rewriting its record");
                Ok(Fence::Lost)
            }
        }
    }

    /// Keep renewing, every [`LEASE_RENEW`], the lease of every record this
    /// process owns, while it owns one: started on a window opened or taken
    /// over, and ended once none is left, so an idle daemon is not woken.
    pub(super) fn renew_leases(&self) {
        if self.renewing.swap(true, Ordering::SeqCst) {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(LEASE_RENEW);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                match this.renew_once().await {
                    Ok(0) => {
                        // Nothing of this process's is open: stop. A window
                        // opened meanwhile may have found this task still
                        // running and relied on it: look once more, and go
                        // on only if no newer renewer was started for it.
                        this.renewing.store(false, Ordering::SeqCst);
                        match this.renew_once().await {
                            Ok(n) if n > 0 && !this.renewing.swap(true, Ordering::SeqCst) => {}
                            _ => return,
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!("cannot renew the lease on this process's windows: {e}")
                    }
                }
            }
        });
    }

    /// Whether a lease renewer runs for this engine.
    #[cfg(test)]
    pub(crate) fn renews_leases(&self) -> bool {
        self.renewing.load(Ordering::SeqCst)
    }

    /// Renew the lease of every record this process owns, now; how many it
    /// owns. The heartbeat first, without `windows.lock`, so that a holder
    /// of the lock never makes this owner look lapsed; then the records'
    /// own leases, only if the lock is free (the beat stands for them
    /// meanwhile). Owning none, the heartbeat is removed.
    pub(crate) async fn renew_once(&self) -> Result<usize, StoreError> {
        let Some(now) = self.clock.since_boot().map(|d| d.as_secs()) else {
            return Ok(0);
        };
        let me = crate::store::Beater {
            boot_id: &self.owner.boot_id,
            pid: self.owner.pid,
            pid_start_time: self.owner.pid_start_time,
        };
        // Records are replaced atomically: read without the lock.
        let owned = self
            .store
            .scan_windows()?
            .records
            .iter()
            .filter(|r| self.owner.owns(r))
            .count();
        if owned == 0 {
            self.store.end_beats(&me)?;
            return Ok(0);
        }
        // A beat that cannot be written must not keep the record from
        // being renewed: that is the lease a taker reads first.
        if let Err(e) = self.store.beat(&me, now) {
            tracing::warn!("cannot write this process's heartbeat: {e}; renewing its records only");
        }
        let Some(_records) = self.store.records_try_lock()? else {
            return Ok(owned);
        };
        for record in self.store.scan_windows()?.records {
            if self.owner.owns(&record) && record.lease_since_boot_secs != Some(now) {
                self.store.write_window(&WindowRecord {
                    lease_since_boot_secs: Some(now),
                    ..record
                })?;
            }
        }
        Ok(owned)
    }
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
