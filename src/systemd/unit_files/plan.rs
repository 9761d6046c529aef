//! What a unit needs, decided from what systemd and the unit directory
//! say now, before anything is done: the file written or not, the
//! enablement changed or not, and the one job (start, restart, stop) that
//! brings the unit to its declared state. [`decide`] is pure; the reads
//! it is given are [`UnitFiles::observe`](super::UnitFiles::observe) and
//! [`UnitFiles::read_file`](super::UnitFiles::read_file), the acts
//! [`UnitFiles::prepare`](super::UnitFiles::prepare),
//! [`UnitFiles::set_enabled`](super::UnitFiles::set_enabled) and
//! [`UnitFiles::run_job`](super::UnitFiles::run_job). An apply decides
//! every unit this way first (so that `diff` says what the apply will do,
//! state and enablement included) and acts on the decision after.

use chrono::{DateTime, Utc};

use super::file::{restarts_on_change, FileChange};
use crate::declaration::{Unit, UnitState};

/// A unit as systemd says it is now (read-only answers).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnitSeen {
    /// `GetUnitFileState`: `enabled`, `disabled`, `static`, `masked`, …;
    /// empty when systemd knows no file of that name yet.
    pub enablement: String,
    /// `ActiveState`: `inactive` when the unit is not loaded.
    pub active_state: String,
    /// A `Type=oneshot` service without `RemainAfterExit`, as loaded.
    pub oneshot_without_remain: bool,
    /// When such a oneshot last ran successfully under the declared file
    /// (the host's record, [`crate::systemd::oneshot_runs`]).
    pub ran_with_this_file: Option<DateTime<Utc>>,
}

impl UnitSeen {
    /// Neither running nor on its way.
    pub fn is_down(&self) -> bool {
        matches!(self.active_state.as_str(), "inactive" | "failed")
    }

    /// Running (or reloading).
    pub fn is_active(&self) -> bool {
        matches!(self.active_state.as_str(), "active" | "reloading")
    }
}

/// The job that brings a unit to its declared state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitJob {
    /// `StartUnit`: it is not running (or, a oneshot, has not run under
    /// this file).
    Start,
    /// `RestartUnit`: it runs and its file changed.
    Restart,
    /// `StopUnit`: it runs and is declared stopped.
    Stop,
}

impl UnitJob {
    /// The word for it: `start`, `restart`, `stop`.
    pub fn as_str(self) -> &'static str {
        match self {
            UnitJob::Start => "start",
            UnitJob::Restart => "restart",
            UnitJob::Stop => "stop",
        }
    }
}

/// What a unit needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitDecision {
    /// What writing its file does.
    pub file: FileChange,
    /// Its file's content is as declared but its mode must be put back.
    pub fix_mode: bool,
    /// `Some(want)`: enable (`true`) or disable it.
    pub enable: Option<bool>,
    /// The job to run, if any.
    pub job: Option<UnitJob>,
    /// A oneshot that ran successfully under this very file, then: not
    /// run again.
    pub already_ran: Option<DateTime<Utc>>,
}

impl UnitDecision {
    /// Whether it does anything at all.
    pub fn acts(&self) -> bool {
        self.file != FileChange::Unchanged
            || self.fix_mode
            || self.enable.is_some()
            || self.job.is_some()
    }
}

/// What `unit` needs, its file being `file` (what writing it does) and
/// systemd saying `seen`.
///
/// A unit declared started that runs is left alone unless its file
/// changed: then it is restarted, for the types where a restart is
/// harmless (`restarts_on_change`), else started (a job on a running
/// mount is a no-op). A oneshot without `RemainAfterExit` that ran
/// successfully under this very file is not run again. A unit declared
/// stopped is stopped if it runs or is on its way.
pub fn decide(unit: &Unit, file: FileChange, seen: &UnitSeen) -> UnitDecision {
    let name = unit.name.as_str();
    let enable = match unit.enabled {
        Some(true) if seen.enablement != "enabled" => Some(true),
        Some(false) if matches!(seen.enablement.as_str(), "enabled" | "enabled-runtime") => {
            Some(false)
        }
        _ => None,
    };
    let changed = file != FileChange::Unchanged;
    let mut already_ran = None;
    let job = match unit.state {
        UnitState::Stopped => (!seen.is_down()).then_some(UnitJob::Stop),
        UnitState::Started => {
            if changed && !seen.is_down() && restarts_on_change(name) {
                Some(UnitJob::Restart)
            } else if !changed && seen.is_active() {
                None
            } else if !changed
                && seen.active_state == "inactive"
                && seen.oneshot_without_remain
                && seen.ran_with_this_file.is_some()
            {
                already_ran = seen.ran_with_this_file;
                None
            } else {
                Some(UnitJob::Start)
            }
        }
    };
    UnitDecision {
        file,
        fix_mode: false,
        enable,
        job,
        already_ran,
    }
}

/// What the line of a decided unit says before anything is done: the
/// action and every step, as [`summarize`](super::judge::summarize) says
/// them once done (a start is said `started`; its outcome may turn out a
/// oneshot's `satisfied`).
pub fn planned_words(decision: &UnitDecision) -> (&'static str, Option<String>) {
    let mut parts: Vec<String> = Vec::new();
    if decision.file != FileChange::Unchanged {
        parts.push(format!("file {}", decision.file));
    }
    let state_action = match decision.job {
        Some(UnitJob::Start) => {
            parts.push("started".into());
            Some("started")
        }
        Some(UnitJob::Restart) => {
            parts.push("restarted".into());
            Some("updated")
        }
        Some(UnitJob::Stop) => {
            parts.push("stopped".into());
            Some("stopped")
        }
        None => {
            if let Some(at) = decision.already_ran {
                parts.push(super::judge::already_ran_words(at));
            }
            None
        }
    };
    match decision.enable {
        Some(true) => parts.push("enabled".into()),
        Some(false) => parts.push("disabled".into()),
        None => {}
    }
    let action = state_action.unwrap_or(decision.file.as_str());
    (action, (!parts.is_empty()).then(|| parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declaration::UnitName;

    fn unit(name: &str, state: UnitState, enabled: Option<bool>) -> Unit {
        Unit {
            name: UnitName::try_from(name).expect("name"),
            content: "[Service]\nExecStart=/bin/true\n".into(),
            state,
            enabled,
        }
    }

    fn seen(enablement: &str, active: &str) -> UnitSeen {
        UnitSeen {
            enablement: enablement.into(),
            active_state: active.into(),
            ..UnitSeen::default()
        }
    }

    #[test]
    fn state_and_enablement_are_decided_from_what_systemd_says() {
        let web = unit("web.service", UnitState::Started, Some(true));
        let d = decide(&web, FileChange::Unchanged, &seen("enabled", "active"));
        assert!(!d.acts(), "{d:?}");
        let d = decide(&web, FileChange::Unchanged, &seen("disabled", "inactive"));
        assert_eq!((d.enable, d.job), (Some(true), Some(UnitJob::Start)));
        assert_eq!(
            planned_words(&d),
            ("started", Some("started; enabled".to_string()))
        );
        let d = decide(&web, FileChange::Updated, &seen("enabled", "active"));
        assert_eq!(d.job, Some(UnitJob::Restart));
        assert_eq!(planned_words(&d).0, "updated");
        // A mount is started, never restarted, on a changed file.
        let mount = unit("srv.mount", UnitState::Started, None);
        let d = decide(&mount, FileChange::Updated, &seen("static", "active"));
        assert_eq!(d.job, Some(UnitJob::Start));
        let stopped = unit("web.service", UnitState::Stopped, Some(false));
        let d = decide(
            &stopped,
            FileChange::Unchanged,
            &seen("enabled-runtime", "activating"),
        );
        assert_eq!((d.enable, d.job), (Some(false), Some(UnitJob::Stop)));
        assert_eq!(
            planned_words(&d),
            ("stopped", Some("stopped; disabled".to_string()))
        );
        let d = decide(&stopped, FileChange::Unchanged, &seen("disabled", "failed"));
        assert!(!d.acts());
        // Enablement alone: the file's word, the step in the reason.
        let d = decide(
            &stopped,
            FileChange::Unchanged,
            &seen("enabled", "inactive"),
        );
        assert_eq!(
            planned_words(&d),
            ("unchanged", Some("disabled".to_string()))
        );
    }

    #[test]
    fn a_oneshot_that_ran_under_this_file_is_not_run_again() {
        let job = unit("job.service", UnitState::Started, None);
        let mut s = seen("static", "inactive");
        s.oneshot_without_remain = true;
        let d = decide(&job, FileChange::Unchanged, &s);
        assert_eq!(d.job, Some(UnitJob::Start), "never ran: run it");
        let at = Utc::now();
        s.ran_with_this_file = Some(at);
        let d = decide(&job, FileChange::Unchanged, &s);
        assert_eq!((d.job, d.already_ran), (None, Some(at)));
        assert!(!d.acts());
        let d = decide(&job, FileChange::Updated, &s);
        assert_eq!(d.job, Some(UnitJob::Start), "a changed file runs it again");
    }
}
