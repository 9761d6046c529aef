//! The apply's report: what an apply did, one line per resource.
//!
//! An apply never panics and never returns an error: everything it did,
//! every failure and the windows it found open are in its [`ApplyReport`],
//! which the daemon logs, serves over its socket (clients read it back, so
//! it deserialises too) and records as the last apply's lines. Its words
//! ([`Action`]) are part of the contract (CONTRACT "Apply").
//!
//! `diff` prints the same type: the plan, each line as decided with the
//! steps it takes ([`StepLine`]); the apply prints the plan with the
//! outcomes, each step with what became of it. One shape for both, so a
//! tool can lay the apply's report over the plan step by step.

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::schedule::kept::KeptStep;
use crate::window::WindowRecord;

/// What an apply did to one resource. Serialised as its name
/// (`"held-still"`); an action the unit manager reports that is not one of
/// these is kept as it said it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Action {
    /// Made (a file, a directory, a container).
    Created,
    /// Already as declared: nothing done.
    Unchanged,
    /// A file or directory changed in place (content, mode, owner).
    Updated,
    /// A container removed and made again; the reason says what changed.
    Recreated,
    /// A container that existed as declared but was stopped (or is
    /// restarted by `restart-on`) was started.
    Started,
    /// A scheduled step handed to the scheduler, its image present.
    Installed,
    /// A container an open window holds: left alone.
    HeldStill,
    /// A run-once step ran to completion with status 0.
    Ran,
    /// The resource could not be converged; the reason says why.
    Failed,
    /// No longer declared: removed.
    Removed,
    /// Decided, but never carried out: the apply halted before it (a
    /// run-once step failed).
    NotReached,
    /// Any other action word (from the unit manager).
    Other(String),
}

impl Action {
    /// The action as the report writes it.
    pub fn as_str(&self) -> &str {
        match self {
            Action::Created => "created",
            Action::Unchanged => "unchanged",
            Action::Updated => "updated",
            Action::Recreated => "recreated",
            Action::Started => "started",
            Action::Installed => "installed",
            Action::HeldStill => "held-still",
            Action::Ran => "ran",
            Action::Failed => "failed",
            Action::Removed => "removed",
            Action::NotReached => "not-reached",
            Action::Other(word) => word,
        }
    }

    /// Whether it changes the machine: anything but `unchanged`,
    /// `held-still`, `failed` and the shared folders' `waiting` and
    /// `refused` (what `changed` in a report counts).
    pub fn changes_something(&self) -> bool {
        !matches!(
            self,
            Action::Unchanged | Action::HeldStill | Action::Failed | Action::NotReached
        ) && !matches!(self, Action::Other(w) if w == "waiting" || w == "refused" || w == "unchanged" || w == "kept")
    }

    /// The action named `word`.
    pub fn parse(word: &str) -> Action {
        match word {
            "created" => Action::Created,
            "unchanged" => Action::Unchanged,
            "updated" => Action::Updated,
            "recreated" => Action::Recreated,
            "started" => Action::Started,
            "installed" => Action::Installed,
            "held-still" => Action::HeldStill,
            "ran" => Action::Ran,
            "failed" => Action::Failed,
            "removed" => Action::Removed,
            "not-reached" => Action::NotReached,
            other => Action::Other(other.to_string()),
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Action {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let word = String::deserialize(deserializer)?;
        Ok(Action::parse(&word))
    }
}

/// One step a line takes on the machine: what is done (`act`: `create`,
/// `replace`, `start`, `write`, `enable`, …) to what (`on`: `container
/// web`, `file /etc/app/env`, `unit app.service`, …), and, once the apply
/// carried it out, what became of it (`outcome`: `done`, `failed: …`,
/// `not reached`). A plan's steps have no outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepLine {
    /// What is done.
    pub act: String,
    /// To what.
    pub on: String,
    /// Why, where the line's reason does not say it (a tidy-up's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What became of it; `None` in a plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

impl StepLine {
    /// A planned step: `act` on `on`.
    pub fn new(act: &str, on: impl Into<String>) -> Self {
        StepLine {
            act: act.to_string(),
            on: on.into(),
            reason: None,
            outcome: None,
        }
    }

    /// The same with why.
    pub fn because(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// The same, carried out: `outcome`.
    pub fn with_outcome(mut self, outcome: impl Into<String>) -> Self {
        self.outcome = Some(outcome.into());
        self
    }
}

impl fmt::Display for StepLine {
    /// `ACT ON[: reason][ (outcome)]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.act, self.on)?;
        if let Some(reason) = &self.reason {
            write!(f, ": {reason}")?;
        }
        if let Some(outcome) = &self.outcome {
            write!(f, " ({outcome})")?;
        }
        Ok(())
    }
}

/// One line of the report: a resource (by id) and what was done to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportLine {
    /// The resource id (for a removed container, the id it was created for).
    pub id: String,
    /// What was done.
    pub action: Action,
    /// Why, or what changed; `None` when the action says it all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A preview's unified diff of a file's content (never of a secret
    /// file: one others may not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The steps it takes on the machine, in order (none: nothing to do).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepLine>,
}

impl ReportLine {
    /// A line with no diff and no steps.
    pub fn new(id: impl Into<String>, action: Action, reason: Option<String>) -> Self {
        ReportLine {
            id: id.into(),
            action,
            reason,
            diff: None,
            steps: Vec::new(),
        }
    }

    /// Whether it changes (or, in a plan, would change) the machine: its
    /// action says so, or it takes a step (a unit only enabled, entries
    /// only taken away) and neither failed nor was left unreached.
    pub fn changes_something(&self) -> bool {
        self.action.changes_something()
            || (!self.steps.is_empty()
                && !matches!(self.action, Action::Failed | Action::NotReached))
    }
}

impl fmt::Display for ReportLine {
    /// `ID ACTION[: reason]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.id, self.action)?;
        if let Some(reason) = &self.reason {
            write!(f, ": {reason}")?;
        }
        Ok(())
    }
}

/// An open maintenance window, as the report lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct WindowLine {
    /// The step whose window it is.
    pub step: String,
    /// When it opened.
    pub since: DateTime<Utc>,
    /// Runtime names of the containers it holds stopped.
    pub held: Vec<String>,
}

impl WindowLine {
    /// The report's view of a window record.
    pub fn of(record: &WindowRecord) -> Self {
        WindowLine {
            step: record.step.clone(),
            since: record.opened_at,
            held: record.held_names().map(str::to_string).collect(),
        }
    }
}

impl fmt::Display for WindowLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "window {} open since {}, holding {}",
            self.step,
            crate::render::time(self.since),
            if self.held.is_empty() {
                "nothing".to_string()
            } else {
                self.held.join(", ")
            }
        )
    }
}

/// Where a halted apply stopped: the run-once step that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Halt {
    /// The step's resource id.
    pub id: String,
    /// Its exit status, when it ran and exited.
    pub exit_status: Option<i64>,
    /// What happened, in words.
    pub reason: String,
    /// How many declared resources after it were not applied.
    pub not_applied: usize,
}

/// What an apply did. Deserialises too, so a client of the daemon can read
/// it back (without `steps`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ApplyReport {
    /// Whether every resource converged (a scheduled step that could not be
    /// installed does not count against it).
    pub ok: bool,
    /// Whether a line changes something (a preview: would change):
    /// computed from the lines whenever the report is serialised.
    #[serde(default)]
    pub changed: bool,
    /// When the apply began.
    pub started_at: DateTime<Utc>,
    /// When it ended.
    pub finished_at: DateTime<Utc>,
    /// One line per resource, in declaration order, then the removals.
    pub lines: Vec<ReportLine>,
    /// Resources `unchanged` counted and given no line: an apply that found
    /// the node as the same request left it, unless every line was asked
    /// for (`--verbose`, `--json`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unchanged_unlisted: usize,
    /// The windows open when the apply ran.
    pub windows: Vec<WindowLine>,
    /// The run-once step the apply stopped at, if it halted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halted: Option<Halt>,
    /// Why the apply could not start (lock, corrupt state, window records),
    /// or could not record what it did; nothing was changed in the first
    /// cases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Things worth knowing that failed nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// What an interrupted create or replace left behind, removed after
    /// the declared resources (no resource's line: a container under a
    /// making or set-aside name whose own container exists).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tidy: Vec<StepLine>,
    /// The scheduled steps this apply installed, for the scheduler to
    /// re-sync with (`scheduler.sync(report.steps)`).
    #[serde(skip)]
    pub steps: Vec<KeptStep>,
    /// Whether the apply went through the whole declaration (it started,
    /// and no run-once step halted it): only then is `steps` every declared
    /// step, and only then may the schedules follow it.
    #[serde(skip)]
    pub complete: bool,
}

impl ApplyReport {
    pub(super) fn failed_before_start(started_at: DateTime<Utc>, error: String) -> Self {
        ApplyReport {
            ok: false,
            changed: false,
            started_at,
            finished_at: Utc::now(),
            lines: Vec::new(),
            unchanged_unlisted: 0,
            windows: Vec::new(),
            halted: None,
            error: Some(error),
            warnings: Vec::new(),
            tidy: Vec::new(),
            steps: Vec::new(),
            complete: false,
        }
    }

    /// The line of resource `id` (the first, if a removal shares its id).
    pub fn line(&self, id: &str) -> Option<&ReportLine> {
        self.lines.iter().find(|l| l.id == id)
    }

    /// A one-line summary: `ok: 2 created, 1 unchanged` or why it failed.
    pub fn summary(&self) -> String {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for line in &self.lines {
            *counts.entry(line.action.as_str()).or_default() += 1;
        }
        if self.unchanged_unlisted > 0 {
            *counts.entry(Action::Unchanged.as_str()).or_default() += self.unchanged_unlisted;
        }
        let counted = counts
            .iter()
            .map(|(action, n)| format!("{n} {action}"))
            .collect::<Vec<_>>()
            .join(", ");
        let counted = if counted.is_empty() {
            "no resources".to_string()
        } else {
            counted
        };
        match (&self.error, &self.halted) {
            (Some(error), _) => format!("failed: {error}"),
            (None, Some(halt)) => format!(
                "failed: halted at {} ({}); {} resource(s) after it not applied; {counted}",
                halt.id, halt.reason, halt.not_applied
            ),
            (None, None) if self.ok => format!("ok: {counted}"),
            (None, None) => format!("failed: {counted}"),
        }
    }
}

/// A preview's report (`mesh-host diff`), as text and as an exit code.
#[derive(Debug)]
pub struct PreviewText<'a>(pub &'a ApplyReport);

impl ApplyReport {
    /// Exit code of `diff`, as `diff(1)`: 0 nothing would change, 1 some
    /// thing would, 2 the preview could not be made or a resource would
    /// fail.
    pub fn diff_exit(&self) -> crate::exit::Exit {
        use crate::exit::Exit;
        if self.error.is_some() || self.lines.iter().any(|l| l.action == Action::Failed) {
            Exit::Refused
        } else if self.changed {
            Exit::Failed
        } else {
            Exit::Ok
        }
    }
}

impl fmt::Display for PreviewText<'_> {
    /// One `ID ACTION[: reason]` line per resource that would change (or
    /// fail, or stay held), then the unified diffs, the open windows, and
    /// a last line `diff: ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let report = self.0;
        let shown = |l: &&ReportLine| l.action != Action::Unchanged || !l.steps.is_empty();
        for line in report.lines.iter().filter(shown) {
            writeln!(f, "{line}")?;
        }
        for step in &report.tidy {
            writeln!(f, "tidy: {step}")?;
        }
        for line in report.lines.iter().filter(|l| l.diff.is_some()) {
            if let Some(diff) = &line.diff {
                write!(f, "{diff}")?;
                if !diff.ends_with('\n') {
                    writeln!(f)?;
                }
            }
        }
        for window in &report.windows {
            writeln!(f, "{window}")?;
        }
        for warning in &report.warnings {
            writeln!(f, "warning: {warning}")?;
        }
        if let Some(error) = &report.error {
            return write!(f, "diff failed: {error}");
        }
        // A line `unchanged` that still takes a step (a unit only to be
        // enabled) is counted by what it does, not as unchanged.
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        let mut unchanged = 0;
        for line in &report.lines {
            if line.action == Action::Unchanged && line.steps.is_empty() {
                unchanged += 1;
            } else if line.action == Action::Unchanged {
                let acts: Vec<&str> = line.steps.iter().map(|s| s.act.as_str()).collect();
                *counts
                    .entry(format!("unchanged ({})", acts.join(", ")))
                    .or_default() += 1;
            } else {
                *counts.entry(line.action.as_str().to_string()).or_default() += 1;
            }
        }
        let changing = report
            .lines
            .iter()
            .filter(|l| l.changes_something())
            .count();
        let counted = counts
            .iter()
            .map(|(action, n)| format!("{n} {action}"))
            .collect::<Vec<_>>()
            .join(", ");
        if changing == 0 && counted.is_empty() {
            write!(f, "diff: nothing would change ({unchanged} unchanged)")
        } else {
            write!(
                f,
                "diff: apply would change {changing} resource(s): {counted}; {unchanged} unchanged"
            )
        }
    }
}

impl fmt::Display for ApplyReport {
    /// One `ID ACTION[: reason]` line per resource, the open windows, and a
    /// last line `apply ok: ...` or `apply failed: ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in &self.lines {
            writeln!(f, "{line}")?;
        }
        for step in &self.tidy {
            writeln!(f, "tidy: {step}")?;
        }
        for window in &self.windows {
            writeln!(f, "{window}")?;
        }
        for warning in &self.warnings {
            writeln!(f, "warning: {warning}")?;
        }
        write!(f, "apply {}", self.summary())
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
