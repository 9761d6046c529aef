//! Reports for humans: the pieces `mesh-host run` and `mesh-host status`
//! print (the answers in `answer/` put them together). Times are written
//! the way an operator reads them, `2026-12-01 03:56:31 UTC`; `--json`
//! keeps RFC 3339.

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::fire::RunOutcome;

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
}
