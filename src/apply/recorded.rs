//! The declaration an apply records in `applied.json`
//! ([`AppliedState::declaration`](super::AppliedState::declaration)):
//! each resource kept as its canonical JSON text, not as a JSON tree.
//!
//! A tree is about four times its text (15.9 MB for the 3.9 MB of 1,000
//! services and 5,000 steps), and an apply held two at once: the record
//! read back and the one it writes. What the record is for needs the
//! text only: whether a step is declared as the last apply installed it
//! (one resource compared), what the last apply declared (a few fields
//! of each resource, [`Head`]), and the whole declaration parsed again by
//! `status --local` and `metrics --local`.
//!
//! The canonical text of a resource is its JSON with the keys sorted, as
//! `serde_json::Value` writes it. Two texts that differ are compared as
//! trees before they are called different, so a record written by an
//! older build (the same JSON, indented) still compares equal.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::declaration::Declaration;

/// See the module documentation.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedDeclaration {
    /// The declaration format it was written in.
    declaration: Value,
    /// Its resources, in order, each as its canonical JSON.
    resources: Vec<Box<RawValue>>,
}

/// What the record's readers ask of a resource, read without building
/// its tree (a field absent, `null` or of another type reads as `None`).
#[derive(Debug, Default, Deserialize)]
pub struct Head {
    /// Its id.
    #[serde(default, deserialize_with = "string_or_none")]
    pub id: Option<String>,
    /// Its type (`container`, `unit`, …).
    #[serde(default, rename = "type", deserialize_with = "string_or_none")]
    pub kind: Option<String>,
    /// Its `name`, where its type has one.
    #[serde(default, deserialize_with = "string_or_none")]
    pub name: Option<String>,
    /// Whether it has a schedule (a scheduled step).
    #[serde(default, rename = "schedule", deserialize_with = "present")]
    pub scheduled: bool,
}

impl RecordedDeclaration {
    /// The record of `decl`.
    pub fn of(decl: &Declaration) -> serde_json::Result<Self> {
        Ok(RecordedDeclaration {
            declaration: Value::from(crate::declaration::VERSION),
            resources: decl
                .resources
                .iter()
                .map(canonical)
                .collect::<serde_json::Result<_>>()?,
        })
    }

    /// The record of this JSON declaration (tests write records by
    /// hand; a raw text is read from text only).
    #[cfg(test)]
    pub fn from_value(declaration: &Value) -> Self {
        serde_json::from_str(&declaration.to_string()).expect("a declaration's record")
    }

    /// Its resources, in order.
    pub fn resources(&self) -> &[Box<RawValue>] {
        &self.resources
    }

    /// Resource `index`.
    pub fn resource(&self, index: usize) -> Option<&RawValue> {
        self.resources.get(index).map(|r| &**r)
    }

    /// What each resource is, in order (a resource whose text does not
    /// parse reads as a [`Head`] of nothing).
    pub fn heads(&self) -> impl Iterator<Item = Head> + '_ {
        self.resources
            .iter()
            .map(|r| serde_json::from_str(r.get()).unwrap_or_default())
    }

    /// Add `resource` at the end (tests write records by hand).
    #[cfg(test)]
    pub fn push(&mut self, resource: &Value) {
        self.resources
            .push(serde_json::value::to_raw_value(resource).expect("a JSON value"));
    }
}

/// The canonical text of `resource`, as a record holds it: its JSON tree
/// (keys sorted) written compact.
pub fn canonical(resource: &crate::declaration::Resource) -> serde_json::Result<Box<RawValue>> {
    serde_json::value::to_raw_value(&serde_json::to_value(resource)?)
}

/// Whether the canonical texts `a` and `b` say the same: the same text,
/// or the same JSON written otherwise.
pub fn alike(a: &RawValue, b: &RawValue) -> bool {
    a.get() == b.get() || {
        let tree = |r: &RawValue| serde_json::from_str::<Value>(r.get()).ok();
        matches!((tree(a), tree(b)), (Some(a), Some(b)) if a == b)
    }
}

impl PartialEq for RecordedDeclaration {
    fn eq(&self, other: &Self) -> bool {
        self.declaration == other.declaration
            && self.resources.len() == other.resources.len()
            && self
                .resources
                .iter()
                .zip(&other.resources)
                .all(|(a, b)| alike(a, b))
    }
}

/// A string field, or `None` for `null` or any other JSON.
fn string_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

/// Whether a field is there and not `null`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<serde::de::IgnoredAny>::deserialize(d)?.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn declaration() -> Declaration {
        crate::declaration::parse(
            json!({
                "declaration": 1,
                "resources": [
                    {"id": "web", "type": "container", "name": "web", "image": format!("nginx@sha256:{}", "a".repeat(64))},
                    {"id": "gc", "type": "container", "name": "gc", "image": format!("registry@sha256:{}", "b".repeat(64)),
                     "schedule": "0 3 * * *"},
                    {"id": "conf", "type": "file", "path": "/etc/app.conf", "content": "x"}
                ]
            })
            .to_string()
            .as_bytes(),
        )
        .expect("a valid declaration")
    }

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).expect("JSON")
    }

    #[test]
    fn each_resource_is_its_canonical_json_with_sorted_keys() {
        let decl = declaration();
        let recorded = RecordedDeclaration::of(&decl).expect("recorded");
        assert_eq!(recorded.resources().len(), 3);
        for (text, resource) in recorded.resources().iter().zip(&decl.resources) {
            let tree = serde_json::to_value(resource).expect("a tree");
            assert_eq!(text.get(), tree.to_string(), "compact, keys sorted");
        }
        // As the whole declaration's tree says, so the record: what
        // status --local and metrics --local parse back.
        let whole: Value = serde_json::to_value(&recorded).expect("encode");
        assert_eq!(whole, serde_json::to_value(&decl).expect("the tree"));
    }

    #[test]
    fn a_record_written_as_a_tree_reads_back_alike() {
        // What an older build wrote: the declaration's tree, indented.
        let decl = declaration();
        let old = serde_json::to_string_pretty(&serde_json::to_value(&decl).expect("tree"))
            .expect("text");
        let read: RecordedDeclaration = serde_json::from_str(&old).expect("read back");
        let now = RecordedDeclaration::of(&decl).expect("recorded");
        assert_ne!(read.resources()[1].get(), now.resources()[1].get());
        assert_eq!(read, now, "the same JSON, written otherwise");
        let heads: Vec<_> = read.heads().map(|h| (h.id, h.scheduled)).collect();
        assert_eq!(
            heads,
            vec![
                (Some("web".to_string()), false),
                (Some("gc".to_string()), true),
                (Some("conf".to_string()), false)
            ]
        );
    }

    #[test]
    fn a_changed_resource_is_not_alike() {
        let a = raw(r#"{"id":"gc","schedule":"0 3 * * *"}"#);
        let b = raw(r#"{"id":"gc","schedule":"0 4 * * *"}"#);
        let reordered = raw(r#"{ "schedule": "0 3 * * *", "id": "gc" }"#);
        assert!(!alike(&a, &b));
        assert!(alike(&a, &reordered));
        let mut one = RecordedDeclaration::default();
        let mut other = RecordedDeclaration::default();
        one.push(&json!({"id": "gc"}));
        assert_ne!(one, other, "a resource more");
        other.push(&json!({"id": "gc2"}));
        assert_ne!(one, other);
    }

    #[test]
    fn heads_read_what_is_there_and_nothing_else() {
        let mut recorded = RecordedDeclaration::default();
        recorded.push(&json!({"id": "a", "type": "container", "name": "a", "schedule": null}));
        recorded.push(&json!({"id": 7, "type": ["x"], "schedule": {"cron": "* * * * *"}}));
        recorded.push(&json!([1, 2]));
        let heads: Vec<Head> = recorded.heads().collect();
        assert_eq!(heads[0].id.as_deref(), Some("a"));
        assert_eq!(heads[0].kind.as_deref(), Some("container"));
        assert_eq!(heads[0].name.as_deref(), Some("a"));
        assert!(!heads[0].scheduled, "a null schedule is none");
        assert_eq!(
            (heads[1].id.as_deref(), heads[1].kind.as_deref()),
            (None, None)
        );
        assert!(heads[1].scheduled);
        assert!(
            heads[2].id.is_none() && !heads[2].scheduled,
            "not an object"
        );
    }

    /// JSON without floats (whose text may not read back bit for bit).
    fn json_tree() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            ".{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map("[a-c]{1,2}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn alike_is_equality_of_the_json_however_written(a in json_tree(), b in json_tree()) {
            let compact = |v: &Value| raw(&v.to_string());
            let pretty = |v: &Value| raw(&serde_json::to_string_pretty(v).expect("text"));
            prop_assert!(alike(&compact(&a), &pretty(&a)));
            prop_assert_eq!(alike(&compact(&a), &pretty(&b)), a == b);
        }
    }
}
