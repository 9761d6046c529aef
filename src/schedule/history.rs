//! What the host remembers of each step across restarts and reboots
//! (`step-history.json`): the last due time handled, the last run, and
//! what `catch-up` counts from or still owes.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::store::Store;

/// The store document holding each step's history.
pub(crate) const HISTORY_DOC: &str = crate::store::STEP_HISTORY;

/// What the host remembers of a step across restarts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct StepHistory {
    /// The last due time handled (fired or skipped).
    pub last_due: Option<DateTime<Utc>>,
    /// When the last run ended.
    pub last_run: Option<DateTime<Utc>>,
    /// How it ended, in words.
    pub last_outcome: Option<String>,
    /// Its exit status, if it exited.
    pub last_exit_status: Option<i64>,
    /// How long the last fire took, its window included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_duration_secs: Option<f64>,
    /// What the last run used ([`crate::accounting`]); boxed, since every
    /// declared step has a history and most have no run yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_usage: Option<Box<crate::accounting::Usage>>,
    /// When a run last succeeded.
    pub last_success: Option<DateTime<Utc>>,
    /// When the step was armed while it had no handled due time: what
    /// fires missed before its first one are counted from (and caught up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub armed_at: Option<DateTime<Utc>>,
    /// A catch-up (the due time it runs for) skipped because a window
    /// still closing from before was in its way: owed, it runs once that
    /// window has closed, after a restart too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up_owed: Option<DateTime<Utc>>,
}

/// The steps' history as the store has it. A damaged file is an error in
/// the journal, never a crash: it is set aside (renamed `*.damaged`, for the
/// operator to read) and the scheduler starts without it, so fires missed
/// while the daemon was down are neither counted nor caught up this once.
pub(crate) fn load_history(store: &Store) -> BTreeMap<String, StepHistory> {
    let e = match store.load::<BTreeMap<String, StepHistory>>(HISTORY_DOC) {
        Ok(h) => return h.unwrap_or_default(),
        Err(e) => e,
    };
    let set_aside = store
        .document_path(HISTORY_DOC)
        .map_err(|e| e.to_string())
        .and_then(|path| {
            let aside = path.with_extension("json.damaged");
            std::fs::rename(&path, &aside)
                .map(|()| aside)
                .map_err(|e| format!("{}: {e}", path.display()))
        });
    match set_aside {
        Ok(aside) => tracing::error!(
            "step history unreadable ({e}): set aside as {}; starting without it (no fire missed while the daemon was down is counted or caught up)",
            aside.display()
        ),
        Err(moved) => tracing::error!(
            "step history unreadable ({e}), and it could not be set aside ({moved}); starting without it"
        ),
    }
    BTreeMap::new()
}
