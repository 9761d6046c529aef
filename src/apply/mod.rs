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
//! This file is the apply's face and its one run: the [`Applier`] (lock,
//! state, listing, report) and the state of one apply in progress (`Run`),
//! which each resource kind's file extends. The rooms: [`report`] (what an
//! apply says it did), `order` (declaration order, services batched, then
//! removals), [`crate::container_spec`] (what a container is), `files` (files and
//! directories, never through a symbolic link), `containers` (services),
//! `run_once`, `scheduled` (steps installed, never run), [`pull`] (pull
//! policy), [`state`] (the documents), [`units`] (the seam to systemd unit
//! files), `identities` (system accounts), `shared_folders` (ACL entries on
//! shared folders), [`crate::container_spec::grants`] (a container's identity and grants as the
//! runtime takes them), [`node_declaration`] (the node's declaration file).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::container_spec::Builds;
use crate::declaration::Declaration;
use crate::events::Event;
use crate::mesh_event;
use crate::progress::{Progress, Reporter};
use crate::runtime::{ContainerRuntime, ContainerSummary};
use crate::schedule::step::ScheduledStep;
use crate::store::{Store, APPLIED, CONTAINER_INPUTS};
use crate::window::WindowRecord;
use crate::window::Windows;

mod containers;
mod depends;
pub mod empty;
mod files;
mod finish;
mod identities;
mod networking;
pub mod node_declaration;
mod order;
mod preview;
pub mod pull;
pub mod report;
mod run_once;
mod scheduled;
mod shared_folders;

pub mod state;
#[cfg(test)]
mod tests;
pub mod units;

pub use empty::EmptyRefused;
pub use order::APPLY_WIDTH;
pub use pull::PullPolicy;
pub use report::{Action, ApplyReport, Halt, PreviewText, ReportLine, WindowLine};
pub use state::{load_applied, AppliedState, ContainerInputs, LastApply};

/// Why `apply FILE` through the daemon changed nothing.
#[derive(Debug)]
pub enum InstallRefused {
    /// FILE is not a valid declaration.
    Invalid(crate::declaration::Refusal),
    /// FILE declares nothing over a node where resources are applied.
    Empty(EmptyRefused),
}
pub use units::{FileChange, UnitManager, UnitReport};

/// What kind of apply a run is.
#[derive(Debug, Clone, Copy, Default)]
struct Mode {
    /// `diff`: every decision made, nothing done.
    preview: bool,
    /// The daemon's periodic apply: a service whose own exit is final by
    /// its `restart` policy is left exited.
    reconcile: bool,
}

/// The one listing of managed containers, in flight.
type Listing = tokio::task::JoinHandle<Result<Vec<ContainerSummary>, crate::runtime::RuntimeError>>;

/// The apply engine of one process. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Applier {
    store: Store,
    runtime: Arc<dyn ContainerRuntime>,
    windows: Windows,
    units: Option<Arc<dyn UnitManager>>,
    units_missing: String,
    pull: PullPolicy,
    /// The daemon's shared-folder watch, held while entries change.
    folder_watch: Option<crate::acl::watch::Watcher>,
    /// Who is told of each resource as it is decided, and of each wait.
    progress: Reporter,
}

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
            folder_watch: None,
            progress: Reporter::none(),
        }
    }

    /// Tell `progress` of each resource as it is decided and of what the
    /// apply waits on (a pull, a run-once step, an open window).
    pub fn with_progress(mut self, progress: Reporter) -> Self {
        self.progress = progress;
        self
    }

    /// Hold `watcher` still while shared folders' entries change, so that
    /// it never puts back what an apply takes away
    /// ([`Watcher::hold`](crate::acl::watch::Watcher::hold)).
    pub fn with_folder_watch(mut self, watcher: crate::acl::watch::Watcher) -> Self {
        self.folder_watch = Some(watcher);
        self
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
            Ok(_lock) => {
                let listing = self.start_listing();
                self.apply_locked(decl, started_at, listing).await
            }
            Err(report) => report,
        };
        log_finished(&report);
        report
    }

    /// `diff FILE`: what [`Applier::apply`] of `decl` would do, decided by
    /// the same walk over the same listing, state and window records, with
    /// every act left out: no runtime write, no file, unit, account or ACL
    /// change, no state written. Taken under the apply lock, so that it
    /// sees the node as the next apply would.
    pub async fn preview(&self, decl: &Declaration) -> ApplyReport {
        let started_at = Utc::now();
        match self.lock(started_at).await {
            Ok(_lock) => {
                let listing = self.start_listing();
                self.run_locked(
                    decl,
                    started_at,
                    listing,
                    Mode {
                        preview: true,
                        reconcile: false,
                    },
                )
                .await
            }
            Err(report) => report,
        }
    }

    /// `diff FILE` from its bytes: FILE validated and judged as
    /// [`Applier::parse_install_and_apply`] would (a refused FILE is the
    /// same refusal), then previewed, nothing installed.
    pub async fn parse_and_preview(
        &self,
        bytes: &[u8],
        allow_empty: bool,
    ) -> Result<ApplyReport, InstallRefused> {
        let started_at = Utc::now();
        match self.lock(started_at).await {
            Ok(_lock) => {
                let listing = self.start_listing();
                let decl = self.parse_and_judge(bytes, allow_empty, &listing).await?;
                Ok(self
                    .run_locked(
                        &decl,
                        started_at,
                        listing,
                        Mode {
                            preview: true,
                            reconcile: false,
                        },
                    )
                    .await)
            }
            Err(report) => {
                crate::declaration::parse(bytes).map_err(InstallRefused::Invalid)?;
                Ok(report)
            }
        }
    }

    /// `apply FILE`: under the apply lock, install `bytes` (FILE, already
    /// validated as `decl`) as the node's declaration at `path`
    /// ([`node_declaration`]), then converge to it. A file that cannot be
    /// installed fails the apply with nothing changed. A `decl` declaring
    /// nothing over a node where resources are applied is refused, nothing
    /// changed and the file not installed, unless `allow_empty`
    /// ([`empty`]).
    pub async fn install_and_apply(
        &self,
        decl: &Declaration,
        bytes: &[u8],
        path: &std::path::Path,
        allow_empty: bool,
    ) -> Result<ApplyReport, EmptyRefused> {
        let started_at = Utc::now();
        let report = match self.lock(started_at).await {
            Ok(_lock) => {
                let listing = self.start_listing();
                if let Err(refused) = empty::guard(
                    &self.store,
                    &*self.runtime,
                    decl.resources.len(),
                    allow_empty,
                )
                .await
                {
                    listing.abort();
                    return Err(refused);
                }
                self.install_locked(decl, bytes, path, started_at, listing)
                    .await
            }
            Err(report) => report,
        };
        log_finished(&report);
        Ok(report)
    }

    /// `apply FILE` from its bytes: the apply lock is taken first, the
    /// runtime asked for its listing, and FILE validated while Docker
    /// answers (a declaration of thousands of resources takes about as
    /// long to validate as Docker takes to list them); then as
    /// [`Applier::install_and_apply`]. A refused FILE (invalid, or empty
    /// over an applied node without `allow_empty`) changes nothing and says
    /// why.
    pub async fn parse_install_and_apply(
        &self,
        bytes: &[u8],
        path: &std::path::Path,
        allow_empty: bool,
    ) -> Result<(Declaration, ApplyReport), InstallRefused> {
        let started_at = Utc::now();
        let (decl, report) = match self.lock(started_at).await {
            Ok(_lock) => {
                let listing = self.start_listing();
                let decl = self.parse_and_judge(bytes, allow_empty, &listing).await?;
                let report = self
                    .install_locked(&decl, bytes, path, started_at, listing)
                    .await;
                (decl, report)
            }
            Err(report) => (
                crate::declaration::parse(bytes).map_err(InstallRefused::Invalid)?,
                report,
            ),
        };
        log_finished(&report);
        Ok((decl, report))
    }

    /// FILE's bytes validated, then judged by the empty guard, while the
    /// runtime answers `listing` (aborted when FILE is refused: a refused
    /// FILE changes nothing).
    async fn parse_and_judge(
        &self,
        bytes: &[u8],
        allow_empty: bool,
        listing: &Listing,
    ) -> Result<Declaration, InstallRefused> {
        let judged = match crate::declaration::parse(bytes) {
            Err(refusal) => Err(InstallRefused::Invalid(refusal)),
            Ok(decl) => empty::guard(
                &self.store,
                &*self.runtime,
                decl.resources.len(),
                allow_empty,
            )
            .await
            .map(|()| decl)
            .map_err(InstallRefused::Empty),
        };
        if judged.is_err() {
            listing.abort();
        }
        judged
    }

    /// Install `bytes` at `path`, then converge to `decl`; the caller
    /// holds the apply lock and asked for `listing`.
    async fn install_locked(
        &self,
        decl: &Declaration,
        bytes: &[u8],
        path: &std::path::Path,
        started_at: DateTime<Utc>,
        listing: Listing,
    ) -> ApplyReport {
        match node_declaration::install(path, bytes) {
            Ok(()) => self.apply_locked(decl, started_at, listing).await,
            Err(e) => {
                listing.abort();
                ApplyReport::failed_before_start(started_at, e.to_string())
            }
        }
    }

    /// Read the node's declaration at `path` under the apply lock (so it is
    /// the one the last apply installed, whichever process did) and
    /// converge to it. An unreadable or refused file applies nothing: the
    /// error says why (and no `apply-finished` is logged); so does a file
    /// declaring nothing over a node where resources are applied
    /// ([`empty`]: only `apply --allow-empty FILE` removes everything). The
    /// listing is asked for before the file is read and validated.
    ///
    /// `reconcile`: the daemon's periodic apply, which leaves exited a
    /// service whose `restart` policy makes its own exit final (`no`,
    /// `on-failure`); every other apply starts it.
    pub async fn apply_node_declaration(
        &self,
        path: &std::path::Path,
        reconcile: bool,
    ) -> Result<(Declaration, ApplyReport), node_declaration::DeclarationFileError> {
        let started_at = Utc::now();
        let report = match self.lock(started_at).await {
            Ok(_lock) => {
                let listing = self.start_listing();
                let decl = match node_declaration::read(path) {
                    Ok(decl) => decl,
                    Err(e) => {
                        listing.abort();
                        return Err(e);
                    }
                };
                if let Err(refused) =
                    empty::guard(&self.store, &*self.runtime, decl.resources.len(), false).await
                {
                    listing.abort();
                    return Err(node_declaration::DeclarationFileError::Empty {
                        path: path.display().to_string(),
                        refused,
                    });
                }
                let report = self
                    .run_locked(
                        &decl,
                        started_at,
                        listing,
                        Mode {
                            preview: false,
                            reconcile,
                        },
                    )
                    .await;
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

    /// The one listing of managed containers, asked for now and awaited
    /// when the apply needs it: Docker answers (tens of milliseconds for a
    /// thousand containers) while the declaration is validated and the
    /// state read. It only reads, so one that is not used changes nothing.
    fn start_listing(&self) -> Listing {
        let runtime = self.runtime.clone();
        tokio::spawn(async move { runtime.list_managed().await })
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

    /// The apply itself; the caller holds the apply lock and asked for
    /// `listing`.
    async fn apply_locked(
        &self,
        decl: &Declaration,
        started_at: DateTime<Utc>,
        listing: Listing,
    ) -> ApplyReport {
        self.run_locked(decl, started_at, listing, Mode::default())
            .await
    }

    /// An apply, or its preview (`preview`: decided, nothing done).
    async fn run_locked(
        &self,
        decl: &Declaration,
        started_at: DateTime<Utc>,
        listing: Listing,
        mode: Mode,
    ) -> ApplyReport {
        let refuse = |e: String| {
            ApplyReport::failed_before_start(
                started_at,
                format!("{e}; the apply refuses to guess and changed nothing (repair or remove the file)"),
            )
        };
        // The listing was asked for first and is awaited last: Docker
        // answers it while the state is read. A state that cannot be read
        // still changes nothing: the listing only reads.
        let state = (|| {
            let previous: Option<AppliedState> =
                self.store.load(APPLIED).map_err(|e| e.to_string())?;
            let inputs_on_disk: Option<BTreeMap<String, ContainerInputs>> = self
                .store
                .load(CONTAINER_INPUTS)
                .map_err(|e| e.to_string())?;
            let live = self
                .windows
                .live_records()
                .map_err(|e| format!("cannot read the window records: {e}"))?;
            Ok::<_, String>((previous, inputs_on_disk, live))
        })();
        let (previous, inputs_on_disk, live) = match state {
            Ok(state) => state,
            Err(e) => {
                listing.abort();
                return refuse(e);
            }
        };
        let listing = match listing.await {
            Ok(listed) => listed
                .map(|list| list.into_iter().map(|c| (c.name.clone(), c)).collect())
                .map_err(|e| e.to_string()),
            Err(e) => Err(format!("the listing did not finish: {e}")),
        };
        if !mode.preview {
            self.progress.send(Progress::Apply {
                resources: decl.resources.len(),
            });
        }
        let mut run = Run::new(self, decl, previous, inputs_on_disk, live, listing);
        run.preview = mode.preview;
        run.reconcile = mode.reconcile;
        run.networks_and_volumes().await;
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
    /// What the last apply recorded (`applied.json`), to write it again
    /// only when this apply records something else.
    previous: Option<AppliedState>,
    /// What each container was created reading, by container name.
    inputs: BTreeMap<String, ContainerInputs>,
    /// The same as read from the state directory (`None`: no file), so an
    /// apply that changed none of it does not write it again.
    inputs_on_disk: Option<BTreeMap<String, ContainerInputs>>,
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
    /// Every container of the declaration built once, each file read once
    /// (forgotten whenever the apply changed something a container reads).
    builds: Builds<'a>,
    /// The machine id and local zone every step's timing reads.
    machine: crate::schedule::step::Machine,
    /// Scheduled steps the last apply installed (or found unchanged), as
    /// it declared them: one declared alike now is `unchanged`.
    steps_before: BTreeMap<String, serde_json::Value>,
    /// Shared with the services converged concurrently (it holds the
    /// apply's one retry budget and the images known present).
    puller: Arc<tokio::sync::Mutex<pull::Puller>>,
    lines: Vec<ReportLine>,
    /// The resources whose line is `failed`: a service depending on one
    /// is not started ([`depends`]).
    failed: BTreeSet<String>,
    ok: bool,
    /// A preview (`diff`): every decision made, nothing done.
    preview: bool,
    /// The daemon's periodic reconcile (see [`Mode::reconcile`]).
    reconcile: bool,
    halted: Option<Halt>,
    warnings: Vec<String>,
    steps: Vec<ScheduledStep>,
    /// Volumes and networks (`volume X`, `network X`) that failed, and
    /// why: no container using one is made by this apply.
    unusable: BTreeMap<String, String>,
}

impl<'a> Run<'a> {
    fn new(
        applier: &'a Applier,
        decl: &'a Declaration,
        previous: Option<AppliedState>,
        inputs_on_disk: Option<BTreeMap<String, ContainerInputs>>,
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
        let inputs = inputs_on_disk.clone().unwrap_or_default();
        known.extend(inputs.keys().cloned());
        let steps_before = previous
            .as_ref()
            .map(state::installed_steps)
            .unwrap_or_default();
        let puller = Arc::new(tokio::sync::Mutex::new(pull::Puller::new(
            applier.runtime.clone(),
            applier.windows.clone(),
            applier.pull.clone(),
            pull::window_bounds(decl),
            applier.progress.clone(),
        )));
        Run {
            applier,
            decl,
            previous,
            inputs,
            inputs_on_disk,
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
            builds: Builds::new(decl),
            machine: crate::schedule::step::Machine::read(),
            steps_before,
            puller,
            lines: Vec::new(),
            failed: BTreeSet::new(),
            ok: true,
            preview: false,
            reconcile: false,
            halted: None,
            warnings: Vec::new(),
            steps: Vec::new(),
            unusable: BTreeMap::new(),
        }
    }

    fn runtime(&self) -> &dyn ContainerRuntime {
        &*self.applier.runtime
    }

    fn push(&mut self, id: &str, action: Action, reason: Option<String>) {
        if action == Action::Failed {
            self.ok = false;
            self.failed.insert(id.to_owned());
        }
        if self.preview {
            self.lines.push(ReportLine::new(id, action, reason));
            return;
        }
        self.applier.progress.send(Progress::Decided {
            id: id.to_string(),
            action: action.as_str().to_string(),
            reason: reason.clone(),
        });
        self.lines.push(ReportLine::new(id, action, reason));
    }
}
