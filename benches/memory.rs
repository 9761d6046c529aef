//! Memory over a long life: the resident memory of one process that fires a
//! scheduled step 10,000 times through the real firing path (the scheduler's
//! `run_now`, `Firer::fire`, the window held and closed, the step history
//! saved) and applies a declaration 1,000 times, with the scripted in-memory
//! runtime standing in for Docker (so only mesh-host's own memory is
//! measured). Resident memory (`VmRSS` of /proc/self/status) is read after
//! a warm-up, after the fires and after the applies; the sizes of every
//! state file are listed at the end (docs/state-dir.md gives their bounds).
//!
//! `cargo bench --bench memory` (10,000 fires, 1,000 applies; about a
//! minute; `BENCH_FIRES` and `BENCH_APPLIES` change the counts); any other run (`cargo test --benches`) does 50 and 10, as a
//! check that the bench still works.
//!
//! The fake runtime records every call it gets, for tests to read: the
//! bench clears that record every 100 fires and every apply, so that its
//! growth is not counted against mesh-host.
//!
//! Beside resident memory, the bench counts the bytes the process holds on
//! its heap (allocated minus freed, through an instrumented global
//! allocator): resident memory also moves with the allocator's arenas and
//! free lists, which a leak does not explain; live heap bytes that stay
//! flat while resident memory grows say there is no leak.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

#[path = "support/in_process.rs"]
mod in_process;
use in_process::{declarable_base, InProcess};
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use std::alloc::System;

#[global_allocator]
static HEAP: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes held on the heap now: allocated minus freed (a reallocation
/// counts its growth as allocated, its shrinking as freed).
fn heap_bytes() -> i64 {
    let s = HEAP.stats();
    let held = i128::try_from(s.bytes_allocated).unwrap_or(i128::MAX)
        - i128::try_from(s.bytes_deallocated).unwrap_or(i128::MAX);
    i64::try_from(held).unwrap_or(i64::MAX)
}

const IMAGE: &str =
    "127.0.0.1:5000/busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// Resident memory of this process, in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// A declaration of ten services, a file one of them reads, and a step
/// holding one; `variant` changes one service's env (recreated each time).
fn declaration(dir: &Path, variant: u32) -> Vec<u8> {
    let mut resources = vec![json!({"id": "conf", "type": "file",
        "path": dir.join("app.conf").to_string_lossy(), "content": "a=1\n"})];
    for i in 0..10 {
        let mut svc = json!({"id": format!("svc{i}"), "type": "container", "module": "m",
            "name": format!("mem-svc{i}"), "image": IMAGE, "network": "none"});
        if i == 0 {
            svc["env"] = json!({"VARIANT": variant.to_string()});
            svc["restart-on"] = json!(["conf"]);
        }
        resources.push(svc);
    }
    resources.push(
        json!({"id": "gc", "type": "container", "module": "m", "name": "mem-gc",
        "image": IMAGE, "network": "none", "schedule": "0 3 * * *",
        "while-stopped": ["svc1"], "timeout": 60}),
    );
    serde_json::to_vec(&json!({"declaration": 1, "resources": resources})).expect("json")
}

fn main() {
    let measure = std::env::args().any(|a| a == "--bench");
    let (fires, applies) = if measure { (10_000, 1_000) } else { (50, 10) };
    // BENCH_FIRES / BENCH_APPLIES: other counts, e.g. to see whether a
    // growth is a one-off or per fire.
    let (fires, applies) = (count("BENCH_FIRES", fires), count("BENCH_APPLIES", applies));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run(fires, applies, measure));
}

/// `$var` as a number, or `default`.
fn count<T: std::str::FromStr>(var: &str, default: T) -> T {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn run(fires: usize, applies: u32, measure: bool) {
    let dir = tempfile::tempdir_in(declarable_base()).expect("tempdir");
    let InProcess {
        fake,
        applier,
        handle,
        shutdown: _shutdown,
        running: _running,
    } = InProcess::new(&dir.path().join("state"), IMAGE);
    fake.exit_with("mem-gc", 0, Duration::ZERO);

    let decls: Vec<_> = (0..2)
        .map(|v| mesh_host::declaration::parse(&declaration(dir.path(), v)).expect("declaration"))
        .collect();
    let apply = |n: u32| {
        let decl = &decls[(n % 2) as usize];
        let applier = applier.clone();
        let handle = handle.clone();
        let fake = fake.clone();
        async move {
            let report = applier.apply(decl).await;
            assert!(report.ok, "{report}");
            handle.sync(report.steps).await.expect("sync");
            fake.clear_calls();
            fake.forget_exits();
        }
    };
    let fire = |handle: mesh_host::schedule::scheduler::SchedulerHandle| async move {
        let report = handle
            .run_now("gc", false, mesh_host::progress::Reporter::none())
            .await
            .expect("fire");
        assert!(report.ok(), "{report:?}");
    };

    // Warm-up: every path taken once, allocator pools grown.
    for n in 0..(applies / 10).max(2) {
        apply(n).await;
    }
    for i in 0..(fires / 20).max(5) {
        fire(handle.clone()).await;
        if i % 100 == 0 {
            fake.clear_calls();
            fake.forget_exits();
        }
    }
    fake.clear_calls();
    fake.forget_exits();
    let base = rss_kib();
    let heap_base = heap_bytes();

    let began = Instant::now();
    for i in 0..fires {
        fire(handle.clone()).await;
        if i % 100 == 99 {
            fake.clear_calls();
            fake.forget_exits();
        }
    }
    fake.clear_calls();
    fake.forget_exits();
    let fired = began.elapsed();
    let after_fires = rss_kib();
    let heap_fires = heap_bytes();

    let began = Instant::now();
    for n in 0..applies {
        apply(n).await;
    }
    let applied = began.elapsed();
    let after_applies = rss_kib();
    let heap_applies = heap_bytes();

    let delta = |a: u64, b: u64| a as i64 - b as i64;
    println!("| phase | count | time | resident memory | growth | live heap | growth |");
    println!("|---|---|---|---|---|---|---|");
    println!(
        "| after warm-up | | | {base} KiB | | {} KiB | |",
        heap_base / 1024
    );
    println!(
        "| fires (run_now through the scheduler, a window each) | {fires} | {:.1} s | {after_fires} KiB | {:+} KiB | {} KiB | {:+} bytes |",
        fired.as_secs_f64(),
        delta(after_fires, base),
        heap_fires / 1024,
        heap_fires - heap_base
    );
    println!(
        "| applies (11 resources; one recreate and one restart-on each) | {applies} | {:.1} s | {after_applies} KiB | {:+} KiB | {} KiB | {:+} bytes |",
        applied.as_secs_f64(),
        delta(after_applies, after_fires),
        heap_applies / 1024,
        heap_applies - heap_fires
    );
    println!(
        "| total | | | | {:+} KiB | | {:+} bytes |",
        delta(after_applies, base),
        heap_applies - heap_base
    );
    println!();
    println!("State files at the end:");
    println!();
    println!("| file | bytes |");
    println!("|---|---|");
    let mut files = Vec::new();
    list(&dir.path().join("state"), &mut files);
    files.sort();
    for (path, size) in files {
        let rel = path
            .strip_prefix(dir.path().join("state"))
            .unwrap_or(&path)
            .display()
            .to_string();
        println!("| `{rel}` | {size} |");
    }
    if !measure {
        println!("\n(a check run: `cargo bench --bench memory` measures)");
    }
}

fn list(dir: &Path, out: &mut Vec<(std::path::PathBuf, u64)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        match e.metadata() {
            Ok(m) if m.is_dir() => list(&path, out),
            Ok(m) => out.push((path, m.len())),
            Err(_) => {}
        }
    }
}
