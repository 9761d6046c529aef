//! How a fire's run ended, as its report, its journal events and the
//! metrics tell it.

use serde::Serialize;

/// How the step's run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "kebab-case")]
pub enum RunOutcome {
    /// Exited 0.
    Succeeded,
    /// Exited non-zero (137 when `systemctl stop` on its unit killed it).
    Exited {
        /// The exit status.
        status: i64,
    },
    /// Exited non-zero after the kernel's OOM killer killed a process of it.
    OomKilled {
        /// The exit status.
        status: i64,
    },
    /// Outlived its timeout and was stopped.
    TimedOut {
        /// The exit status after the stop.
        status: Option<i64>,
    },
    /// Stopped from outside: `systemctl stop` of its unit.
    Stopped {
        /// The exit status after the stop.
        status: Option<i64>,
    },
    /// Stopped because the host is shutting down.
    Interrupted {
        /// The exit status after the stop.
        status: Option<i64>,
    },
    /// Could not run at all.
    Error {
        /// Why.
        reason: String,
    },
    /// Not run: the previous run is in flight, or another window holds one
    /// of its containers.
    Skipped {
        /// Why.
        reason: String,
    },
}

/// How the reason of a fire skipped for a window begins.
pub(super) const SKIPPED_FOR_A_WINDOW: &str = "the window of ";

impl RunOutcome {
    /// The exit status, when the container ran and exited.
    pub fn exit_status(&self) -> Option<i64> {
        match self {
            RunOutcome::Succeeded => Some(0),
            RunOutcome::Exited { status } | RunOutcome::OomKilled { status } => Some(*status),
            RunOutcome::TimedOut { status }
            | RunOutcome::Stopped { status }
            | RunOutcome::Interrupted { status } => *status,
            RunOutcome::Error { .. } | RunOutcome::Skipped { .. } => None,
        }
    }

    /// Whether the fire was skipped because a window record (another
    /// window's, or one of this step still closing) was in its way: a
    /// catch-up skipped so is owed, and runs once that window has closed.
    pub fn skipped_for_a_window(&self) -> bool {
        matches!(self, RunOutcome::Skipped { reason } if reason.starts_with(SKIPPED_FOR_A_WINDOW))
    }

    /// Why a run failed, as `MESH_REASON` says it: `exited`, `oom`,
    /// `timed-out`, `stopped`, `interrupted`, `error`.
    pub fn reason(&self) -> &'static str {
        match self {
            RunOutcome::Succeeded => "succeeded",
            RunOutcome::Exited { .. } => "exited",
            RunOutcome::OomKilled { .. } => "oom",
            RunOutcome::TimedOut { .. } => "timed-out",
            RunOutcome::Stopped { .. } => "stopped",
            RunOutcome::Interrupted { .. } => "interrupted",
            RunOutcome::Error { .. } => "error",
            RunOutcome::Skipped { .. } => "skipped",
        }
    }
}

/// A one-line description of an outcome.
pub fn describe(outcome: &RunOutcome) -> String {
    match outcome {
        RunOutcome::Succeeded => "succeeded".into(),
        RunOutcome::Exited { status } => format!("exited with status {status}"),
        RunOutcome::OomKilled { status } => {
            format!("killed by the kernel: out of memory (status {status})")
        }
        RunOutcome::TimedOut { status } => format!(
            "exceeded its timeout and was stopped (status {})",
            status.map_or("unknown".into(), |s| s.to_string())
        ),
        RunOutcome::Stopped { status } => match status {
            Some(s) => format!("stopped: its unit was stopped (systemctl stop), status {s}"),
            None => "stopped: its unit was stopped (systemctl stop); no exit status (its container did not run, or could not be inspected)".into(),
        },
        RunOutcome::Interrupted { .. } => "stopped because mesh-host is shutting down".into(),
        RunOutcome::Error { reason } => reason.clone(),
        RunOutcome::Skipped { reason } => format!("skipped: {reason}"),
    }
}
