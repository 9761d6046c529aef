//! How a fire's run ends: the container's exit, its timeout, a stop of its
//! unit, the host stopping; and a stop of its unit that landed in the
//! instant before the container's start (systemd/stop_watch.rs): before
//! it, the step does not run; seen just after, the container is ended at
//! once.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::runtime::ContainerRuntime;
use crate::schedule::outcome::RunOutcome;
use crate::systemd::units::{StepUnits, UnitLook};
use crate::window::close_budget;

/// Whether the fire's unit was stopped before its container starts: its
/// watch says so, or systemd, asked now of `look`, says the unit left the
/// active state since the fire made it (a stop whose job was gone before
/// its type could be read: systemd/stop_watch.rs).
pub(super) async fn stopped_before_start(
    units: &dyn StepUnits,
    look: Option<UnitLook>,
    stop: &Option<watch::Receiver<bool>>,
) -> bool {
    if stop.as_ref().is_some_and(|rx| *rx.borrow()) {
        return true;
    }
    match &look {
        Some(look) => units.stopped_since_begin(look).await,
        None => false,
    }
}

/// Whether the fire's unit was stopped as its container started (its
/// watch says so, seen between the look before the start and now): then
/// the container is killed at once, so that it never runs on outside its
/// unit (a scope stopped before its processes were in it), and its exit
/// status and whether it is confirmed ended are returned.
pub(super) async fn stopped_as_it_started(
    runtime: &dyn ContainerRuntime,
    stop: &Option<watch::Receiver<bool>>,
    name: &str,
    step: &str,
) -> Option<(Option<i64>, Result<(), String>)> {
    if !stop.as_ref().is_some_and(|rx| *rx.borrow()) {
        return None;
    }
    tracing::warn!(
        MESH_STEP = %step,
        "the unit of {name} was stopped as its container started: ending it at once"
    );
    if let Err(e) = runtime.kill(name).await {
        tracing::warn!(MESH_STEP = %step, "cannot kill {name}: {e}");
    }
    let ended =
        crate::runtime::stop_confirmed(runtime, name, Instant::now() + close_budget()).await;
    Some((ended.as_ref().ok().copied().flatten(), ended.map(|_| ())))
}

/// Wait for the run to end: its exit, its timeout, a stop of its unit, or
/// the host shutting down. Also says whether the exit was seen.
pub(super) async fn wait_run(
    runtime: &dyn ContainerRuntime,
    shutdown: &mut watch::Receiver<bool>,
    stop_requested: Option<watch::Receiver<bool>>,
    name: &str,
    timeout: Option<Duration>,
) -> (RunOutcome, bool) {
    let deadline = async {
        match timeout {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    let stopping = async {
        // Resolves when shutdown turns true (or its sender is gone).
        let _ = shutdown.wait_for(|s| *s).await;
    };
    let unit_stopped = async {
        match stop_requested {
            Some(mut rx) => {
                if rx.wait_for(|s| *s).await.is_err() {
                    // The unit's watch ended without a stop: never.
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        exit = runtime.wait_exit(name) => match exit {
            Ok(0) => (RunOutcome::Succeeded, true),
            Ok(status) => (RunOutcome::Exited { status }, true),
            Err(e) => (RunOutcome::Error { reason: format!("lost track of {name}: {e}; it was stopped") }, false),
        },
        () = deadline => (RunOutcome::TimedOut { status: crate::runtime::stop_run(runtime, name).await }, false),
        () = unit_stopped => {
            tracing::info!("the unit of {name} was stopped: stopping the run (SIGTERM, SIGKILL after its grace)");
            (RunOutcome::Stopped { status: crate::runtime::stop_run(runtime, name).await }, false)
        }
        () = stopping => (RunOutcome::Interrupted { status: crate::runtime::stop_run(runtime, name).await }, false),
    }
}
