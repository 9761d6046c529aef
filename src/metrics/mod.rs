//! Metrics for Prometheus, the node-exporter way.
//!
//! The host renders what it knows of itself — each scheduled step's last
//! run and next fire, open windows, alerts, the last apply — in Prometheus'
//! text format ([`text`]). The daemon writes it, atomically, to a file for
//! node-exporter's textfile collector after every fire, apply and window
//! change ([`service`]); `mesh-host metrics` prints the same text. Counters
//! that outlive a restart are kept in the state directory ([`counters`]).
//! Names and labels are documented in docs/metrics.md.

pub mod counters;
pub mod histogram;
pub mod service;
pub mod settle;
pub mod text;
pub mod textfile;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::schedule::fire::RunOutcome;
use crate::schedule::scheduler::StepGauges;
use crate::window::WindowRecord;

pub use counters::Counters;

/// The default textfile, in the directory Debian's prometheus-node-exporter
/// reads (`--collector.textfile.directory`).
pub const DEFAULT_FILE: &str = "/var/lib/prometheus/node-exporter/mesh-host.prom";

/// Every `outcome` label of `mesh_host_step_fires_total`, so that each
/// counter exists from the start (a rate over a missing series is nothing).
pub const OUTCOMES: [&str; 8] = [
    "succeeded",
    "failed",
    "oom-killed",
    "timed-out",
    "stopped",
    "interrupted",
    "error",
    "skipped",
];

/// The `outcome` label of a fire.
pub fn outcome_label(outcome: &RunOutcome) -> &'static str {
    match outcome {
        RunOutcome::Succeeded => "succeeded",
        RunOutcome::Exited { .. } => "failed",
        RunOutcome::OomKilled { .. } => "oom-killed",
        RunOutcome::TimedOut { .. } => "timed-out",
        RunOutcome::Stopped { .. } => "stopped",
        RunOutcome::Interrupted { .. } => "interrupted",
        RunOutcome::Error { .. } => "error",
        RunOutcome::Skipped { .. } => "skipped",
    }
}

/// Everything the metrics text says, gathered at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Every scheduled step, by id.
    pub steps: Vec<StepMetrics>,
    /// Every open window.
    pub windows: Vec<WindowMetrics>,
    /// Will-not-start-again alerts since the state directory was made.
    pub will_not_start_again_total: u64,
    /// Replacements rolled back since the state directory was made.
    pub rollouts_rolled_back_total: u64,
    /// The last apply, if any.
    pub apply: Option<ApplyMetrics>,
}

/// One scheduled step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepMetrics {
    /// Its id.
    pub step: String,
    /// Its module (`""` when none).
    pub module: String,
    /// Its next due time.
    pub next_fire: Option<DateTime<Utc>>,
    /// The time between its next two fires.
    pub period_secs: Option<f64>,
    /// When a run last succeeded.
    pub last_success: Option<DateTime<Utc>>,
    /// When a run last ended.
    pub last_run: Option<DateTime<Utc>>,
    /// How long the last run took (the whole fire, window included).
    pub last_run_duration_secs: Option<f64>,
    /// The last run's exit status, when it exited.
    pub last_exit_status: Option<i64>,
    /// Whether a run is in flight.
    pub running: bool,
    /// Since when an operator suspended it, if so.
    pub suspended_since: Option<DateTime<Utc>>,
    /// Fires counted, by outcome label (the text has every label of
    /// [`OUTCOMES`] besides, at 0: see [`text::with_every_outcome`]).
    pub fires: BTreeMap<String, u64>,
    /// Notices of fires it missed.
    pub missed: u64,
    /// Its histograms and OOM kills ([`counters::StepCounters`]).
    pub accounted: counters::StepCounters,
    /// The CPU time of its last run, in seconds.
    pub last_cpu_secs: Option<f64>,
    /// The peak memory of its last run.
    pub last_memory_peak_bytes: Option<u64>,
    /// The memory limit its last run had.
    pub memory_limit_bytes: Option<u64>,
}

/// One open window.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowMetrics {
    /// Its step.
    pub step: String,
    /// When it opened.
    pub opened_at: DateTime<Utc>,
    /// How long it may stay open: the step's timeout plus the closing
    /// budget, six hours without a timeout.
    pub bound_secs: f64,
    /// How many containers it holds stopped.
    pub held: usize,
}

/// The last apply.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyMetrics {
    /// When it ended.
    pub at: DateTime<Utc>,
    /// Whether it succeeded.
    pub ok: bool,
    /// When an apply last succeeded.
    pub last_success: Option<DateTime<Utc>>,
}

/// How long a window may stay open (CONTRACT "Scheduled steps and windows").
pub fn window_bound_secs(record: &WindowRecord) -> f64 {
    match record.step_timeout_secs {
        Some(t) => (t + crate::window::CLOSE_BUDGET.as_secs()) as f64,
        None => crate::window::WINDOW_MAX_AGE.as_secs() as f64,
    }
}

/// Put a snapshot together from the host's own state: the scheduler's
/// gauges of each step (`steps`), each step's module, the live window
/// records, the persisted counters and the last apply.
pub fn gather(
    steps: Vec<StepGauges>,
    modules: &BTreeMap<String, String>,
    windows: &[WindowRecord],
    counters: &Counters,
    apply: Option<ApplyMetrics>,
) -> Snapshot {
    let mut out = Snapshot {
        will_not_start_again_total: counters.will_not_start_again_total,
        rollouts_rolled_back_total: counters.rollouts_rolled_back_total,
        apply,
        ..Snapshot::default()
    };
    out.steps.reserve(steps.len());
    for s in steps {
        let mut c = counters.steps.get(&s.step).cloned().unwrap_or_default();
        let fires = std::mem::take(&mut c.fires);
        out.steps.push(StepMetrics {
            module: modules.get(&s.step).cloned().unwrap_or_default(),
            step: s.step,
            next_fire: s.next_fire,
            period_secs: s.period_secs,
            last_success: s.last_success,
            last_run: s.last_run,
            last_run_duration_secs: c.last_run_duration_secs,
            last_exit_status: s.last_exit_status,
            running: s.running,
            suspended_since: s.suspended_since,
            fires,
            missed: c.missed,
            last_cpu_secs: s.last_cpu_usec.map(|us| us as f64 / 1e6),
            last_memory_peak_bytes: s.last_memory_peak_bytes,
            memory_limit_bytes: s.memory_limit_bytes,
            accounted: c,
        });
    }
    out.steps.sort_by(|a, b| a.step.cmp(&b.step));
    for r in windows {
        out.windows.push(WindowMetrics {
            step: r.step.clone(),
            opened_at: r.opened_at,
            bound_secs: window_bound_secs(r),
            held: r.held_names().count(),
        });
    }
    out.windows.sort_by(|a, b| a.step.cmp(&b.step));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::scheduler::{StepHistory, StepStatus};

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("time").to_utc()
    }

    #[test]
    fn gather_joins_history_counters_modules_and_windows() {
        let steps = vec![StepGauges::of_status(&StepStatus {
            step: "gc".into(),
            schedule: "0 3 * * *".into(),
            zone: "UTC".into(),
            next_fire: Some(at("2026-12-02T03:00:00Z")),
            delay_ms: None,
            running: true,
            ready: None,
            suspended_since: None,
            history: StepHistory {
                last_success: Some(at("2026-12-01T03:00:05Z")),
                last_exit_status: Some(0),
                ..StepHistory::default()
            },
        })];
        let mut counters = Counters::default();
        counters.fired("gc", "succeeded", Some(5.0));
        counters.fired("gc", "skipped", None);
        counters.will_not_start_again_total = 2;
        let record: WindowRecord = serde_json::from_value(serde_json::json!({
            "record": 1, "step": "gc", "fire-time": "2026-12-01T03:00:00Z",
            "opened-at": "2026-12-01T03:00:00Z", "boot-id": "b", "pid": 1,
            "pid-start-time": 1, "step-container": "gc-run", "step-timeout-secs": 60,
            "held": [{"id": "web", "name": "web", "was-running": true},
                     {"id": "db", "name": "db", "was-running": false}]
        }))
        .expect("record");
        let snap = gather(steps, &BTreeMap::new(), &[record], &counters, None);
        let s = &snap.steps[0];
        assert_eq!(s.module, "", "a step without a module has an empty label");
        assert_eq!(s.period_secs, Some(86400.0));
        assert_eq!(
            s.last_run_duration_secs,
            Some(5.0),
            "a skip keeps the duration"
        );
        assert_eq!(s.fires["succeeded"], 1);
        assert_eq!(s.fires["skipped"], 1);
        assert_eq!(s.fires.len(), 2, "what was counted");
        let text = text::render(&snap);
        for outcome in OUTCOMES {
            let n = if matches!(outcome, "succeeded" | "skipped") {
                1
            } else {
                0
            };
            let line = format!(
                "mesh_host_step_fires_total{{step=\"gc\",module=\"\",outcome=\"{outcome}\"}} {n}\n"
            );
            assert!(text.contains(&line), "every outcome from the start: {line}");
        }
        assert_eq!(
            snap.windows[0].bound_secs, 360.0,
            "timeout plus the closing budget"
        );
        assert_eq!(snap.windows[0].held, 1, "only what was running is held");
        assert_eq!(snap.will_not_start_again_total, 2);
    }
}
