//! The declaration, version 1: parse, validate, and the validated model.
//!
//! Bytes go through three stages, so that nothing invalid reaches the engine
//! and every problem is reported at once (CONTRACT "The declaration"):
//!
//! 1. `raw`: the JSON is checked (`strict`: syntax, duplicate keys refused,
//!    nesting bounded) and read straight into serde structs that mirror the
//!    wire format, with no tree of JSON values of the whole document. Every field is a `Field`, which
//!    records a wrong JSON type instead of failing, and every struct catches
//!    the keys it does not know; so one bad field never hides the next.
//! 2. `validate`: walks the raw structs, collects **every** problem, each
//!    naming the resource (its id, or `resources[N]` when it has no valid
//!    id) and the field (`mounts[0].readonly`, `while-stopped[1]`).
//! 3. [`model`]: the validated types the engine consumes. Their value
//!    fields are newtypes ([`types`]) built only through `TryFrom`, so none
//!    can hold an invalid value; a [`Declaration`] from [`parse`] also keeps
//!    the rules between resources (unique ids, what `while-stopped` names).
//!
//! [`lint()`] then looks at a valid declaration for things that are legal but
//! dangerous: warnings, not refusals.
//!
//! The model serialises (serde) to a canonical JSON form of the declaration
//! itself: defaults made explicit, fixed field order, maps sorted. `parse` of
//! that form gives back an equal model, and the apply engine can hash a
//! container's serialised form to notice a changed declaration.

mod base64;
pub mod depends;
pub mod hints;
pub mod identity;
pub mod input;
pub mod links;
pub mod lint;
pub mod model;
pub mod networking;
pub mod options;
pub mod overlaps;
pub mod raw;
mod refusal;
pub mod sandbox;
mod strict;
pub mod types;
mod validate;
mod version;

#[cfg(test)]
mod bounds_tests;
#[cfg(test)]
mod devices_tests;
#[cfg(test)]
mod networking_tests;
#[cfg(test)]
mod peer_tests;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod security_tests;
#[cfg(test)]
mod tests;

pub use identity::{
    root_granting_group, Access, AccountName, Grant, Identity, SharedFolder, ROOT_GRANTING,
};
pub use lint::{lint, notes, Note, Warning};
pub use model::{
    Container, Declaration, Directory, File, Health, HealthCheck, Mount, MountSource, Network,
    Resource, ResourceKind, Role, Schedule, Step, Unit, UnitState, UpdatePolicy,
};
pub use networking::{NetworkJoin, NetworkResource, Restart, Subnet, VolumeResource};
pub use refusal::{Problem, Refusal};
pub use types::{
    AbsPath, ContainerName, ImageRef, InvalidValue, Mode, ModuleName, NetworkName, Owner,
    ResourceId, UnitName, UserSpec, VolumeName,
};
pub use version::{SCHEMA, VERSION};

/// Parse and validate a declaration.
///
/// Never panics, whatever the bytes. A refusal lists every problem found;
/// input that is not JSON, not an object, or not version 1 is refused with
/// that one problem, since nothing else in it can be read with confidence.
pub fn parse(bytes: &[u8]) -> Result<Declaration, Refusal> {
    if bytes.len() as u64 > input::MAX_BYTES {
        return Err(Refusal::single(
            None,
            input::too_large(Some(bytes.len() as u64)),
        ));
    }
    strict::check(bytes).map_err(|e| {
        let message = match hints::not_json(bytes) {
            Some(hint) => format!("not valid JSON: {e}: {hint}"),
            None => format!("not valid JSON: {e}"),
        };
        Refusal::single(None, message)
    })?;
    let kind = strict::top_kind(bytes);
    if kind != "an object" {
        return Err(Refusal::single(
            None,
            format!(
                "a declaration is a JSON object {{\"declaration\": 1, \"resources\": [...]}}, found {kind}"
            ),
        ));
    }
    // Pass one of the validation runs as the resources are read, so that
    // each raw resource lives only until it is read into the model.
    let mut validator = validate::Validator::new();
    let raw = raw::read_declaration(bytes, |resource| validator.resource(resource))
        // Every field of the raw structs absorbs type errors, and the JSON
        // was checked above, so this is not expected to fail; if it does,
        // say so rather than panic.
        .map_err(|e| Refusal::single(None, format!("could not read the declaration: {e}")))?;
    match &raw.declaration {
        raw::Field::Absent => {
            return Err(Refusal::single(
                Some("declaration"),
                format!("missing: expected \"declaration\": {VERSION}"),
            ))
        }
        raw::Field::Present(v) if v.as_u64() == Some(VERSION) => {}
        raw::Field::Present(v) | raw::Field::Invalid { value: v, .. } => {
            return Err(Refusal::single(
                Some("declaration"),
                format!("this host reads declaration version {VERSION} only, found {v}"),
            ))
        }
    }
    validator
        .finish(raw)
        .map_err(|problems| Refusal { problems })
}
