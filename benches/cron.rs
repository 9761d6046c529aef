//! mesh-host's cron engine against its peer, the raw `cron` crate, in one
//! run: parse, one next fire, and 1000 upcoming fires, in UTC and in a zone
//! with DST (Europe/Amsterdam).
//!
//! The engine wraps the crate (src/cron/engine.rs): it hands the crate a
//! six-field text per day rule, asks it about wall-clock minutes in UTC and
//! maps each candidate onto the zone with Debian's DST rule. The peer is the
//! crate asked directly with the equivalent six-field expression in the
//! same zone. Where the semantics agree the two must produce the same fires,
//! and the run says whether they did; `0 0 1,15 * mon` is where they do
//! not: Debian (and mesh-host) ORs the day fields, the crate ANDs them.
//!
//! `cargo bench --bench cron [-- FILTER]`

mod support;

use std::str::FromStr;

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use mesh_host::cron::CronSchedule;
use support::{Bench, Pair};

/// Debian expression, the crate's equivalent (seconds first, Quartz day
/// names), and a note on what the pair shows.
const CASES: &[(&str, &str, &str)] = &[
    ("*/5 * * * *", "0 */5 * * * *", "every 5 minutes"),
    ("30 3 * * *", "0 30 3 * * *", "daily, fixed time"),
    ("0 9 * * mon-fri", "0 0 9 * * Mon-Fri", "weekdays"),
    (
        "0 0 1,15 * mon",
        "0 0 0 1,15 * Mon",
        "both day fields: mesh-host ORs, the crate ANDs",
    ),
    ("@hourly", "@hourly", "macro"),
];

/// How many fires the "upcoming" measurement takes.
const UPCOMING: usize = 1000;

fn zones() -> [(&'static str, Tz); 2] {
    [
        ("UTC", Tz::UTC),
        ("Europe/Amsterdam", Tz::Europe__Amsterdam),
    ]
}

/// Start instants: the 10th of each month of 2026 (with sub-seconds, which
/// both drop) and the minutes around both 2026 DST changes in Amsterdam.
fn starts() -> Vec<DateTime<Utc>> {
    let mut out: Vec<DateTime<Utc>> = (1..=12)
        .map(|month| {
            Utc.with_ymd_and_hms(2026, month, 10, 10, 17, 23)
                .single()
                .expect("a valid date")
                + chrono::TimeDelta::milliseconds(500)
        })
        .collect();
    for (month, day, hour, minute) in [
        (3, 29, 0, 59),
        (3, 29, 1, 30),
        (10, 25, 0, 30),
        (10, 25, 1, 30),
    ] {
        out.push(
            Utc.with_ymd_and_hms(2026, month, day, hour, minute, 0)
                .single()
                .expect("a valid date"),
        );
    }
    out
}

/// mesh-host's cell, the crate's cell and the ratio.
fn cells(pair: Option<Pair>) -> [String; 3] {
    match pair {
        Some(p) => [p.ours.cell(), p.peer.cell(), p.ratio_cell()],
        None => ["–".to_string(), "–".to_string(), "–".to_string()],
    }
}

/// Whether both produce the same first `UPCOMING` fires from `from`; if
/// not, where they first differ.
fn agreement(ours: &CronSchedule, peer: &cron::Schedule, from: DateTime<Utc>, zone: Tz) -> String {
    let a: Vec<DateTime<Utc>> = ours
        .upcoming(from, zone)
        .take(UPCOMING)
        .map(|t| t.to_utc())
        .collect();
    let b: Vec<DateTime<Utc>> = peer
        .after(&from.with_timezone(&zone))
        .take(UPCOMING)
        .map(|t| t.to_utc())
        .collect();
    match a.iter().zip(&b).position(|(x, y)| x != y) {
        None if a.len() == b.len() => "yes".to_string(),
        None => format!(
            "no: {} vs {} fires (the crate ends in 2100)",
            a.len(),
            b.len()
        ),
        Some(i) => format!(
            "no, from fire {}; {} vs {} fires before 2101",
            i + 1,
            a.len(),
            b.len()
        ),
    }
}

fn main() {
    let mut bench = Bench::from_args();
    let starts = starts();
    let parsed: Vec<(CronSchedule, cron::Schedule)> = CASES
        .iter()
        .map(|(ours, peer, _)| {
            (
                CronSchedule::parse(ours).expect("a valid Debian expression"),
                cron::Schedule::from_str(peer).expect("a valid crate expression"),
            )
        })
        .collect();

    bench.table(
        "Parse one expression",
        &["expression", "mesh-host", "cron crate", "ratio"],
    );
    for (ours, peer, _) in CASES {
        let name = format!("parse {ours}");
        let pair = bench.pair(
            &name,
            || CronSchedule::parse_uncached(ours),
            || cron::Schedule::from_str(peer),
        );
        let [a, b, r] = cells(pair);
        bench.row(&[format!("`{ours}`"), a, b, r]);
    }

    bench.table(
        &format!(
            "Next fire: one call, cycling over {} start instants",
            starts.len()
        ),
        &["expression", "zone", "mesh-host", "cron crate", "ratio"],
    );
    for ((expr, _, _), (ours, peer)) in CASES.iter().zip(&parsed) {
        for (zone_name, zone) in zones() {
            let name = format!("next {expr} {zone_name}");
            let local: Vec<DateTime<Tz>> = starts.iter().map(|t| t.with_timezone(&zone)).collect();
            let (mut i, mut j) = (0, 0);
            let pair = bench.pair(
                &name,
                || {
                    i = (i + 1) % starts.len();
                    ours.next_after(starts[i], zone)
                },
                || {
                    j = (j + 1) % local.len();
                    peer.after(&local[j]).next()
                },
            );
            if pair.is_some() {
                let [a, b, r] = cells(pair);
                bench.row(&[format!("`{expr}`"), zone_name.to_string(), a, b, r]);
            }
        }
    }

    let from = starts[0];
    bench.table(
        &format!("{UPCOMING} upcoming fires from {}", from.to_rfc3339()),
        &[
            "expression",
            "zone",
            "mesh-host",
            "cron crate",
            "ratio",
            "mesh-host per fire",
            "same fires",
        ],
    );
    for ((expr, _, _), (ours, peer)) in CASES.iter().zip(&parsed) {
        for (zone_name, zone) in zones() {
            let name = format!("upcoming {expr} {zone_name}");
            let local = from.with_timezone(&zone);
            let pair = bench.pair(
                &name,
                || ours.upcoming(from, zone).take(UPCOMING).last(),
                || peer.after(&local).take(UPCOMING).last(),
            );
            if let Some(p) = pair {
                let [a, b, r] = cells(pair);
                bench.row(&[
                    format!("`{expr}`"),
                    zone_name.to_string(),
                    a,
                    b,
                    r,
                    support::human(p.ours.median / UPCOMING as u32),
                    agreement(ours, peer, from, zone),
                ]);
            }
        }
    }
    bench.finish("cells are median (fastest–slowest sample) per call.");
}
