//! A step's next fire, armed and then fired: its container made ready
//! ahead once the fire is within the horizon
//! ([`crate::schedule::ready::HORIZON`]); beyond it, the step waits in the
//! scheduler's `beyond` list with its definition packed
//! ([`crate::schedule::kept`]), and is armed when the horizon reaches it;
//! when due, the fire runs on a task of its own.

use chrono::{DateTime, Utc};

use super::Scheduler;
use crate::progress::Reporter;

impl Scheduler {
    /// Make the container of `step`'s next fire ready ahead of it, unless a
    /// run of it is in flight (its end arms the next).
    pub(super) fn make_ready(&mut self, step: &str) {
        let Some(s) = self.steps.get_mut(step) else {
            return;
        };
        // A suspended step's next due time does not run: nothing is made
        // for it.
        if self.table.in_flight(step) || self.suspended.since(step).is_some() {
            return;
        }
        let Some(due) = self.table.next_due(step) else {
            return;
        };
        let now = self.clock.now();
        let readier = self.firer.readier();
        let beyond = (due - now).to_std().is_ok_and(|ahead| ahead > self.horizon);
        // Packed and beyond with nothing made: stays so, not unpacked (a
        // sync of thousands of steps due tomorrow reads none of them).
        if beyond && s.is_packed() && !readier.has_slot(step) {
            self.beyond.insert((due, step.to_string()));
            return;
        }
        let Some(def) = s.def() else {
            tracing::error!(MESH_STEP = %step, "step {step}'s definition as kept does not read back: its next fire is not made ready");
            return;
        };
        if readier.arm(&def, due, now, self.horizon) {
            s.keep_built(def);
        } else {
            s.pack();
            self.beyond.insert((due, step.to_string()));
        }
    }

    /// Arm the steps whose next fire came within the horizon; when the
    /// next of the others comes within it.
    pub(super) fn arm_within_horizon(&mut self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let horizon = chrono::Duration::from_std(self.horizon).unwrap_or_default();
        while let Some((due, step)) = self.beyond.first().cloned() {
            if due - horizon > now {
                return Some(due - horizon);
            }
            self.beyond.pop_first();
            // Its next fire now, whichever it is (a stale entry re-arms
            // nothing).
            self.make_ready(&step);
        }
        None
    }

    /// Fire `step` for `due` on a task of its own; why not, if it cannot
    /// be (not declared, or its packed definition unreadable: ruled out
    /// by the check at packing, but never silent).
    pub(super) fn spawn_fire(
        &mut self,
        step: &str,
        due: DateTime<Utc>,
        catch_up: bool,
        progress: Reporter,
    ) -> Result<(), String> {
        let kept = self
            .steps
            .get(step)
            .ok_or_else(|| format!("no scheduled step {step} is declared"))?;
        let Some(def) = kept.def() else {
            let why = format!("step {step}'s definition as kept does not read back: not fired");
            tracing::error!(MESH_STEP = %step, "{why}");
            return Err(why);
        };
        self.table.set_in_flight(step, true);
        let firer = self.firer.clone();
        let id = step.to_string();
        let task = self.running.spawn(async move {
            let report = firer.fire_reporting(&def, due, &progress).await;
            (id, report)
        });
        self.fires
            .insert(task.id(), (step.to_string(), due, catch_up));
        Ok(())
    }
}
