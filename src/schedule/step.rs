//! Scheduled steps as the scheduler and `run` see them, derived from a
//! declaration.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};

use chrono_tz::Tz;

use crate::container_spec::{self, Builds};
use crate::cron::local_zone;
use crate::declaration::{Declaration, Step};
use crate::runtime::ContainerSpec;
use crate::schedule::jobs::{Fingerprint, StepTiming};
use crate::schedule::splay;

/// Everything a fire needs to know of a step, derived from the declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepDef {
    /// The step's resource id.
    pub id: String,
    /// Its module.
    pub module: Option<String>,
    /// The container to run (its cgroup parent is set per fire): the
    /// apply's build of it, shared, not copied.
    pub spec: Arc<ContainerSpec>,
    /// Seconds the run may take before it is stopped.
    pub timeout: Option<Duration>,
    /// `(resource id, runtime name)` of the containers held still, in stop order.
    pub holds: Vec<(String, String)>,
    /// How each held container is created, as declared (its spec's name
    /// is its runtime name): one removed during the window is created
    /// again from it. Shared with every other step holding the same
    /// container; a slice, not a map (thousands of steps each holding two).
    pub hold_specs: Box<[Arc<ContainerSpec>]>,
}

/// A scheduled step as the scheduler holds it: what a fire runs and when
/// it is due.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduledStep {
    /// What a fire runs: shared with the task that makes its container
    /// ready ahead and with each fire, never copied (thousands of steps
    /// would hold thousands of copies).
    pub def: Arc<StepDef>,
    /// When it is due (shared with the job table).
    pub timing: Arc<StepTiming>,
}

/// What every step's timing reads of the machine, read once for all of
/// them: `/etc/machine-id` (randomized delays) and the local zone (a step
/// without `zone`), which is a read of three sources each time.
#[derive(Debug, Clone)]
pub struct Machine {
    /// `/etc/machine-id`.
    pub machine_id: String,
    /// The zone of a step that names none.
    pub local_zone: Tz,
}

impl Machine {
    /// The machine as it is now.
    pub fn read() -> Machine {
        Machine {
            machine_id: splay::machine_id(),
            local_zone: local_zone(),
        }
    }
}

/// Every scheduled step of `decl`, ready for the scheduler. A step whose
/// container cannot be made ready (an unreadable env-file) is reported and
/// left out; installing a schedule never fails an apply.
pub fn scheduled_steps(decl: &Declaration) -> (Vec<ScheduledStep>, Vec<container_spec::SpecError>) {
    let mut steps = Vec::new();
    let mut errors = Vec::new();
    let machine = Machine::read();
    let builds = Builds::new(decl);
    for step in decl.steps() {
        match scheduled_step(&builds, &step, &machine) {
            Ok(s) => steps.push(s),
            Err(e) => errors.push(e),
        }
    }
    (steps, errors)
}

/// The spec of every container held, by container name, from each step's
/// held specs: what a window closed without its opener's plan creates
/// again ([`crate::window::Windows::know_held_specs`]).
pub fn held_specs<'a>(
    each_step: impl IntoIterator<Item = &'a [Arc<ContainerSpec>]>,
) -> BTreeMap<String, Arc<ContainerSpec>> {
    each_step
        .into_iter()
        .flatten()
        .map(|spec| (spec.name.clone(), spec.clone()))
        .collect()
}

/// The step `id` of `decl`.
pub fn find(decl: &Declaration, id: &str) -> Result<ScheduledStep, String> {
    let step = decl
        .step(id)
        .ok_or_else(|| format!("no scheduled step {id} is declared"))?;
    scheduled_step(&Builds::new(decl), &step, &Machine::read()).map_err(|e| e.to_string())
}

/// Step `step` of the declaration `builds` builds, ready for the
/// scheduler: its container built for this one use (not kept by
/// `builds`), those it holds built through `builds` (each once however
/// many steps hold it), held ids found by index.
pub fn scheduled_step(
    builds: &Builds<'_>,
    step: &Step<'_>,
    machine: &Machine,
) -> Result<ScheduledStep, container_spec::SpecError> {
    let built = builds.build_once(step.resource, step.container)?;
    let holds = step
        .schedule
        .while_stopped
        .iter()
        .filter_map(|id| {
            builds
                .container(id.as_str())
                .map(|(_, c)| (id.to_string(), c.name.to_string()))
        })
        .collect();
    // A held container removed during the window is created again from
    // its declaration; one whose spec cannot be built is alerted instead.
    let hold_specs = step
        .schedule
        .while_stopped
        .iter()
        .filter_map(|id| builds.spec(id.as_str()))
        .collect();
    // Anything about the step changing re-arms it: its resource as declared
    // and what its container reads.
    let mut hasher = Sha256::new();
    hasher.update(serde_json::to_vec(step.resource).unwrap_or_default());
    hasher.update(built.identity.as_bytes());
    let fingerprint = Fingerprint(hasher.finalize().into());
    Ok(ScheduledStep {
        def: Arc::new(StepDef {
            id: step.resource.id.to_string(),
            module: step.resource.module.as_ref().map(|m| m.to_string()),
            spec: built.spec,
            timeout: step.container.timeout,
            holds,
            hold_specs,
        }),
        timing: Arc::new(StepTiming {
            id: step.resource.id.to_string(),
            cron: step.schedule.cron.clone(),
            zone: step.schedule.zone.unwrap_or(machine.local_zone),
            fingerprint,
            delay: step
                .schedule
                .randomized_delay
                .map_or(Duration::ZERO, |bound| {
                    splay::delay(&machine.machine_id, step.resource.id.as_str(), bound)
                }),
            catch_up: step.schedule.catch_up,
        }),
    })
}
