//! The Prometheus text exposition format (version 0.0.4) of a [`Snapshot`].
//!
//! Every family has its `# HELP` and `# TYPE`; counters end in `_total`,
//! times are seconds since the epoch (`_timestamp_seconds`), durations
//! seconds; step series carry `step` and `module` (`""` when the step has
//! none). A value that is not known (a step that never succeeded) has no
//! series rather than a made-up zero.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::{Display, Write};
use std::sync::LazyLock;

use chrono::{DateTime, Utc};

use super::{histogram, Snapshot, OUTCOMES};

/// Render `snap`.
///
/// A step's labels are written once and each of its series is written in
/// place: at 20,000 steps the text is about 20 MB, and a label pair built
/// and escaped again for every series was most of its cost.
pub fn render(snap: &Snapshot) -> String {
    let mut out = Out::default();
    let labels: Vec<String> = snap.steps.iter().map(step_labels).collect();
    let steps = || snap.steps.iter().zip(labels.iter().map(String::as_str));

    out.family(
        "mesh_host_step_last_success_timestamp_seconds",
        "gauge",
        "When a run of the step last succeeded (exit status 0).",
    );
    for (s, l) in steps() {
        if let Some(t) = s.last_success {
            out.step(
                "mesh_host_step_last_success_timestamp_seconds",
                l,
                Seconds(t),
            );
        }
    }
    out.family(
        "mesh_host_step_last_run_timestamp_seconds",
        "gauge",
        "When the step's last run ended.",
    );
    for (s, l) in steps() {
        if let Some(t) = s.last_run {
            out.step("mesh_host_step_last_run_timestamp_seconds", l, Seconds(t));
        }
    }
    out.family(
        "mesh_host_step_last_run_duration_seconds",
        "gauge",
        "How long the step's last fire took, its maintenance window included.",
    );
    for (s, l) in steps() {
        if let Some(d) = s.last_run_duration_secs {
            out.step("mesh_host_step_last_run_duration_seconds", l, Number(d));
        }
    }
    out.family(
        "mesh_host_step_last_exit_status",
        "gauge",
        "Exit status of the step's last run, when its container exited.",
    );
    for (s, l) in steps() {
        if let Some(status) = s.last_exit_status {
            out.step("mesh_host_step_last_exit_status", l, status);
        }
    }
    out.family(
        "mesh_host_step_fires_total",
        "counter",
        "Fires of the step by outcome: succeeded, failed (non-zero exit), timed-out, stopped (its unit was stopped), interrupted, error (could not run), skipped.",
    );
    for (s, l) in steps() {
        for (outcome, n) in with_every_outcome(&s.fires) {
            out.step_with("mesh_host_step_fires_total", l, "outcome", outcome, n);
        }
    }
    out.family(
        "mesh_host_step_missed_total",
        "counter",
        "Times the host noticed fires of the step it could not run (the node or the daemon was down, the clock jumped): one per notice, however many fires it covers.",
    );
    for (s, l) in steps() {
        out.step("mesh_host_step_missed_total", l, s.missed);
    }
    accounting(&mut out, snap, &labels);
    out.family(
        "mesh_host_step_next_fire_timestamp_seconds",
        "gauge",
        "When the step is next due.",
    );
    for (s, l) in steps() {
        if let Some(t) = s.next_fire {
            out.step("mesh_host_step_next_fire_timestamp_seconds", l, Seconds(t));
        }
    }
    out.family(
        "mesh_host_step_period_seconds",
        "gauge",
        "Time between the step's next two fires.",
    );
    for (s, l) in steps() {
        if let Some(p) = s.period_secs {
            out.step("mesh_host_step_period_seconds", l, Number(p));
        }
    }
    out.family(
        "mesh_host_step_running",
        "gauge",
        "1 while a run of the step is in flight.",
    );
    for (s, l) in steps() {
        out.step("mesh_host_step_running", l, flag(s.running));
    }
    out.family(
        "mesh_host_step_suspended",
        "gauge",
        "1 while an operator has the step suspended (mesh-host suspend): its due times pass unrun.",
    );
    for (s, l) in steps() {
        out.step(
            "mesh_host_step_suspended",
            l,
            flag(s.suspended_since.is_some()),
        );
    }
    out.family(
        "mesh_host_step_suspended_since_timestamp_seconds",
        "gauge",
        "When the suspended step was suspended.",
    );
    for (s, l) in steps() {
        if let Some(t) = s.suspended_since {
            out.step(
                "mesh_host_step_suspended_since_timestamp_seconds",
                l,
                Seconds(t),
            );
        }
    }

    out.family(
        "mesh_host_window_open",
        "gauge",
        "1 while the step's maintenance window is open (its held containers stopped).",
    );
    let mut window_steps: Vec<&str> = snap.steps.iter().map(|s| s.step.as_str()).collect();
    window_steps.extend(snap.windows.iter().map(|w| w.step.as_str()));
    window_steps.sort_unstable();
    window_steps.dedup();
    for step in window_steps {
        let open = snap.windows.iter().any(|w| w.step == step);
        out.sample("mesh_host_window_open", &[("step", step)], flag(open));
    }
    out.family(
        "mesh_host_window_opened_timestamp_seconds",
        "gauge",
        "When the step's open window opened.",
    );
    for w in &snap.windows {
        out.sample(
            "mesh_host_window_opened_timestamp_seconds",
            &[("step", &w.step)],
            Seconds(w.opened_at),
        );
    }
    out.family(
        "mesh_host_window_bound_seconds",
        "gauge",
        "How long the step's open window may stay open: its timeout plus the closing budget, six hours without a timeout.",
    );
    for w in &snap.windows {
        out.sample(
            "mesh_host_window_bound_seconds",
            &[("step", &w.step)],
            Number(w.bound_secs),
        );
    }
    out.family(
        "mesh_host_held_containers",
        "gauge",
        "Containers held stopped by open maintenance windows.",
    );
    let held: usize = snap.windows.iter().map(|w| w.held).sum();
    out.sample("mesh_host_held_containers", &[], held);
    out.family(
        "mesh_host_will_not_start_again_total",
        "counter",
        "Held containers that could not be started again after their window (WILL NOT START AGAIN alerts).",
    );
    out.sample(
        "mesh_host_will_not_start_again_total",
        &[],
        snap.will_not_start_again_total,
    );
    out.family(
        "mesh_host_rollouts_rolled_back_total",
        "counter",
        "Service replacements that were not healthy within their bound and were rolled back.",
    );
    out.sample(
        "mesh_host_rollouts_rolled_back_total",
        &[],
        snap.rollouts_rolled_back_total,
    );

    out.family(
        "mesh_host_apply_last_success_timestamp_seconds",
        "gauge",
        "When an apply of the declaration last succeeded.",
    );
    if let Some(t) = snap.apply.as_ref().and_then(|a| a.last_success) {
        out.sample(
            "mesh_host_apply_last_success_timestamp_seconds",
            &[],
            Seconds(t),
        );
    }
    out.family(
        "mesh_host_apply_last_timestamp_seconds",
        "gauge",
        "When the last apply ended.",
    );
    if let Some(a) = &snap.apply {
        out.sample("mesh_host_apply_last_timestamp_seconds", &[], Seconds(a.at));
    }
    out.family(
        "mesh_host_apply_ok",
        "gauge",
        "1 when the last apply succeeded, 0 when it failed or the declaration was refused.",
    );
    if let Some(a) = &snap.apply {
        out.sample("mesh_host_apply_ok", &[], flag(a.ok));
    }
    out.0
}

/// What the steps' fires took and used: the histograms, OOM kills, the
/// last run's figures and its limit. `labels`: each step's, in order.
fn accounting(out: &mut Out, snap: &Snapshot, labels: &[String]) {
    let steps = || snap.steps.iter().zip(labels.iter().map(String::as_str));
    for family in &histogram::FAMILIES {
        out.family(family.name, "histogram", family.help);
        let bucket = format!("{}_bucket", family.name);
        let sum = format!("{}_sum", family.name);
        let count_name = format!("{}_count", family.name);
        let les: Vec<String> = family
            .bounds
            .iter()
            .map(|b| histogram::le(*b))
            .chain(["+Inf".to_string()])
            .collect();
        for (s, l) in steps() {
            let h = s.accounted.histogram(family);
            if !h.counted(family) {
                // Nothing counted: no series yet.
                continue;
            }
            let (counts, total) = h.cumulative(family);
            for (n, le) in counts.iter().zip(&les) {
                out.step_with(&bucket, l, "le", le, n);
            }
            out.step(&sum, l, Number(total));
            out.step(&count_name, l, counts.last().copied().unwrap_or(0));
        }
    }
    out.family(
        "mesh_host_step_oom_kills_total",
        "counter",
        "Runs of the step in which the kernel's OOM killer killed a process.",
    );
    for (s, l) in steps() {
        out.step("mesh_host_step_oom_kills_total", l, s.accounted.oom_kills);
    }
    out.family(
        "mesh_host_step_last_cpu_seconds",
        "gauge",
        "CPU time (user and system) of the step's last run.",
    );
    for (s, l) in steps() {
        if let Some(v) = s.last_cpu_secs {
            out.step("mesh_host_step_last_cpu_seconds", l, Number(v));
        }
    }
    out.family(
        "mesh_host_step_last_memory_peak_bytes",
        "gauge",
        "Peak memory of the step's last run.",
    );
    for (s, l) in steps() {
        if let Some(v) = s.last_memory_peak_bytes {
            out.step("mesh_host_step_last_memory_peak_bytes", l, v);
        }
    }
    out.family(
        "mesh_host_step_memory_limit_bytes",
        "gauge",
        "The memory limit (memory) the step's last run had.",
    );
    for (s, l) in steps() {
        if let Some(v) = s.memory_limit_bytes {
            out.step("mesh_host_step_memory_limit_bytes", l, v);
        }
    }
}

/// `fires` with every label of [`OUTCOMES`] it lacks at 0, in label
/// order: each counter exists from a step's start (a rate over a missing
/// series is nothing), without a map of them built for each step.
pub fn with_every_outcome(fires: &BTreeMap<String, u64>) -> impl Iterator<Item = (&str, u64)> {
    static SORTED: LazyLock<[&str; OUTCOMES.len()]> = LazyLock::new(|| {
        let mut sorted = OUTCOMES;
        sorted.sort_unstable();
        sorted
    });
    let mut outcomes = SORTED.iter().copied().peekable();
    let mut counted = fires.iter().map(|(k, n)| (k.as_str(), *n)).peekable();
    std::iter::from_fn(move || match (outcomes.peek(), counted.peek()) {
        (Some(o), Some((c, _))) if o < c => outcomes.next().map(|o| (o, 0)),
        (Some(o), Some((c, _))) if o == c => {
            outcomes.next();
            counted.next()
        }
        (_, Some(_)) => counted.next(),
        (Some(_), None) => outcomes.next().map(|o| (o, 0)),
        (None, None) => None,
    })
}

/// The `step` and `module` labels of a step's series, escaped, as they
/// stand between the braces.
fn step_labels(s: &super::StepMetrics) -> String {
    format!(
        "step=\"{}\",module=\"{}\"",
        escape_label(&s.step),
        escape_label(&s.module)
    )
}

#[derive(Default)]
struct Out(String);

impl Out {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl Display) {
        self.0.push_str(name);
        if !labels.is_empty() {
            self.0.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.0.push(',');
                }
                let _ = write!(self.0, "{k}=\"{}\"", escape_label(v));
            }
            self.0.push('}');
        }
        let _ = writeln!(self.0, " {value}");
    }

    /// A step's series: `labels` as [`step_labels`] wrote them.
    fn step(&mut self, name: &str, labels: &str, value: impl Display) {
        let _ = writeln!(self.0, "{name}{{{labels}}} {value}");
    }

    /// A step's series with one more label, `key` (its value escaped).
    fn step_with(&mut self, name: &str, labels: &str, key: &str, v: &str, value: impl Display) {
        let _ = writeln!(
            self.0,
            "{name}{{{labels},{key}=\"{}\"}} {value}",
            escape_label(v)
        );
    }
}

/// Seconds since the epoch, with milliseconds.
struct Seconds(DateTime<Utc>);

impl Display for Seconds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Number(self.0.timestamp_millis() as f64 / 1000.0).fmt(f)
    }
}

/// A number as Prometheus reads it (`NaN`, `+Inf`, `-Inf` spelt so).
struct Number(f64);

impl Display for Number {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = self.0;
        if v.is_finite() {
            write!(f, "{v}")
        } else if v.is_nan() {
            f.write_str("NaN")
        } else if v > 0.0 {
            f.write_str("+Inf")
        } else {
            f.write_str("-Inf")
        }
    }
}

fn flag(b: bool) -> &'static str {
    if b {
        "1"
    } else {
        "0"
    }
}

/// A label value: backslash, double quote and newline escaped (borrowed
/// when it has none of them, as nearly every step id has).
pub fn escape_label(v: &str) -> Cow<'_, str> {
    if !v.contains(['\\', '"', '\n']) {
        return Cow::Borrowed(v);
    }
    Cow::Owned(
        v.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n"),
    )
}

/// A HELP text: backslash and newline escaped.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::super::{ApplyMetrics, StepMetrics, WindowMetrics};
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("time").to_utc()
    }

    fn snapshot() -> Snapshot {
        let mut fires: std::collections::BTreeMap<String, u64> = super::super::OUTCOMES
            .iter()
            .map(|o| (o.to_string(), 0))
            .collect();
        fires.insert("succeeded".into(), 3);
        fires.insert("failed".into(), 1);
        Snapshot {
            steps: vec![
                StepMetrics {
                    step: "gc".into(),
                    module: "registry".into(),
                    next_fire: Some(at("2026-12-02T03:00:00Z")),
                    period_secs: Some(86400.0),
                    last_success: Some(at("2026-12-01T03:00:05.5Z")),
                    last_run: Some(at("2026-12-01T03:00:05.5Z")),
                    last_run_duration_secs: Some(5.25),
                    last_exit_status: Some(0),
                    running: false,
                    suspended_since: Some(at("2026-12-01T10:00:00Z")),
                    fires,
                    missed: 2,
                    accounted: {
                        let mut c = super::super::counters::StepCounters {
                            oom_kills: 1,
                            ..Default::default()
                        };
                        c.cpu.observe(&histogram::CPU, 0.7);
                        c.cpu.observe(&histogram::CPU, 8.1);
                        c.memory_peak
                            .observe(&histogram::MEMORY_PEAK, 240.0 * 1024.0 * 1024.0);
                        c
                    },
                    last_cpu_secs: Some(8.1),
                    last_memory_peak_bytes: Some(251_658_240),
                    memory_limit_bytes: Some(268_435_456),
                },
                StepMetrics {
                    step: "odd\"name\\".into(),
                    module: String::new(),
                    ..StepMetrics::default()
                },
            ],
            windows: vec![WindowMetrics {
                step: "gc".into(),
                opened_at: at("2026-12-01T03:00:00Z"),
                bound_secs: 600.0,
                held: 2,
            }],
            will_not_start_again_total: 1,
            rollouts_rolled_back_total: 0,
            apply: Some(ApplyMetrics {
                at: at("2026-12-01T02:00:00Z"),
                ok: false,
                last_success: Some(at("2026-12-01T01:00:00Z")),
            }),
        }
    }

    #[test]
    fn every_family_has_help_and_type_and_samples_follow_their_family() {
        let text = render(&snapshot());
        let mut current: Option<String> = None;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                current = rest.split(' ').next().map(str::to_string);
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let mut parts = rest.split(' ');
                assert_eq!(parts.next().map(str::to_string), current, "{line}");
                let kind = parts.next().expect("type");
                let name = current.clone().expect("family");
                assert_eq!(kind == "counter", name.ends_with("_total"), "{line}");
            } else {
                let name = line.split(['{', ' ']).next().expect("name");
                let family = current.clone().expect("a family");
                let of_histogram = ["_bucket", "_sum", "_count"]
                    .iter()
                    .any(|suffix| name.strip_suffix(suffix) == Some(family.as_str()));
                assert!(name == family || of_histogram, "{line}");
            }
        }
    }

    #[test]
    fn values_labels_and_times_are_as_prometheus_reads_them() {
        let text = render(&snapshot());
        for expected in [
            "mesh_host_step_last_success_timestamp_seconds{step=\"gc\",module=\"registry\"} 1796094005.5\n",
            "mesh_host_step_last_run_duration_seconds{step=\"gc\",module=\"registry\"} 5.25\n",
            "mesh_host_step_last_exit_status{step=\"gc\",module=\"registry\"} 0\n",
            "mesh_host_step_fires_total{step=\"gc\",module=\"registry\",outcome=\"succeeded\"} 3\n",
            "mesh_host_step_fires_total{step=\"gc\",module=\"registry\",outcome=\"failed\"} 1\n",
            "mesh_host_step_fires_total{step=\"gc\",module=\"registry\",outcome=\"skipped\"} 0\n",
            "mesh_host_step_next_fire_timestamp_seconds{step=\"gc\",module=\"registry\"} 1796180400\n",
            "mesh_host_step_missed_total{step=\"gc\",module=\"registry\"} 2\n",
            "mesh_host_step_missed_total{step=\"odd\\\"name\\\\\",module=\"\"} 0\n",
            "mesh_host_step_running{step=\"odd\\\"name\\\\\",module=\"\"} 0\n",
            "mesh_host_step_suspended{step=\"gc\",module=\"registry\"} 1\n",
            "mesh_host_step_suspended{step=\"odd\\\"name\\\\\",module=\"\"} 0\n",
            "mesh_host_step_suspended_since_timestamp_seconds{step=\"gc\",module=\"registry\"} 1796119200\n",
            "mesh_host_window_open{step=\"gc\"} 1\n",
            "mesh_host_window_open{step=\"odd\\\"name\\\\\"} 0\n",
            "mesh_host_window_bound_seconds{step=\"gc\"} 600\n",
            "mesh_host_held_containers 2\n",
            "mesh_host_will_not_start_again_total 1\n",
            "mesh_host_apply_last_success_timestamp_seconds 1796086800\n",
            "mesh_host_apply_ok 0\n",
            "mesh_host_step_cpu_seconds_bucket{step=\"gc\",module=\"registry\",le=\"0.1\"} 0\n",
            "mesh_host_step_cpu_seconds_bucket{step=\"gc\",module=\"registry\",le=\"1\"} 1\n",
            "mesh_host_step_cpu_seconds_bucket{step=\"gc\",module=\"registry\",le=\"10\"} 2\n",
            "mesh_host_step_cpu_seconds_bucket{step=\"gc\",module=\"registry\",le=\"+Inf\"} 2\n",
            "mesh_host_step_cpu_seconds_sum{step=\"gc\",module=\"registry\"} 8.799999999999999\n",
            "mesh_host_step_cpu_seconds_count{step=\"gc\",module=\"registry\"} 2\n",
            "mesh_host_step_memory_peak_bytes_bucket{step=\"gc\",module=\"registry\",le=\"268435456\"} 1\n",
            "mesh_host_step_oom_kills_total{step=\"gc\",module=\"registry\"} 1\n",
            "mesh_host_step_last_cpu_seconds{step=\"gc\",module=\"registry\"} 8.1\n",
            "mesh_host_step_last_memory_peak_bytes{step=\"gc\",module=\"registry\"} 251658240\n",
            "mesh_host_step_memory_limit_bytes{step=\"gc\",module=\"registry\"} 268435456\n",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in\n{text}");
        }
        // A step that never ran has no histogram series yet.
        assert!(!text.contains("mesh_host_step_duration_seconds_count{step=\"odd"));
        assert!(!text.contains("mesh_host_step_held_seconds_count{step=\"gc"));
        // A step that never succeeded has no last-success series at all.
        assert!(!text.contains("mesh_host_step_last_success_timestamp_seconds{step=\"odd"));
    }

    mod every_outcome {
        use super::super::with_every_outcome;
        use crate::metrics::OUTCOMES;
        use proptest::prelude::*;
        use std::collections::BTreeMap;

        proptest! {
            /// The walk gives what a map of every outcome at 0, extended
            /// with the counted ones, gives (what each step built before).
            #[test]
            fn is_every_outcome_at_zero_overlaid_with_the_counted(
                counted in proptest::collection::btree_map(
                    prop_oneof![
                        proptest::sample::select(OUTCOMES.to_vec()).prop_map(str::to_string),
                        "[a-z-]{0,12}",
                    ],
                    any::<u64>(),
                    0..12,
                )
            ) {
                let mut want: BTreeMap<String, u64> =
                    OUTCOMES.iter().map(|o| (o.to_string(), 0)).collect();
                want.extend(counted.clone());
                let got: Vec<(String, u64)> = with_every_outcome(&counted)
                    .map(|(k, n)| (k.to_string(), n))
                    .collect();
                prop_assert_eq!(got, want.into_iter().collect::<Vec<_>>());
            }
        }
    }
}
