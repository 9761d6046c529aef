//! Apply: converge the machine to a declaration (see CONTRACT "Apply").
//!
//! One apply takes the apply lock for its whole length (so no window opens
//! meanwhile; a window takes the lock only to write its record, so an apply
//! never waits behind a running step), and then:
//!
//! 1. **reads** what it decides from, once ([`facts`]): the state it keeps,
//!    the live window records, the one listing of managed containers;
//! 2. **decides** ([`decide`]) every resource in the order it will carry
//!    them out (volumes, networks, the declared resources in declaration
//!    order, then the removals of what the host made and no longer
//!    declares): a [`plan`] of typed work, each with its report line, made
//!    from reads alone;
//! 3. **carries the plan out** ([`execute`]), decision by decision, each
//!    coming to an outcome; the report ([`ledger`]) is the plan with the
//!    outcomes.
//!
//! `diff` is steps 1 and 2, the plan rendered: the same decisions the
//! apply then carries out, so it is exact by construction; no code that
//! acts is told whether it is a preview.
//!
//! | resource | actions |
//! |---|---|
//! | file, directory | `created`, `updated`, `unchanged` |
//! | service container | `created`, `unchanged`, `started`, `recreated: <reason>`, `held-still` |
//! | run-once step | `ran`, `failed` (halts the apply: what follows is `not-reached`) |
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
//! State (store documents [`APPLIED`](crate::store::APPLIED) and
//! [`CONTAINER_INPUTS`](crate::store::CONTAINER_INPUTS)) is read
//! before anything changes: a corrupt state file fails the apply with
//! nothing changed, rather than guessing (and, say, recreating everything).
//!
//! The rooms: [`report`] (what an apply says it did), [`plan`] (what it
//! decided), [`facts`] (what it decides from), [`decide`] (one file per
//! resource kind's decisions), [`execute`] (one file per resource kind's
//! acts), [`ledger`] (the report built, the state recorded),
//! [`crate::container_spec`] (what a container is), [`nofollow`] (paths
//! never walked through a link), [`content_diff`] (what a plan shows of a
//! file), [`pull`] (pull policy), [`state`] and [`records`] (the
//! documents), [`units`] (the seam to systemd unit files),
//! [`node_declaration`] (the node's declaration file), [`empty`] (an
//! empty declaration never wipes an applied node).

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::accounts::{AccountBook, AccountTools, SystemAccounts};
use crate::declaration::Declaration;
use crate::events::Event;
use crate::mesh_event;
use crate::progress::Reporter;
use crate::runtime::{ContainerRuntime, RuntimeView};
use crate::store::Store;
use crate::window::Windows;

pub mod content_diff;
pub mod converged;
pub mod decide;
mod depends;
pub mod empty;
pub mod execute;
pub mod facts;
pub mod ledger;
pub mod node_declaration;
pub mod nofollow;
pub mod plan;
pub mod pull;
pub mod recorded;
pub mod records;
pub mod report;
pub mod rollouts;
pub mod state;
#[cfg(test)]
mod tests;
pub mod units;

pub use converged::Converged;
pub use empty::EmptyRefused;
pub use execute::APPLY_WIDTH;
pub use pull::PullPolicy;
pub use report::{Action, ApplyReport, Halt, PreviewText, ReportLine, StepLine, WindowLine};
pub use state::{load_applied, AppliedState, ContainerInputs, LastApply};

/// Why `apply FILE` through the daemon changed nothing.
#[derive(Debug)]
pub enum InstallRefused {
    /// FILE is not a valid declaration.
    Invalid(crate::declaration::Refusal),
    /// FILE declares nothing over a node where resources are applied.
    Empty(EmptyRefused),
}
pub use units::{FileChange, UnitManager, UnitReads, UnitReport};

/// What an apply does with its plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Then {
    /// Render it (`diff`).
    Show,
    /// Carry it out.
    CarryOut,
}

use facts::InFlight as Listing;

/// The apply engine of one process. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Applier {
    store: Store,
    runtime: Arc<dyn ContainerRuntime>,
    windows: Windows,
    units: Option<Arc<dyn UnitManager>>,
    units_missing: String,
    accounts: Arc<dyn AccountTools>,
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
            accounts: Arc::new(SystemAccounts),
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

    /// Make and remove identities' accounts through `accounts` (the
    /// machine's own tools by default).
    pub fn with_accounts(mut self, accounts: Arc<dyn AccountTools>) -> Self {
        self.accounts = accounts;
        self
    }

    /// The window engine this applier honours.
    pub fn windows(&self) -> &Windows {
        &self.windows
    }

    /// The state directory this applier keeps its state in.
    pub fn store(&self) -> &Store {
        &self.store
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

    /// `diff FILE`: the plan [`Applier::apply`] of `decl` would carry out,
    /// decided by the same decisions over the same listing, state and
    /// window records, and rendered, not carried out: no runtime write, no
    /// file, unit, account or ACL change, no state written. Taken under
    /// the apply lock, so that it sees the node as the next apply would.
    pub async fn preview(&self, decl: &Declaration) -> ApplyReport {
        let started_at = Utc::now();
        match self.lock(started_at).await {
            Ok(_lock) => {
                let listing = self.start_listing();
                self.run_locked(decl, started_at, listing, Then::Show, false)
                    .await
            }
            Err(report) => report,
        }
    }

    /// `apply FILE` of the request `converged` was left by, answered
    /// without validating or deciding anything when the machine is as that
    /// apply left it ([`converged`]): every resource `unchanged`, the time
    /// of the apply recorded; their lines built only when `every_line`
    /// (else counted: thousands of `unchanged` say nothing new).
    /// `Err`: why it must be decided in full.
    pub async fn apply_converged(
        &self,
        converged: &Converged,
        every_line: bool,
    ) -> Result<ApplyReport, String> {
        self.check_converged(converged, Then::CarryOut, every_line)
            .await
    }

    /// `diff FILE` of the request `converged` was left by: as
    /// [`Applier::apply_converged`], nothing recorded.
    pub async fn preview_converged(&self, converged: &Converged) -> Result<ApplyReport, String> {
        self.check_converged(converged, Then::Show, true).await
    }

    async fn check_converged(
        &self,
        converged: &Converged,
        then: Then,
        every_line: bool,
    ) -> Result<ApplyReport, String> {
        let started_at = Utc::now();
        let _lock = self.lock(started_at).await.map_err(|r| r.summary())?;
        let listing = self.start_listing();
        converged::check(converged, &self.windows, &*self.runtime, listing).await?;
        let (lines, unchanged_unlisted) = match every_line {
            true => (converged.lines(), 0),
            false => (Vec::new(), converged.resources()),
        };
        let finished_at = Utc::now();
        let error = match then {
            Then::Show => None,
            Then::CarryOut => self
                .store
                .save(
                    crate::store::LAST_APPLY,
                    &LastApply {
                        applied_at: finished_at,
                    },
                )
                .err()
                .map(|e| format!("cannot record when the apply ended: {e}")),
        };
        let report = ApplyReport {
            ok: error.is_none(),
            changed: false,
            started_at,
            finished_at,
            lines,
            unchanged_unlisted,
            windows: Vec::new(),
            halted: None,
            error,
            warnings: Vec::new(),
            tidy: Vec::new(),
            steps: Vec::new(),
            complete: true,
        };
        if then == Then::CarryOut {
            log_finished(&report);
        }
        Ok(report)
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
                    .run_locked(&decl, started_at, listing, Then::Show, false)
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
                    .run_locked(&decl, started_at, listing, Then::CarryOut, reconcile)
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
        self.run_locked(decl, started_at, listing, Then::CarryOut, false)
            .await
    }

    /// Decide `decl` and then show the plan or carry it out (`reconcile`:
    /// the daemon's periodic apply, which leaves exited a service whose
    /// own exit is final by its `restart` policy).
    async fn run_locked(
        &self,
        decl: &Declaration,
        started_at: DateTime<Utc>,
        listing: Listing,
        then: Then,
        reconcile: bool,
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
        let facts = match facts::Facts::read(&self.store, &self.windows, listing, reconcile).await {
            Ok(facts) => facts,
            Err(e) => return refuse(e),
        };
        let view: &dyn RuntimeView = &*self.runtime;
        let units: Result<&dyn UnitReads, &str> = match &self.units {
            Some(units) => Ok(&**units as &dyn UnitReads),
            None => Err(self.units_missing.as_str()),
        };
        let accounts: &dyn AccountBook = &*self.accounts;
        let decider = decide::Decider::new(decl, &facts, view, units, accounts);
        let (plan, present) = decider.plan().await;
        match then {
            Then::Show => {
                let mut facts = facts;
                let windows = facts.live.iter().map(WindowLine::of).collect();
                ledger::release(&mut facts);
                plan.into_report(started_at, windows)
            }
            Then::CarryOut => {
                let tools = self.tools(decl, present);
                execute::Executor::new(tools, decl, facts)
                    .run(plan, started_at)
                    .await
            }
        }
    }

    /// What the executor of one apply of `decl` acts with; `present`: the
    /// images the decisions found present.
    fn tools(&self, decl: &Declaration, present: Vec<String>) -> execute::Tools {
        let puller = pull::Puller::new(
            self.runtime.clone(),
            self.windows.clone(),
            self.pull.clone(),
            pull::window_bounds(decl),
            self.progress.clone(),
        )
        .knowing_present(present);
        execute::Tools {
            store: self.store.clone(),
            runtime: self.runtime.clone(),
            units: match &self.units {
                Some(units) => Ok(units.clone()),
                None => Err(self.units_missing.clone()),
            },
            accounts: self.accounts.clone(),
            puller: Arc::new(tokio::sync::Mutex::new(puller)),
            folder_watch: self.folder_watch.clone(),
            progress: self.progress.clone(),
            owner: self.windows.owner().clone(),
        }
    }
}

/// Give `applier` the systemd unit manager of `unit_dir`, or say why unit
/// resources cannot be applied by this process (no system bus).
pub async fn with_systemd(applier: Applier, unit_dir: &std::path::Path) -> Applier {
    match crate::systemd::unit_files::UnitFiles::connect(unit_dir.to_path_buf()).await {
        Ok(units) => {
            // Oneshot runs are remembered in this applier's state directory.
            let units = units.with_oneshot_record(applier.store().clone());
            applier.with_units(Arc::new(units))
        }
        Err(e) => applier.without_units(format!("no systemd unit manager: {e}")),
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
