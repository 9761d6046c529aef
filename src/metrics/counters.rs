//! Counters that outlive the daemon: fires per step and outcome, the last
//! run's duration, will-not-start-again alerts, the last successful apply.
//! One store document ([`DOC`]), written atomically by the daemon alone.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

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

    /// Count one fire of `step` with this outcome label.
    pub fn fired(&mut self, step: &str, outcome: &str, duration_secs: Option<f64>) {
        let s = self.steps.entry(step.to_string()).or_default();
        *s.fires.entry(outcome.to_string()).or_default() += 1;
        if duration_secs.is_some() {
            s.last_run_duration_secs = duration_secs;
        }
    }
}
