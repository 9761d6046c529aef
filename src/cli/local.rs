//! Commands that work in this process (`--local`): the same lock, window
//! records and fire path as the daemon, for nodes where no daemon runs.

use std::sync::Arc;

use tokio::sync::watch;

use super::{Cli, EXIT_FAILED, EXIT_REFUSED};
use crate::answer::{Answer, Failure};
use crate::clock::SystemClock;
use crate::declaration::Declaration;
use crate::runtime::{ContainerRuntime, DockerRuntime};
use crate::schedule::fire::Firer;
use crate::schedule::step;
use crate::schedule::step::ScheduledStep;
use crate::store::Store;
use crate::window::{Owner, Windows};

/// What a local command works with.
#[derive(Debug)]
pub struct LocalHost {
    /// The state directory.
    pub store: Store,
    /// The container runtime.
    pub runtime: Arc<dyn ContainerRuntime>,
    /// The window engine.
    pub windows: Windows,
}

impl LocalHost {
    /// Open the state directory and connect to the runtime.
    pub async fn open(cli: &Cli) -> Result<LocalHost, String> {
        let store = Store::open(&cli.state_dir).map_err(|e| e.to_string())?;
        let runtime: Arc<dyn ContainerRuntime> = Arc::new(
            DockerRuntime::connect(cli.docker_host.as_deref())
                .await
                .map_err(|e| crate::runtime::explain(&e))?,
        );
        let owner = Owner::current().map_err(|e| e.to_string())?;
        let windows = Windows::new(
            store.clone(),
            runtime.clone(),
            Arc::new(SystemClock::new()),
            owner,
        );
        Ok(LocalHost {
            store,
            runtime,
            windows,
        })
    }

    /// Open the host and first finish windows whose owner process died
    /// ([`Windows::resume`]): on a node with no daemon, the next local
    /// command closes them. Errors are printed; the exit code is returned.
    pub async fn ready(cli: &Cli) -> Result<LocalHost, u8> {
        let host = LocalHost::open(cli).await.map_err(|msg| {
            crate::errln!("mesh-host: {msg}");
            EXIT_FAILED
        })?;
        host.windows.resume().await.map_err(|e| {
            crate::errln!("mesh-host: cannot read window records, nothing was done: {e}");
            EXIT_FAILED
        })?;
        // Output a gone owner owed to the journal: what is there now is
        // forwarded (a container still running stays owed, for the next).
        let forwards = crate::schedule::forward::Forwards::of(&host.store);
        let owner = host.windows.owner().clone();
        for task in crate::schedule::forward::resume(host.runtime.clone(), &forwards, &owner, false)
        {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(30), task).await;
        }
        Ok(host)
    }
}

/// The declared step `step_id` of the declaration file, or why there is
/// none (refused: the command named what is not there).
pub fn load_step(cli: &Cli, step_id: &str) -> Result<ScheduledStep, Failure> {
    let decl = load_declaration(cli).map_err(|(_, msg)| Failure::refused(msg))?;
    step::find(&decl, step_id).map_err(Failure::refused)
}

/// Run an async command body on a fresh tokio runtime.
pub fn block_on<F: std::future::Future<Output = u8>>(fut: F) -> u8 {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(fut),
        Err(e) => {
            crate::errln!("mesh-host: cannot start the async runtime: {e}");
            EXIT_FAILED
        }
    }
}

/// The declaration a local command works from: the node's (the
/// `--declaration` file, which `apply FILE` installs).
pub fn load_declaration(cli: &Cli) -> Result<Declaration, (u8, String)> {
    crate::apply::node_declaration::read(&cli.declaration)
        .map_err(|e| (EXIT_REFUSED, e.to_string()))
}

/// A watch that turns true on SIGINT or SIGTERM.
pub fn shutdown_on_signal() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => return,
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        let _ = tx.send(true);
    });
    rx
}

/// `mesh-host run STEP --local`: a suspended step only with `force`; on
/// a terminal with its phases, and with `follow` its output.
pub fn run_step(cli: &Cli, step_id: &str, force: bool, follow: bool, json: bool) -> u8 {
    block_on(async {
        let step = match load_step(cli, step_id) {
            Ok(s) => s,
            Err(f) => return super::output::print_failure(&f, json),
        };
        if !force {
            let suspended = Store::open(&cli.state_dir)
                .map_err(|e| e.to_string())
                .and_then(|store| crate::schedule::suspend::load(&store));
            match suspended.map(|s| s.since(step_id)) {
                Ok(None) => {}
                // Said as the daemon says it, `--json` or not.
                Ok(Some(since)) => {
                    return super::output::print_failure(
                        &Failure::refused(crate::schedule::suspend::refusal(step_id, since)),
                        json,
                    );
                }
                Err(e) => {
                    return super::output::print_failure(
                        &Failure::failed(format!(
                            "cannot tell whether {step_id} is suspended: {e}"
                        )),
                        json,
                    );
                }
            }
        }
        let host = match LocalHost::ready(cli).await {
            Ok(h) => h,
            Err(code) => return code,
        };
        let image = &step.def.spec.image;
        match host.runtime.image_present(image).await {
            Ok(true) => {}
            Ok(false) => {
                if let Err(e) = host.runtime.pull(image).await {
                    crate::errln!("mesh-host: cannot pull {image}: {e}");
                    return EXIT_FAILED;
                }
            }
            Err(e) => {
                crate::errln!("mesh-host: {e}");
                return EXIT_FAILED;
            }
        }
        let units = crate::systemd::units::for_runtime(&*host.runtime).await;
        // Windows of gone owners were just taken over: a scope one of
        // them left holding only its keeper goes too.
        units.stop_orphans().await;
        let firer = Firer::new(
            host.runtime.clone(),
            host.windows.clone(),
            units,
            shutdown_on_signal(),
        );
        let mut follower = None;
        let followed = if follow {
            match super::logs::follow(cli, step_id) {
                Ok((f, events)) => {
                    follower = Some(f);
                    Some(super::progress::Followed::new(events))
                }
                Err(e) => {
                    crate::errln!("mesh-host: the step's output will not be shown: {e}");
                    None
                }
            }
        } else {
            None
        };
        let (reporter, rx) = crate::progress::Reporter::channel();
        let mut view = super::progress::View::run(step_id, std::time::Instant::now());
        let report = super::progress::show(
            super::progress::style(json),
            &mut view,
            rx,
            followed,
            firer.fire_reporting(&step.def, chrono::Utc::now(), &reporter),
            |_| true,
        )
        .await;
        drop(follower);
        super::output::print_response(&report.response(), json)
    })
}

/// `mesh-host plan STEP --local`.
pub fn plan_step(cli: &Cli, step_id: &str, json: bool) -> u8 {
    block_on(async {
        let step = match load_step(cli, step_id) {
            Ok(s) => s,
            Err(f) => return super::output::print_failure(&f, json),
        };
        let host = match LocalHost::open(cli).await {
            Ok(h) => h,
            Err(msg) => {
                crate::errln!("mesh-host: {msg}");
                return EXIT_FAILED;
            }
        };
        let planned = crate::schedule::plan::plan(&step, &*host.runtime, &host.windows)
            .await
            .map(|mut plan| {
                plan.suspended_since =
                    crate::schedule::suspend::load_or_none(&host.store).since(step_id);
                plan
            })
            .map_err(|e| Failure::failed(e.to_string()));
        super::output::print_local(&planned, json)
    })
}
