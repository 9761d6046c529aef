//! `systemctl reload` (SIGHUP): the node's declaration applied again, off
//! the main loop.
//!
//! The main loop only sends `RELOADING=1` (with `MONOTONIC_USEC`) and hands
//! the reload to [`worker`], so SIGTERM and control requests are answered
//! while the apply runs. The worker applies through the daemon's one apply
//! path (one apply at a time, reconciles and `apply FILE` included), keeps
//! asking systemd for time while it runs (`EXTEND_TIMEOUT_USEC`), and sends
//! `READY=1` when no other reload is queued. A SIGHUP that arrives during a
//! reload queues one more (the file may have changed after it was read);
//! further ones are folded into that one.
//!
//! Each request takes a ticket ([`super::reload_tickets::Reloads`]); the worker notes the last
//! ticket given before it reads the file and, when its apply ends, marks
//! every ticket up to it done. `mesh-host reload` (the unit's
//! `ExecReload=`) waits for its ticket: systemd 252 ends a reload job when
//! `ExecReload=` exits, whatever the daemon says after, so a bare
//! `kill -HUP` let `systemctl reload` return before anything was applied.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::notify::Notifier;
use super::shared::{Daemon, Trigger};

/// How often systemd is asked for more time while an apply runs at start
/// or reload (each request asks for [`super::notify::EXTEND_BY`]).
const EXTEND_EVERY: Duration = Duration::from_secs(30);

/// Run `work`, asking systemd for more start-up or reload time every
/// [`EXTEND_EVERY`] until it ends.
pub(super) async fn extended<T>(notifier: &Notifier, work: impl Future<Output = T>) -> T {
    tokio::pin!(work);
    let mut extend = tokio::time::interval(EXTEND_EVERY);
    loop {
        tokio::select! {
            out = &mut work => return out,
            _ = extend.tick() => notifier.extend_timeout(),
        }
    }
}

/// Apply the declaration once per queued reload, then say `READY=1`.
pub(super) async fn worker(
    daemon: Arc<Daemon>,
    mut queued: mpsc::Receiver<()>,
    mut shutdown: watch::Receiver<bool>,
) {
    while queued.recv().await.is_some() {
        // Waiting behind a reconcile or an `apply`: a SIGTERM meanwhile
        // means no more applies (the stopping daemon waits for the lock).
        tokio::select! {
            _ = daemon.applying.lock() => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
        if *shutdown.borrow() {
            return;
        }
        // Every ticket given so far was given before the file is read.
        let serves = daemon.reloads.begin();
        tracing::info!("reload: applying {}", daemon.cfg.declaration.display());
        daemon.notifier.status(&format!(
            "reloading: applying {}",
            daemon.cfg.declaration.display()
        ));
        extended(&daemon.notifier, daemon.apply_file(Trigger::Reload)).await;
        daemon.reloads.end(serves);
        if queued.is_empty() && !*shutdown.borrow() {
            daemon.notifier.ready(&daemon.status_line().await);
            tracing::info!("reload finished");
        }
    }
}
