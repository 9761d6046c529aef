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
//! Each request takes a ticket ([`Reloads`]); the worker notes the last
//! ticket given before it reads the file and, when its apply ends, marks
//! every ticket up to it done. `mesh-host reload` (the unit's
//! `ExecReload=`) waits for its ticket: systemd 252 ends a reload job when
//! `ExecReload=` exits, whatever the daemon says after, so a bare
//! `kill -HUP` let `systemctl reload` return before anything was applied.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::notify::Notifier;
use super::Daemon;

/// How often systemd is asked for more time while an apply runs at start
/// or reload (each request asks for [`super::notify::EXTEND_BY`]).
const EXTEND_EVERY: Duration = Duration::from_secs(30);

/// Reloads asked for and done, by ticket.
pub(super) struct Reloads {
    /// The last ticket given.
    asked: AtomicU64,
    /// Every ticket up to this one is served by the reload that has begun
    /// (it read the file after they were given).
    begun: AtomicU64,
    /// Every ticket up to this one is served by a reload that has ended.
    done: watch::Sender<u64>,
    to_worker: mpsc::Sender<()>,
}

impl Reloads {
    /// The requests' side, and the worker's receiver.
    pub(super) fn new() -> (Reloads, mpsc::Receiver<()>) {
        // One queued reload serves every request made before it reads the
        // file.
        let (to_worker, queued) = mpsc::channel(1);
        let reloads = Reloads {
            asked: AtomicU64::new(0),
            begun: AtomicU64::new(0),
            done: watch::channel(0).0,
            to_worker,
        };
        (reloads, queued)
    }

    /// Queue a reload for the worker; its ticket.
    pub(super) fn request(&self) -> u64 {
        let ticket = self.asked.fetch_add(1, Ordering::SeqCst) + 1;
        if self.to_worker.try_send(()).is_err() {
            tracing::info!("reload: one is queued already; it reads the file after this request");
        }
        ticket
    }

    /// Once a reload that read the file after `ticket` was given has
    /// ended: `Served`. A stop that comes while that reload's apply runs
    /// waits for it (the stopping daemon lets the apply end anyway); one
    /// that comes before it began means it never will: `Overtaken`.
    pub(super) async fn served(&self, ticket: u64, mut shutdown: watch::Receiver<bool>) -> Served {
        let mut done = self.done.subscribe();
        tokio::select! {
            r = done.wait_for(|d| *d >= ticket) => {
                if r.is_ok() { return Served::Served }
            }
            _ = shutdown.wait_for(|s| *s) => {}
        }
        if self.begun.load(Ordering::SeqCst) < ticket {
            return Served::Overtaken;
        }
        let served = done.wait_for(|d| *d >= ticket).await.is_ok();
        if served {
            Served::Served
        } else {
            Served::Overtaken
        }
    }
}

/// How a reload request ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Served {
    /// A reload that read the file after the request has ended.
    Served,
    /// The daemon began to stop before any such reload began: none will.
    Overtaken,
}

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
        let serves = daemon.reloads.asked.load(Ordering::SeqCst);
        daemon.reloads.begun.store(serves, Ordering::SeqCst);
        tracing::info!("reload: applying {}", daemon.cfg.declaration.display());
        daemon.notifier.status(&format!(
            "reloading: applying {}",
            daemon.cfg.declaration.display()
        ));
        extended(&daemon.notifier, daemon.apply_file(super::Trigger::Reload)).await;
        daemon.reloads.done.send_replace(serves);
        if queued.is_empty() && !*shutdown.borrow() {
            daemon.notifier.ready(&daemon.status_line().await);
            tracing::info!("reload finished");
        }
    }
}
