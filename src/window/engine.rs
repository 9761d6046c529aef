//! What every act on the windows of one process shares: the records, the
//! runtime, the clock, the owner, where alerts go, the lease renewer, the
//! restorer of late stops, and how the armed declaration declares each held
//! container. Each act is carried out by the type of its concept
//! (`open.rs`, `close.rs`, `takeover.rs`, ...), given this.

use std::sync::{Arc, RwLock};

use crate::clock::Clock;
use crate::runtime::{ContainerRuntime, ContainerSpec};
use crate::store::Store;

use super::alerts::Alerter;
use super::lease::Renewer;
use super::owner::Owner;
use super::plan::Specs;
use super::record::Moment;
use super::records::Records;
use super::restore::Restorer;
use super::watch_task::Quitting;

/// The shared parts of one process's window engine. Cheap to clone: clones
/// share what they know (the armed declaration's holds, the lease renewer).
#[derive(Debug, Clone)]
pub(super) struct Engine {
    pub(super) store: Store,
    pub(super) records: Records,
    pub(super) runtime: Arc<dyn ContainerRuntime>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) owner: Owner,
    pub(super) alerts: Alerter,
    pub(super) renewer: Renewer,
    pub(super) restorer: Restorer,
    /// Turns true when the process is stopping: a taken-over window's step
    /// is then stopped rather than waited for, so its window still closes.
    pub(super) stopping: Option<tokio::sync::watch::Receiver<bool>>,
    /// The spec of every container the armed declaration's steps hold, by
    /// name ([`crate::window::Windows::know_held_specs`]).
    pub(super) known_specs: Arc<RwLock<Specs>>,
    /// The watchers of windows dropped unclosed, finishing what they do.
    pub(super) quitting: Quitting,
}

impl Engine {
    /// An engine over this store and runtime, owned by `owner`.
    pub(super) fn new(
        store: Store,
        runtime: Arc<dyn ContainerRuntime>,
        clock: Arc<dyn Clock>,
        owner: Owner,
    ) -> Self {
        let records = Records::of(&store);
        let alerts = Alerter::new(store.clone());
        Engine {
            renewer: Renewer::new(records.clone(), clock.clone(), owner.clone()),
            restorer: Restorer::new(
                records.clone(),
                runtime.clone(),
                alerts.clone(),
                owner.boot_id.clone(),
            ),
            store,
            records,
            runtime,
            clock,
            owner,
            alerts,
            stopping: None,
            known_specs: Arc::default(),
            quitting: Quitting::default(),
        }
    }

    /// How `name` is declared, from the opener's plan or else from the
    /// armed declaration.
    pub(super) fn held_spec(&self, name: &str, specs: &Specs) -> Option<Arc<ContainerSpec>> {
        specs.get(name).cloned().or_else(|| {
            self.known_specs
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .get(name)
                .cloned()
        })
    }

    /// Resolves once the process is stopping; never without a signal.
    pub(super) async fn until_stopping(&self) {
        match self.stopping.clone() {
            Some(mut rx) => {
                let _ = rx.wait_for(|s| *s).await;
            }
            None => std::future::pending().await,
        }
    }

    /// Now, as records are measured.
    pub(super) fn moment(&self) -> Moment {
        Moment {
            wall: self.clock.now(),
            boot_id: self.owner.boot_id.clone(),
            since_boot: self.clock.since_boot(),
        }
    }
}
