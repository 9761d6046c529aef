//! What the daemon says of itself: the `status` answer and the one-line
//! `STATUS=`, both from the same state (the last apply, an empty
//! declaration refused, the scheduler's steps, the live window records).

use chrono::{DateTime, Utc};

use super::Daemon;
use crate::attention::{self, Attention};
use crate::control::Response;
use crate::schedule::ready::ReadyState;
use crate::schedule::scheduler::StepStatus;
use crate::step_listing::{self, StepFacts};

/// What [`step_listing`] needs of a step's status.
fn facts(s: &StepStatus) -> StepFacts {
    StepFacts {
        next_fire: s.next_fire,
        to_be_seen: s.running
            || s.suspended_since.is_some()
            || matches!(s.ready, Some(ReadyState::NotReady { .. }))
            || StepFacts::failed_last(s.history.last_run, s.history.last_success),
    }
}

/// An empty declaration file the daemon refused (and keeps refusing until
/// a declaration is applied): see [`crate::apply::empty`].
#[derive(Debug, Clone)]
pub(super) struct EmptyRefusal {
    /// When it was last refused.
    pub at: DateTime<Utc>,
    /// The file.
    pub path: String,
    /// How many resources it would have removed, when known.
    pub applied: Option<usize>,
    /// Why, in full.
    pub reason: String,
}

impl EmptyRefusal {
    /// One line for `status` and `STATUS=`.
    pub fn line(&self) -> String {
        match self.applied {
            Some(n) => format!(
                "EMPTY DECLARATION REFUSED: {} declares no resources; the {n} applied are kept (mesh-host apply --allow-empty FILE removes them)",
                self.path
            ),
            None => format!(
                "EMPTY DECLARATION REFUSED: {} declares no resources; everything applied is kept",
                self.path
            ),
        }
    }
}

impl Daemon {
    /// The `status` answer; `brief`: of many steps, only those
    /// [`step_listing`] picks.
    pub(super) async fn status_response(&self, brief: bool) -> Response {
        let mut steps = self.scheduler.status().await.unwrap_or_default();
        let scheduled = steps.len();
        if brief {
            steps = step_listing::pick(&steps, facts)
                .into_iter()
                .cloned()
                .collect();
        }
        // Unreadable window records are an answer of their own, never "no
        // window open".
        let windows = match self.windows.live_records() {
            Ok(w) => w,
            Err(e) => return Response::error(1, format!("window records unreadable: {e}")),
        };
        let last = self
            .last_apply
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let empty = self.empty_refusal();
        let health = self
            .declaration
            .lock()
            .await
            .as_ref()
            .map(crate::render::health_checks);
        let mut attention = match self.attention() {
            Ok(a) => a,
            Err(e) => return Response::error(1, e),
        };
        if let Some(e) = &empty {
            attention.push(Attention::new("declaration-empty-refused", e.line()));
        } else if let Some(l) = last.as_ref().filter(|l| !l.ok) {
            // A failure the record of applies does not show (a refused or
            // unreadable declaration file, an apply that could not start).
            if !attention
                .iter()
                .any(|a| matches!(a.what, "failed-resource" | "apply-failed"))
            {
                attention.push(Attention::new(
                    "apply-failed",
                    format!(
                        "the last apply ({}) failed: {}",
                        crate::render::time(l.at),
                        l.summary
                    ),
                ));
            }
        }
        let json = serde_json::json!({
            "declaration": self.cfg.declaration.display().to_string(),
            "health": health,
            "last-apply": last.as_ref().map(|l| serde_json::json!({
                "at": l.at, "ok": l.ok, "summary": l.summary })),
            "empty-declaration-refused": empty.as_ref().map(|e| serde_json::json!({
                "at": e.at, "file": e.path, "applied": e.applied, "reason": e.reason,
                "line": e.line() })),
            "steps": steps,
            "steps-scheduled": scheduled,
            "open-windows": windows,
            "shared-folders": self.folders.folders(),
            "attention": attention,
        });
        Response {
            exit: if attention.is_empty() {
                0
            } else {
                attention::EXIT_ATTENTION
            },
            text: crate::render::daemon_status(&json),
            json,
        }
    }

    /// What the state directory says needs attention (see
    /// [`crate::attention`]); an error when it cannot be read.
    fn attention(&self) -> Result<Vec<Attention>, String> {
        let applied = self
            .applied_for_status
            .get(&self.store, attention::of_applied)
            .map_err(|e| e.to_string())?;
        let records = crate::window::Records::of(&self.store)
            .all()
            .map_err(|e| format!("window records unreadable: {e}"))?;
        let suspended = crate::schedule::suspend::load(&self.store)?;
        let at = crate::window::Moment {
            wall: Utc::now(),
            boot_id: crate::store::boot_id().map_err(|e| e.to_string())?,
            since_boot: Some(crate::clock::since_boot()),
        };
        Ok(attention::gather(
            &self.store,
            applied.as_ref().as_ref(),
            &records,
            &suspended,
            &at,
        ))
    }

    /// The empty declaration refused, if one stands.
    pub(super) fn empty_refusal(&self) -> Option<EmptyRefusal> {
        self.empty_refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The one-line `STATUS=`: last apply, schedules and next fire, windows.
    pub(super) async fn status_line(&self) -> String {
        let steps = self.scheduler.status().await.unwrap_or_default();
        self.status_line_of(&steps)
    }

    /// The `STATUS=` line for these steps' state.
    pub(super) fn status_line_of(&self, steps: &[StepStatus]) -> String {
        let last = self
            .last_apply
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let apply = match last {
            Some(l) => format!(
                "last apply {} {}",
                l.at.format("%Y-%m-%d %H:%M:%S UTC"),
                if l.ok { "ok" } else { "FAILED" }
            ),
            None => "no apply yet".to_string(),
        };
        let apply = match self.empty_refusal() {
            Some(e) => format!("{apply}; {}", e.line()),
            None => apply,
        };
        // A suspended step's next due time does not run: not "next".
        let next = steps
            .iter()
            .filter(|s| s.suspended_since.is_none())
            .filter_map(|s| s.next_fire.map(|t| (t, s.step.clone())))
            .min();
        let schedules = match next {
            Some((t, step)) => format!(
                "{} schedule(s), next {step} at {}",
                steps.len(),
                t.format("%Y-%m-%d %H:%M UTC")
            ),
            None => format!("{} schedule(s)", steps.len()),
        };
        let windows = match self.windows.live_records() {
            Ok(w) if w.is_empty() => "no window open".to_string(),
            Ok(w) => format!(
                "OPEN WINDOW: {}",
                w.iter()
                    .map(|r| format!(
                        "{} holds {}{}",
                        r.step,
                        r.held_names().collect::<Vec<_>>().join(","),
                        if r.owed { " (owed)" } else { "" }
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            Err(e) => format!("window records unreadable: {e}"),
        };
        let suspended: Vec<String> = steps
            .iter()
            .filter_map(|s| {
                s.suspended_since
                    .map(|t| format!("{} since {}", s.step, t.format("%Y-%m-%d %H:%M UTC")))
            })
            .collect();
        if suspended.is_empty() {
            format!("{apply}; {schedules}; {windows}")
        } else {
            format!(
                "{apply}; {schedules}; SUSPENDED: {}; {windows}",
                suspended.join(", ")
            )
        }
    }
}
