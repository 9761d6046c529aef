//! The steps replaced after an apply: the job table re-armed, the history
//! and suspensions kept to declared steps, fires missed while no daemon
//! ran decided, and each step's next container made ready. A sync of the
//! steps already armed, each declared alike (the usual no-op apply, of
//! thousands of steps), re-arms nothing.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};

use super::listing::at;
use super::Scheduler;
use crate::schedule::jobs::SyncReport;
use crate::schedule::kept::KeptStep;
use crate::schedule::step::held_specs;
use crate::schedule::suspend;

impl Scheduler {
    /// Replace the steps with `steps`; what changed, and whether the
    /// steps' state may have.
    pub(super) fn sync(&mut self, steps: Vec<KeptStep>) -> (SyncReport, bool) {
        if self.same_steps(&steps) {
            return (self.sync_same(steps), false);
        }
        let now = self.clock.now();
        let timings: Vec<_> = steps.iter().map(|s| s.timing.clone()).collect();
        // A step that never handled a due time counts its missed fires
        // from when it was first armed (remembered across restarts), so
        // one never fired still catches up.
        let mut armed = false;
        for s in &steps {
            let h = self.history.entry(s.id().to_string()).or_default();
            if h.last_due.is_none() && h.armed_at.is_none() {
                h.armed_at = Some(now);
                armed = true;
            }
        }
        let history: BTreeMap<String, DateTime<Utc>> = self
            .history
            .iter()
            .filter_map(|(k, h)| h.last_due.or(h.armed_at).map(|d| (k.clone(), d)))
            .collect();
        let (report, missed) = self.table.sync(timings, &history, now);
        // Windows closed for another process (taken over, resumed, owed)
        // create a removed held container as armed here.
        self.firer
            .windows()
            .know_held_specs(held_specs(steps.iter().map(KeptStep::hold_specs)));
        let before = std::mem::replace(
            &mut self.steps,
            steps.into_iter().map(|s| (s.id().to_string(), s)).collect(),
        );
        crate::task::drop_later(before);
        // The history keeps declared steps only, so it is bounded by the
        // declaration (docs/state-dir.md), not by every step ever declared.
        let remembered = self.history.len();
        let steps = &self.steps;
        self.history.retain(|id, _| steps.contains_key(id));
        self.reload_suspensions();
        if armed || self.history.len() != remembered {
            self.save_history();
        }
        // A catch-up owed before a restart is owed still.
        for (id, h) in &self.history {
            if let Some(due) = h.catch_up_owed {
                self.owed_catch_ups.entry(id.clone()).or_insert(due);
            }
        }
        if !missed.is_empty() {
            self.decide_all(missed, now);
        }
        let readier = self.firer.readier();
        for gone in readier.steps() {
            if !self.steps.contains_key(&gone) {
                readier.forget(&gone);
            }
        }
        self.make_all_ready();
        (report, true)
    }

    /// Whether `steps` are the steps armed, each declared alike, after a
    /// first sync: then a sync has nothing to re-arm.
    fn same_steps(&self, steps: &[KeptStep]) -> bool {
        let mut scratch = Vec::new();
        self.table.synced()
            && steps.len() == self.steps.len()
            && steps.iter().all(|s| {
                self.steps
                    .get(s.id())
                    .is_some_and(|kept| kept.is(s, &mut scratch))
            })
    }

    /// A sync of the steps armed: only what an apply may have changed
    /// besides the steps is read again.
    fn sync_same(&mut self, steps: Vec<KeptStep>) -> SyncReport {
        let report = SyncReport {
            kept: steps.iter().map(|s| s.id().to_string()).collect(),
            ..SyncReport::default()
        };
        crate::task::drop_later(steps);
        self.reload_suspensions();
        // A container that could not be made ready is tried again.
        self.make_all_ready();
        report
    }

    /// The steps armed kept, after an apply that found the node as they
    /// were armed from: what a sync of the same steps reads again.
    pub(super) fn refresh(&mut self) -> usize {
        self.reload_suspensions();
        self.make_all_ready();
        self.steps.len()
    }

    /// What the apply kept of the suspensions (it drops steps no longer
    /// declared), of declared steps only.
    fn reload_suspensions(&mut self) {
        self.suspended = suspend::load_or_none(&self.store);
        let steps = &self.steps;
        self.suspended.steps.retain(|id, _| steps.contains_key(id));
    }

    /// Each step's next container made ready ([`Scheduler::make_ready`]),
    /// but for the steps it would leave as they are, passed over in one
    /// walk: packed, due beyond the horizon with no slot, and waiting in
    /// `beyond` for that due time already. An apply then costs what is
    /// armed, not what is declared (a call for each copied every id, then
    /// allocated one and searched a set of all of them, per step).
    fn make_all_ready(&mut self) {
        let now = self.clock.now();
        let waiting: HashSet<(DateTime<Utc>, &str)> = self
            .beyond
            .iter()
            .map(|(due, id)| (*due, id.as_str()))
            .collect();
        let readier = self.firer.readier();
        let mut jobs = self.table.each().map(|(id, due, _)| (id, due)).peekable();
        let ids: Vec<String> = self
            .steps
            .iter()
            .filter(|(id, s)| {
                let due = at(&mut jobs, id).flatten();
                let as_it_is = due.is_some_and(|due| {
                    (due - now).to_std().is_ok_and(|ahead| ahead > self.horizon)
                        && s.is_packed()
                        && !readier.has_slot(id)
                        && waiting.contains(&(due, id.as_str()))
                });
                !as_it_is
            })
            .map(|(id, _)| id.clone())
            .collect();
        drop((waiting, jobs));
        for id in &ids {
            self.make_ready(id);
        }
    }
}
