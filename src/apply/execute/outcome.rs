//! What carrying out one decision came to ([`Outcome`]), and what the
//! ledger keeps of it ([`Record`]).

use std::sync::Arc;

use super::super::report::Action;
use crate::schedule::kept::KeptStep;

/// What carrying out one decision came to.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub(crate) action: Action,
    pub(crate) reason: Option<String>,
    /// The step that failed, those before it done and those after it not
    /// reached (done, when the line itself did not fail: a step whose
    /// image could not be pulled is still installed); `None`: every step
    /// done (or, the line failed, none reached).
    pub(crate) failed_step: Option<usize>,
    /// What the ledger keeps of it.
    pub(crate) records: Vec<Record>,
}

impl Outcome {
    pub(crate) fn new(action: Action, reason: Option<String>) -> Self {
        Outcome {
            action,
            reason,
            failed_step: None,
            records: Vec::new(),
        }
    }

    /// Failed at step `step`.
    pub(crate) fn failed_at(step: usize, reason: String) -> Self {
        Outcome {
            action: Action::Failed,
            reason: Some(reason),
            failed_step: Some(step),
            records: Vec::new(),
        }
    }

    /// Failed before any step.
    pub(crate) fn failed(reason: String) -> Self {
        Outcome::new(Action::Failed, Some(reason))
    }
}

/// What the ledger keeps of an outcome.
#[derive(Debug)]
pub(crate) enum Record {
    /// What a container (by name) was created reading, for resource `id`.
    Inputs(String, Arc<crate::container_spec::BuiltContainer>, String),
    /// The same, only if nothing is recorded (a lost record).
    InputsIfLost(String, Arc<crate::container_spec::BuiltContainer>, String),
    /// A managed container dealt with under another name (renamed).
    Consumed(String),
    /// A container removed.
    Removed(String),
    /// A container recreated: `container-recreated` is logged.
    Recreated(String),
    /// A scheduled step for the scheduler.
    Step(Box<KeptStep>),
    /// A unit file the host removed.
    UnitGone(String),
    /// Worth saying, failing nothing.
    Warning(String),
    /// A run-once step's exit status.
    ExitStatus(Option<i64>),
}
