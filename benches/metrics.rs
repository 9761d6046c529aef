//! The metrics (`mesh_host::metrics`): what one write after a fire, an
//! apply or a window change costs the daemon.
//!
//! - render: the Prometheus text of N steps (each with every series, two of
//!   every ten in an open window), never fired, or each with a month of
//!   daily fires in its histograms (docs/metrics.md);
//! - write: that text written as the daemon writes it (temporary file,
//!   fsync, rename, directory fsync) into a directory of the target dir.
//!
//! `cargo bench --bench metrics [-- FILTER]`

mod support;

use std::collections::BTreeMap;

use chrono::{DateTime, TimeZone, Utc};
use mesh_host::metrics::counters::StepCounters;
use mesh_host::metrics::{
    histogram, text, textfile, ApplyMetrics, Snapshot, StepMetrics, WindowMetrics, OUTCOMES,
};
use support::Bench;

const SIZES: [usize; 3] = [10, 100, 1000];

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 1, 3, 0, 0)
        .single()
        .expect("a valid date")
}

/// N steps; `fired`: each has run, so each has its histograms (a fire a
/// day for a month, half of them in a window).
fn snapshot(n: usize, fired: bool) -> Snapshot {
    let mut accounted = StepCounters::default();
    for day in 0..30 {
        let d = day as f64;
        accounted.duration.observe(&histogram::DURATION, 30.0 + d);
        accounted.cpu.observe(&histogram::CPU, 8.0 + d / 10.0);
        accounted
            .memory_peak
            .observe(&histogram::MEMORY_PEAK, 2.4e8 + d * 1e6);
        if day % 2 == 0 {
            accounted.held.observe(&histogram::HELD, 12.0 + d);
        }
    }
    let fires: BTreeMap<String, u64> = OUTCOMES
        .iter()
        .enumerate()
        .map(|(i, o)| (o.to_string(), 1000 * i as u64))
        .collect();
    let steps = (0..n)
        .map(|i| StepMetrics {
            step: format!("step-{i:05}"),
            module: format!("module-{}", i % 7),
            next_fire: Some(t0()),
            period_secs: Some(86400.0),
            last_success: Some(t0()),
            last_run: Some(t0()),
            last_run_duration_secs: Some(12.345),
            last_exit_status: Some(0),
            running: i % 10 < 2,
            suspended_since: None,
            fires: fires.clone(),
            missed: i as u64 % 3,
            accounted: if fired {
                accounted.clone()
            } else {
                StepCounters::default()
            },
            last_cpu_secs: fired.then_some(8.1),
            last_memory_peak_bytes: fired.then_some(251_658_240),
            memory_limit_bytes: fired.then_some(268_435_456),
        })
        .collect();
    let windows = (0..n)
        .filter(|i| i % 10 < 2)
        .map(|i| WindowMetrics {
            step: format!("step-{i:05}"),
            opened_at: t0(),
            bound_secs: 600.0,
            held: 2,
        })
        .collect();
    Snapshot {
        steps,
        windows,
        will_not_start_again_total: 3,
        rollouts_rolled_back_total: 1,
        apply: Some(ApplyMetrics {
            at: t0(),
            ok: true,
            last_success: Some(t0()),
        }),
    }
}

fn main() {
    let mut bench = Bench::from_args();
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench-metrics");
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("mesh-host.prom");

    bench.table(
        "One metrics write",
        &[
            "steps",
            "fired",
            "text size",
            "render",
            "write (atomic, fsynced)",
        ],
    );
    for n in SIZES {
        for fired in [false, true] {
            let name = format!("metrics {n}{}", if fired { " fired" } else { "" });
            if !bench.selected(&name) {
                continue;
            }
            let snap = snapshot(n, fired);
            let rendered = text::render(&snap);
            let render = bench.run(&name, || text::render(&snap));
            let write = bench.run(&name, || textfile::write(&path, &rendered).expect("write"));
            if let (Some(r), Some(w)) = (render, write) {
                bench.row(&[
                    n.to_string(),
                    if fired { "yes" } else { "no" }.to_string(),
                    format!("{} KiB", rendered.len() / 1024),
                    r.cell(),
                    w.cell(),
                ]);
            }
        }
    }
    bench.finish("median (fastest–slowest sample) per write");
}
