//! `mesh-host history [STEP] [--fires N] [--json]`: the last fires, read
//! back from the journal, with what each took and used.
//!
//! Each fire's end event (`step-finished`, `step-failed`, `step-skipped`)
//! carries its figures ([`crate::schedule::ended`]): this reads them with
//! `journalctl -o json`, newest first, as `logs` reads a step's output, so
//! it answers with or without a daemon, for steps since removed too. Only
//! mesh-host's own entries count: journald's `_UID=0` (any local user can
//! log an entry carrying `MESH_EVENT=`), `SYSLOG_IDENTIFIER=mesh-host`.
//! Every field is read as untrusted text: a number that does not read
//! right is left out, never guessed.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use super::args::{EXIT_FAILED, EXIT_OK};
use super::logs::{entries, text, JOURNALCTL};
use super::output::print_json;
use crate::accounting::{self, parse::number, Usage};
use crate::render;

/// The end events of fires.
const ENDS: [&str; 3] = ["step-finished", "step-failed", "step-skipped"];

/// The most held containers listed for one fire.
const MAX_HELD: usize = 64;

/// One fire, as its end event tells it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Fire {
    /// When it ended.
    pub ended: DateTime<Utc>,
    /// When it started (its end less its duration).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<DateTime<Utc>>,
    /// The step.
    pub step: String,
    /// The fire's name (`MESH_FIRE`).
    pub fire: String,
    /// `succeeded`, `skipped`, or why it failed (`exited`, `oom`,
    /// `timed-out`, `stopped`, `interrupted`, `error`).
    pub outcome: String,
    /// Its exit status, when it exited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i64>,
    /// How long it took, its window included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_secs: Option<f64>,
    /// What it used.
    #[serde(flatten)]
    pub usage: Usage,
    /// The containers its window held.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<String>,
    /// How long they were held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_secs: Option<f64>,
}

/// A fire's end event (one `journalctl -o json` entry) read, or `None`
/// when it is not one of mesh-host's.
pub fn fire(entry: &Value) -> Option<Fire> {
    let event = text(entry, "MESH_EVENT")?;
    if !ENDS.contains(&event.as_str())
        || text(entry, "_UID").as_deref() != Some("0")
        || text(entry, "SYSLOG_IDENTIFIER").as_deref() != Some("mesh-host")
    {
        return None;
    }
    let n = |field: &str| text(entry, field).and_then(|t| number(&t));
    let ended = n("__REALTIME_TIMESTAMP")
        .and_then(|us| i64::try_from(us).ok())
        .and_then(DateTime::from_timestamp_micros)?;
    let duration_secs = n("MESH_DURATION_USEC").map(|us| us as f64 / 1e6);
    let outcome = match event.as_str() {
        "step-finished" => "succeeded".to_string(),
        "step-skipped" => "skipped".to_string(),
        _ => text(entry, "MESH_REASON")
            .filter(|r| r.len() <= 32 && r.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'))
            .unwrap_or_else(|| "failed".to_string()),
    };
    Some(Fire {
        started: duration_secs
            .and_then(|d| chrono::Duration::from_std(std::time::Duration::from_secs_f64(d)).ok())
            .and_then(|d| ended.checked_sub_signed(d)),
        ended,
        step: text(entry, "MESH_STEP")?,
        fire: text(entry, "MESH_FIRE").unwrap_or_default(),
        outcome,
        exit_status: text(entry, "MESH_EXIT_STATUS").and_then(|t| t.parse().ok()),
        duration_secs,
        usage: Usage {
            cpu_usec: n("MESH_CPU_USEC"),
            cpu_user_usec: n("MESH_CPU_USER_USEC"),
            cpu_system_usec: n("MESH_CPU_SYSTEM_USEC"),
            memory_peak_bytes: n("MESH_MEMORY_PEAK_BYTES"),
            memory_limit_bytes: n("MESH_MEMORY_LIMIT_BYTES"),
            io_read_bytes: n("MESH_IO_READ_BYTES"),
            io_write_bytes: n("MESH_IO_WRITE_BYTES"),
            oom_killed: n("MESH_OOM_KILLED").filter(|v| *v <= 1).map(|v| v == 1),
        },
        held: text(entry, "MESH_HELD")
            .map(|h| {
                h.split(',')
                    .filter(|c| !c.is_empty())
                    .take(MAX_HELD)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        held_secs: n("MESH_HELD_USEC").map(|us| us as f64 / 1e6),
    })
}

/// The `journalctl` matches of the query: mesh-host's own end events, of
/// `step` when given (same-field matches are alternatives, others all hold).
fn matches(step: Option<&str>) -> Vec<String> {
    let mut m = vec!["SYSLOG_IDENTIFIER=mesh-host".to_string(), "_UID=0".into()];
    m.extend(ENDS.iter().map(|e| format!("MESH_EVENT={e}")));
    if let Some(step) = step {
        m.push(format!("MESH_STEP={step}"));
    }
    m
}

/// Run the command: the last `fires` fires of `step` (of every step
/// without one), newest first.
pub fn run(step: Option<&str>, fires: usize, json: bool) -> u8 {
    let Some(journalctl) = JOURNALCTL
        .iter()
        .copied()
        .find(|p| std::path::Path::new(p).exists())
    else {
        crate::errln!("mesh-host: no journalctl at {}", JOURNALCTL.join(" or "));
        return EXIT_FAILED;
    };
    let child = std::process::Command::new(journalctl)
        .args(["--no-pager", "--quiet", "--output=json", "--reverse"])
        .args(matches(step))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn();
    let mut found = Vec::new();
    let read = child.and_then(|child| {
        entries(child, |entry| {
            if let Some(f) = fire(&entry).filter(|f| step.is_none_or(|s| s == f.step)) {
                found.push(f);
            }
            Ok(found.len() < fires)
        })
    });
    if let Err(e) = read {
        crate::errln!("mesh-host: cannot read the journal: {e}");
        return EXIT_FAILED;
    }
    if json {
        print_json(&found);
    } else if found.is_empty() {
        match step {
            Some(s) => crate::errln!("mesh-host: the journal holds no fire of step {s}"),
            None => crate::errln!("mesh-host: the journal holds no fire of any step"),
        }
    } else {
        crate::out!("{}", table(&found));
    }
    EXIT_OK
}

/// The fires as a table, one line each, like `systemctl list-timers`.
pub fn table(fires: &[Fire]) -> String {
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let rows: Vec<[String; 9]> = fires
        .iter()
        .map(|f| {
            let u = &f.usage;
            let outcome = match f.exit_status {
                Some(s) if f.outcome != "succeeded" => format!("{} ({s})", f.outcome),
                _ => f.outcome.clone(),
            };
            let held = match (f.held.is_empty(), f.held_secs) {
                (true, _) => "-".to_string(),
                (false, Some(s)) => format!("{} for {s:.1}s", f.held.join(",")),
                (false, None) => f.held.join(","),
            };
            [
                render::time(f.started.unwrap_or(f.ended)),
                f.step.clone(),
                outcome,
                or_dash(f.duration_secs.map(|d| format!("{d:.1}s"))),
                or_dash(u.cpu_usec.map(accounting::seconds)),
                or_dash(
                    u.peak_text()
                        .map(|p| p.trim_start_matches("peak ").to_string()),
                ),
                or_dash(u.io_read_bytes.map(accounting::bytes)),
                or_dash(u.io_write_bytes.map(accounting::bytes)),
                held,
            ]
        })
        .collect();
    let header = [
        "STARTED",
        "STEP",
        "OUTCOME",
        "TOOK",
        "CPU",
        "PEAK MEMORY",
        "READ",
        "WRITTEN",
        "HELD",
    ];
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut l = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                l.push_str(cell);
            } else {
                l.push_str(&format!("{cell:<w$}  "));
            }
        }
        l.trim_end().to_string() + "\n"
    };
    let mut out = line(header.to_vec());
    for row in &rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// A `step-failed` entry as `journalctl -o json` gives it (from a node).
    fn oom_entry() -> Value {
        json!({
            "__REALTIME_TIMESTAMP": "1796094001250000",
            "_UID": "0",
            "SYSLOG_IDENTIFIER": "mesh-host",
            "MESH_EVENT": "step-failed",
            "MESH_STEP": "gc",
            "MESH_FIRE": "mesh-host-step-gc-20261201T030000Z.scope",
            "MESH_EXIT_STATUS": "137",
            "MESH_REASON": "oom",
            "MESH_DURATION_USEC": "1250000",
            "MESH_CPU_USEC": "52961",
            "MESH_MEMORY_PEAK_BYTES": "67121152",
            "MESH_MEMORY_LIMIT_BYTES": "67108864",
            "MESH_IO_READ_BYTES": "0",
            "MESH_IO_WRITE_BYTES": "0",
            "MESH_OOM_KILLED": "1",
            "MESH_HELD": "registry,web",
            "MESH_HELD_USEC": "900000"
        })
    }

    #[test]
    fn an_end_event_is_read_back_whole() {
        let f = fire(&oom_entry()).expect("a fire");
        assert_eq!(f.step, "gc");
        assert_eq!(f.outcome, "oom");
        assert_eq!(f.exit_status, Some(137));
        assert_eq!(f.duration_secs, Some(1.25));
        assert_eq!(
            f.started.map(|t| t.to_rfc3339()).as_deref(),
            Some("2026-12-01T03:00:00+00:00")
        );
        assert_eq!(f.usage.memory_peak_bytes, Some(67_121_152));
        assert_eq!(f.usage.oom_killed, Some(true));
        assert_eq!(f.held, vec!["registry", "web"]);
        assert_eq!(f.held_secs, Some(0.9));
        let t = table(&[f]);
        let mut lines = t.lines();
        assert!(lines.next().expect("header").starts_with("STARTED"));
        let row = lines.next().expect("row");
        for cell in [
            "2026-12-01 03:00:00 UTC",
            "oom (137)",
            "1.2s",
            "0.053 s",
            "64.0 MiB of 64 MiB",
            "registry,web for 0.9s",
        ] {
            assert!(row.contains(cell), "{cell:?} in {row:?}");
        }
    }

    #[test]
    fn only_mesh_hosts_own_end_events_are_fires() {
        let mut forged = oom_entry();
        forged["_UID"] = json!("1000");
        assert_eq!(fire(&forged), None, "logged by another user");
        let mut other = oom_entry();
        other["SYSLOG_IDENTIFIER"] = json!("logger");
        assert_eq!(fire(&other), None);
        let mut started = oom_entry();
        started["MESH_EVENT"] = json!("step-started");
        assert_eq!(fire(&started), None, "not an end");
    }

    #[test]
    fn a_field_that_does_not_read_right_is_left_out() {
        let mut e = oom_entry();
        e["MESH_CPU_USEC"] = json!("-5");
        e["MESH_OOM_KILLED"] = json!("7");
        e["MESH_REASON"] = json!("\u{1b}[31mred");
        e["MESH_MEMORY_PEAK_BYTES"] = json!([54, 52]);
        let f = fire(&e).expect("a fire");
        assert_eq!(f.usage.cpu_usec, None);
        assert_eq!(f.usage.oom_killed, None);
        assert_eq!(
            f.outcome, "failed",
            "a reason that is not a word is not shown"
        );
        // journalctl gives a field that is not UTF-8 as bytes: "64".
        assert_eq!(f.usage.memory_peak_bytes, Some(64));
        let mut no_time = oom_entry();
        no_time["__REALTIME_TIMESTAMP"] = json!("soon");
        assert_eq!(fire(&no_time), None);
    }

    #[test]
    fn the_query_asks_for_the_daemons_own_end_events() {
        assert_eq!(
            matches(Some("gc")),
            vec![
                "SYSLOG_IDENTIFIER=mesh-host",
                "_UID=0",
                "MESH_EVENT=step-finished",
                "MESH_EVENT=step-failed",
                "MESH_EVENT=step-skipped",
                "MESH_STEP=gc"
            ]
        );
    }

    proptest! {
        #[test]
        fn no_entry_breaks_the_reader(fields in proptest::collection::btree_map(
            prop_oneof![Just("MESH_EVENT"), Just("MESH_CPU_USEC"), Just("MESH_HELD"), Just("MESH_DURATION_USEC"),
                        Just("__REALTIME_TIMESTAMP"), Just("MESH_REASON"), Just("MESH_EXIT_STATUS")],
            any::<String>(), 0..7)) {
            let mut e = oom_entry();
            for (k, v) in fields {
                e[k] = json!(v);
            }
            if let Some(f) = fire(&e) {
                prop_assert!(f.held.len() <= MAX_HELD);
                let _ = table(&[f]);
            }
        }
    }
}
