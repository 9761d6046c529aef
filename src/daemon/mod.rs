//! `mesh-host daemon`: the node's service (systemd `Type=notify`).
//!
//! Start-up order: files in the window records' directory that are not
//! readable records are moved aside (an alert); the adopter starts at once
//! and closes every window left by a process that is gone, each on a task
//! of its own (a window whose step still runs waits for it without holding
//! anything else up); the control socket answers at once (`status` at
//! once, `run` and `plan` once the schedules are armed); the node's
//! declaration (the `--declaration` file, which `apply FILE` installs) is
//! applied, honouring those windows still open, and the scheduler armed;
//! then `READY=1` is sent. So READY means "declaration applied, schedules
//! armed, socket answering", not "every old window closed": those still
//! closing show in `status` and `STATUS=`. After that the daemon
//! re-applies on `SIGHUP` (`systemctl
//! reload`, on a task of its own: `daemon::reload`) and on a reconcile interval,
//! one apply at a time, keeps `STATUS=` current, and on `SIGTERM` lets
//! running steps end and their windows close before it exits 0. Schedules
//! follow only an apply that went through the whole declaration. The
//! watchdog is fed from the scheduler's own loop.

mod armed;
mod dirwatch;
pub mod handover;
pub mod notify;
mod reload;
mod reload_tickets;
mod runtime_wait;
mod shared;
mod status;

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{mpsc, watch, Mutex};

use crate::answer::suspend::Suspension;
use crate::answer::{self, Answer, Failure};
use crate::apply::node_declaration::DeclarationFileError;
use crate::apply::{Applier, ApplyReport};
use crate::clock::SystemClock;
use crate::control::server::{self, Incoming};
use crate::control::{Request, Response};
use crate::declaration::Declaration;
use crate::exit::Exit;
use crate::metrics::service::MetricsService;
use crate::progress::Reporter;
use crate::schedule::fire::Firer;
use crate::schedule::forward::Forwards;
use crate::schedule::forward_keeper::Keeper;
use crate::schedule::plan;
use crate::schedule::scheduler::Scheduler;
use crate::store::Store;
use crate::window::{Owner, Windows};

use notify::Notifier;
pub use shared::DaemonConfig;
use shared::{Daemon, LastApply, LastLines, Trigger};

/// How often `STATUS=` is refreshed when the window records' directory
/// cannot be watched (inotify refused): otherwise it is refreshed on change
/// only (an apply, a fire beginning or ending, a window record written or
/// erased).
const STATUS_FALLBACK_EVERY: Duration = Duration::from_secs(2);

/// Run the daemon; returns the process exit code.
pub fn run(cfg: DaemonConfig) -> u8 {
    crate::task::tune_allocator();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            return Exit::Failed.code();
        }
    };
    let ended = rt.block_on(main(cfg));
    // A blocking task still running (a metrics write on a hung file
    // system, given up on above) is left behind, not waited for: the
    // runtime's own drop would wait for it without end.
    rt.shutdown_timeout(Duration::from_secs(1));
    match ended {
        Ok(()) => Exit::Ok.code(),
        Err(e) => {
            tracing::error!("mesh-host daemon failed: {e}");
            Notifier::from_env().status(&format!("failed: {e}"));
            Exit::Failed.code()
        }
    }
}

async fn main(cfg: DaemonConfig) -> Result<(), String> {
    let notifier = Notifier::from_env();
    // Heard from the start, so that alerts of windows resumed below are
    // counted and paged too.
    let metrics_events = crate::tap::subscribe();
    let pager_events = cfg.on_alert.is_some().then(crate::tap::subscribe);
    notifier.status("starting: connecting to the container runtime");
    let store = Store::open(&cfg.state_dir).map_err(|e| e.to_string())?;
    let runtime = runtime_wait::connect_runtime(cfg.docker_host.as_deref()).await?;
    let owner = Owner::current().map_err(|e| e.to_string())?;
    let clock = Arc::new(SystemClock::new());
    // Before READY: a clock set from here on wakes the scheduler.
    clock.watch_sets();
    let (shutdown_tx, shutdown) = watch::channel(false);
    let windows = Windows::new(store.clone(), runtime.clone(), clock.clone(), owner)
        .stopping_on(shutdown.clone());
    let units = crate::systemd::units::for_runtime(&*runtime).await;
    let firer = Firer::new(
        runtime.clone(),
        windows.clone(),
        units.clone(),
        shutdown.clone(),
    );

    // 1. Windows a dead daemon left open are closed by the adopter, each
    // on a task of its own, from now on: one long step does not delay
    // another window's close, nor the daemon's start. A file in windows/
    // that is not a readable record is moved aside first (an alert).
    notifier.status("starting: resuming windows left open");
    // What the last complete apply declared is known before any window is
    // resumed, so that a held container removed meanwhile is created again
    // (from here on, every arming of the schedules tells it anew).
    armed::know_holds(&store, &windows);
    if let Err(e) = windows.set_aside_unreadable().await {
        tracing::error!("cannot look for unreadable window records: {e}");
    }
    // Heartbeats of owners that died (or of earlier boots) renew nothing.
    if let Err(e) = windows.records().beats().sweep(&windows.owner().boot_id) {
        tracing::warn!("cannot remove the heartbeats of owners that are gone: {e}");
    }
    // A package upgrade: the previous daemon handed its windows over, their
    // steps still running; the adopter below takes them over like any other.
    if let Some(note) = handover::take(&store, &windows.owner().boot_id) {
        tracing::info!(
            "the previous mesh-host (pid {}) handed over the windows of {}: taking each over, closing it when its step ends",
            note.pid,
            if note.steps.is_empty() { "no step".to_string() } else { note.steps.join(", ") }
        );
    }
    // The adopter takes over every window whose owner is gone (each on its
    // own), and adopts, within seconds of the death, a window whose owner
    // dies later (a local command, an installer) or stops renewing its
    // lease. It also stops step units no live owner keeps (a scope whose
    // owner died before its container was in it).
    let adopter = crate::window::adopt::Adopter::new(windows.clone()).with_units(units);
    let adopter_task = tokio::spawn(adopter.run(shutdown.clone()));
    // Output owed to the journal by owners that are gone is forwarded on.
    let keeper = Keeper::new(
        runtime.clone(),
        Forwards::of(&store),
        windows.owner().clone(),
    );
    tokio::spawn(keeper.run(shutdown.clone()));

    // 2. The scheduler runs from here on; the watchdog is fed from its loop.
    let watchdog = notifier.watchdog();
    let (mut scheduler, handle) = Scheduler::new(firer, clock, store.clone(), watchdog);
    let (fires_tx, fires) = mpsc::unbounded_channel();
    scheduler.report_fires_to(fires_tx);
    let scheduler_task = tokio::spawn(scheduler.run(shutdown.clone()));

    // Metrics and paging: tasks of their own, woken by events.
    let (metrics_task, metrics) = MetricsService::new(
        store.clone(),
        handle.clone(),
        windows.clone(),
        fires,
        metrics_events,
        cfg.metrics_file.clone(),
    );
    // The metrics stop last, once every fire has ended and reported, and
    // their last write is waited for: stopped with the others, they missed
    // the fires that the stop itself ends, and the runtime's end cancelled
    // a write still queued.
    let (metrics_stop, metrics_stopping) = watch::channel(false);
    let metrics_task = tokio::spawn(metrics_task.run(metrics_stopping));
    if let Some(events) = pager_events {
        start_pager(&cfg, &windows, events, shutdown.clone()).await;
    }

    let folders = crate::acl::watch::Watcher::start(store.clone());
    let applier = crate::apply::with_systemd(
        Applier::new(store.clone(), runtime.clone(), windows.clone())
            .with_folder_watch(folders.clone()),
        &cfg.unit_dir,
    )
    .await;
    let (reloads, queued_reloads) = reload_tickets::Reloads::new();
    let daemon = Arc::new(Daemon {
        applier,
        store: store.clone(),
        cfg: cfg.clone(),
        runtime,
        windows,
        scheduler: handle,
        applying: Mutex::new(()),
        armed: Mutex::new(None),
        converged: std::sync::Mutex::new(None),
        last_apply: std::sync::Mutex::new(None),
        empty_refused: std::sync::Mutex::new(None),
        applied: tokio::sync::Notify::new(),
        applied_for_status: crate::store::Cached::new(crate::store::APPLIED),
        notifier: notifier.clone(),
        metrics,
        folders,
        reloads,
        stopping: shutdown.clone(),
    });

    // 3. The control socket, answered at once: `status` while the
    // declaration is first applied; `run` and `plan` once it armed the
    // schedules.
    let listener = server::bind(&cfg.control_socket)
        .map_err(|e| format!("cannot listen on {}: {e}", cfg.control_socket.display()))?;
    let (to_daemon, requests) = mpsc::channel::<Incoming>(32);
    let server_task = tokio::spawn(server::serve(
        listener,
        cfg.control_socket.clone(),
        to_daemon,
        shutdown.clone(),
    ));
    let (armed_tx, armed_rx) = watch::channel(false);
    tokio::spawn(answer(daemon.clone(), requests, armed_rx));

    // 4. Apply the declaration file, arm the schedules, then READY.
    notifier.status("starting: applying the declaration");
    reload::extended(&notifier, daemon.apply_file(Trigger::Start)).await;
    let _ = armed_tx.send(true);
    notifier.ready(&daemon.status_line().await);
    tokio::spawn(daemon.clone().status_loop(shutdown.clone()));

    let mut hup = signal(SignalKind::hangup()).map_err(|e| e.to_string())?;
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    let mut reconcile = tokio::time::interval(cfg.reconcile_interval);
    reconcile.tick().await;
    let mut reconciling: Option<tokio::task::JoinHandle<Option<ApplyReport>>> = None;
    // Reloads apply on a task of their own: this loop stays free to answer
    // SIGTERM and control requests meanwhile.
    tokio::spawn(reload::worker(
        daemon.clone(),
        queued_reloads,
        shutdown.clone(),
    ));
    loop {
        tokio::select! {
            _ = hup.recv() => {
                crate::fault::pause("pause-before-reloading", "sighup").await;
                notifier.reloading();
                daemon.reloads.request();
            }
            _ = reconcile.tick() => {
                // One reconciliation at a time: a slow apply is not queued
                // behind by the next tick.
                if reconciling.as_ref().is_none_or(|t| t.is_finished()) {
                    let d = daemon.clone();
                    reconciling = Some(tokio::spawn(async move { d.apply_file(Trigger::Reconcile).await }));
                } else {
                    tracing::info!("reconcile skipped: the previous one is still applying");
                }
            }
            _ = term.recv() => break,
            _ = int.recv() => break,
        }
    }
    if handover::requested(&cfg.control_socket) {
        // A package upgrade (see `handover`): nothing is stopped; the
        // windows' records stay and their steps run on.
        notifier.stopping("stopping for an upgrade: handing open windows over");
        tracing::info!("stopping for an upgrade: the next mesh-host takes the open windows over");
        let _applying = daemon.applying.lock().await;
        handover::leave(&store, &daemon.windows);
        tracing::info!("stopped: windows handed over");
        // Every task is left as it is: none may stop a step or close a
        // window on its way out.
        std::process::exit(Exit::Ok.code().into());
    }
    // Running steps are stopped and their windows closed (each bounded by
    // the closing budget) before the scheduler returns.
    notifier.stopping("stopping: letting open windows close");
    tracing::info!("stopping: letting running steps end and their windows close");
    let _ = shutdown_tx.send(true);
    let _ = scheduler_task.await;
    // Windows taken over from dead owners close the same way.
    let _ = adopter_task.await;
    // An apply in flight is let finish: cut short between removing and
    // creating a container, it would leave a service missing.
    let _applying = daemon.applying.lock().await;
    let _ = server_task.await;
    let _ = metrics_stop.send(true);
    match tokio::time::timeout(METRICS_LAST_WRITE, metrics_task).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::error!("the metrics task ended abnormally: {e}"),
        Err(_) => tracing::warn!(
            "the metrics' last write did not end within {}s; stopping without it",
            METRICS_LAST_WRITE.as_secs()
        ),
    }
    tracing::info!("stopped");
    Ok(())
}

/// How long a stopping daemon waits for the metrics' last write (a file
/// on a hung file system would otherwise hold the stop).
const METRICS_LAST_WRITE: std::time::Duration = std::time::Duration::from_secs(10);

/// Start the pager when `--on-alert` names a template.
async fn start_pager(
    cfg: &DaemonConfig,
    windows: &Windows,
    events: mpsc::UnboundedReceiver<crate::tap::Observed>,
    shutdown: watch::Receiver<bool>,
) {
    let Some(template) = cfg.on_alert.clone() else {
        return;
    };
    match crate::systemd::alerts::SystemdAlertUnits::connect().await {
        Ok(units) => {
            tracing::info!(
                "paging: alerting events start instances of {}",
                template.name()
            );
            let pager = crate::page::Pager::new(template, Arc::new(units), windows.clone(), events);
            tokio::spawn(pager.run(shutdown));
        }
        Err(e) => tracing::error!("paging through {} is off: {e}", template.name()),
    }
}

/// Answer control requests, each on a task of its own; `run` and `plan`
/// wait until the start-up apply has armed the schedules.
async fn answer(
    daemon: Arc<Daemon>,
    mut requests: mpsc::Receiver<Incoming>,
    armed: watch::Receiver<bool>,
) {
    while let Some(incoming) = requests.recv().await {
        let d = daemon.clone();
        let mut armed = armed.clone();
        tokio::spawn(async move {
            if matches!(incoming.request, Request::Run { .. } | Request::Plan { .. }) {
                let _ = armed.wait_for(|a| *a).await;
            }
            let response = d.handle(incoming.request, incoming.progress).await;
            let _ = incoming.reply.send(response);
        });
    }
}

impl Daemon {
    /// Apply the node's declaration file (read under the apply lock); a
    /// missing or refused file applies nothing (never "everything
    /// removed") and keeps the schedules armed from the last good apply.
    /// So does a file declaring nothing over applied resources
    /// (`declaration-empty-refused`).
    async fn apply_file(&self, why: Trigger) -> Option<ApplyReport> {
        let _serial = self.applying.lock().await;
        self.remember_converged(None);
        match self
            .applier
            .apply_node_declaration(&self.cfg.declaration, matches!(why, Trigger::Reconcile))
            .await
        {
            Ok((decl, mut report)) => {
                self.after_apply(decl, &mut report).await;
                Some(report)
            }
            Err(DeclarationFileError::Empty { path, refused }) => {
                self.refuse_empty(why, path, &refused);
                self.set_last(
                    false,
                    format!(
                        "{} refused: it declares no resources",
                        self.cfg.declaration.display()
                    ),
                    LastLines::Recorded,
                );
                self.arm_from_record_if_unarmed().await;
                None
            }
            Err(e) => {
                tracing::error!("{e}; nothing applied, the schedules stay as armed");
                let short = match &e {
                    DeclarationFileError::Refused { path, .. } => format!("{path} refused"),
                    other => other.to_string(),
                };
                self.set_last(false, short, LastLines::Recorded);
                self.arm_from_record_if_unarmed().await;
                None
            }
        }
    }

    /// An empty declaration file refused: logged `declaration-empty-refused`
    /// at start and reload, and by a reconcile only when it is new (one
    /// standing refusal is not repeated every interval).
    fn refuse_empty(&self, why: Trigger, path: String, refused: &crate::apply::EmptyRefused) {
        let mut standing = self.empty_refused.lock().unwrap_or_else(|e| e.into_inner());
        let again = standing.is_some();
        *standing = Some(crate::answer::status::EmptyRefusal::new(
            Utc::now(),
            path.clone(),
            refused.applied(),
            refused.to_string(),
        ));
        drop(standing);
        if why == Trigger::Reconcile && again {
            tracing::debug!("{path}: still empty, still refused");
            return;
        }
        crate::mesh_event!(
            error,
            crate::events::Event::DeclarationEmptyRefused,
            MESH_FILE = %path,
            "{path}: {refused}; the daemon keeps everything applied and its schedules as armed"
        );
    }

    /// `apply FILE` through the socket: FILE (validated under the apply
    /// lock while the runtime lists the containers) becomes the node's
    /// declaration file, then the node converges to it (unless it is
    /// refused as empty: see [`crate::apply::empty`]).
    async fn install_and_apply(
        &self,
        bytes: &[u8],
        allow_empty: bool,
        every_line: bool,
        progress: Reporter,
    ) -> Result<ApplyReport, crate::apply::InstallRefused> {
        let _serial = self.applying.lock().await;
        if let Some(converged) = self.converged_to(bytes) {
            match self.applier.apply_converged(&converged, every_line).await {
                Ok(report) => {
                    self.after_converged(&report).await;
                    return Ok(report);
                }
                Err(why) => tracing::info!("apply: decided in full ({why})"),
            }
        }
        self.remember_converged(None);
        let (decl, mut report) = self
            .applier
            .clone()
            .with_progress(progress)
            .parse_install_and_apply(bytes, &self.cfg.declaration, allow_empty)
            .await?;
        let converged = crate::apply::Converged::record(
            &self.store,
            &decl,
            &report,
            bytes,
            &self.cfg.declaration,
        );
        self.after_apply(decl, &mut report).await;
        match converged {
            Ok(converged) => self.remember_converged(Some(converged)),
            Err(why) => tracing::info!("apply: not remembered as converged ({why})"),
        }
        Ok(report)
    }

    /// What the last `apply FILE` converged to, if `bytes` is its request.
    fn converged_to(&self, bytes: &[u8]) -> Option<Arc<crate::apply::Converged>> {
        let converged = self.converged.lock().unwrap_or_else(|e| e.into_inner());
        converged.clone().filter(|c| c.is_request(bytes))
    }

    fn remember_converged(&self, converged: Option<crate::apply::Converged>) {
        let was = std::mem::replace(
            &mut *self.converged.lock().unwrap_or_else(|e| e.into_inner()),
            converged.map(Arc::new),
        );
        crate::task::drop_later(was);
    }

    /// After an apply that found the node as the last one left it: the
    /// schedules stay armed (suspensions read again, containers not made
    /// ready tried again, as a sync of the same steps does).
    async fn after_converged(&self, report: &ApplyReport) {
        if let Some(armed) = self.scheduler.refresh().await {
            tracing::info!(
                "apply: the node is as the same request left it; {armed} schedule(s) kept"
            );
        }
        self.metrics.applied(report.finished_at, report.ok, None);
        self.set_last(report.ok, report.summary(), LastLines::Unchanged);
    }

    /// Schedules follow only an apply that went through the whole
    /// declaration; after one that halted or could not start they stay as
    /// armed (CONTRACT "Apply").
    ///
    /// The report's steps are handed to the scheduler (taken, not copied).
    async fn after_apply(&self, decl: Declaration, report: &mut ApplyReport) {
        // The declaration read was applied: an empty one refused before
        // no longer stands.
        *self.empty_refused.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.folders.reload();
        let modules = crate::metrics::service::modules(&decl);
        let ended = Utc::now();
        if report.complete {
            let steps = std::mem::take(&mut report.steps);
            if let Some(sync) = self.scheduler.sync(steps).await {
                tracing::info!(
                    "schedules: {} kept, {} added, {} re-armed, {} dropped",
                    sync.kept.len(),
                    sync.added.len(),
                    sync.rearmed.len(),
                    sync.dropped.len()
                );
                crate::task::drop_later(sync);
            }
            let mut armed_now = self.armed.lock().await;
            let (armed, error) = armed::remember(&self.store, &decl, armed_now.as_ref());
            if let Some(e) = error {
                tracing::warn!("cannot record the declaration the schedules are armed from: {e}");
            }
            *armed_now = Some(armed);
            drop(armed_now);
            crate::task::drop_later(decl);
        } else {
            tracing::warn!(
                "the apply did not go through the whole declaration ({}): the schedules stay as armed",
                report.summary()
            );
            self.arm_from_record_if_unarmed().await;
        }
        // Told once the schedules follow the apply: the metrics written
        // for it show the next fires it armed.
        self.metrics.applied(ended, report.ok, Some(modules));
        self.set_last(report.ok, report.summary(), LastLines::Recorded);
    }

    /// A daemon none of whose applies went through the whole declaration
    /// yet arms its schedules from the last complete apply recorded in the
    /// state directory (`daemon::armed`), so that a restart does not
    /// disarm them.
    async fn arm_from_record_if_unarmed(&self) {
        let mut current = self.armed.lock().await;
        if current.is_some() {
            return;
        }
        let decl = match armed::recall(&self.store) {
            Ok(Some(decl)) => decl,
            Ok(None) => return,
            Err(e) => {
                tracing::error!("cannot read the declaration the schedules were armed from: {e}");
                return;
            }
        };
        let (steps, errors) = crate::schedule::step::scheduled_steps(&decl);
        for e in errors {
            tracing::warn!("schedule of {} not armed: {}", e.resource, e.reason);
        }
        if let Some(sync) = self.scheduler.sync(steps).await {
            tracing::warn!(
                "schedules armed from the last complete apply: {} step(s)",
                sync.kept.len() + sync.added.len() + sync.rearmed.len()
            );
        }
        *current = Some(armed::Armed::recalled(&decl));
        crate::task::drop_later(decl);
    }

    fn set_last(&self, ok: bool, summary: String, lines: LastLines) {
        let at = Utc::now();
        if !ok {
            // A refused or unreadable declaration file is a failed apply.
            self.metrics.applied(at, ok, None);
        }
        let mut last = self.last_apply.lock().unwrap_or_else(|e| e.into_inner());
        *last = Some(LastApply {
            at,
            ok,
            summary,
            lines,
        });
        drop(last);
        self.applied.notify_one();
    }

    async fn handle(&self, request: Request, progress: Reporter) -> Response {
        match request {
            Request::Apply {
                declaration,
                allow_empty,
                progress: _,
                every_line,
            } => {
                let applied = self
                    .install_and_apply(declaration.as_bytes(), allow_empty, every_line, progress)
                    .await;
                if let Err(crate::apply::InstallRefused::Empty(refused)) = &applied {
                    tracing::warn!("apply refused: {refused}");
                }
                answer::apply::Applied::from(applied).response()
            }
            Request::Diff {
                declaration,
                allow_empty,
            } => {
                let bytes = declaration.as_bytes();
                if let Some(converged) = self.converged_to(bytes) {
                    if let Ok(report) = self.applier.preview_converged(&converged).await {
                        return answer::apply::Previewed::from(Ok(report)).response();
                    }
                }
                answer::apply::Previewed::from(
                    self.applier.parse_and_preview(bytes, allow_empty).await,
                )
                .response()
            }
            Request::Run { step, force, .. } => self
                .scheduler
                .run_now(&step, force, progress)
                .await
                .map_err(answer::run::refusal)
                .response(),
            Request::Suspend { step } => {
                let answer = self.scheduler.suspend(&step).await;
                if answer.is_ok() {
                    self.metrics.changed();
                }
                answer
                    .map(|since| Suspension::suspended(&step, since))
                    .map_err(answer::run::refusal)
                    .response()
            }
            Request::Resume { step } => {
                let answer = self.scheduler.resume(&step).await;
                if answer.is_ok() {
                    self.metrics.changed();
                }
                answer
                    .map(|was| Suspension::resumed(&step, was))
                    .map_err(answer::run::refusal)
                    .response()
            }
            Request::Plan { step } => {
                // The step as armed, not as declared: what its next fire
                // runs (an apply that halted left it as it was).
                let found = match self.scheduler.armed(&step).await {
                    Ok(Some(s)) => s,
                    Ok(None) => {
                        return Failure::refused(format!(
                            "no scheduled step {step} is armed: it is not declared, or no apply \
                             has gone through the whole declaration yet"
                        ))
                        .response()
                    }
                    Err(e) => return Failure::failed(e).response(),
                };
                plan::plan(&found, &*self.runtime, &self.windows)
                    .await
                    .map(|mut p| {
                        p.suspended_since =
                            crate::schedule::suspend::load_or_none(&self.store).since(&step);
                        p
                    })
                    .map_err(|e| Failure::failed(e.to_string()))
                    .response()
            }
            Request::Metrics => match self.metrics.text().await {
                Some(text) => Response {
                    exit: Exit::Ok.code(),
                    json: crate::control::document(&text),
                    text,
                },
                None => Response::error(Exit::Failed, "the metrics task has stopped"),
            },
            Request::Status { brief, only } => {
                let written = only == Some(crate::control::Form::Json);
                self.status(brief, written).await.response_in(only)
            }
            Request::Reload => {
                self.notifier.reloading();
                let ticket = self.reloads.request();
                match self.reloads.served(ticket, self.stopping.clone()).await {
                    reload_tickets::Served::Served => {
                        let status = self.status_line().await;
                        Response {
                            exit: Exit::Ok.code(),
                            text: format!("reloaded: {status}"),
                            json: crate::control::document(
                                &serde_json::json!({ "reloaded": true, "status": status }),
                            ),
                        }
                    }
                    // Not a failure of the unit: the operator's stop came
                    // first, and systemd counts a failed `ExecReload=`
                    // during a stop as the stop's own result.
                    reload_tickets::Served::Overtaken => {
                        let text = "not reloaded: the daemon began to stop first, and applies nothing more";
                        tracing::warn!("{text}");
                        Response {
                            exit: Exit::Ok.code(),
                            text: text.to_string(),
                            json: crate::control::document(
                                &serde_json::json!({ "reloaded": false, "status": text }),
                            ),
                        }
                    }
                }
            }
        }
    }

    /// Keep `STATUS=` current and watch for stale steps: woken by a change
    /// (an apply, a fire beginning or ending, a window record written or
    /// erased by any process) or when a step would turn stale, never on a
    /// timer otherwise.
    async fn status_loop(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        let mut sent = String::new();
        let mut steps_changed = self.scheduler.changes();
        // The store's window records (src/store: `windows/` under the root).
        let records_dir = self.cfg.state_dir.join("windows");
        let records = match dirwatch::DirWatch::new(&records_dir) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!(
                    "cannot watch {} ({e}): STATUS= is refreshed every {}s instead",
                    records_dir.display(),
                    STATUS_FALLBACK_EVERY.as_secs()
                );
                None
            }
        };
        loop {
            // A summary the scheduler reads from its tables, its stale
            // steps logged: no step's state is copied on a change.
            let Some(summary) = self.scheduler.summary().await else {
                return;
            };
            let line = self.status_line_of(&summary);
            if line != sent {
                self.notifier.status(&line);
                sent = line;
            }
            let now = Utc::now();
            let stale_at = summary.stale_at;
            let records_changed = async {
                match &records {
                    Some(w) => {
                        if let Err(e) = w.changed().await {
                            tracing::warn!("watching {}: {e}", records_dir.display());
                            tokio::time::sleep(STATUS_FALLBACK_EVERY).await;
                        }
                    }
                    None => tokio::time::sleep(STATUS_FALLBACK_EVERY).await,
                }
            };
            let stale_due = async {
                match stale_at {
                    Some(at) => {
                        crate::clock::timer::sleep_until(Some(at), now, None).await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                changed = steps_changed.changed() => if changed.is_err() { return },
                () = self.applied.notified() => {}
                () = records_changed => {}
                () = stale_due => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
        }
    }
}
