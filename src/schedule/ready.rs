//! Ready before due: the container of a step's next fire is created ahead
//! of its due time, so that the due second costs Docker's `start` alone.
//!
//! What the ready container is:
//!
//! - the step's container, named as declared, created (never started) from
//!   exactly the armed declaration, with the cgroup parent its fire's
//!   transient unit will give it ([`StepUnits::cgroup_parent_for`]) in the
//!   label [`LABEL_READY`]. A fire uses it only if it is still `created`,
//!   its identity label is the declaration's and that label names the
//!   cgroup parent of the unit the fire just made; anything else is
//!   removed and created again at the fire, as before (a wrong guess costs
//!   time, never placement);
//! - made when the step is armed and again after each fire, but no earlier
//!   than [`LEAD`] before its due time: until then the last run's
//!   container (and `docker logs` of it) stays;
//! - started by nothing but its fire: no restart policy, and an apply
//!   never touches a step's container;
//! - replaced, never cut short: a container that runs is never removed
//!   (Docker refuses the removal in the same request); one that ran is set
//!   aside, the new one made with its anonymous volumes, and then removed
//!   only through [`ContainerRuntime::remove_stopped`] ([`make_in_place`]);
//! - removed with its step, when a sync drops the step or renames its
//!   container;
//! - reused across a daemon restart when it still matches, since what is
//!   compared lives in Docker's labels, not in this process.
//!
//! Making ready and a fire's use of the container are serialised per step
//! (the step's lock), so a fire never races a preparation still under way.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::container_spec::LABEL_IDENTITY;
use crate::runtime::{
    replace, replaced_name, ContainerInfo, ContainerRuntime, ContainerSpec, LABEL_MANAGED,
    LABEL_RESOURCE, MANAGED_VALUE,
};
use crate::schedule::output::{fire_name, to_journal, LABEL_FIRE};
use crate::schedule::step::StepDef;
use crate::systemd::units::{StepUnit, StepUnits};
use crate::task::AbortOnDrop;

/// Label on a step's container: the cgroup parent it was created for (empty
/// when steps run in no unit).
pub const LABEL_READY: &str = "mesh-host.ready-for";

/// How long before its due time a step's container is made ready, at most.
/// Short on purpose: Docker starts a container created seconds before
/// faster than one created half a minute before (about 60 ms of 380 on
/// the sandbox node, docs/benchmarks.md), and the last run's container
/// (its `docker logs`) stays until then. Long enough for a burst's
/// creates to be done before their due second.
pub const LEAD: Duration = Duration::from_secs(10);

/// How far ahead a step's next fire is armed: a fire due later has no
/// task waiting for it, only its state (`waiting`) and its place in the
/// scheduler's list of next fires, and is armed when it comes within (a
/// node of thousands of daily steps would otherwise hold a sleeping task
/// per step all day).
pub const HORIZON: Duration = Duration::from_secs(3600);

/// How long before its due time a fire's transient unit is made, so that
/// the due second costs the container's start alone.
pub const UNIT_LEAD: Duration = Duration::from_secs(2);

/// Where the container of a step's next fire stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum ReadyState {
    /// To be made ready at `at` ([`LEAD`] before the fire due at `fire`).
    Waiting {
        /// When it will be made.
        at: DateTime<Utc>,
        /// The fire it is for.
        fire: DateTime<Utc>,
    },
    /// Created, waiting for its fire.
    Ready {
        /// The fire it is for.
        fire: DateTime<Utc>,
        /// It was there already (made before a restart, or earlier).
        reused: bool,
    },
    /// Could not be made: the fire creates it at its due time.
    NotReady {
        /// Why.
        reason: String,
    },
    /// A fire is using it.
    InUse,
}

/// The spec a step's container is created from for its fire due at `due`,
/// whose unit gives `cgroup_parent`: its output goes to the journal as
/// that fire's ([`crate::schedule::output`]).
pub fn run_spec(def: &StepDef, cgroup_parent: Option<&str>, due: DateTime<Utc>) -> ContainerSpec {
    let mut spec = ContainerSpec::clone(&def.spec);
    spec.cgroup_parent = cgroup_parent.map(str::to_string);
    spec.labels
        .set(LABEL_READY, cgroup_parent.unwrap_or_default().to_string());
    to_journal(&mut spec, &def.id, &fire_name(&def.id, due));
    spec
}

/// Whether `info` is a container the fire of `def` due at `due`, whose unit
/// gives `cgroup_parent`, can start as it is. The fire is compared as well
/// as the cgroup parent: with the systemd driver every fire's parent is the
/// step's slice, and a container made for another fire would write its
/// output under that fire's name.
pub fn is_ready_for(
    info: &ContainerInfo,
    def: &StepDef,
    cgroup_parent: Option<&str>,
    due: DateTime<Utc>,
) -> bool {
    is_made_ready_from(info, def)
        && info.labels.get(LABEL_READY).map(String::as_str) == Some(cgroup_parent.unwrap_or(""))
        && info.labels.get(LABEL_FIRE) == Some(&fire_name(&def.id, due))
}

/// Whether `info` was made ready (created, never started) from exactly
/// `def`'s declaration, for whichever unit.
pub fn is_made_ready_from(info: &ContainerInfo, def: &StepDef) -> bool {
    info.status == "created"
        && info.labels.contains_key(LABEL_READY)
        && info.labels.contains_key(LABEL_IDENTITY)
        && info.labels.get(LABEL_IDENTITY).map(String::as_str)
            == def.spec.labels.get(LABEL_IDENTITY)
}

/// Make the container of `spec` in place of `existing` (the last run's,
/// or one made for another unit or declaration, looked at just before and
/// not running), carrying its anonymous volumes (runtime::replace), so
/// that a step whose image declares `VOLUME` does not leave a volume per
/// fire. With none, one an interrupted replace set aside is carried from,
/// if there is one; else the container is made afresh.
pub async fn make_in_place(
    runtime: &dyn ContainerRuntime,
    spec: &ContainerSpec,
    existing: Option<ContainerInfo>,
) -> Result<(), String> {
    let name = &spec.name;
    let old = match existing {
        Some(info) => Some(info),
        None => match runtime.inspect(&replaced_name(name)).await {
            Ok(left) => left.filter(|left| {
                !left.running
                    && left.labels.get(LABEL_MANAGED).map(String::as_str) == Some(MANAGED_VALUE)
                    && left.labels.get(LABEL_RESOURCE).map(String::as_str)
                        == spec.labels.get(LABEL_RESOURCE)
            }),
            Err(e) => return Err(format!("cannot inspect {}: {e}", replaced_name(name))),
        },
    };
    match old {
        Some(old) => replace(runtime, spec, &old).await.map(|_| ()),
        None => runtime
            .create(spec)
            .await
            .map(|_| ())
            .map_err(|e| format!("cannot create {name}: {e}")),
    }
}

/// What a step due at `due` and beyond the horizon is waiting for: the
/// state its slot would say, for a step that has none.
pub fn waiting_for(due: DateTime<Utc>) -> ReadyState {
    ReadyState::Waiting {
        at: due - chrono::Duration::from_std(LEAD).unwrap_or_default(),
        fire: due,
    }
}

/// One step's slot.
#[derive(Debug, Default)]
struct Slot {
    /// Held while making ready and by a fire until its container runs.
    lock: Arc<tokio::sync::Mutex<()>>,
    /// The preparation pending or under way.
    task: Option<AbortOnDrop>,
    /// The fire and identity it was armed for, and its container's name.
    armed: Option<(DateTime<Utc>, String, String)>,
    state: Option<ReadyState>,
    /// What was made ahead for one fire, until that fire takes it.
    ahead: Option<Ahead>,
}

/// What is made [`UNIT_LEAD`] before a fire, for that fire alone.
#[derive(Debug)]
pub struct Ahead {
    /// The due time of the fire it is for.
    pub due: DateTime<Utc>,
    /// Its transient unit (`None`: steps run in no unit). Dropped, it ends
    /// (its keeper is killed, its watch aborted), so a unit no fire took
    /// is gone with the next arming.
    pub unit: Option<StepUnit>,
    /// The ID of the step's container, looked at right after the unit was
    /// made and found ready for it: the fire starts it by that ID without
    /// looking again. `None` when it was not (the fire looks, and makes it).
    pub container: Option<String>,
}

/// Makes the containers of steps' next fires ready ahead of their due time.
#[derive(Debug, Clone)]
pub struct Readier {
    runtime: Arc<dyn ContainerRuntime>,
    units: Arc<dyn StepUnits>,
    slots: Arc<Mutex<BTreeMap<String, Slot>>>,
}

impl Readier {
    /// A readier acting through `runtime` and `units`.
    pub fn new(runtime: Arc<dyn ContainerRuntime>, units: Arc<dyn StepUnits>) -> Self {
        Readier {
            runtime,
            units,
            slots: Arc::default(),
        }
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Make the container of the fire of `def` due at `due` ready, from
    /// [`LEAD`] before it (at once if that is past). Armed again for the
    /// same fire and declaration, nothing changes. A fire due further
    /// than `horizon` ([`HORIZON`]) is only said `waiting`, no task armed:
    /// `false`, and the caller arms it again once it is within.
    pub fn arm(
        &self,
        def: &Arc<StepDef>,
        due: DateTime<Utc>,
        now: DateTime<Utc>,
        horizon: Duration,
    ) -> bool {
        let identity = def
            .spec
            .labels
            .get(LABEL_IDENTITY)
            .unwrap_or_default()
            .to_string();
        let armed = (due, identity, def.spec.name.clone());
        let beyond = (due - now).to_std().is_ok_and(|ahead| ahead > horizon);
        let mut slots = self.slots();
        // A step that never came within the horizon has nothing made and
        // gets no slot: thousands of steps due tomorrow cost none
        // (`status` says them waiting from their next fire, see
        // [`waiting_for`]).
        if beyond && !slots.contains_key(&def.id) {
            return false;
        }
        let slot = slots.entry(def.id.clone()).or_default();
        let failed = matches!(slot.state, Some(ReadyState::NotReady { .. }));
        if slot.armed.as_ref() == Some(&armed) && !failed && (slot.task.is_some() || beyond) {
            return slot.task.is_some();
        }
        if let Some((_, _, old)) = &slot.armed {
            if *old != def.spec.name {
                self.discard(old.clone());
            }
        }
        let at = due - chrono::Duration::from_std(LEAD).unwrap_or_default();
        let wait = (at - now).to_std().unwrap_or_default();
        slot.state = Some(ReadyState::Waiting {
            at: at.max(now),
            fire: due,
        });
        slot.armed = Some(armed);
        if slot.ahead.as_ref().is_some_and(|a| a.due != due) {
            slot.ahead = None;
        }
        if beyond {
            slot.task = None;
            return false;
        }
        let unit_wait = (due - chrono::Duration::from_std(UNIT_LEAD).unwrap_or_default() - now)
            .to_std()
            .unwrap_or_default();
        let armed_at = tokio::time::Instant::now();
        let (this, def, lock) = (self.clone(), def.clone(), slot.lock.clone());
        let task = tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let state = {
                let _step = lock.lock().await;
                this.prepare(&def, due).await
            };
            let ready = matches!(state, ReadyState::Ready { .. });
            match &state {
                ReadyState::Ready { reused, .. } => tracing::debug!(
                    MESH_STEP = %def.id,
                    "the container of step {}'s fire due {} is ready{}",
                    def.id,
                    due.to_rfc3339(),
                    if *reused { " (reused)" } else { "" }
                ),
                ReadyState::NotReady { reason } => tracing::warn!(
                    MESH_STEP = %def.id,
                    "the container of step {}'s fire due {} is not made ready ({reason}): the fire creates it",
                    def.id,
                    due.to_rfc3339()
                ),
                _ => {}
            }
            if let Some(slot) = this.slots().get_mut(&def.id) {
                if slot.armed.as_ref().is_some_and(|(d, _, _)| *d == due) {
                    slot.state = Some(state);
                }
            }
            if ready {
                tokio::time::sleep_until(armed_at + unit_wait).await;
                this.make_ahead(&def, due, &lock).await;
            }
        });
        slot.task = Some(AbortOnDrop::new(&task));
        true
    }

    /// The step is no longer declared: its ready container goes.
    pub fn forget(&self, step: &str) {
        let removed = self.slots().remove(step);
        if let Some((_, _, name)) = removed.and_then(|s| s.armed) {
            self.discard(name);
        }
    }

    /// Whether this readier holds a slot for `step` (a step beyond the
    /// horizon with none is armed with no look at its definition).
    pub fn has_slot(&self, step: &str) -> bool {
        self.slots().contains_key(step)
    }

    /// The steps this readier holds a slot for.
    pub fn steps(&self) -> Vec<String> {
        self.slots().keys().cloned().collect()
    }

    /// Make the transient unit of `def`'s fire due at `due`, unless a fire
    /// took the step meanwhile, and look at its container once more: kept
    /// for that fire, which then starts it with no other request.
    async fn make_ahead(&self, def: &StepDef, due: DateTime<Utc>, lock: &tokio::sync::Mutex<()>) {
        let _step = lock.lock().await;
        let armed = self.slots().get(&def.id).is_some_and(|slot| {
            slot.armed.as_ref().is_some_and(|(d, _, _)| *d == due) && slot.ahead.is_none()
        });
        if !armed {
            return;
        }
        let unit = match self.units.begin(&def.id, def.module.as_deref(), due).await {
            Ok(unit) => unit,
            Err(e) => {
                tracing::debug!(
                    MESH_STEP = %def.id,
                    "the unit of step {}'s fire due {} is not made ahead ({e}): the fire makes it",
                    def.id,
                    due.to_rfc3339()
                );
                return;
            }
        };
        let parent = unit.as_ref().map(|u| u.cgroup_parent.clone());
        let container = match self.runtime.inspect(&def.spec.name).await {
            Ok(Some(info)) if is_ready_for(&info, def, parent.as_deref(), due) => Some(info.id),
            _ => None,
        };
        // Kept for the fire of `due` whatever happens to the arming
        // meanwhile: only that fire may make a unit of that name.
        if let Some(slot) = self.slots().get_mut(&def.id) {
            slot.ahead = Some(Ahead {
                due,
                unit,
                container,
            });
        }
    }

    /// The step's lock: taken by a fire from before it looks at its
    /// container until the container runs, with what was made ahead for
    /// its due time, if anything was. Any preparation for the step pending
    /// is dropped; the next arming makes one again.
    pub async fn take(
        &self,
        step: &str,
        due: DateTime<Utc>,
    ) -> (tokio::sync::OwnedMutexGuard<()>, Option<Ahead>) {
        let lock = {
            let mut slots = self.slots();
            let slot = slots.entry(step.to_string()).or_default();
            slot.armed = None;
            slot.state = Some(ReadyState::InUse);
            slot.lock.clone()
        };
        let guard = lock.lock_owned().await;
        // A preparation that was waiting for its time (not under the lock)
        // must not run after this fire has taken the container.
        let mut ahead = None;
        if let Some(slot) = self.slots().get_mut(step) {
            if slot.armed.is_none() {
                slot.task = None;
            }
            ahead = slot.ahead.take().filter(|a| a.due == due);
        }
        (guard, ahead)
    }

    /// Where the step's next container stands, if it is tracked.
    pub fn state(&self, step: &str) -> Option<ReadyState> {
        self.slots().get(step).and_then(|s| s.state.clone())
    }

    /// The steps whose container could not be made ready, in one look.
    pub fn not_ready(&self) -> std::collections::BTreeSet<String> {
        self.slots()
            .iter()
            .filter(|(_, s)| matches!(s.state, Some(ReadyState::NotReady { .. })))
            .map(|(step, _)| step.clone())
            .collect()
    }

    /// Make the container of `def`'s fire due at `due` ready now.
    async fn prepare(&self, def: &StepDef, due: DateTime<Utc>) -> ReadyState {
        let not_ready = |reason: String| ReadyState::NotReady { reason };
        let parent = match self.units.cgroup_parent_for(&def.id, due).await {
            Ok(p) => p,
            Err(e) => return not_ready(format!("its unit's cgroup is unknown: {e}")),
        };
        let name = &def.spec.name;
        let existing = match self.runtime.inspect(name).await {
            Err(e) => return not_ready(format!("cannot inspect {name}: {e}")),
            Ok(Some(info)) if info.running => {
                return not_ready(format!("{name} runs (a run is in flight)"))
            }
            Ok(Some(info)) if is_ready_for(&info, def, parent.as_deref(), due) => {
                return ReadyState::Ready {
                    fire: due,
                    reused: true,
                }
            }
            Ok(existing) => existing,
        };
        match make_in_place(
            &*self.runtime,
            &run_spec(def, parent.as_deref(), due),
            existing,
        )
        .await
        {
            Ok(()) => ReadyState::Ready {
                fire: due,
                reused: false,
            },
            Err(e) => not_ready(e),
        }
    }

    /// Remove `name` if it is a ready container no fire started.
    fn discard(&self, name: String) {
        let runtime = self.runtime.clone();
        tokio::spawn(async move {
            match runtime.inspect(&name).await {
                Ok(Some(info))
                    if info.status == "created" && info.labels.contains_key(LABEL_READY) =>
                {
                    match runtime.remove_stopped(&name).await {
                        Ok(()) => tracing::info!(
                            "{name}, made ready for a step no longer declared so, removed"
                        ),
                        Err(e) => tracing::warn!("cannot remove the ready container {name}: {e}"),
                    }
                }
                Ok(_) => {}
                Err(e) => tracing::warn!("cannot look at the ready container {name}: {e}"),
            }
        });
    }
}
