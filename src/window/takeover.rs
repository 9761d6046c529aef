//! Taking over windows whose owner is gone: by the next daemon at
//! start-up, by a running daemon's adopter within seconds of the owner's
//! death ([`crate::window::adopt`]), by the next local command. The
//! record is first rewritten as the taker's (under the records lock, so
//! only one process closes it), what the dead owner left in flight is
//! settled, a step still running is waited for within the window's bound,
//! then the window closes.

use std::time::Duration;

use crate::events::Event;
use crate::mesh_event;
use crate::store::StoreError;

use super::budget::{close_budget, Deadline};
use super::close::{CloseReport, Closing};
use super::engine::Engine;
use super::handle::OpenWindow;
use super::record::{Moment, WindowRecord, LEASE_LAPSE, WINDOW_MAX_AGE};

/// The longest pause between two looks for a runtime that does not answer,
/// while starts are owed.
const OWED_BACKOFF_MAX: Duration = Duration::from_secs(30);

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

/// A record this process has just taken over.
struct Claimed {
    /// The record as rewritten, this process's.
    record: WindowRecord,
    /// It was of another boot: it held nothing.
    stale: bool,
}

/// Taking windows over from their owners: what this process does to a
/// record it was not the one to open, or that it still owes starts.
#[derive(Debug, Clone)]
pub(super) struct Takeover {
    windows: Engine,
}

impl Takeover {
    /// Takeovers by `windows`'s process.
    pub(super) fn new(windows: &Engine) -> Self {
        Takeover {
            windows: windows.clone(),
        }
    }

    /// A fire of `step` in this process ended without closing its window
    /// (it panicked): mark the record, if this process still has one, owed,
    /// so that the adopter ([`super::adopt`]) waits for the step
    /// container and closes it.
    pub(super) fn hand_over(&self, step: &str) {
        let w = &self.windows;
        w.records.hand_over(step, &w.owner);
    }

    /// Take over every record whose owner is gone (or whose lease lapsed)
    /// and close it, each on its own task: one long step does not delay
    /// another window's close, and an error on one record does not stop
    /// the others (it is returned as [`Resumed::Failed`]). A file that is
    /// not a readable record is first moved aside, with an alert. Records
    /// of a live owner (another process mid-window, a daemon keeping what
    /// is owed) are left alone.
    pub(super) async fn resume(&self) -> Result<Vec<Resumed>, StoreError> {
        let w = &self.windows;
        w.records.set_aside_unreadable().await?;
        let mut tasks = tokio::task::JoinSet::new();
        for record in w.records.scan()?.records {
            if w.owner.owns(&record) {
                continue;
            }
            let this = self.clone();
            tasks.spawn(async move {
                let step = record.step;
                match this.claim(&step).await {
                    Ok(Some(claimed)) => this.resume_one(claimed).await,
                    Ok(None) => Resumed::OwnerAlive { step },
                    Err(e) => {
                        tracing::error!(MESH_STEP = %step, "cannot take over the window of {step}: {e}");
                        Resumed::Failed {
                            step,
                            error: e.to_string(),
                        }
                    }
                }
            });
        }
        let mut out = Vec::new();
        while let Some(done) = tasks.join_next().await {
            match done {
                Ok(resumed) => out.push(resumed),
                Err(e) => tracing::error!("resuming a window failed: {e}"),
            }
        }
        Ok(out)
    }

    /// Take over the record of `step` and close it: the record of a dead
    /// (or lapsed) owner, or one of this process's own that is owed (then
    /// the runtime is first waited for, without bound, while it does not
    /// answer). `None` when there is nothing to take over: the record is
    /// gone, its owner lives and renews its lease, or it is this process's
    /// own and owes nothing.
    pub(super) async fn adopt(&self, step: &str) -> Result<Option<Resumed>, StoreError> {
        let Some(claimed) = self.claim(step).await? else {
            return Ok(None);
        };
        if claimed.record.owed && !self.wait_for_runtime(&claimed.record).await {
            // Stopping while the runtime is away: the record stays owed,
            // for the next daemon or local command.
            return Ok(None);
        }
        Ok(Some(self.resume_one(claimed).await))
    }

    /// Rewrite the record of `step` as this process's, under the records
    /// lock, when its owner is gone, its lease has lapsed, or it is from
    /// another boot (see [`Takeover::adopt`]): every record is claimed before
    /// anything is done to it, so that one process only acts on it.
    async fn claim(&self, step: &str) -> Result<Option<Claimed>, StoreError> {
        let w = &self.windows;
        let _records = w.records.lock_async().await?;
        let Some(record) = w.records.get(step)? else {
            return Ok(None);
        };
        if w.owner.owns(&record) {
            return Ok(record.owed.then_some(Claimed {
                record,
                stale: false,
            }));
        }
        let at = w.moment();
        let stale = record.boot_id != w.owner.boot_id;
        let why = if stale {
            format!("pid {} of another boot", record.pid)
        } else if !record.owner_alive() {
            format!("pid {}, which is gone", record.pid)
        } else if record.lease_lapsed(&at, w.records.beats().last(&record)) {
            // Alive: a stop it passed its check for may still land, and
            // it may die before it undoes it.
            w.restorer.watch_superseded(record.clone());
            format!(
                "pid {}, which has not renewed its lease for {}s (stopped or hung)",
                record.pid,
                LEASE_LAPSE.as_secs()
            )
        } else {
            return Ok(None);
        };
        let now = at.since_boot.map(|d| d.as_secs());
        let claimed = WindowRecord {
            boot_id: w.owner.boot_id.clone(),
            pid: w.owner.pid,
            pid_start_time: w.owner.pid_start_time,
            lease_since_boot_secs: now,
            // A record of another boot is measured from now on this one.
            opened_since_boot_secs: if stale {
                now
            } else {
                record.opened_since_boot_secs
            },
            ..record.clone()
        };
        w.records.write(&claimed)?;
        w.renewer.start();
        mesh_event!(
            warn,
            Event::WindowTakenOver,
            MESH_STEP = %record.step,
            "took over the window of {} from {why}",
            record.step
        );
        Ok(Some(Claimed {
            record: claimed,
            stale,
        }))
    }

    /// Wait until the runtime answers (an inspect of the step container),
    /// with backoff: what a window owes is started as soon as it does.
    /// `false` when the process began stopping first.
    async fn wait_for_runtime(&self, record: &WindowRecord) -> bool {
        let mut backoff = Duration::from_secs(1);
        let mut said = false;
        loop {
            match self.windows.runtime.inspect(&record.step_container).await {
                Err(e) if e.is_transient() => {
                    if !said {
                        tracing::warn!(
                            MESH_STEP = %record.step,
                            "the window of {} owes {} a start; waiting for the container runtime: {e}",
                            record.step,
                            record.held_names().collect::<Vec<_>>().join(", ")
                        );
                        said = true;
                    }
                    tokio::select! {
                        () = tokio::time::sleep(backoff) => {}
                        () = self.windows.until_stopping() => return false,
                    }
                    backoff = (backoff * 2).min(OWED_BACKOFF_MAX);
                }
                _ => return true,
            }
        }
    }

    async fn resume_one(&self, claimed: Claimed) -> Resumed {
        let Claimed { record, stale } = claimed;
        let w = &self.windows;
        let at = w.moment();
        if stale {
            mesh_event!(
                warn,
                Event::WindowResumed,
                MESH_STEP = %record.step,
                "window record of {} from {} is from another boot: it holds nothing; starting its containers again",
                record.step,
                record.opened_at
            );
            let report = Closing::new(w, &record, Default::default(), close_budget())
                .run()
                .await;
            return Resumed::Stale {
                step: record.step,
                report,
            };
        }
        mesh_event!(
            warn,
            Event::WindowResumed,
            MESH_STEP = %record.step,
            "resuming the window of {}, left open by a process that is gone (opened {}{})",
            record.step,
            record.opened_at,
            if record.owed { ", owing starts" } else { "" }
        );
        // What the dead owner left in flight is settled, and its step
        // looked at, within one closing budget: a runtime that does not
        // answer leaves the window owed and alerted, never waited on
        // without bound.
        let settling = Deadline::closing(close_budget());
        self.settle_dead_owner(&record, &settling).await;
        let step = settling
            .bound(
                || format!("the container runtime to inspect {}", record.step_container),
                w.runtime.inspect(&record.step_container),
            )
            .await;
        // Age alone never releases a window whose step still runs: the
        // step is waited for (within what is left of the bound), or stopped
        // and confirmed stopped, before anything held starts.
        let waited_exit = match step {
            Err(spent) => {
                let mut window = OpenWindow {
                    record: record.clone(),
                    watcher: None,
                    specs: Default::default(),
                    quitting: w.quitting.clone(),
                };
                let report = Closing::unconfirmed(w, &mut window, &spent.to_string()).await;
                return Resumed::Closed {
                    step: record.step,
                    waited_exit: None,
                    report,
                };
            }
            Ok(Ok(Some(info))) if info.running => {
                match self.wait_resumed_step(&record, &at).await {
                    Ok(exit) => exit,
                    Err(reason) => {
                        let mut window = OpenWindow {
                            record: record.clone(),
                            watcher: None,
                            specs: Default::default(),
                            quitting: w.quitting.clone(),
                        };
                        let report = Closing::unconfirmed(w, &mut window, &reason).await;
                        return Resumed::Closed {
                            step: record.step,
                            waited_exit: None,
                            report,
                        };
                    }
                }
            }
            _ => None,
        };
        let report = Closing::new(w, &record, Default::default(), close_budget())
            .run()
            .await;
        Resumed::Closed {
            step: record.step,
            waited_exit,
            report,
        }
    }

    /// What a dead owner may have left in flight is settled before the
    /// close: a step container it created but had not started (or whose
    /// start was in flight) is removed, so it cannot start beside the held
    /// containers; a held container it was stopping is stopped (a second
    /// stop waits for the first), so that a stop still in flight cannot
    /// land after the container is started again.
    async fn settle_dead_owner(&self, record: &WindowRecord, deadline: &Deadline) {
        let runtime = &self.windows.runtime;
        if let Ok(Ok(Some(info))) = deadline
            .bound(String::new, runtime.inspect(&record.step_container))
            .await
        {
            if info.status == "created" {
                if let Ok(Err(e)) = deadline
                    .bound(String::new, runtime.remove(&record.step_container))
                    .await
                {
                    tracing::warn!(MESH_STEP = %record.step, "cannot remove the never-started step container {}: {e}", record.step_container);
                }
            }
        }
        if record.owed {
            return;
        }
        // One whose start it had begun (the last holder's close) is
        // started, not stopped, by the close that follows.
        for name in record.held_names().filter(|n| !record.is_starting(n)) {
            if let Ok(Ok(Some(info))) = deadline.bound(String::new, runtime.inspect(name)).await {
                if info.running {
                    if let Ok(Err(e)) = deadline.bound(String::new, runtime.stop(name)).await {
                        tracing::warn!(MESH_STEP = %record.step, MESH_CONTAINER = %name, "cannot settle {name} before starting it again: {e}");
                    }
                }
            }
        }
    }

    /// Wait for the step of a resumed window, but no longer than what is
    /// left of the window's bound (its timeout, or six hours) measured since
    /// it opened: a hung step must not keep the window shut. Past that the
    /// step is stopped and confirmed stopped (`Err` when it cannot be).
    async fn wait_resumed_step(
        &self,
        record: &WindowRecord,
        at: &Moment,
    ) -> Result<Option<i64>, String> {
        let bound = record
            .step_timeout_secs
            .map(Duration::from_secs)
            .unwrap_or(WINDOW_MAX_AGE);
        let left = bound.saturating_sub(record.age(at));
        tracing::info!(
            MESH_STEP = %record.step,
            "step container {} still runs: waiting for it, at most {}s",
            record.step_container,
            left.as_secs()
        );
        let runtime = &self.windows.runtime;
        let waited = tokio::select! {
            waited = tokio::time::timeout(left, runtime.wait_exit(&record.step_container)) => waited,
            () = self.windows.until_stopping() => {
                // As the daemon's own fires on SIGTERM: the step is stopped
                // so that the window closes within the closing budget.
                tracing::warn!(
                    MESH_STEP = %record.step,
                    "mesh-host is stopping: stopping step container {} so that the window of {} closes",
                    record.step_container,
                    record.step
                );
                return crate::runtime::stop_confirmed(
                    &**runtime,
                    &record.step_container,
                    tokio::time::Instant::now() + close_budget(),
                )
                .await;
            }
        };
        match waited {
            Ok(Ok(exit)) => Ok(Some(exit)),
            Ok(Err(e)) => {
                tracing::warn!(
                    MESH_STEP = %record.step,
                    "lost track of step container {}: {e}; stopping it",
                    record.step_container
                );
                crate::runtime::stop_confirmed(
                    &**runtime,
                    &record.step_container,
                    tokio::time::Instant::now() + close_budget(),
                )
                .await
            }
            Err(_) => {
                tracing::warn!(
                    MESH_STEP = %record.step,
                    "step container {} outlived its bound of {}s: stopping it",
                    record.step_container,
                    bound.as_secs()
                );
                crate::runtime::stop_confirmed(
                    &**runtime,
                    &record.step_container,
                    tokio::time::Instant::now() + close_budget(),
                )
                .await
            }
        }
    }
}
