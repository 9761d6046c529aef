//! What the apply and the scheduler hold per step at rest: the live heap
//! (bytes and blocks) of one process that applies a declaration of 1,000
//! services and N scheduled steps (each holding two of them, due at a time
//! far beyond the horizon, as `benches/scale-node.sh` declares them)
//! through the real apply and scheduler, with the scripted in-memory
//! runtime standing in for Docker, and waits for the scheduler to settle.
//! The slope between two sizes is what one more step costs; the node's
//! resident memory (`benches/scale-node.sh`) also carries the allocator's
//! free pieces, which this does not see.
//!
//! `cargo bench --bench held` (500, 5,000 and 20,000 steps; about a
//! minute; `BENCH_SIZES="5000 20000"` measures other sizes); any other run
//! (`cargo test --benches`) does 20 and 100, as a check that the bench
//! still works. The allocator is set as the daemon sets it
//! (`task::tune_allocator`).

use std::path::Path;
use std::time::Duration;

#[path = "support/in_process.rs"]
mod in_process;
use in_process::{declarable_base, InProcess};
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use std::alloc::System;

#[global_allocator]
static HEAP: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const IMAGE: &str =
    "127.0.0.1:5000/busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

const SERVICES: usize = 1000;

/// Bytes and blocks held on the heap now.
fn held() -> (i64, i64) {
    let s = HEAP.stats();
    let signed = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    (
        signed(s.bytes_allocated) - signed(s.bytes_deallocated),
        signed(s.allocations) - signed(s.deallocations),
    )
}

/// The services' files, written once for every size.
fn write_files(files: &Path, n: usize) {
    std::fs::create_dir_all(files).expect("files directory");
    for i in 1..=n {
        std::fs::write(
            files.join(format!("s{i}.env")),
            format!("APP_ID={i}\nMODE=bench\n"),
        )
        .expect("env-file");
        std::fs::write(files.join(format!("s{i}.conf")), format!("id = {i}\n")).expect("file");
    }
}

/// N services and M steps, as `benches/scale-node.sh` writes them.
fn declaration(files: &Path, n: usize, m: usize) -> Vec<u8> {
    let d = files.display();
    let mut out = String::from("{\"declaration\": 1, \"resources\": [\n");
    let mut sep = "";
    for i in 1..=n {
        out += &format!(
            "{sep}{{\"id\": \"s{i}\", \"type\": \"container\", \"name\": \"b-s{i}\", \"image\": \"{IMAGE}\", \
             \"command\": [\"sh\", \"-c\", \"sleep 1000\"], \"network\": \"host\", \"env-files\": [\"{d}/s{i}.env\"], \
             \"mounts\": [{{\"source\": \"{d}/s{i}.conf\", \"target\": \"/etc/app.conf\", \"read-only\": true}}]}}"
        );
        sep = ",\n";
    }
    // Due at 03:00 and 15:00 alternately: whatever the hour of the run,
    // at most half of them could be within the hour's horizon, and only
    // in the hour before either (then the figures say so).
    for i in 1..=m {
        out += &format!(
            "{sep}{{\"id\": \"t{i}\", \"type\": \"container\", \"name\": \"b-t{i}\", \"image\": \"{IMAGE}\", \
             \"command\": [\"true\"], \"network\": \"host\", \"schedule\": \"0 {} * * *\", \
             \"while-stopped\": [\"s{}\", \"s{}\"], \"timeout\": 300}}",
            if i % 2 == 0 { 3 } else { 15 },
            (2 * i - 2) % n + 1,
            (2 * i - 1) % n + 1
        );
    }
    out += "\n]}\n";
    out.into_bytes()
}

fn main() {
    let measure = std::env::args().any(|a| a == "--bench");
    mesh_host::task::tune_allocator();
    let chosen: Option<Vec<usize>> = std::env::var("BENCH_SIZES").ok().map(|v| {
        v.split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect()
    });
    let sizes: &[usize] = match &chosen {
        Some(sizes) => sizes,
        None if measure => &[500, 5000, 20000],
        None => &[20, 100],
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir_in(declarable_base()).expect("tempdir");
    let files = dir.path().join("files");
    let services = if measure { SERVICES } else { 10 };
    write_files(&files, services);
    println!("| steps | held at rest | blocks held | the apply's peak beside it |");
    println!("|---|---|---|---|");
    let mut rows = Vec::new();
    for &m in sizes {
        let (bytes, blocks, peak) = rt.block_on(held_by(dir.path(), &files, services, m));
        println!(
            "| {m} | {:.1} MB | {blocks} | {:.1} MB |",
            bytes as f64 / 1e6,
            peak as f64 / 1e6
        );
        rows.push((m, bytes, blocks));
    }
    println!();
    for pair in rows.windows(2) {
        let ((m0, b0, k0), (m1, b1, k1)) = (pair[0], pair[1]);
        let steps = (m1 - m0) as f64;
        println!(
            "From {m0} to {m1} steps: {:.0} bytes and {:.1} blocks a step.",
            (b1 - b0) as f64 / steps,
            (k1 - k0) as f64 / steps
        );
    }
    if !measure {
        println!("\n(a check run: `cargo bench --bench held` measures)");
    }
}

/// What an apply of `m` steps and its sync leave held at rest, and the
/// most held after the apply (the model and the built steps beside it).
async fn held_by(dir: &Path, files: &Path, services: usize, m: usize) -> (i64, i64, i64) {
    let state = tempfile::tempdir_in(dir).expect("state");
    let InProcess {
        fake,
        applier,
        handle,
        shutdown,
        running,
    } = InProcess::new(&state.path().join("state"), IMAGE);
    let (bytes0, blocks0) = held();
    let text = declaration(files, services, m);
    let decl = mesh_host::declaration::parse(&text).expect("declaration");
    drop(text);
    let report = applier.apply(&decl).await;
    assert!(report.ok, "{report}");
    let (peak, _) = held();
    let steps = report.steps.clone();
    drop(report);
    let synced = handle.sync(steps).await.expect("sync");
    assert_eq!(synced.added.len(), m);
    fake.clear_calls();
    drop(decl);
    // The scheduler drops what it replaced on a thread of its own, a
    // moment later (`task::drop_later`).
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (bytes, blocks) = held();
    let _ = shutdown.send(true);
    drop(handle);
    let _ = running.await;
    (bytes - bytes0, blocks - blocks0, peak - bytes0)
}
