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
//!   over starts it. Each locked step is one rewrite: it takes the last
//!   container started off and decides on the next, and it is made while
//!   Docker starts the container between them ([`bookkeep_spawned`]), so
//!   that no write of the record lies between two starts.
//!
//! [`HeldContainer::starting`]: crate::window::record::HeldContainer::starting

use std::time::Duration;

use crate::store::StoreError;

use super::budget::{close_budget, Deadline, LockWait};
use super::fence::say_lost;
use super::plan::WindowPlan;
use super::record::WindowRecord;
use super::records::Records;

/// How the records on disk see a container a window is about to hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum AtOpen {
    /// No other window holds it: this window stops it if it runs.
    Own,
    /// Another window of this boot keeps it stopped: shared.
    Shared,
    /// Another window's close is starting it again: wait, then look again.
    Starting {
        /// That window's step.
        other: String,
    },
}

/// How often an opener looks again at a container it shares, or at one
/// another window is starting again.
const SHARED_POLL: Duration = Duration::from_millis(500);

/// What the close of a window does with one container it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum AtClose {
    /// This window is its last holder: it is marked `starting` in the
    /// record; start it.
    Start,
    /// Another window still holds it: it was taken off this record; leave
    /// it stopped.
    HandedOver {
        /// The step of the window that holds it still.
        other: String,
    },
    /// This process no longer owns the window.
    Lost,
}

/// What one step of a close's bookkeeping did ([`bookkeep_spawned`]).
#[derive(Debug)]
pub(super) struct Bookkept {
    /// The window's record as it now is on disk.
    pub(super) record: WindowRecord,
    /// The decision on the next container, when one was asked for.
    pub(super) next: Option<AtClose>,
}

/// How the records see each container of `plan`, for a window of boot
/// `boot_id` (the caller holds `windows.lock`); `Err((step, container))`
/// when a record of another boot not yet closed holds one: the fire is
/// skipped.
pub(super) fn holds_at_open(
    boot_id: &str,
    plan: &WindowPlan,
    pending: &[WindowRecord],
) -> Result<Vec<AtOpen>, (String, String)> {
    let others: Vec<&WindowRecord> = pending.iter().filter(|r| r.step != plan.step).collect();
    let mut out = Vec::with_capacity(plan.holds.len());
    for (_, name) in &plan.holds {
        if let Some(other) = others
            .iter()
            .find(|r| r.boot_id != boot_id && r.held_names().any(|n| n == name))
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

/// The step of a window record that would make a window of `step`,
/// holding `holds` (runtime names), skip its fire now on boot `boot_id`:
/// one that names `step` itself, or one of another boot not yet closed
/// that holds one of them (as an opening decides, read without the lock).
/// A fire owed its run (a catch-up) waits while there is one.
pub(super) fn opening_blocked_by(
    records: &Records,
    boot_id: &str,
    step: &str,
    holds: &[String],
) -> Result<Option<String>, StoreError> {
    let scan = records.scan()?;
    Ok(scan
        .records
        .iter()
        .find(|r| {
            r.step == step
                || (r.boot_id != boot_id && r.held_names().any(|n| holds.iter().any(|h| h == n)))
        })
        .map(|r| r.step.clone()))
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
pub(super) async fn others_keep_stopped(
    records: &Records,
    record: &WindowRecord,
    name: &str,
) -> bool {
    let look =
        async {
            let _records = records.lock_async().await?;
            let scan = records.scan()?;
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

/// One step of a close's bookkeeping, under `windows.lock` and in
/// one atomic rewrite of the record (none when nothing changes):
/// take `done` off the record (started again, or given up and
/// alerted), so that a window opening now holds it afresh; and decide
/// whether the window is the last holder of `next`, writing the
/// decision before the lock is released (see the module docs). It is
/// also the fence of `next`'s start: a record that is no longer this
/// window's own is [`AtClose::Lost`], and nothing is written. The caller
/// holds `windows.lock` ([`bookkeep_spawned`] takes it).
fn bookkeep_locked(
    records: &Records,
    record: &WindowRecord,
    done: Option<&str>,
    next: Option<&str>,
) -> Result<Bookkept, StoreError> {
    let scan = records.scan()?;
    let Some(now) = scan
        .records
        .iter()
        .find(|r| r.step == record.step && r.same_window_and_owner(record))
    else {
        let now = records.get(&record.step)?;
        let doing = match next {
            Some(name) => format!("starting {name}"),
            None => "rewriting its record".to_string(),
        };
        say_lost(record, now.as_ref(), &doing);
        return Ok(Bookkept {
            record: record.clone(),
            next: next.map(|_| AtClose::Lost),
        });
    };
    let mut new = now.clone();
    if let Some(done) = done {
        new.held.retain(|c| c.name != done);
    }
    let decided = next.map(|name| {
        let holder = scan.records.iter().find(|r| {
            r.step != record.step
                && r.boot_id == now.boot_id
                && (r.keeps_stopped(name) || r.is_starting(name))
        });
        match holder {
            Some(other) => {
                new.held.retain(|c| c.name != name);
                AtClose::HandedOver {
                    other: other.step.clone(),
                }
            }
            None => {
                for c in new.held.iter_mut().filter(|c| c.name == name) {
                    c.starting = true;
                }
                AtClose::Start
            }
        }
    });
    if new != *now {
        records.write(&new)?;
    }
    Ok(Bookkept {
        record: new,
        next: decided,
    })
}

/// [`bookkeep_locked`], as a task of its own: the close awaits it after the
/// start it runs beside. `windows.lock` is waited for within the close's
/// `deadline` (one wait of it at most, then tried once at each need: see
/// [`Deadline::lock`]); the scan and the rewrite, blocking (an fsync), run
/// on the blocking pool.
pub(super) fn bookkeep_spawned(
    records: &Records,
    record: &WindowRecord,
    done: Option<String>,
    next: Option<String>,
    deadline: &Deadline,
) -> tokio::task::JoinHandle<Result<Bookkept, LockWait>> {
    let (records, record, deadline) = (records.clone(), record.clone(), deadline.clone());
    tokio::spawn(async move {
        let lock = records.lock_by(&deadline).await?;
        let booked = tokio::task::spawn_blocking(move || {
            let _records = lock;
            bookkeep_locked(&records, &record, done.as_deref(), next.as_deref())
        })
        .await
        .map_err(|join| StoreError::Lock {
            path: "windows.lock".into(),
            source: std::io::Error::other(join),
        })??;
        Ok(booked)
    })
}
