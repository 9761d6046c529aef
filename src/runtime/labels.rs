//! A container's labels as its spec holds them ([`Labels`]): a short list
//! sorted by key, whose keys and values mesh-host writes itself are
//! borrowed from the program, not allocated (those of this layer found
//! by [`Labels::insert`], the others' given by [`Labels::set`]).
//!
//! Every step and service spec carries the same five or six labels of
//! mesh-host's (`mesh-host.managed=true`, its resource, role, identity,
//! record format, module). As a `BTreeMap<String, String>` each spec held a
//! B-tree node of 544 bytes and two allocations per label: at 5,000 steps
//! a quarter of what the daemon held at rest (docs/benchmarks.md).

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The runtime's own keys and values, taken from here by
/// [`Labels::insert`] instead of allocated.
const KNOWN: &[&str] = &[
    super::LABEL_MANAGED,
    super::LABEL_RESOURCE,
    super::LABEL_MODULE,
    super::LABEL_MADE_AS,
    super::MANAGED_VALUE,
];

/// `text` borrowed from [`KNOWN`] when it is there, else owned.
fn interned(text: String) -> Cow<'static, str> {
    match KNOWN.iter().find(|k| **k == text) {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(text),
    }
}

/// See the module documentation. Reads as a map: one value per key,
/// iterated in key order, encoded as a JSON object.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Labels(Vec<(Cow<'static, str>, Cow<'static, str>)>);

impl Labels {
    /// No labels.
    pub fn new() -> Self {
        Labels(Vec::new())
    }

    /// No labels, with room for `n` (a spec's are known before they are
    /// set: the list is not grown past them, thousands of times over).
    pub fn with_capacity(n: usize) -> Self {
        Labels(Vec::with_capacity(n))
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_ref().cmp(key))
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.find(key).ok().map(|i| self.0[i].1.as_ref())
    }

    /// Whether `key` is set.
    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Set `key` to `value`; the value it replaced.
    pub fn insert(&mut self, key: String, value: String) -> Option<String> {
        let value = interned(value);
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value).into_owned()),
            Err(i) => {
                self.0.insert(i, (interned(key), value));
                None
            }
        }
    }

    /// Set `key`, a name of the program's, to `value` (borrowed too when
    /// it is one); the value it replaced.
    pub fn set(
        &mut self,
        key: &'static str,
        value: impl Into<Cow<'static, str>>,
    ) -> Option<String> {
        let value = value.into();
        match self.find(key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value).into_owned()),
            Err(i) => {
                self.0.insert(i, (Cow::Borrowed(key), value));
                None
            }
        }
    }

    /// Unset `key`; its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let i = self.find(key).ok()?;
        Some(self.0.remove(i).1.into_owned())
    }

    /// How many are set.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether none is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Each key and value, in key order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.0.iter().map(|(k, v)| (k.as_ref(), v.as_ref()))
    }
}

impl std::fmt::Debug for Labels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl FromIterator<(String, String)> for Labels {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(iter: I) -> Self {
        let mut labels = Labels::new();
        labels.extend(iter);
        labels
    }
}

impl Extend<(String, String)> for Labels {
    fn extend<I: IntoIterator<Item = (String, String)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<const N: usize> From<[(String, String); N]> for Labels {
    fn from(pairs: [(String, String); N]) -> Self {
        pairs.into_iter().collect()
    }
}

impl From<BTreeMap<String, String>> for Labels {
    fn from(map: BTreeMap<String, String>) -> Self {
        map.into_iter().collect()
    }
}

impl IntoIterator for Labels {
    type Item = (String, String);
    type IntoIter = std::iter::Map<
        std::vec::IntoIter<(Cow<'static, str>, Cow<'static, str>)>,
        fn((Cow<'static, str>, Cow<'static, str>)) -> (String, String),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0
            .into_iter()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
    }
}

impl Serialize for Labels {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Labels {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        BTreeMap::<String, String>::deserialize(deserializer).map(Labels::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_keys_and_values_are_borrowed_and_others_owned() {
        let labels = Labels::from([
            (super::super::LABEL_MANAGED.to_string(), "true".to_string()),
            ("app.tier".to_string(), "web".to_string()),
        ]);
        assert!(matches!(labels.0[1], (Cow::Borrowed(_), Cow::Borrowed(_))));
        assert!(matches!(labels.0[0], (Cow::Owned(_), Cow::Owned(_))));
        assert_eq!(labels.get("mesh-host.managed"), Some("true"));
        assert_eq!(labels.get("app.tier"), Some("web"));
        assert_eq!(labels.get("nope"), None);
    }

    #[test]
    fn insert_replaces_and_remove_unsets() {
        let mut labels = Labels::new();
        assert_eq!(labels.insert("b".into(), "1".into()), None);
        assert_eq!(labels.insert("a".into(), "2".into()), None);
        assert_eq!(labels.insert("b".into(), "3".into()), Some("1".into()));
        assert_eq!(labels.iter().collect::<Vec<_>>(), [("a", "2"), ("b", "3")]);
        assert_eq!(labels.set("c", "static"), None);
        assert!(matches!(
            labels.0[2],
            (Cow::Borrowed("c"), Cow::Borrowed("static"))
        ));
        assert_eq!(labels.set("a", String::from("4")), Some("2".into()));
        assert_eq!(labels.get("a"), Some("4"));
        labels.remove("c");
        assert_eq!(labels.remove("a"), Some("4".into()));
        assert_eq!(labels.remove("a"), None);
        assert_eq!(labels.len(), 1);
        assert!(labels.contains_key("b") && !labels.is_empty());
    }

    proptest! {
        /// As a BTreeMap reads the same inserts, so do the labels, and
        /// their JSON is the map's.
        #[test]
        fn reads_as_a_map_does(pairs in proptest::collection::vec(
            ("(mesh-host\\.managed|mesh-host\\.role|[a-c]{1,2})", "(true|step|[x-z]{0,2})"),
            0..12,
        )) {
            let mut map = BTreeMap::new();
            let mut labels = Labels::new();
            for (k, v) in &pairs {
                prop_assert_eq!(labels.insert(k.clone(), v.clone()), map.insert(k.clone(), v.clone()));
            }
            let as_map: Vec<(&str, &str)> = map.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            prop_assert_eq!(labels.iter().collect::<Vec<_>>(), as_map);
            prop_assert_eq!(
                serde_json::to_string(&labels).expect("encode"),
                serde_json::to_string(&map).expect("encode")
            );
            let back: Labels = serde_json::from_str(&serde_json::to_string(&map).expect("encode")).expect("decode");
            prop_assert_eq!(back, labels);
        }
    }
}
