//! Maintenance windows: hold containers still while a step runs, and always
//! start them again.
//!
//! A window's life:
//!
//! 1. **Open**, under the apply lock (so no apply is in flight): refuse if
//!    a record of this step is still on disk, or a record of another boot
//!    not yet closed holds one of the same containers; inspect which of
//!    them run, write the window record **before the first stop**, release
//!    the lock, then stop the running ones in the order named. Only those
//!    that were running are held; one already stopped stays stopped. Holds
//!    are counted (see `window/shared.rs`): a container another window
//!    of this boot keeps stopped is held too but not stopped again.
//! 2. While open, a watcher stops again any held container someone else
//!    starts (`hold-violated`).
//! 3. **Close**, whatever the step did: start the held containers in
//!    reverse order, each confirmed running before the next, within a
//!    bounded budget ([`CLOSE_BUDGET`]). A container another window of the
//!    boot still holds is handed over to it, decided under `windows.lock`:
//!    the last window to close starts it.
//!    One that will not start is an alert (`WILL NOT START AGAIN`) and the
//!    others are still started. While the container runtime does not
//!    answer, starts are retried with backoff for the whole budget; what is
//!    still not started then is alerted and **owed**: the record stays,
//!    narrowed to those containers and marked owed, and the daemon starts
//!    them as soon as the runtime answers again. Otherwise the record is
//!    erased.
//!
//! A record whose owner died is [resumed](Windows::resume) (`takeover`: by the next
//! daemon at start-up, by a running daemon within seconds of the owner's
//! death, or by the next local command): it is first taken over (rewritten
//! with the new owner, under the records lock, so only one process closes
//! it), the step container is waited for if it still runs, within the
//! window's bound, then the window closes. A window's bound is its step's
//! timeout plus the closing budget (six hours without a timeout), measured
//! on the time since boot, which no wall-clock step moves; a window whose
//! step still runs is never released by age alone. A record from another
//! boot holds nothing: its containers are started again if they were
//! running.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use tokio::task::JoinHandle;

use crate::events::Event;
use crate::runtime::{ContainerEventKind, ContainerRuntime, RuntimeError};
use crate::schedule::clock::Clock;
use crate::store::{HeldContainer, Moment, Store, StoreError, WindowRecord};
use crate::{mesh_alert, mesh_event};

mod close;
#[cfg(test)]
mod close_tests;
mod fence;
mod shared;
mod stops;
mod superseded;
mod takeover;

pub(crate) use fence::Fence;

/// How the records on disk see a container a window is about to hold.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AtOpen {
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

/// How long closing a window may take, all starts included.
pub const CLOSE_BUDGET: Duration = crate::store::CLOSE_BUDGET;

/// The budget every close spends (and a fire confirming its step stopped):
/// [`CLOSE_BUDGET`], shortened only by a node test in a debug build
/// ([`crate::fault::close_budget`]).
pub fn close_budget() -> Duration {
    crate::fault::close_budget(CLOSE_BUDGET)
}

/// The longest pause between two looks for a runtime that does not answer,
/// while starts are owed.
const OWED_BACKOFF_MAX: Duration = Duration::from_secs(30);

/// What a window will hold, in stop order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowPlan {
    /// The step's resource id.
    pub step: String,
    /// The step's module.
    pub module: Option<String>,
    /// The due time being fired.
    pub fire_time: DateTime<Utc>,
    /// The runtime name of the step's container.
    pub step_container: String,
    /// The step's timeout, recorded so a resumed window still enforces it.
    pub step_timeout: Option<Duration>,
    /// `(resource id, runtime name)` of each container to hold, in order.
    pub holds: Vec<(String, String)>,
    /// How each held container is created (by runtime name): one removed
    /// during the window is created again from it at the close.
    pub hold_specs: std::collections::BTreeMap<String, Arc<crate::runtime::ContainerSpec>>,
}

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

/// An open window: its record and the watcher enforcing its holds.
#[derive(Debug)]
pub struct OpenWindow {
    record: WindowRecord,
    watcher: Option<JoinHandle<()>>,
    /// See [`WindowPlan::hold_specs`]; none for a resumed window.
    specs: std::collections::BTreeMap<String, Arc<crate::runtime::ContainerSpec>>,
}

impl OpenWindow {
    /// The window's record as written.
    pub fn record(&self) -> &WindowRecord {
        &self.record
    }
}

/// A window dropped without being closed — its fire panicked — stops
/// enforcing its holds: whoever closes it next (the adopter) starts the
/// held containers, which its watcher would otherwise stop again as a
/// violation.
impl Drop for OpenWindow {
    fn drop(&mut self) {
        if let Some(watcher) = self.watcher.take() {
            watcher.abort();
        }
    }
}

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
    /// closed it: it did nothing more to it (see `Windows::fence`).
    pub lost_window: bool,
}

impl CloseReport {
    /// Whether every held container runs again (or is still held elsewhere).
    pub fn all_started(&self) -> bool {
        self.lost.is_empty()
    }
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
    fn now(store: &crate::store::Store) -> Result<RecordsLook, StoreError> {
        Ok(RecordsLook {
            records: store.scan_windows()?.records,
            epoch: store.windows_epoch(),
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

/// The process's identity as window owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// `/proc/sys/kernel/random/boot_id`.
    pub boot_id: String,
    /// This process's pid.
    pub pid: u32,
    /// Its start time, to tell it from a recycled pid.
    pub pid_start_time: u64,
}

impl Owner {
    /// The current process.
    pub fn current() -> Result<Self, StoreError> {
        let pid = std::process::id();
        Ok(Owner {
            boot_id: crate::store::boot_id()?,
            pid,
            pid_start_time: crate::store::process_start_time(pid)?,
        })
    }

    /// Whether `record` was written by this process.
    pub fn owns(&self, record: &WindowRecord) -> bool {
        record.boot_id == self.boot_id
            && record.pid == self.pid
            && record.pid_start_time == self.pid_start_time
    }
}

/// What resuming one leftover record did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resumed {
    /// Its owner still runs (another process's window): left alone.
    OwnerAlive {
        /// The step of that window.
        step: String,
    },
    /// A window of this boot whose owner died: step waited for, closed.
    Closed {
        /// The step.
        step: String,
        /// The step container's exit code, when it was still running.
        waited_exit: Option<i64>,
        /// How the close went.
        report: CloseReport,
    },
    /// It could not be taken over (its record could not be read or
    /// written): said, and left for the next look.
    Failed {
        /// The step.
        step: String,
        /// Why.
        error: String,
    },
    /// From another boot: held nothing; containers started again.
    Stale {
        /// The step.
        step: String,
        /// How restarting its containers went.
        report: CloseReport,
    },
}

/// The window engine of one process.
#[derive(Debug, Clone)]
pub struct Windows {
    store: Store,
    runtime: Arc<dyn ContainerRuntime>,
    clock: Arc<dyn Clock>,
    owner: Owner,
    /// Turns true when the process is stopping: a taken-over window's step
    /// is then stopped rather than waited for, so its window still closes.
    stopping: Option<tokio::sync::watch::Receiver<bool>>,
    /// The spec of every container the armed declaration's steps hold, by
    /// name ([`Windows::know_held_specs`]).
    known_specs: Arc<
        std::sync::RwLock<std::collections::BTreeMap<String, Arc<crate::runtime::ContainerSpec>>>,
    >,
    /// Whether the lease renewer of this engine runs
    /// ([`Windows::renew_leases`]).
    renewing: Arc<std::sync::atomic::AtomicBool>,
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
            store,
            runtime,
            clock,
            owner,
            stopping: None,
            known_specs: Arc::default(),
            renewing: Arc::default(),
        }
    }

    /// Remember how each container held by a declared step is declared
    /// (replacing what was known; the scheduler calls it whenever it arms
    /// its steps): a window closed without its opener's
    /// plan at hand — resumed at start-up, taken over from a dead owner,
    /// owed starts — still creates again a held container someone removed
    /// during it, rather than reporting it lost.
    pub fn know_held_specs(
        &self,
        specs: std::collections::BTreeMap<String, Arc<crate::runtime::ContainerSpec>>,
    ) {
        *self.known_specs.write().unwrap_or_else(|e| e.into_inner()) = specs;
    }

    /// How `name` is declared, from the opener's plan or else from the
    /// armed declaration.
    fn held_spec(
        &self,
        name: &str,
        specs: &std::collections::BTreeMap<String, Arc<crate::runtime::ContainerSpec>>,
    ) -> Option<Arc<crate::runtime::ContainerSpec>> {
        specs.get(name).cloned().or_else(|| {
            self.known_specs
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .get(name)
                .cloned()
        })
    }

    /// The same engine, told by `stopping` turning true that the process is
    /// stopping (the daemon's SIGTERM): a window it took over then stops
    /// its step and closes instead of waiting for the step to end, as the
    /// daemon's own fires do.
    pub fn stopping_on(mut self, stopping: tokio::sync::watch::Receiver<bool>) -> Self {
        self.stopping = Some(stopping);
        self
    }

    /// Resolves once the process is stopping; never without a signal.
    async fn until_stopping(&self) {
        match self.stopping.clone() {
            Some(mut rx) => {
                let _ = rx.wait_for(|s| *s).await;
            }
            None => std::future::pending().await,
        }
    }

    /// The store the records live in.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// This process as window owner.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// Now, as records are measured.
    pub fn moment(&self) -> Moment {
        Moment {
            wall: self.clock.now(),
            boot_id: self.owner.boot_id.clone(),
            since_boot: self.clock.since_boot(),
        }
    }

    /// The records that hold something now: of this boot, and within their
    /// bound or with their owner alive. A file that cannot be read as a
    /// record is left out: it is moved aside, with an alert, by whoever
    /// next holds `windows.lock` ([`Windows::set_aside_unreadable`]).
    pub fn live_records(&self) -> Result<Vec<WindowRecord>, StoreError> {
        let at = self.moment();
        Ok(self
            .store
            .scan_windows()?
            .records
            .into_iter()
            .filter(|r| r.holds_at(&at))
            .collect())
    }

    /// Open a window: record first, then stop. See the module docs.
    pub async fn open(&self, plan: &WindowPlan) -> Result<OpenWindow, OpenError> {
        let waiting_since = tokio::time::Instant::now();
        let (record, shared) = loop {
            match self.open_record(plan).await? {
                Ok(opened) => break opened,
                Err((other, container)) => {
                    // Another window's close is starting a container of
                    // this one again: the window opens once that start is
                    // done, and stops it again.
                    if waiting_since.elapsed() >= Self::starting_wait() {
                        return Err(OpenError::Busy { other, container });
                    }
                    Self::pause_shared().await;
                }
            }
        };
        // From here on this process renews its lease on the window.
        self.renew_leases();
        let held: Vec<String> = record.held_names().map(str::to_string).collect();
        mesh_event!(
            info,
            Event::WindowOpened,
            MESH_STEP = %record.step,
            MESH_FIRE = %crate::schedule::output::fire_name(&record.step, record.fire_time),
            MESH_MODULE = %record.module.as_deref().unwrap_or(""),
            "window of {} opened, holding {}{}",
            record.step,
            if held.is_empty() { "nothing (none was running)".to_string() } else { held.join(", ") },
            if shared.is_empty() { String::new() } else {
                format!("; shared with another window, not stopped again: {}", shared.join(", "))
            }
        );
        // Watch before the first stop so that no start can slip between.
        let watcher = self.spawn_watcher(&record).await;
        let mut window = OpenWindow {
            record,
            watcher,
            specs: plan.hold_specs.clone(),
        };
        self.stop_held(&mut window, held, &shared).await?;
        Ok(window)
    }

    /// Under the apply lock and `windows.lock`: refuse, or write the
    /// record of a window over `plan` and say which of its holds are
    /// shared. `Ok(Err((other, container)))` when another window's close
    /// is starting `container` again: nothing written, look again later.
    ///
    /// Whether each hold of its own runs is asked of the runtime before
    /// `windows.lock` is taken, so that no runtime request waits with it
    /// held. Under the lock, the records (leases aside) and the windows
    /// epoch must be as they were before the runtime was asked: then no
    /// window closed, opened or handed a container over, and no late stop
    /// was undone meanwhile (the apply lock keeps applies and openings
    /// out). Otherwise it looks again, a few times, and then later.
    #[allow(clippy::type_complexity)]
    async fn open_record(
        &self,
        plan: &WindowPlan,
    ) -> Result<Result<(WindowRecord, Vec<String>), (String, String)>, OpenError> {
        // Taken just to write the record: no apply is in flight while a
        // window opens, and an apply never waits behind a window.
        let _lock = self.store.lock_async().await?;
        let mut changed = (plan.step.clone(), String::new());
        for _ in 0..OPEN_LOOKS {
            // Records are replaced atomically: read without the lock.
            let before = RecordsLook::now(&self.store)?;
            let mut running = std::collections::HashMap::new();
            if let Ok(seen) = self.holds_at_open(plan, &before.records) {
                for ((_, name), at) in plan.holds.iter().zip(seen) {
                    if at == AtOpen::Own {
                        let info = self.runtime.inspect(name).await.map_err(|source| {
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
            let _records = self.store.records_lock_async().await?;
            crate::fault::pause("pause-in-records-lock", &plan.step).await;
            // Every record counts here, live or past its bound, of this
            // boot or another: one not yet closed (its owner died, it is
            // being taken over, it is from before a reboot and not closed
            // yet) still owes its containers a start. A file that cannot
            // be read is moved aside first (an alert).
            let scan = self.store.scan_windows()?;
            self.set_aside_locked(&scan.unreadable);
            let pending = scan.records;
            if let Some(other) = pending.iter().find(|r| r.step == plan.step) {
                return Err(OpenError::Busy {
                    other: other.step.clone(),
                    container: plan.step.clone(),
                });
            }
            // Holds are counted (see `shared`): a container another window
            // of this boot keeps stopped is shared, never stopped twice.
            let seen = self
                .holds_at_open(plan, &pending)
                .map_err(|(other, container)| OpenError::Busy { other, container })?;
            let now = RecordsLook {
                records: pending,
                epoch: self.store.windows_epoch(),
            };
            if let Some(differs) = now.differs_from(&before, plan) {
                changed = differs;
                continue;
            }
            let mut held = Vec::with_capacity(plan.holds.len());
            let mut shared = Vec::new();
            for ((id, name), at) in plan.holds.iter().zip(seen) {
                let was_running = match at {
                    AtOpen::Starting { other } => return Ok(Err((other, name.clone()))),
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
                opened_at: self.clock.now(),
                boot_id: self.owner.boot_id.clone(),
                pid: self.owner.pid,
                pid_start_time: self.owner.pid_start_time,
                step_container: plan.step_container.clone(),
                step_timeout_secs: plan.step_timeout.map(|t| t.as_secs()),
                opened_since_boot_secs: self.clock.since_boot().map(|d| d.as_secs()),
                lease_since_boot_secs: self.clock.since_boot().map(|d| d.as_secs()),
                owed: false,
                held,
            };
            self.store.write_window(&record)?;
            return Ok(Ok((record, shared)));
        }
        // The records kept changing under this opener: another window is
        // closing or being taken over. Look again after a pause.
        Ok(Err(changed))
    }

    /// Close a window, whatever its step did. Runs on its own task so that
    /// cancelling the caller cannot cut it short, within [`CLOSE_BUDGET`].
    pub async fn close(&self, window: &mut OpenWindow) -> CloseReport {
        self.stop_watcher(window).await;
        let this = self.clone();
        let record = window.record.clone();
        let specs = window.specs.clone();
        let task = tokio::spawn(async move {
            this.close_record_with(&record, close_budget(), &specs)
                .await
        });
        match task.await {
            Ok(report) => report,
            Err(e) => {
                // Closing itself panicked: every held container is unaccounted for.
                let reason = format!("closing the window failed: {e}");
                let mut report = CloseReport::default();
                for name in window.record.held_names() {
                    self.alert_lost(&window.record, name, &reason);
                    report.lost.push((name.to_string(), reason.clone()));
                }
                report
            }
        }
    }

    /// The step of this window could not be confirmed stopped (the runtime
    /// did not answer for the whole closing budget): starting the held
    /// containers could run them beside it. Each is alerted, and the record
    /// stays, marked owed: the daemon waits for the runtime, for the step to
    /// end (within the window's bound), then starts them.
    pub async fn close_unconfirmed(&self, window: &mut OpenWindow, reason: &str) -> CloseReport {
        self.stop_watcher(window).await;
        let record = &window.record;
        let why = format!(
            "its step container {} could not be confirmed stopped ({reason}); owed until it is",
            record.step_container
        );
        let mut report = CloseReport::default();
        for name in record.held_names() {
            self.alert_lost(record, name, &why);
            report.lost.push((name.to_string(), why.clone()));
            report.owed.push(name.to_string());
        }
        let owed = WindowRecord {
            owed: true,
            ..record.clone()
        };
        match self.rewrite_if_own(record, &owed).await {
            Ok(Fence::Own) => window.record = owed,
            Ok(Fence::Lost) => report.lost_window = true,
            Err(e) => {
                tracing::error!(MESH_STEP = %record.step, "cannot mark the window of {} owed: {e}", record.step)
            }
        }
        report
    }

    async fn stop_watcher(&self, window: &mut OpenWindow) {
        if let Some(watcher) = window.watcher.take() {
            watcher.abort();
            let _ = watcher.await;
        }
    }

    /// Watch the held containers and stop again any that someone starts.
    async fn spawn_watcher(&self, record: &WindowRecord) -> Option<JoinHandle<()>> {
        let names: Vec<String> = record.held_names().map(str::to_string).collect();
        if names.is_empty() {
            return None;
        }
        let runtime = self.runtime.clone();
        let step = record.step.clone();
        let this = self.clone();
        let held = record.clone();
        let mut stream = match runtime.events(&names).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(MESH_STEP = %step, "cannot watch held containers for starts: {e}");
                return None;
            }
        };
        Some(tokio::spawn(async move {
            loop {
                match stream.next().await {
                    Some(Ok(ev))
                        if ev.kind == ContainerEventKind::Start && names.contains(&ev.name) =>
                    {
                        // Started by whoever took the window over: this
                        // process has lost it and stops watching.
                        if this
                            .fence(&held, &format!("stopping {} again", ev.name))
                            .await
                            == Fence::Lost
                        {
                            return;
                        }
                        mesh_event!(
                            warn,
                            Event::HoldViolated,
                            MESH_STEP = %step,
                            MESH_CONTAINER = %ev.name,
                            "{} was started during the window of {}; stopping it again",
                            ev.name,
                            step
                        );
                        match runtime.stop(&ev.name).await {
                            Ok(()) => {
                                if this.after_stop(&held, &ev.name).await == Fence::Lost {
                                    return;
                                }
                            }
                            Err(e) => {
                                tracing::error!(MESH_STEP = %step, MESH_CONTAINER = %ev.name, "cannot stop {} again: {e}", ev.name);
                            }
                        }
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => {
                        tracing::warn!(MESH_STEP = %step, "event stream error: {e}; watching again");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        match runtime.events(&names).await {
                            Ok(s) => stream = s,
                            Err(e) => tracing::warn!(MESH_STEP = %step, "cannot watch again: {e}"),
                        }
                    }
                    None => {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        if let Ok(s) = runtime.events(&names).await {
                            stream = s;
                        }
                    }
                }
            }
        }))
    }
}

impl Windows {
    /// A held container that will not start again: the alert, in the
    /// journal and in the record `status` reads ([`super::alerts`]).
    fn alert_lost(&self, record: &WindowRecord, name: &str, reason: &str) {
        mesh_alert!(
            MESH_STEP = %record.step,
            MESH_CONTAINER = %name,
            MESH_MODULE = %record.module.as_deref().unwrap_or(""),
            "container {name} WILL NOT START AGAIN after the window of {}: {reason}",
            record.step
        );
        self.record_alert(
            crate::events::Event::WillNotStartAgain,
            &record.step,
            name,
            format!(
                "container {name} WILL NOT START AGAIN after the window of {}: {reason}",
                record.step
            ),
        );
    }

    /// Record an alert for `status` (beside its journal entry).
    fn record_alert(
        &self,
        event: crate::events::Event,
        step: &str,
        container: &str,
        message: String,
    ) {
        super::alerts::record(
            &self.store,
            super::alerts::Alert {
                event: event.name().to_string(),
                at: chrono::Utc::now(),
                step: Some(step.to_string()),
                container: Some(container.to_string()),
                message,
            },
        );
    }
}
