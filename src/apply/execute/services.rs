//! Service containers carried out: the runtime calls a decided
//! [`ServiceWork`] needs, touching nothing of the apply's but the puller
//! (shared, behind its lock), so that the services of a batch run
//! concurrently; their outcomes are committed in declaration order.
//!
//! A replace pulls first (if the image is absent) and only then replaces
//! the old container, so a pull that fails leaves the service as it was.
//! The replace ([`crate::runtime::replace`]) stops the old one, sets it
//! aside under its replaced name, creates the new one with its anonymous
//! volumes, then removes it: volumes are never deleted, and a container
//! set aside by an interrupted recreate is where the next create carries
//! them from.

use std::sync::Arc;

use super::super::plan::{ServiceAct, ServiceWork};
use super::super::pull::Ensured;
use super::super::report::Action;
use super::super::rollouts;
use super::outcome::{Outcome, Record};
use super::rollout;
use super::tools::Tools;
use crate::container_spec::LABEL_IDENTITY;
use crate::runtime::{
    kept_volumes_note, replace, ContainerRuntime, ContainerSpec, RuntimeError, VolumeMount,
};

/// Carry out `work`.
pub(super) async fn service(tools: &Tools, work: &ServiceWork) -> Outcome {
    let id = work.id.as_str();
    let waits = if work.starts() {
        work.healthy_first.len()
    } else {
        0
    };
    let act_at = waits + work.pull.iter().count();
    // A refusal that an interrupted replace's settling may need (a roll
    // back killed midway) is forgotten only once it is settled.
    let settles = match &work.act {
        ServiceAct::Resume { then, .. } => then.is_some(),
        // A roll back of what is no longer declared: finished, then what
        // is declared is made (or is what was put back).
        ServiceAct::PutBack { then, .. } => then.is_some() || work.forget_refused,
        _ => false,
    };
    if work.forget_refused && !settles {
        rollouts::forget_refused(&tools.store, &work.name);
    }
    if work.forget_rollout {
        rollouts::end(&tools.store, &work.name);
    }
    match &work.act {
        ServiceAct::Resume {
            rollout,
            then: None,
        } => rollout::resume(tools, work, rollout).await,
        ServiceAct::Resume {
            rollout,
            then: Some(reason),
        } => {
            let settled = rollout::settle(tools, work, rollout).await;
            settled_then_replaced(tools, work, settled, reason.clone(), act_at).await
        }
        ServiceAct::PutBack {
            aside, remove_new, ..
        } if !settles => rollout::finish_put_back(tools, work, aside, *remove_new).await,
        ServiceAct::PutBack {
            aside,
            remove_new,
            then,
        } => {
            let reason = then
                .clone()
                .unwrap_or_else(|| "it differs from the declaration".to_string());
            let settled = match rollout::put_back_interrupted(tools, work, aside, *remove_new).await
            {
                Ok(()) => rollout::Settled::PutBack(format!(
                    "an interrupted roll back was finished first ({aside} put back)"
                )),
                Err(e) => rollout::Settled::Failed(format!(
                    "an interrupted roll back could not finish: {e}"
                )),
            };
            let at = act_at + usize::from(*remove_new) + 1;
            settled_then_replaced(tools, work, settled, reason, at).await
        }
        ServiceAct::Keep => {
            // Record what it reads if the record was lost: no runtime call.
            let mut outcome = Outcome::new(Action::Unchanged, None);
            outcome.records.push(Record::InputsIfLost(
                work.name.clone(),
                Arc::clone(&work.built),
                id.to_string(),
            ));
            outcome
        }
        ServiceAct::Create { renamed, leftover } => {
            create(tools, work, renamed.clone(), leftover.clone(), act_at).await
        }
        ServiceAct::Replace { reason } => recreate(tools, work, reason.clone(), act_at).await,
        ServiceAct::Start { restart_on } => {
            let reason = match restart_on {
                Some(path) => format!("was not running (and restart-on: {path} changed)"),
                None => "was not running".to_string(),
            };
            let mut outcome = match tools.runtime.start(&work.name).await {
                Ok(()) => Outcome::new(Action::Started, Some(reason)),
                Err(e) => Outcome::failed_at(act_at, format!("would not start: {e}")),
            };
            outcome.records.push(Record::InputsIfLost(
                work.name.clone(),
                Arc::clone(&work.built),
                id.to_string(),
            ));
            outcome
        }
        ServiceAct::Restart { path } => {
            let restarted = match tools.runtime.stop(&work.name).await {
                Ok(()) => tools.runtime.start(&work.name).await,
                Err(e) => Err(e),
            };
            let mut outcome = match restarted {
                Ok(()) => {
                    Outcome::new(Action::Started, Some(format!("restart-on: {path} changed")))
                }
                Err(e) => Outcome::failed_at(
                    act_at,
                    format!("restart-on: {path} changed, but the restart failed: {e}"),
                ),
            };
            outcome.records.push(Record::InputsIfLost(
                work.name.clone(),
                Arc::clone(&work.built),
                id.to_string(),
            ));
            outcome
        }
    }
}

async fn create(
    tools: &Tools,
    work: &ServiceWork,
    renamed: Option<String>,
    leftover: Option<String>,
    act_at: usize,
) -> Outcome {
    let id = work.id.as_str();
    let built = &work.built;
    let pulled = match tools.puller.lock().await.ensure(&built.spec.image).await {
        Ok(e) => e == Ensured::Pulled,
        Err(e) => return Outcome::failed_at(pull_at(work, act_at), format!("image: {e}")),
    };
    // Made from what an interrupted replace set aside: gated as the
    // replace was.
    if let (Some(after), None, Some(aside)) = (work.rollback_after, &renamed, &leftover) {
        let reason =
            format!("an interrupted recreate is finished (its volumes carried from {aside})");
        return rollout::replace(tools, work, after, aside, reason, act_at).await;
    }
    // What it replaces: what an interrupted replace set aside (carrying
    // its volumes), else the container under its former name.
    let from = leftover.as_ref().or(renamed.as_ref());
    let made = make(&*tools.runtime, &built.spec, from.map(String::as_str)).await;
    let mut records = Vec::new();
    if let Some(old) = &renamed {
        let gone = match (&made, &leftover) {
            // Made from the leftover: the container under its former name
            // is removed as before (its volumes stay).
            (Err(CreateError::NotCreated(_)), _) => false,
            (_, Some(_)) => tools.runtime.remove(old).await.is_ok(),
            (_, None) => true,
        };
        if gone {
            records.push(Record::Consumed(old.clone()));
        }
    }
    if !matches!(made, Err(CreateError::NotCreated(_))) {
        records.push(Record::Inputs(
            built.spec.name.clone(),
            Arc::clone(built),
            id.to_string(),
        ));
    }
    let mut outcome = match (made, renamed, leftover) {
        (Err(e), _, _) => Outcome::failed_at(act_at, e.to_string()),
        (Ok(kept), Some(old), _) => {
            records.push(Record::Recreated(built.spec.name.clone()));
            Outcome::new(
                Action::Recreated,
                Some(with_kept(format!("name changed (was {old})"), &kept)),
            )
        }
        (Ok(kept), None, Some(aside)) => {
            records.push(Record::Recreated(built.spec.name.clone()));
            Outcome::new(
                Action::Recreated,
                Some(with_kept(
                    format!(
                        "an interrupted recreate is finished (its volumes carried from {aside})"
                    ),
                    &kept,
                )),
            )
        }
        (Ok(_), None, None) => {
            Outcome::new(Action::Created, pulled.then(|| "image pulled".to_string()))
        }
    };
    outcome.records.extend(records);
    outcome
}

/// An interrupted replace `settled`, what stands under the name is
/// replaced by what is declared (for `reason`), as any replace, unless it
/// is what is declared (an operator declared the old one again).
async fn settled_then_replaced(
    tools: &Tools,
    work: &ServiceWork,
    settled: rollout::Settled,
    reason: String,
    act_at: usize,
) -> Outcome {
    let name = work.name.as_str();
    let first = match settled {
        rollout::Settled::Failed(why) => return Outcome::failed_at(act_at, why),
        rollout::Settled::Kept(said) | rollout::Settled::PutBack(said) => said,
    };
    // Settled: a refusal of what the declaration no longer asks for goes.
    if work.forget_refused {
        rollouts::forget_refused(&tools.store, name);
    }
    let standing = match tools.runtime.inspect(name).await {
        Ok(Some(info)) => info.labels.get(LABEL_IDENTITY).cloned(),
        Ok(None) => None,
        Err(e) => {
            return Outcome::failed_at(act_at, format!("{first}; then cannot inspect {name}: {e}"))
        }
    };
    if standing.as_deref() == Some(work.built.identity.as_str()) {
        let mut outcome = Outcome::new(
            Action::Recreated,
            Some(format!("{first}; {name} is what is declared")),
        );
        outcome.records.push(Record::Inputs(
            name.to_string(),
            Arc::clone(&work.built),
            work.id.clone(),
        ));
        return outcome;
    }
    let mut outcome = recreate(tools, work, reason, act_at).await;
    outcome.reason = Some(match outcome.reason.take() {
        Some(said) => format!("{first}; then {said}"),
        None => first,
    });
    outcome
}

async fn recreate(tools: &Tools, work: &ServiceWork, reason: String, act_at: usize) -> Outcome {
    let id = work.id.as_str();
    let built = &work.built;
    let name = work.name.as_str();
    if let Err(e) = tools.puller.lock().await.ensure(&built.spec.image).await {
        let why = format!("must be recreated ({reason}) but its image is missing: {e}");
        return Outcome::failed_at(pull_at(work, act_at), why);
    }
    if let Some(after) = work.rollback_after {
        return rollout::replace(tools, work, after, name, reason, act_at).await;
    }
    let made = make(&*tools.runtime, &built.spec, Some(name)).await;
    let mut records = Vec::new();
    if !matches!(made, Err(CreateError::NotCreated(_))) {
        records.push(Record::Inputs(
            name.to_string(),
            Arc::clone(built),
            id.to_string(),
        ));
    }
    let mut outcome = match made {
        Ok(kept) => {
            records.push(Record::Recreated(name.to_string()));
            Outcome::new(Action::Recreated, Some(with_kept(reason, &kept)))
        }
        Err(CreateError::NotCreated(e)) => {
            Outcome::failed_at(act_at, format!("must be recreated ({reason}) but {e}"))
        }
        Err(e) => Outcome::failed_at(
            act_at,
            format!("removed to be recreated ({reason}), then: {e}"),
        ),
    };
    outcome.records.extend(records);
    outcome
}

/// The step a failed pull is said on: the planned pull, else the make
/// (an image gone since it was decided is pulled by it).
fn pull_at(work: &ServiceWork, act_at: usize) -> usize {
    if work.pull.is_some() {
        act_at - 1
    } else {
        act_at
    }
}

/// `reason`, and the volumes a replace left unmounted, if any.
fn with_kept(reason: String, kept: &[VolumeMount]) -> String {
    match kept_volumes_note(kept) {
        Some(note) => format!("{reason}; {note}"),
        None => reason,
    }
}

/// Make `spec`'s container in place of `from` (carrying its anonymous
/// volumes, runtime::replace), or afresh when there is none, and start
/// it. `Ok`: the volumes the old one had that the new one mounts nowhere
/// (kept).
pub(super) async fn make(
    runtime: &dyn ContainerRuntime,
    spec: &ContainerSpec,
    from: Option<&str>,
) -> Result<Vec<VolumeMount>, CreateError> {
    let old = match from {
        None => None,
        Some(old) => runtime
            .inspect(old)
            .await
            .map_err(|e| CreateError::NotCreated(format!("cannot inspect {old}: {e}")))?,
    };
    let Some(old) = old else {
        create_and_start(runtime, spec).await?;
        return Ok(Vec::new());
    };
    let replaced = replace(runtime, spec, &old)
        .await
        .map_err(CreateError::NotCreated)?;
    runtime
        .start(&spec.name)
        .await
        .map_err(|e| CreateError::NotStarted(format!("created, but it would not start: {e}")))?;
    Ok(replaced.kept)
}

/// Create and start a container from `spec`.
async fn create_and_start(
    runtime: &dyn ContainerRuntime,
    spec: &ContainerSpec,
) -> Result<(), CreateError> {
    let name = &spec.name;
    match runtime.create(spec).await {
        Ok(_) => {}
        Err(RuntimeError::Conflict { .. }) => {
            return Err(CreateError::NotCreated(format!(
                "a container named {name} exists that mesh-host does not manage (no mesh-host.managed label): it is left alone; rename or remove it"
            )))
        }
        Err(e) => return Err(CreateError::NotCreated(format!("cannot create {name}: {e}"))),
    }
    runtime
        .start(name)
        .await
        .map_err(|e| CreateError::NotStarted(format!("created, but it would not start: {e}")))
}

/// Why [`make`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum CreateError {
    /// Nothing was created.
    NotCreated(String),
    /// Created, not started.
    NotStarted(String),
}

impl std::fmt::Display for CreateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CreateError::NotCreated(s) | CreateError::NotStarted(s) => f.write_str(s),
        }
    }
}

/// A container no longer declared, removed keeping its volumes
/// (`stopped_only`: only if it does not run).
pub(super) async fn remove(
    tools: &Tools,
    name: &str,
    stopped_only: bool,
    decided: Option<String>,
) -> Outcome {
    let removed = if stopped_only {
        tools.runtime.remove_stopped(name).await
    } else {
        tools.runtime.remove(name).await
    };
    match removed {
        Ok(()) => {
            rollouts::forget_refused(&tools.store, name);
            let mut outcome = Outcome::new(Action::Removed, decided);
            outcome.records.push(Record::Removed(name.to_string()));
            outcome
        }
        Err(e) => Outcome::failed_at(0, format!("cannot remove {name}: {e}")),
    }
}
