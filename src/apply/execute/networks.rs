//! Volumes and networks carried out, and the records of what this state
//! made kept with them ([`NETWORKS`], [`VOLUMES`], [`REMAKES`]).
//!
//! A remake records the containers to attach again before it detaches the
//! first, and drops the record once every one is attached again: an apply
//! killed in between (or a power cut) leaves the next one the list, which
//! it decides from (`attached again after an interrupted remake`).

use super::super::plan::{Decision, NetworkWork};
use super::super::records::{Names, Remakes, NETWORKS, REMAKES, VOLUMES};
use super::super::report::Action;
use super::outcome::{Outcome, Record};
use super::tools::Tools;
use crate::runtime::{explain, NetworkAttach, VolumeSpec};

/// The network a work is on.
pub(super) fn name_of(work: &NetworkWork) -> String {
    match work {
        NetworkWork::Make { spec, .. } | NetworkWork::Remake { spec, .. } => spec.name.clone(),
        NetworkWork::AttachAgain { again } => again
            .first()
            .map(|(_, a)| a.network.clone())
            .unwrap_or_default(),
    }
}

/// Record `name` (of resource `id`) in `doc`, when it is not yet; a
/// record that cannot be written is a warning.
fn record(tools: &Tools, doc: &str, name: &str, id: &str) -> Option<Record> {
    let mut names = match tools.store.load::<Names>(doc) {
        Ok(names) => names.unwrap_or_default(),
        Err(e) => return Some(Record::Warning(format!("{doc} {name}: {e}"))),
    };
    if names.get(name).map(String::as_str) == Some(id) {
        return None;
    }
    names.insert(name.to_owned(), id.to_owned());
    tools
        .store
        .save(doc, &names)
        .err()
        .map(|e| Record::Warning(format!("{doc} {name}: cannot record it: {e}")))
}

/// Make a declared volume the plan found missing, and record it.
pub(super) async fn volume(tools: &Tools, spec: &VolumeSpec, decision: &Decision) -> Outcome {
    if let Err(e) = tools.runtime.create_volume(spec).await {
        return Outcome::failed_at(0, explain(&e));
    }
    let mut outcome = Outcome::new(Action::Created, decision.line.reason.clone());
    outcome
        .records
        .extend(record(tools, VOLUMES, &spec.name, &decision.line.id));
    outcome
}

/// A declared volume found as declared that the record does not name
/// yet: recorded.
pub(super) fn record_volume(tools: &Tools, name: &str, decision: &Decision) -> Outcome {
    let mut outcome = Outcome::new(decision.line.action.clone(), decision.line.reason.clone());
    outcome
        .records
        .extend(record(tools, VOLUMES, name, &decision.line.id));
    outcome
}

/// A volume no longer declared: kept, and forgotten by the record.
pub(super) fn forget_volume(tools: &Tools, name: &str, decision: &Decision) -> Outcome {
    let mut outcome = Outcome::new(decision.line.action.clone(), decision.line.reason.clone());
    let forgotten = tools.store.load::<Names>(VOLUMES).and_then(|names| {
        let mut names = names.unwrap_or_default();
        if names.remove(name).is_some() {
            tools.store.save(VOLUMES, &names)?;
        }
        Ok(())
    });
    if let Err(e) = forgotten {
        outcome
            .records
            .push(Record::Warning(format!("volumes: {e}")));
    }
    outcome
}

/// The remakes recorded as under way.
fn remakes(tools: &Tools) -> Result<Remakes, String> {
    tools
        .store
        .load::<Remakes>(REMAKES)
        .map(Option::unwrap_or_default)
        .map_err(|e| e.to_string())
}

/// The remake of `name` is over: its record goes.
fn remake_done(tools: &Tools, name: &str) -> Result<(), String> {
    let mut all = remakes(tools)?;
    if all.remove(name).is_some() {
        tools
            .store
            .save(REMAKES, &all)
            .map_err(|e| format!("cannot record that the remake ended: {e}"))?;
    }
    Ok(())
}

/// Attach again what an interrupted remake detached (each container still
/// there, as it declares it), and forget the remake.
async fn attach_again(
    tools: &Tools,
    network: &str,
    again: &[(String, NetworkAttach)],
) -> Result<(), (usize, String)> {
    for (i, (c, attach)) in again.iter().enumerate() {
        let there = tools
            .runtime
            .inspect(c)
            .await
            .map_err(|e| (i, explain(&e)))?;
        if there.is_none() {
            continue;
        }
        tools
            .runtime
            .connect(c, attach)
            .await
            .map_err(|e| (i, format!("{c} not attached again: {}", explain(&e))))?;
    }
    remake_done(tools, network).map_err(|e| (again.len().saturating_sub(1), e))
}

pub(super) async fn network(
    tools: &Tools,
    id: &str,
    work: &NetworkWork,
    decision: &Decision,
) -> Outcome {
    let decided = || Outcome::new(decision.line.action.clone(), decision.line.reason.clone());
    match work {
        NetworkWork::Make { spec, again } => {
            if let Err(e) = tools.runtime.create_network(spec).await {
                return Outcome::failed_at(0, explain(&e));
            }
            let recorded = record(tools, NETWORKS, &spec.name, id);
            if let Err((i, e)) = attach_again(tools, &spec.name, again).await {
                return Outcome::failed_at(i + 1, e);
            }
            let mut outcome = decided();
            outcome.records.extend(recorded);
            outcome
        }
        NetworkWork::AttachAgain { again } => {
            let name = name_of(work);
            match attach_again(tools, &name, again).await {
                Ok(()) => decided(),
                Err((i, e)) => Outcome::failed_at(i, e),
            }
        }
        NetworkWork::Remake { spec, attached } => {
            let name = spec.name.as_str();
            let changed = decision
                .line
                .reason
                .as_deref()
                .and_then(|r| r.split(';').next())
                .unwrap_or("")
                .to_string();
            if let Err(reason) = remake(tools, spec, attached).await {
                return Outcome::failed_at(0, format!("{changed}: {reason}"));
            }
            let mut outcome = decided();
            outcome.records.extend(record(tools, NETWORKS, name, id));
            outcome
        }
    }
}

/// Detach every container, remove the network, make it as declared and
/// attach each container again as it declares.
async fn remake(
    tools: &Tools,
    spec: &crate::runtime::NetworkSpec,
    attached: &[(String, NetworkAttach)],
) -> Result<(), String> {
    let name = spec.name.as_str();
    let rt = &tools.runtime;
    let mut all = remakes(tools)?;
    all.insert(
        name.to_owned(),
        attached.iter().map(|(c, _)| c.clone()).collect(),
    );
    tools
        .store
        .save(REMAKES, &all)
        .map_err(|e| format!("cannot record the containers to attach again: {e}"))?;
    for (c, _) in attached {
        rt.disconnect(c, name).await.map_err(|e| explain(&e))?;
    }
    rt.remove_network(name).await.map_err(|e| explain(&e))?;
    crate::fault::pause("pause-in-network-remake", name).await;
    rt.create_network(spec).await.map_err(|e| explain(&e))?;
    let mut failed = Vec::new();
    for (c, attach) in attached {
        if let Err(e) = rt.connect(c, attach).await {
            failed.push(format!("{c}: {}", explain(&e)));
        }
    }
    if failed.is_empty() {
        remake_done(tools, name)
    } else {
        Err(format!(
            "made again, but not attached again: {}",
            failed.join("; ")
        ))
    }
}

/// A network this state made and no longer declares, no container on it.
pub(super) async fn remove(tools: &Tools, name: &str) -> Outcome {
    match tools.runtime.remove_network(name).await {
        Ok(()) => {
            let mut outcome = Outcome::new(Action::Removed, Some(format!("network {name}")));
            let forgotten = tools.store.load::<Names>(NETWORKS).and_then(|names| {
                let mut names = names.unwrap_or_default();
                if names.remove(name).is_some() {
                    tools.store.save(NETWORKS, &names)?;
                }
                Ok(())
            });
            if let Err(e) = forgotten {
                outcome
                    .records
                    .push(Record::Warning(format!("networks: {e}")));
            }
            outcome
        }
        Err(e) => Outcome::failed_at(0, explain(&e)),
    }
}
