//! Catch-ups owed: a catch-up fire skipped because a window still closing
//! from before was in its way (a power cut mid-window) is not used up. It
//! is kept, in the step history too, and fired once nothing is in its way.

use chrono::{DateTime, Utc};

use super::Scheduler;

impl Scheduler {
    /// Keep `step`'s catch-up for `due`, skipped for a window in its way,
    /// owed (in the history too, for a restart): it runs when that window
    /// has closed (saved by the caller).
    pub(super) fn owe_catch_up(&mut self, step: &str, due: DateTime<Utc>) {
        tracing::info!(
            MESH_STEP = %step,
            "step {step}'s catch-up of its fire due {} waits for the window in its way to close, then runs once",
            due.to_rfc3339()
        );
        self.owed_catch_ups.insert(step.to_string(), due);
        self.history
            .entry(step.to_string())
            .or_default()
            .catch_up_owed = Some(due);
    }

    /// Fire each owed catch-up whose way is clear now (no window record
    /// names its step or holds, for another boot, one of its containers);
    /// whether one was fired or dropped.
    pub(super) fn retry_catch_ups(&mut self) -> bool {
        let mut fire = Vec::new();
        let mut cleared = Vec::new();
        for (step, due) in std::mem::take(&mut self.owed_catch_ups) {
            // A step no longer declared, no longer catching up, or
            // suspended is owed nothing any more.
            let Some(s) = self
                .steps
                .get(&step)
                .filter(|s| s.timing.catch_up && self.suspended.since(&step).is_none())
            else {
                cleared.push(step);
                continue;
            };
            let holds: Vec<String> = s
                .def()
                .map(|def| def.holds.iter().map(|(_, n)| n.clone()).collect())
                .unwrap_or_default();
            let clear = !self.table.in_flight(&step)
                && match self.firer.windows().opening_blocked_by(&step, &holds) {
                    Ok(blocker) => blocker.is_none(),
                    Err(e) => {
                        tracing::warn!(MESH_STEP = %step, "cannot read the window records for {step}'s catch-up owed: {e}");
                        false
                    }
                };
            if clear {
                cleared.push(step.clone());
                fire.push((step, due));
            } else {
                self.owed_catch_ups.insert(step, due);
            }
        }
        if cleared.is_empty() {
            return false;
        }
        // No longer owed before it fires: it never runs twice.
        for step in &cleared {
            if let Some(h) = self.history.get_mut(step) {
                h.catch_up_owed = None;
            }
        }
        self.save_history();
        for (step, due) in fire {
            tracing::info!(
                MESH_STEP = %step,
                "step {step} runs its catch-up of the fire due {}: the window in its way has closed",
                due.to_rfc3339()
            );
            let _ = self.spawn_fire(&step, due, true, crate::progress::Reporter::none());
        }
        true
    }
}
