//! The steps' state as `status` reads it: every step's
//! ([`StepStatus`], for `status --json` and `STATUS=`), or only the steps a
//! brief `status` lists ([`crate::step_listing`]): their facts read in
//! place for each step, a whole [`StepStatus`] (its history cloned) built
//! for the few picked. A brief status then costs what it lists, not what is
//! declared.

use super::{Scheduler, StepStatus};
use crate::schedule::step::ScheduledStep;
use crate::step_listing::{self, StepFacts};

/// The steps a brief `status` lists, and how many are scheduled.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listed {
    /// The steps picked, in their order (every one when there are few).
    pub steps: Vec<StepStatus>,
    /// How many steps are scheduled, listed or not.
    pub scheduled: usize,
}

impl Scheduler {
    /// Every step's state, in their order.
    pub(super) fn status(&self) -> Vec<StepStatus> {
        self.steps.values().map(|s| self.status_of(s)).collect()
    }

    /// The steps [`step_listing::pick`] lists, by facts read in one walk
    /// of the scheduler's tables (each kept in the steps' order, so no
    /// look-up per step); their whole state built for those alone.
    pub(super) fn listed(&self) -> Listed {
        let not_ready = self.firer.readier().not_ready();
        let mut jobs = self
            .table
            .each()
            .map(|(id, due, run)| (id, (due, run)))
            .peekable();
        let mut history = self.history.iter().peekable();
        let mut suspended = self.suspended.steps.iter().peekable();
        let facts: Vec<(&ScheduledStep, StepFacts)> = self
            .steps
            .values()
            .map(|s| {
                let id = &s.def.id;
                let (next_fire, running) = at(&mut jobs, id).unwrap_or((None, false));
                let failed_last = at(&mut history, id)
                    .is_some_and(|h| StepFacts::failed_last(h.last_run, h.last_success));
                let to_be_seen = running
                    || at(&mut suspended, id).is_some()
                    || not_ready.contains(id)
                    || failed_last;
                (
                    s,
                    StepFacts {
                        next_fire,
                        to_be_seen,
                    },
                )
            })
            .collect();
        let picked = step_listing::pick(&facts, |(_, f)| *f);
        Listed {
            steps: picked.into_iter().map(|(s, _)| self.status_of(s)).collect(),
            scheduled: facts.len(),
        }
    }

    /// One step's whole state.
    fn status_of(&self, s: &ScheduledStep) -> StepStatus {
        let id = &s.def.id;
        StepStatus {
            step: id.clone(),
            schedule: s.timing.cron.expr().to_string(),
            zone: s.timing.zone.name().to_string(),
            next_fire: self.table.next_due(id),
            delay_ms: (!s.timing.delay.is_zero())
                .then(|| u64::try_from(s.timing.delay.as_millis()).unwrap_or(u64::MAX)),
            running: self.table.in_flight(id),
            ready: self.firer.readier().state(id),
            suspended_since: self.suspended.since(id),
            history: self.history.get(id).cloned().unwrap_or_default(),
        }
    }
}

/// The value of `id` in `entries`, a map's walk in key order that earlier
/// calls have moved along with smaller ids: what lies before `id` is
/// passed over.
fn at<'a, V>(
    entries: &mut std::iter::Peekable<impl Iterator<Item = (&'a String, V)>>,
    id: &str,
) -> Option<V> {
    while entries.next_if(|(k, _)| k.as_str() < id).is_some() {}
    entries.next_if(|(k, _)| k.as_str() == id).map(|(_, v)| v)
}
