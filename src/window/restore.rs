//! Undoing what a process that lost its window did to it late.
//!
//! A check comes before its action, and an owner can be stopped between the
//! two: past its check for stopping a held container, it is frozen before
//! its stop reaches the runtime; a taker takes the window over, closes it
//! and starts the container; continued, the owner's stop lands, late. So:
//!
//! - after each stop it sends, an owner looks again under `windows.lock`
//!   ([`Restorer::after_stop`]): a window lost meanwhile has that stop
//!   undone (the container started again) unless a window of this boot
//!   holds the container now (or is handed it: one that opened over it);
//! - an owner killed between its late stop and that look cannot undo it:
//!   its taker watches it until it is gone ([`Restorer::watch_superseded`])
//!   and then starts, under the lock, each container of the window found
//!   stopped that no window of this boot holds.

use std::sync::Arc;
use std::time::Duration;

use crate::mesh_alert;
use crate::runtime::ContainerRuntime;

use super::alerts::Alerter;
use super::budget::Deadline;
use super::fence::{say_lost, Fence};
use super::record::WindowRecord;
use super::records::Records;

/// How long an owner that lost its window waits, under `windows.lock`,
/// for the start that undoes its late stop.
const RESTORE_WAIT: Duration = Duration::from_secs(10);

/// How often the superseded owner is looked at.
const OWNER_POLL: Duration = Duration::from_secs(1);

/// One deadline for a taker's whole restore after a superseded owner
/// died: its looks at the runtime, its wait for `windows.lock`, its starts
/// and its alerts.
const RESTORE_BUDGET: Duration = Duration::from_secs(30);

/// Undoes late stops: see the module documentation.
#[derive(Debug, Clone)]
pub struct Restorer {
    records: Records,
    runtime: Arc<dyn ContainerRuntime>,
    alerts: Alerter,
    /// This process's boot: only windows of it hold anything.
    boot_id: String,
}

impl Restorer {
    /// A restorer over these records and runtime.
    pub fn new(
        records: Records,
        runtime: Arc<dyn ContainerRuntime>,
        alerts: Alerter,
        boot_id: String,
    ) -> Self {
        Restorer {
            records,
            runtime,
            alerts,
            boot_id,
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
        let _records = match self.records.lock_async().await {
            Ok(lock) => lock,
            Err(e) => {
                tracing::warn!(MESH_STEP = %held.step, "cannot lock the window records to check the window of {} is still this process's after stopping {name}: {e}", held.step);
                return Fence::Own;
            }
        };
        let scan = match self.records.scan() {
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
            match self.records.write(&handed) {
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
        if let Err(e) = self.records.bump_epoch() {
            tracing::error!(MESH_STEP = %held.step, "cannot note the start of {name} for windows opening meanwhile: {e}");
        }
        // Bounded, and the one runtime request made under `windows.lock`
        // besides a taker's own restore (below): a window opening
        // meanwhile must find `name` running, or hand it over as above.
        let failed = match tokio::time::timeout(RESTORE_WAIT, self.runtime.start(name)).await {
            Ok(Ok(())) => {
                tracing::warn!(
                    MESH_STEP = %held.step,
                    MESH_CONTAINER = %name,
                    "{name} restored: this process's stop of it landed after its window of {} was taken over; no window holds {name}, so it was started again",
                    held.step
                );
                None
            }
            Ok(Err(e)) => {
                mesh_alert!(
                    MESH_STEP = %held.step,
                    MESH_CONTAINER = %name,
                    "container {name} WILL NOT START AGAIN: this process's stop of it landed after its window of {} was taken over, and starting it again failed: {e}",
                    held.step
                );
                Some(format!("container {name} WILL NOT START AGAIN: its start after a lost window failed: {e}"))
            }
            Err(_) => {
                mesh_alert!(
                    MESH_STEP = %held.step,
                    MESH_CONTAINER = %name,
                    "container {name} WILL NOT START AGAIN: this process's stop of it landed after its window of {} was taken over, and the container runtime did not answer its start within {} s (it may still land); the next apply starts it",
                    held.step,
                    RESTORE_WAIT.as_secs()
                );
                Some(format!("container {name} WILL NOT START AGAIN: the runtime did not answer its start after a lost window"))
            }
        };
        // Recorded for `status` once `windows.lock` is let go: a holder of
        // `alerts.lock` never keeps it.
        drop(_records);
        if let Some(message) = failed {
            let deadline = Deadline::of("alerting", RESTORE_WAIT);
            self.alerts
                .record(
                    crate::events::Event::WillNotStartAgain,
                    &held.step,
                    name,
                    message,
                    &deadline,
                )
                .await;
        }
        Fence::Lost
    }

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

    /// What the dead superseded owner of `record` left stopped, started
    /// again, within one deadline ([`RESTORE_BUDGET`]) for all of it: the
    /// runtime is asked which held containers are stopped before
    /// `windows.lock` is taken, and under it only the starts are made.
    pub(super) async fn restore_after_superseded(&self, record: &WindowRecord) {
        let deadline = Deadline::of("restoring", RESTORE_BUDGET);
        let mut stopped = Vec::new();
        for name in record.held_names() {
            let look = deadline
                .bound(
                    || format!("the container runtime to inspect {name}"),
                    self.runtime.inspect(name),
                )
                .await;
            match look {
                Ok(Ok(Some(info))) if !info.running => stopped.push(name.to_string()),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    tracing::warn!(MESH_STEP = %record.step, MESH_CONTAINER = %name, "cannot inspect {name} after pid {} died: {e}", record.pid)
                }
                Err(spent) => {
                    tracing::warn!(MESH_STEP = %record.step, MESH_CONTAINER = %name, "cannot inspect {name} after pid {} died: {spent}", record.pid)
                }
            }
        }
        if stopped.is_empty() {
            return;
        }
        // Whether a window holds each is asked of the records, under the
        // lock; when they cannot be read, none is started (it could run
        // beside a window's step) and each is alerted instead.
        let lock = self.records.lock_by(&deadline).await;
        let records = match &lock {
            Ok(_) => self.records.scan().map(|scan| scan.records).map_err(|e| {
                format!("the window records cannot be read to tell whether a window holds it ({e})")
            }),
            Err(e) => Err(format!(
                "the window records cannot be locked to tell whether a window holds it ({e})"
            )),
        };
        let records = match records {
            Ok(records) => records,
            Err(why) => {
                drop(lock);
                for name in &stopped {
                    self.alert_left_stopped(record, name, &why, &deadline).await;
                }
                return;
            }
        };
        let mut failed = Vec::new();
        for name in &stopped {
            // A window of this boot that holds it (or is starting it, or
            // recorded it stopped when it opened) decides on it.
            if records
                .iter()
                .any(|r| r.boot_id == self.boot_id && r.held.iter().any(|c| &c.name == name))
            {
                continue;
            }
            // See `after_stop`: an opener that looked before the lock
            // looks again.
            if let Err(e) = self.records.bump_epoch() {
                tracing::error!(MESH_STEP = %record.step, MESH_CONTAINER = %name, "cannot note the start of {name} for windows opening meanwhile: {e}");
            }
            let started = deadline
                .bound(
                    || format!("the container runtime to start {name}"),
                    self.runtime.start(name),
                )
                .await;
            let why = match started {
                Ok(Ok(())) => {
                    tracing::warn!(
                        MESH_STEP = %record.step,
                        MESH_CONTAINER = %name,
                        "{name} restored: pid {}, which lost the window of {}, died with {name} stopped (its late stop landed); no window holds {name}, so it was started again",
                        record.pid,
                        record.step
                    );
                    continue;
                }
                Ok(Err(e)) => format!("starting it failed: {e}"),
                Err(spent) => format!("{spent}; the next apply starts it"),
            };
            failed.push((name.clone(), why));
        }
        drop(lock);
        for (name, why) in failed {
            self.alert_left_stopped(record, &name, &why, &deadline)
                .await;
        }
    }

    /// Alert that `name`, left stopped by the dead superseded owner of
    /// `record`, was not started again, and `why`.
    async fn alert_left_stopped(
        &self,
        record: &WindowRecord,
        name: &str,
        why: &str,
        deadline: &Deadline,
    ) {
        crate::mesh_alert!(
            MESH_STEP = %record.step,
            MESH_CONTAINER = %name,
            "container {name} WILL NOT START AGAIN: pid {}, which lost the window of {}, died with it stopped, and {why}",
            record.pid,
            record.step
        );
        self.alerts
            .record(
                crate::events::Event::WillNotStartAgain,
                &record.step,
                name,
                format!("container {name} WILL NOT START AGAIN: pid {} died with it stopped after losing its window, and {why}", record.pid),
                deadline,
            )
            .await;
    }
}
