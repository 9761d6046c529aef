//! The daemon's keeper of output owed to the journal
//! (src/schedule/forward.rs): at its start it takes over every debt whose
//! owner is gone (a daemon SIGKILLed mid-step, the one that handed over at
//! an upgrade), and later each debt whose owner dies (a local command, an
//! installer's apply), and forwards it, following the container to its
//! end. Like the window adopter it sleeps on the kernel: an inotify watch
//! on the debts' directory and a pidfd of each live foreign owner; an idle
//! daemon with nothing owed is not woken.

use std::collections::BTreeSet;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use tokio::io::unix::AsyncFd;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::runtime::ContainerRuntime;
use crate::schedule::forward::{resume_one, Forwards};
use crate::window::Owner;

/// How often a foreign owner without a pidfd is looked at again.
const OWNER_POLL: std::time::Duration = std::time::Duration::from_secs(5);

/// See the module documentation.
#[derive(Debug)]
pub struct Keeper {
    runtime: Arc<dyn ContainerRuntime>,
    forwards: Forwards,
    owner: Owner,
}

impl Keeper {
    /// A keeper of `forwards`, forwarding as `owner` (the daemon).
    pub fn new(runtime: Arc<dyn ContainerRuntime>, forwards: Forwards, owner: Owner) -> Self {
        Keeper {
            runtime,
            forwards,
            owner,
        }
    }

    /// Run until `shutdown` turns true; what is being forwarded then stays
    /// owed, for the next mesh-host.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        if self.runtime.journals_output() {
            // The runtime writes the output itself: nothing is ever owed.
            return;
        }
        if let Err(e) = crate::store::ensure_dir(self.forwards.dir()) {
            tracing::warn!("cannot watch output owed to the journal: {e}");
            return;
        }
        let inotify = match crate::wake::watch_dir(self.forwards.dir()) {
            Ok(fd) => Some(fd),
            Err(e) => {
                tracing::warn!(
                    "cannot watch {} ({e}); looking every {}s",
                    self.forwards.dir().display(),
                    OWNER_POLL.as_secs()
                );
                None
            }
        };
        let mut busy: BTreeSet<String> = BTreeSet::new();
        let mut tasks: JoinSet<String> = JoinSet::new();
        loop {
            let owners = self.take_over(&mut busy, &mut tasks).await;
            let poll = inotify.is_none() || owners.iter().any(Option::is_none);
            let pidfds: Vec<&AsyncFd<OwnedFd>> = owners.iter().flatten().collect();
            tokio::select! {
                _ = shutdown.wait_for(|s| *s) => break,
                ready = crate::wake::readable(inotify.as_ref()) => {
                    if let Err(e) = ready {
                        tracing::warn!("watch of output owed to the journal: {e}");
                    }
                }
                _ = crate::wake::first_exited(&pidfds) => {}
                Some(done) = tasks.join_next() => {
                    if let Ok(fire) = done {
                        busy.remove(&fire);
                    }
                }
                () = tokio::time::sleep(OWNER_POLL), if poll => {}
            }
        }
        tasks.abort_all();
    }

    /// Take over what is owed by owners that are gone and forward each on
    /// a task of its own; a pidfd of each live foreign owner (`None` where
    /// none could be had), to be woken at its death.
    async fn take_over(
        &self,
        busy: &mut BTreeSet<String>,
        tasks: &mut JoinSet<String>,
    ) -> Vec<Option<AsyncFd<OwnedFd>>> {
        let forwards = self.forwards.clone();
        let owner = self.owner.clone();
        let claimed = tokio::task::spawn_blocking(move || forwards.claim_orphans(&owner))
            .await
            .unwrap_or_default();
        for owed in claimed {
            if !busy.insert(owed.fire.clone()) {
                continue;
            }
            let (runtime, forwards) = (self.runtime.clone(), self.forwards.clone());
            tasks.spawn(async move {
                let fire = owed.fire.clone();
                resume_one(runtime, forwards, owed, true).await;
                fire
            });
        }
        let mut pids = BTreeSet::new();
        self.forwards
            .all()
            .into_iter()
            .filter(|o| o.pid != self.owner.pid && pids.insert(o.pid))
            .map(|o| crate::wake::open_pidfd(o.pid).ok())
            .collect()
    }
}
