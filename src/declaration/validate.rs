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
use std::collections::HashSet;

use super::raw::{
    kind_of, Field, Listed, RawDeclaration, RawResource, MAX_RESOURCES, RESOURCE_TYPES,
};
use super::refusal::Problem;
use super::types::{ModuleName, ResourceId};
use container::read_container;
use cross_check::cross_check;
use entry::{Entry, Kind};
use fields::{check, refuse_unknown, require, take, Found, Sink};
use files::{read_directory, read_file};
use units::read_unit;

mod container;
mod cross_check;
mod depends;
mod device_requests;
mod entry;
mod fields;
mod files;
mod health;
mod identities;
mod networking;
mod options;
mod ports;
mod security;
mod timing;
mod units;

/// Pass one, resource by resource as the reader gives them (so a raw
/// resource lives only until it is read into the model), then
/// [`Validator::finish`]: the top level and pass two.
pub(crate) struct Validator {
    found: Found,
    entries: Vec<Entry>,
    /// The valid ids seen so far, for labels.
    ids: HashSet<String>,
}

impl Validator {
    pub(crate) fn new() -> Validator {
        Validator {
            found: Found::new(),
            entries: Vec::new(),
            ids: HashSet::new(),
        }
    }

    /// Pass one on the next resource of the list.
    pub(crate) fn resource(&mut self, resource: Field<RawResource>) {
        let index = self.entries.len();
        let mut entry = Entry {
            order: index + 1,
            label: self.label(&resource, index),
            id: None,
            module: None,
            kind: Kind::Unknown,
            holds: Vec::new(),
            restart_on: Vec::new(),
            identities: Vec::new(),
            spans: Default::default(),
            built: None,
        };
        let mut s = entry.sink(&mut self.found);
        let built = read_resource(&mut s, resource, &mut entry);
        entry.built = built.map(Box::new);
        self.entries.push(entry);
    }

    /// How a resource is named in problems: its id when the id is valid
    /// and the first with that id, else `resources[N]`.
    fn label(&mut self, resource: &Field<RawResource>, index: usize) -> String {
        let id = match resource {
            Field::Present(r) => match r.id() {
                Field::Present(id) => Some(id.as_str()),
                _ => None,
            },
            Field::Invalid { value, .. } => value.get("id").and_then(Value::as_str),
            Field::Absent => None,
        };
        match id.filter(|id| ResourceId::try_from(*id).is_ok()) {
            Some(id) if self.ids.insert(id.to_owned()) => id.to_owned(),
            _ => format!("resources[{index}]"),
        }
    }

    /// The top level of `raw` (whose version was already checked, and
    /// whose resources went through [`Validator::resource`]), then pass two.
    pub(crate) fn finish(self, raw: RawDeclaration) -> Result<Declaration, Vec<Problem>> {
        let Validator {
            mut found,
            entries,
            ids: _,
        } = self;
        let mut top = Sink {
            found: &mut found,
            order: 0,
            resource: None,
        };
        refuse_unknown(&mut top, "", raw.unknown, Fields::Top);
        match raw.resources {
            Listed::Absent => top.at(
                "resources",
                "missing (a machine with nothing declared is \"resources\": [])",
            ),
            Listed::Invalid(value) => top.at(
                "resources",
                format!("expected an array of resources, found {}", kind_of(&value)),
            ),
            Listed::Read { beyond: 0 } => {}
            Listed::Read { beyond } => top.at(
                "resources",
                format!(
                    "{} resources: a declaration declares at most {MAX_RESOURCES}; the {beyond} after them were not read",
                    MAX_RESOURCES + beyond
                ),
            ),
        }

        cross_check(&mut found, &entries);

        if !found.is_empty() {
            return Err(found.into_problems());
        }
        let mut built = Vec::with_capacity(entries.len());
        for entry in entries {
            match entry.built {
                Some(resource) => built.push(*resource),
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
            let kind = read_container(s, *c, entry).map(|c| ResourceKind::Container(Box::new(c)));
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
            let kind = networking::read_network(s, *n, entry).map(ResourceKind::Network);
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
