//! `mesh-host daemon`: the node's service (systemd `Type=notify`).
//!
//! Start-up order matters: window records left by a daemon that died are
//! resumed first (their containers come back), then the declaration file is
//! applied and the scheduler armed, and only then is `READY=1` sent. After
//! that the daemon serves the control socket, re-applies on `SIGHUP`
//! (`systemctl reload`) and on a reconcile interval, keeps `STATUS=` current,
//! and on `SIGTERM` lets running steps end and their windows close before it
//! exits 0. The watchdog is fed from the scheduler's own loop.

mod dirwatch;
pub mod notify;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{mpsc, watch, Mutex};

use crate::apply::{Applier, ApplyReport};
use crate::control::server::{self, Incoming};
use crate::control::{Request, Response};
use crate::declaration::{self, Declaration};
use crate::runtime::{ContainerRuntime, DockerRuntime};
use crate::schedule::clock::SystemClock;
use crate::schedule::fire::Firer;
use crate::schedule::plan;
use crate::schedule::scheduler::{Scheduler, SchedulerHandle};
use crate::schedule::step;
use crate::schedule::window::{Owner, Resumed, Windows};
use crate::store::Store;

use notify::Notifier;

/// How the daemon is set up.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// The state directory.
    pub state_dir: PathBuf,
    /// The runtime endpoint.
    pub docker_host: Option<String>,
    /// The declaration file applied at start and on reload.
    pub declaration: PathBuf,
    /// The control socket.
    pub control_socket: PathBuf,
    /// Where unit resources' files are written.
    pub unit_dir: PathBuf,
    /// Time between two reconciliations.
    pub reconcile_interval: Duration,
}

/// How long the daemon keeps trying to reach the container runtime at start.
const RUNTIME_WAIT: Duration = Duration::from_secs(90);

/// How often `STATUS=` is refreshed when the window records' directory
/// cannot be watched (inotify refused): otherwise it is refreshed on change
/// only (an apply, a fire beginning or ending, a window record written or
/// erased).
const STATUS_FALLBACK_EVERY: Duration = Duration::from_secs(2);

/// The last apply, for `STATUS=` and `status`.
#[derive(Debug, Clone)]
struct LastApply {
    at: DateTime<Utc>,
    ok: bool,
    summary: String,
}

/// The running daemon's shared parts.
struct Daemon {
    cfg: DaemonConfig,
    runtime: Arc<dyn ContainerRuntime>,
    windows: Windows,
    applier: Applier,
    scheduler: SchedulerHandle,
    /// The daemon's own applies are serialised here (the flock also
    /// serialises it against applies of other processes).
    applying: Mutex<()>,
    declaration: Mutex<Option<Declaration>>,
    last_apply: std::sync::Mutex<Option<LastApply>>,
    /// Signalled when the last apply changes (for `STATUS=`).
    applied: tokio::sync::Notify,
    notifier: Notifier,
}

/// Run the daemon; returns the process exit code.
pub fn run(cfg: DaemonConfig) -> u8 {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            return 1;
        }
    };
    match rt.block_on(main(cfg)) {
        Ok(()) => 0,
        Err(e) => {
            tracing::error!("mesh-host daemon failed: {e}");
            Notifier::from_env().status(&format!("failed: {e}"));
            1
        }
    }
}

async fn main(cfg: DaemonConfig) -> Result<(), String> {
    let notifier = Notifier::from_env();
    notifier.status("starting: connecting to the container runtime");
    let store = Store::open(&cfg.state_dir).map_err(|e| e.to_string())?;
    let runtime = connect_runtime(cfg.docker_host.as_deref()).await?;
    let owner = Owner::current().map_err(|e| e.to_string())?;
    let clock = Arc::new(SystemClock);
    let windows = Windows::new(store.clone(), runtime.clone(), clock.clone(), owner);
    let units = crate::systemd::units::for_runtime(&*runtime).await;
    let (shutdown_tx, shutdown) = watch::channel(false);
    let firer = Firer::new(runtime.clone(), windows.clone(), units, shutdown.clone());

    // 1. Windows a dead daemon left open are closed before anything else.
    notifier.status("starting: resuming windows left open");
    resume_windows(&windows, &notifier).await?;

    // 2. The scheduler runs from here on; the watchdog is fed from its loop.
    let watchdog = notifier.watchdog();
    let (scheduler, handle) = Scheduler::new(firer, clock, store.clone(), watchdog);
    let scheduler_task = tokio::spawn(scheduler.run(shutdown.clone()));

    let applier = crate::apply::units::with_systemd(
        Applier::new(store.clone(), runtime.clone(), windows.clone()),
        &cfg.unit_dir,
    )
    .await;
    let daemon = Arc::new(Daemon {
        applier,
        cfg: cfg.clone(),
        runtime,
        windows,
        scheduler: handle,
        applying: Mutex::new(()),
        declaration: Mutex::new(None),
        last_apply: std::sync::Mutex::new(None),
        applied: tokio::sync::Notify::new(),
        notifier: notifier.clone(),
    });

    // 3. Apply the declaration file, arm the schedules.
    notifier.status("starting: applying the declaration");
    daemon.apply_file().await;

    // 4. The control socket, then READY.
    let listener = server::bind(&cfg.control_socket)
        .map_err(|e| format!("cannot listen on {}: {e}", cfg.control_socket.display()))?;
    let (to_daemon, mut requests) = mpsc::channel::<Incoming>(32);
    let server_task = tokio::spawn(server::serve(
        listener,
        cfg.control_socket.clone(),
        to_daemon,
        shutdown.clone(),
    ));
    notifier.ready(&daemon.status_line().await);
    tokio::spawn(daemon.clone().status_loop(shutdown.clone()));

    let mut hup = signal(SignalKind::hangup()).map_err(|e| e.to_string())?;
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    let mut reconcile = tokio::time::interval(cfg.reconcile_interval);
    reconcile.tick().await;
    let mut reconciling: Option<tokio::task::JoinHandle<Option<ApplyReport>>> = None;
    loop {
        tokio::select! {
            _ = hup.recv() => {
                notifier.reloading();
                tracing::info!("reload: applying {}", cfg.declaration.display());
                daemon.apply_file().await;
                notifier.ready(&daemon.status_line().await);
            }
            _ = reconcile.tick() => {
                // One reconciliation at a time: a slow apply is not queued
                // behind by the next tick.
                if reconciling.as_ref().is_none_or(|t| t.is_finished()) {
                    let d = daemon.clone();
                    reconciling = Some(tokio::spawn(async move { d.apply_file().await }));
                } else {
                    tracing::info!("reconcile skipped: the previous one is still applying");
                }
            }
            Some(incoming) = requests.recv() => {
                let d = daemon.clone();
                tokio::spawn(async move {
                    let response = d.handle(incoming.request).await;
                    let _ = incoming.reply.send(response);
                });
            }
            _ = term.recv() => break,
            _ = int.recv() => break,
        }
    }
    // Running steps are stopped and their windows closed (each bounded by
    // the closing budget) before the scheduler returns.
    notifier.stopping("stopping: letting open windows close");
    tracing::info!("stopping: letting running steps end and their windows close");
    let _ = shutdown_tx.send(true);
    let _ = scheduler_task.await;
    // An apply in flight is let finish: cut short between removing and
    // creating a container, it would leave a service missing.
    let _applying = daemon.applying.lock().await;
    let _ = server_task.await;
    tracing::info!("stopped");
    Ok(())
}

/// Connect to the runtime, waiting for it a while (dockerd may start after us).
async fn connect_runtime(host: Option<&str>) -> Result<Arc<dyn ContainerRuntime>, String> {
    let deadline = tokio::time::Instant::now() + RUNTIME_WAIT;
    loop {
        match DockerRuntime::connect(host).await {
            Ok(rt) => return Ok(Arc::new(rt)),
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::warn!("{e}; trying again");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

async fn resume_windows(windows: &Windows, notifier: &Notifier) -> Result<(), String> {
    // Resuming may wait for a step still running (bounded by its timeout):
    // keep asking systemd for start-up time meanwhile.
    let resume = windows.resume();
    tokio::pin!(resume);
    let mut extend = tokio::time::interval(Duration::from_secs(30));
    let resumed = loop {
        tokio::select! {
            r = &mut resume => break r.map_err(|e| format!("window records: {e}"))?,
            _ = extend.tick() => notifier.extend_start(),
        }
    };
    for r in resumed {
        match r {
            Resumed::OwnerAlive { step } => {
                tracing::warn!(MESH_STEP = %step, "the window of {step} belongs to a live process; left to it")
            }
            Resumed::Closed { step, report, .. } | Resumed::Stale { step, report } => {
                tracing::info!(MESH_STEP = %step, "window of {step} closed on start-up: started {:?}", report.started)
            }
        }
    }
    Ok(())
}

impl Daemon {
    /// Apply the declaration file; a missing or refused file applies
    /// nothing (never "everything removed") and keeps the schedules armed
    /// from the last good declaration.
    async fn apply_file(&self) -> Option<ApplyReport> {
        let bytes = match std::fs::read(&self.cfg.declaration) {
            Ok(b) => b,
            Err(e) => {
                tracing::error!(
                    "cannot read {}: {e}; nothing applied",
                    self.cfg.declaration.display()
                );
                self.set_last(
                    false,
                    format!("cannot read {}", self.cfg.declaration.display()),
                );
                return None;
            }
        };
        match declaration::parse(&bytes) {
            Ok(decl) => Some(self.apply(decl).await),
            Err(refusal) => {
                tracing::error!(
                    "{} is refused, nothing applied:\n{refusal}",
                    self.cfg.declaration.display()
                );
                self.set_last(false, format!("{} refused", self.cfg.declaration.display()));
                None
            }
        }
    }

    async fn apply(&self, decl: Declaration) -> ApplyReport {
        let _serial = self.applying.lock().await;
        let report = self.applier.apply(&decl).await;
        if let Some(sync) = self.scheduler.sync(report.steps.clone()).await {
            tracing::info!(
                "schedules: {} kept, {} added, {} re-armed, {} dropped",
                sync.kept.len(),
                sync.added.len(),
                sync.rearmed.len(),
                sync.dropped.len()
            );
        }
        *self.declaration.lock().await = Some(decl);
        self.set_last(report.ok, report.summary());
        report
    }

    fn set_last(&self, ok: bool, summary: String) {
        let mut last = self.last_apply.lock().unwrap_or_else(|e| e.into_inner());
        *last = Some(LastApply {
            at: Utc::now(),
            ok,
            summary,
        });
        drop(last);
        self.applied.notify_one();
    }

    async fn handle(&self, request: Request) -> Response {
        match request {
            Request::Apply { declaration } => match declaration::parse(declaration.as_bytes()) {
                Err(refusal) => Response {
                    exit: 2,
                    text: format!("refused, {} problem(s):\n{refusal}", refusal.problems.len()),
                    json: serde_json::to_value(&refusal).unwrap_or_default(),
                },
                Ok(decl) => {
                    let report = self.apply(decl).await;
                    Response {
                        exit: if report.ok { 0 } else { 1 },
                        text: report.to_string(),
                        json: serde_json::to_value(&report).unwrap_or_default(),
                    }
                }
            },
            Request::Run { step } => match self.scheduler.run_now(&step).await {
                Ok(report) => Response {
                    exit: if report.ok() { 0 } else { 1 },
                    text: crate::cli::render_fire(&report),
                    json: serde_json::to_value(&report).unwrap_or_default(),
                },
                Err(e) => Response::error(
                    if e.contains("no scheduled step") {
                        2
                    } else {
                        1
                    },
                    e,
                ),
            },
            Request::Plan { step } => {
                let decl = self.declaration.lock().await.clone();
                let Some(decl) = decl else {
                    return Response::error(1, "nothing has been applied yet");
                };
                let found = match step::find(&decl, &step) {
                    Ok(s) => s,
                    Err(e) => return Response::error(2, e),
                };
                match plan::plan(&found, &*self.runtime, &self.windows).await {
                    Ok(p) => Response {
                        exit: 0,
                        text: p.render(),
                        json: serde_json::to_value(&p).unwrap_or_default(),
                    },
                    Err(e) => Response::error(1, e),
                }
            }
            Request::Status => {
                let steps = self.scheduler.status().await.unwrap_or_default();
                // Unreadable window records are an answer of their own,
                // never "no window open".
                let windows = match self.windows.live_records() {
                    Ok(w) => w,
                    Err(e) => return Response::error(1, format!("window records unreadable: {e}")),
                };
                let last = self
                    .last_apply
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                let json = serde_json::json!({
                    "last-apply": last.as_ref().map(|l| serde_json::json!({
                        "at": l.at, "ok": l.ok, "summary": l.summary })),
                    "steps": steps,
                    "open-windows": windows,
                });
                Response {
                    exit: 0,
                    text: crate::cli::render_status(&json),
                    json,
                }
            }
        }
    }

    /// The one-line `STATUS=`: last apply, schedules and next fire, windows.
    async fn status_line(&self) -> String {
        let steps = self.scheduler.status().await.unwrap_or_default();
        self.status_line_of(&steps)
    }

    /// The `STATUS=` line for these steps' state.
    fn status_line_of(&self, steps: &[crate::schedule::scheduler::StepStatus]) -> String {
        let last = self
            .last_apply
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let apply = match last {
            Some(l) => format!(
                "last apply {} {}",
                l.at.format("%Y-%m-%d %H:%M:%S UTC"),
                if l.ok { "ok" } else { "FAILED" }
            ),
            None => "no apply yet".to_string(),
        };
        let next = steps
            .iter()
            .filter_map(|s| s.next_fire.map(|t| (t, s.step.clone())))
            .min();
        let schedules = match next {
            Some((t, step)) => format!(
                "{} schedule(s), next {step} at {}",
                steps.len(),
                t.format("%Y-%m-%d %H:%M UTC")
            ),
            None => format!("{} schedule(s)", steps.len()),
        };
        let windows = match self.windows.live_records() {
            Ok(w) if w.is_empty() => "no window open".to_string(),
            Ok(w) => format!(
                "OPEN WINDOW: {}",
                w.iter()
                    .map(|r| format!(
                        "{} holds {}",
                        r.step,
                        r.held_names().collect::<Vec<_>>().join(",")
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            Err(e) => format!("window records unreadable: {e}"),
        };
        format!("{apply}; {schedules}; {windows}")
    }

    /// Keep `STATUS=` current and watch for stale steps: woken by a change
    /// (an apply, a fire beginning or ending, a window record written or
    /// erased by any process) or when a step would turn stale, never on a
    /// timer otherwise.
    async fn status_loop(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        let mut sent = String::new();
        let mut stale = crate::schedule::stale::StaleWatch::default();
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
            let Some(steps) = self.scheduler.status().await else {
                return;
            };
            let line = self.status_line_of(&steps);
            if line != sent {
                self.notifier.status(&line);
                sent = line;
            }
            let now = Utc::now();
            stale.check(&steps, now);
            let stale_at = stale.next_check(&steps);
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
                        crate::schedule::timer::sleep_until(Some(at), now).await;
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
