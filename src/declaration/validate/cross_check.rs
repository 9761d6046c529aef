//! The second pass: what spans resources. Unique ids, container names,
//! paths and unit names; the containers `while-stopped` holds and the files
//! `restart-on` follows; the identities resources name
//! ([`super::identities::cross_check`]).

use std::collections::HashMap;

use super::entry::{Entry, Kind, RoleKind};
use super::fields::Found;
use super::identities;
use crate::declaration::types::{ModuleName, ResourceId};

/// Pass two: what spans resources.
pub(super) fn cross_check(found: &mut Found, entries: &[Entry]) {
    // First resource with each id; later ones are duplicates.
    let mut by_id: HashMap<ResourceId, usize> = HashMap::new();
    for (index, entry) in entries.iter().enumerate() {
        let Some(id) = &entry.id else { continue };
        match by_id.get(id) {
            Some(first) => entry.sink(found).at(
                "id",
                format!("{:?} is already the id of resources[{first}]", id.as_str()),
            ),
            None => {
                by_id.insert(id.clone(), index);
            }
        }
    }

    unique(
        found,
        entries,
        "name",
        "the name of container",
        |kind| match kind {
            Kind::Container { name, .. } => name.as_ref().map(|n| n.to_string()),
            _ => None,
        },
    );
    unique(found, entries, "path", "declared by", |kind| match kind {
        Kind::File(path) | Kind::Directory(path) => path.as_ref().map(|p| p.to_string()),
        _ => None,
    });
    unique(
        found,
        entries,
        "name",
        "the name of unit",
        |kind| match kind {
            Kind::Unit(name) => name.as_ref().map(|n| n.to_string()),
            _ => None,
        },
    );

    published_ports(found, entries);
    super::networking::cross_check(found, entries);
    super::depends::cross_check(found, entries);
    super::depends::cross_check_peers(found, entries);

    identities::cross_check(found, entries, &by_id);

    for entry in entries.iter() {
        let mut s = entry.sink(found);
        for (field, target) in &entry.holds {
            if entry.id.as_ref() == Some(target) {
                s.at(
                    field,
                    format!(
                        "{:?} is this step itself: a step cannot hold itself still",
                        target.as_str()
                    ),
                );
                continue;
            }
            let Some(held) = by_id.get(target).map(|&i| &entries[i]) else {
                s.at(
                    field,
                    format!("{:?}: no container by that id", target.as_str()),
                );
                continue;
            };
            match &held.kind {
                Kind::Container {
                    role: RoleKind::Service,
                    ..
                } => {
                    if let (Some(step_module), Some(held_module)) = (&entry.module, &held.module) {
                        if step_module != held_module {
                            s.at(field, module_mismatch(target, step_module, held_module));
                        }
                    }
                }
                Kind::Container { role, .. } => s.at(
                    field,
                    format!(
                        "{:?} is a {} step, not a service container to hold still",
                        target.as_str(),
                        if *role == RoleKind::RunOnce {
                            "run-once"
                        } else {
                            "scheduled"
                        }
                    ),
                ),
                other => s.at(
                    field,
                    format!(
                        "{:?}: no container by that id (it is {})",
                        target.as_str(),
                        other.noun()
                    ),
                ),
            }
        }
        for (field, target) in &entry.restart_on {
            match by_id.get(target).map(|&i| &entries[i].kind) {
                Some(Kind::File(_)) => {}
                Some(other) => s.at(
                    field,
                    format!(
                        "{:?}: no file by that id (it is {})",
                        target.as_str(),
                        other.noun()
                    ),
                ),
                None => s.at(field, format!("{:?}: no file by that id", target.as_str())),
            }
        }
    }
}

fn module_mismatch(
    target: &ResourceId,
    step: &Option<ModuleName>,
    held: &Option<ModuleName>,
) -> String {
    let target = target.as_str();
    match (step, held) {
        (Some(step), Some(held)) => format!(
            "{target:?} is in module {:?}, not in this step's module {:?}",
            held.as_str(),
            step.as_str()
        ),
        (Some(step), None) => format!(
            "{target:?} is in no module, not in this step's module {:?}",
            step.as_str()
        ),
        (None, Some(held)) => format!(
            "{target:?} is in module {:?}, and this step is in none",
            held.as_str()
        ),
        (None, None) => format!("{target:?} is in another module"),
    }
}

/// Refuse a second resource with the same key (container name, path, unit).
fn unique(
    found: &mut Found,
    entries: &[Entry],
    field: &str,
    relation: &str,
    key: impl Fn(&Kind) -> Option<String>,
) {
    let mut first: HashMap<String, &str> = HashMap::new();
    for entry in entries {
        let Some(k) = key(&entry.kind) else { continue };
        match first.get(k.as_str()) {
            Some(label) => entry
                .sink(found)
                .at(field, format!("{k:?} is already {relation} {label}")),
            None => {
                first.insert(k, &entry.label);
            }
        }
    }
}

/// No two containers publish the same host port (same protocol and port,
/// the same address or either of them every address): the second could
/// never start beside the first.
fn published_ports(found: &mut Found, entries: &[Entry]) {
    let mut bound: super::ports::Bound<(&str, String)> = super::ports::Bound::new();
    for entry in entries {
        let Kind::Container { name, .. } = &entry.kind else {
            continue;
        };
        // A container whose name did not read is named by its label.
        let name = name
            .as_ref()
            .map_or_else(|| entry.label.clone(), |n| n.to_string());
        for (path, port) in &entry.spans.ports {
            // Only host ports are published ports.
            if port.host.is_none() {
                continue;
            }
            if let Some((label, name)) = bound.first(port) {
                entry.sink(found).at(
                    path.clone(),
                    format!("{port}: container {name} ({label}) publishes that host port already"),
                );
                continue;
            }
            bound.take(port, (&entry.label, name.clone()));
        }
    }
}
