//! The Prometheus text exposition format (version 0.0.4) of a [`Snapshot`].
//!
//! Every family has its `# HELP` and `# TYPE`; counters end in `_total`,
//! times are seconds since the epoch (`_timestamp_seconds`), durations
//! seconds; step series carry `step` and `module` (`""` when the step has
//! none). A value that is not known (a step that never succeeded) has no
//! series rather than a made-up zero.

use std::fmt::Write;

use chrono::{DateTime, Utc};

use super::{histogram, Snapshot};

/// Render `snap`.
pub fn render(snap: &Snapshot) -> String {
    let mut out = Out::default();

    out.family(
        "mesh_host_step_last_success_timestamp_seconds",
        "gauge",
        "When a run of the step last succeeded (exit status 0).",
    );
    for s in &snap.steps {
        if let Some(t) = s.last_success {
            out.sample(
                "mesh_host_step_last_success_timestamp_seconds",
                &step_labels(s),
                &seconds(t),
            );
        }
    }
    out.family(
        "mesh_host_step_last_run_timestamp_seconds",
        "gauge",
        "When the step's last run ended.",
    );
    for s in &snap.steps {
        if let Some(t) = s.last_run {
            out.sample(
                "mesh_host_step_last_run_timestamp_seconds",
                &step_labels(s),
                &seconds(t),
            );
        }
    }
    out.family(
        "mesh_host_step_last_run_duration_seconds",
        "gauge",
        "How long the step's last fire took, its maintenance window included.",
    );
    for s in &snap.steps {
        if let Some(d) = s.last_run_duration_secs {
            out.sample(
                "mesh_host_step_last_run_duration_seconds",
                &step_labels(s),
                &number(d),
            );
        }
    }
    out.family(
        "mesh_host_step_last_exit_status",
        "gauge",
        "Exit status of the step's last run, when its container exited.",
    );
    for s in &snap.steps {
        if let Some(status) = s.last_exit_status {
            out.sample(
                "mesh_host_step_last_exit_status",
                &step_labels(s),
                &status.to_string(),
            );
        }
    }
    out.family(
        "mesh_host_step_fires_total",
        "counter",
        "Fires of the step by outcome: succeeded, failed (non-zero exit), timed-out, stopped (its unit was stopped), interrupted, error (could not run), skipped.",
    );
    for s in &snap.steps {
        for (outcome, n) in &s.fires {
            let mut labels = step_labels(s);
            labels.push(("outcome", outcome.as_str()));
            out.sample("mesh_host_step_fires_total", &labels, &n.to_string());
        }
    }
    out.family(
        "mesh_host_step_missed_total",
        "counter",
        "Times the host noticed fires of the step it could not run (the node or the daemon was down, the clock jumped): one per notice, however many fires it covers.",
    );
    for s in &snap.steps {
        out.sample(
            "mesh_host_step_missed_total",
            &step_labels(s),
            &s.missed.to_string(),
        );
    }
    accounting(&mut out, snap);
    out.family(
        "mesh_host_step_next_fire_timestamp_seconds",
        "gauge",
        "When the step is next due.",
    );
    for s in &snap.steps {
        if let Some(t) = s.next_fire {
            out.sample(
                "mesh_host_step_next_fire_timestamp_seconds",
                &step_labels(s),
                &seconds(t),
            );
        }
    }
    out.family(
        "mesh_host_step_period_seconds",
        "gauge",
        "Time between the step's next two fires.",
    );
    for s in &snap.steps {
        if let Some(p) = s.period_secs {
            out.sample("mesh_host_step_period_seconds", &step_labels(s), &number(p));
        }
    }
    out.family(
        "mesh_host_step_running",
        "gauge",
        "1 while a run of the step is in flight.",
    );
    for s in &snap.steps {
        out.sample("mesh_host_step_running", &step_labels(s), flag(s.running));
    }
    out.family(
        "mesh_host_step_suspended",
        "gauge",
        "1 while an operator has the step suspended (mesh-host suspend): its due times pass unrun.",
    );
    for s in &snap.steps {
        out.sample(
            "mesh_host_step_suspended",
            &step_labels(s),
            flag(s.suspended_since.is_some()),
        );
    }
    out.family(
        "mesh_host_step_suspended_since_timestamp_seconds",
        "gauge",
        "When the suspended step was suspended.",
    );
    for s in &snap.steps {
        if let Some(t) = s.suspended_since {
            out.sample(
                "mesh_host_step_suspended_since_timestamp_seconds",
                &step_labels(s),
                &seconds(t),
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
            &seconds(w.opened_at),
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
            &number(w.bound_secs),
        );
    }
    out.family(
        "mesh_host_held_containers",
        "gauge",
        "Containers held stopped by open maintenance windows.",
    );
    let held: usize = snap.windows.iter().map(|w| w.held).sum();
    out.sample("mesh_host_held_containers", &[], &held.to_string());
    out.family(
        "mesh_host_will_not_start_again_total",
        "counter",
        "Held containers that could not be started again after their window (WILL NOT START AGAIN alerts).",
    );
    out.sample(
        "mesh_host_will_not_start_again_total",
        &[],
        &snap.will_not_start_again_total.to_string(),
    );
    out.family(
        "mesh_host_rollouts_rolled_back_total",
        "counter",
        "Service replacements that were not healthy within their bound and were rolled back.",
    );
    out.sample(
        "mesh_host_rollouts_rolled_back_total",
        &[],
        &snap.rollouts_rolled_back_total.to_string(),
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
            &seconds(t),
        );
    }
    out.family(
        "mesh_host_apply_last_timestamp_seconds",
        "gauge",
        "When the last apply ended.",
    );
    if let Some(a) = &snap.apply {
        out.sample(
            "mesh_host_apply_last_timestamp_seconds",
            &[],
            &seconds(a.at),
        );
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
/// last run's figures and its limit.
fn accounting(out: &mut Out, snap: &Snapshot) {
    for family in &histogram::FAMILIES {
        out.family(family.name, "histogram", family.help);
        let bucket = format!("{}_bucket", family.name);
        for s in &snap.steps {
            let (counts, sum) = s.accounted.histogram(family).cumulative(family);
            if counts.last() == Some(&0) {
                // Nothing counted: no series yet.
                continue;
            }
            let labels = step_labels(s);
            for (i, n) in counts.iter().enumerate() {
                let le = family
                    .bounds
                    .get(i)
                    .map_or_else(|| "+Inf".to_string(), |b| histogram::le(*b));
                let mut with_le = labels.clone();
                with_le.push(("le", &le));
                out.sample(&bucket, &with_le, &n.to_string());
            }
            let count = counts.last().copied().unwrap_or(0);
            out.sample(&format!("{}_sum", family.name), &labels, &number(sum));
            out.sample(
                &format!("{}_count", family.name),
                &labels,
                &count.to_string(),
            );
        }
    }
    out.family(
        "mesh_host_step_oom_kills_total",
        "counter",
        "Runs of the step in which the kernel's OOM killer killed a process.",
    );
    for s in &snap.steps {
        let n = s.accounted.oom_kills.to_string();
        out.sample("mesh_host_step_oom_kills_total", &step_labels(s), &n);
    }
    out.family(
        "mesh_host_step_last_cpu_seconds",
        "gauge",
        "CPU time (user and system) of the step's last run.",
    );
    for s in &snap.steps {
        if let Some(v) = s.last_cpu_secs {
            out.sample(
                "mesh_host_step_last_cpu_seconds",
                &step_labels(s),
                &number(v),
            );
        }
    }
    out.family(
        "mesh_host_step_last_memory_peak_bytes",
        "gauge",
        "Peak memory of the step's last run.",
    );
    for s in &snap.steps {
        if let Some(v) = s.last_memory_peak_bytes {
            let v = v.to_string();
            out.sample("mesh_host_step_last_memory_peak_bytes", &step_labels(s), &v);
        }
    }
    out.family(
        "mesh_host_step_memory_limit_bytes",
        "gauge",
        "The memory limit (memory) the step's last run had.",
    );
    for s in &snap.steps {
        if let Some(v) = s.memory_limit_bytes {
            let v = v.to_string();
            out.sample("mesh_host_step_memory_limit_bytes", &step_labels(s), &v);
        }
    }
}

/// The `step` and `module` labels of a step's series.
fn step_labels(s: &super::StepMetrics) -> Vec<(&'static str, &str)> {
    vec![("step", s.step.as_str()), ("module", s.module.as_str())]
}

#[derive(Default)]
struct Out(String);

impl Out {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: &str) {
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
}

/// Seconds since the epoch, with milliseconds.
fn seconds(t: DateTime<Utc>) -> String {
    number(t.timestamp_millis() as f64 / 1000.0)
}

fn number(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else if v.is_nan() {
        "NaN".to_string()
    } else if v > 0.0 {
        "+Inf".to_string()
    } else {
        "-Inf".to_string()
    }
}

fn flag(b: bool) -> &'static str {
    if b {
        "1"
    } else {
        "0"
    }
}

/// A label value: backslash, double quote and newline escaped.
pub fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
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
}
