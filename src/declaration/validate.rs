//! From raw structs to the model, collecting every problem.
//!
//! Two passes. The first reads each resource on its own: field types, value
//! rules (through the newtypes' `TryFrom`), rules between fields of one
//! resource. The second checks what spans resources: unique ids, names and
//! paths, and the ids `while-stopped` and `restart-on` point at. A model is
//! returned only when both passes found nothing.

use crate::declaration::hints::Fields;
use serde_json::Value;

use super::model::{Declaration, Resource, ResourceKind};
use super::raw::{kind_of, Field, RawDeclaration, RawResource, RESOURCE_TYPES};
use super::types::{ModuleName, ResourceId};
use super::Problem;
use container::read_container;
use cross_check::cross_check;
use entry::{Entry, Kind};
use fields::{check, refuse_unknown, require, take, Found, Sink};
use files::{read_directory, read_file};
use units::read_unit;

mod container;
mod cross_check;
mod depends;
mod entry;
mod fields;
mod files;
mod health;
mod identities;
mod networking;
mod options;
mod timing;
mod units;

/// Validate a raw declaration (whose version was already checked).
pub(crate) fn validate(raw: RawDeclaration) -> Result<Declaration, Vec<Problem>> {
    let mut found = Found::new();
    let mut top = Sink {
        found: &mut found,
        order: 0,
        resource: None,
    };
    refuse_unknown(&mut top, "", raw.unknown, Fields::Top);
    let resources = match raw.resources {
        Field::Absent => {
            top.at(
                "resources",
                "missing (a machine with nothing declared is \"resources\": [])",
            );
            Vec::new()
        }
        Field::Invalid { value, .. } => {
            top.at(
                "resources",
                format!("expected an array of resources, found {}", kind_of(&value)),
            );
            Vec::new()
        }
        Field::Present(resources) => resources,
    };

    let labels = labels(&resources);
    let entries: Vec<Entry> = resources
        .into_iter()
        .zip(labels)
        .enumerate()
        .map(|(index, (resource, label))| {
            let mut entry = Entry {
                order: index + 1,
                label,
                id: None,
                module: None,
                kind: Kind::Unknown,
                holds: Vec::new(),
                restart_on: Vec::new(),
                identities: Vec::new(),
                built: None,
            };
            let mut s = entry.sink(&mut found);
            let built = read_resource(&mut s, resource, &mut entry);
            entry.built = built;
            entry
        })
        .collect();

    cross_check(&mut found, &entries);

    if !found.is_empty() {
        // Stable: each resource's problems stay in the order they were found.
        found.sort_by_key(|(order, _)| *order);
        return Err(found.into_iter().map(|(_, p)| p).collect());
    }
    let mut built = Vec::with_capacity(entries.len());
    for entry in entries {
        match entry.built {
            Some(resource) => built.push(resource),
            // Every path that leaves a resource unbuilt reports why; this is
            // the validator failing, said as such rather than a panic.
            None => {
                return Err(vec![Problem {
                    resource: Some(entry.label),
                    field: None,
                    message: "could not be validated (a fault in mesh-host: please report it)"
                        .to_owned(),
                }])
            }
        }
    }
    Ok(Declaration { resources: built })
}

/// How each resource is named in problems: its id when the id is valid and
/// the first with that id, else `resources[N]`.
fn labels(resources: &[Field<RawResource>]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    resources
        .iter()
        .enumerate()
        .map(|(index, resource)| {
            let id = match resource {
                Field::Present(r) => match r.id() {
                    Field::Present(id) => Some(id.as_str()),
                    _ => None,
                },
                Field::Invalid { value, .. } => value.get("id").and_then(Value::as_str),
                Field::Absent => None,
            };
            match id.filter(|id| ResourceId::try_from(*id).is_ok()) {
                Some(id) if seen.insert(id.to_owned()) => id.to_owned(),
                _ => format!("resources[{index}]"),
            }
        })
        .collect()
}

fn read_resource(
    s: &mut Sink,
    resource: Field<RawResource>,
    entry: &mut Entry,
) -> Option<Resource> {
    let raw = match resource {
        Field::Present(raw) => raw,
        Field::Invalid { value, error } => {
            diagnose(s, &value, error, entry);
            return None;
        }
        // A list item is never absent.
        Field::Absent => return None,
    };
    let (id, module, kind) = match raw {
        RawResource::Container(mut c) => {
            let (id, module) = common(s, &mut c.id, &mut c.module, entry);
            let kind = read_container(s, c, entry).map(ResourceKind::Container);
            (id, module, kind)
        }
        RawResource::File(mut f) => {
            let (id, module) = common(s, &mut f.id, &mut f.module, entry);
            (id, module, read_file(s, f, entry).map(ResourceKind::File))
        }
        RawResource::Directory(mut d) => {
            let (id, module) = common(s, &mut d.id, &mut d.module, entry);
            (
                id,
                module,
                read_directory(s, d, entry).map(ResourceKind::Directory),
            )
        }
        RawResource::Unit(mut u) => {
            let (id, module) = common(s, &mut u.id, &mut u.module, entry);
            (id, module, read_unit(s, u, entry).map(ResourceKind::Unit))
        }
        RawResource::Identity(mut i) => {
            let (id, module) = common(s, &mut i.id, &mut i.module, entry);
            let kind = identities::read_identity(s, i, entry).map(ResourceKind::Identity);
            (id, module, kind)
        }
        RawResource::SharedFolder(mut f) => {
            let (id, module) = common(s, &mut f.id, &mut f.module, entry);
            let kind = identities::read_shared_folder(s, f, entry).map(ResourceKind::SharedFolder);
            (id, module, kind)
        }
        RawResource::Network(mut n) => {
            let (id, module) = common(s, &mut n.id, &mut n.module, entry);
            let kind = networking::read_network(s, n, entry).map(ResourceKind::Network);
            (id, module, kind)
        }
        RawResource::Volume(mut v) => {
            let (id, module) = common(s, &mut v.id, &mut v.module, entry);
            let kind = networking::read_volume(s, v, entry).map(ResourceKind::Volume);
            (id, module, kind)
        }
    };
    Some(Resource {
        id: id?,
        module: module?,
        kind: kind?,
    })
}

/// `id` and `module`, which every type has.
fn common(
    s: &mut Sink,
    id: &mut Field<String>,
    module: &mut Field<String>,
    entry: &mut Entry,
) -> (Option<ResourceId>, Option<Option<ModuleName>>) {
    let (id, module) = (std::mem::take(id), std::mem::take(module));
    let id = require(s, "id", id).and_then(|id| check(s, "id", ResourceId::try_from(id)));
    let module = match module {
        Field::Absent => Some(None),
        other => take(s, "module", other)
            .and_then(|m| check(s, "module", ModuleName::try_from(m)))
            .map(Some),
    };
    entry.id = id.clone();
    entry.module = module.clone();
    (id, module)
}

/// Say why a resource could not be read as any type.
fn diagnose(s: &mut Sink, value: &Value, error: String, entry: &mut Entry) {
    let Some(object) = value.as_object() else {
        s.whole(format!("a resource is an object, found {}", kind_of(value)));
        return;
    };
    // Its id still counts: for duplicates, and for what points at it.
    if let Some(id) = object.get("id") {
        match id.as_str() {
            Some(text) => entry.id = check(s, "id", ResourceId::try_from(text)),
            None => s.at("id", format!("expected a string, found {}", kind_of(id))),
        }
    }
    let types = RESOURCE_TYPES.join(", ");
    match object.get("type") {
        None => s.at("type", format!("missing: one of {types}")),
        Some(Value::String(t)) if !RESOURCE_TYPES.contains(&t.as_str()) => {
            s.at("type", format!("unknown type {t:?}: one of {types}"))
        }
        Some(Value::String(_)) => s.whole(error),
        Some(other) => s.at(
            "type",
            format!(
                "expected a string, one of {types}; found {}",
                kind_of(other)
            ),
        ),
    }
}
