//! A container's runtime-relevant declared fields as a build keeps them
//! and `container-inputs.json` records them: their JSON text, one
//! allocation, not a tree of values.
//!
//! An apply of a thousand services and five thousand steps held six
//! thousand of these maps at its peak, each a dozen keys and values
//! allocated one by one; the text is a fraction of that. The fields are
//! read back as a map only to name what changed (`image changed`), which
//! happens for a container being recreated, not for every one compared.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// See the module documentation.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DeclaredFields(Box<RawValue>);

impl DeclaredFields {
    /// The text of `fields` (keys in order, compact).
    pub fn of(fields: &BTreeMap<String, Value>) -> Self {
        let text = serde_json::to_string(fields).unwrap_or_else(|_| "{}".to_owned());
        DeclaredFields(RawValue::from_string(text).unwrap_or_else(|_| empty()))
    }

    /// The fields by name. A record whose text is not an object (written
    /// by hand) reads as no field: every declared one then shows changed.
    pub fn map(&self) -> BTreeMap<String, Value> {
        serde_json::from_str(self.0.get()).unwrap_or_default()
    }

    /// Field `name`, if there is one.
    #[cfg(test)]
    pub fn get(&self, name: &str) -> Option<Value> {
        self.map().remove(name)
    }

    /// Whether field `name` is there.
    #[cfg(test)]
    pub fn contains(&self, name: &str) -> bool {
        self.map().contains_key(name)
    }
}

fn empty() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).expect("an empty object is JSON")
}

impl Default for DeclaredFields {
    fn default() -> Self {
        DeclaredFields(empty())
    }
}

/// The same fields, however the text was written (an older record is
/// indented).
impl PartialEq for DeclaredFields {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get() || self.map() == other.map()
    }
}

impl Eq for DeclaredFields {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn map(v: Value) -> BTreeMap<String, Value> {
        serde_json::from_value(v).expect("object")
    }

    #[test]
    fn the_text_reads_back_as_the_map_it_was_made_of() {
        let m = map(json!({"image": "a@sha256:00", "env": {"A": "1"}, "mounts": []}));
        let f = DeclaredFields::of(&m);
        assert_eq!(f.map(), m);
        assert_eq!(f.get("image"), Some(json!("a@sha256:00")));
        assert!(f.contains("mounts"));
        assert!(!f.contains("health"));
        assert_eq!(f.get("health"), None);
    }

    #[test]
    fn a_record_written_indented_is_the_same_fields() {
        let m = map(json!({"image": "a", "command": ["sh", "-c", "true"]}));
        let indented: DeclaredFields =
            serde_json::from_str(&serde_json::to_string_pretty(&m).expect("json")).expect("read");
        assert_eq!(indented, DeclaredFields::of(&m));
        let other = DeclaredFields::of(&map(json!({"image": "b"})));
        assert_ne!(indented, other);
    }

    #[test]
    fn it_is_written_as_the_map_within_a_record() {
        let m = map(json!({"image": "a", "role": "service"}));
        let record = json!({"fields": DeclaredFields::of(&m)});
        assert_eq!(record, json!({"fields": {"image": "a", "role": "service"}}));
    }

    #[test]
    fn a_record_not_an_object_reads_as_no_field() {
        let f: DeclaredFields = serde_json::from_str("[1, 2]").expect("any JSON");
        assert!(f.map().is_empty());
        assert_eq!(f, DeclaredFields::default());
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[a-z\\\\\"\u{e9} ]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z-]{1,6}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Equal exactly when the maps are, whichever way each was
        /// written; the map always reads back whole.
        #[test]
        fn equal_as_the_maps_are(
            a in prop::collection::btree_map("[a-z-]{1,8}", value(), 0..6),
            b in prop::collection::btree_map("[a-z-]{1,8}", value(), 0..6),
            pretty in any::<bool>(),
        ) {
            let fa = DeclaredFields::of(&a);
            prop_assert_eq!(fa.map(), a.clone());
            let text = if pretty {
                serde_json::to_string_pretty(&b).expect("json")
            } else {
                serde_json::to_string(&b).expect("json")
            };
            let fb: DeclaredFields = serde_json::from_str(&text).expect("read");
            prop_assert_eq!(fa == fb, a == b);
        }
    }
}
