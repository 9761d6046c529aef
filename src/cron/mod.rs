//! Cron with Debian cron's semantics, wrapped around the `cron` crate.
//!
//! This is the host's only cron engine: the declaration validates
//! `schedule` with it, the scheduler asks it for the next fire, and
//! `mesh-host cron` previews it. Expressions mean what they mean in a Debian
//! crontab (vixie cron as Debian ships it; cronie behaves the same), because
//! that is what operators already know.
//!
//! # Grammar
//!
//! Five fields, `minute hour day-of-month month day-of-week`, separated by
//! blanks. Each field is a list (`,`) of `*`, `N` or `N-M`, where `*` and
//! ranges may take a step (`*/15`, `1-30/5`). Month and day-of-week take
//! three-letter names, any case (`jan`..`dec`, `sun`..`sat`), also as range
//! ends (`mon-fri`). Day-of-week 0 and 7 are both Sunday. Macros: `@yearly`
//! and `@annually` (`0 0 1 1 *`), `@monthly` (`0 0 1 * *`), `@weekly`
//! (`0 0 * * 0`), `@daily` and `@midnight` (`0 0 * * *`), `@hourly`
//! (`0 * * * *`).
//!
//! Refused, each with a message naming the field and the reason:
//! six or seven fields (seconds and years), `@reboot` (a step runs on a
//! calendar), Quartz's `?`, `L`, `W` and `#`, `N/STEP` without a range
//! (Debian refuses it), a step of 0, values out of range ("minute: 61 is out
//! of range 0-59"), and expressions that can never fire: a reversed range
//! such as `5-1` (Debian accepts it and silently never runs it) and a
//! day-of-month that no listed month has (`0 0 30 2 *`,
//! `0 0 31 4,6,9,11 *`; February 29 is a real date, so `0 0 29 2 *` fires in
//! leap years).
//!
//! # The day rule
//!
//! As in cron.c: when neither day field starts with `*` a day matches if
//! **either** matches (`30 4 1,15 * 5`: the 1st, the 15th and every Friday).
//! When one starts with `*`, both are required; for a plain `*` that is the
//! other field alone, and `0 0 */2 * mon` means Mondays with an odd date,
//! exactly as Debian runs it.
//!
//! # Time zones and DST
//!
//! A schedule is evaluated in its zone's wall clock. Across a DST change
//! the engine reproduces Debian's cron.c main loop, which tells jobs apart
//! by their minute and hour fields:
//!
//! - a **fixed-time** job (neither minute nor hour starts with `*`, e.g.
//!   `30 2 * * *`, [`CronSchedule::is_fixed_time`]) runs once per wall-clock
//!   time. When the clock jumps forward, cron.c catches up the skipped
//!   minutes for fixed-time jobs right after the change, so `30 2 * * *`
//!   runs at 03:00 local in Europe/Amsterdam on the spring-forward day. When
//!   the clock turns back, cron.c holds its virtual time until the wall
//!   clock catches up and runs no fixed-time job meanwhile, so the job runs
//!   in the first occurrence of the repeated hour only.
//! - a **clock-following** job (minute or hour starts with `*`, e.g.
//!   `*/15 * * * *`, `0 * * * *`, `@hourly`) runs whenever the wall clock
//!   shows a matching minute: not at all for minutes in a skipped hour, and
//!   in both occurrences of a repeated hour (cron.c runs wildcard jobs on
//!   every wake-up, whatever happened to the clock).
//!
//! The reasoning is cron's: a daily backup at 02:30 should run every day,
//! once; a job every 15 minutes is about the passing of time, so it keeps
//! going through the repeated hour and has nothing to catch up. cron.c only
//! catches up jumps of up to three hours; this engine applies the rule to
//! any change, which matters only for historic date-line moves.
//!
//! # Built on the `cron` crate
//!
//! The crate's grammar is `sec min hour dom month dow [year]` with Quartz
//! day numbers (1 = Sunday), it ANDs the day fields and it fires twice in a
//! repeated hour and never in a skipped one. So the five fields are parsed
//! here, day-of-week is renumbered, the OR rule becomes two crate schedules
//! whose next fires are merged, and the crate only ever sees wall-clock
//! time (evaluated in UTC); the DST rule above is applied on top. The
//! crate's calendar ends in 2100: no fire is computed after that year.

mod engine;
mod error;
mod parse;
mod zone;

#[cfg(test)]
mod brute_tests;
#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

pub use error::CronError;
pub use zone::local_zone;

/// A parsed five-field Debian cron expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronSchedule {
    expr: String,
    fields: parse::Fields,
    engine: engine::Engine,
}

/// How many parsed expressions [`CronSchedule::parse`] keeps.
const PARSED_KEPT: usize = 4096;

impl CronSchedule {
    /// Parse an expression as Debian cron reads it, refusing what Debian
    /// refuses and what could never fire.
    ///
    /// An expression parsed before is not parsed again: five thousand
    /// steps `0 3 * * *` are one parse (10–16 µs each otherwise, for each
    /// apply, `status` and metrics write), and share one schedule. The
    /// memory is bounded (`PARSED_KEPT` expressions).
    pub fn parse(expr: &str) -> Result<Self, CronError> {
        static PARSED: std::sync::Mutex<Option<std::collections::HashMap<String, CronSchedule>>> =
            std::sync::Mutex::new(None);
        let mut parsed = PARSED.lock().unwrap_or_else(|e| e.into_inner());
        let parsed = parsed.get_or_insert_with(Default::default);
        if let Some(known) = parsed.get(expr) {
            return Ok(known.clone());
        }
        let schedule = Self::parse_uncached(expr)?;
        if parsed.len() >= PARSED_KEPT {
            parsed.clear();
        }
        parsed.insert(expr.to_string(), schedule.clone());
        Ok(schedule)
    }

    /// [`CronSchedule::parse`] without its memory: what one parse costs
    /// (`benches/cron.rs`).
    pub fn parse_uncached(expr: &str) -> Result<Self, CronError> {
        let fields = parse::parse_expression(expr)?;
        let engine = engine::Engine::build(&fields)?;
        Ok(Self {
            expr: expr.to_string(),
            fields,
            engine,
        })
    }

    /// The expression as written.
    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// Whether neither minute nor hour starts with `*`: such a job catches
    /// up after a skipped hour and runs once in a repeated one.
    pub fn is_fixed_time(&self) -> bool {
        self.fields.is_fixed_time()
    }

    /// The first fire strictly after `after`, evaluated in `zone`, with
    /// sub-seconds of `after` dropped. `None` when there is none before the
    /// end of 2100.
    pub fn next_after(&self, after: DateTime<Utc>, zone: Tz) -> Option<DateTime<Tz>> {
        self.engine.next_after(after, zone)
    }

    /// The fires strictly after `after`, in order, evaluated in `zone`.
    pub fn upcoming(&self, after: DateTime<Utc>, zone: Tz) -> Upcoming<'_> {
        Upcoming {
            schedule: self,
            cursor: Some(after),
            zone,
        }
    }
}

impl FromStr for CronSchedule {
    type Err = CronError;

    fn from_str(expr: &str) -> Result<Self, CronError> {
        Self::parse(expr)
    }
}

impl fmt::Display for CronSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expr)
    }
}

/// Iterator over a schedule's fires, from [`CronSchedule::upcoming`].
#[derive(Debug, Clone)]
pub struct Upcoming<'a> {
    schedule: &'a CronSchedule,
    cursor: Option<DateTime<Utc>>,
    zone: Tz,
}

impl Iterator for Upcoming<'_> {
    type Item = DateTime<Tz>;

    fn next(&mut self) -> Option<DateTime<Tz>> {
        let after = self.cursor.take()?;
        let fire = self.schedule.next_after(after, self.zone)?;
        self.cursor = Some(fire.with_timezone(&Utc));
        Some(fire)
    }
}

/// The next `count` fires of `expr` after `from` in `zone`, for
/// `mesh-host cron`; fewer when the schedule ends (after 2100).
pub fn preview(
    expr: &str,
    from: DateTime<Utc>,
    count: usize,
    zone: Tz,
) -> Result<Vec<DateTime<Tz>>, CronError> {
    let schedule = CronSchedule::parse(expr)?;
    Ok(schedule.upcoming(from, zone).take(count).collect())
}
