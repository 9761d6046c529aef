//! The tickets of `systemctl reload` requests: each request takes one,
//! the reload worker ([`super::reload`]) marks those its apply serves, and
//! `mesh-host reload` waits for its own to be served.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{mpsc, watch};

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

    /// A reload begins (before it reads the file): it serves every
    /// ticket given so far, up to the one returned.
    pub(super) fn begin(&self) -> u64 {
        let serves = self.asked.load(Ordering::SeqCst);
        self.begun.store(serves, Ordering::SeqCst);
        serves
    }

    /// The reload that began with [`Reloads::begin`]'s `serves` has ended.
    pub(super) fn end(&self, serves: u64) {
        self.done.send_replace(serves);
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
