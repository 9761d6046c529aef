//! The scheduler: one task that owns the job table, fires due steps on
//! tasks of their own, and answers its inbox (re-sync, run now, status).
//!
//! Its loop sleeps until the next due time on the wall clock
//! ([`Clock::sleep_until`]: a real-time timerfd that a clock set cancels, so
//! a wall-clock step is noticed at once), a command, the end of a fire, or
//! the next watchdog feed ([`Watchdog`], fed from this loop and nowhere
//! else, so a wedged loop stops feeding it). With nothing due it wakes only
//! for the watchdog. A long step never starves it: steps run on their own
//! tasks. Every turn that changed something (a fire began or ended, a
//! sync, a run asked for) bumps [`SchedulerHandle::changes`], which
//! `STATUS=` follows.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::clock::timer::Woken;
use crate::clock::Clock;
use crate::events::Event;
use crate::mesh_event;
use crate::progress::Reporter;
use crate::schedule::fire::{describe, FireReport, Firer, RunOutcome};
use crate::schedule::jobs::{Decision, JobTable, SyncReport};
use crate::schedule::kept::KeptStep;
use crate::schedule::output::fire_name;
use crate::schedule::step::ScheduledStep;
use crate::schedule::suspend::{self, Suspended};
use crate::store::Store;

pub use crate::schedule::history::StepHistory;
use crate::schedule::history::{load_history, HISTORY_DOC};

mod arming;
mod listing;
mod owed;
mod sync;
mod watchdog;

pub use listing::{period_secs, Listed, Read, StepGauges, StepStatus, StepsSummary};
pub use watchdog::Watchdog;

/// How often a catch-up owed is looked at again (is the window in its way
/// closed yet).
const CATCH_UP_POLL: Duration = Duration::from_secs(2);

/// Messages the scheduler answers.
#[derive(Debug)]
pub enum Command {
    /// Replace the scheduled steps (after an apply).
    Sync {
        /// The steps now declared (as the apply packed them).
        steps: Vec<KeptStep>,
        /// How the table changed.
        reply: oneshot::Sender<SyncReport>,
    },
    /// Fire a step now, through the same path as a due fire.
    RunNow {
        /// The step's id.
        step: String,
        /// Run it even though it is suspended.
        force: bool,
        /// Told of the fire's name and phases.
        progress: Reporter,
        /// The fire's report, or why it could not be fired.
        reply: oneshot::Sender<Result<FireReport, String>>,
    },
    /// Suspend a declared step (kept in the state directory).
    Suspend {
        /// The step's id.
        step: String,
        /// Since when it is suspended, or why it could not be.
        reply: oneshot::Sender<Result<DateTime<Utc>, String>>,
    },
    /// Lift a step's suspension.
    Resume {
        /// The step's id.
        step: String,
        /// Since when it was suspended (`None`: it was not), or why not.
        reply: oneshot::Sender<Result<Option<DateTime<Utc>>, String>>,
    },
    /// Keep the steps armed (an apply found the node as the declaration
    /// they were armed from left it): suspensions read again, containers
    /// not made ready tried again, as a sync of the same steps does.
    Refresh {
        /// How many steps are armed.
        reply: oneshot::Sender<usize>,
    },
    /// The step as armed (what `plan` shows a fire would do).
    Armed {
        /// The step's id.
        step: String,
        /// The step, if it is armed.
        reply: oneshot::Sender<Option<ScheduledStep>>,
    },
    /// Whether a step's definition is kept packed (tests of
    /// [`crate::schedule::kept`]).
    /// Cut a packed step's block short (tests of
    /// [`crate::schedule::kept`]).
    #[cfg(test)]
    Damage {
        /// The step's id.
        step: String,
    },
    #[cfg(test)]
    Packed {
        /// The step's id.
        step: String,
        /// Whether it is packed, if it is declared.
        reply: oneshot::Sender<Option<bool>>,
    },
    /// Report the steps' state, in one of the forms `status` and the
    /// metrics read ([`Read`]).
    Read(Read),
    /// Say what `STATUS=` says of the steps, stale ones logged.
    Summary {
        /// The answer.
        reply: oneshot::Sender<StepsSummary>,
    },
}

/// A handle to send the scheduler commands.
#[derive(Debug, Clone)]
pub struct SchedulerHandle {
    inbox: mpsc::Sender<Command>,
    changes: watch::Receiver<u64>,
}

impl SchedulerHandle {
    /// Replace the scheduled steps.
    pub async fn sync<S: Into<KeptStep>>(&self, steps: Vec<S>) -> Option<SyncReport> {
        let steps = steps.into_iter().map(Into::into).collect();
        self.ask(|reply| Command::Sync { steps, reply }).await.ok()
    }

    /// Keep the steps armed as they are ([`Command::Refresh`]); how many
    /// there are.
    pub async fn refresh(&self) -> Option<usize> {
        self.ask(|reply| Command::Refresh { reply }).await.ok()
    }

    /// Fire a step now and wait for its report; a suspended step only
    /// with `force`.
    /// `progress` is told of its fire ([`Firer::fire_reporting`]).
    pub async fn run_now(
        &self,
        step: &str,
        force: bool,
        progress: Reporter,
    ) -> Result<FireReport, String> {
        let (reply, rx) = oneshot::channel();
        self.inbox
            .send(Command::RunNow {
                step: step.to_string(),
                force,
                progress,
                reply,
            })
            .await
            .map_err(|_| "the scheduler has stopped".to_string())?;
        rx.await
            .map_err(|_| "the scheduler stopped before the run ended".to_string())?
    }

    /// Suspend `step`: since when it is suspended, or why not.
    pub async fn suspend(&self, step: &str) -> Result<DateTime<Utc>, String> {
        let step = step.to_string();
        self.ask(|reply| Command::Suspend { step, reply }).await?
    }

    /// Lift `step`'s suspension: since when it was suspended, if it was.
    pub async fn resume(&self, step: &str) -> Result<Option<DateTime<Utc>>, String> {
        let step = step.to_string();
        self.ask(|reply| Command::Resume { step, reply }).await?
    }

    /// Send the command `make` builds around a reply channel, and await
    /// the reply.
    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Command) -> Result<T, String> {
        let (reply, rx) = oneshot::channel();
        self.inbox
            .send(make(reply))
            .await
            .map_err(|_| "the scheduler has stopped".to_string())?;
        rx.await
            .map_err(|_| "the scheduler has stopped".to_string())
    }

    /// A counter bumped whenever the steps' state may have changed (a fire
    /// began or ended, a sync, a run): wait on it rather than polling
    /// [`SchedulerHandle::status`].
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.clone()
    }

    /// Step `step` as armed, if it is: what its next fire runs (its
    /// definition is shared, not copied).
    pub async fn armed(&self, step: &str) -> Result<Option<ScheduledStep>, String> {
        let step = step.to_string();
        self.ask(|reply| Command::Armed { step, reply }).await
    }

    /// Cut `step`'s packed block short.
    #[cfg(test)]
    pub async fn damage(&self, step: &str) {
        let _ = self
            .inbox
            .send(Command::Damage {
                step: step.to_string(),
            })
            .await;
    }

    /// Whether `step`'s definition is kept packed, if it is declared.
    #[cfg(test)]
    pub async fn packed(&self, step: &str) -> Option<bool> {
        let step = step.to_string();
        self.ask(|reply| Command::Packed { step, reply })
            .await
            .ok()?
    }

    /// Every step's state.
    pub async fn status(&self) -> Option<Vec<StepStatus>> {
        self.ask(|reply| Command::Read(Read::Status(reply)))
            .await
            .ok()
    }

    /// Every step's state as the metrics show it ([`StepGauges`]).
    pub async fn gauges(&self) -> Option<Vec<StepGauges>> {
        self.ask(|reply| Command::Read(Read::Gauges(reply)))
            .await
            .ok()
    }

    /// Every step's state written as the JSON list of `status --json`,
    /// and how many.
    pub async fn written(&self) -> Result<(Box<serde_json::value::RawValue>, usize), String> {
        self.ask(|reply| Command::Read(Read::Written(reply)))
            .await?
    }

    /// The state of the steps a brief `status` lists
    /// ([`crate::step_listing`]), built for those alone.
    pub async fn listed(&self) -> Option<Listed> {
        self.ask(|reply| Command::Read(Read::Listed(reply)))
            .await
            .ok()
    }

    /// What `STATUS=` says of the steps, read in the scheduler's tables
    /// (no step's state copied), steps newly stale logged.
    pub async fn summary(&self) -> Option<StepsSummary> {
        self.ask(|reply| Command::Summary { reply }).await.ok()
    }
}

/// The scheduler task's state.
///
/// Impl spread: the one task owns the whole table, so its loop is here and
/// four of its jobs that read as concepts of their own have files beside
/// it, `scheduler/arming.rs` (a step's next fire made ready within the
/// horizon, its definition packed beyond, and fired when due),
/// `scheduler/owed.rs` (catch-ups
/// a window was in the way of),
/// `scheduler/sync.rs` (the steps replaced after an apply) and
/// `scheduler/listing.rs` (the steps' state as `status` reads it).
pub struct Scheduler {
    table: JobTable,
    /// Each step, its definition packed while its next fire is beyond the
    /// horizon ([`crate::schedule::kept`]).
    steps: BTreeMap<String, KeptStep>,
    /// Steps whose next fire is beyond the horizon, by that fire: armed
    /// when it comes within ([`crate::schedule::ready::HORIZON`]).
    beyond: std::collections::BTreeSet<(DateTime<Utc>, String)>,
    horizon: std::time::Duration,
    history: BTreeMap<String, StepHistory>,
    /// Steps an operator suspended (the state directory's, kept in step).
    suspended: Suspended,
    firer: Firer,
    clock: Arc<dyn Clock>,
    store: Store,
    inbox: mpsc::Receiver<Command>,
    running: JoinSet<(String, FireReport)>,
    /// The step and due time of each fire task, by task id, and whether it
    /// is a catch-up: a task that panicked still frees its step.
    fires: BTreeMap<tokio::task::Id, (String, DateTime<Utc>, bool)>,
    /// Catch-ups skipped for a window still closing, by step: each runs
    /// (once) when nothing is in its way any more.
    owed_catch_ups: BTreeMap<String, DateTime<Utc>>,
    waiting: BTreeMap<String, Vec<oneshot::Sender<Result<FireReport, String>>>>,
    /// Where each fire's report goes once its history is saved (metrics).
    reports: Option<mpsc::UnboundedSender<FireReport>>,
    watchdog: Option<Watchdog>,
    changes: watch::Sender<u64>,
    /// Which steps were reported stale ([`Command::Summary`]).
    stale: crate::schedule::stale::StaleWatch,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("steps", &self.steps.keys().collect::<Vec<_>>())
            .field("running", &self.running.len())
            .finish_non_exhaustive()
    }
}

impl Scheduler {
    /// A scheduler and its handle; the loop feeds `watchdog`, if any.
    pub fn new(
        firer: Firer,
        clock: Arc<dyn Clock>,
        store: Store,
        watchdog: Option<Watchdog>,
    ) -> (Scheduler, SchedulerHandle) {
        let (tx, inbox) = mpsc::channel(64);
        let (changes, changes_rx) = watch::channel(0);
        let history = load_history(&store);
        let suspended = suspend::load_or_none(&store);
        let scheduler = Scheduler {
            table: JobTable::new(),
            steps: BTreeMap::new(),
            beyond: Default::default(),
            horizon: crate::fault::arm_horizon(crate::schedule::ready::HORIZON),
            history,
            suspended,
            firer,
            clock,
            store,
            inbox,
            running: JoinSet::new(),
            fires: BTreeMap::new(),
            owed_catch_ups: BTreeMap::new(),
            waiting: BTreeMap::new(),
            reports: None,
            watchdog,
            changes,
            stale: Default::default(),
        };
        (
            scheduler,
            SchedulerHandle {
                inbox: tx,
                changes: changes_rx,
            },
        )
    }

    /// Send each fire's report to `tx` once the step's history is saved.
    pub fn report_fires_to(&mut self, tx: mpsc::UnboundedSender<FireReport>) {
        self.reports = Some(tx);
    }

    /// Run until `shutdown` turns true, then wait for in-flight fires (they
    /// stop their steps and close their windows) and return.
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        let clock = self.clock.clone();
        let mut watchdog = self.watchdog.take();
        let mut feed_at = Instant::now();
        let mut catch_up_at = Instant::now() + CATCH_UP_POLL;
        loop {
            if !self.owed_catch_ups.is_empty() && Instant::now() >= catch_up_at {
                if self.retry_catch_ups() {
                    self.changed();
                }
                catch_up_at = Instant::now() + CATCH_UP_POLL;
            }
            let owed = !self.owed_catch_ups.is_empty();
            let now = clock.now();
            let decisions = self.table.due(now);
            if !decisions.is_empty() {
                self.decide_all(decisions, now);
                self.changed();
            }
            let mut changed = false;
            if let Some(w) = &mut watchdog {
                feed_at = w.feed_if_due(feed_at);
            }
            // The watchdog's feed is one more wake of the same timerfd: a
            // tokio sleep of 15 s is taken in three (its timer wheel wakes
            // at each level's slot to cascade it), four wakes per feed.
            let feed = watchdog.as_ref().map(|_| {
                let left = feed_at.saturating_duration_since(Instant::now());
                now + chrono::Duration::from_std(left).unwrap_or_default()
            });
            let wake = [self.table.next_wake(), self.arm_within_horizon(now), feed]
                .into_iter()
                .flatten()
                .min();
            tokio::select! {
                cmd = self.inbox.recv() => match cmd {
                    Some(cmd) => changed |= self.command(cmd),
                    None => break,
                },
                Some(done) = self.running.join_next_with_id() => {
                    self.finished(done);
                    changed = true;
                }
                woken = clock.sleep_until(wake, now) => if woken == Woken::ClockSet {
                    tracing::info!(
                        "the wall clock was set (it reads {}): due times looked at again",
                        clock.now().to_rfc3339()
                    );
                },
                () = tokio::time::sleep_until(catch_up_at), if owed => {}
                _ = shutdown.wait_for(|s| *s) => break,
            }
            if changed {
                self.changed();
            }
        }
        // Fires in flight see the shutdown too: they stop their step and
        // close their window. Wait for them, feeding the watchdog meanwhile.
        loop {
            if let Some(w) = &mut watchdog {
                feed_at = w.feed_if_due(feed_at);
            }
            let fed = watchdog.is_some();
            tokio::select! {
                done = self.running.join_next_with_id() => match done {
                    Some(done) => {
                        self.finished(done);
                        self.changed();
                    }
                    None => break,
                },
                () = tokio::time::sleep_until(feed_at), if fed => {}
            }
        }
    }

    /// Tell [`SchedulerHandle::changes`] watchers the steps' state moved.
    fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Act on `decisions`: the due times are saved in one write, then every
    /// fire due is spawned at once, so a burst starts together.
    fn decide_all(&mut self, decisions: Vec<Decision>, now: DateTime<Utc>) {
        let mut fires = Vec::new();
        for d in decisions {
            fires.extend(self.decide(d, now));
        }
        // Saved before any of them fires: a due time is never fired twice.
        self.save_history();
        for (step, due, catch_up) in fires {
            let _ = self.spawn_fire(&step, due, catch_up, Reporter::none());
        }
    }

    /// Record one decision; the fire it calls for, if any.
    fn decide(
        &mut self,
        decision: Decision,
        now: DateTime<Utc>,
    ) -> Option<(String, DateTime<Utc>, bool)> {
        if let Some(since) = self.suspension_of(&decision) {
            self.pass_suspended(decision, since, now);
            return None;
        }
        match decision {
            Decision::Fire { step, due } => {
                self.record_due(&step, due);
                Some((step, due, false))
            }
            Decision::CatchUp { step, due } => {
                self.record_due(&step, due);
                let module = self.steps.get(&step).and_then(KeptStep::module);
                mesh_event!(
                    info,
                    Event::StepCaughtUp,
                    MESH_STEP = %step,
                    MESH_FIRE = %fire_name(&step, due),
                    MESH_MODULE = module.as_deref(),
                    "step {step} catches up its fire due {}, missed while the daemon was down (noticed at {}): it runs once now",
                    due.to_rfc3339(),
                    now.to_rfc3339()
                );
                Some((step, due, true))
            }
            Decision::Skip { step, due } => {
                self.record_due(&step, due);
                mesh_event!(
                    warn,
                    Event::StepSkipped,
                    MESH_STEP = %step,
                    MESH_FIRE = %fire_name(&step, due),
                    "step {step} skipped its fire due {}: the previous run is still in flight",
                    due.to_rfc3339()
                );
                None
            }
            Decision::Missed {
                step,
                count,
                at_least,
                first,
                last,
            } => {
                mesh_event!(
                    warn,
                    Event::StepMissed,
                    MESH_STEP = %step,
                    "step {step} missed {}{count} fire(s) from {} to {} (noticed at {}); they are not run late",
                    if at_least { "at least " } else { "" },
                    first.to_rfc3339(),
                    last.to_rfc3339(),
                    now.to_rfc3339()
                );
                None
            }
        }
    }

    /// Since when the step of `decision` is suspended, if it is.
    fn suspension_of(&self, decision: &Decision) -> Option<DateTime<Utc>> {
        let step = match decision {
            Decision::Fire { step, .. }
            | Decision::CatchUp { step, .. }
            | Decision::Skip { step, .. }
            | Decision::Missed { step, .. } => step,
        };
        self.suspended.since(step)
    }

    /// A suspended step's due time (or due times missed together): logged
    /// `step-suspended` once, handled, never run nor caught up later.
    fn pass_suspended(&mut self, decision: Decision, since: DateTime<Utc>, now: DateTime<Utc>) {
        let (step, what) = match &decision {
            Decision::Fire { step, due }
            | Decision::CatchUp { step, due }
            | Decision::Skip { step, due } => (
                step.clone(),
                format!("its fire due {} is not run", due.to_rfc3339()),
            ),
            Decision::Missed {
                step,
                count,
                at_least,
                first,
                last,
            } => (
                step.clone(),
                format!(
                    "its {}{count} fire(s) due from {} to {}, passed while it could not run (noticed at {}), are not run",
                    if *at_least { "at least " } else { "" },
                    first.to_rfc3339(),
                    last.to_rfc3339(),
                    now.to_rfc3339()
                ),
            ),
        };
        if let Decision::Fire { due, .. }
        | Decision::CatchUp { due, .. }
        | Decision::Skip { due, .. } = decision
        {
            self.record_due(&step, due);
        }
        let module = self.steps.get(&step).and_then(KeptStep::module);
        mesh_event!(
            info,
            Event::StepSuspended,
            MESH_STEP = %step,
            MESH_MODULE = module.as_deref(),
            "step {step} is suspended (since {}): {what}, and never caught up; mesh-host resume {step} lifts it",
            since.to_rfc3339()
        );
    }

    /// Remember `due` as handled (saved by the caller, before any fire).
    fn record_due(&mut self, step: &str, due: DateTime<Utc>) {
        let h = self.history.entry(step.to_string()).or_default();
        h.last_due = Some(due);
        // Missed fires count from the last due time from now on.
        h.armed_at = None;
    }

    /// Answer a command; whether the steps' state may have changed.
    fn command(&mut self, cmd: Command) -> bool {
        match cmd {
            Command::Sync { steps, reply } => {
                let (report, changed) = self.sync(steps);
                let _ = reply.send(report);
                changed
            }
            Command::Refresh { reply } => {
                let _ = reply.send(self.refresh());
                false
            }
            Command::RunNow {
                step,
                force,
                progress,
                reply,
            } => {
                if !self.steps.contains_key(&step) {
                    let _ = reply.send(Err(format!("no scheduled step {step} is declared")));
                    false
                } else if let Some(since) = self.suspended.since(&step).filter(|_| !force) {
                    let _ = reply.send(Err(suspend::refusal(&step, since)));
                    false
                } else if self.table.in_flight(&step) {
                    let _ = reply.send(Err(format!(
                        "step {step} is already running; runs never stack"
                    )));
                    false
                } else {
                    let now = self.clock.now();
                    match self.spawn_fire(&step, now, false, progress) {
                        Ok(()) => {
                            self.waiting.entry(step).or_default().push(reply);
                            true
                        }
                        Err(why) => {
                            let _ = reply.send(Err(why));
                            false
                        }
                    }
                }
            }
            Command::Suspend { step, reply } => {
                let answer = self.suspend(&step);
                let changed = answer.is_ok();
                let _ = reply.send(answer);
                changed
            }
            Command::Resume { step, reply } => {
                let answer = self.resume(&step);
                let changed = answer.is_ok();
                let _ = reply.send(answer);
                changed
            }
            Command::Armed { step, reply } => {
                let _ = reply.send(self.steps.get(&step).and_then(KeptStep::step));
                false
            }
            #[cfg(test)]
            Command::Damage { step } => {
                if let Some(s) = self.steps.get_mut(&step) {
                    s.damage();
                }
                false
            }
            #[cfg(test)]
            Command::Packed { step, reply } => {
                let _ = reply.send(self.steps.get(&step).map(KeptStep::is_packed));
                false
            }
            Command::Read(read) => {
                // A read: never a change (STATUS= asks it on every change).
                self.answer(read);
                false
            }
            Command::Summary { reply } => {
                let _ = reply.send(self.summary());
                false
            }
        }
    }

    fn finished(
        &mut self,
        done: Result<(tokio::task::Id, (String, FireReport)), tokio::task::JoinError>,
    ) {
        let mut catch_up = false;
        let (step, report) = match done {
            Ok((id, done)) => {
                catch_up = self.fires.remove(&id).is_some_and(|(_, _, c)| c);
                done
            }
            Err(e) => {
                // A fire task can only end like this by a panic outside the
                // step body (its window, if one opened, closes on a task of
                // its own). The step is freed and the fire reported failed.
                let Some((step, due, _)) = self.fires.remove(&e.id()) else {
                    tracing::error!("a fire task of an unknown step failed: {e}");
                    return;
                };
                let report = FireReport {
                    step: step.clone(),
                    due,
                    outcome: RunOutcome::Error {
                        reason: format!("the fire failed: {e}"),
                    },
                    unit: None,
                    duration_secs: 0.0,
                    started_again: Vec::new(),
                    not_started: Vec::new(),
                    recreated: Vec::new(),
                    healthy: Vec::new(),
                    unhealthy: Vec::new(),
                    usage: None,
                    held_secs: None,
                };
                let module = self.steps.get(&step).and_then(KeptStep::module);
                mesh_event!(
                    error,
                    Event::StepFailed,
                    MESH_STEP = %step,
                    MESH_FIRE = %fire_name(&step, due),
                    MESH_MODULE = module.as_deref(),
                    MESH_REASON = "error",
                    "step {step} failed: its fire panicked ({e}); the step is free to fire again"
                );
                // A window it left open is handed to the adopter, which
                // waits for the step container and closes it.
                self.firer.windows().hand_over(&step);
                (step, report)
            }
        };
        self.table.set_in_flight(&step, false);
        if catch_up && report.outcome.skipped_for_a_window() {
            self.owe_catch_up(&step, report.due);
        } else if !matches!(report.outcome, RunOutcome::Skipped { .. })
            && self.owed_catch_ups.remove(&step).is_some()
        {
            // It ran since: nothing is owed any more.
            self.history.entry(step.clone()).or_default().catch_up_owed = None;
        }
        self.make_ready(&step);
        let now = self.clock.now();
        let h = self.history.entry(step.clone()).or_default();
        if !matches!(report.outcome, RunOutcome::Skipped { .. }) {
            h.last_run = Some(now);
            h.last_outcome = Some(describe(&report.outcome));
            h.last_exit_status = report.outcome.exit_status();
            h.last_duration_secs = Some(report.duration_secs);
            h.last_usage = report.usage.clone().map(Box::new);
            if report.outcome == RunOutcome::Succeeded {
                h.last_success = Some(now);
            }
        }
        self.save_history();
        if let Some(tx) = &self.reports {
            let _ = tx.send(report.clone());
        }
        for reply in self.waiting.remove(&step).unwrap_or_default() {
            let _ = reply.send(Ok(report.clone()));
        }
    }

    /// Suspend a declared step: written through, then in effect at once
    /// (the container made ahead of its next fire is removed).
    fn suspend(&mut self, step: &str) -> Result<DateTime<Utc>, String> {
        if !self.steps.contains_key(step) {
            return Err(format!("no scheduled step {step} is declared"));
        }
        let (since, doc) = suspend::suspend(&self.store, step, self.clock.now())
            .map_err(|e| format!("cannot suspend {step}: {e}"))?;
        self.suspended = doc;
        self.firer.readier().forget(step);
        tracing::info!(MESH_STEP = %step, "step {step} suspended by the operator (since {}): its due times pass unrun until mesh-host resume {step}", since.to_rfc3339());
        Ok(since)
    }

    /// Lift a suspension: the step fires again from its next due time.
    fn resume(&mut self, step: &str) -> Result<Option<DateTime<Utc>>, String> {
        if !self.steps.contains_key(step) && self.suspended.since(step).is_none() {
            return Err(format!("no scheduled step {step} is declared"));
        }
        let (was, doc) =
            suspend::resume(&self.store, step).map_err(|e| format!("cannot resume {step}: {e}"))?;
        self.suspended = doc;
        if was.is_some() {
            tracing::info!(MESH_STEP = %step, "step {step} resumed by the operator: it fires again from its next due time");
        }
        self.make_ready(step);
        Ok(was)
    }

    fn save_history(&self) {
        if let Err(e) = self.store.save(HISTORY_DOC, &self.history) {
            tracing::error!("cannot save step history: {e}");
        }
    }
}
