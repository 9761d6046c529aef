//! Watching a fire's unit for an operator's stop (`systemctl stop`), so
//! that none is ever missed.
//!
//! A stop shows as a job on the unit (systemd's `JobNew`, listened to
//! before the unit exists). Its type cannot always be read: a scope that
//! holds nothing but its keeper (the fire's window still opening, its
//! container not started) is stopped in a millisecond, and the job is
//! gone before anyone asks. So what decides is what cannot be missed: the
//! unit's own state, read from systemd after any job on it. A unit gone,
//! not active, or that entered `inactive` since the fire made it
//! (`InactiveEnterTimestampMonotonic` past the fire's baseline: a slice
//! stopped and made active again by the runtime's next scope in it) was
//! stopped. From the unit made until its container starts, its removal
//! (`UnitRemoved`: a scope whose keeper was killed) is a stop too, once
//! systemd confirms the unit gone (a `daemon-reload` removes and makes
//! again every unit); after, only a job says stop (the unit outlives the
//! container until the fire ends it, [`crate::systemd::units`]).
//!
//! The fire also asks the same question of systemd itself
//! ([`unit_left`]) right before its container's start: a stop whose
//! signals are not handled yet is then seen, and the step does not run. A
//! stop landing during the start itself is seen by the watch (its job), and
//! the container is ended at once, so that it never runs on outside its
//! unit. (Asked after the start, the unit's state could not tell a stop
//! from a run that ended at once.)

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use futures_util::StreamExt;

/// What a fire keeps of the watch on its unit: the task (ended with the
/// fire), whether the container's processes are in the unit, and the
/// unit's `InactiveEnterTimestampMonotonic` when the fire made it.
#[derive(Debug)]
pub struct StopWatch {
    _task: crate::task::AbortOnDrop,
    running: Arc<AtomicBool>,
    baseline: Arc<AtomicU64>,
}

/// No baseline read yet: the unit is still being made.
const UNSET: u64 = u64::MAX;

impl StopWatch {
    /// The container's processes are in the unit now: its end alone (a
    /// scope emptied) is no stop any more.
    pub fn running(&self) {
        self.running.store(true, Ordering::SeqCst);
    }

    /// The unit is made: any later entry into `inactive` is a stop.
    pub fn set_baseline(&self, inactive_enter: u64) {
        self.baseline.store(inactive_enter, Ordering::SeqCst);
    }

    /// The baseline set, if any.
    pub fn baseline(&self) -> Option<u64> {
        match self.baseline.load(Ordering::SeqCst) {
            UNSET => None,
            b => Some(b),
        }
    }
}

/// Watch `unit` for a stop: say so on the returned channel and, when
/// `kill_after_grace`, kill whatever it still holds once `grace` has
/// passed (a slice, whose runtime scopes keep systemd's 90 s). Listening
/// starts before this returns, so no stop made after it is missed.
pub async fn watch(
    conn: &zbus::Connection,
    unit: &str,
    kill_after_grace: Option<std::time::Duration>,
) -> Result<(StopWatch, tokio::sync::watch::Receiver<bool>), String> {
    let manager = zbus_systemd::systemd1::ManagerProxy::new(conn)
        .await
        .map_err(|e| format!("systemd manager: {e}"))?;
    let mut jobs = manager
        .receive_job_new()
        .await
        .map_err(|e| format!("systemd JobNew: {e}"))?;
    let mut removals = manager
        .receive_unit_removed()
        .await
        .map_err(|e| format!("systemd UnitRemoved: {e}"))?;
    let conn = conn.clone();
    let name = unit.to_string();
    let running = Arc::new(AtomicBool::new(false));
    let baseline = Arc::new(AtomicU64::new(UNSET));
    let (tx, rx) = tokio::sync::watch::channel(false);
    let (in_unit, since) = (running.clone(), baseline.clone());
    let task = tokio::spawn(async move {
        // Both streams are read on at all times, each signal of another
        // unit dropped at once, and the questions to systemd a signal of
        // this unit raises asked beside them: a stream left unread fills
        // the connection's queue, and then no answer comes in on it for
        // anyone (the fire's own calls to systemd included).
        let mut checks = futures_util::stream::FuturesUnordered::new();
        loop {
            tokio::select! {
                Some(signal) = jobs.next() => {
                    let Ok(args) = signal.args() else { continue };
                    if args.unit != name {
                        continue;
                    }
                    let (conn, name, job) = (conn.clone(), name.clone(), args.job.clone());
                    let baseline = since.load(Ordering::SeqCst);
                    checks.push(Box::pin(async move {
                        is_stop(&conn, job, &name, baseline).await
                    }) as Check);
                }
                Some(signal) = removals.next() => {
                    let Ok(args) = signal.args() else { continue };
                    // The fire's own end of the unit comes after its
                    // container's start; a `daemon-reload` removes every
                    // unit for a moment: systemd, asked once it answers
                    // again, tells. Before the fire has made the unit (no
                    // baseline yet), a removal is of an earlier life of it
                    // (a step's idle slice stopped to start it new): a stop
                    // then is seen by its job.
                    let baseline = since.load(Ordering::SeqCst);
                    if args.id != name || baseline == UNSET || in_unit.load(Ordering::SeqCst) {
                        continue;
                    }
                    let (conn, name) = (conn.clone(), name.clone());
                    checks.push(Box::pin(async move {
                        unit_left(&conn, &name, Some(baseline)).await
                    }) as Check);
                }
                Some(stopped) = checks.next(), if !checks.is_empty() => {
                    if stopped {
                        break;
                    }
                }
                else => return,
            }
        }
        // Nothing more is read: the streams go before the wait below.
        drop((jobs, removals, checks));
        tracing::info!("{name} is being stopped (systemctl stop): ending the run");
        let _ = tx.send(true);
        let Some(grace) = kill_after_grace else {
            return;
        };
        tokio::time::sleep(grace).await;
        // Still there after the grace: what a stop of our own scope
        // does at this point (SIGKILL).
        match manager
            .kill_unit(name.clone(), "all".to_string(), SIGKILL)
            .await
        {
            Ok(()) => tracing::info!(
                "{name} was stopped and still held processes after {grace:?}: killed them"
            ),
            // Nothing left to kill: the stop ended it all in time.
            Err(e) => tracing::debug!("{name}: nothing killed after the stop grace: {e}"),
        }
    });
    Ok((
        StopWatch {
            _task: crate::task::AbortOnDrop::new(&task),
            running,
            baseline,
        },
        rx,
    ))
}

/// A question to systemd a signal of the watched unit raises: was it a stop?
type Check = std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send>>;

/// What ends processes that outlive the grace.
const SIGKILL: i32 = 9;

/// Whether the job at `path`, on `unit`, stopped it: a stop or restart job
/// when its type can still be read; otherwise (it is done and gone) what
/// the unit's state says now ([`unit_left`]).
async fn is_stop(
    conn: &zbus::Connection,
    path: zbus::OwnedObjectPath,
    unit: &str,
    baseline: u64,
) -> bool {
    let job = zbus_systemd::systemd1::JobProxy::builder(conn)
        .path(path)
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await;
    if let Ok(job) = job {
        if let Ok(kind) = job.job_type().await {
            return matches!(kind.as_str(), "stop" | "restart");
        }
    }
    let baseline = (baseline != UNSET).then_some(baseline);
    unit_left(conn, unit, baseline).await
}

/// Whether `unit` has left the active state since the fire made it: gone
/// (collected), not active now, or entered `inactive` after `baseline`
/// (its `InactiveEnterTimestampMonotonic` when the fire made it). Asked of
/// systemd, so a stop whose job and signals are long gone is still seen.
/// An answer that cannot be had is no stop.
pub async fn unit_left(conn: &zbus::Connection, unit: &str, baseline: Option<u64>) -> bool {
    let manager = match zbus_systemd::systemd1::ManagerProxy::new(conn).await {
        Ok(m) => m,
        Err(_) => return false,
    };
    let path = match manager.get_unit(unit.to_string()).await {
        Ok(path) => path,
        Err(zbus::Error::MethodError(name, _, _))
            if name.as_str() == "org.freedesktop.systemd1.NoSuchUnit" =>
        {
            return true
        }
        Err(_) => return false,
    };
    let Ok(proxy) = zbus_systemd::systemd1::UnitProxy::builder(conn)
        .path(path)
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await
    else {
        return false;
    };
    if let Ok(state) = proxy.active_state().await {
        if !matches!(state.as_str(), "active" | "activating" | "reloading") {
            return true;
        }
    }
    match (baseline, proxy.inactive_enter_timestamp_monotonic().await) {
        (Some(before), Ok(now)) => now > before,
        _ => false,
    }
}

/// `InactiveEnterTimestampMonotonic` of `unit` now (0 when it never was
/// inactive, or cannot be read): a fire's baseline.
pub async fn inactive_enter(conn: &zbus::Connection, unit: &str) -> u64 {
    let read = async {
        let manager = zbus_systemd::systemd1::ManagerProxy::new(conn).await.ok()?;
        let path = manager.get_unit(unit.to_string()).await.ok()?;
        let proxy = zbus_systemd::systemd1::UnitProxy::builder(conn)
            .path(path)
            .cache_properties(zbus::proxy::CacheProperties::No)
            .build()
            .await
            .ok()?;
        proxy.inactive_enter_timestamp_monotonic().await.ok()
    };
    read.await.unwrap_or(0)
}
