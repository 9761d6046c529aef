//! What the daemon says of itself: the `status` answer
//! ([`crate::answer::status`]) and the one-line `STATUS=`, both from the
//! same state (the last apply, an empty declaration refused, the
//! scheduler's steps, the live window records).

use chrono::Utc;

use super::shared::{Daemon, LastLines};
use crate::answer::status::{self, EmptyRefusal, LastApply, OpenWindow, Status, Steps};
use crate::answer::Failure;
use crate::attention::{self, Attention};
use crate::schedule::scheduler::StepsSummary;

impl Daemon {
    /// The `status` answer; `brief`: of many steps, only those
    /// [`crate::step_listing`] picks, built by the scheduler for those
    /// alone; `written`: every step, written as JSON by the scheduler (an
    /// answer whose text is not made: `status --json`).
    pub(super) async fn status(&self, brief: bool, written: bool) -> Result<Status, Failure> {
        let (steps, steps_scheduled) = if brief {
            let listed = self.scheduler.listed().await.unwrap_or_default();
            (Steps::Listed(listed.steps), listed.scheduled)
        } else if written {
            // As the other forms: a scheduler that has stopped (the
            // daemon is stopping) lists no step, it does not fail the
            // answer.
            match self.scheduler.written().await {
                Ok((list, scheduled)) => (Steps::Written(list), scheduled),
                Err(e) => {
                    tracing::warn!("status: the steps are not listed: {e}");
                    (Steps::Listed(Vec::new()), 0)
                }
            }
        } else {
            let steps = self.scheduler.status().await.unwrap_or_default();
            let (steps, scheduled) = status::listed(steps, false);
            (Steps::Listed(steps), scheduled)
        };
        // Unreadable window records are an answer of their own, never "no
        // window open".
        let open_windows = self
            .windows
            .live_records()
            .map_err(|e| Failure::failed(format!("window records unreadable: {e}")))?
            .into_iter()
            .map(OpenWindow::of)
            .collect();
        let last = self
            .last_apply
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let empty = self.empty_refusal();
        let health = self
            .armed
            .lock()
            .await
            .as_ref()
            .map(|a| a.health.clone())
            .unwrap_or_else(|| serde_json::Value::Array(Vec::new()));
        let (mut attention, recorded) = self.attention().map_err(Failure::failed)?;
        if let Some(e) = &empty {
            attention.push(Attention::new("declaration-empty-refused", e.line.clone()));
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
        // This daemon's last apply (a refused declaration file too), held
        // in memory, with its lines (brief: those that changed): the
        // record's, unless it found the node as the same request left it;
        // before its first, the record's.
        let recorded = recorded.as_ref().as_ref();
        let last_apply = match last {
            Some(l) => {
                let (halted, lines) = match &l.lines {
                    LastLines::Recorded => (
                        recorded.and_then(|r| r.halted.clone()),
                        recorded
                            .map(|r| status::lines_listed(&r.lines, brief))
                            .unwrap_or_default(),
                    ),
                    LastLines::Unchanged => (
                        None,
                        recorded
                            .map(|r| status::lines_unchanged(&r.lines, brief))
                            .unwrap_or_default(),
                    ),
                };
                Some(LastApply {
                    at: l.at,
                    ok: l.ok,
                    summary: l.summary,
                    halted,
                    lines,
                })
            }
            None => recorded.map(|r| status::recorded_apply(r, brief)),
        };
        Ok(Status {
            declaration: self.cfg.declaration.display().to_string(),
            state_dir: self.cfg.state_dir.display().to_string(),
            daemon_listening: true,
            last_apply,
            empty_declaration_refused: empty,
            open_windows,
            health,
            shared_folders: self.folders.folders(),
            steps,
            steps_scheduled,
            attention,
        })
    }

    /// What the state directory says needs attention (see
    /// [`crate::attention`]), and the last apply it records; an error when
    /// it cannot be read.
    #[allow(clippy::type_complexity)]
    fn attention(
        &self,
    ) -> Result<
        (
            Vec<Attention>,
            std::sync::Arc<Option<crate::apply::AppliedState>>,
        ),
        String,
    > {
        let applied = self
            .applied_for_status
            .get(&self.store, status::of_applied)
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
        let attention = attention::gather(
            &self.store,
            applied.as_ref().as_ref(),
            &records,
            &suspended,
            &at,
        );
        Ok((attention, applied))
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
        let steps = self.scheduler.summary().await.unwrap_or_default();
        self.status_line_of(&steps)
    }

    /// The `STATUS=` line for this summary of the steps.
    pub(super) fn status_line_of(&self, steps: &StepsSummary) -> String {
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
            Some(e) => format!("{apply}; {}", e.line),
            None => apply,
        };
        // A suspended step's next due time does not run: not "next".
        let schedules = match &steps.next {
            Some((t, step)) => format!(
                "{} schedule(s), next {step} at {}",
                steps.scheduled,
                t.format("%Y-%m-%d %H:%M UTC")
            ),
            None => format!("{} schedule(s)", steps.scheduled),
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
            .suspended
            .iter()
            .map(|(step, t)| format!("{step} since {}", t.format("%Y-%m-%d %H:%M UTC")))
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
