//! Counters that outlive the daemon: fires per step and outcome, the last
//! run's duration, will-not-start-again alerts, the last successful apply.
//! One store document ([`DOC`]), written atomically by the daemon alone.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::histogram::{self, Histogram};
use crate::schedule::fire::{FireReport, RunOutcome};
use crate::store::{Store, StoreError};

/// The store document holding the counters.
pub const DOC: &str = "metrics";

/// The persisted counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Counters {
    /// Per step id.
    #[serde(default)]
    pub steps: BTreeMap<String, StepCounters>,
    /// `will-not-start-again` alerts logged by the daemon.
    #[serde(default)]
    pub will_not_start_again_total: u64,
    /// Replacements rolled back (`rollout-rolled-back`) in the daemon.
    #[serde(default)]
    pub rollouts_rolled_back_total: u64,
    /// When an apply last succeeded.
    #[serde(default)]
    pub apply_last_success: Option<DateTime<Utc>>,
}

/// One step's counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct StepCounters {
    /// Fires by outcome label ([`super::OUTCOMES`]).
    #[serde(default)]
    pub fires: BTreeMap<String, u64>,
    /// How long the last (not skipped) fire took, in seconds.
    #[serde(default)]
    pub last_run_duration_secs: Option<f64>,
    /// Times the host noticed fires of the step it could not run
    /// (`step-missed`: one notice however many fires it covers).
    #[serde(default)]
    pub missed: u64,
    /// How long its fires took ([`histogram::DURATION`]).
    #[serde(default, skip_serializing_if = "Histogram::is_empty")]
    pub duration: Histogram,
    /// The CPU time of its runs ([`histogram::CPU`]).
    #[serde(default, skip_serializing_if = "Histogram::is_empty")]
    pub cpu: Histogram,
    /// The peak memory of its runs ([`histogram::MEMORY_PEAK`]).
    #[serde(default, skip_serializing_if = "Histogram::is_empty")]
    pub memory_peak: Histogram,
    /// How long its windows held containers ([`histogram::HELD`]).
    #[serde(default, skip_serializing_if = "Histogram::is_empty")]
    pub held: Histogram,
    /// Runs in which the kernel's OOM killer killed a process.
    #[serde(default)]
    pub oom_kills: u64,
}

impl StepCounters {
    /// Its histogram of `family`.
    pub fn histogram(&self, family: &histogram::Family) -> &Histogram {
        match family.name {
            n if n == histogram::CPU.name => &self.cpu,
            n if n == histogram::MEMORY_PEAK.name => &self.memory_peak,
            n if n == histogram::HELD.name => &self.held,
            _ => &self.duration,
        }
    }
}

impl Counters {
    /// The counters in `store`; none yet is all zeros.
    pub fn load(store: &Store) -> Result<Counters, StoreError> {
        Ok(store.load(DOC)?.unwrap_or_default())
    }

    /// Write them back.
    pub fn save(&self, store: &Store) -> Result<(), StoreError> {
        store.save(DOC, self)
    }

    /// Count one notice of missed fires of `step`.
    pub fn missed(&mut self, step: &str) {
        self.steps.entry(step.to_string()).or_default().missed += 1;
    }

    /// Count what the fire of `report` took and used (a skipped fire ran
    /// nothing and is not counted).
    pub fn accounted(&mut self, report: &FireReport) {
        if matches!(report.outcome, RunOutcome::Skipped { .. }) {
            return;
        }
        let s = self.steps.entry(report.step.clone()).or_default();
        s.duration
            .observe(&histogram::DURATION, report.duration_secs);
        if let Some(held) = report.held_secs {
            s.held.observe(&histogram::HELD, held);
        }
        let Some(u) = &report.usage else { return };
        if let Some(us) = u.cpu_usec {
            s.cpu.observe(&histogram::CPU, us as f64 / 1e6);
        }
        if let Some(bytes) = u.memory_peak_bytes {
            s.memory_peak.observe(&histogram::MEMORY_PEAK, bytes as f64);
        }
        if u.oom_killed == Some(true) {
            s.oom_kills += 1;
        }
    }

    /// Count one fire of `step` with this outcome label.
    pub fn fired(&mut self, step: &str, outcome: &str, duration_secs: Option<f64>) {
        let s = self.steps.entry(step.to_string()).or_default();
        *s.fires.entry(outcome.to_string()).or_default() += 1;
        if duration_secs.is_some() {
            s.last_run_duration_secs = duration_secs;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::Usage;

    fn report(outcome: RunOutcome, usage: Option<Usage>, held: Option<f64>) -> FireReport {
        FireReport {
            step: "gc".into(),
            due: chrono::DateTime::UNIX_EPOCH,
            outcome,
            unit: None,
            duration_secs: 12.5,
            started_again: Vec::new(),
            not_started: Vec::new(),
            recreated: Vec::new(),
            healthy: Vec::new(),
            unhealthy: Vec::new(),
            usage,
            held_secs: held,
        }
    }

    #[test]
    fn a_fire_is_counted_in_each_histogram_it_has_a_figure_for() {
        let mut c = Counters::default();
        let used = Usage {
            cpu_usec: Some(2_500_000),
            memory_peak_bytes: Some(64 << 20),
            oom_killed: Some(true),
            ..Usage::default()
        };
        c.accounted(&report(
            RunOutcome::OomKilled { status: 137 },
            Some(used),
            Some(3.0),
        ));
        // Could not start: its duration only.
        c.accounted(&report(
            RunOutcome::Error { reason: "x".into() },
            None,
            None,
        ));
        // Skipped: ran nothing.
        c.accounted(&report(
            RunOutcome::Skipped { reason: "x".into() },
            None,
            None,
        ));
        let s = &c.steps["gc"];
        assert_eq!(s.oom_kills, 1);
        let count = |h: &Histogram, f| *h.cumulative(f).0.last().expect("+Inf");
        assert_eq!(count(&s.duration, &histogram::DURATION), 2);
        assert_eq!(count(&s.cpu, &histogram::CPU), 1);
        assert_eq!(count(&s.memory_peak, &histogram::MEMORY_PEAK), 1);
        assert_eq!(count(&s.held, &histogram::HELD), 1);
        assert_eq!(s.cpu.sum, 2.5);
        // Kept and read back as they were.
        let json = serde_json::to_string(&c).expect("json");
        assert_eq!(serde_json::from_str::<Counters>(&json).expect("back"), c);
    }
}
