//! What the host made and no longer declares, decided after the declared
//! resources: containers, networks and volumes, units, shared folders,
//! accounts; and the leftovers of interrupted creates and replaces.
//!
//! Removal touches only what this state directory made: managed
//! containers it declared before
//! ([`AppliedState::containers`](crate::apply::state::AppliedState::containers)),
//! networks, units, folders and accounts its records name. A container held by a live window
//! stays (`held-still`). A removed container's volumes are kept and
//! named; a volume is never removed.

use std::collections::BTreeSet;

use super::super::plan::{Decision, Kind, Plan, Slot, Tidy, Work};
use super::super::report::{Action, ReportLine};
use super::context::Context;
use crate::declaration::ResourceKind;
use crate::runtime::{
    is_left_from_making, kept_volumes_note, replaced_base, ContainerSummary, LABEL_MADE_AS,
    LABEL_RESOURCE, MAKING_GRACE,
};

/// A removal's decision.
fn removal(
    kind: &'static str,
    name: &str,
    id: &str,
    action: Action,
    reason: String,
    work: Work,
) -> Decision {
    Decision::new(
        Slot::Removal(kind, name.to_string()),
        Kind::Removal,
        ReportLine::new(id, action, Some(reason)),
        work,
    )
}

/// `reason`, then `note` (what a removal keeps), if any.
fn with_note(reason: String, note: Option<String>) -> String {
    match note {
        Some(note) => format!("{reason}; {note}"),
        None => reason,
    }
}

/// Every removal, in order: containers, networks and volumes, units,
/// shared folders, accounts.
pub(super) async fn removals(d: &mut Context<'_>, plan: &mut Plan) {
    containers(d, plan).await;
    let removed: BTreeSet<String> = plan
        .decisions
        .iter()
        .filter_map(|decision| match &decision.work {
            Work::RemoveContainer { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    networks_and_volumes(d, plan, &removed).await;
    units(d, plan);
    folders(d, plan);
    accounts(d, plan);
}

async fn containers(d: &mut Context<'_>, plan: &mut Plan) {
    let listing = match &d.facts.listing {
        Ok(listing) => listing,
        Err(e) => {
            plan.warnings.push(format!(
                "cannot list the managed containers, so none was removed: {e}"
            ));
            return;
        }
    };
    let declared: BTreeSet<&str> = d.decl.containers().map(|(_, c)| c.name.as_str()).collect();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |t| t.as_secs() as i64);
    let grace = crate::fault::making_grace(MAKING_GRACE);
    for (name, summary) in listing {
        if is_left_from_making(summary, now, grace) {
            let made_as = summary
                .labels
                .get(LABEL_MADE_AS)
                .map(String::as_str)
                .unwrap_or_default();
            // Made as a name another state directory declares: not ours.
            if declared.contains(made_as) || d.facts.known.contains(made_as) {
                plan.tidy.push(Tidy::Making {
                    name: name.clone(),
                    made_as: made_as.to_string(),
                });
            }
            continue;
        }
        if let Some(base) = replaced_base(name).filter(|_| !declared.contains(name.as_str())) {
            if let Some(decision) = set_aside(d, plan, summary, base, &declared).await {
                plan.decisions.push(decision);
            }
            continue;
        }
        if declared.contains(name.as_str())
            || d.consumed.contains(name)
            || !d.facts.known.contains(name)
        {
            continue;
        }
        let id = summary
            .labels
            .get(LABEL_RESOURCE)
            .cloned()
            .unwrap_or_else(|| name.clone());
        if let Some(why) = d.facts.held.get(name) {
            let reason = format!("{name} is no longer declared but {why}");
            plan.decisions.push(removal(
                "container",
                name,
                &id,
                Action::HeldStill,
                reason,
                Work::Nothing,
            ));
            continue;
        }
        // What it keeps is named in its line: the one inspect a removal
        // costs.
        let note = match d.view.inspect(name).await {
            Ok(Some(info)) => kept_volumes_note(&info.volumes),
            _ => None,
        };
        let reason = with_note(format!("container {name} is no longer declared"), note);
        let work = Work::RemoveContainer {
            name: name.clone(),
            stopped_only: false,
        };
        plan.decisions.push(removal(
            "container",
            name,
            &id,
            Action::Removed,
            reason,
            work,
        ));
    }
    // Records of containers that are gone and not declared.
    plan.inputs_gone = d
        .facts
        .inputs
        .keys()
        .filter(|n| !declared.contains(n.as_str()) && !listing.contains_key(*n))
        .cloned()
        .collect();
}

/// Whether a replacement of `base` gated on health, or its roll back,
/// is recorded (readable or not, or the records cannot be listed): the
/// container set aside for it may be the good one, and is never tidied
/// away while the record stands (its service's own decision settles it).
fn recorded(d: &Context<'_>, base: &str) -> bool {
    let rollout = d.facts.rollouts.as_ref().map_or(true, |r| {
        r.found.contains_key(base) || r.unreadable.contains_key(base)
    });
    let refusal = d
        .facts
        .refused
        .as_ref()
        .map_or(true, |r| r.unreadable.contains_key(base));
    rollout || refusal
}

/// A container an interrupted replace set aside under the replaced name
/// of `base`, if `base` is this state's: while `base` is declared it stays
/// until a container of that name exists that the plan keeps (a create or
/// replace of `base` carries its volumes, or takes it out of the way),
/// then it is tidied away; once `base` is no longer declared it is
/// removed like any container, its line naming the volumes it keeps.
async fn set_aside(
    d: &mut Context<'_>,
    plan: &mut Plan,
    summary: &ContainerSummary,
    base: &str,
    declared: &BTreeSet<&str>,
) -> Option<Decision> {
    let name = summary.name.as_str();
    let ours = declared.contains(base) || d.facts.known.contains(base);
    if summary.running || !ours || d.facts.held.contains_key(base) {
        return None;
    }
    if declared.contains(base) {
        let listed = d.facts.listing.as_ref().is_ok_and(|l| l.contains_key(base));
        if !listed || d.replacing.contains(base) || recorded(d, base) {
            return None;
        }
        let made = d.view.inspect(base).await.ok().flatten()?;
        let left = d.view.inspect(name).await.ok().flatten()?;
        let unused: Vec<_> = left
            .volumes
            .into_iter()
            .filter(|v| !made.volumes.iter().any(|m| m.name == v.name))
            .collect();
        plan.tidy.push(Tidy::SetAside {
            name: name.to_string(),
            base: base.to_string(),
            unused: kept_volumes_note(&unused),
        });
        return None;
    }
    let id = summary
        .labels
        .get(LABEL_RESOURCE)
        .cloned()
        .unwrap_or_else(|| base.to_string());
    let note = match d.view.inspect(name).await {
        Ok(Some(info)) => kept_volumes_note(&info.volumes),
        _ => None,
    };
    let reason = with_note(
        format!(
            "container {name}, set aside by an interrupted replace of {base}, is no longer declared"
        ),
        note,
    );
    let work = Work::RemoveContainer {
        name: name.to_string(),
        stopped_only: true,
    };
    Some(removal(
        "container",
        name,
        &id,
        Action::Removed,
        reason,
        work,
    ))
}

/// Each network this state made and no longer declares is removed,
/// unless a container still uses it once the plan has removed what it
/// removes (`removed`) and made anew what it makes anew; each volume no
/// longer declared is said once to be kept.
async fn networks_and_volumes(d: &mut Context<'_>, plan: &mut Plan, removed: &BTreeSet<String>) {
    let declared_networks: Vec<String> =
        d.decl.networks().map(|(_, n)| n.name.to_string()).collect();
    let declared_volumes: Vec<String> = d.decl.volumes().map(|(_, v)| v.name.to_string()).collect();
    let (networks, volumes) = match (&d.facts.networks, &d.facts.volumes) {
        (Ok(n), Ok(v)) => (n, v),
        (Err(e), _) | (_, Err(e)) => {
            plan.failed_before = true;
            plan.warnings.push(format!(
                "networks and volumes no longer declared are not looked at: {e}"
            ));
            return;
        }
    };
    for (name, id) in networks
        .iter()
        .filter(|(n, _)| !declared_networks.contains(n))
    {
        let decision = match d.view.network(name).await {
            Ok(None) => {
                plan.networks_gone.push(name.clone());
                continue;
            }
            Ok(Some(live)) if !users_after(d, &live.containers, name, removed).is_empty() => {
                let users = users_after(d, &live.containers, name, removed);
                let reason = format!(
                    "network {name} is no longer declared, but {} still {} it",
                    users.join(", "),
                    if users.len() == 1 { "uses" } else { "use" }
                );
                removal(
                    "network",
                    name,
                    id,
                    Action::Other("kept".into()),
                    reason,
                    Work::Nothing,
                )
            }
            Ok(Some(_)) => removal(
                "network",
                name,
                id,
                Action::Removed,
                format!("network {name}"),
                Work::RemoveNetwork(name.clone()),
            ),
            Err(e) => removal(
                "network",
                name,
                id,
                Action::Failed,
                crate::runtime::explain(&e),
                Work::Nothing,
            ),
        };
        plan.decisions.push(decision);
    }
    for (name, id) in volumes
        .iter()
        .filter(|(n, _)| !declared_volumes.contains(n))
    {
        let reason = format!(
            "volume {name} is no longer declared; mesh-host never removes a volume: \
             `docker volume rm {name}` frees it, and its data"
        );
        let work = Work::ForgetVolume(name.clone());
        plan.decisions.push(removal(
            "volume",
            name,
            id,
            Action::Other("kept".into()),
            reason,
            work,
        ));
    }
}

/// The containers of `attached` still on network `name` once the plan is
/// carried out: not removed, not replaced under another name, and, when
/// made anew, declared on it still.
fn users_after(
    d: &Context<'_>,
    attached: &[String],
    name: &str,
    removed: &BTreeSet<String>,
) -> Vec<String> {
    attached
        .iter()
        .filter(|c| !removed.contains(*c) && !d.consumed.contains(*c))
        .filter(|c| {
            !d.replacing.contains(*c)
                || d.decl
                    .containers()
                    .find(|(_, declared)| declared.name.as_str() == c.as_str())
                    .is_some_and(|(_, declared)| {
                        super::networks::attach_of(declared, name).is_some()
                    })
        })
        .cloned()
        .collect()
}

/// The unit files the host wrote and no longer declares: stopped,
/// disabled, deleted.
fn units(d: &mut Context<'_>, plan: &mut Plan) {
    let declared: BTreeSet<String> = d
        .decl
        .resources
        .iter()
        .filter_map(|r| match &r.kind {
            ResourceKind::Unit(u) => Some(u.name.to_string()),
            _ => None,
        })
        .collect();
    let written = d.facts.previous.iter().flat_map(|p| p.units.iter());
    for name in written.filter(|n| !declared.contains(*n)) {
        let decision = match d.units {
            Ok(_) => removal(
                "unit",
                name,
                name,
                Action::Removed,
                "no longer declared: stopped, disabled, its file deleted".into(),
                Work::RemoveUnit(name.clone()),
            ),
            Err(missing) => removal(
                "unit",
                name,
                name,
                Action::Failed,
                format!("no longer declared, but cannot be removed: {missing}"),
                Work::Nothing,
            ),
        };
        plan.decisions.push(decision);
    }
}

/// The folders no longer declared (or declared at another path): the
/// host's entries taken away, their data left.
fn folders(d: &mut Context<'_>, plan: &mut Plan) {
    let declared: Vec<(String, String)> = d
        .decl
        .resources
        .iter()
        .filter_map(|r| match &r.kind {
            ResourceKind::SharedFolder(f) => Some((r.id.to_string(), f.path.to_string())),
            _ => None,
        })
        .collect();
    let managed = match &d.facts.folders {
        Ok((managed, _)) => managed,
        Err(e) => {
            plan.failed_before = true;
            plan.warnings.push(format!(
                "shared folders no longer declared keep their entries: {e}"
            ));
            return;
        }
    };
    for (id, m) in &managed.folders {
        if declared.iter().any(|(did, p)| did == id && *p == m.path) {
            continue;
        }
        let reason = format!("entries taken away from {}, data left", m.path);
        let work = Work::RemoveFolder {
            id: id.clone(),
            folder: m.clone(),
        };
        plan.decisions.push(removal(
            "shared-folder",
            id,
            id,
            Action::Removed,
            reason,
            work,
        ));
    }
}

/// The accounts the host made that no identity declares now.
fn accounts(d: &mut Context<'_>, plan: &mut Plan) {
    let declared: Vec<String> = d
        .decl
        .resources
        .iter()
        .filter_map(|r| match &r.kind {
            ResourceKind::Identity(i) => Some(i.name.to_string()),
            _ => None,
        })
        .collect();
    let record = match &d.facts.accounts {
        Ok(record) => record,
        Err(e) => {
            plan.failed_before = true;
            plan.warnings
                .push(format!("accounts no longer declared are not removed: {e}"));
            return;
        }
    };
    for (name, m) in record.iter().filter(|(name, _)| !declared.contains(name)) {
        let work = Work::RemoveAccount {
            name: name.clone(),
            made: m.clone(),
        };
        plan.decisions.push(removal(
            "account",
            name,
            &m.id,
            Action::Removed,
            format!("account {name}"),
            work,
        ));
    }
}
