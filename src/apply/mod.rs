//! Apply: converge the machine to a declaration (see CONTRACT "Apply").
//!
//! One apply takes the apply lock for its whole length (so no window opens
//! meanwhile; a window takes the lock only to write its record, so an apply
//! never waits behind a running step), reads the state it keeps and the
//! live window records, lists the managed containers **once**, and then
//! walks the resources in declaration order, each getting one
//! [`ReportLine`]:
//!
//! | resource | actions |
//! |---|---|
//! | file, directory | `created`, `updated`, `unchanged` |
//! | service container | `created`, `unchanged`, `started`, `recreated: <reason>`, `held-still` |
//! | run-once step | `ran`, `failed` (halts the apply) |
//! | scheduled step | `installed` (image made present, never run) |
//! | unit | what the unit manager reports |
//! | identity | `created`, `unchanged`, `failed` (a name or number taken) |
//! | shared folder | `created`, `updated`, `unchanged`, `waiting`, `refused` |
//! | no longer declared | `removed` (after the declared ones) |
//!
//! Removal touches only managed containers this state directory declared
//! before (recorded in [`AppliedState::containers`]): it removes what it
//! created and no longer declares, nothing else — not a container without
//! the managed label, nor one another state directory manages.
//!
//! A container held by a live window is `held-still`: not recreated, not
//! started, not removed; the first apply after the window converges it.
//! Decisions come from the one listing (labels and running state), so a
//! no-op apply costs that listing and the reads of the files it compares.
//!
//! State (store documents [`APPLIED`] and [`CONTAINER_INPUTS`]) is read
//! before anything changes: a corrupt state file fails the apply with
//! nothing changed, rather than guessing (and, say, recreating everything).
//!
//! Submodules: [`spec`] (what a container is), `files` (files and
//! directories, never through a symbolic link), `containers` (services),
//! `run_once`, `pull` (pull policy), `state` (the documents), [`units`] (the
//! seam to systemd unit files), `identities` (system accounts),
//! `shared_folders` (ACL entries on shared folders), [`grants`] (a
//! container's identity and grants as the runtime takes them).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use futures_util::StreamExt;

use crate::declaration::{Declaration, Resource, ResourceKind, Role};
use crate::events::Event;
use crate::mesh_event;
use crate::runtime::{ContainerRuntime, ContainerSummary};
use crate::schedule::scheduler::ScheduledStep;
use crate::schedule::step::scheduled_steps;
use crate::schedule::window::Windows;
use crate::store::{Store, WindowRecord, APPLIED, CONTAINER_INPUTS};

mod containers;
mod files;
pub mod grants;
mod identities;
pub mod node_declaration;
pub mod pull;
mod run_once;
mod shared_folders;
pub mod spec;
pub mod state;
#[cfg(test)]
mod tests;
pub mod units;

pub use pull::PullPolicy;
pub use state::{AppliedState, ContainerInputs};
pub use units::{FileChange, UnitManager, UnitReport};

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
            Action::Other(word) => word,
        }
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
}

impl ReportLine {
    fn new(id: impl Into<String>, action: Action, reason: Option<String>) -> Self {
        ReportLine {
            id: id.into(),
            action,
            reason,
        }
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
    /// When the apply began.
    pub started_at: DateTime<Utc>,
    /// When it ended.
    pub finished_at: DateTime<Utc>,
    /// One line per resource, in declaration order, then the removals.
    pub lines: Vec<ReportLine>,
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
    /// The scheduled steps this apply installed, for the scheduler to
    /// re-sync with (`scheduler.sync(report.steps)`).
    #[serde(skip)]
    pub steps: Vec<ScheduledStep>,
    /// Whether the apply went through the whole declaration (it started,
    /// and no run-once step halted it): only then is `steps` every declared
    /// step, and only then may the schedules follow it.
    #[serde(skip)]
    pub complete: bool,
}

impl ApplyReport {
    fn failed_before_start(started_at: DateTime<Utc>, error: String) -> Self {
        ApplyReport {
            ok: false,
            started_at,
            finished_at: Utc::now(),
            lines: Vec::new(),
            windows: Vec::new(),
            halted: None,
            error: Some(error),
            warnings: Vec::new(),
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

impl fmt::Display for ApplyReport {
    /// One `ID ACTION[: reason]` line per resource, the open windows, and a
    /// last line `apply ok: ...` or `apply failed: ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in &self.lines {
            writeln!(f, "{line}")?;
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

/// The apply engine of one process. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Applier {
    store: Store,
    runtime: Arc<dyn ContainerRuntime>,
    windows: Windows,
    units: Option<Arc<dyn UnitManager>>,
    units_missing: String,
    pull: PullPolicy,
}

/// How many service containers one apply converges at once (the runtime
/// calls of a batch of services declared next to each other: pull, create,
/// start, stop). Fixed, and small next to docker-compose's 64: enough
/// requests in flight to keep Docker busy on a small node, few enough not
/// to flood it (docs/apply.md, docs/benchmarks.md).
pub const APPLY_WIDTH: usize = 16;

/// Why unit resources fail when no unit manager was given.
const NO_UNIT_MANAGER: &str = "no systemd unit manager is available to this process";

impl Applier {
    /// An applier over this state directory, runtime and window engine,
    /// with the default [`PullPolicy`] and no unit manager (unit resources
    /// then fail with that reason; see [`Applier::with_units`]).
    pub fn new(store: Store, runtime: Arc<dyn ContainerRuntime>, windows: Windows) -> Self {
        Applier {
            store,
            runtime,
            windows,
            units: None,
            units_missing: NO_UNIT_MANAGER.to_string(),
            pull: PullPolicy::default(),
        }
    }

    /// Manage `type: "unit"` resources through `units`.
    pub fn with_units(mut self, units: Arc<dyn UnitManager>) -> Self {
        self.units = Some(units);
        self
    }

    /// No unit manager, for this reason (e.g. the systemd bus could not be
    /// reached: the reason is what a unit resource's line says).
    pub fn without_units(mut self, reason: impl Into<String>) -> Self {
        self.units = None;
        self.units_missing = reason.into();
        self
    }

    /// Pull retries and window waits per this policy.
    pub fn with_pull_policy(mut self, policy: PullPolicy) -> Self {
        self.pull = policy;
        self
    }

    /// The window engine this applier honours.
    pub fn windows(&self) -> &Windows {
        &self.windows
    }

    /// Converge the machine to `decl` and report. Never panics; every
    /// failure is in the report. Logs `apply-finished`.
    pub async fn apply(&self, decl: &Declaration) -> ApplyReport {
        let started_at = Utc::now();
        let report = match self.lock(started_at).await {
            Ok(_lock) => self.apply_locked(decl, started_at).await,
            Err(report) => report,
        };
        log_finished(&report);
        report
    }

    /// `apply FILE`: under the apply lock, install `bytes` (FILE, already
    /// validated as `decl`) as the node's declaration at `path`
    /// ([`node_declaration`]), then converge to it. A file that cannot be
    /// installed fails the apply with nothing changed.
    pub async fn install_and_apply(
        &self,
        decl: &Declaration,
        bytes: &[u8],
        path: &std::path::Path,
    ) -> ApplyReport {
        let started_at = Utc::now();
        let report = match self.lock(started_at).await {
            Ok(_lock) => match node_declaration::install(path, bytes) {
                Ok(()) => self.apply_locked(decl, started_at).await,
                Err(e) => ApplyReport::failed_before_start(started_at, e.to_string()),
            },
            Err(report) => report,
        };
        log_finished(&report);
        report
    }

    /// Read the node's declaration at `path` under the apply lock (so it is
    /// the one the last apply installed, whichever process did) and
    /// converge to it. An unreadable or refused file applies nothing: the
    /// error says why (and no `apply-finished` is logged).
    pub async fn apply_node_declaration(
        &self,
        path: &std::path::Path,
    ) -> Result<(Declaration, ApplyReport), node_declaration::DeclarationFileError> {
        let started_at = Utc::now();
        let report = match self.lock(started_at).await {
            Ok(_lock) => {
                let decl = node_declaration::read(path)?;
                let report = self.apply_locked(&decl, started_at).await;
                log_finished(&report);
                return Ok((decl, report));
            }
            Err(report) => report,
        };
        log_finished(&report);
        // Not even read: the declaration is what the file holds now.
        let decl = node_declaration::read(path)?;
        Ok((decl, report))
    }

    /// The apply lock, held for a whole apply: no window opens meanwhile,
    /// and no other apply on this machine runs at the same time.
    async fn lock(
        &self,
        started_at: DateTime<Utc>,
    ) -> Result<crate::store::ApplyLock, ApplyReport> {
        self.store.lock_async().await.map_err(|e| {
            ApplyReport::failed_before_start(started_at, format!("cannot take the apply lock: {e}"))
        })
    }

    /// The apply itself; the caller holds the apply lock.
    async fn apply_locked(&self, decl: &Declaration, started_at: DateTime<Utc>) -> ApplyReport {
        let refuse = |e: String| {
            ApplyReport::failed_before_start(
                started_at,
                format!("{e}; the apply refuses to guess and changed nothing (repair or remove the file)"),
            )
        };
        let previous: Option<AppliedState> = match self.store.load(APPLIED) {
            Ok(p) => p,
            Err(e) => return refuse(e.to_string()),
        };
        let inputs: BTreeMap<String, ContainerInputs> = match self.store.load(CONTAINER_INPUTS) {
            Ok(i) => i.unwrap_or_default(),
            Err(e) => return refuse(e.to_string()),
        };
        let live = match self.windows.live_records() {
            Ok(live) => live,
            Err(e) => return refuse(format!("cannot read the window records: {e}")),
        };
        let listing = self
            .runtime
            .list_managed()
            .await
            .map(|list| list.into_iter().map(|c| (c.name.clone(), c)).collect())
            .map_err(|e| e.to_string());
        let mut run = Run::new(self, decl, previous, inputs, live, listing);
        run.resources().await;
        if run.halted.is_none() {
            run.removals().await;
        }
        run.finish(started_at)
    }
}

fn log_finished(report: &ApplyReport) {
    if report.ok {
        mesh_event!(
            info,
            Event::ApplyFinished,
            "apply finished, {}",
            report.summary()
        );
    } else {
        mesh_event!(
            warn,
            Event::ApplyFinished,
            "apply finished, {}",
            report.summary()
        );
    }
}

/// The state of one apply in progress.
struct Run<'a> {
    applier: &'a Applier,
    decl: &'a Declaration,
    /// What each container was created reading, by container name.
    inputs: BTreeMap<String, ContainerInputs>,
    live: Vec<WindowRecord>,
    /// Container name → why it is left alone (held, or a window's step).
    held: BTreeMap<String, String>,
    /// The one listing of managed containers, by name.
    listing: Result<BTreeMap<String, ContainerSummary>, String>,
    /// Managed containers already dealt with under another name (renamed).
    consumed: BTreeSet<String>,
    /// Containers this state directory declared before and has not
    /// removed: the only ones a removal may touch.
    known: BTreeSet<String>,
    /// Containers removed by this apply.
    removed: BTreeSet<String>,
    /// File resources created or updated by this apply: id → path.
    changed_files: BTreeMap<String, String>,
    /// Files the host wrote: path → SHA-256.
    written_files: BTreeMap<String, String>,
    /// Unit names whose files the host wrote.
    written_units: BTreeSet<String>,
    /// The unit manager's `prepare` answer, once asked.
    prepared: Option<Result<BTreeMap<String, FileChange>, String>>,
    /// Scheduled steps as the scheduler takes them, by id (or why not).
    step_defs: BTreeMap<String, Result<ScheduledStep, String>>,
    /// Scheduled steps the last apply installed (or found unchanged), as
    /// it declared them: one declared alike now is `unchanged`.
    steps_before: BTreeMap<String, serde_json::Value>,
    /// Shared with the services converged concurrently (it holds the
    /// apply's one retry budget and the images known present).
    puller: Arc<tokio::sync::Mutex<pull::Puller>>,
    lines: Vec<ReportLine>,
    ok: bool,
    halted: Option<Halt>,
    warnings: Vec<String>,
    steps: Vec<ScheduledStep>,
}

impl<'a> Run<'a> {
    fn new(
        applier: &'a Applier,
        decl: &'a Declaration,
        previous: Option<AppliedState>,
        inputs: BTreeMap<String, ContainerInputs>,
        live: Vec<WindowRecord>,
        listing: Result<BTreeMap<String, ContainerSummary>, String>,
    ) -> Self {
        let mut held = BTreeMap::new();
        for record in &live {
            // A window's step container is left alone too: removing it
            // would cut the step short under its window.
            held.insert(
                record.step_container.clone(),
                format!("the step container of the open window of {}", record.step),
            );
            for name in record.held_names() {
                held.insert(
                    name.to_string(),
                    format!(
                        "held by the window of {} (open since {})",
                        record.step,
                        crate::render::time(record.opened_at)
                    ),
                );
            }
        }
        let (defs, errors) = scheduled_steps(decl);
        let mut step_defs: BTreeMap<String, Result<ScheduledStep, String>> = defs
            .into_iter()
            .map(|s| (s.def.id.clone(), Ok(s)))
            .collect();
        for e in errors {
            step_defs.insert(e.resource.clone(), Err(e.reason));
        }
        let written_files = previous
            .as_ref()
            .map(|p| p.files.clone())
            .unwrap_or_default();
        let written_units = previous
            .as_ref()
            .map(|p| p.units.iter().cloned().collect())
            .unwrap_or_default();
        let mut known: BTreeSet<String> = previous
            .as_ref()
            .map(|p| p.containers.iter().cloned().collect())
            .unwrap_or_default();
        known.extend(inputs.keys().cloned());
        let steps_before = previous.as_ref().map(installed_steps).unwrap_or_default();
        let puller = Arc::new(tokio::sync::Mutex::new(pull::Puller::new(
            applier.runtime.clone(),
            applier.windows.clone(),
            applier.pull.clone(),
            window_bounds(decl),
        )));
        Run {
            applier,
            decl,
            inputs,
            live,
            held,
            listing,
            consumed: BTreeSet::new(),
            known,
            removed: BTreeSet::new(),
            changed_files: BTreeMap::new(),
            written_files,
            written_units,
            prepared: None,
            step_defs,
            steps_before,
            puller,
            lines: Vec::new(),
            ok: true,
            halted: None,
            warnings: Vec::new(),
            steps: Vec::new(),
        }
    }

    fn runtime(&self) -> &dyn ContainerRuntime {
        &*self.applier.runtime
    }

    fn push(&mut self, id: &str, action: Action, reason: Option<String>) {
        if action == Action::Failed {
            self.ok = false;
        }
        self.lines.push(ReportLine::new(id, action, reason));
    }

    /// Every declared resource, in order, until a run-once step fails.
    ///
    /// Service containers declared next to each other form a batch: each
    /// is decided in declaration order as the walk reaches it, the batch's
    /// runtime calls run concurrently ([`APPLY_WIDTH`] at a time), and
    /// their lines are committed in declaration order. Any other resource
    /// ends the batch first: a file, directory, unit, scheduled or run-once
    /// step is applied only once every service before it is done, and a
    /// service after it is decided only once it is (so `restart-on` sees
    /// the files changed before it, and a run-once step gates all that
    /// follows).
    async fn resources(&mut self) {
        let decl = self.decl;
        let mut batch: Vec<(&Resource, containers::Work)> = Vec::new();
        for (index, res) in decl.resources.iter().enumerate() {
            let id = res.id.as_str();
            if let ResourceKind::Container(c) = &res.kind {
                if matches!(c.role, Role::Service) {
                    batch.push((res, self.decide_service(res, c)));
                    continue;
                }
            }
            self.converge_batch(&mut batch).await;
            match &res.kind {
                ResourceKind::File(file) => self.file(id, file),
                ResourceKind::Directory(dir) => self.directory(id, dir),
                ResourceKind::Container(c) => match &c.role {
                    Role::Service => {}
                    Role::RunOnce => {
                        if let Some(mut halt) = self.run_once(res, c).await {
                            halt.not_applied = decl.resources.len() - index - 1;
                            self.ok = false;
                            self.halted = Some(halt);
                            return;
                        }
                    }
                    Role::Scheduled(_) => self.scheduled(id, c).await,
                },
                ResourceKind::Unit(unit) => self.unit(id, unit).await,
                ResourceKind::Identity(identity) => self.identity(id, identity).await,
                ResourceKind::SharedFolder(folder) => self.shared_folder(res, folder).await,
            }
            if let ResourceKind::Container(c) = &res.kind {
                self.note_unhealthy_grants(id, c);
            }
        }
        self.converge_batch(&mut batch).await;
    }

    /// Execute a batch of decided services, at most [`APPLY_WIDTH`] at a
    /// time, and commit their outcomes in declaration order.
    async fn converge_batch(&mut self, batch: &mut Vec<(&'a Resource, containers::Work)>) {
        if batch.is_empty() {
            return;
        }
        let executor = containers::Executor {
            runtime: self.applier.runtime.clone(),
            puller: self.puller.clone(),
        };
        let (resources, works): (Vec<&Resource>, Vec<containers::Work>) =
            std::mem::take(batch).into_iter().unzip();
        let mut outcomes: Vec<Option<containers::Outcome>> =
            std::iter::repeat_with(|| None).take(works.len()).collect();
        let executor = &executor;
        let mut running = futures_util::stream::iter(
            works
                .into_iter()
                .enumerate()
                .map(|(i, work)| async move { (i, work.execute(executor).await) }),
        )
        .buffer_unordered(APPLY_WIDTH);
        while let Some((i, outcome)) = running.next().await {
            outcomes[i] = Some(outcome);
        }
        drop(running);
        for (res, outcome) in resources.into_iter().zip(outcomes) {
            if let Some(outcome) = outcome {
                self.commit_service(res, outcome);
            }
            if let ResourceKind::Container(c) = &res.kind {
                self.note_unhealthy_grants(&res.id, c);
            }
        }
    }

    fn file(&mut self, id: &str, file: &crate::declaration::File) {
        match files::converge_file(file) {
            Ok((change, digest)) => {
                self.written_files
                    .insert(file.path.as_str().to_string(), digest);
                if !matches!(change, files::Change::Unchanged) {
                    self.changed_files
                        .insert(id.to_string(), file.path.as_str().to_string());
                }
                let (action, reason) = change.into_action();
                self.push(id, action, reason);
            }
            Err(e) => self.push(id, Action::Failed, Some(e)),
        }
    }

    fn directory(&mut self, id: &str, dir: &crate::declaration::Directory) {
        match files::converge_directory(dir) {
            Ok(change) => {
                let (action, reason) = change.into_action();
                self.push(id, action, reason);
            }
            Err(e) => self.push(id, Action::Failed, Some(e)),
        }
    }

    /// A scheduled step: handed to the scheduler with its image present.
    /// Never fails the apply.
    async fn scheduled(&mut self, id: &str, c: &crate::declaration::Container) {
        match self.step_defs.remove(id) {
            Some(Ok(step)) => {
                let mut action = Action::Installed;
                let ensured = self.puller.lock().await.ensure(c.image.as_str()).await;
                let reason = match ensured {
                    Ok(pull::Ensured::Present) => {
                        if self.declared_alike_before(id) {
                            action = Action::Unchanged;
                        }
                        None
                    }
                    Ok(pull::Ensured::Pulled) => Some("image pulled".to_string()),
                    Err(e) => Some(format!(
                        "its image is not present and could not be pulled (tried again at the next apply): {e}"
                    )),
                };
                self.steps.push(step);
                self.lines.push(ReportLine::new(id, action, reason));
            }
            Some(Err(reason)) => {
                // Reported, but never fails the apply (CONTRACT "Apply").
                self.lines.push(ReportLine::new(
                    id,
                    Action::Failed,
                    Some(format!("schedule not installed: {reason}")),
                ));
            }
            None => self.push(
                id,
                Action::Failed,
                Some("not found among the scheduled steps".to_string()),
            ),
        }
    }

    /// Whether the last apply installed step `id` declared exactly as now.
    fn declared_alike_before(&self, id: &str) -> bool {
        let Some(before) = self.steps_before.get(id) else {
            return false;
        };
        serde_json::to_value(self.decl)
            .ok()
            .and_then(|d| resource_json(&d, id).cloned())
            .is_some_and(|now| &now == before)
    }

    /// A unit resource, through the unit manager; its files are all
    /// written (and systemd reloaded once) when the first unit is reached.
    async fn unit(&mut self, id: &str, unit: &crate::declaration::Unit) {
        let Some(manager) = self.applier.units.clone() else {
            let reason = self.applier.units_missing.clone();
            self.push(id, Action::Failed, Some(reason));
            return;
        };
        if self.prepared.is_none() {
            let declared: Vec<(String, crate::declaration::Unit)> = self
                .decl
                .resources
                .iter()
                .filter_map(|r| match &r.kind {
                    ResourceKind::Unit(u) => Some((r.id.to_string(), u.clone())),
                    _ => None,
                })
                .collect();
            let prepared = manager.prepare(&declared).await;
            if let Ok(written) = &prepared {
                for (rid, u) in &declared {
                    if written.contains_key(rid) {
                        self.written_units.insert(u.name.to_string());
                    }
                }
            }
            self.prepared = Some(prepared);
        }
        let change = match &self.prepared {
            Some(Ok(map)) => map.get(id).copied(),
            Some(Err(e)) => {
                let reason = format!("unit files not written: {e}");
                self.push(id, Action::Failed, Some(reason));
                return;
            }
            None => None,
        };
        let Some(change) = change else {
            self.push(
                id,
                Action::Failed,
                Some("the unit manager did not write its file".to_string()),
            );
            return;
        };
        let report = manager.converge(id, unit, change).await;
        self.unit_line(report);
    }

    fn unit_line(&mut self, report: UnitReport) {
        if !report.ok {
            self.ok = false;
        }
        self.lines.push(ReportLine::new(
            report.id,
            Action::parse(&report.action),
            report.reason,
        ));
    }

    /// After the declared resources: remove what the host made and no
    /// longer declares (managed containers, unit files).
    async fn removals(&mut self) {
        self.remove_containers().await;
        self.remove_units().await;
        self.remove_shared_folders().await;
        self.remove_identities().await;
    }

    /// A grant whose group cannot write its path is said on the
    /// container's line (`unhealthy: ...`); it fails nothing.
    fn note_unhealthy_grants(&mut self, id: &str, c: &crate::declaration::Container) {
        let unhealthy = grants::unhealthy(c);
        if unhealthy.is_empty() {
            return;
        }
        let note = format!("unhealthy: {}", unhealthy.join("; "));
        if let Some(line) = self.lines.iter_mut().rev().find(|l| l.id == id) {
            line.reason = Some(match line.reason.take() {
                Some(reason) => format!("{reason}; {note}"),
                None => note,
            });
        }
    }

    async fn remove_units(&mut self) {
        let declared: BTreeSet<String> = self
            .decl
            .resources
            .iter()
            .filter_map(|r| match &r.kind {
                ResourceKind::Unit(u) => Some(u.name.to_string()),
                _ => None,
            })
            .collect();
        let gone: Vec<String> = self
            .written_units
            .iter()
            .filter(|n| !declared.contains(*n))
            .cloned()
            .collect();
        if gone.is_empty() {
            return;
        }
        let Some(manager) = self.applier.units.clone() else {
            let reason = format!(
                "no longer declared, but cannot be removed: {}",
                self.applier.units_missing
            );
            for name in gone {
                self.push(&name, Action::Failed, Some(reason.clone()));
            }
            return;
        };
        for report in manager.remove(&gone).await {
            if report.ok {
                self.written_units.remove(&report.id);
            }
            self.unit_line(report);
        }
    }

    /// Write the state documents and build the report.
    fn finish(mut self, started_at: DateTime<Utc>) -> ApplyReport {
        let mut error = None;
        if let Err(e) = self.applier.store.save(CONTAINER_INPUTS, &self.inputs) {
            error = Some(format!("cannot record what containers read: {e}"));
        }
        let finished_at = Utc::now();
        // Only files still declared are recorded.
        let declared_files: BTreeSet<&str> = self
            .decl
            .resources
            .iter()
            .filter_map(|r| match &r.kind {
                ResourceKind::File(f) => Some(f.path.as_str()),
                _ => None,
            })
            .collect();
        self.written_files
            .retain(|path, _| declared_files.contains(path.as_str()));
        let mut known = std::mem::take(&mut self.known);
        known.extend(self.decl.containers().map(|(_, c)| c.name.to_string()));
        for gone in self.removed.iter().chain(self.consumed.iter()) {
            known.remove(gone);
        }
        let applied = AppliedState {
            format: state::APPLIED_FORMAT,
            declaration: serde_json::to_value(self.decl).unwrap_or_default(),
            applied_at: finished_at,
            ok: self.ok && error.is_none(),
            halted: self.halted.clone(),
            lines: self.lines.clone(),
            files: std::mem::take(&mut self.written_files),
            units: self.written_units.iter().cloned().collect(),
            containers: known.into_iter().collect(),
        };
        if let Err(e) = self.applier.store.save(APPLIED, &applied) {
            error = Some(format!("cannot record what was applied: {e}"));
        }
        ApplyReport {
            ok: self.ok && error.is_none(),
            started_at,
            finished_at,
            lines: self.lines,
            windows: self.live.iter().map(WindowLine::of).collect(),
            complete: self.halted.is_none(),
            halted: self.halted,
            error,
            warnings: self.warnings,
            steps: self.steps,
        }
    }
}

/// How long each step's window may stay open, by step id: its timeout plus
/// the five minutes closing may take; a step without a timeout is bounded
/// only by the six hours after which a record holds nothing.
fn window_bounds(decl: &Declaration) -> BTreeMap<String, std::time::Duration> {
    decl.steps()
        .map(|s| {
            let run = s.container.timeout.unwrap_or(crate::store::WINDOW_MAX_AGE);
            (
                s.resource.id.to_string(),
                (run + crate::schedule::window::CLOSE_BUDGET).min(crate::store::WINDOW_MAX_AGE),
            )
        })
        .collect()
}

/// The scheduled steps `previous` installed (or found unchanged), by id,
/// as that apply declared them.
fn installed_steps(previous: &AppliedState) -> BTreeMap<String, serde_json::Value> {
    previous
        .lines
        .iter()
        .filter(|l| matches!(l.action, Action::Installed | Action::Unchanged))
        .filter_map(|l| {
            let r = resource_json(&previous.declaration, &l.id)?;
            let scheduled = r.get("schedule").is_some_and(|s| !s.is_null());
            scheduled.then(|| (l.id.clone(), r.clone()))
        })
        .collect()
}

/// The resource `id` in a declaration's canonical JSON.
fn resource_json<'v>(decl: &'v serde_json::Value, id: &str) -> Option<&'v serde_json::Value> {
    decl.get("resources")?
        .as_array()?
        .iter()
        .find(|r| r.get("id").and_then(|v| v.as_str()) == Some(id))
}
