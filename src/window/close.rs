//! Closing a window: start the held containers again in reverse order,
//! each confirmed running (and healthy, when it has a health check) before
//! the next (`start.rs`), within the closing budget; create again one
//! removed during the window; keep what the runtime could not be asked to
//! start owed; erase the record only if it is still this window's own.
//!
//! The held services are down until their start, so nothing but Docker's
//! own work lies between two starts: the next start follows the
//! inspection that confirms the previous one running (which also says
//! whether it has a health check to wait for), after a look at the record
//! under `windows.lock` (the fence, no write); the record's rewrite for
//! the next container is made beside the previous start.

use std::time::Duration;

use crate::events::Event;
use crate::mesh_event;

use super::budget::{close_budget, Deadline, LockWait};
use super::engine::Engine;
use super::fence::{Fence, Finished};
use super::handle::OpenWindow;
use super::plan::Specs;
use super::record::WindowRecord;
use super::records::Records;
use super::shared::{self, AtClose, Bookkept};
use super::start::{HeldStart, StartFailure};

/// How a close went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CloseReport {
    /// Containers started again, in the order started.
    pub started: Vec<String>,
    /// Containers left stopped because another window of the boot still
    /// holds them: handed over to it, which starts them when it closes last.
    pub still_held: Vec<String>,
    /// Containers that would not start (each alerted), with the reason.
    pub lost: Vec<(String, String)>,
    /// Of `lost`, those that could not be started because the runtime did
    /// not answer: still owed, started as soon as it answers again (the
    /// record stays, marked owed).
    pub owed: Vec<String>,
    /// Of `started`, those removed during the window and created again from
    /// their declaration.
    pub recreated: Vec<String>,
    /// Of `started`, those with a health check that reported `healthy`.
    pub healthy: Vec<String>,
    /// Of `started`, those with a health check that did not report
    /// `healthy` within the budget (`held-unhealthy`), with the last output.
    pub unhealthy: Vec<(String, String)>,
    /// The window was taken over by another process before this one had
    /// closed it: it did nothing more to it (see `fence.rs`).
    pub lost_window: bool,
}

impl CloseReport {
    /// Whether every held container runs again (or is still held elsewhere).
    pub fn all_started(&self) -> bool {
        self.lost.is_empty()
    }
}

/// The close of one window by this process: its record, how each held
/// container is declared, and when its budget runs out.
pub(super) struct Closing {
    windows: Engine,
    record: WindowRecord,
    specs: Specs,
    deadline: Deadline,
}

impl Closing {
    /// The close of `record` by `windows`'s process, within `budget`,
    /// creating again from `specs` (else from the armed declaration) a
    /// held container that was removed during the window.
    pub(super) fn new(
        windows: &Engine,
        record: &WindowRecord,
        specs: Specs,
        budget: Duration,
    ) -> Self {
        Self::within(windows, record, specs, Deadline::closing(budget))
    }

    /// The same close, within what is left of `deadline` (a close that
    /// has spent some of its budget already).
    pub(super) fn within(
        windows: &Engine,
        record: &WindowRecord,
        specs: Specs,
        deadline: Deadline,
    ) -> Self {
        Closing {
            windows: windows.clone(),
            record: record.clone(),
            specs,
            deadline,
        }
    }

    /// Start the held containers of the record again (reverse order) and
    /// erase the record, or keep it for what is owed.
    pub(super) async fn run(self) -> CloseReport {
        let Closing {
            windows,
            record,
            specs,
            deadline,
        } = self;
        let record = &record;
        let records = &windows.records;
        let deadline = &deadline;
        // A watcher of this window left by a fire that panicked may be
        // finishing a stop: it lands before anything starts.
        windows.quitting.wait_for(&record.step, deadline).await;
        let starter = HeldStart::new(&*windows.runtime, &windows.alerts, record, deadline);
        let mut report = CloseReport::default();
        // Holds are counted across the records of a boot: each container is
        // decided on under `windows.lock`, one at a time (see `shared`).
        // The window is down while this runs, so the record's bookkeeping
        // is kept off the path between two starts: the decision on the
        // next container, and taking the last one started off the record,
        // are one locked rewrite made while Docker starts the current one.
        // The record on disk, when it is still this window: a container
        // handed to it since it opened (a lost owner's late stop, see
        // `after_stop`) is held by it and started by this close.
        let mut current = match records.get(&record.step) {
            Ok(Some(now)) if now.same_window_and_owner(record) => now,
            _ => record.clone(),
        };
        let mut held: Vec<String> = current.held_names().map(str::to_string).collect();
        held.reverse();
        // The first decision precedes every start.
        let mut next = {
            let first = held.first().cloned();
            shared::bookkeep_spawned(records, &current, None, first, deadline).await
        };
        // The last container started: taken off the record by the next
        // rewrite (kept when owed: the record owes its start).
        let mut done: Option<String> = None;
        // Whether the decision at hand was made just now (the fence of the
        // start it precedes), or beside an earlier start.
        let mut fresh = true;
        // Containers handed to this window while it closes are appended to
        // `held` (see `Finished::Handed`), so the walk is by index.
        let mut i = 0;
        loop {
            while i < held.len() {
                let name = held[i].clone();
                i += 1;
                let name = name.as_str();
                let after = held.get(i).cloned();
                let decided = match next {
                    Ok(Ok(book)) => {
                        current = book.record;
                        book.next
                    }
                    Ok(Err(e)) => {
                        // The records cannot be read, or windows.lock cannot be
                        // had: a held container must run again, so this window
                        // starts it (said once of a lock given up).
                        if !e.said_before() {
                            tracing::warn!(
                                MESH_STEP = %record.step,
                                "cannot count the holds of {name} while closing the window of {}: {e}; starting it",
                                record.step
                            );
                        }
                        None
                    }
                    Err(e) => {
                        tracing::warn!(
                            MESH_STEP = %record.step,
                            "cannot count the holds of {name} while closing the window of {}: {e}; starting it",
                            record.step
                        );
                        None
                    }
                };
                match decided {
                    Some(AtClose::HandedOver { other }) => {
                        tracing::info!(
                            MESH_STEP = %record.step,
                            MESH_CONTAINER = %name,
                            "{name} stays stopped: the window of {other} still holds it and starts it when it closes",
                        );
                        report.still_held.push(name.to_string());
                        next = shared::bookkeep_spawned(
                            records,
                            &current,
                            done.take(),
                            after,
                            deadline,
                        )
                        .await;
                        fresh = true;
                        continue;
                    }
                    Some(AtClose::Lost) => {
                        report.lost_window = true;
                        return report;
                    }
                    Some(AtClose::Start) | None => {}
                }
                // A decision made beside the previous start is checked again,
                // under `windows.lock`, right before this start (no write).
                if !fresh
                    && records
                        .fence_by(&current, &format!("starting {name}"), deadline)
                        .await
                        == Fence::Lost
                {
                    report.lost_window = true;
                    return report;
                }
                crate::fault::pause("pause-before-start", name).await;
                // Beside this start: the next decision, and the previous
                // container taken off the record.
                let book =
                    shared::bookkeep_spawned(records, &current, done.take(), after, deadline);
                let spec = windows.held_spec(name, &specs);
                // Past the deadline nothing is begun: what is left is owed,
                // alerted with what the close ran out waiting for.
                let started = if deadline.is_spent() {
                    Err(StartFailure::spent(deadline.ran_out(|| {
                        format!("the container runtime to start {name}")
                    })))
                } else {
                    starter.start(name, spec).await
                };
                next = book.await;
                fresh = false;
                if !matches!(&started, Err(f) if f.unanswered) {
                    done = Some(name.to_string());
                }
                match started {
                    Ok(said) => {
                        if said.recreated {
                            report.recreated.push(name.to_string());
                        }
                        if said.healthy {
                            report.healthy.push(name.to_string());
                        }
                        if let Some(output) = said.unhealthy {
                            report.unhealthy.push((name.to_string(), output));
                        }
                        if record.owed {
                            tracing::warn!(
                                MESH_STEP = %record.step,
                                MESH_CONTAINER = %name,
                                "{name}, owed a start since the window of {} could not close, started: the container runtime answers again",
                                record.step
                            );
                        }
                        report.started.push(name.to_string())
                    }
                    Err(failure) => {
                        // An owed container was alerted when it became owed.
                        if !(record.owed && failure.unanswered) {
                            windows
                                .alerts
                                .will_not_start_again(record, name, &failure.reason, deadline)
                                .await;
                        }
                        if failure.unanswered {
                            report.owed.push(name.to_string());
                        }
                        report.lost.push((name.to_string(), failure.reason));
                    }
                }
            }
            // The last rewrite's verdict on this window (it decided nothing).
            if let Ok(Ok(Bookkept { record: now, .. })) = next {
                current = now;
            }
            if !report.owed.is_empty() {
                // Keep what is owed: the record, narrowed to those containers
                // (and any handed to it meanwhile).
                let finish = Finish::KeepOwed {
                    owed: report.owed.clone(),
                    seen: held.clone(),
                };
                match finish.now(records, &current, deadline).await {
                    Ok(Finished::Lost) => report.lost_window = true,
                    Ok(_) => tracing::warn!(
                        MESH_STEP = %record.step,
                        "window of {} not closed: {} owed a start, made as soon as the container runtime answers",
                        record.step,
                        report.owed.join(", ")
                    ),
                    Err(LockWait::Error(e)) => tracing::error!(
                        MESH_STEP = %record.step,
                        "cannot keep the window of {} owed: {e}",
                        record.step
                    ),
                    Err(e) => finish.later(records, current, e),
                }
                return report;
            }
            let finish = Finish::Erase { seen: held.clone() };
            match finish.now(records, &current, deadline).await {
                Ok(Finished::Done) => {}
                Ok(Finished::Lost) => {
                    report.lost_window = true;
                    return report;
                }
                Ok(Finished::Handed(names)) => {
                    tracing::warn!(
                        MESH_STEP = %record.step,
                        "{} handed to the window of {} while it closed: started too",
                        names.join(", "),
                        record.step
                    );
                    let first = names.first().cloned();
                    held.extend(names);
                    next =
                        shared::bookkeep_spawned(records, &current, done.take(), first, deadline)
                            .await;
                    fresh = true;
                    continue;
                }
                Err(LockWait::Error(e)) => {
                    tracing::error!(MESH_STEP = %record.step, "cannot erase the window record of {}: {e}", record.step)
                }
                Err(e) => finish.later(records, current.clone(), e),
            }
            break;
        }
        mesh_event!(
            info,
            Event::WindowClosed,
            MESH_STEP = %record.step,
            MESH_FIRE = %record.fire_name(),
            MESH_MODULE = %record.module.as_deref().unwrap_or(""),
            "window of {} closed: started {}{}",
            record.step,
            if report.started.is_empty() { "nothing".to_string() } else { report.started.join(", ") },
            if report.lost.is_empty() { String::new() } else {
                format!("; NOT started: {}", report.lost.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", "))
            }
        );
        report
    }

    /// Close `window`, whatever its step did: on a task of its own so that
    /// cancelling the caller cannot cut it short, within the closing budget.
    pub(super) async fn open_window(windows: &Engine, window: &mut OpenWindow) -> CloseReport {
        // One budget for the whole close: waiting for a stop the watcher
        // has in flight counts against it.
        let deadline = Deadline::closing(close_budget());
        window.stop_watcher(deadline.left()).await;
        let closing = Closing::within(windows, &window.record, window.specs.clone(), deadline);
        let task = tokio::spawn(closing.run());
        match task.await {
            Ok(report) => report,
            Err(e) => {
                // Closing itself panicked: every held container is unaccounted for.
                let reason = format!("closing the window failed: {e}");
                let mut report = CloseReport::default();
                let deadline = Deadline::closing(close_budget());
                for name in window.record.held_names() {
                    windows
                        .alerts
                        .will_not_start_again(&window.record, name, &reason, &deadline)
                        .await;
                    report.lost.push((name.to_string(), reason.clone()));
                }
                // What is left on the record is handed to the adopter,
                // which closes the window again: a held container must
                // run again, alerted or not.
                windows
                    .records
                    .hand_over(&window.record.step, &windows.owner);
                report
            }
        }
    }

    /// The step of this window could not be confirmed stopped (the runtime
    /// did not answer for the whole closing budget): starting the held
    /// containers could run them beside it. Each is alerted, and the record
    /// stays, marked owed: the daemon waits for the runtime, for the step to
    /// end (within the window's bound), then starts them.
    pub(super) async fn unconfirmed(
        windows: &Engine,
        window: &mut OpenWindow,
        reason: &str,
    ) -> CloseReport {
        let deadline = Deadline::closing(close_budget());
        window.stop_watcher(deadline.left()).await;
        let record = &window.record;
        let why = format!(
            "its step container {} could not be confirmed stopped ({reason}); owed until it is",
            record.step_container
        );
        let mut report = CloseReport::default();
        for name in record.held_names() {
            windows
                .alerts
                .will_not_start_again(record, name, &why, &deadline)
                .await;
            report.lost.push((name.to_string(), why.clone()));
            report.owed.push(name.to_string());
        }
        let owed = WindowRecord {
            owed: true,
            ..record.clone()
        };
        let finish = Finish::Rewrite(owed.clone());
        match finish.now(&windows.records, record, &deadline).await {
            Ok(Finished::Lost) => report.lost_window = true,
            Ok(_) => window.record = owed,
            Err(LockWait::Error(e)) => {
                tracing::error!(MESH_STEP = %record.step, "cannot mark the window of {} owed: {e}", record.step)
            }
            Err(e) => {
                finish.later(&windows.records, record.clone(), e);
                window.record = owed;
            }
        }
        report
    }
}

/// A close's last write to its record.
enum Finish {
    /// Erase it, unless it holds containers the close has not `seen`.
    Erase { seen: Vec<String> },
    /// Narrow it to what is `owed` (and what the close has not `seen`),
    /// marked owed.
    KeepOwed {
        owed: Vec<String>,
        seen: Vec<String>,
    },
    /// Write it as this.
    Rewrite(WindowRecord),
}

impl Finish {
    /// Make the write under `windows.lock`, within `deadline`, if the
    /// record is still `current`'s window.
    async fn now(
        &self,
        records: &Records,
        current: &WindowRecord,
        deadline: &Deadline,
    ) -> Result<Finished, LockWait> {
        let _records = records.lock_by(deadline).await?;
        Ok(self.locked(records, current)?)
    }

    /// [`Self::now`] for a caller holding `windows.lock`.
    fn locked(
        &self,
        records: &Records,
        current: &WindowRecord,
    ) -> Result<Finished, crate::store::StoreError> {
        let written = match self {
            Finish::Erase { seen } => return records.erase_if_own(current, seen),
            Finish::KeepOwed { owed, seen } => records.keep_owed_if_own(current, owed, seen)?,
            Finish::Rewrite(new) => records.rewrite_if_own(current, new)?,
        };
        Ok(match written {
            Fence::Own => Finished::Done,
            Fence::Lost => Finished::Lost,
        })
    }

    /// What it does, in words.
    fn what(&self) -> &'static str {
        match self {
            Finish::Erase { .. } => "erased",
            Finish::KeepOwed { .. } | Finish::Rewrite(_) => "kept owed",
        }
    }

    /// The close could not take `windows.lock` for this write within its
    /// deadline (a stranger holds it): the held containers are started or
    /// alerted already, and the write is made as soon as the lock is free,
    /// on a task of its own. Should this process end first, the record's
    /// owner is gone and whoever takes it over finishes it. A record found
    /// then to hold containers handed to it since is kept owed for them:
    /// its adopter starts them.
    fn later(self, records: &Records, current: WindowRecord, why: LockWait) {
        tracing::warn!(
            MESH_STEP = %current.step,
            "the record of the window of {} is {} as soon as windows.lock is free: {why}",
            current.step,
            self.what()
        );
        let records = records.clone();
        tokio::spawn(async move {
            let mut failures = 0;
            loop {
                let wait = Deadline::of("finishing", super::records::RECORDS_LOCK_WAIT);
                match records.lock_by(&wait).await {
                    Ok(_records) => {
                        let done = match self.locked(&records, &current) {
                            // Only those handed to it: what this close saw
                            // is started or alerted already.
                            Ok(Finished::Handed(names)) => Finish::KeepOwed {
                                owed: Vec::new(),
                                seen: self.seen().to_vec(),
                            }
                            .locked(&records, &current)
                            .map(|_| format!("kept owed for {}, handed to it", names.join(", "))),
                            Ok(_) => Ok(self.what().to_string()),
                            Err(e) => Err(e),
                        };
                        match done {
                            Ok(what) => tracing::info!(
                                MESH_STEP = %current.step,
                                "the record of the window of {} is {what} now that windows.lock is free",
                                current.step
                            ),
                            Err(e) => tracing::error!(
                                MESH_STEP = %current.step,
                                "cannot finish the record of the window of {}: {e}",
                                current.step
                            ),
                        }
                        return;
                    }
                    // A lock that cannot be taken at all (not merely held)
                    // is tried for a while, then left said.
                    Err(LockWait::Error(e)) => {
                        failures += 1;
                        if failures >= FINISH_TRIES {
                            tracing::error!(
                                MESH_STEP = %current.step,
                                "cannot finish the record of the window of {}: {e}; given up after {FINISH_TRIES} tries",
                                current.step
                            );
                            return;
                        }
                        tokio::time::sleep(FINISH_RETRY).await;
                    }
                    Err(_) => tokio::time::sleep(FINISH_RETRY).await,
                }
            }
        });
    }

    /// The containers the close saw (those it started or alerted).
    fn seen(&self) -> &[String] {
        match self {
            Finish::Erase { seen } | Finish::KeepOwed { seen, .. } => seen,
            Finish::Rewrite(_) => &[],
        }
    }
}

/// How many times a lock that cannot be taken at all is tried for the last
/// write.
const FINISH_TRIES: u32 = 12;

/// How often the record's last write, put off because `windows.lock` was
/// held past the close's deadline, is tried again.
const FINISH_RETRY: Duration = Duration::from_secs(5);
