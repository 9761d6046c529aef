//! Judging a unit from what systemd reports: whether a start came to what
//! was declared, why it failed, and the report line.

use serde::Serialize;

use super::file::FileChange;

/// One line of the apply report for a unit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnitReport {
    /// The resource id (for [`UnitFiles::remove`](super::UnitFiles::remove), the unit's name).
    pub id: String,
    /// `created`, `updated`, `unchanged`, `started`, `stopped`, `satisfied`,
    /// `removed` or `failed`.
    pub action: String,
    /// Everything that was done, `; `-separated, or what went wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Whether the unit is as declared.
    pub ok: bool,
}

/// A unit's state as systemd reports it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Observed {
    /// `loaded`, `not-found`, `bad-setting`, `error`, `masked`.
    pub(super) load_state: String,
    /// `active`, `reloading`, `inactive`, `failed`, `activating`, `deactivating`.
    pub(super) active_state: String,
    pub(super) sub_state: String,
    /// False when a `Condition*=` kept the last start from running anything.
    pub(super) condition_result: bool,
    /// The type's `Result` (`success`, `exit-code`, ...); none for targets
    /// and slices.
    pub(super) result: Option<String>,
    /// Service-only properties.
    pub(super) service: Option<ServiceState>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct ServiceState {
    /// `Type=`: `simple`, `oneshot`, ...
    pub(super) kind: String,
    pub(super) remain_after_exit: bool,
    /// Exit status or signal of the main process (per `ExecMainCode`).
    pub(super) exec_main_status: i32,
}

impl Observed {
    /// Neither running nor on its way.
    pub(super) fn is_down(&self) -> bool {
        matches!(self.active_state.as_str(), "inactive" | "failed")
    }

    pub(super) fn is_active(&self) -> bool {
        matches!(self.active_state.as_str(), "active" | "reloading")
    }

    pub(super) fn oneshot_without_remain(&self) -> bool {
        self.service
            .as_ref()
            .is_some_and(|s| s.kind == "oneshot" && !s.remain_after_exit)
    }

    pub(super) fn result_success(&self) -> bool {
        self.result.as_deref().is_none_or(|r| r == "success")
    }
}

/// What bringing the unit to its declared state came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum StateStep {
    /// Already as declared: nothing done.
    AsDeclared,
    /// Started now and active.
    Started,
    /// Running before, restarted on its changed file, active.
    Restarted,
    /// Stopped now.
    Stopped,
    /// A oneshot (without `RemainAfterExit`) that ran successfully.
    Satisfied,
    /// A oneshot that ran successfully under this very unit file before
    /// (then): not run again.
    AlreadyRan(chrono::DateTime<chrono::Utc>),
    /// Started, but a `Condition*=` did not hold, so nothing ran.
    ConditionUnmet,
    /// Not as declared.
    Failed(String),
}

/// Judges a unit after our start (or restart) job ended with `job_result`.
pub(super) fn judge_start(
    name: &str,
    job_result: &str,
    o: &Observed,
    restarted: bool,
) -> StateStep {
    if o.is_active() {
        return if restarted {
            StateStep::Restarted
        } else {
            StateStep::Started
        };
    }
    let done = job_result == "done";
    if done && o.active_state == "inactive" && !o.condition_result {
        return StateStep::ConditionUnmet;
    }
    if done && o.active_state == "inactive" && o.result_success() && o.oneshot_without_remain() {
        return StateStep::Satisfied;
    }
    StateStep::Failed(describe_failure(name, job_result, o))
}

/// Names systemd's verdict: its `Result`, the exit status, or the job's end.
pub(super) fn describe_failure(name: &str, job_result: &str, o: &Observed) -> String {
    let journal = format!("see journalctl -u {name}");
    if let Some(result) = o.result.as_deref().filter(|r| *r != "success") {
        let detail = match (result, o.service.as_ref()) {
            ("exit-code", Some(s)) => format!(" (exit status {})", s.exec_main_status),
            ("signal" | "core-dump", Some(s)) => format!(" (signal {})", s.exec_main_status),
            _ => String::new(),
        };
        return format!("failed: {result}{detail}; {journal}");
    }
    match job_result {
        "done" => {
            let hint = if o.service.is_some() && o.active_state == "inactive" {
                ": it exited at once; a service meant to run once and exit should be \
                 Type=oneshot"
            } else {
                ""
            };
            format!(
                "not running after start: {} ({}){hint}; {journal}",
                o.active_state, o.sub_state
            )
        }
        "dependency" => format!("failed: a unit it depends on failed to start; {journal}"),
        "timeout" => format!("failed: systemd's start job timed out; {journal}"),
        "canceled" => format!("failed: the start job was canceled; {journal}"),
        other => format!("failed: the start job ended {other}; {journal}"),
    }
}

/// Everything [`UnitFiles::converge`](super::UnitFiles::converge) did to one unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Steps {
    pub(super) file: FileChange,
    /// `Ok(Some("enabled"|"disabled"))` when changed, `Ok(None)` when as
    /// declared (or not declared), `Err` when it could not be made so.
    pub(super) enablement: Result<Option<&'static str>, String>,
    pub(super) state: StateStep,
}

/// The report line: the most telling action, and every step as the reason.
pub(super) fn summarize(id: &str, steps: &Steps) -> UnitReport {
    let mut parts: Vec<String> = Vec::new();
    let mut ok = true;
    if steps.file != FileChange::Unchanged {
        parts.push(format!("file {}", steps.file));
    }
    let state_action = match &steps.state {
        StateStep::AsDeclared => None,
        StateStep::Started => {
            parts.push("started".into());
            Some("started")
        }
        StateStep::Restarted => {
            parts.push("restarted".into());
            // The file is what changed; the restart is its consequence.
            Some("updated")
        }
        StateStep::Stopped => {
            parts.push("stopped".into());
            Some("stopped")
        }
        StateStep::Satisfied => {
            parts.push("ran and exited successfully".into());
            Some("satisfied")
        }
        StateStep::AlreadyRan(at) => {
            parts.push(format!(
                "ran successfully under this unit file at {}: not run again until the file changes",
                at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ));
            None
        }
        StateStep::ConditionUnmet => {
            parts.push("start condition not met (ConditionResult=no): nothing ran".into());
            None
        }
        StateStep::Failed(why) => {
            ok = false;
            parts.push(why.clone());
            None
        }
    };
    match &steps.enablement {
        Ok(Some(word)) => parts.push((*word).to_string()),
        Ok(None) => {}
        Err(why) => {
            ok = false;
            parts.push(why.clone());
        }
    }
    let action = if !ok {
        "failed"
    } else {
        state_action.unwrap_or(steps.file.as_str())
    };
    UnitReport {
        id: id.to_string(),
        action: action.to_string(),
        reason: (!parts.is_empty()).then(|| parts.join("; ")),
        ok,
    }
}
