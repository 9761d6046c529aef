//! `status` for people: the one text of a [`Status`], whoever built it,
//! and how the command exits with it. Times as operators read them
//! (`2026-12-01 03:56:31 UTC`); `--json` keeps RFC 3339.

use super::status::{OpenWindow, Status};
use super::Answer;
use crate::apply::Action;
use crate::exit::Exit;
use crate::render::{attention_lines, delayed, health_lines, last_figures, suspended, time};
use crate::schedule::ready::ReadyState;
use crate::schedule::scheduler::StepStatus;

impl Answer for Status {
    /// 0 when all is well, 3 when something needs attention.
    fn exit(&self) -> Exit {
        if self.attention.is_empty() {
            Exit::Ok
        } else {
            Exit::Attention
        }
    }

    fn text(&self) -> String {
        render(self)
    }
}

/// The text of `status`.
fn render(status: &Status) -> String {
    let mut out = format!("declaration: {}\n", status.declaration);
    match &status.last_apply {
        Some(last) => {
            out.push_str(&format!(
                "last apply: {}: {}\n",
                time(last.at),
                last.summary
            ));
            // What changed, one line each: the summary counts the rest
            // (at a thousand services, a thousand `unchanged` lines would
            // bury it). `--json` keeps every line.
            for line in last.lines.iter().filter(|l| l.action != Action::Unchanged) {
                out.push_str(&format!("  {line}\n"));
            }
        }
        None => out.push_str("last apply: none yet\n"),
    }
    if let Some(e) = &status.empty_declaration_refused {
        out.push_str(&format!("{}\n", e.line));
    }
    if status.open_windows.is_empty() {
        out.push_str("open windows: none\n");
    }
    for w in &status.open_windows {
        out.push_str(&window_line(w, status.daemon_listening));
    }
    out.push_str(&health_lines(&status.health));
    for f in &status.shared_folders {
        out.push_str(&format!(
            "shared folder {}: {} directories watched",
            f.id, f.watched
        ));
        if f.unwatched > 0 {
            out.push_str(&format!(
                "; {} NOT WATCHED (past its share of {} inotify watches): kept by a sweep of the whole folder every {} s",
                f.unwatched,
                f.share,
                f.sweep_every_secs.unwrap_or(0)
            ));
        }
        out.push('\n');
    }
    let steps = status.steps.listed();
    for s in steps.iter() {
        out.push_str(&step_line(s));
    }
    if status.steps_scheduled > steps.len() {
        out.push_str(&crate::step_listing::left_out_line(
            status.steps_scheduled,
            steps.len(),
        ));
        out.push('\n');
    }
    let attention = serde_json::to_value(&status.attention).unwrap_or_default();
    out.push_str(&attention_lines(Some(&attention)));
    out
}

/// `OPEN WINDOW: STEP since T, holding A, B`, and what becomes of a window
/// whose owner is gone (only a promise that holds: with a daemon
/// listening, it adopts the window within seconds; without one, a local
/// command must run).
fn window_line(w: &OpenWindow, daemon_listening: bool) -> String {
    let held: Vec<&str> = w.record.held_names().collect();
    let owner = match (w.owner_alive, daemon_listening) {
        (true, _) => "",
        (false, true) => " (its owner is gone: the running daemon adopts and closes it)",
        (false, false) => {
            " (its owner is gone and no daemon runs: the next mesh-host command closes it)"
        }
    };
    let owed = if w.record.owed {
        " (OWED: the container runtime did not answer; they are started as soon as it does)"
    } else {
        ""
    };
    format!(
        "OPEN WINDOW: {} since {}, holding {}{owner}{owed}\n",
        w.record.step,
        time(w.record.opened_at),
        if held.is_empty() {
            "nothing".to_string()
        } else {
            held.join(", ")
        }
    )
}

/// One step's line.
fn step_line(s: &StepStatus) -> String {
    let h = &s.history;
    let last = match &h.last_outcome {
        Some(outcome) => format!(
            "last {outcome} ({}){}",
            h.last_run.map_or("?".to_string(), time),
            last_figures(&serde_json::to_value(h).unwrap_or_default())
        ),
        None => "never run".to_string(),
    };
    let ready = match &s.ready {
        None | Some(ReadyState::InUse) => String::new(),
        Some(ReadyState::Ready { .. }) => "; container ready".to_string(),
        Some(ReadyState::Waiting { at, .. }) => {
            format!("; container made ready at {}", time(*at))
        }
        Some(ReadyState::NotReady { reason }) => {
            format!("; container not ready ({reason}): made at the fire")
        }
    };
    format!(
        "step {} ({} {}): next {}; {last}; last success {}{ready}{}{}\n",
        s.step,
        s.schedule,
        s.zone,
        s.next_fire.map_or("never".to_string(), time) + &delayed(s.delay_ms),
        h.last_success.map_or("none".to_string(), time),
        if s.running { "; RUNNING" } else { "" },
        suspended(s.suspended_since.map(|t| t.to_rfc3339()).as_deref())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::watch::FolderWatch;
    use crate::answer::status::{LastApply, Steps};
    use crate::attention::Attention;
    use crate::window::WindowRecord;
    use chrono::{DateTime, Utc};
    use serde_json::json;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("time").to_utc()
    }

    fn empty() -> Status {
        Status {
            declaration: "/etc/mesh-host/declaration.json".into(),
            state_dir: "/var/lib/mesh-host".into(),
            daemon_listening: true,
            last_apply: None,
            empty_declaration_refused: None,
            open_windows: Vec::new(),
            health: json!([]),
            shared_folders: Vec::new(),
            steps: Steps::Listed(Vec::new()),
            steps_scheduled: 0,
            attention: Vec::new(),
        }
    }

    fn step(json: serde_json::Value) -> StepStatus {
        let mut s = json!({"step": "gc", "schedule": "0 3 * * *", "zone": "UTC",
                           "next-fire": null, "running": false});
        s.as_object_mut()
            .expect("object")
            .extend(json.as_object().expect("object").clone());
        StepStatus {
            step: s["step"].as_str().unwrap_or_default().into(),
            schedule: s["schedule"].as_str().unwrap_or_default().into(),
            zone: s["zone"].as_str().unwrap_or_default().into(),
            next_fire: serde_json::from_value(s["next-fire"].clone()).expect("next"),
            delay_ms: None,
            running: s["running"].as_bool().unwrap_or_default(),
            ready: None,
            suspended_since: serde_json::from_value(s["suspended-since"].clone()).unwrap_or(None),
            history: serde_json::from_value(s).expect("history"),
        }
    }

    #[test]
    fn status_says_which_folders_are_kept_by_sweeps() {
        let mut status = empty();
        status.shared_folders = vec![
            FolderWatch {
                id: "a".into(),
                path: "/srv/a".into(),
                watched: 12,
                share: 4000,
                unwatched: 0,
                sweep_every_secs: None,
            },
            FolderWatch {
                id: "b".into(),
                path: "/srv/b".into(),
                watched: 4000,
                share: 4000,
                unwatched: 5001,
                sweep_every_secs: Some(30),
            },
        ];
        let text = render(&status);
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
    fn status_has_no_rfc3339_times_and_says_what_a_gone_owner_leaves() {
        let mut status = empty();
        status.last_apply = Some(LastApply {
            at: at("2026-12-01T03:56:31.123456Z"),
            ok: true,
            summary: "ok: 1 created, 1 unchanged".into(),
            halted: None,
            lines: serde_json::from_value(json!([
                {"id": "web", "action": "unchanged"},
                {"id": "db", "action": "created"}
            ]))
            .expect("lines"),
        });
        let record: WindowRecord = serde_json::from_value(json!({
            "record": 1, "step": "gc", "fire-time": "2026-12-01T03:00:00Z",
            "opened-at": "2026-12-01T03:00:00Z", "boot-id": "b", "pid": 1,
            "pid-start-time": 1, "step-container": "gc-run",
            "held": [{"id": "web", "name": "web", "was-running": true}]
        }))
        .expect("record");
        status.open_windows = vec![OpenWindow {
            record,
            owner_alive: false,
        }];
        status.steps = Steps::Listed(vec![step(json!({
            "next-fire": "2026-12-02T03:00:00Z", "last-outcome": "succeeded",
            "last-run": "2026-12-01T03:00:05Z", "last-success": "2026-12-01T03:00:05Z",
            "running": true}))]);
        status.steps_scheduled = 1;
        let text = render(&status);
        assert!(
            text.contains(
                "last apply: 2026-12-01 03:56:31 UTC: ok: 1 created, 1 unchanged\n  db created\nOPEN WINDOW"
            ),
            "{text}"
        );
        assert!(
            text.contains("OPEN WINDOW: gc since 2026-12-01 03:00:00 UTC, holding web (its owner is gone: the running daemon adopts and closes it)"),
            "{text}"
        );
        status.daemon_listening = false;
        assert!(render(&status).contains(
            "(its owner is gone and no daemon runs: the next mesh-host command closes it)"
        ));
        assert!(text.contains("next 2026-12-02 03:00:00 UTC"), "{text}");
        assert!(text.contains("; RUNNING"), "{text}");
        assert!(
            text.contains(
                "; last succeeded (2026-12-01 03:00:05 UTC); last success 2026-12-01 03:00:05 UTC"
            ),
            "{text}"
        );
        assert!(!text.contains(":00Z"), "{text}");
        status.steps = Steps::Listed(vec![step(json!({"running": true}))]);
        let never = render(&status);
        assert!(
            never.contains("; never run; last success none; RUNNING"),
            "{never}"
        );
    }

    #[test]
    fn status_ends_with_what_needs_attention_one_line_each() {
        let well = render(&empty());
        assert!(
            well.ends_with("all well: nothing needs attention\n"),
            "{well}"
        );
        let mut status = empty();
        status.steps = Steps::Listed(vec![step(
            json!({"suspended-since": "2026-12-01T10:00:00Z"}),
        )]);
        status.steps_scheduled = 3;
        status.attention = vec![
            Attention::new(
                "step-suspended",
                "step gc is suspended since 2026-12-01 10:00:00 UTC",
            ),
            Attention::new(
                "alert",
                "will-not-start-again at 2026-12-01 11:00:00 UTC: web",
            ),
        ];
        let text = render(&status);
        assert!(
            text.contains("; SUSPENDED since 2026-12-01 10:00:00 UTC"),
            "{text}"
        );
        assert!(text.contains("steps: 3 scheduled, 1 listed"), "{text}");
        assert!(
            text.ends_with("2 thing(s) need attention:\nATTENTION: step gc is suspended since 2026-12-01 10:00:00 UTC\nATTENTION: will-not-start-again at 2026-12-01 11:00:00 UTC: web\n"),
            "{text}"
        );
    }

    #[test]
    fn a_written_list_of_steps_says_what_the_built_one_says() {
        let mut listed = empty();
        listed.steps = Steps::Listed(vec![
            step(json!({"running": true})),
            step(
                json!({"step": "backup", "last-outcome": "failed", "last-run": "2026-12-01T03:00:00Z"}),
            ),
        ]);
        listed.steps_scheduled = 2;
        let list = serde_json::value::to_raw_value(&listed.steps).expect("written");
        let mut written = listed.clone();
        written.steps = Steps::Written(list);
        assert_eq!(
            written.steps.listed().as_ref(),
            listed.steps.listed().as_ref()
        );
        assert_eq!(written.text(), listed.text());
        assert_eq!(
            serde_json::to_string(&written).expect("json"),
            serde_json::to_string(&listed).expect("json")
        );
    }
}
