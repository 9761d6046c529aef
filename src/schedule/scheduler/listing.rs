//! The steps' state as `status` reads it: every step's
//! ([`StepStatus`], for `status --json` and `STATUS=`), or only the steps a
//! brief `status` lists ([`crate::step_listing`]): their facts read in
//! place for each step, a whole [`StepStatus`] (its history cloned) built
//! for the few picked. A brief status then costs what it lists, not what is
//! declared. `STATUS=` reads a summary ([`StepsSummary`]), made from the
//! tables in place, with no step's state copied.

use chrono::{DateTime, Utc};
use serde::ser::SerializeSeq;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use super::{Scheduler, StepHistory};
use crate::schedule::kept::KeptStep;
use crate::schedule::stale::StepView;
use crate::step_listing::{self, StepFacts};

/// One step in a status answer (read back from a written list for its
/// text: [`crate::answer::status::Steps`]).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct StepStatus {
    /// The step's id.
    pub step: String,
    /// Its cron expression.
    pub schedule: String,
    /// Its zone.
    pub zone: String,
    /// The next due time.
    pub next_fire: Option<DateTime<Utc>>,
    /// How long after its cron time each fire comes (its splay, from
    /// `randomized-delay`), in milliseconds; `next-fire` includes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// Whether a run is in flight.
    pub running: bool,
    /// Where the container of its next fire stands (made ahead of it);
    /// `null` when the daemon has not made it (and always from
    /// `status --local`: only the daemon makes it).
    pub ready: Option<crate::schedule::ready::ReadyState>,
    /// Since when an operator suspended it (`mesh-host suspend`), if so:
    /// its due times pass unrun.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended_since: Option<DateTime<Utc>>,
    /// What the host remembers of it.
    #[serde(flatten)]
    pub history: StepHistory,
}

impl StepStatus {
    /// What the stale watch reads of it.
    pub fn view(&self) -> StepView<'_> {
        StepView {
            step: &self.step,
            schedule: &self.schedule,
            zone: &self.zone,
            next_fire: self.next_fire,
            delay_ms: self.delay_ms,
            suspended: self.suspended_since.is_some(),
            last_success: self.history.last_success,
            last_outcome: self.history.last_outcome.as_deref(),
        }
    }
}

/// What `STATUS=` says of the steps: how many, the next due (of those not
/// suspended), the suspended ones, and when a step turns stale next.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepsSummary {
    /// How many steps are scheduled.
    pub scheduled: usize,
    /// The next due time of a step not suspended, and that step.
    pub next: Option<(DateTime<Utc>, String)>,
    /// The suspended steps, in their order, and since when.
    pub suspended: Vec<(String, DateTime<Utc>)>,
    /// When a step not yet reported stale would turn stale: the summary
    /// is worth asking again then (its stale steps are logged as it is
    /// made).
    pub stale_at: Option<DateTime<Utc>>,
}

/// One step's state as the metrics show it (docs/metrics.md), read from
/// the scheduler's tables in place: no expression, zone or history
/// copied, its period from the schedule as parsed when it was armed. A
/// metrics write reads every step's; at 20,000 steps a whole
/// [`StepStatus`] each (and each expression parsed again for its
/// period) kept the scheduler's loop for 60 ms and more.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepGauges {
    /// The step's id.
    pub step: String,
    /// The next due time.
    pub next_fire: Option<DateTime<Utc>>,
    /// The time between its next two fires, in seconds.
    pub period_secs: Option<f64>,
    /// Whether a run is in flight.
    pub running: bool,
    /// Since when an operator suspended it, if so.
    pub suspended_since: Option<DateTime<Utc>>,
    /// When a run last succeeded.
    pub last_success: Option<DateTime<Utc>>,
    /// When a run last ended.
    pub last_run: Option<DateTime<Utc>>,
    /// The last run's exit status, when it exited.
    pub last_exit_status: Option<i64>,
    /// The CPU time of its last run, in microseconds.
    pub last_cpu_usec: Option<u64>,
    /// The peak memory of its last run.
    pub last_memory_peak_bytes: Option<u64>,
    /// The memory limit its last run had.
    pub memory_limit_bytes: Option<u64>,
}

impl StepGauges {
    /// The gauges of a step's whole state, its expression parsed for its
    /// period: what the walk of the tables must agree with (tests).
    #[cfg(test)]
    pub fn of_status(s: &StepStatus) -> StepGauges {
        let period_secs = crate::cron::CronSchedule::parse(&s.schedule)
            .ok()
            .zip(s.zone.parse::<chrono_tz::Tz>().ok())
            .and_then(|(cron, zone)| period_secs(&cron, zone, s.next_fire));
        StepGauges::of_history(s.step.clone(), &s.history).with(
            s.next_fire,
            period_secs,
            s.running,
            s.suspended_since,
        )
    }

    /// What step `step`'s history gives; the rest as [`StepGauges::with`]
    /// sets it.
    pub fn of_history(step: String, h: &StepHistory) -> StepGauges {
        let usage = h.last_usage.as_deref();
        StepGauges {
            step,
            last_success: h.last_success,
            last_run: h.last_run,
            last_exit_status: h.last_exit_status,
            last_cpu_usec: usage.and_then(|u| u.cpu_usec),
            last_memory_peak_bytes: usage.and_then(|u| u.memory_peak_bytes),
            memory_limit_bytes: usage.and_then(|u| u.memory_limit_bytes),
            ..StepGauges::default()
        }
    }

    /// The same, with its next fire, period, run in flight and
    /// suspension.
    pub fn with(
        self,
        next_fire: Option<DateTime<Utc>>,
        period_secs: Option<f64>,
        running: bool,
        suspended_since: Option<DateTime<Utc>>,
    ) -> StepGauges {
        StepGauges {
            next_fire,
            period_secs,
            running,
            suspended_since,
            ..self
        }
    }
}

/// The time between the fire due at `next` and the one after it, in
/// seconds, `cron` evaluated in `zone`.
pub fn period_secs(
    cron: &crate::cron::CronSchedule,
    zone: chrono_tz::Tz,
    next: Option<DateTime<Utc>>,
) -> Option<f64> {
    let next = next?;
    let after = cron.next_after(next, zone)?.to_utc();
    Some((after - next).num_milliseconds() as f64 / 1000.0)
}

/// The steps a brief `status` lists, and how many are scheduled.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listed {
    /// The steps picked, in their order (every one when there are few).
    pub steps: Vec<StepStatus>,
    /// How many steps are scheduled, listed or not.
    pub scheduled: usize,
}

/// One step's entries in the scheduler's tables ([`Scheduler::walk`]).
struct InTables<'a> {
    next_fire: Option<DateTime<Utc>>,
    running: bool,
    history: Option<&'a StepHistory>,
    suspended_since: Option<DateTime<Utc>>,
}

/// A read of the steps' state, and where its answer goes.
#[derive(Debug)]
pub enum Read {
    /// Every step's state.
    Status(oneshot::Sender<Vec<StepStatus>>),
    /// Every step's state as the metrics show it.
    Gauges(oneshot::Sender<Vec<StepGauges>>),
    /// Every step's state written as JSON, and how many.
    Written(oneshot::Sender<Result<(Box<RawValue>, usize), String>>),
    /// The state of the steps a brief `status` lists.
    Listed(oneshot::Sender<Listed>),
}

impl Scheduler {
    /// Answer `read` (a read: nothing changes).
    pub(super) fn answer(&self, read: Read) {
        let _ = match read {
            Read::Status(reply) => reply.send(self.status()).map_err(drop),
            Read::Gauges(reply) => reply.send(self.gauges()).map_err(drop),
            // At 20,000 steps 100 ms: the tasks queued behind the
            // scheduler's on its worker are handed on first.
            Read::Written(reply) => {
                let written = crate::task::long_computation(|| self.written());
                reply.send(written).map_err(drop)
            }
            Read::Listed(reply) => reply.send(self.listed()).map_err(drop),
        };
    }

    /// Every step's state, in their order.
    pub(super) fn status(&self) -> Vec<StepStatus> {
        self.steps.values().map(|s| self.status_of(s)).collect()
    }

    /// Every step's state written as the JSON list `status --json` gives,
    /// and how many: each step's [`StepStatus`] built, written and dropped
    /// in turn, so that no step's whole state is held beside another's
    /// and the list is one buffer (at 20,000 steps the built list is
    /// 100,000 blocks).
    pub(super) fn written(&self) -> Result<(Box<RawValue>, usize), String> {
        struct Each<'a>(&'a Scheduler);
        impl Serialize for Each<'_> {
            fn serialize<S: serde::Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
                let mut list = to.serialize_seq(Some(self.0.steps.len()))?;
                for s in self.0.steps.values() {
                    list.serialize_element(&self.0.status_of(s))?;
                }
                list.end()
            }
        }
        serde_json::value::to_raw_value(&Each(self))
            .map(|list| (list, self.steps.len()))
            .map_err(|e| format!("cannot write the steps' state: {e}"))
    }

    /// Every step's state as the metrics show it, in their order, read in
    /// one walk of the scheduler's tables (each kept in the steps' order).
    pub(super) fn gauges(&self) -> Vec<StepGauges> {
        let none = StepHistory::default();
        let mut tables = self.walk();
        self.steps
            .values()
            .map(|s| {
                let id = s.id();
                let t = tables(id);
                let period = period_secs(&s.timing.cron, s.timing.zone, t.next_fire);
                StepGauges::of_history(id.to_string(), t.history.unwrap_or(&none)).with(
                    t.next_fire,
                    period,
                    t.running,
                    t.suspended_since,
                )
            })
            .collect()
    }

    /// What the job table, the history and the suspensions hold of each
    /// step, asked in the steps' order: each table is walked once along
    /// with the calls, no look-up per step.
    fn walk<'a>(&'a self) -> impl FnMut(&str) -> InTables<'a> + 'a {
        let mut jobs = self
            .table
            .each()
            .map(|(id, due, run)| (id, (due, run)))
            .peekable();
        let mut history = self.history.iter().peekable();
        let mut suspended = self.suspended.steps.iter().peekable();
        move |id| {
            let (next_fire, running) = at(&mut jobs, id).unwrap_or((None, false));
            InTables {
                next_fire,
                running,
                history: at(&mut history, id),
                suspended_since: at(&mut suspended, id).map(|s| s.since),
            }
        }
    }

    /// The steps [`step_listing::pick`] lists, by facts read in one walk
    /// of the scheduler's tables (each kept in the steps' order, so no
    /// look-up per step); their whole state built for those alone.
    pub(super) fn listed(&self) -> Listed {
        let not_ready = self.firer.readier().not_ready();
        let mut tables = self.walk();
        let facts: Vec<(&KeptStep, StepFacts)> = self
            .steps
            .values()
            .map(|s| {
                let id = s.id();
                let t = tables(id);
                let failed_last = t
                    .history
                    .is_some_and(|h| StepFacts::failed_last(h.last_run, h.last_success));
                let to_be_seen = t.running
                    || t.suspended_since.is_some()
                    || not_ready.contains(id)
                    || failed_last;
                (
                    s,
                    StepFacts {
                        next_fire: t.next_fire,
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

    /// What `STATUS=` says of the steps, from the tables in place; the
    /// stale watch run over them (newly stale steps logged).
    pub(super) fn summary(&mut self) -> StepsSummary {
        let now = self.clock.now();
        let none = StepHistory::default();
        let views: Vec<StepView<'_>> = self
            .steps
            .values()
            .map(|s| {
                let id = s.id();
                let history = self.history.get(id).unwrap_or(&none);
                StepView {
                    step: id,
                    schedule: s.timing.cron.expr(),
                    zone: s.timing.zone.name(),
                    next_fire: self.table.next_due(id),
                    delay_ms: (!s.timing.delay.is_zero())
                        .then(|| u64::try_from(s.timing.delay.as_millis()).unwrap_or(u64::MAX)),
                    suspended: self.suspended.since(id).is_some(),
                    last_success: history.last_success,
                    last_outcome: history.last_outcome.as_deref(),
                }
            })
            .collect();
        self.stale.check(&views, now);
        let next = views
            .iter()
            .filter(|v| !v.suspended)
            .filter_map(|v| v.next_fire.map(|t| (t, v.step)))
            .min()
            .map(|(t, step)| (t, step.to_string()));
        StepsSummary {
            scheduled: views.len(),
            next,
            suspended: self
                .steps
                .keys()
                .filter_map(|id| self.suspended.since(id).map(|t| (id.clone(), t)))
                .collect(),
            stale_at: self.stale.next_check(&views),
        }
    }

    /// The state of a step waiting beyond the horizon with no slot
    /// ([`crate::schedule::ready::Readier::arm`]).
    fn waiting_beyond(&self, id: &str) -> Option<crate::schedule::ready::ReadyState> {
        let due = self.table.next_due(id)?;
        self.beyond
            .contains(&(due, id.to_string()))
            .then(|| crate::schedule::ready::waiting_for(due))
    }

    /// One step's whole state.
    fn status_of(&self, s: &KeptStep) -> StepStatus {
        let id = s.id();
        StepStatus {
            step: id.to_string(),
            schedule: s.timing.cron.expr().to_string(),
            zone: s.timing.zone.name().to_string(),
            next_fire: self.table.next_due(id),
            delay_ms: (!s.timing.delay.is_zero())
                .then(|| u64::try_from(s.timing.delay.as_millis()).unwrap_or(u64::MAX)),
            running: self.table.in_flight(id),
            ready: self
                .firer
                .readier()
                .state(id)
                .or_else(|| self.waiting_beyond(id)),
            suspended_since: self.suspended.since(id),
            history: self.history.get(id).cloned().unwrap_or_default(),
        }
    }
}

/// The value of `id` in `entries`, a map's walk in key order that earlier
/// calls have moved along with smaller ids: what lies before `id` is
/// passed over.
pub(super) fn at<'a, V>(
    entries: &mut std::iter::Peekable<impl Iterator<Item = (&'a String, V)>>,
    id: &str,
) -> Option<V> {
    while entries.next_if(|(k, _)| k.as_str() < id).is_some() {}
    entries.next_if(|(k, _)| k.as_str() == id).map(|(_, v)| v)
}
