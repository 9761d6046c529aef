//! What the executor acts with: the runtime, the unit manager, the
//! account tools, the state directory, the puller of one apply, the
//! shared-folder watch and who hears of its progress. Every write an apply
//! makes goes through one of these; the decisions hold none of them.

use std::sync::Arc;

use super::super::pull::Puller;
use super::super::units::UnitManager;
use crate::accounts::AccountTools;
use crate::progress::Reporter;
use crate::runtime::ContainerRuntime;
use crate::store::Store;
use crate::window::Owner;

/// See the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct Tools {
    pub(crate) store: Store,
    pub(crate) runtime: Arc<dyn ContainerRuntime>,
    /// The unit manager, or why there is none.
    pub(crate) units: Result<Arc<dyn UnitManager>, String>,
    pub(crate) accounts: Arc<dyn AccountTools>,
    /// Shared with the services converged concurrently (it holds the
    /// apply's one retry budget and the images known present).
    pub(crate) puller: Arc<tokio::sync::Mutex<Puller>>,
    /// The daemon's shared-folder watch, held while entries change.
    pub(crate) folder_watch: Option<crate::acl::watch::Watcher>,
    pub(crate) progress: Reporter,
    /// Who owes a run-once step's forwarded output (this process).
    pub(crate) owner: Owner,
}
