//! The documents the apply engine keeps in the state directory.
//!
//! - [`APPLIED`](crate::store::APPLIED) (`applied.json`): what the last apply
//!   applied ([`AppliedState`]): the canonical declaration, when, whether it
//!   succeeded, its report lines, the files and unit files the host wrote.
//! - [`CONTAINER_INPUTS`](crate::store::CONTAINER_INPUTS)
//!   (`container-inputs.json`): per container name, what it was created
//!   from ([`ContainerInputs`]), so a recreate can say which file or field
//!   changed.
//!
//! - [`LAST_APPLY`](crate::store::LAST_APPLY) (`last-apply.json`): when
//!   the last apply ended ([`LastApply`]). Every apply writes it;
//!   `applied.json`, the size of the declaration twice, is written only
//!   when something in it other than the time changed. [`load_applied`]
//!   reads the two as one.
//!
//! Both are read before an apply changes anything; one that does not parse
//! fails the apply (the store names the file) instead of being taken as
//! empty.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::recorded::RecordedDeclaration;
use super::report::{Action, Halt, ReportLine};
use crate::container_spec::{BuiltContainer, DeclaredFields};

/// The format of [`AppliedState`] this host writes.
pub const APPLIED_FORMAT: u32 = 1;

/// What the last apply applied (`applied.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AppliedState {
    /// Format of this document ([`APPLIED_FORMAT`]).
    pub format: u32,
    /// The declaration, each resource in its canonical JSON form.
    pub declaration: RecordedDeclaration,
    /// When the apply ended.
    pub applied_at: DateTime<Utc>,
    /// Whether it succeeded.
    pub ok: bool,
    /// The run-once step it halted at, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halted: Option<Halt>,
    /// Its report lines.
    pub lines: Vec<ReportLine>,
    /// Every file the host wrote (or found as declared): path → SHA-256 of
    /// its content.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// Unit files the host wrote and has not removed since, by unit name.
    #[serde(default)]
    pub units: Vec<String>,
    /// Names of the containers this state directory has declared and not
    /// removed since: the only managed containers an apply removes when
    /// they are no longer declared (another state directory's, or one
    /// made before this state existed, are left alone).
    #[serde(default)]
    pub containers: Vec<String>,
}

impl AppliedState {
    /// Whether `self` says all `other` says but when the apply ended.
    pub fn same_but_time(&self, other: &AppliedState) -> bool {
        self.format == other.format
            && self.ok == other.ok
            && self.halted == other.halted
            && self.lines == other.lines
            && self.files == other.files
            && self.units == other.units
            && self.containers == other.containers
            && self.declaration == other.declaration
    }
}

/// When the last apply ended (`last-apply.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct LastApply {
    /// When it ended.
    pub applied_at: DateTime<Utc>,
}

/// What the last apply applied, with when it ended: `applied.json`, its
/// time the later of its own and `last-apply.json`'s (an apply that
/// changed nothing writes only the latter; one killed between the two
/// writes leaves the former's, which is its own).
pub fn load_applied(
    store: &crate::store::Store,
) -> Result<Option<AppliedState>, crate::store::StoreError> {
    let Some(mut applied) = store.load::<AppliedState>(crate::store::APPLIED)? else {
        return Ok(None);
    };
    if let Some(last) = store.load::<LastApply>(crate::store::LAST_APPLY)? {
        applied.applied_at = applied.applied_at.max(last.applied_at);
    }
    Ok(Some(applied))
}

/// What one container was created from (`container-inputs.json`, by name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ContainerInputs {
    /// The resource id it was created for.
    pub resource: String,
    /// Its identity digest (also its `mesh-host.identity` label).
    pub identity: String,
    /// Its runtime-relevant declared fields.
    pub fields: DeclaredFields,
    /// Each file it read at creation and that file's SHA-256 (`null`:
    /// absent).
    pub reads: BTreeMap<String, Option<String>>,
}

impl ContainerInputs {
    /// The inputs of a container built for resource `resource`.
    pub fn of(resource: &str, built: &BuiltContainer) -> Self {
        ContainerInputs {
            resource: resource.to_string(),
            identity: built.identity.clone(),
            fields: built.fields.clone(),
            reads: built.reads.clone(),
        }
    }

    /// What differs between these (recorded) inputs and `new`, for a
    /// report: files first (`/etc/app/env changed`), then fields
    /// (`image changed`).
    pub fn changes_to(&self, new: &BuiltContainer) -> Vec<String> {
        let mut out = Vec::new();
        for (path, digest) in &new.reads {
            match self.reads.get(path) {
                Some(old) if old == digest => {}
                Some(_) => out.push(format!("{path} changed")),
                None => out.push(format!("{path} is now read")),
            }
        }
        for path in self.reads.keys() {
            if !new.reads.contains_key(path) {
                out.push(format!("{path} is no longer read"));
            }
        }
        let (old, new) = (self.fields.map(), new.fields.map());
        for (field, value) in &new {
            if old.get(field) != Some(value) {
                out.push(format!("{field} changed"));
            }
        }
        for field in old.keys() {
            if !new.contains_key(field) {
                out.push(format!("{field} changed"));
            }
        }
        out
    }
}

/// The scheduled steps `previous` installed (or found unchanged), by id:
/// the index of each in that apply's declared resources
/// ([`RecordedDeclaration::resource`]), not a copy (at 5,000 steps the copies were a
/// tenth of an apply's peak).
///
/// The previous declaration's resources are indexed by id once: a lookup
/// per report line would cost O(n²) over a declaration of n resources
/// (a thousand services took a large share of a no-op apply that way).
pub(super) fn installed_steps(previous: &AppliedState) -> BTreeMap<String, usize> {
    let scheduled: BTreeMap<String, usize> = previous
        .declaration
        .heads()
        .enumerate()
        .filter(|(_, head)| head.scheduled)
        .filter_map(|(i, head)| Some((head.id?, i)))
        .collect();
    previous
        .lines
        .iter()
        .filter(|l| matches!(l.action, Action::Installed | Action::Unchanged))
        .filter_map(|l| Some((l.id.clone(), *scheduled.get(l.id.as_str())?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn built(fields: &[(&str, Value)], reads: &[(&str, Option<&str>)]) -> BuiltContainer {
        let fields: BTreeMap<String, Value> = fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let reads: BTreeMap<String, Option<String>> = reads
            .iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
            .collect();
        BuiltContainer {
            spec: Default::default(),
            identity: crate::container_spec::identity_of(&fields, &reads),
            fields: DeclaredFields::of(&fields),
            reads,
        }
    }

    #[test]
    fn changes_name_files_first_then_fields() {
        let old = built(
            &[("image", json!("a@sha256:1")), ("command", json!(["x"]))],
            &[("/etc/app/env", Some("aa")), ("/etc/gone", Some("cc"))],
        );
        let new = built(
            &[("image", json!("a@sha256:2")), ("command", json!(["x"]))],
            &[("/etc/app/env", Some("bb")), ("/etc/new", None)],
        );
        let recorded = ContainerInputs::of("web", &old);
        assert_eq!(
            recorded.changes_to(&new),
            vec![
                "/etc/app/env changed",
                "/etc/new is now read",
                "/etc/gone is no longer read",
                "image changed"
            ]
        );
        assert!(recorded.changes_to(&old).is_empty());
    }

    #[test]
    fn applied_state_round_trips_and_refuses_unknown_fields() {
        let state = AppliedState {
            format: APPLIED_FORMAT,
            declaration: RecordedDeclaration::from_value(
                &json!({"declaration": 1, "resources": []}),
            ),
            applied_at: Utc::now(),
            ok: true,
            halted: None,
            lines: vec![ReportLine {
                id: "web".into(),
                action: super::super::Action::HeldStill,
                reason: Some("held".into()),
                diff: None,
                steps: Vec::new(),
            }],
            files: BTreeMap::from([("/etc/x".to_string(), "ab".to_string())]),
            units: vec!["a.service".into()],
            containers: vec!["web".into()],
        };
        let mut value = serde_json::to_value(&state).expect("serialize");
        assert_eq!(value["lines"][0]["action"], "held-still");
        let back: AppliedState =
            serde_json::from_str(&serde_json::to_string(&state).expect("encode")).expect("decode");
        assert_eq!(back, state);
        value["surprise"] = json!(1);
        assert!(serde_json::from_str::<AppliedState>(&value.to_string()).is_err());
    }
}
