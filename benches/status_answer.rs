//! The `status --json` answer of N steps as the daemon makes it and puts
//! it on the control socket, two ways side by side in one run:
//!
//! - **tree**: the answer turned into a tree of JSON values
//!   (`serde_json::to_value`), the response then written from the tree:
//!   what the daemon did before `Response` carried its document as text;
//! - **written**: the document written straight from the typed answer
//!   (`control::document`, as `Answer::response_in` does), carried as it
//!   is: what it does now.
//!
//! For each: the blocks and bytes allocated while the answer is made and
//! written, the heap held once its bytes are written (its document, as a
//! tree or as text, and the response's bytes, all live at once, over the
//! typed answer both ways share; a buffer grown by doubling held up to
//! twice its text for a moment before), and the time, best of runs. The steps are the scheduler's `StepStatus`, each with a last
//! run and its figures, as `status` lists them after a night of fires.
//!
//! `cargo bench --bench status_answer` (500, 5,000 and 20,000 steps;
//! `BENCH_SIZES` measures others); any other run (`cargo test --benches`)
//! does 20 and 100, as a check that the bench works and that both ways
//! give the same document.

use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use mesh_host::accounting::Usage;
use mesh_host::answer::status::{Status, Steps};
use mesh_host::control::{self, Response};
use mesh_host::schedule::history::StepHistory;
use mesh_host::schedule::scheduler::StepStatus;
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use std::alloc::System;

#[global_allocator]
static HEAP: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Runs of each way at each size; the best is kept.
const RUNS: usize = 5;

/// Blocks allocated, bytes allocated, and bytes held now.
fn counts() -> (usize, usize, i64) {
    let s = HEAP.stats();
    let signed = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    (
        s.allocations + s.reallocations,
        s.bytes_allocated,
        signed(s.bytes_allocated) - signed(s.bytes_deallocated),
    )
}

/// The answer of `n` steps, each fired once.
fn status(n: usize) -> Status {
    let t = |h| Utc.with_ymd_and_hms(2026, 12, 6, h, 0, 0).single();
    let steps = (1..=n)
        .map(|i| StepStatus {
            step: format!("t{i}"),
            schedule: if i % 2 == 0 {
                "0 3 * * *"
            } else {
                "0 15 * * *"
            }
            .into(),
            zone: "UTC".into(),
            next_fire: t(15),
            delay_ms: None,
            running: false,
            ready: None,
            suspended_since: None,
            history: StepHistory {
                last_due: t(3),
                last_run: t(3),
                last_outcome: Some("succeeded".into()),
                last_exit_status: Some(0),
                last_duration_secs: Some(1.25),
                last_usage: Some(Box::new(Usage {
                    cpu_usec: Some(41_000),
                    memory_peak_bytes: Some(3 << 20),
                    ..Usage::default()
                })),
                last_success: t(3),
                ..StepHistory::default()
            },
        })
        .collect();
    Status {
        declaration: "/etc/mesh-host/declaration.json".into(),
        state_dir: "/var/lib/mesh-host".into(),
        daemon_listening: true,
        last_apply: None,
        empty_declaration_refused: None,
        open_windows: Vec::new(),
        health: serde_json::json!([]),
        shared_folders: Vec::new(),
        steps: Steps::Listed(steps),
        steps_scheduled: n,
        attention: Vec::new(),
    }
}

/// The response's bytes on the socket, made from a tree of values.
#[derive(serde::Serialize)]
struct TreeResponse {
    exit: u8,
    text: String,
    json: serde_json::Value,
}

/// What one way cost: blocks, bytes allocated, bytes held at the end,
/// time; and the document it wrote, for the check.
struct Cost {
    blocks: usize,
    bytes: usize,
    held: i64,
    took: Duration,
    document: serde_json::Value,
}

/// Make the answer of `n` steps and its bytes one way (`tree` or not).
fn measure(n: usize, tree: bool) -> Cost {
    let mut best: Option<Cost> = None;
    for _ in 0..RUNS {
        let answer = status(n);
        let (b0, a0, h0) = counts();
        let start = Instant::now();
        // Each way's values are kept until its bytes are written, and the
        // heap held is read then.
        let wire = if tree {
            let response = TreeResponse {
                exit: 0,
                text: String::new(),
                json: serde_json::to_value(&answer).expect("a tree"),
            };
            let body = serde_json::to_vec(&response).expect("bytes");
            let (b1, a1, h1) = counts();
            let took = start.elapsed();
            (body, (b1 - b0, a1 - a0, h1 - h0, took))
        } else {
            let response = Response {
                exit: 0,
                text: String::new(),
                json: control::document(&answer),
            };
            let body = response.to_bytes();
            let (b1, a1, h1) = counts();
            let took = start.elapsed();
            (body, (b1 - b0, a1 - a0, h1 - h0, took))
        };
        let (body, (blocks, bytes, held, took)) = wire;
        let read: serde_json::Value = serde_json::from_slice(&body).expect("the response reads");
        let cost = Cost {
            blocks,
            bytes,
            held,
            took,
            document: read["json"].clone(),
        };
        if best.as_ref().is_none_or(|b| cost.took < b.took) {
            best = Some(cost);
        }
    }
    best.expect("runs")
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let sizes: Vec<usize> = match std::env::var("BENCH_SIZES") {
        Ok(s) => s
            .split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect(),
        Err(_) if measuring => vec![500, 5000, 20000],
        Err(_) => vec![20, 100],
    };
    println!("| steps | way | blocks | bytes allocated | held once written | time |");
    println!("|---|---|---|---|---|---|");
    for n in sizes {
        let tree = measure(n, true);
        let written = measure(n, false);
        assert_eq!(
            tree.document, written.document,
            "both ways write the same document"
        );
        assert_eq!(
            written.document["steps"].as_array().map(Vec::len),
            Some(n),
            "every step listed"
        );
        for (way, c) in [("tree", &tree), ("written", &written)] {
            println!(
                "| {n} | {way} | {} | {:.1} MB | {:.1} MB | {:.1} ms |",
                c.blocks,
                c.bytes as f64 / 1e6,
                c.held as f64 / 1e6,
                c.took.as_secs_f64() * 1e3
            );
        }
    }
}
