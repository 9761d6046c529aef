//! `mesh-host cron EXPR`: preview fire times with the scheduler's own engine.

use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Serialize;

use super::args::{EXIT_OK, EXIT_REFUSED};
use super::output::print_json;
use crate::cron::{local_zone, CronSchedule};

#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
struct Preview {
    expression: String,
    zone: String,
    from: String,
    /// The splay of the step (`--randomized-delay` and `--step`), in
    /// milliseconds, included in `next`.
    #[serde(skip_serializing_if = "Option::is_none")]
    delay_ms: Option<u64>,
    next: Vec<String>,
}

/// What `cron` was asked besides the expression.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    /// Start after this time (RFC 3339); now when `None`.
    pub from: Option<&'a str>,
    /// How many fire times.
    pub count: usize,
    /// The zone; the host's when `None`.
    pub zone: Option<&'a str>,
    /// `randomized-delay` seconds and the step id the delay is derived for.
    pub splay: Option<(u64, &'a str)>,
}

/// Run the command.
pub fn run(expr: &str, options: Options<'_>, json: bool) -> u8 {
    let Options {
        from,
        count,
        zone,
        splay,
    } = options;
    let zone: Tz = match zone {
        Some(z) => match z.parse() {
            Ok(z) => z,
            Err(_) => {
                crate::errln!("mesh-host: --zone {z:?}: not a known IANA time zone");
                return EXIT_REFUSED;
            }
        },
        None => local_zone(),
    };
    let from: DateTime<Utc> = match from {
        Some(f) => match DateTime::parse_from_rfc3339(f) {
            Ok(t) => t.to_utc(),
            Err(e) => {
                crate::errln!("mesh-host: --from {f:?}: not an RFC 3339 time ({e}); e.g. 2026-03-29T00:00:00+01:00");
                return EXIT_REFUSED;
            }
        },
        None => Utc::now(),
    };
    let schedule = match CronSchedule::parse(expr) {
        Ok(s) => s,
        Err(e) => {
            crate::errln!("mesh-host: {expr:?}: {e}");
            return EXIT_REFUSED;
        }
    };
    let delay = match splay {
        Some((0, _)) => {
            crate::errln!("mesh-host: --randomized-delay 0: must be at least 1 second");
            return EXIT_REFUSED;
        }
        Some((secs, step)) => Some(crate::schedule::splay::delay(
            &crate::schedule::splay::machine_id(),
            step,
            Duration::from_secs(secs),
        )),
        None => None,
    };
    let next: Vec<String> = std::iter::successors(next_fire(&schedule, zone, delay, from), |t| {
        next_fire(&schedule, zone, delay, *t)
    })
    .take(count)
    .map(|t| t.with_timezone(&zone).to_rfc3339())
    .collect();
    if json {
        print_json(&Preview {
            expression: expr.to_string(),
            zone: zone.name().to_string(),
            from: from.with_timezone(&zone).to_rfc3339(),
            delay_ms: delay.map(|d| d.as_millis() as u64),
            next,
        });
    } else {
        if let Some(d) = delay {
            crate::errln!(
                "randomized delay on this node: {}",
                crate::schedule::splay::describe(d)
            );
        }
        for t in next {
            crate::outln!("{t}");
        }
    }
    EXIT_OK
}

/// The first fire after `t`, delayed as the step would be.
fn next_fire(
    schedule: &CronSchedule,
    zone: Tz,
    delay: Option<Duration>,
    t: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    crate::schedule::splay::next_fire(schedule, zone, delay.unwrap_or_default(), t)
}
