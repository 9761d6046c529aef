//! Validation of a service's `depends-on`: each entry a container declared
//! before it (declaration order is the apply's, so no cycle can be
//! written), a `healthy` one a service with a health check. A network
//! peer (`network: "container:NAME"`) is an implicit `depends-on` and
//! is checked the same way.

use std::collections::HashMap;

use super::entry::{Entry, Kind, RoleKind};
use super::fields::{check, refuse_unknown, require, take, take_list, Found, Sink};
use crate::declaration::depends::{Condition, Dependency};
use crate::declaration::hints::Fields;
use crate::declaration::raw::{List, RawDependency};
use crate::declaration::types::{ContainerName, ResourceId};

/// Pass one: the entries as written.
pub(super) fn read_depends_on(s: &mut Sink, raw: List<RawDependency>) -> Vec<(String, Dependency)> {
    let mut out: Vec<(String, Dependency)> = Vec::new();
    let mut named: HashMap<ResourceId, usize> = HashMap::new();
    for (path, raw) in take_list(s, "depends-on", raw) {
        refuse_unknown(s, &path, raw.unknown, Fields::Dependency);
        let id_field = format!("{path}.id");
        let id = require(s, &id_field, raw.id)
            .and_then(|t| check(s, &id_field, ResourceId::try_from(t)));
        let condition_field = format!("{path}.condition");
        let condition = match take(s, &condition_field, raw.condition).as_deref() {
            None | Some("started") => Some(Condition::Started),
            Some("healthy") => Some(Condition::Healthy),
            Some(other) => {
                s.at(
                    &condition_field,
                    format!("{other:?} is not a condition: \"started\" or \"healthy\""),
                );
                None
            }
        };
        let (Some(id), Some(condition)) = (id, condition) else {
            continue;
        };
        if let Some((first, _)) = named.get(&id).and_then(|&i| out.get(i)) {
            s.at(
                &id_field,
                format!("{:?} is already named at {first}", id.as_str()),
            );
            continue;
        }
        named.insert(id.clone(), out.len());
        out.push((id_field, Dependency { id, condition }));
    }
    out
}

/// Pass two: what each entry names.
pub(super) fn cross_check(found: &mut Found, entries: &[Entry]) {
    // The first resource with each id, as a search from the start finds it.
    let mut first: HashMap<&ResourceId, usize> = HashMap::new();
    for (index, entry) in entries.iter().enumerate() {
        if let Some(id) = &entry.id {
            first.entry(id).or_insert(index);
        }
    }
    for (index, entry) in entries.iter().enumerate() {
        for (field, dep) in &entry.spans.depends_on {
            let field = field.clone();
            let target = first.get(&dep.id).copied();
            let Some(at) = target else {
                entry.sink(found).at(
                    field,
                    format!("{:?}: no container by that id", dep.id.as_str()),
                );
                continue;
            };
            let named = &entries[at];
            let role = match &named.kind {
                Kind::Container { role, .. } => *role,
                other => {
                    entry.sink(found).at(
                        field,
                        format!("{:?} is {}, not a container", dep.id.as_str(), other.noun()),
                    );
                    continue;
                }
            };
            if at >= index {
                entry.sink(found).at(
                    field,
                    format!(
                        "{:?} is declared after this container: declare it first (declaration order is the order of apply)",
                        dep.id.as_str()
                    ),
                );
                continue;
            }
            if role == RoleKind::Scheduled {
                entry.sink(found).at(
                    field,
                    format!(
                        "{:?} is a scheduled step: it runs on its schedule, not before a service",
                        dep.id.as_str()
                    ),
                );
                continue;
            }
            if dep.condition == Condition::Healthy {
                if role != RoleKind::Service {
                    entry.sink(found).at(
                        field,
                        format!("{:?} is a run-once step: it has run to completion before this starts, healthy has no meaning", dep.id.as_str()),
                    );
                } else if named.spans.health_disabled {
                    entry.sink(found).at(
                        field,
                        format!(
                            "{:?} has its health check disabled: it can never be healthy",
                            dep.id.as_str()
                        ),
                    );
                }
            }
        }
    }
}

/// Pass two: each container's network peer (`network: "container:NAME"`)
/// is another service container declared before it (made and started
/// before it, as a `depends-on` would) that joins no peer itself.
pub(super) fn cross_check_peers(found: &mut Found, entries: &[Entry]) {
    // The first container with each name, as the names' own check keeps it.
    let mut by_name: HashMap<&ContainerName, usize> = HashMap::new();
    for (index, entry) in entries.iter().enumerate() {
        if let Kind::Container {
            name: Some(name), ..
        } = &entry.kind
        {
            by_name.entry(name).or_insert(index);
        }
    }
    for (index, entry) in entries.iter().enumerate() {
        let Some(peer) = &entry.spans.peer else {
            continue;
        };
        let mode = format!("\"container:{peer}\"");
        let problem = match by_name.get(peer).map(|&at| (at, &entries[at])) {
            None => format!(
                "{mode}: no container named {:?} in this declaration: name the `name` of a service container declared before this one",
                peer.as_str()
            ),
            Some((at, _)) if at == index => format!(
                "{mode} is this container itself: name the service container whose network it shares"
            ),
            Some((at, named)) => match &named.kind {
                Kind::Container {
                    role: role @ (RoleKind::RunOnce | RoleKind::Scheduled),
                    ..
                } => format!(
                    "{mode}: {peer} ({}) is a {} step, whose container comes and goes: a network peer is a service container",
                    named.label,
                    if *role == RoleKind::RunOnce { "run-once" } else { "scheduled" }
                ),
                _ if at > index => format!(
                    "{mode}: {peer} ({}) is declared after this container: declare it first (declaration order is the order of apply, and the peer is started before the containers sharing its network)",
                    named.label
                ),
                _ => match &named.spans.peer {
                    Some(next) => format!(
                        "{mode}: {peer} ({}) shares the network of {next} itself: name \"container:{next}\" here (a namespace is shared with its owner, not through another follower)",
                        named.label
                    ),
                    None => continue,
                },
            },
        };
        entry.sink(found).at("network", problem);
    }
}
