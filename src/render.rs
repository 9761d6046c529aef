//! Reports for humans: what `mesh-host run` and `mesh-host status` print.
//!
//! Both the command line (working `--local`) and the daemon (answering over
//! the control socket) render through here, so the two print the same text
//! and neither reaches into the other. Times are written the way an operator
//! reads them, `2026-12-01 03:56:31 UTC`; `--json` keeps RFC 3339.

use chrono::{DateTime, Utc};

use crate::declaration::Declaration;
use crate::schedule::fire::{describe, FireReport};

/// A time as operators read it: `2026-12-01 03:56:31 UTC`.
pub fn time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// An RFC 3339 time (as JSON answers carry them) as [`time`] writes it;
/// anything else is given back as it is.
pub fn time_text(rfc3339: &str) -> String {
    match DateTime::parse_from_rfc3339(rfc3339) {
        Ok(t) => time(t.to_utc()),
        Err(_) => rfc3339.to_string(),
    }
}

/// The declared health checks of `decl`, as `status` answers carry them:
/// `[{"container": ID, "name": NAME, "health": CANONICAL, "check": TEXT}]`.
pub fn health_checks(decl: &Declaration) -> serde_json::Value {
    decl.containers()
        .filter_map(|(res, c)| {
            let health = c.health.as_ref()?;
            Some(serde_json::json!({
                "container": res.id.as_str(),
                "name": c.name.as_str(),
                "health": health,
                "check": health.to_string(),
            }))
        })
        .collect()
}

/// The lines `status` prints for [`health_checks`].
pub fn health_lines(checks: &serde_json::Value) -> String {
    let mut out = String::new();
    for c in checks.as_array().into_iter().flatten() {
        let field = |k: &str| c.get(k).and_then(|v| v.as_str()).unwrap_or("?");
        out.push_str(&format!(
            "health {} ({}): {}\n",
            field("container"),
            field("name"),
            field("check")
        ));
    }
    out
}

/// What `status` adds to a next fire time delayed by a step's splay:
/// ` (randomized delay 17.408 s)`, or nothing.
pub fn delayed(delay_ms: Option<u64>) -> String {
    delay_ms.map_or(String::new(), |ms| {
        format!(
            " (randomized delay {})",
            crate::schedule::splay::describe(std::time::Duration::from_millis(ms))
        )
    })
}

/// A fire's report.
pub fn fire(report: &FireReport) -> String {
    let mut out = format!("{}: {}\n", report.step, describe(&report.outcome));
    out.push_str(&format!("  fired: {}\n", time(report.due)));
    if let Some(unit) = &report.unit {
        out.push_str(&format!("  unit: {unit}\n"));
    }
    out.push_str(&format!("  took: {:.1}s\n", report.duration_secs));
    if let Some(used) = report.usage.as_ref().map(|u| u.summary()) {
        if !used.is_empty() {
            out.push_str(&format!("  used: {used}\n"));
        }
    }
    if let Some(secs) = report.held_secs {
        out.push_str(&format!("  held: {secs:.1}s\n"));
    }
    if !report.started_again.is_empty() {
        out.push_str(&format!(
            "  started again: {}\n",
            report.started_again.join(", ")
        ));
    }
    if !report.recreated.is_empty() {
        out.push_str(&format!(
            "  removed during the window, created again from the declaration: {}\n",
            report.recreated.join(", ")
        ));
    }
    if !report.healthy.is_empty() {
        out.push_str(&format!("  healthy again: {}\n", report.healthy.join(", ")));
    }
    for name in &report.unhealthy {
        out.push_str(&format!("  {name}: started again but NOT HEALTHY\n"));
    }
    for name in &report.not_started {
        out.push_str(&format!("  {name}: WILL NOT START AGAIN\n"));
    }
    out
}

/// The daemon's status answer (its JSON form).
/// One line per shared folder the watch keeps: how many directories it
/// watches, and those past the folder's share of watches, kept by sweeps.
fn folder_lines(folders: Option<&serde_json::Value>) -> String {
    let mut out = String::new();
    for f in folders.and_then(|v| v.as_array()).into_iter().flatten() {
        let n = |k: &str| f.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
        let id = f.get("id").and_then(|v| v.as_str()).unwrap_or("?");
        out.push_str(&format!(
            "shared folder {id}: {} directories watched",
            n("watched")
        ));
        if n("unwatched") > 0 {
            out.push_str(&format!(
                "; {} NOT WATCHED (past its share of {} inotify watches): kept by a sweep of the whole folder every {} s",
                n("unwatched"),
                n("share"),
                n("sweep-every-secs")
            ));
        }
        out.push('\n');
    }
    out
}

pub fn daemon_status(status: &serde_json::Value) -> String {
    let text = |v: Option<&serde_json::Value>, none: &str| -> String {
        v.and_then(|v| v.as_str()).unwrap_or(none).to_string()
    };
    let when = |v: Option<&serde_json::Value>, none: &str| -> String {
        v.and_then(|v| v.as_str())
            .map_or(none.to_string(), time_text)
    };
    let mut out = String::new();
    if let Some(path) = status.get("declaration").and_then(|v| v.as_str()) {
        out.push_str(&format!("declaration: {path}\n"));
    }
    match status.get("last-apply") {
        Some(serde_json::Value::Object(last)) => out.push_str(&format!(
            "last apply: {}: {}\n",
            when(last.get("at"), "?"),
            text(last.get("summary"), "")
        )),
        _ => out.push_str("last apply: none yet\n"),
    }
    if let Some(line) = status
        .get("empty-declaration-refused")
        .and_then(|e| e.get("line"))
        .and_then(|l| l.as_str())
    {
        out.push_str(&format!("{line}\n"));
    }
    let windows = status
        .get("open-windows")
        .and_then(|v| v.as_array())
        .map_or(&[][..], Vec::as_slice);
    if windows.is_empty() {
        out.push_str("open windows: none\n");
    }
    for w in windows {
        let held: Vec<String> = w
            .get("held")
            .and_then(|h| h.as_array())
            .map(|a| {
                a.iter()
                    .filter(|c| c.get("was-running").and_then(|r| r.as_bool()) == Some(true))
                    .filter_map(|c| c.get("name").and_then(|n| n.as_str()).map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let owed = if w.get("owed").and_then(|v| v.as_bool()) == Some(true) {
            " (OWED: the container runtime did not answer; the daemon starts them as soon as it does)"
        } else {
            ""
        };
        out.push_str(&format!(
            "OPEN WINDOW: {} since {}, holding {}{owed}\n",
            text(w.get("step"), "?"),
            when(w.get("opened-at"), "?"),
            if held.is_empty() {
                "nothing".to_string()
            } else {
                held.join(", ")
            }
        ));
    }
    if let Some(checks) = status.get("health") {
        out.push_str(&health_lines(checks));
    }
    out.push_str(&folder_lines(status.get("shared-folders")));
    let steps = status
        .get("steps")
        .and_then(|v| v.as_array())
        .map_or(&[][..], Vec::as_slice);
    for s in steps {
        let last = match s.get("last-outcome").and_then(|v| v.as_str()) {
            Some(outcome) => format!(
                "last {outcome} ({}){}",
                when(s.get("last-run"), "?"),
                last_figures(s)
            ),
            None => "never run".to_string(),
        };
        out.push_str(&format!(
            "step {} ({} {}): next {}; {last}; last success {}{}{}{}\n",
            text(s.get("step"), "-"),
            text(s.get("schedule"), "-"),
            text(s.get("zone"), "-"),
            when(s.get("next-fire"), "never")
                + &delayed(s.get("delay-ms").and_then(|v| v.as_u64())),
            when(s.get("last-success"), "none"),
            readiness(s.get("ready")),
            if s.get("running").and_then(|v| v.as_bool()) == Some(true) {
                "; RUNNING"
            } else {
                ""
            },
            suspended(s.get("suspended-since").and_then(|v| v.as_str()))
        ));
    }
    let scheduled = status
        .get("steps-scheduled")
        .and_then(|v| v.as_u64())
        .map_or(steps.len(), |n| n as usize);
    if scheduled > steps.len() {
        out.push_str(&crate::step_listing::left_out_line(scheduled, steps.len()));
        out.push('\n');
    }
    out.push_str(&attention_lines(status.get("attention")));
    out
}

/// What `status` adds to a step's last outcome: ` in 12.3s (CPU 8.1 s,
/// peak 240 MiB of 256 MiB, ...)` from its `last-duration-secs` and
/// `last-usage`, or nothing.
pub fn last_figures(step: &serde_json::Value) -> String {
    let mut out = String::new();
    if let Some(d) = step.get("last-duration-secs").and_then(|v| v.as_f64()) {
        out.push_str(&format!(" in {d:.1}s"));
    }
    let usage: Option<crate::accounting::Usage> = step
        .get("last-usage")
        .and_then(|u| serde_json::from_value(u.clone()).ok());
    if let Some(summary) = usage.map(|u| u.summary()).filter(|s| !s.is_empty()) {
        out.push_str(&format!(" ({summary})"));
    }
    out
}

/// `status`'s closing lines: all well, or one `ATTENTION:` line each.
pub fn attention_lines(attention: Option<&serde_json::Value>) -> String {
    let lines: Vec<&str> = attention
        .and_then(|a| a.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.get("line").and_then(|l| l.as_str()))
                .collect()
        })
        .unwrap_or_default();
    if lines.is_empty() {
        return "all well: nothing needs attention\n".to_string();
    }
    let mut out = format!("{} thing(s) need attention:\n", lines.len());
    for line in lines {
        out.push_str(&format!("ATTENTION: {line}\n"));
    }
    out
}

/// `; SUSPENDED since T` for a suspended step's line (RFC 3339 in).
pub fn suspended(since: Option<&str>) -> String {
    since.map_or(String::new(), |t| {
        format!("; SUSPENDED since {} (due times pass unrun)", time_text(t))
    })
}

/// Where a step's next container stands, for its `status` line.
fn readiness(ready: Option<&serde_json::Value>) -> String {
    let Some(ready) = ready else {
        return String::new();
    };
    let text = |key: &str| -> String {
        ready
            .get(key)
            .and_then(|v| v.as_str())
            .unwrap_or("?")
            .to_string()
    };
    match ready.get("state").and_then(|v| v.as_str()) {
        Some("ready") => "; container ready".to_string(),
        Some("waiting") => format!("; container made ready at {}", time_text(&text("at"))),
        Some("not-ready") => format!(
            "; container not ready ({}): made at the fire",
            text("reason")
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::fire::RunOutcome;
    use serde_json::json;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("time").to_utc()
    }

    #[test]
    fn times_read_as_utc_wall_clock() {
        assert_eq!(
            time(at("2026-12-01T03:56:31.25Z")),
            "2026-12-01 03:56:31 UTC"
        );
        assert_eq!(
            time_text("2026-12-01T04:56:31+01:00"),
            "2026-12-01 03:56:31 UTC"
        );
        assert_eq!(time_text("not a time"), "not a time");
    }

    #[test]
    fn a_fire_says_when_and_what_will_not_start() {
        let report = FireReport {
            step: "gc".into(),
            due: at("2026-12-01T03:00:00Z"),
            outcome: RunOutcome::Exited { status: 3 },
            unit: Some("mesh-host-step-gc-20261201T030000Z.scope".into()),
            duration_secs: 1.25,
            started_again: vec!["web".into(), "cache".into(), "api".into()],
            not_started: vec!["db".into()],
            recreated: vec!["cache".into()],
            healthy: vec!["web".into()],
            unhealthy: vec!["api".into()],
            usage: Some(crate::accounting::Usage {
                cpu_usec: Some(8_100_000),
                memory_peak_bytes: Some(240 << 20),
                memory_limit_bytes: Some(256 << 20),
                ..Default::default()
            }),
            held_secs: Some(14.25),
        };
        let text = fire(&report);
        assert!(
            text.contains("  used: CPU 8.1 s, peak 240 MiB of 256 MiB\n  held: 14.2s\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "  removed during the window, created again from the declaration: cache\n"
            ),
            "{text}"
        );
        assert!(text.contains("  healthy again: web\n"), "{text}");
        assert!(
            text.contains("  api: started again but NOT HEALTHY\n"),
            "{text}"
        );
        assert!(text.starts_with("gc: exited with status 3\n"), "{text}");
        assert!(
            text.contains("  fired: 2026-12-01 03:00:00 UTC\n"),
            "{text}"
        );
        assert!(
            text.contains("  started again: web, cache, api\n"),
            "{text}"
        );
        assert!(text.contains("  db: WILL NOT START AGAIN\n"), "{text}");
        assert!(!text.contains("T03:00:00"), "{text}");
    }

    #[test]
    fn daemon_status_says_which_folders_are_kept_by_sweeps() {
        let status = json!({"shared-folders": [
            {"id": "a", "path": "/srv/a", "watched": 12, "share": 4000, "unwatched": 0, "sweep-every-secs": null},
            {"id": "b", "path": "/srv/b", "watched": 4000, "share": 4000, "unwatched": 5001, "sweep-every-secs": 30}
        ]});
        let text = daemon_status(&status);
        assert!(
            text.contains("shared folder a: 12 directories watched\n"),
            "{text}"
        );
        assert!(
            text.contains("shared folder b: 4000 directories watched; 5001 NOT WATCHED (past its share of 4000 inotify watches): kept by a sweep of the whole folder every 30 s\n"),
            "{text}"
        );
    }

    #[test]
    fn daemon_status_has_no_rfc3339_times() {
        let status = json!({
            "last-apply": {"at": "2026-12-01T03:56:31.123456Z", "ok": true, "summary": "ok: 1 unchanged"},
            "open-windows": [{"step": "gc", "opened-at": "2026-12-01T03:00:00Z",
                              "held": [{"name": "web", "was-running": true}]}],
            "steps": [{"step": "gc", "schedule": "0 3 * * *", "zone": "UTC",
                       "next-fire": "2026-12-02T03:00:00Z", "last-outcome": "succeeded",
                       "last-run": "2026-12-01T03:00:05Z", "last-success": "2026-12-01T03:00:05Z",
                       "running": true}]
        });
        let text = daemon_status(&status);
        assert!(
            text.contains("last apply: 2026-12-01 03:56:31 UTC: ok: 1 unchanged"),
            "{text}"
        );
        assert!(
            text.contains("OPEN WINDOW: gc since 2026-12-01 03:00:00 UTC, holding web"),
            "{text}"
        );
        assert!(text.contains("next 2026-12-02 03:00:00 UTC"), "{text}");
        assert!(text.contains("; RUNNING"), "{text}");
        assert!(
            text.contains(
                "; last succeeded (2026-12-01 03:00:05 UTC); last success 2026-12-01 03:00:05 UTC"
            ),
            "{text}"
        );
        let never = daemon_status(&json!({"steps": [{"step": "gc", "running": true}]}));
        assert!(
            never.contains("; never run; last success none; RUNNING"),
            "{never}"
        );
        assert!(!text.contains(":00Z"), "{text}");
    }

    #[test]
    fn status_ends_with_what_needs_attention_one_line_each() {
        let well = daemon_status(&json!({"attention": []}));
        assert!(
            well.ends_with("all well: nothing needs attention\n"),
            "{well}"
        );
        let text = daemon_status(&json!({
            "steps": [{"step": "gc", "suspended-since": "2026-12-01T10:00:00Z"}],
            "attention": [
                {"what": "step-suspended", "line": "step gc is suspended since 2026-12-01 10:00:00 UTC"},
                {"what": "alert", "line": "will-not-start-again at 2026-12-01 11:00:00 UTC: web"}
            ]
        }));
        assert!(
            text.contains("; SUSPENDED since 2026-12-01 10:00:00 UTC"),
            "{text}"
        );
        assert!(
            text.ends_with("2 thing(s) need attention:\nATTENTION: step gc is suspended since 2026-12-01 10:00:00 UTC\nATTENTION: will-not-start-again at 2026-12-01 11:00:00 UTC: web\n"),
            "{text}"
        );
    }
}
