//! The daemon's metrics: one task that keeps the counters, renders the text
//! when something changed and writes the textfile.
//!
//! It is woken by events, never by a timer: a fire's report (from the
//! scheduler), an apply (from the daemon), and the events it observes in
//! this process ([`crate::tap`]): a window opened or closed, a skip, a
//! will-not-start-again alert. `mesh-host metrics --local` renders the same
//! text from the state directory alone ([`local`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot, watch};

use super::settle::Settle;
use super::{gather, outcome_label, text, textfile, ApplyMetrics, Counters, Snapshot};
use crate::apply::AppliedState;
use crate::declaration::Declaration;
use crate::schedule::fire::{FireReport, RunOutcome};
use crate::schedule::scheduler::{period_secs, SchedulerHandle, StepGauges, StepHistory};
use crate::store::{Store, STEP_HISTORY};
use crate::tap::Observed;
use crate::window::WindowRecord;
use crate::window::Windows;

/// Each scheduled step's module (`""` when none), by step id.
pub fn modules(decl: &Declaration) -> BTreeMap<String, String> {
    decl.steps()
        .map(|s| {
            (
                s.resource.id.to_string(),
                s.resource
                    .module
                    .as_ref()
                    .map(|m| m.to_string())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

enum Msg {
    Applied {
        at: DateTime<Utc>,
        ok: bool,
        modules: Option<BTreeMap<String, String>>,
    },
    Text(oneshot::Sender<String>),
    /// Something the text shows changed (a step suspended or resumed).
    Changed,
}

/// A handle to the metrics task.
#[derive(Debug, Clone)]
pub struct MetricsHandle {
    inbox: mpsc::UnboundedSender<Msg>,
}

impl std::fmt::Debug for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Msg::Applied { ok, .. } => write!(f, "Applied({ok})"),
            Msg::Text(_) => f.write_str("Text"),
            Msg::Changed => f.write_str("Changed"),
        }
    }
}

impl MetricsHandle {
    /// An apply ended (`ok` false too when the declaration file was
    /// refused); `modules` when it read a declaration.
    pub fn applied(&self, at: DateTime<Utc>, ok: bool, modules: Option<BTreeMap<String, String>>) {
        let _ = self.inbox.send(Msg::Applied { at, ok, modules });
    }

    /// Something the text shows changed: write it again.
    pub fn changed(&self) {
        let _ = self.inbox.send(Msg::Changed);
    }

    /// The metrics text now.
    pub async fn text(&self) -> Option<String> {
        let (tx, rx) = oneshot::channel();
        self.inbox.send(Msg::Text(tx)).ok()?;
        rx.await.ok()
    }
}

/// The metrics task's state.
pub struct MetricsService {
    store: Store,
    scheduler: SchedulerHandle,
    windows: Windows,
    file: Option<PathBuf>,
    counters: Counters,
    modules: BTreeMap<String, String>,
    apply: Option<(DateTime<Utc>, bool)>,
    inbox: mpsc::UnboundedReceiver<Msg>,
    fires: mpsc::UnboundedReceiver<FireReport>,
    events: mpsc::UnboundedReceiver<Observed>,
    /// The last write error said, so a failing write is logged once.
    said: Option<String>,
}

impl std::fmt::Debug for MetricsService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsService")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl MetricsService {
    /// The task and its handle. `fires` carries the scheduler's fire
    /// reports; `file` is the textfile (`None`: none is written).
    ///
    /// `events` is a [`crate::tap::subscribe`] taken early enough to see
    /// what happened before this task starts (windows resumed at start-up).
    pub fn new(
        store: Store,
        scheduler: SchedulerHandle,
        windows: Windows,
        fires: mpsc::UnboundedReceiver<FireReport>,
        events: mpsc::UnboundedReceiver<Observed>,
        file: Option<PathBuf>,
    ) -> (MetricsService, MetricsHandle) {
        let counters = Counters::load(&store).unwrap_or_else(|e| {
            tracing::error!("metrics counters unreadable, starting them from zero: {e}");
            Counters::default()
        });
        let (tx, inbox) = mpsc::unbounded_channel();
        let service = MetricsService {
            store,
            scheduler,
            windows,
            file,
            counters,
            modules: BTreeMap::new(),
            apply: None,
            inbox,
            fires,
            events,
            said: None,
        };
        (service, MetricsHandle { inbox: tx })
    }

    /// Serve until `shutdown` turns true. A change is written [`SETTLE`]
    /// after it, with the changes that came meanwhile ([`Settle`]). What
    /// was sent before the shutdown is taken first, and a change pending
    /// then is written.
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        let mut pending = Settle::new(SETTLE);
        loop {
            let changed = tokio::select! {
                // In this order: what came before the stop is counted
                // before the last write.
                biased;
                Some(msg) = self.inbox.recv() => match msg {
                    Msg::Applied { at, ok, modules } => {
                        self.apply = Some((at, ok));
                        if ok {
                            self.counters.apply_last_success = Some(at);
                            self.save();
                        }
                        if let Some(m) = modules {
                            self.modules = m;
                        }
                        true
                    }
                    Msg::Text(reply) => {
                        let _ = reply.send(self.render().await);
                        false
                    }
                    Msg::Changed => true,
                },
                Some(report) = self.fires.recv() => {
                    let duration = (!matches!(report.outcome, RunOutcome::Skipped { .. }))
                        .then_some(report.duration_secs);
                    // Skips are counted from their event, which every
                    // skip logs (the scheduler's and the fire's alike).
                    if duration.is_some() {
                        self.counters.fired(&report.step, outcome_label(&report.outcome), duration);
                        self.counters.accounted(&report);
                        self.save();
                    }
                    true
                }
                Some(o) = self.events.recv() => self.observe(&o),
                () = sleep_until(pending.due()), if pending.due().is_some() => {
                    pending.take();
                    self.write().await;
                    false
                }
                () = stopping(&mut shutdown) => {
                    if pending.take() {
                        self.write().await;
                    }
                    return;
                }
            };
            if changed {
                pending.changed(tokio::time::Instant::now());
            }
        }
    }

    /// Count what an observed event counts; whether the text changed.
    fn observe(&mut self, o: &Observed) -> bool {
        match o.event.as_str() {
            "will-not-start-again" => {
                self.counters.will_not_start_again_total += 1;
                self.save();
                true
            }
            "rollout-rolled-back" => {
                self.counters.rollouts_rolled_back_total += 1;
                self.save();
                true
            }
            "step-missed" => {
                if let Some(step) = &o.step {
                    self.counters.missed(step);
                    self.save();
                }
                true
            }
            "step-skipped" => {
                if let Some(step) = &o.step {
                    self.counters.fired(step, "skipped", None);
                    self.save();
                }
                true
            }
            "window-opened" | "window-closed" | "window-resumed" | "step-started" => true,
            _ => false,
        }
    }

    fn save(&self) {
        if let Err(e) = self.counters.save(&self.store) {
            tracing::error!("cannot save the metrics counters: {e}");
        }
    }

    fn snapshot(&self, steps: Vec<StepGauges>) -> Snapshot {
        let windows = self.windows.live_records().unwrap_or_else(|e| {
            tracing::warn!("metrics: window records unreadable: {e}");
            Vec::new()
        });
        let apply = self.apply.map(|(at, ok)| ApplyMetrics {
            at,
            ok,
            last_success: self.counters.apply_last_success,
        });
        gather(steps, &self.modules, &windows, &self.counters, apply)
    }

    async fn render(&self) -> String {
        if let Some(steps) = self.scheduler.gauges().await {
            return crate::task::long_computation(|| text::render(&self.snapshot(steps)));
        }
        // The scheduler has stopped: the daemon is stopping, its fires
        // ended and recorded. The steps as the state directory records
        // them; the rest (the last apply, a refused declaration, the
        // counters) as this task holds it.
        let store = self.store.clone();
        let recorded = tokio::task::spawn_blocking(move || {
            let applied = crate::apply::load_applied(&store).map_err(|e| e.to_string())?;
            let windows = live_windows(&store)?;
            recorded_steps(&store, applied.as_ref(), &windows).map(|(steps, _)| steps)
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r);
        let steps = recorded.unwrap_or_else(|e| {
            tracing::warn!(
                "metrics: the steps are left out, the state directory does not read: {e}"
            );
            Vec::new()
        });
        crate::task::long_computation(|| text::render(&self.snapshot(steps)))
    }

    async fn write(&mut self) {
        let Some(path) = self.file.clone() else {
            return;
        };
        let body = self.render().await;
        let result = tokio::task::spawn_blocking(move || textfile::write(&path, &body)).await;
        let path = self
            .file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        match result {
            Ok(Ok(made)) => {
                if made {
                    tracing::info!(
                        "made the directory of {path} (mode 0755) for node-exporter's textfile collector"
                    );
                }
                if self.said.take().is_some() {
                    tracing::info!("metrics are written to {path} again");
                }
            }
            Ok(Err(e)) => self.said_once(format!("cannot write the metrics to {path}: {e}")),
            Err(e) => self.said_once(format!("cannot write the metrics to {path}: {e}")),
        }
    }

    fn said_once(&mut self, msg: String) {
        if self.said.as_deref() != Some(msg.as_str()) {
            tracing::warn!("{msg}");
            self.said = Some(msg);
        }
    }
}

/// The metrics text from the state directory alone (`mesh-host metrics
/// --local`): the last recorded apply, step history and counters, the
/// window records, next fires computed from the applied declaration.
pub fn local(store: &Store) -> Result<String, String> {
    let applied: Option<AppliedState> =
        crate::apply::load_applied(store).map_err(|e| e.to_string())?;
    let counters = Counters::load(store).map_err(|e| e.to_string())?;
    let windows = live_windows(store)?;
    let (steps, mods) = recorded_steps(store, applied.as_ref(), &windows)?;
    let apply = applied.map(|a| ApplyMetrics {
        at: a.applied_at,
        ok: a.ok,
        last_success: match (a.ok, counters.apply_last_success) {
            (true, Some(t)) => Some(t.max(a.applied_at)),
            (true, None) => Some(a.applied_at),
            (false, t) => t,
        },
    });
    Ok(text::render(&gather(
        steps, &mods, &windows, &counters, apply,
    )))
}

/// The window records that hold now.
fn live_windows(store: &Store) -> Result<Vec<WindowRecord>, String> {
    let now = Utc::now();
    let boot = crate::store::boot_id().map_err(|e| e.to_string())?;
    Ok(crate::window::Records::of(store)
        .all()
        .map_err(|e| format!("cannot read the window records: {e}"))?
        .into_iter()
        .filter(|r| r.holds(now, &boot))
        .collect())
}

/// The steps as the state directory records them, and their modules: the
/// applied declaration's (`applied`), each with its history, suspension
/// and next fire, `running` while one of `windows` is its.
fn recorded_steps(
    store: &Store,
    applied: Option<&AppliedState>,
    windows: &[WindowRecord],
) -> Result<(Vec<StepGauges>, BTreeMap<String, String>), String> {
    let history: BTreeMap<String, StepHistory> = store
        .load(STEP_HISTORY)
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    let suspended = crate::schedule::suspend::load(store)?;
    let now = Utc::now();
    let mut steps = Vec::new();
    let mut mods = BTreeMap::new();
    if let Some(applied) = applied {
        let bytes = serde_json::to_vec(&applied.declaration)
            .map_err(|e| format!("the recorded declaration cannot be read: {e}"))?;
        let decl = crate::declaration::parse(&bytes)
            .map_err(|r| format!("the recorded declaration is no longer accepted:\n{r}"))?;
        mods = modules(&decl);
        let delays = crate::schedule::splay::delays(&decl);
        let local_zone = crate::cron::local_zone();
        let none = StepHistory::default();
        for step in decl.steps() {
            let id = step.resource.id.to_string();
            let zone = step.schedule.zone.unwrap_or(local_zone);
            let delay = delays.get(&id).copied().unwrap_or_default();
            let next_fire =
                crate::schedule::splay::next_fire(&step.schedule.cron, zone, delay, now);
            let h = history.get(&id).unwrap_or(&none);
            steps.push(StepGauges::of_history(id.clone(), h).with(
                next_fire,
                period_secs(&step.schedule.cron, zone, next_fire),
                windows.iter().any(|w| w.step == id),
                suspended.since(&id),
            ));
        }
    }
    Ok((steps, mods))
}

/// How long changes settle before the metrics text is written again (see
/// [`MetricsService::run`]).
pub const SETTLE: std::time::Duration = std::time::Duration::from_millis(500);

/// Until `at`; never when there is none.
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Resolves once `shutdown` turns true (or its sender is gone).
async fn stopping(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|s| *s).await;
}
