//! The scheduler's job table (`mesh_host::schedule::jobs::JobTable`): what
//! one turn of the scheduler loop costs, and what a re-sync after an apply
//! costs.
//!
//! Each turn of the loop (src/schedule/scheduler.rs) calls `due(now)` and
//! then `next_wake()`; the loop turns when something is due, on a command,
//! at the end of a fire and for the watchdog (no longer once a second, but
//! the hour of ticks below still measures that old pace as an upper
//! bound); a tick here is that pair. Firing itself (a task, Docker,
//! systemd) is not part of it.
//!
//! - idle tick: nothing is due, the common case;
//! - an hour of ticks, one a second, over a mix of schedules;
//! - the worst tick: every job due at once (all every minute), on a fresh
//!   table and on one that has handled 2048 fires per job, the most a job
//!   remembers, so each next due time is checked against a full memory;
//! - `sync` of N steps into an empty table (all armed), again unchanged
//!   (all kept), and with every step changed (all re-armed).
//!
//! `cargo bench --bench jobs [-- FILTER]`

mod support;

use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use chrono_tz::Tz;
use mesh_host::cron::CronSchedule;
use mesh_host::schedule::jobs::{Decision, Fingerprint, JobTable, StepTiming};
use mesh_host::schedule::scheduler::{StepHistory, StepStatus};
use mesh_host::schedule::stale::{StaleWatch, StepView};
use support::{human, Bench, Stats};

/// The schedules of the mixed table, taken in turn.
const MIX: [&str; 5] = [
    "* * * * *",
    "*/5 * * * *",
    "*/15 * * * *",
    "@hourly",
    "30 3 * * *",
];

/// What a long-running job remembers (`HANDLED_MEMORY` in jobs.rs).
const MEMORY: usize = 2048;

const SIZES: [usize; 3] = [10, 100, 1000];

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 10, 10, 0, 30)
        .single()
        .expect("a valid date")
}

/// `n` steps taking their schedules from `schedules` in turn, alternating
/// UTC and Europe/Amsterdam.
fn steps(n: usize, schedules: &[&str], tag: &str) -> Vec<StepTiming> {
    let parsed: Vec<CronSchedule> = schedules
        .iter()
        .map(|s| CronSchedule::parse(s).expect("a valid expression"))
        .collect();
    (0..n)
        .map(|i| StepTiming {
            id: format!("step-{i:05}"),
            cron: parsed[i % parsed.len()].clone(),
            zone: if i % 2 == 0 {
                Tz::UTC
            } else {
                Tz::Europe__Amsterdam
            },
            fingerprint: Fingerprint::of(format!("{tag}-{i}").as_bytes()),
            delay: std::time::Duration::ZERO,
            catch_up: false,
        })
        .collect()
}

fn table(steps: Vec<StepTiming>, now: DateTime<Utc>) -> JobTable {
    let mut table = JobTable::new();
    table.sync(steps, &BTreeMap::new(), now);
    table
}

/// One turn of the scheduler loop, as far as the table is concerned.
fn tick(table: &mut JobTable, now: DateTime<Utc>) -> (usize, Option<DateTime<Utc>>) {
    let fired = table
        .due(now)
        .iter()
        .filter(|d| matches!(d, Decision::Fire { .. }))
        .count();
    (fired, table.next_wake())
}

fn cell(stats: Option<Stats>) -> String {
    stats.map_or_else(|| "–".to_string(), |s| s.cell())
}

fn main() {
    let mut bench = Bench::from_args();
    let minute = TimeDelta::minutes(1);

    bench.table(
        "One scheduler tick (`due` + `next_wake`)",
        &[
            "jobs",
            "idle tick",
            "worst tick: all due",
            "worst tick, 2048 handled per job",
        ],
    );
    for n in SIZES {
        let name = format!("tick {n}");
        if !bench.selected(&name) {
            continue;
        }
        // Idle: armed at t0, asked again and again 1 s later.
        let mut idle = table(steps(n, &MIX, "a"), t0());
        let now = t0() + TimeDelta::seconds(1);
        let a = bench.run(&name, || tick(&mut idle, now));

        // Every job due at once: a fresh table armed at t0, ticked at the
        // next minute boundary.
        let every_minute = steps(n, &["* * * * *"], "a");
        let b = bench.run_with_setup(
            &name,
            || table(every_minute.clone(), t0()),
            |mut fresh| {
                let out = tick(&mut fresh, t0() + minute);
                debug_assert_eq!(out.0, n);
                (out, fresh)
            },
        );

        // The same after MEMORY fires per job (built once, untimed).
        let c = if bench.measuring() {
            let mut full = table(every_minute, t0());
            let mut k: i32 = 0;
            while k < MEMORY as i32 {
                k += 1;
                tick(&mut full, t0() + minute * k);
            }
            bench.run_with_setup(
                &name,
                || {
                    k += 1;
                    t0() + minute * k
                },
                |now| tick(&mut full, now),
            )
        } else {
            None
        };
        if bench.measuring() {
            bench.row(&[n.to_string(), cell(a), cell(b), cell(c)]);
        }
    }

    bench.table(
        &format!(
            "An hour of ticks, one a second (3600), over the mix {}",
            MIX.map(|s| format!("`{s}`")).join(", ")
        ),
        &["jobs", "fires in the hour", "the hour", "per tick (mean)"],
    );
    for n in SIZES {
        let name = format!("hour {n}");
        let mut fires = 0;
        let stats = bench.run_with_setup(
            &name,
            || table(steps(n, &MIX, "a"), t0()),
            |mut table| {
                let mut total = 0;
                for s in 1..=3600 {
                    total += tick(&mut table, t0() + TimeDelta::seconds(s)).0;
                }
                fires = total;
                total
            },
        );
        if let Some(s) = stats {
            bench.row(&[
                n.to_string(),
                fires.to_string(),
                s.cell(),
                human(s.median / 3600),
            ]);
        }
    }

    bench.table(
        "`sync` of N steps",
        &[
            "steps",
            "into an empty table (all added)",
            "unchanged (all kept)",
            "all changed (all re-armed)",
        ],
    );
    for n in [100, 1000] {
        let name = format!("sync {n}");
        let history = BTreeMap::new();
        let now = t0();
        let base = steps(n, &MIX, "a");
        let changed = steps(n, &MIX, "b");
        let added = bench.run_with_setup(
            &name,
            || (JobTable::new(), base.clone()),
            |(mut table, steps)| {
                table.sync(steps, &history, now);
                table
            },
        );
        let kept = bench.run_with_setup(
            &name,
            || (table(base.clone(), now), base.clone()),
            |(mut table, steps)| {
                let report = table.sync(steps, &history, now).0;
                debug_assert_eq!(report.kept.len(), n);
                table
            },
        );
        let rearmed = bench.run_with_setup(
            &name,
            || (table(base.clone(), now), changed.clone()),
            |(mut table, steps)| {
                let report = table.sync(steps, &history, now).0;
                debug_assert_eq!(report.rearmed.len(), n);
                table
            },
        );
        if bench.measuring() && bench.selected(&name) {
            bench.row(&[n.to_string(), cell(added), cell(kept), cell(rearmed)]);
        }
    }
    bench.table(
        "The stale watch on a change of the steps' state (`check` + `next_check`), each step with a next fire of its own",
        &["steps", "one step fired since", "every step fired since"],
    );
    for n in [100, 1000, 5000] {
        let name = format!("stale {n}");
        if !bench.selected(&name) {
            continue;
        }
        let now = t0();
        let before = statuses(n, now, 0);
        let mut primed = StaleWatch::default();
        let views: Vec<StepView<'_>> = before.iter().map(StepStatus::view).collect();
        primed.check(&views, now);
        let _ = primed.next_check(&views);
        let mut one = before.clone();
        one[n / 2] = statuses(n, now, 1).swap_remove(n / 2);
        let every = statuses(n, now, 1);
        // The scheduler lends views of its own tables; built here from
        // statuses, which costs a walk too.
        let change = |(mut watch, steps): (StaleWatch, Vec<StepStatus>)| {
            let views: Vec<StepView<'_>> = steps.iter().map(StepStatus::view).collect();
            let stale = watch.check(&views, now + TimeDelta::seconds(1));
            (stale, watch.next_check(&views))
        };
        let a = bench.run_with_setup(&name, || (primed.clone(), one.clone()), change);
        let b = bench.run_with_setup(&name, || (primed.clone(), every.clone()), change);
        if bench.measuring() {
            bench.row(&[n.to_string(), cell(a), cell(b)]);
        }
    }
    bench.finish("cells are median (fastest–slowest sample). Worst ticks, hours and syncs time one call per sample on a fresh input.");
}

/// `n` steps over the mix as the scheduler reports them, step `i` splayed
/// by `i` seconds (a next fire of its own), each `fired` fires past `now`,
/// every one succeeded a minute before `now`.
fn statuses(n: usize, now: DateTime<Utc>, fired: usize) -> Vec<StepStatus> {
    (0..n)
        .map(|i| {
            let schedule = MIX[i % MIX.len()];
            let cron = CronSchedule::parse(schedule).expect("a valid expression");
            let delay = TimeDelta::seconds(i64::try_from(i % 3600).unwrap_or(0));
            let mut next = cron.next_after(now, Tz::UTC).expect("a next fire").to_utc();
            for _ in 0..fired {
                next = cron
                    .next_after(next, Tz::UTC)
                    .expect("a next fire")
                    .to_utc();
            }
            StepStatus {
                step: format!("step-{i:05}"),
                schedule: schedule.to_string(),
                zone: "UTC".to_string(),
                next_fire: Some(next + delay),
                delay_ms: Some(u64::try_from(delay.num_milliseconds()).unwrap_or(0)),
                running: false,
                ready: None,
                suspended_since: None,
                history: StepHistory {
                    last_success: Some(now - TimeDelta::minutes(1)),
                    ..StepHistory::default()
                },
            }
        })
        .collect()
}
