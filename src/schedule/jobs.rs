//! The job table: when each scheduled step is due, decided without I/O.
//!
//! The scheduler loop feeds it the wall-clock time and gets back what to do:
//! fire a due time, skip it (a run is still in flight), or log fires that
//! were missed (a forward clock step, or the daemon being down). Keeping
//! this pure makes the timing rules testable with a fake clock:
//!
//! - a due time is handled at most once, whatever the clock does;
//! - after a forward step only the latest due time fires, the others are
//!   reported missed (counted, never stacked or flooded);
//! - after a backward step the job is re-armed from the new time, but never
//!   at or before a due time it already handled;
//! - re-syncing keeps an unchanged job where it is in its cadence.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use crate::cron::CronSchedule;

/// The most missed due times counted one by one after a long gap; beyond it
/// the count is reported as "at least".
const MISSED_COUNT_CAP: usize = 10_000;

/// How many handled due times a job remembers to refuse firing them twice
/// after a backward clock step (a day of a per-minute job and then some).
const HANDLED_MEMORY: usize = 2048;

/// What the job table needs to know of one scheduled step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepTiming {
    /// The step's resource id.
    pub id: String,
    /// Its cron expression.
    pub cron: CronSchedule,
    /// The zone it is evaluated in.
    pub zone: Tz,
    /// Changes whenever anything about the step changes (not only its
    /// timing): a changed step is re-armed.
    pub fingerprint: Fingerprint,
    /// Its splay: every fire comes this long after the cron time
    /// (`randomized-delay`, see [`crate::schedule::splay`]).
    pub delay: std::time::Duration,
    /// `catch-up`: at the table's first sync, the latest due time missed
    /// since the step's last handled one is run once.
    pub catch_up: bool,
}

/// A SHA-256 digest of everything about a step, kept as its 32 bytes
/// (thousands of steps each held it as 64 hex characters in a string of
/// its own).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// The digest of `text`.
    pub fn of(text: &[u8]) -> Fingerprint {
        use sha2::Digest;
        Fingerprint(sha2::Sha256::digest(text).into())
    }
}

impl std::fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// The fingerprint of a text (tests name steps' fingerprints by a text).
#[cfg(test)]
impl From<&str> for Fingerprint {
    fn from(text: &str) -> Fingerprint {
        Fingerprint::of(text.as_bytes())
    }
}

impl StepTiming {
    /// The first fire strictly after `t`: the cron time after `t - delay`,
    /// plus the delay. The whole cadence is shifted, so a due time (a fire
    /// time) is handled once as any other, and is what `status` shows.
    pub fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        crate::schedule::splay::next_fire(&self.cron, self.zone, self.delay, t)
    }
}

/// One armed job.
#[derive(Debug, Clone)]
struct Job {
    /// Shared with the scheduler's step (thousands of steps would hold
    /// two copies of each id, expression and fingerprint).
    timing: Arc<StepTiming>,
    /// The next due time, `None` when the expression never fires again.
    next_due: Option<DateTime<Utc>>,
    /// Recently handled due times (fired or skipped): never handled again,
    /// even after the clock steps back over them.
    handled: Handled,
    in_flight: bool,
}

/// What the scheduler should do now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run the step for this due time.
    Fire { step: String, due: DateTime<Utc> },
    /// The due time came while a run was in flight: log it, run nothing.
    Skip { step: String, due: DateTime<Utc> },
    /// At start, the latest due time missed while no daemon ran, for a
    /// step with `catch-up`: run it once, now.
    CatchUp { step: String, due: DateTime<Utc> },
    /// Due times that passed without a chance to run (logged once).
    Missed {
        step: String,
        count: usize,
        /// True when the count hit the cap and is a lower bound.
        at_least: bool,
        first: DateTime<Utc>,
        last: DateTime<Utc>,
    },
}

/// How a re-sync changed the table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Unchanged steps, kept where they were in their cadence.
    pub kept: Vec<String>,
    /// New steps, armed from now.
    pub added: Vec<String>,
    /// Changed steps, re-armed from now.
    pub rearmed: Vec<String>,
    /// Steps no longer declared.
    pub dropped: Vec<String>,
}

/// The table of armed jobs.
#[derive(Debug, Default)]
pub struct JobTable {
    jobs: BTreeMap<String, Job>,
    last_now: Option<DateTime<Utc>>,
    /// Whether [`JobTable::sync`] ran once: only the first (at start,
    /// after the first apply) catches up.
    synced: bool,
}

impl JobTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether [`JobTable::sync`] ran once.
    pub fn synced(&self) -> bool {
        self.synced
    }

    /// Make the table match `steps`. `history` gives, for a step this table
    /// does not know yet, the last due time a previous daemon handled (or
    /// when it armed the step), so that fires missed while no daemon ran
    /// are reported, not run; at the first sync, a step with `catch-up`
    /// runs the latest of them once ([`Decision::CatchUp`]), never more.
    pub fn sync<T: Into<Arc<StepTiming>>>(
        &mut self,
        steps: impl IntoIterator<Item = T>,
        history: &BTreeMap<String, DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> (SyncReport, Vec<Decision>) {
        let mut report = SyncReport::default();
        let mut missed = Vec::new();
        let mut next = BTreeMap::new();
        for timing in steps {
            let timing: Arc<StepTiming> = timing.into();
            let id = timing.id.clone();
            match self.jobs.remove(&id) {
                Some(job) if job.timing == timing => {
                    report.kept.push(id.clone());
                    next.insert(id, job);
                }
                Some(old) => {
                    report.rearmed.push(id.clone());
                    let mut job = Job::armed(timing, now);
                    // A run in flight stays tracked so it still cannot stack.
                    job.in_flight = old.in_flight;
                    job.handled = old.handled;
                    next.insert(id, job);
                }
                None => {
                    report.added.push(id.clone());
                    let mut job = Job::armed(timing, now);
                    if let Some(first) = history
                        .get(&id)
                        .and_then(|last| job.next_unhandled_after(*last))
                        .filter(|first| *first <= now)
                    {
                        let t = job.tally(first, now);
                        if job.timing.catch_up && !self.synced {
                            if t.count > 1 {
                                missed.push(self::missed(
                                    &id,
                                    t.count - 1,
                                    t.at_least,
                                    t.first,
                                    t.before_last,
                                ));
                            }
                            job.mark_handled(t.last);
                            missed.push(Decision::CatchUp {
                                step: id.clone(),
                                due: t.last,
                            });
                        } else {
                            missed.push(self::missed(&id, t.count, t.at_least, t.first, t.last));
                        }
                    }
                    next.insert(id, job);
                }
            }
        }
        report.dropped = self.jobs.keys().cloned().collect();
        self.jobs = next;
        self.last_now = Some(now);
        self.synced = true;
        (report, missed)
    }

    /// Decide what is due at `now`.
    pub fn due(&mut self, now: DateTime<Utc>) -> Vec<Decision> {
        let stepped_back = self.last_now.is_some_and(|last| now < last);
        self.last_now = Some(now);
        let mut out = Vec::new();
        for (id, job) in &mut self.jobs {
            if stepped_back {
                // Re-arm from the new time; handled due times stay handled.
                job.next_due = job.next_unhandled_after(now);
            }
            let Some(first_due) = job.next_due else {
                continue;
            };
            if first_due > now {
                continue;
            }
            // The latest due time in [first_due, now] is handled; earlier
            // ones were missed.
            let tally = job.tally(first_due, now);
            if tally.count > 1 {
                out.push(missed(
                    id,
                    tally.count - 1,
                    tally.at_least,
                    tally.first,
                    tally.before_last,
                ));
            }
            let (step, due) = (id.clone(), tally.last);
            out.push(if job.in_flight {
                Decision::Skip { step, due }
            } else {
                Decision::Fire { step, due }
            });
            job.mark_handled(due);
            job.next_due = job.next_unhandled_after(now);
        }
        out
    }

    /// Mark a step's run as in flight or ended.
    pub fn set_in_flight(&mut self, step: &str, in_flight: bool) {
        if let Some(job) = self.jobs.get_mut(step) {
            job.in_flight = in_flight;
        }
    }

    /// Whether a run of `step` is in flight.
    pub fn in_flight(&self, step: &str) -> bool {
        self.jobs.get(step).is_some_and(|j| j.in_flight)
    }

    /// The earliest next due time of any job.
    pub fn next_wake(&self) -> Option<DateTime<Utc>> {
        self.jobs.values().filter_map(|j| j.next_due).min()
    }

    /// Each job's step, next due time and whether it is in flight, in
    /// the steps' order: one walk, no look-up per step.
    pub fn each(&self) -> impl Iterator<Item = (&String, Option<DateTime<Utc>>, bool)> {
        self.jobs
            .iter()
            .map(|(id, j)| (id, j.next_due, j.in_flight))
    }

    /// The next due time of one step.
    pub fn next_due(&self, step: &str) -> Option<DateTime<Utc>> {
        self.jobs.get(step).and_then(|j| j.next_due)
    }

    /// The last due time handled for one step.
    pub fn last_due(&self, step: &str) -> Option<DateTime<Utc>> {
        self.jobs.get(step).and_then(Job::last_due)
    }

    /// Number of armed jobs.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether no job is armed.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }
}

impl Job {
    fn armed(timing: Arc<StepTiming>, now: DateTime<Utc>) -> Self {
        let next_due = timing.next_after(now);
        Job {
            timing,
            next_due,
            handled: Handled::default(),
            in_flight: false,
        }
    }

    fn last_due(&self) -> Option<DateTime<Utc>> {
        self.handled.order.back().copied()
    }

    fn mark_handled(&mut self, due: DateTime<Utc>) {
        if self.handled.order.len() == HANDLED_MEMORY {
            if let Some(oldest) = self.handled.order.pop_front() {
                self.handled.set.remove(&oldest);
            }
        }
        self.handled.order.push_back(due);
        self.handled.set.insert(due);
    }

    /// The first due time strictly after `t` that was not handled already.
    fn next_unhandled_after(&self, mut t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        loop {
            let next = self.timing.next_after(t)?;
            if !self.handled.set.contains(&next) {
                return Some(next);
            }
            t = next;
        }
    }

    /// Due times from `first` (itself due and unhandled, `first <= now`)
    /// up to `now`, skipping handled ones.
    fn tally(&self, first: DateTime<Utc>, now: DateTime<Utc>) -> Tally {
        let mut tally = Tally {
            count: 1,
            at_least: false,
            first,
            before_last: first,
            last: first,
        };
        while let Some(next) = self.next_unhandled_after(tally.last) {
            if next > now {
                break;
            }
            if tally.count >= MISSED_COUNT_CAP {
                // Too many to count one by one: jump to the latest due time.
                tally.at_least = true;
                tally.before_last = tally.last;
                tally.last = self.last_due_at_or_before(tally.last, now);
                break;
            }
            tally.count += 1;
            tally.before_last = tally.last;
            tally.last = next;
        }
        tally
    }

    /// The latest due time in `(from, now]`, found by searching back from
    /// `now` in growing spans (the cron engine only searches forward).
    fn last_due_at_or_before(&self, from: DateTime<Utc>, now: DateTime<Utc>) -> DateTime<Utc> {
        let mut span = chrono::TimeDelta::hours(1);
        loop {
            let start = (now - span).max(from);
            let mut last = None;
            let mut t = start;
            while let Some(next) = self.next_unhandled_after(t) {
                if next > now {
                    break;
                }
                last = Some(next);
                t = next;
            }
            if let Some(last) = last {
                return last;
            }
            if start == from {
                return from;
            }
            span = span * 4;
        }
    }
}

/// Handled due times: in the order handled (to forget the oldest) and as a
/// set (membership is checked for every candidate due time).
#[derive(Debug, Clone, Default)]
struct Handled {
    order: VecDeque<DateTime<Utc>>,
    set: BTreeSet<DateTime<Utc>>,
}

/// A count of due times in a range.
struct Tally {
    count: usize,
    at_least: bool,
    first: DateTime<Utc>,
    before_last: DateTime<Utc>,
    last: DateTime<Utc>,
}

fn missed(
    step: &str,
    count: usize,
    at_least: bool,
    first: DateTime<Utc>,
    last: DateTime<Utc>,
) -> Decision {
    Decision::Missed {
        step: step.to_string(),
        count,
        at_least,
        first,
        last,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("test time").to_utc()
    }

    fn step(id: &str, expr: &str) -> StepTiming {
        StepTiming {
            id: id.into(),
            cron: CronSchedule::parse(expr).expect("test expression"),
            zone: chrono_tz::UTC,
            fingerprint: expr.into(),
            delay: std::time::Duration::ZERO,
            catch_up: false,
        }
    }

    fn table(steps: Vec<StepTiming>, now: DateTime<Utc>) -> JobTable {
        let mut t = JobTable::new();
        let (report, missed) = t.sync(steps, &BTreeMap::new(), now);
        assert!(missed.is_empty());
        assert!(report.dropped.is_empty());
        t
    }

    #[test]
    fn fires_once_at_due_time() {
        let mut t = table(vec![step("gc", "30 3 * * *")], at("2026-01-01T00:00:00Z"));
        assert_eq!(t.next_due("gc"), Some(at("2026-01-01T03:30:00Z")));
        assert!(t.due(at("2026-01-01T03:29:59Z")).is_empty());
        assert_eq!(
            t.due(at("2026-01-01T03:30:00Z")),
            vec![Decision::Fire {
                step: "gc".into(),
                due: at("2026-01-01T03:30:00Z")
            }]
        );
        assert!(t.due(at("2026-01-01T03:30:04Z")).is_empty(), "never twice");
        assert_eq!(t.next_due("gc"), Some(at("2026-01-02T03:30:00Z")));
    }

    #[test]
    fn due_while_in_flight_is_skipped_once_per_due_time() {
        let mut t = table(vec![step("s", "* * * * *")], at("2026-01-01T00:00:30Z"));
        assert!(matches!(
            t.due(at("2026-01-01T00:01:00Z"))[..],
            [Decision::Fire { .. }]
        ));
        t.set_in_flight("s", true);
        assert_eq!(
            t.due(at("2026-01-01T00:02:01Z")),
            vec![Decision::Skip {
                step: "s".into(),
                due: at("2026-01-01T00:02:00Z")
            }]
        );
        // Polling again within the same minute says nothing more: no flood.
        assert!(t.due(at("2026-01-01T00:02:05Z")).is_empty());
        assert!(t.due(at("2026-01-01T00:02:59Z")).is_empty());
        t.set_in_flight("s", false);
        assert!(matches!(
            t.due(at("2026-01-01T00:03:00Z"))[..],
            [Decision::Fire { .. }]
        ));
    }

    #[test]
    fn forward_step_fires_latest_and_reports_the_rest_missed() {
        let mut t = table(vec![step("h", "0 * * * *")], at("2026-01-01T00:30:00Z"));
        let got = t.due(at("2026-01-01T03:10:00Z"));
        assert_eq!(
            got,
            vec![
                Decision::Missed {
                    step: "h".into(),
                    count: 2,
                    at_least: false,
                    first: at("2026-01-01T01:00:00Z"),
                    last: at("2026-01-01T02:00:00Z"),
                },
                Decision::Fire {
                    step: "h".into(),
                    due: at("2026-01-01T03:00:00Z")
                },
            ]
        );
        assert_eq!(t.next_due("h"), Some(at("2026-01-01T04:00:00Z")));
    }

    #[test]
    fn huge_gap_is_counted_with_a_cap_not_stacked() {
        let mut t = table(vec![step("m", "* * * * *")], at("2026-01-01T00:00:30Z"));
        let got = t.due(at("2026-03-01T00:00:30Z"));
        assert_eq!(got.len(), 2, "{got:?}");
        match &got[0] {
            Decision::Missed {
                count, at_least, ..
            } => {
                assert!(*at_least);
                assert!(*count >= MISSED_COUNT_CAP - 1);
            }
            other => panic!("expected missed, got {other:?}"),
        }
        assert_eq!(
            got[1],
            Decision::Fire {
                step: "m".into(),
                due: at("2026-03-01T00:00:00Z")
            }
        );
    }

    #[test]
    fn backward_step_rearms_but_never_repeats_a_due_time() {
        let mut t = table(vec![step("h", "0 * * * *")], at("2026-01-01T09:30:00Z"));
        assert!(matches!(
            t.due(at("2026-01-01T10:00:00Z"))[..],
            [Decision::Fire { .. }]
        ));
        // The clock steps back 40 minutes: 10:00 was handled, so it is not
        // due again; next is 11:00.
        assert!(t.due(at("2026-01-01T09:20:05Z")).is_empty());
        assert_eq!(t.next_due("h"), Some(at("2026-01-01T11:00:00Z")));
        // A step back of a whole day re-arms to the next hour of the new
        // time: those due times were never handled.
        assert!(t.due(at("2025-12-31T09:20:10Z")).is_empty());
        assert_eq!(t.next_due("h"), Some(at("2025-12-31T10:00:00Z")));
        // Walking forward again, 2026-01-01T10:00 is not fired a second time.
        let _ = t.due(at("2026-01-01T09:59:00Z"));
        assert_eq!(t.next_due("h"), Some(at("2026-01-01T11:00:00Z")));
        let mut t = table(vec![step("d", "0 12 * * *")], at("2026-01-02T09:00:00Z"));
        assert!(t.due(at("2026-01-01T09:00:00Z")).is_empty());
        assert_eq!(t.next_due("d"), Some(at("2026-01-01T12:00:00Z")));
    }

    #[test]
    fn resync_keeps_unchanged_rearms_changed_drops_removed() {
        let start = at("2026-01-01T00:00:30Z");
        let mut t = table(
            vec![
                step("a", "*/10 * * * *"),
                step("b", "0 * * * *"),
                step("c", "5 * * * *"),
            ],
            start,
        );
        // Time passes; "a" is due at 00:10 but the re-sync happens at 00:09:50.
        let (report, _) = t.sync(
            vec![
                step("a", "*/10 * * * *"),
                step("b", "30 * * * *"),
                step("d", "0 0 * * *"),
            ],
            &BTreeMap::new(),
            at("2026-01-01T00:09:50Z"),
        );
        assert_eq!(report.kept, vec!["a"]);
        assert_eq!(report.rearmed, vec!["b"]);
        assert_eq!(report.added, vec!["d"]);
        assert_eq!(report.dropped, vec!["c"]);
        assert_eq!(t.next_due("a"), Some(at("2026-01-01T00:10:00Z")));
        assert_eq!(t.next_due("b"), Some(at("2026-01-01T00:30:00Z")));
        assert_eq!(t.next_due("c"), None);
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn changed_step_in_flight_still_cannot_stack() {
        let mut t = table(vec![step("a", "* * * * *")], at("2026-01-01T00:00:30Z"));
        t.set_in_flight("a", true);
        let mut changed = step("a", "* * * * *");
        changed.fingerprint = "other image".into();
        t.sync(vec![changed], &BTreeMap::new(), at("2026-01-01T00:00:40Z"));
        assert!(t.in_flight("a"));
        assert!(matches!(
            t.due(at("2026-01-01T00:01:00Z"))[..],
            [Decision::Skip { .. }]
        ));
    }

    #[test]
    fn fires_missed_while_down_are_reported_at_sync_not_run() {
        let mut t = JobTable::new();
        let history = BTreeMap::from([("gc".to_string(), at("2026-01-01T03:30:00Z"))]);
        let (_, missed) = t.sync(
            vec![step("gc", "30 3 * * *")],
            &history,
            at("2026-01-04T01:00:00Z"),
        );
        assert_eq!(
            missed,
            vec![Decision::Missed {
                step: "gc".into(),
                count: 2,
                at_least: false,
                first: at("2026-01-02T03:30:00Z"),
                last: at("2026-01-03T03:30:00Z"),
            }]
        );
        assert_eq!(t.next_due("gc"), Some(at("2026-01-04T03:30:00Z")));
        // Nothing was due yet at sync time; the table fires at the next due.
        assert!(t.due(at("2026-01-04T01:00:05Z")).is_empty());
    }

    #[test]
    fn a_delayed_step_fires_at_its_delayed_time_once() {
        let mut s = step("gc", "30 3 * * *");
        s.delay = std::time::Duration::from_millis(17_408);
        let mut t = table(vec![s], at("2026-01-01T00:00:00Z"));
        assert_eq!(t.next_due("gc"), Some(at("2026-01-01T03:30:17.408Z")));
        assert!(
            t.due(at("2026-01-01T03:30:00Z")).is_empty(),
            "not at the cron time"
        );
        assert!(t.due(at("2026-01-01T03:30:17Z")).is_empty());
        assert_eq!(
            t.due(at("2026-01-01T03:30:17.408Z")),
            vec![Decision::Fire {
                step: "gc".into(),
                due: at("2026-01-01T03:30:17.408Z")
            }]
        );
        assert!(t.due(at("2026-01-01T03:30:20Z")).is_empty(), "never twice");
        assert_eq!(t.next_due("gc"), Some(at("2026-01-02T03:30:17.408Z")));
    }

    #[test]
    fn catch_up_runs_the_latest_missed_fire_once_at_the_first_sync_only() {
        let mut t = JobTable::new();
        let mut s = step("gc", "30 3 * * *");
        s.catch_up = true;
        let history = BTreeMap::from([("gc".to_string(), at("2026-01-01T03:30:00Z"))]);
        let (_, decisions) = t.sync(vec![s.clone()], &history, at("2026-01-04T09:00:00Z"));
        assert_eq!(
            decisions,
            vec![
                Decision::Missed {
                    step: "gc".into(),
                    count: 2,
                    at_least: false,
                    first: at("2026-01-02T03:30:00Z"),
                    last: at("2026-01-03T03:30:00Z"),
                },
                Decision::CatchUp {
                    step: "gc".into(),
                    due: at("2026-01-04T03:30:00Z")
                },
            ]
        );
        assert_eq!(t.last_due("gc"), Some(at("2026-01-04T03:30:00Z")));
        assert!(t.due(at("2026-01-04T09:00:05Z")).is_empty(), "never twice");
        assert_eq!(t.next_due("gc"), Some(at("2026-01-05T03:30:00Z")));
        // One missed fire: caught up, no step-missed.
        let mut t = JobTable::new();
        let history = BTreeMap::from([("gc".to_string(), at("2026-01-03T03:30:00Z"))]);
        let (_, decisions) = t.sync(vec![s.clone()], &history, at("2026-01-04T09:00:00Z"));
        assert_eq!(
            decisions,
            vec![Decision::CatchUp {
                step: "gc".into(),
                due: at("2026-01-04T03:30:00Z")
            }]
        );
        // A step added by a later sync (an apply while the daemon runs) is
        // not caught up: only a start is.
        let mut t = JobTable::new();
        t.sync(
            Vec::<StepTiming>::new(),
            &BTreeMap::new(),
            at("2026-01-04T08:00:00Z"),
        );
        let (_, decisions) = t.sync(vec![s], &history, at("2026-01-04T09:00:00Z"));
        assert!(
            matches!(decisions[..], [Decision::Missed { count: 1, .. }]),
            "{decisions:?}"
        );
    }

    #[test]
    fn zone_is_honoured() {
        let mut s = step("z", "0 9 * * *");
        s.zone = chrono_tz::Asia::Tokyo;
        let t = table(vec![s], at("2026-01-01T00:00:00Z"));
        let want = chrono_tz::Asia::Tokyo
            .with_ymd_and_hms(2026, 1, 2, 9, 0, 0)
            .single()
            .expect("valid time")
            .to_utc();
        assert_eq!(t.next_due("z"), Some(want));
    }
}
