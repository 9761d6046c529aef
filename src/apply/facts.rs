//! What an apply's decisions read from the state directory and the
//! runtime, read once before anything is decided: the last apply's record,
//! what each container was created reading, the live window records (and
//! so what they hold), the one listing of managed containers, and the
//! records of what this state made (accounts, networks, volumes, shared
//! folders, remakes under way).
//!
//! A state document that exists but does not parse fails the whole apply
//! before anything is decided (`applied.json`, `container-inputs.json`,
//! the window records: the apply refuses to guess); the records of one
//! resource kind fail only that kind's lines, as they always did; a
//! record of one service's replacement or roll back fails only that
//! service's line (`crate::apply::rollouts`).
//!
//! Each decision is a function of these and of what it reads of the
//! machine for its own resource (a file, a unit, a network): inputs that
//! can each be digested, so that a later apply may skip what did not
//! change since the last.

use std::collections::{BTreeMap, BTreeSet};

use super::records::{self, Names, Remakes};
use super::rollouts::{self, Records, Refused, Rollout};
use super::state::{self, AppliedState, ContainerInputs};
use crate::acl::folders::{Consents, ManagedFolders, CONSENTS, SHARED_FOLDERS};
use crate::runtime::{ContainerSummary, RuntimeError};
use crate::schedule::step::Machine;
use crate::store::{Store, APPLIED, CONTAINER_INPUTS};
use crate::window::WindowRecord;

/// The one listing of managed containers, by name, or why there is none.
pub(crate) type Listing = Result<BTreeMap<String, ContainerSummary>, String>;

/// The one listing of managed containers, asked for and not yet answered.
pub(crate) type InFlight = tokio::task::JoinHandle<Result<Vec<ContainerSummary>, RuntimeError>>;

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct Facts {
    /// What the last apply recorded (`applied.json`).
    pub(crate) previous: Option<AppliedState>,
    /// What each container was created reading, by container name, as
    /// recorded (`None`: no file).
    pub(crate) inputs_on_disk: Option<BTreeMap<String, ContainerInputs>>,
    /// What each container was created reading, as the decisions take it
    /// (the record, or what the apply recorded since).
    pub(crate) inputs: BTreeMap<String, ContainerInputs>,
    /// The live window records.
    pub(crate) live: Vec<WindowRecord>,
    /// Container name → why it is left alone (held, or a window's step).
    pub(crate) held: BTreeMap<String, String>,
    pub(crate) listing: Listing,
    /// Containers this state directory declared before and has not
    /// removed: the only ones a removal may touch.
    pub(crate) known: BTreeSet<String>,
    /// Scheduled steps the last apply installed (or found unchanged): the
    /// index of each in `previous`'s declared resources
    /// ([`Facts::step_before`]).
    pub(crate) steps_before: BTreeMap<String, usize>,
    /// The machine id and local zone every step's timing reads.
    pub(crate) machine: Machine,
    /// The daemon's periodic apply: a service whose own exit is final by
    /// its `restart` policy is left exited.
    pub(crate) reconcile: bool,
    pub(crate) accounts: Result<records::Accounts, String>,
    pub(crate) networks: Result<Names, String>,
    pub(crate) volumes: Result<Names, String>,
    pub(crate) remakes: Result<Remakes, String>,
    pub(crate) folders: Result<(ManagedFolders, Consents), String>,
    /// Replacements gated on health a kill interrupted, by container
    /// name (and the records that cannot be read: their services are left
    /// alone, the others applied).
    pub(crate) rollouts: Result<Records<Rollout>, String>,
    /// Definitions a roll back refused, by container name (and the records
    /// that cannot be read).
    pub(crate) refused: Result<Records<Refused>, String>,
}

impl Facts {
    /// Read everything, the listing (asked for already) awaited last:
    /// the runtime answers it while the state is read. `Err`: the apply
    /// cannot start (the listing is then not awaited: it only reads).
    pub(crate) async fn read(
        store: &Store,
        windows: &crate::window::Windows,
        listing: InFlight,
        reconcile: bool,
    ) -> Result<Facts, String> {
        let read = (|| {
            let previous: Option<AppliedState> = store.load(APPLIED).map_err(|e| e.to_string())?;
            let inputs_on_disk: Option<BTreeMap<String, ContainerInputs>> =
                store.load(CONTAINER_INPUTS).map_err(|e| e.to_string())?;
            let live = windows
                .live_records()
                .map_err(|e| format!("cannot read the window records: {e}"))?;
            Ok::<_, String>((previous, inputs_on_disk, live))
        })();
        let (previous, inputs_on_disk, live) = match read {
            Ok(read) => read,
            Err(e) => {
                listing.abort();
                return Err(e);
            }
        };
        let listing = match listing.await {
            Ok(listed) => listing_of(listed),
            Err(e) => Err(format!("the listing did not finish: {e}")),
        };
        Ok(Self::of(
            store,
            previous,
            inputs_on_disk,
            live,
            listing,
            reconcile,
        ))
    }

    /// The facts of these documents.
    fn of(
        store: &Store,
        previous: Option<AppliedState>,
        inputs_on_disk: Option<BTreeMap<String, ContainerInputs>>,
        live: Vec<WindowRecord>,
        listing: Listing,
        reconcile: bool,
    ) -> Facts {
        let mut held = BTreeMap::new();
        for record in &live {
            // A window's step container is left alone too: removing it
            // would cut the step short under its window.
            held.insert(
                record.step_container.clone(),
                format!("the step container of the open window of {}", record.step),
            );
            for name in record.held_names() {
                held.insert(
                    name.to_string(),
                    format!(
                        "held by the window of {} (open since {})",
                        record.step,
                        crate::render::time(record.opened_at)
                    ),
                );
            }
        }
        let mut known: BTreeSet<String> = previous
            .as_ref()
            .map(|p| p.containers.iter().cloned().collect())
            .unwrap_or_default();
        let inputs = inputs_on_disk.clone().unwrap_or_default();
        known.extend(inputs.keys().cloned());
        let steps_before = previous
            .as_ref()
            .map(state::installed_steps)
            .unwrap_or_default();
        let load = |doc: &str| {
            store
                .load::<Names>(doc)
                .map(Option::unwrap_or_default)
                .map_err(|e| e.to_string())
        };
        Facts {
            accounts: store
                .load::<records::Accounts>(records::ACCOUNTS)
                .map(Option::unwrap_or_default)
                .map_err(|e| e.to_string()),
            networks: load(records::NETWORKS),
            volumes: load(records::VOLUMES),
            remakes: store
                .load::<Remakes>(records::REMAKES)
                .map(Option::unwrap_or_default)
                .map_err(|e| e.to_string()),
            folders: match (store.load(SHARED_FOLDERS), store.load(CONSENTS)) {
                (Ok(m), Ok(c)) => Ok((m.unwrap_or_default(), c.unwrap_or_default())),
                (Err(e), _) | (_, Err(e)) => Err(e.to_string()),
            },
            rollouts: rollouts::scan_in_flight(store),
            refused: rollouts::scan_refused(store),
            previous,
            inputs_on_disk,
            inputs,
            live,
            held,
            listing,
            known,
            steps_before,
            machine: Machine::read(),
            reconcile,
        }
    }

    /// How the last apply declared step `id`, if it installed it (or
    /// found it unchanged).
    pub(crate) fn step_before(&self, id: &str) -> Option<&serde_json::value::RawValue> {
        let index = *self.steps_before.get(id)?;
        self.previous.as_ref()?.declaration.resource(index)
    }

    /// The facts again, after the apply changed the machine (a run-once
    /// step ran): the listing, the window records and the records read
    /// afresh, and what the apply has recorded so far of containers
    /// (`inputs`, `known`) in place of what the state directory still
    /// says.
    pub(crate) fn again(
        &self,
        store: &Store,
        listing: Listing,
        inputs: BTreeMap<String, ContainerInputs>,
        known: BTreeSet<String>,
    ) -> Facts {
        let mut facts = Self::of(
            store,
            self.previous.clone(),
            self.inputs_on_disk.clone(),
            self.live.clone(),
            listing,
            self.reconcile,
        );
        facts.inputs = inputs;
        facts.known = known;
        facts
    }
}

/// The listing as the decisions take it.
pub(crate) fn listing_of(listed: Result<Vec<ContainerSummary>, RuntimeError>) -> Listing {
    listed
        .map(|list| list.into_iter().map(|c| (c.name.clone(), c)).collect())
        .map_err(|e| e.to_string())
}
