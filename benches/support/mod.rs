//! A small measuring harness shared by the benches (`harness = false`).
//!
//! Each measurement warms up, picks an iteration count so that one sample
//! lasts about [`SAMPLE_TARGET`], takes [`SAMPLES`] samples and reports the
//! median time per iteration with the spread (fastest and slowest sample).
//! Samples, not single calls, are timed, so `Instant`'s own cost stays below
//! a percent even for calls of tens of nanoseconds.
//!
//! `cargo bench --bench NAME [-- FILTER]` measures (cargo passes `--bench`);
//! any other run (`cargo test --benches`) calls each body once, a quick check
//! that the benches still run, measuring nothing.

// Each bench includes this module and uses a different part of it.
#![allow(dead_code)]

use std::cell::Cell;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// How long each body runs before it is measured.
const WARM_UP: Duration = Duration::from_millis(300);

/// How long one sample should last.
const SAMPLE_TARGET: Duration = Duration::from_millis(20);

/// Samples per measurement; odd, so the median is one of them.
pub const SAMPLES: usize = 31;

/// Per-iteration times of one measurement.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    /// Median over the samples.
    pub median: Duration,
    /// Fastest sample.
    pub min: Duration,
    /// Slowest sample.
    pub max: Duration,
    /// Samples taken.
    pub samples: usize,
    /// Iterations per sample.
    pub iters: u64,
}

impl Stats {
    fn from_samples(mut per_iter: Vec<Duration>, iters: u64) -> Stats {
        per_iter.sort();
        Stats {
            median: per_iter[per_iter.len() / 2],
            min: per_iter[0],
            max: per_iter[per_iter.len() - 1],
            samples: per_iter.len(),
            iters,
        }
    }

    /// `median (min–max)`, each in a readable unit.
    pub fn cell(&self) -> String {
        format!(
            "{} ({}–{})",
            human(self.median),
            human(self.min),
            human(self.max)
        )
    }

    /// Megabytes (10^6 bytes) per second at the median.
    pub fn mb_per_s(&self, bytes: usize) -> f64 {
        bytes as f64 / self.median.as_secs_f64() / 1e6
    }
}

/// Two bodies measured side by side by [`Bench::pair`].
#[derive(Debug, Clone, Copy)]
pub struct Pair {
    /// mesh-host's.
    pub ours: Stats,
    /// The peer's.
    pub peer: Stats,
    /// Median of the per-sample ratios ours / peer.
    pub ratio: f64,
}

impl Pair {
    /// The ratio as a table cell.
    pub fn ratio_cell(&self) -> String {
        format!("{:.1}×", self.ratio)
    }
}

/// Warm `body` up and return how many iterations make one sample last
/// about [`SAMPLE_TARGET`].
fn calibrate<T>(body: &mut impl FnMut() -> T) -> u64 {
    let start = Instant::now();
    let mut warm_iters = 0u64;
    while start.elapsed() < WARM_UP {
        std::hint::black_box(body());
        warm_iters += 1;
    }
    let per_iter = start.elapsed().as_secs_f64() / warm_iters as f64;
    ((SAMPLE_TARGET.as_secs_f64() / per_iter).ceil() as u64).max(1)
}

/// One sample: `iters` calls of `body`, the time per call.
fn sample<T>(body: &mut impl FnMut() -> T, iters: u64) -> Duration {
    let t = Instant::now();
    for _ in 0..iters {
        std::hint::black_box(body());
    }
    t.elapsed() / u32::try_from(iters).unwrap_or(u32::MAX)
}

/// A duration in ns, µs, ms or s with three significant digits.
pub fn human(d: Duration) -> String {
    let ns = d.as_secs_f64() * 1e9;
    let (value, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let digits = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.digits$} {unit}")
}

/// The 1, 5 and 15 minute load averages: other work on the machine shows
/// in the figures, so each run says how busy it was.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_string())
}

/// The runner: mode and filter from the command line, rows printed as
/// Markdown tables.
#[derive(Debug)]
pub struct Bench {
    measure: bool,
    filter: Vec<String>,
    table: Option<String>,
    bodies: Cell<usize>,
}

impl Bench {
    /// Read the command line: `--bench` measures, other flags are ignored,
    /// words filter measurements by substring of `table/name`.
    pub fn from_args() -> Bench {
        let mut measure = false;
        let mut filter = Vec::new();
        for arg in std::env::args().skip(1) {
            if arg == "--bench" {
                measure = true;
            } else if !arg.starts_with('-') {
                filter.push(arg);
            }
        }
        if measure {
            println!("Load average at start: {}", load_average());
        }
        Bench {
            measure,
            filter,
            table: None,
            bodies: Cell::new(0),
        }
    }

    /// Whether this run measures (as opposed to a quick check).
    pub fn measuring(&self) -> bool {
        self.measure
    }

    /// Start a table: a title and its column names (the first column is the
    /// measurement's name).
    pub fn table(&mut self, title: &str, columns: &[&str]) {
        self.table = Some(title.to_string());
        if !self.measure {
            return;
        }
        let mut out = format!("\n### {title}\n\n|");
        for c in columns {
            let _ = write!(out, " {c} |");
        }
        out.push_str("\n|");
        for _ in columns {
            out.push_str("---|");
        }
        println!("{out}");
    }

    /// Print one row of the current table.
    pub fn row(&self, cells: &[String]) {
        if !self.measure {
            return;
        }
        let mut out = String::from("|");
        for c in cells {
            let _ = write!(out, " {c} |");
        }
        println!("{out}");
    }

    /// Whether `name` in the current table passes the filter.
    pub fn selected(&self, name: &str) -> bool {
        let full = format!("{}/{name}", self.table.as_deref().unwrap_or(""));
        self.filter.is_empty() || self.filter.iter().any(|f| full.contains(f.as_str()))
    }

    /// Measure `body`, which does one iteration's work and returns something
    /// the optimiser must not discard. `None` when filtered out or not
    /// measuring (the body then ran once).
    pub fn run<T>(&self, name: &str, mut body: impl FnMut() -> T) -> Option<Stats> {
        if !self.selected(name) {
            return None;
        }
        self.bodies.set(self.bodies.get() + 1);
        if !self.measure {
            std::hint::black_box(body());
            return None;
        }
        let iters = calibrate(&mut body);
        let samples = (0..SAMPLES).map(|_| sample(&mut body, iters)).collect();
        Some(Stats::from_samples(samples, iters))
    }

    /// Measure two bodies side by side: their samples alternate, so both
    /// see the same machine (other work on it comes and goes), and the
    /// ratio is the median of the per-sample ratios.
    pub fn pair<A, B>(
        &self,
        name: &str,
        mut ours: impl FnMut() -> A,
        mut peer: impl FnMut() -> B,
    ) -> Option<Pair> {
        if !self.selected(name) {
            return None;
        }
        self.bodies.set(self.bodies.get() + 2);
        if !self.measure {
            std::hint::black_box(ours());
            std::hint::black_box(peer());
            return None;
        }
        let ours_iters = calibrate(&mut ours);
        let peer_iters = calibrate(&mut peer);
        let mut a = Vec::with_capacity(SAMPLES);
        let mut b = Vec::with_capacity(SAMPLES);
        let mut ratios = Vec::with_capacity(SAMPLES);
        for _ in 0..SAMPLES {
            let x = sample(&mut ours, ours_iters);
            let y = sample(&mut peer, peer_iters);
            ratios.push(x.as_secs_f64() / y.as_secs_f64().max(1e-12));
            a.push(x);
            b.push(y);
        }
        ratios.sort_by(f64::total_cmp);
        Some(Pair {
            ours: Stats::from_samples(a, ours_iters),
            peer: Stats::from_samples(b, peer_iters),
            ratio: ratios[ratios.len() / 2],
        })
    }

    /// Measure `body` on a fresh input from `setup` each time; only `body`
    /// is timed, one call per sample (for bodies of a millisecond or more,
    /// or that change their input).
    pub fn run_with_setup<S, T>(
        &self,
        name: &str,
        mut setup: impl FnMut() -> S,
        mut body: impl FnMut(S) -> T,
    ) -> Option<Stats> {
        if !self.selected(name) {
            return None;
        }
        self.bodies.set(self.bodies.get() + 1);
        if !self.measure {
            std::hint::black_box(body(setup()));
            return None;
        }
        let start = Instant::now();
        while start.elapsed() < WARM_UP {
            let input = setup();
            std::hint::black_box(body(input));
        }
        let mut samples = Vec::with_capacity(SAMPLES);
        for _ in 0..SAMPLES {
            let input = setup();
            let t = Instant::now();
            let out = body(input);
            samples.push(t.elapsed());
            std::hint::black_box(out);
        }
        Some(Stats::from_samples(samples, 1))
    }

    /// Measure `body` one call per sample, `samples` samples and no warm-up
    /// but one call: for bodies of seconds (a build before a fix, whose
    /// cost grows with the square of its input).
    pub fn run_few<T>(
        &self,
        name: &str,
        samples: usize,
        mut body: impl FnMut() -> T,
    ) -> Option<Stats> {
        if !self.selected(name) {
            return None;
        }
        self.bodies.set(self.bodies.get() + 1);
        if !self.measure {
            std::hint::black_box(body());
            return None;
        }
        std::hint::black_box(body());
        let samples = (0..samples.max(1))
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(body());
                t.elapsed()
            })
            .collect();
        Some(Stats::from_samples(samples, 1))
    }

    /// Close the run: the note on samples when measuring, else how many
    /// bodies ran once.
    pub fn finish(&self, note: &str) {
        if self.measure {
            println!("\n{SAMPLES} samples per measurement; {note}");
            println!("Load average at the end: {}", load_average());
        } else {
            println!(
                "{} bodies ran once each (not measured: `cargo bench` measures)",
                self.bodies.get()
            );
        }
    }
}
