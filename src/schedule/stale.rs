//! `step-stale`: a step with no successful run in twice its period.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};

use chrono::{DateTime, TimeDelta, Utc};

use crate::cron::CronSchedule;
use crate::events::Event;
use crate::mesh_event;

/// What the watch reads of a step, borrowed from where it lives: the
/// scheduler's own tables (no step's state copied on a change), or a
/// step's whole state (`StepStatus::view`).
#[derive(Debug, Clone, Copy)]
pub struct StepView<'a> {
    /// The step's id.
    pub step: &'a str,
    /// Its cron expression.
    pub schedule: &'a str,
    /// Its zone.
    pub zone: &'a str,
    /// Its next due time (its splay included).
    pub next_fire: Option<DateTime<Utc>>,
    /// Its splay, in milliseconds.
    pub delay_ms: Option<u64>,
    /// Whether an operator suspended it.
    pub suspended: bool,
    /// When a run of it last succeeded.
    pub last_success: Option<DateTime<Utc>>,
    /// How its last run ended, in words.
    pub last_outcome: Option<&'a str>,
}

/// Remembers which steps were reported stale, so each is reported once per
/// stale spell, when each step was first seen (a step that never ran is
/// measured from then), and each step's period.
///
/// The daemon checks on every change of the steps' state (a fire begun or
/// ended, an apply): a period is a cron computation, so it is kept with a
/// stamp of what it was computed from (schedule, zone, next fire, delay)
/// and computed again only when that changed — for the steps that fired
/// since, not for every step declared. What the watch keeps of a step no
/// longer declared is dropped.
#[derive(Debug, Default, Clone)]
pub struct StaleWatch {
    first_seen: BTreeMap<String, DateTime<Utc>>,
    reported: BTreeMap<String, Option<DateTime<Utc>>>,
    periods: HashMap<String, (u64, Option<TimeDelta>)>,
}

impl StaleWatch {
    /// Check every step; log `step-stale` (warning) for newly stale ones.
    /// Returns the steps reported in this call.
    pub fn check(&mut self, steps: &[StepView<'_>], now: DateTime<Utc>) -> Vec<String> {
        self.forget_undeclared(steps);
        let mut out = Vec::new();
        let mut periods = Periods::default();
        for s in steps {
            // Looked up before it is inserted: no id copied per check.
            let since = match self.first_seen.get(s.step) {
                Some(t) => *t,
                None => {
                    self.first_seen.insert(s.step.to_string(), now);
                    now
                }
            };
            // Suspended on purpose: no success is expected (status says so).
            if s.suspended {
                continue;
            }
            let stamp = stamp(s);
            let period = match self.periods.get(s.step) {
                Some((kept, period)) if *kept == stamp => *period,
                _ => {
                    let period = periods.of(s);
                    self.periods.insert(s.step.to_string(), (stamp, period));
                    period
                }
            };
            let Some(period) = period else {
                continue;
            };
            let last_ok = s.last_success.unwrap_or(since);
            if now - last_ok > period * 2 {
                if self.reported.get(s.step) != Some(&s.last_success) {
                    mesh_event!(
                        warn,
                        Event::StepStale,
                        MESH_STEP = %s.step,
                        "step {} has had no successful run since {} (more than twice its period of {}s); last outcome: {}",
                        s.step,
                        last_ok.to_rfc3339(),
                        period.num_seconds(),
                        s.last_outcome.unwrap_or("never ran")
                    );
                    self.reported.insert(s.step.to_string(), s.last_success);
                    out.push(s.step.to_string());
                }
            } else {
                self.reported.remove(s.step);
            }
        }
        out
    }

    /// When [`StaleWatch::check`] should look again, at the latest: the
    /// earliest moment a step not yet reported turns stale (its last
    /// success, or when it was first seen, plus twice its period). Between
    /// changes of the steps' state nothing else can make one stale, so a
    /// caller that checks on every change and at this time needs no timer
    /// of its own.
    pub fn next_check(&self, steps: &[StepView<'_>]) -> Option<DateTime<Utc>> {
        let mut periods = Periods::default();
        steps
            .iter()
            .filter(|s| !self.reported.contains_key(s.step) && !s.suspended)
            .filter_map(|s| {
                let since = s
                    .last_success
                    .or_else(|| self.first_seen.get(s.step).copied())?;
                // Kept by the check before this one; computed if not.
                let period = match self.periods.get(s.step) {
                    Some((kept, period)) if *kept == stamp(s) => *period,
                    _ => periods.of(s),
                };
                Some(since + period? * 2 + TimeDelta::seconds(1))
            })
            .min()
    }

    /// Drop what is kept of steps no longer declared (a declaration that
    /// churns through step ids must not grow the watch).
    fn forget_undeclared(&mut self, steps: &[StepView<'_>]) {
        if self.first_seen.len() <= steps.len() && self.periods.len() <= steps.len() {
            return;
        }
        let declared: HashSet<&str> = steps.iter().map(|s| s.step).collect();
        self.first_seen.retain(|k, _| declared.contains(k.as_str()));
        self.reported.retain(|k, _| declared.contains(k.as_str()));
        self.periods.retain(|k, _| declared.contains(k.as_str()));
    }

    /// How many steps' periods are kept (for tests).
    #[cfg(test)]
    fn kept_periods(&self) -> usize {
        self.periods.len()
    }
}

/// What a step's period was computed from, hashed: its schedule, zone,
/// next fire and delay.
fn stamp(s: &StepView<'_>) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (s.schedule, s.zone, s.next_fire, s.delay_ms).hash(&mut h);
    h.finish()
}

/// What a step's period depends on: schedule, zone, next fire, delay.
type PeriodKey<'s> = (&'s str, &'s str, Option<DateTime<Utc>>, Option<u64>);

/// Periods of steps, each computed once per schedule, zone and next fire:
/// thousands of steps on one expression are one computation, not
/// thousands.
#[derive(Default)]
struct Periods<'s> {
    known: std::collections::HashMap<PeriodKey<'s>, Option<TimeDelta>>,
}

impl<'s> Periods<'s> {
    fn of(&mut self, s: &StepView<'s>) -> Option<TimeDelta> {
        *self
            .known
            .entry((s.schedule, s.zone, s.next_fire, s.delay_ms))
            .or_insert_with(|| period(s))
    }
}

/// The step's period: the time between its next two fires.
fn period(s: &StepView<'_>) -> Option<TimeDelta> {
    let cron = CronSchedule::parse(s.schedule).ok()?;
    let zone: chrono_tz::Tz = s.zone.parse().ok()?;
    // From cron time to cron time: `next-fire` is shifted by the splay.
    let delay = TimeDelta::milliseconds(i64::try_from(s.delay_ms.unwrap_or(0)).ok()?);
    let next = s.next_fire? - delay;
    let after = cron.next_after(next, zone)?.to_utc();
    Some(after - next)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a test says of a step; watched through [`Step::view`].
    #[derive(Clone)]
    struct Step {
        step: String,
        schedule: String,
        next_fire: Option<DateTime<Utc>>,
        delay_ms: Option<u64>,
        last_success: Option<DateTime<Utc>>,
    }

    impl Step {
        fn view(&self) -> StepView<'_> {
            StepView {
                step: &self.step,
                schedule: &self.schedule,
                zone: "UTC",
                next_fire: self.next_fire,
                delay_ms: self.delay_ms,
                suspended: false,
                last_success: self.last_success,
                last_outcome: None,
            }
        }
    }

    fn status(last_success: Option<&str>, next: &str) -> Step {
        let t = |s: &str| DateTime::parse_from_rfc3339(s).expect("time").to_utc();
        Step {
            step: "gc".into(),
            schedule: "0 * * * *".into(),
            next_fire: Some(t(next)),
            delay_ms: None,
            last_success: last_success.map(t),
        }
    }

    fn check(w: &mut StaleWatch, steps: &[Step], now: DateTime<Utc>) -> Vec<String> {
        let views: Vec<StepView<'_>> = steps.iter().map(Step::view).collect();
        w.check(&views, now)
    }

    fn next_check(w: &StaleWatch, steps: &[Step]) -> Option<DateTime<Utc>> {
        let views: Vec<StepView<'_>> = steps.iter().map(Step::view).collect();
        w.next_check(&views)
    }

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("time").to_utc()
    }

    #[test]
    fn a_delayed_step_s_period_is_cron_time_to_cron_time() {
        // Hourly, delayed 59 minutes: the next fire at 01:59 is one hour
        // from the one after, not one minute.
        let mut s = status(Some("2026-01-01T00:59:00Z"), "2026-01-01T01:59:00Z");
        s.delay_ms = Some(59 * 60 * 1000);
        let mut w = StaleWatch::default();
        assert!(check(&mut w, std::slice::from_ref(&s), at("2026-01-01T01:30:00Z")).is_empty());
        assert_eq!(check(&mut w, &[s], at("2026-01-01T03:00:00Z")), vec!["gc"]);
    }

    #[test]
    fn stale_after_two_periods_once_per_spell() {
        let mut w = StaleWatch::default();
        let s = status(Some("2026-01-01T00:00:00Z"), "2026-01-01T03:00:00Z");
        // Seen first long after its last success.
        assert!(check(&mut w, std::slice::from_ref(&s), at("2026-01-01T01:30:00Z")).is_empty());
        assert_eq!(
            check(&mut w, std::slice::from_ref(&s), at("2026-01-01T02:30:00Z")),
            vec!["gc"]
        );
        assert!(
            check(&mut w, &[s], at("2026-01-01T02:31:00Z")).is_empty(),
            "reported once"
        );
        // A success ends the spell; a new spell is reported again.
        let fresh = status(Some("2026-01-01T03:00:00Z"), "2026-01-01T04:00:00Z");
        assert!(check(
            &mut w,
            std::slice::from_ref(&fresh),
            at("2026-01-01T03:10:00Z")
        )
        .is_empty());
        assert_eq!(
            check(&mut w, &[fresh], at("2026-01-01T05:30:00Z")),
            vec!["gc"]
        );
    }

    #[test]
    fn a_step_that_never_ran_is_measured_from_when_it_was_first_seen() {
        let mut w = StaleWatch::default();
        let s = status(None, "2026-01-01T01:00:00Z");
        assert!(check(&mut w, std::slice::from_ref(&s), at("2026-01-01T00:10:00Z")).is_empty());
        assert!(check(&mut w, std::slice::from_ref(&s), at("2026-01-01T02:00:00Z")).is_empty());
        assert_eq!(check(&mut w, &[s], at("2026-01-01T02:11:00Z")), vec!["gc"]);
    }

    #[test]
    fn a_kept_period_is_computed_again_once_the_next_fire_moves() {
        // At 1, 2 and 5 o'clock: from 01:00 the period is an hour, from
        // 02:00 three hours.
        let step = |last: &str, next: &str| {
            let mut s = status(Some(last), next);
            s.schedule = "0 1,2,5 * * *".into();
            s
        };
        let mut w = StaleWatch::default();
        let first = step("2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z");
        assert_eq!(
            check(&mut w, &[first], at("2026-01-01T02:30:00Z")),
            vec!["gc"]
        );
        // It fired at 01:00 and succeeded: 2.5 h since is within twice three
        // hours, not past twice the one hour kept before.
        let moved = step("2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z");
        assert!(check(
            &mut w,
            std::slice::from_ref(&moved),
            at("2026-01-01T03:30:00Z")
        )
        .is_empty());
        assert_eq!(next_check(&w, &[moved]), Some(at("2026-01-01T07:00:01Z")));
    }

    #[test]
    fn what_is_kept_of_a_step_no_longer_declared_is_dropped() {
        let named = |id: &str| {
            let mut s = status(Some("2026-01-01T00:00:00Z"), "2026-01-01T01:00:00Z");
            s.step = id.into();
            s
        };
        let mut w = StaleWatch::default();
        let now = at("2026-01-01T00:30:00Z");
        assert!(check(&mut w, &[named("a"), named("b")], now).is_empty());
        assert_eq!(w.kept_periods(), 2);
        for id in ["c", "d", "e"] {
            assert!(check(&mut w, &[named(id)], now).is_empty());
        }
        assert_eq!(w.kept_periods(), 1);
        assert_eq!(w.first_seen.len(), 1);
    }

    #[test]
    fn the_next_check_is_when_a_step_turns_stale() {
        let mut w = StaleWatch::default();
        let s = status(Some("2026-01-01T00:00:00Z"), "2026-01-01T01:00:00Z");
        assert!(check(&mut w, std::slice::from_ref(&s), at("2026-01-01T00:30:00Z")).is_empty());
        let next = next_check(&w, std::slice::from_ref(&s)).expect("a next check");
        assert_eq!(next, at("2026-01-01T02:00:01Z"));
        assert_eq!(check(&mut w, std::slice::from_ref(&s), next), vec!["gc"]);
        assert_eq!(next_check(&w, &[s]), None, "reported: nothing to wait for");
    }
}
