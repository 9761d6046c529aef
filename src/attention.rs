//! What needs an operator's attention, for `status` (which then exits 3,
//! one line each): a resource that failed in the last apply, a window past
//! its bound, a suspended step, an alert raised since the last apply
//! (`will-not-start-again`, `held-unhealthy`, `rollout-rolled-back`), a
//! service definition a roll back refused, a record of a replacement or a
//! roll back that cannot be read (its service left alone), an empty
//! declaration refused. The daemon and `status --local` gather it from the same state
//! directory; each adds what only it knows (the daemon: its last apply in
//! memory and the refusal it made; `--local`: the declaration file read
//! now).

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::apply::{Action, AppliedState};
use crate::schedule::suspend::Suspended;
use crate::store::Store;
use crate::window::{Moment, WindowRecord};

/// One thing that needs attention.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Attention {
    /// What kind: `failed-resource`, `apply-failed`, `window-past-bound`,
    /// `step-suspended`, `alert`, `declaration-empty-refused`,
    /// `rolled-back`, `record-unreadable`.
    pub what: &'static str,
    /// The line `status` prints.
    pub line: String,
}

impl Attention {
    /// One of `what`, saying `line`.
    pub fn new(what: &'static str, line: impl Into<String>) -> Self {
        Attention {
            what,
            line: line.into(),
        }
    }
}

fn time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// Everything the state directory says needs attention at `at`: the last
/// apply's failures, window `records` of this boot past their bound, the
/// `suspended` steps, and alerts raised since the last apply.
pub fn gather(
    store: &Store,
    applied: Option<&AppliedState>,
    records: &[WindowRecord],
    suspended: &Suspended,
    at: &Moment,
) -> Vec<Attention> {
    let mut out = Vec::new();
    if let Some(applied) = applied {
        let mut failed = 0;
        for line in applied.lines.iter().filter(|l| l.action == Action::Failed) {
            failed += 1;
            out.push(Attention::new(
                "failed-resource",
                format!(
                    "resource {} failed in the last apply ({}){}",
                    line.id,
                    time(applied.applied_at),
                    line.reason
                        .as_deref()
                        .map_or(String::new(), |r| format!(": {r}"))
                ),
            ));
        }
        if let Some(halt) = &applied.halted {
            out.push(Attention::new(
                "apply-failed",
                format!(
                    "the last apply ({}) halted at {}: {}",
                    time(applied.applied_at),
                    halt.id,
                    halt.reason
                ),
            ));
        } else if !applied.ok && failed == 0 {
            out.push(Attention::new(
                "apply-failed",
                format!("the last apply ({}) failed", time(applied.applied_at)),
            ));
        }
    }
    for r in records {
        if r.boot_id == at.boot_id && !r.within_bound(at) {
            out.push(Attention::new(
                "window-past-bound",
                format!(
                    "the window of {} (open since {}) is past its bound of {} s",
                    r.step,
                    time(r.opened_at),
                    r.bound().as_secs()
                ),
            ));
        }
    }
    for (step, s) in &suspended.steps {
        out.push(Attention::new(
            "step-suspended",
            format!(
                "step {step} is suspended since {} (mesh-host resume {step} lifts it)",
                time(s.since)
            ),
        ));
    }
    match crate::apply::rollouts::scan_refused(store) {
        Ok(refused) => {
            for (name, r) in &refused.found {
                out.push(Attention::new(
                    "rolled-back",
                    format!(
                        "container {name} ({}) was rolled back at {}: {}; its definition (image {}) \
                         is not tried again until the declaration changes it",
                        r.id,
                        time(r.at),
                        r.reason,
                        r.image
                    ),
                ));
            }
            for name in refused.unreadable.keys() {
                out.extend(
                    refused
                        .problem(name)
                        .map(|p| Attention::new("record-unreadable", p)),
                );
            }
        }
        Err(e) => out.push(Attention::new(
            "rolled-back",
            format!("the records of rolled-back replacements cannot be read: {e}"),
        )),
    }
    if let Ok(rollouts) = crate::apply::rollouts::scan_in_flight(store) {
        for name in rollouts.unreadable.keys() {
            out.extend(
                rollouts
                    .problem(name)
                    .map(|p| Attention::new("record-unreadable", p)),
            );
        }
    }
    match crate::window::alerts::since(store, applied.map(|a| a.applied_at)) {
        Ok(alerts) => {
            for a in alerts {
                out.push(Attention::new(
                    "alert",
                    format!("{} at {}: {}", a.event, time(a.at), a.message),
                ));
            }
        }
        Err(e) => out.push(Attention::new(
            "alert",
            format!("the alerts since the last apply cannot be read: {e}"),
        )),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::{Halt, ReportLine};
    use crate::window::alerts::{self, Alert};
    use serde_json::json;
    use std::collections::BTreeMap;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("time").to_utc()
    }

    fn applied(ok: bool, lines: Vec<ReportLine>, halted: Option<Halt>) -> AppliedState {
        AppliedState {
            format: crate::apply::state::APPLIED_FORMAT,
            declaration: crate::apply::recorded::RecordedDeclaration::from_value(
                &json!({"declaration": 1, "resources": []}),
            ),
            applied_at: at("2026-12-01T10:00:00Z"),
            ok,
            halted,
            lines,
            files: BTreeMap::new(),
            units: Vec::new(),
            containers: Vec::new(),
        }
    }

    fn moment() -> Moment {
        Moment {
            wall: at("2026-12-01T12:00:00Z"),
            boot_id: "b".into(),
            since_boot: None,
        }
    }

    #[test]
    fn all_well_is_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let ok = applied(
            true,
            vec![ReportLine {
                id: "web".into(),
                action: Action::Created,
                reason: None,
                diff: None,
                steps: Vec::new(),
            }],
            None,
        );
        let out = gather(&store, Some(&ok), &[], &Suspended::default(), &moment());
        assert_eq!(out, Vec::new());
        assert_eq!(
            gather(&store, None, &[], &Suspended::default(), &moment()),
            Vec::new()
        );
    }

    #[test]
    fn a_record_of_a_replacement_that_cannot_be_read_needs_attention_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        std::fs::write(dir.path().join("rollout.web.json"), "secret-token").expect("write");
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("refused.db.json"))
            .expect("symlink");
        let out = gather(&store, None, &[], &Suspended::default(), &moment());
        let lines: Vec<(&str, &str)> = out.iter().map(|a| (a.what, a.line.as_str())).collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines.iter().all(|(what, line)| *what == "record-unreadable"
            && !line.contains("secret-token")
            && line.contains("remove")));
        assert!(lines[0].1.contains("refused.db.json") && lines[0].1.contains("symbolic link"));
        assert!(
            lines[1].1.contains("rollout.web.json") && lines[1].1.contains("web is left alone")
        );
    }

    #[test]
    fn each_thing_that_needs_attention_gets_a_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let last = applied(
            false,
            vec![ReportLine {
                id: "db".into(),
                action: Action::Failed,
                reason: Some("no such image".into()),
                diff: None,
                steps: Vec::new(),
            }],
            None,
        );
        let record: WindowRecord = serde_json::from_value(json!({
            "record": 1, "step": "gc", "fire-time": "2026-12-01T11:00:00Z",
            "opened-at": "2026-12-01T11:00:00Z", "boot-id": "b", "pid": 1,
            "pid-start-time": 1, "step-container": "gc-run", "step-timeout-secs": 60,
            "held": []
        }))
        .expect("record");
        let mut other_boot = record.clone();
        other_boot.boot_id = "a".into();
        let mut suspended = Suspended::default();
        suspended.steps.insert(
            "backup".into(),
            crate::schedule::suspend::Suspension {
                since: at("2026-12-01T09:00:00Z"),
            },
        );
        let alert = |t: &str| Alert {
            event: "will-not-start-again".into(),
            at: at(t),
            step: Some("gc".into()),
            container: Some("web".into()),
            message: "container web WILL NOT START AGAIN".into(),
        };
        // One before the last apply (already seen), one after.
        alerts::record(&store, alert("2026-12-01T09:30:00Z"));
        alerts::record(&store, alert("2026-12-01T11:05:00Z"));
        let out = gather(
            &store,
            Some(&last),
            &[record, other_boot],
            &suspended,
            &moment(),
        );
        let whats: Vec<&str> = out.iter().map(|a| a.what).collect();
        assert_eq!(
            whats,
            vec![
                "failed-resource",
                "window-past-bound",
                "step-suspended",
                "alert"
            ],
            "{out:?}"
        );
        assert!(out[0].line.contains("db failed") && out[0].line.contains("no such image"));
        assert!(out[1].line.contains("gc") && out[1].line.contains("360 s"));
        assert!(out[2]
            .line
            .contains("backup is suspended since 2026-12-01 09:00:00 UTC"));
        assert!(out[3].line.contains("WILL NOT START AGAIN") && out[3].line.contains("11:05:00"));
        // A halted apply says where.
        let halted = applied(
            false,
            Vec::new(),
            Some(Halt {
                id: "migrate".into(),
                exit_status: Some(1),
                reason: "exit 1".into(),
                not_applied: 2,
            }),
        );
        let out = gather(&store, Some(&halted), &[], &Suspended::default(), &moment());
        assert!(out
            .iter()
            .any(|a| a.what == "apply-failed" && a.line.contains("halted at migrate")));
    }
}
