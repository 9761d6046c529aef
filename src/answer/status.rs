//! `mesh-host status`: one answer, built by the daemon from what it holds
//! (its last apply, the scheduler's steps, the shared folders' watch) or by
//! [`super::status_local`] from the state directory alone, and printed the
//! same way (`status_text`, which also says how it exits). The
//! JSON shape is documented in docs/status.md and held by
//! `schema/status.json`.
//!
//! What only the daemon knows is still a key of the answer from `--local`,
//! with what the state directory says: a step's `running` is `false` and
//! its `ready` `null`, `shared-folders` is empty (the watch lives in the
//! daemon).

use std::borrow::Cow;
use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::acl::watch::FolderWatch;
use crate::apply::{Action, AppliedState, Halt, ReportLine};
use crate::attention::Attention;
use crate::schedule::ready::ReadyState;
use crate::schedule::scheduler::StepStatus;
use crate::step_listing::{self, StepFacts};
use crate::window::WindowRecord;

/// The whole answer of `status`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Status {
    /// The node's declaration file (what `apply FILE` installs).
    pub declaration: String,
    /// The state directory.
    pub state_dir: String,
    /// Whether a daemon answers on the control socket (always, when it
    /// is the daemon that answers).
    pub daemon_listening: bool,
    /// The last apply; `null` when none is known.
    pub last_apply: Option<LastApply>,
    /// The node's declaration file declares nothing over applied
    /// resources, and is refused; `null` when not.
    pub empty_declaration_refused: Option<EmptyRefusal>,
    /// The windows open now.
    pub open_windows: Vec<OpenWindow>,
    /// The declared health checks (see [`crate::render::health_checks`]).
    pub health: serde_json::Value,
    /// What the shared folders' watch keeps of each folder.
    pub shared_folders: Vec<FolderWatch>,
    /// The scheduled steps (for a brief answer, only those
    /// [`step_listing`] picks).
    pub steps: Steps,
    /// How many steps are scheduled, listed or not.
    pub steps_scheduled: usize,
    /// What needs attention (`status` exits 3 when there is any).
    pub attention: Vec<Attention>,
}

/// The steps of a `status` answer: the same JSON list either way.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Steps {
    /// Each step's state, built.
    Listed(Vec<StepStatus>),
    /// Every step's state as the scheduler wrote it from its tables, one
    /// step at a time (the daemon's `status --json`): no step's state is
    /// held whole, and the list is one buffer.
    Written(Box<RawValue>),
}

impl Steps {
    /// The steps, built: a written list is read back, so that what the
    /// text says is what the JSON says (empty if it does not read).
    pub fn listed(&self) -> Cow<'_, [StepStatus]> {
        match self {
            Steps::Listed(steps) => Cow::Borrowed(steps),
            Steps::Written(list) => {
                Cow::Owned(serde_json::from_str(list.get()).unwrap_or_default())
            }
        }
    }
}

/// The last apply.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct LastApply {
    /// When it ended.
    pub at: DateTime<Utc>,
    /// Whether it succeeded.
    pub ok: bool,
    /// In one line (`ok: 3 unchanged`, `failed: …`).
    pub summary: String,
    /// The run-once step the last recorded apply halted at; `null` when
    /// none (and after an apply that found the node as the same request
    /// left it).
    pub halted: Option<Halt>,
    /// Each resource's line in the last apply: the record's, or, after an
    /// apply that found the node as the same request left it (which
    /// records no lines), every resource `unchanged`.
    pub lines: Vec<ReportLine>,
}

/// An empty declaration file refused (kept refused until a declaration is
/// applied): see [`crate::apply::empty`].
#[derive(Debug, Clone, Serialize)]
pub struct EmptyRefusal {
    /// When it was last refused (`--local`: when it was read).
    pub at: DateTime<Utc>,
    /// The file.
    pub file: String,
    /// How many resources it would have removed, when known.
    pub applied: Option<usize>,
    /// Why, in full.
    pub reason: String,
    /// The line `status` prints.
    pub line: String,
}

impl EmptyRefusal {
    /// The refusal of `file`, which would have removed `applied`.
    pub fn new(at: DateTime<Utc>, file: String, applied: Option<usize>, reason: String) -> Self {
        let line = match applied {
            Some(n) => format!(
                "EMPTY DECLARATION REFUSED: {file} declares no resources; the {n} applied are kept (mesh-host apply --allow-empty FILE removes them)"
            ),
            None => format!(
                "EMPTY DECLARATION REFUSED: {file} declares no resources; everything applied is kept"
            ),
        };
        EmptyRefusal {
            at,
            file,
            applied,
            reason,
            line,
        }
    }
}

/// An open window: its record, and whether its owner still runs.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct OpenWindow {
    /// The window's record, as the state directory keeps it.
    #[serde(flatten)]
    pub record: WindowRecord,
    /// Whether the process that opened it still runs.
    pub owner_alive: bool,
}

impl OpenWindow {
    /// The record `r`, its owner looked up now.
    pub fn of(record: WindowRecord) -> Self {
        OpenWindow {
            owner_alive: record.owner_alive(),
            record,
        }
    }
}

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

/// `steps`, or with `brief` only those [`step_listing`] picks when there
/// are many; and how many there are.
pub fn listed(steps: Vec<StepStatus>, brief: bool) -> (Vec<StepStatus>, usize) {
    let scheduled = steps.len();
    if !brief {
        return (steps, scheduled);
    }
    let picked = step_listing::pick(&steps, facts)
        .into_iter()
        .cloned()
        .collect();
    (picked, scheduled)
}

/// The last apply's `lines` an answer carries: every one, or with `brief`
/// only those the text prints (what changed; the summary counts the
/// rest), so that a brief `status` costs what changed, not what is
/// declared.
pub fn lines_listed(lines: &[ReportLine], brief: bool) -> Vec<ReportLine> {
    lines
        .iter()
        .filter(|l| !brief || l.action != Action::Unchanged)
        .cloned()
        .collect()
}

/// The lines of an apply that found the node as the same request left
/// it, from `recorded` (that request's record): every resource
/// `unchanged`, so none when `brief`.
pub fn lines_unchanged(recorded: &[ReportLine], brief: bool) -> Vec<ReportLine> {
    if brief {
        return Vec::new();
    }
    recorded
        .iter()
        .map(|l| ReportLine::new(l.id.clone(), Action::Unchanged, None))
        .collect()
}

/// What a status keeps of `applied.json` (every line, not the declaration,
/// files, units and containers: megabytes at thousands of resources).
pub fn of_applied(applied: AppliedState) -> AppliedState {
    AppliedState {
        declaration: Default::default(),
        files: Default::default(),
        units: Vec::new(),
        containers: Vec::new(),
        ..applied
    }
}

/// The last apply as `applied.json` records it, its lines as
/// [`lines_listed`] gives them.
pub fn recorded_apply(applied: &AppliedState, brief: bool) -> LastApply {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for line in &applied.lines {
        *counts.entry(line.action.as_str()).or_default() += 1;
    }
    let counted = if counts.is_empty() {
        "no resources".to_string()
    } else {
        counts
            .iter()
            .map(|(action, n)| format!("{n} {action}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let summary = match &applied.halted {
        Some(halt) => format!(
            "failed: halted at {} ({}); {} resource(s) after it not applied; {counted}",
            halt.id, halt.reason, halt.not_applied
        ),
        None if applied.ok => format!("ok: {counted}"),
        None => format!("failed: {counted}"),
    };
    LastApply {
        at: applied.applied_at,
        ok: applied.ok,
        summary,
        halted: applied.halted.clone(),
        lines: lines_listed(&applied.lines, brief),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unchanged_apply_lists_the_records_resources_as_unchanged_and_none_briefly() {
        let recorded = [
            ReportLine::new("a", Action::Unchanged, None),
            ReportLine::new("b", Action::Created, Some("declared".into())),
            ReportLine::new("gc", Action::Installed, None),
        ];
        assert!(lines_unchanged(&recorded, true).is_empty());
        assert_eq!(
            lines_unchanged(&recorded, false),
            ["a", "b", "gc"].map(|id| ReportLine::new(id, Action::Unchanged, None))
        );
    }
}
