//! Next-fire computation: the `cron` crate finds matching wall-clock minutes,
//! this module maps them onto real instants with Debian's DST rule.
//!
//! The crate is asked only about naive wall-clock time (it is evaluated in
//! UTC, which has no DST), so its own DST handling never comes into play. Each
//! matching wall-clock minute `n` is then turned into the instants at which
//! Debian's cron would run it in the zone:
//!
//! - `n` exists once: that instant;
//! - `n` exists twice (clock turned back): a clock-following job at both, a
//!   fixed-time job at the first only;
//! - `n` does not exist (clock turned forward): a clock-following job never,
//!   a fixed-time job at the first instant after the gap.
//!
//! Because the clock can run backwards, wall-clock order is not instant
//! order near a change, so candidates are scanned over a window bounded by
//! the zone's offsets around the start and around the best fire found.

use std::str::FromStr;

use chrono::{DateTime, LocalResult, NaiveDateTime, Offset, TimeDelta, TimeZone, Utc};
use chrono_tz::{GapInfo, Tz};

use super::error::CronError;
use super::parse::Fields;

/// How far apart offsets are sampled: wider than any real clock change
/// (date-line moves reach 24 h) so that one window holds at most one change.
const WINDOW: i64 = 26 * 3600;

/// Two days before the crate's first year (1970), in Unix seconds.
const EARLIEST: i64 = -2 * 86_400;

/// The `cron` crate schedules equivalent to the parsed fields.
///
/// One schedule when cron ANDs the day fields (the crate ANDs them too), two
/// when it ORs them: one restricting day-of-month, one day-of-week; a minute
/// matches when either matches.
///
/// Shared, not copied, by clones: a declaration's step, the scheduler's
/// copy and its job table's hold one schedule between them (a crate
/// schedule is a few kilobytes of sets; five thousand steps held three
/// copies each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Engine {
    schedules: std::sync::Arc<[cron::Schedule]>,
    fixed_time: bool,
}

impl Engine {
    /// Build the crate schedules for `fields`.
    pub(super) fn build(fields: &Fields) -> Result<Self, CronError> {
        let minutes = list(fields.minutes, 0..=59, 0);
        let hours = list(fields.hours, 0..=23, 0);
        let doms = list(fields.days_of_month, 1..=31, 0);
        let months = list(fields.months, 1..=12, 0);
        // The crate numbers days Quartz-style, 1 = Sunday .. 7 = Saturday.
        let dows = list(fields.days_of_week, 0..=6, 1);
        // The crate's grammar leads with seconds; cron runs at second 0.
        let texts = if fields.days_ored() {
            vec![
                format!("0 {minutes} {hours} {doms} {months} *"),
                format!("0 {minutes} {hours} * {months} {dows}"),
            ]
        } else {
            vec![format!("0 {minutes} {hours} {doms} {months} {dows}")]
        };
        let schedules = texts
            .iter()
            .map(|text| {
                cron::Schedule::from_str(text)
                    .map_err(|e| CronError(format!("cannot build the schedule '{text}': {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            schedules: schedules.into(),
            fixed_time: fields.is_fixed_time(),
        })
    }

    /// The first fire strictly after `after` (whole seconds) in `zone`.
    pub(super) fn next_after(&self, after: DateTime<Utc>, zone: Tz) -> Option<DateTime<Tz>> {
        // Fires fall on whole seconds, so "after the second `after` is in"
        // is the same as "after `after`": sub-seconds are dropped.
        // The crate's calendar starts in 1970; earlier starts behave alike.
        let start = after.timestamp().max(EARLIEST).checked_add(1)?;
        // Any fire at or after `start` belongs to a wall-clock minute no
        // earlier than `start` plus the smallest offset in force around it;
        // the second before `start` counts for a gap ending at `start`.
        let mut low = i64::MAX;
        let mut high = i64::MIN;
        for t in [start - 1, start, start + WINDOW / 2, start + WINDOW] {
            let offset = offset_at(zone, t)?;
            low = low.min(offset);
            high = high.max(offset);
        }
        let first = naive_at(start.checked_add(low)?)?;
        let mut best: Option<i64> = None;
        for minute in self.candidates(first) {
            let wall = minute.and_utc().timestamp();
            // A later minute fires no earlier than `wall - high`; once that
            // is past the best fire nothing later can beat it.
            if best.is_some_and(|b| wall - high > b) {
                break;
            }
            for fire in self.fires_of(minute, zone).into_iter().flatten() {
                let fire = fire.timestamp();
                if fire >= start && best.is_none_or(|b| fire < b) {
                    best = Some(fire);
                    // A fire before this one from a later wall-clock minute
                    // needs the clock turned back shortly before it. The
                    // offsets sampled around `start` already cover every
                    // real zone (forward and back changes are months
                    // apart); this keeps the bound sound without that.
                    for t in [fire - WINDOW, fire - WINDOW / 2, fire] {
                        if let Some(offset) = offset_at(zone, t) {
                            high = high.max(offset);
                        }
                    }
                }
            }
        }
        best.and_then(|b| DateTime::from_timestamp(b, 0))
            .map(|b| b.with_timezone(&zone))
    }

    /// The instants at which wall-clock `minute` runs in `zone` (Debian's
    /// cron.c: fixed-time jobs run once, catching up after a gap;
    /// clock-following jobs run whenever the clock shows the minute).
    fn fires_of(&self, minute: NaiveDateTime, zone: Tz) -> [Option<DateTime<Tz>>; 2] {
        match zone.from_local_datetime(&minute) {
            LocalResult::Single(t) => [Some(t), None],
            LocalResult::Ambiguous(first, _) if self.fixed_time => [Some(first), None],
            LocalResult::Ambiguous(first, second) => [Some(first), Some(second)],
            LocalResult::None if self.fixed_time => {
                [GapInfo::new(&minute, &zone).and_then(|gap| gap.end), None]
            }
            LocalResult::None => [None, None],
        }
    }

    /// Matching wall-clock minutes at or after `from`, in order, merged
    /// across the crate schedules.
    fn candidates(&self, from: NaiveDateTime) -> Candidates {
        // The crate's iterator is exclusive of its start.
        let before = Utc.from_utc_datetime(&from) - TimeDelta::seconds(1);
        let heads = self
            .schedules
            .iter()
            .map(|schedule| {
                let mut iter = schedule.after_owned(before);
                let head = iter.next();
                (iter, head)
            })
            .collect();
        Candidates { heads }
    }
}

/// Merge of the crate iterators, yielding each minute once.
struct Candidates {
    heads: Vec<(cron::OwnedScheduleIterator<Utc>, Option<DateTime<Utc>>)>,
}

impl Iterator for Candidates {
    type Item = NaiveDateTime;

    fn next(&mut self) -> Option<NaiveDateTime> {
        let earliest = self.heads.iter().filter_map(|(_, head)| *head).min()?;
        for (iter, head) in &mut self.heads {
            if *head == Some(earliest) {
                *head = iter.next();
            }
        }
        Some(earliest.naive_utc())
    }
}

/// A bit set as the crate's comma list, values shifted by `shift`.
fn list(bits: u64, values: std::ops::RangeInclusive<u32>, shift: u32) -> String {
    values
        .filter(|v| bits & (1 << v) != 0)
        .map(|v| (v + shift).to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// The zone's offset from UTC, in seconds, at instant `t` (Unix seconds).
fn offset_at(zone: Tz, t: i64) -> Option<i64> {
    let instant = DateTime::from_timestamp(t, 0)?;
    Some(i64::from(
        zone.offset_from_utc_datetime(&instant.naive_utc())
            .fix()
            .local_minus_utc(),
    ))
}

/// Wall-clock time `t` seconds from the epoch's wall clock.
fn naive_at(t: i64) -> Option<NaiveDateTime> {
    DateTime::from_timestamp(t, 0).map(|d| d.naive_utc())
}
