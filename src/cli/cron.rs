//! `mesh-host cron EXPR`: preview fire times with the scheduler's own engine.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Serialize;

use super::output::print_json;
use super::{EXIT_OK, EXIT_REFUSED};
use crate::cron::{local_zone, CronSchedule};

#[derive(Debug, Serialize)]
struct Preview {
    expression: String,
    zone: String,
    from: String,
    next: Vec<String>,
}

/// Run the command.
pub fn run(expr: &str, from: Option<&str>, count: usize, zone: Option<&str>, json: bool) -> u8 {
    let zone: Tz = match zone {
        Some(z) => match z.parse() {
            Ok(z) => z,
            Err(_) => {
                eprintln!("mesh-host: --zone {z}: not a known IANA time zone");
                return EXIT_REFUSED;
            }
        },
        None => local_zone(),
    };
    let from: DateTime<Utc> = match from {
        Some(f) => match DateTime::parse_from_rfc3339(f) {
            Ok(t) => t.to_utc(),
            Err(e) => {
                eprintln!("mesh-host: --from {f}: not an RFC 3339 time ({e}); e.g. 2026-03-29T00:00:00+01:00");
                return EXIT_REFUSED;
            }
        },
        None => Utc::now(),
    };
    let schedule = match CronSchedule::parse(expr) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mesh-host: {expr:?}: {e}");
            return EXIT_REFUSED;
        }
    };
    let next: Vec<String> = schedule
        .upcoming(from, zone)
        .take(count)
        .map(|t| t.to_rfc3339())
        .collect();
    if json {
        print_json(&Preview {
            expression: expr.to_string(),
            zone: zone.name().to_string(),
            from: from.with_timezone(&zone).to_rfc3339(),
            next,
        });
    } else {
        for t in next {
            println!("{t}");
        }
    }
    EXIT_OK
}
