//! Opening a window, under the apply lock (so no apply is in flight):
//! refuse if a record of this step is still on disk, or a record of another
//! boot not yet closed holds one of the same containers; inspect which of
//! them run, write the window record **before the first stop**, release the
//! lock, then stop the running ones in the order named (`stops.rs`). Only
//! those that were running are held; one already stopped stays stopped.
//! Holds are counted (`shared.rs`): a container another window of this
//! boot keeps stopped is held too but not stopped again.

use crate::events::Event;
use crate::mesh_event;
use crate::runtime::RuntimeError;
use crate::store::StoreError;

use super::close::CloseReport;
use super::engine::Engine;
use super::handle::OpenWindow;
use super::plan::WindowPlan;
use super::record::{HeldContainer, WindowRecord};
use super::records::Records;
use super::shared::{self, AtOpen};
use super::stops::{Stops, StopsEnded};
use super::watcher::HoldWatcher;

/// Why a window did not open.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Another live window holds a container of this one (or this step is
    /// already in a window): the fire is skipped.
    #[error("window of step {other} already holds {container}")]
    Busy {
        /// The step of the other window.
        other: String,
        /// The container both would hold (or the step's own id).
        container: String,
    },
    /// The record could not be written or the records read: nothing was stopped.
    #[error("window record: {0}")]
    Record(#[from] StoreError),
    /// The state of a held container could not be read: nothing was stopped.
    #[error("cannot inspect held container {container}: {source}")]
    Inspect {
        /// The container's runtime name.
        container: String,
        /// The runtime's error.
        source: RuntimeError,
    },
    /// This process lost the window while opening it (its lease lapsed:
    /// it was stopped or hung): another closes it; the step does not run.
    #[error("the window was taken over by another process while it opened")]
    Lost,
    /// A held container would not stop; the window was closed again (what
    /// had been stopped was started) and the step does not run.
    #[error("held container {container} would not stop: {source}")]
    Stop {
        /// The container's runtime name.
        container: String,
        /// The runtime's error.
        source: RuntimeError,
        /// How closing the aborted window went.
        closed: CloseReport,
    },
}

/// How many times an opening looks at the runtime and the records again
/// when the records changed between the two, before it pauses.
const OPEN_LOOKS: usize = 3;

/// The window records and the windows epoch at one moment, leases aside:
/// what an opener compares before and after it asks the runtime.
struct RecordsLook {
    records: Vec<WindowRecord>,
    epoch: u64,
}

impl RecordsLook {
    fn now(records: &Records) -> Result<RecordsLook, StoreError> {
        Ok(RecordsLook {
            records: records.scan()?.records,
            epoch: records.epoch(),
        })
    }

    /// `None` when, of the records that name `plan`'s step or one of its
    /// holds (the only ones the opening decides from, and the only ones
    /// whose close or takeover starts those holds), nothing but leases
    /// changed from `before`, and the epoch did not move; otherwise the
    /// window that changed (or the plan's own step, for the epoch) and a
    /// container of `plan` it may concern.
    fn differs_from(&self, before: &RecordsLook, plan: &WindowPlan) -> Option<(String, String)> {
        let first_hold = || {
            plan.holds
                .first()
                .map(|(_, n)| n.clone())
                .unwrap_or_default()
        };
        if self.epoch != before.epoch {
            return Some((plan.step.clone(), first_hold()));
        }
        let concerns = |r: &&WindowRecord| {
            r.step == plan.step
                || r.held_names()
                    .any(|n| plan.holds.iter().any(|(_, h)| h == n))
        };
        let leases_aside = |r: &WindowRecord| WindowRecord {
            lease_since_boot_secs: None,
            ..r.clone()
        };
        let relevant = |records: &[WindowRecord]| -> Vec<WindowRecord> {
            records.iter().filter(concerns).map(leases_aside).collect()
        };
        let mut a = relevant(&self.records);
        let mut b = relevant(&before.records);
        a.sort_by(|x, y| x.step.cmp(&y.step));
        b.sort_by(|x, y| x.step.cmp(&y.step));
        if a == b {
            return None;
        }
        let other = a
            .iter()
            .find(|r| !b.contains(r))
            .or_else(|| b.iter().find(|r| !a.contains(r)))
            .map(|r| r.step.clone())
            .unwrap_or_else(|| plan.step.clone());
        Some((other, first_hold()))
    }
}

/// What one look at the records, under the locks, decided.
enum Opened {
    /// The record is written: the window is open. `shared`: its holds
    /// another window of this boot keeps stopped (not stopped again).
    Recorded {
        record: WindowRecord,
        shared: Vec<String>,
    },
    /// Nothing written: another window's close is starting `container`
    /// again (or the records kept changing under this look, concerning
    /// `other`'s window): look again later.
    Wait { other: String, container: String },
}

/// One opening of a window over a plan, by this process.
pub(super) struct Opening<'a> {
    windows: &'a Engine,
    plan: &'a WindowPlan,
}

impl<'a> Opening<'a> {
    /// An opening of a window over `plan` by `windows`'s process.
    pub(super) fn new(windows: &'a Engine, plan: &'a WindowPlan) -> Self {
        Opening { windows, plan }
    }

    /// Open the window: record first, then stop. See the module docs.
    pub(super) async fn open(self) -> Result<OpenWindow, OpenError> {
        let (windows, plan) = (self.windows, self.plan);
        let waiting_since = tokio::time::Instant::now();
        let (record, shared) = loop {
            match self.record().await? {
                Opened::Recorded { record, shared } => break (record, shared),
                Opened::Wait { other, container } => {
                    // Another window's close is starting a container of
                    // this one again: the window opens once that start is
                    // done, and stops it again.
                    if waiting_since.elapsed() >= shared::starting_wait() {
                        return Err(OpenError::Busy { other, container });
                    }
                    shared::pause_shared().await;
                }
            }
        };
        // From here on this process renews its lease on the window.
        windows.renewer.start();
        let held: Vec<String> = record.held_names().map(str::to_string).collect();
        mesh_event!(
            info,
            Event::WindowOpened,
            MESH_STEP = %record.step,
            MESH_FIRE = %record.fire_name(),
            MESH_MODULE = %record.module.as_deref().unwrap_or(""),
            "window of {} opened, holding {}{}",
            record.step,
            if held.is_empty() { "nothing (none was running)".to_string() } else { held.join(", ") },
            if shared.is_empty() { String::new() } else {
                format!("; shared with another window, not stopped again: {}", shared.join(", "))
            }
        );
        // Watch before the first stop so that no start can slip between.
        let watcher = HoldWatcher::spawn(windows, &record).await;
        let mut window = OpenWindow {
            record,
            watcher,
            specs: plan.hold_specs.clone(),
            quitting: windows.quitting.clone(),
        };
        match Stops::new(windows, &mut window).stop(held, &shared).await {
            Ok(()) => Ok(window),
            // Taken over while opening (this process was stopped past its
            // lease): the taker closes the window.
            Err(StopsEnded::Lost) => Err(OpenError::Lost),
            Err(StopsEnded::Failed {
                container,
                source,
                closed,
            }) => Err(OpenError::Stop {
                container,
                source,
                closed: *closed,
            }),
        }
    }

    /// Under the apply lock and `windows.lock`: refuse, or write the
    /// record of a window over the plan and say which of its holds are
    /// shared ([`Opened::Recorded`]). [`Opened::Wait`] when another
    /// window's close is starting a container of it again: nothing
    /// written, look again later.
    ///
    /// Whether each hold of its own runs is asked of the runtime before
    /// `windows.lock` is taken, so that no runtime request waits with it
    /// held. Under the lock, the records (leases aside) and the windows
    /// epoch must be as they were before the runtime was asked: then no
    /// window closed, opened or handed a container over, and no late stop
    /// was undone meanwhile (the apply lock keeps applies and openings
    /// out). Otherwise it looks again, a few times, and then later.
    async fn record(&self) -> Result<Opened, OpenError> {
        let (windows, plan) = (self.windows, self.plan);
        // Taken just to write the record: no apply is in flight while a
        // window opens, and an apply never waits behind a window.
        let _lock = windows.store.lock_async().await?;
        let mut changed = (plan.step.clone(), String::new());
        for _ in 0..OPEN_LOOKS {
            // Records are replaced atomically: read without the lock.
            let before = RecordsLook::now(&windows.records)?;
            let mut running = std::collections::HashMap::new();
            if let Ok(seen) = shared::holds_at_open(&windows.owner.boot_id, plan, &before.records) {
                for ((_, name), at) in plan.holds.iter().zip(seen) {
                    if at == AtOpen::Own {
                        let info = windows.runtime.inspect(name).await.map_err(|source| {
                            OpenError::Inspect {
                                container: name.clone(),
                                source,
                            }
                        })?;
                        running.insert(name.clone(), info.is_some_and(|i| i.running));
                    }
                }
            }
            // And no dead owner's record is being taken over meanwhile.
            let _records = windows.records.lock_async().await?;
            crate::fault::pause("pause-in-records-lock", &plan.step).await;
            // Every record counts here, live or past its bound, of this
            // boot or another: one not yet closed (its owner died, it is
            // being taken over, it is from before a reboot and not closed
            // yet) still owes its containers a start. A file that cannot
            // be read is moved aside first (an alert).
            let scan = windows.records.scan()?;
            windows.records.set_aside_locked(&scan.unreadable);
            let pending = scan.records;
            if let Some(other) = pending.iter().find(|r| r.step == plan.step) {
                return Err(OpenError::Busy {
                    other: other.step.clone(),
                    container: plan.step.clone(),
                });
            }
            // Holds are counted (see `shared`): a container another window
            // of this boot keeps stopped is shared, never stopped twice.
            let seen = shared::holds_at_open(&windows.owner.boot_id, plan, &pending)
                .map_err(|(other, container)| OpenError::Busy { other, container })?;
            let now = RecordsLook {
                records: pending,
                epoch: windows.records.epoch(),
            };
            if let Some(differs) = now.differs_from(&before, plan) {
                changed = differs;
                continue;
            }
            let mut held = Vec::with_capacity(plan.holds.len());
            let mut shared = Vec::new();
            for ((id, name), at) in plan.holds.iter().zip(seen) {
                let was_running = match at {
                    AtOpen::Starting { other } => {
                        return Ok(Opened::Wait {
                            other,
                            container: name.clone(),
                        })
                    }
                    AtOpen::Shared => {
                        shared.push(name.clone());
                        true
                    }
                    // Unchanged records: it was decided Own before, and asked.
                    AtOpen::Own => running.get(name).copied().unwrap_or(false),
                };
                held.push(HeldContainer {
                    id: id.clone(),
                    name: name.clone(),
                    was_running,
                    starting: false,
                });
            }
            let record = WindowRecord {
                step: plan.step.clone(),
                module: plan.module.clone(),
                fire_time: plan.fire_time,
                opened_at: windows.clock.now(),
                boot_id: windows.owner.boot_id.clone(),
                pid: windows.owner.pid,
                pid_start_time: windows.owner.pid_start_time,
                step_container: plan.step_container.clone(),
                step_timeout_secs: plan.step_timeout.map(|t| t.as_secs()),
                opened_since_boot_secs: windows.clock.since_boot().map(|d| d.as_secs()),
                lease_since_boot_secs: windows.clock.since_boot().map(|d| d.as_secs()),
                owed: false,
                held,
            };
            windows.records.write(&record)?;
            return Ok(Opened::Recorded { record, shared });
        }
        // The records kept changing under this opener: another window is
        // closing or being taken over. Look again after a pause.
        let (other, container) = changed;
        Ok(Opened::Wait { other, container })
    }
}
