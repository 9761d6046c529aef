//! Maintenance windows: hold containers still while a step runs, and always
//! start them again.
//!
//! A window's life:
//!
//! 1. **Open**, under the apply lock (so no apply is in flight): refuse if
//!    another live window holds any of the same containers, inspect which of
//!    them run, write the window record **before the first stop**, release
//!    the lock, then stop the running ones in the order named. Only those
//!    that were running are held; one already stopped stays stopped.
//! 2. While open, a watcher stops again any held container someone else
//!    starts (`hold-violated`).
//! 3. **Close**, whatever the step did: start the held containers in
//!    reverse order, each confirmed running before the next, within a
//!    bounded budget ([`CLOSE_BUDGET`]). A container another live window
//!    still holds is left to that window (holds are counted across records).
//!    One that will not start is an alert (`WILL NOT START AGAIN`) and the
//!    others are still started. Then the record is erased.
//!
//! A record left by a daemon that died is [resumed](Windows::resume): the
//! step container is waited for if it still runs, then the window closes. A
//! record from another boot, or older than six hours, holds nothing: its
//! containers are started again if they were running.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use tokio::task::JoinHandle;

use crate::events::Event;
use crate::runtime::{ContainerEventKind, ContainerRuntime, RuntimeError};
use crate::schedule::clock::Clock;
use crate::store::{HeldContainer, Store, StoreError, WindowRecord};
use crate::{mesh_alert, mesh_event};

/// How long closing a window may take, all starts included.
pub const CLOSE_BUDGET: Duration = Duration::from_secs(5 * 60);

/// Attempts to start one held container before it is declared lost.
const START_ATTEMPTS: u32 = 3;

/// Pause between two start attempts of the same container.
const START_RETRY_PAUSE: Duration = Duration::from_secs(2);

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
}

impl OpenWindow {
    /// The window's record as written.
    pub fn record(&self) -> &WindowRecord {
        &self.record
    }
}

/// How a close went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CloseReport {
    /// Containers started again, in the order started.
    pub started: Vec<String>,
    /// Containers left stopped because another live window still holds them.
    pub still_held: Vec<String>,
    /// Containers that would not start (each alerted), with the reason.
    pub lost: Vec<(String, String)>,
}

impl CloseReport {
    /// Whether every held container runs again (or is still held elsewhere).
    pub fn all_started(&self) -> bool {
        self.lost.is_empty()
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

    fn owns(&self, record: &WindowRecord) -> bool {
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
    /// From another boot or too old: held nothing; containers started again.
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
        }
    }

    /// The records that hold something now (this boot, younger than six
    /// hours). An unreadable record is an error: never guess.
    pub fn live_records(&self) -> Result<Vec<WindowRecord>, StoreError> {
        let now = self.clock.now();
        Ok(self
            .store
            .windows()?
            .into_iter()
            .filter(|r| r.holds(now, &self.owner.boot_id))
            .collect())
    }

    /// Open a window: record first, then stop. See the module docs.
    pub async fn open(&self, plan: &WindowPlan) -> Result<OpenWindow, OpenError> {
        let record = {
            // Taken just to write the record: no apply is in flight while a
            // window opens, and an apply never waits behind a window.
            let _lock = self.store.lock_async().await?;
            let live = self.live_records()?;
            if let Some(other) = live.iter().find(|r| r.step == plan.step) {
                return Err(OpenError::Busy {
                    other: other.step.clone(),
                    container: plan.step.clone(),
                });
            }
            for (_, name) in &plan.holds {
                if let Some(other) = live.iter().find(|r| r.held_names().any(|n| n == name)) {
                    return Err(OpenError::Busy {
                        other: other.step.clone(),
                        container: name.clone(),
                    });
                }
            }
            let mut held = Vec::with_capacity(plan.holds.len());
            for (id, name) in &plan.holds {
                let info =
                    self.runtime
                        .inspect(name)
                        .await
                        .map_err(|source| OpenError::Inspect {
                            container: name.clone(),
                            source,
                        })?;
                held.push(HeldContainer {
                    id: id.clone(),
                    name: name.clone(),
                    was_running: info.is_some_and(|i| i.running),
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
                held,
            };
            self.store.write_window(&record)?;
            record
        };
        let held: Vec<String> = record.held_names().map(str::to_string).collect();
        mesh_event!(
            info,
            Event::WindowOpened,
            MESH_STEP = %record.step,
            MESH_MODULE = %record.module.as_deref().unwrap_or(""),
            "window of {} opened, holding {}",
            record.step,
            if held.is_empty() { "nothing (none was running)".to_string() } else { held.join(", ") }
        );
        // Watch before the first stop so that no start can slip between.
        let watcher = self.spawn_watcher(&record).await;
        let mut window = OpenWindow { record, watcher };
        for name in held {
            if let Err(source) = self.runtime.stop(&name).await {
                let closed = self.close(&mut window).await;
                return Err(OpenError::Stop {
                    container: name,
                    source,
                    closed,
                });
            }
        }
        Ok(window)
    }

    /// Close a window, whatever its step did. Runs on its own task so that
    /// cancelling the caller cannot cut it short, within [`CLOSE_BUDGET`].
    pub async fn close(&self, window: &mut OpenWindow) -> CloseReport {
        if let Some(watcher) = window.watcher.take() {
            watcher.abort();
            let _ = watcher.await;
        }
        let this = self.clone();
        let record = window.record.clone();
        let task = tokio::spawn(async move { this.close_record(&record, CLOSE_BUDGET).await });
        match task.await {
            Ok(report) => report,
            Err(e) => {
                // Closing itself panicked: every held container is unaccounted for.
                let reason = format!("closing the window failed: {e}");
                let mut report = CloseReport::default();
                for name in window.record.held_names() {
                    alert_lost(&window.record, name, &reason);
                    report.lost.push((name.to_string(), reason.clone()));
                }
                report
            }
        }
    }

    /// Start the held containers of `record` again (reverse order) and erase
    /// the record.
    async fn close_record(&self, record: &WindowRecord, budget: Duration) -> CloseReport {
        let deadline = tokio::time::Instant::now() + budget;
        let mut report = CloseReport::default();
        // Holds are counted across records: a container another live window
        // holds stays stopped until that window closes.
        let others: Vec<WindowRecord> = match self.live_records() {
            Ok(live) => live.into_iter().filter(|r| r.step != record.step).collect(),
            Err(e) => {
                tracing::warn!(
                    "cannot read other window records while closing {}: {e}",
                    record.step
                );
                Vec::new()
            }
        };
        let held: Vec<&str> = record.held_names().collect();
        for name in held.into_iter().rev() {
            if let Some(other) = others.iter().find(|r| r.held_names().any(|n| n == name)) {
                tracing::info!(
                    MESH_STEP = %record.step,
                    MESH_CONTAINER = %name,
                    "{name} stays stopped: the window of {} still holds it",
                    other.step
                );
                report.still_held.push(name.to_string());
                continue;
            }
            match self.start_confirmed(name, deadline).await {
                Ok(()) => report.started.push(name.to_string()),
                Err(reason) => {
                    alert_lost(record, name, &reason);
                    report.lost.push((name.to_string(), reason));
                }
            }
        }
        if let Err(e) = self.store.remove_window(&record.step) {
            tracing::error!(MESH_STEP = %record.step, "cannot erase the window record of {}: {e}", record.step);
        }
        mesh_event!(
            info,
            Event::WindowClosed,
            MESH_STEP = %record.step,
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

    /// Start one container, retrying briefly, confirmed running.
    async fn start_confirmed(
        &self,
        name: &str,
        deadline: tokio::time::Instant,
    ) -> Result<(), String> {
        let mut last = String::from("closing budget exhausted before the first attempt");
        for attempt in 1..=START_ATTEMPTS {
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Err(format!(
                    "closing budget of {}s exhausted: {last}",
                    CLOSE_BUDGET.as_secs()
                ));
            }
            match tokio::time::timeout(deadline - now, self.runtime.start(name)).await {
                Ok(Ok(())) => match self.runtime.inspect(name).await {
                    Ok(Some(info)) if info.running => return Ok(()),
                    Ok(Some(info)) => last = format!("it exited at once (status {})", info.status),
                    Ok(None) => return Err("the container no longer exists".to_string()),
                    Err(e) => last = e.to_string(),
                },
                Ok(Err(RuntimeError::NotFound { .. })) => {
                    return Err("the container no longer exists".to_string())
                }
                Ok(Err(e)) => last = e.to_string(),
                Err(_) => last = "the start did not answer in time".to_string(),
            }
            if attempt < START_ATTEMPTS {
                tokio::time::sleep(START_RETRY_PAUSE).await;
            }
        }
        Err(last)
    }

    /// Watch the held containers and stop again any that someone starts.
    async fn spawn_watcher(&self, record: &WindowRecord) -> Option<JoinHandle<()>> {
        let names: Vec<String> = record.held_names().map(str::to_string).collect();
        if names.is_empty() {
            return None;
        }
        let runtime = self.runtime.clone();
        let step = record.step.clone();
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
                        mesh_event!(
                            warn,
                            Event::HoldViolated,
                            MESH_STEP = %step,
                            MESH_CONTAINER = %ev.name,
                            "{} was started during the window of {}; stopping it again",
                            ev.name,
                            step
                        );
                        if let Err(e) = runtime.stop(&ev.name).await {
                            tracing::error!(MESH_STEP = %step, MESH_CONTAINER = %ev.name, "cannot stop {} again: {e}", ev.name);
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

    /// Take over every record whose owner is gone. Records of a live owner
    /// (another process mid-window) are left alone.
    pub async fn resume(&self) -> Result<Vec<Resumed>, StoreError> {
        let now = self.clock.now();
        let mut out = Vec::new();
        for record in self.store.windows()? {
            if self.owner.owns(&record) {
                continue;
            }
            if record.holds(now, &self.owner.boot_id) && record.owner_alive() {
                out.push(Resumed::OwnerAlive { step: record.step });
                continue;
            }
            out.push(self.resume_one(record, now).await);
        }
        Ok(out)
    }

    async fn resume_one(&self, record: WindowRecord, now: DateTime<Utc>) -> Resumed {
        if !record.holds(now, &self.owner.boot_id) {
            mesh_event!(
                warn,
                Event::WindowResumed,
                MESH_STEP = %record.step,
                "window record of {} from {} is from another boot or older than six hours: it holds nothing; starting its containers again",
                record.step,
                record.opened_at
            );
            let report = self.close_record(&record, CLOSE_BUDGET).await;
            return Resumed::Stale {
                step: record.step,
                report,
            };
        }
        mesh_event!(
            warn,
            Event::WindowResumed,
            MESH_STEP = %record.step,
            "resuming the window of {} left open by pid {} (opened {})",
            record.step,
            record.pid,
            record.opened_at
        );
        let waited_exit = match self.runtime.inspect(&record.step_container).await {
            Ok(Some(info)) if info.running => Some(self.wait_resumed_step(&record, now).await),
            _ => None,
        }
        .flatten();
        let report = self.close_record(&record, CLOSE_BUDGET).await;
        Resumed::Closed {
            step: record.step,
            waited_exit,
            report,
        }
    }
}

impl Windows {
    /// Wait for the step of a resumed window, but no longer than its own
    /// timeout from when the window opened (or, without one, than the six
    /// hours after which the record would hold nothing): a hung step must
    /// not keep the window shut. Past that the step is stopped.
    async fn wait_resumed_step(&self, record: &WindowRecord, now: DateTime<Utc>) -> Option<i64> {
        let bound = record
            .step_timeout_secs
            .map(Duration::from_secs)
            .unwrap_or(crate::store::WINDOW_MAX_AGE);
        let elapsed = (now - record.opened_at).to_std().unwrap_or_default();
        let left = bound.saturating_sub(elapsed);
        tracing::info!(
            MESH_STEP = %record.step,
            "step container {} still runs: waiting for it, at most {}s",
            record.step_container,
            left.as_secs()
        );
        match tokio::time::timeout(left, self.runtime.wait_exit(&record.step_container)).await {
            Ok(exit) => exit.ok(),
            Err(_) => {
                tracing::warn!(
                    MESH_STEP = %record.step,
                    "step container {} outlived its bound of {}s: stopping it",
                    record.step_container,
                    bound.as_secs()
                );
                crate::runtime::stop_run(&*self.runtime, &record.step_container).await
            }
        }
    }
}

fn alert_lost(record: &WindowRecord, name: &str, reason: &str) {
    mesh_alert!(
        MESH_STEP = %record.step,
        MESH_CONTAINER = %name,
        MESH_MODULE = %record.module.as_deref().unwrap_or(""),
        "container {name} WILL NOT START AGAIN after the window of {}: {reason}",
        record.step
    );
}
