//! The JSON itself, checked in a pass of its own before anything is read
//! into the raw structs: its syntax, no object that repeats a key (serde
//! would keep the last silently, and the sender may have meant the first),
//! its nesting (at most [`MAX_DEPTH`] arrays and objects deep) and its
//! number of values (at most [`MAX_VALUES`]: what the model of a document
//! costs grows with its values, not its bytes; two bytes, `0,`, make one).
//!
//! The pass builds nothing but, for each object open at the moment, the
//! set of its keys: so the raw structs can then be read straight from the
//! bytes, without a `serde_json::Value` of the whole document first (which
//! took 80 times the size of the file), knowing that no key repeats.
//! Errors carry line and column and never quote the bytes around them,
//! so a file that is not a declaration (`check /etc/shadow`) is never
//! echoed.

use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// How deep arrays and objects may nest. A declaration's deepest value is
/// a few levels down (`resources[0].ulimits.nofile.soft`); serde_json's
/// own limit (128) stays the hard stop for a value kept whole (`health`).
pub const MAX_DEPTH: usize = 64;

/// How many values (objects, arrays, strings, numbers, booleans, nulls) a
/// declaration may hold: a million. A declaration of 10,000 resources
/// written out by hand holds about 240,000; one container publishing
/// every port, tcp and udp, 524,289.
pub const MAX_VALUES: usize = 1_000_000;

/// Check `bytes` as one JSON value: valid, no repeated key, not nested
/// deeper than [`MAX_DEPTH`], no more than [`MAX_VALUES`] values. The
/// error says what and where (line and column), never what the bytes
/// around it are.
pub fn check(bytes: &[u8]) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let count = Cell::new(0);
    Checked {
        depth: 0,
        count: &count,
    }
    .deserialize(&mut de)?;
    de.end()
}

/// The JSON kind of the document's top-level value, from its first byte
/// (the document is valid JSON: [`check`] passed).
pub fn top_kind(bytes: &[u8]) -> &'static str {
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

/// One value at `depth`, read and dropped; `count` values so far.
#[derive(Debug, Clone, Copy)]
struct Checked<'c> {
    depth: usize,
    count: &'c Cell<usize>,
}

impl<'de> DeserializeSeed<'de> for Checked<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Checked<'_> {
    /// One more value.
    fn one<E: de::Error>(self) -> Result<(), E> {
        let n = self.count.get() + 1;
        self.count.set(n);
        if n > MAX_VALUES {
            return Err(E::custom(format_args!(
                "more than {MAX_VALUES} values (objects, arrays, strings, numbers)"
            )));
        }
        Ok(())
    }

    /// The values inside an array or object.
    fn inner<E: de::Error>(self) -> Result<Self, E> {
        self.one()?;
        if self.depth >= MAX_DEPTH {
            return Err(E::custom(format_args!(
                "nested deeper than {MAX_DEPTH} arrays and objects"
            )));
        }
        Ok(Checked {
            depth: self.depth + 1,
            count: self.count,
        })
    }
}

impl<'de> Visitor<'de> for Checked<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.one()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.one()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.one()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.one()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.one()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.one()
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let inner = self.inner()?;
        while seq.next_element_seed(inner)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let inner = self.inner()?;
        let mut keys: HashSet<Key<'de>> = HashSet::new();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            if keys.contains(&key) {
                return Err(de::Error::custom(format_args!(
                    "duplicate key {:?}",
                    shown(key.as_str())
                )));
            }
            keys.insert(key);
            map.next_value_seed(inner)?;
        }
        Ok(())
    }
}

/// A key: borrowed from the bytes where it holds no escape. Two keys are
/// the same by their text, however spelt (`"id"`, `"\u0069d"`).
#[derive(Debug)]
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }
}

impl PartialEq for Key<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Key<'_> {}

impl std::hash::Hash for Key<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v.to_owned()))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// A key as a message shows it: whole up to [`SHOWN_KEY`] characters.
pub fn shown(key: &str) -> std::borrow::Cow<'_, str> {
    match key.char_indices().nth(SHOWN_KEY) {
        None => key.into(),
        Some((at, _)) => format!("{}…", &key[..at]).into(),
    }
}

/// How much of a key a message quotes.
pub const SHOWN_KEY: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_json_passes_and_repeated_keys_are_named_with_where() {
        assert!(check(br#"{"a": [1, {"b": 2}], "c": {"a": 1}}"#).is_ok());
        let e = check(b"{\"a\": 1,\n \"b\": {\"x\": 1, \"x\": 2}}").expect_err("repeat");
        assert_eq!(e.to_string(), "duplicate key \"x\" at line 2 column 18");
        // The same key spelt with an escape is the same key.
        assert!(check(br#"{"id": 1, "\u0069d": 2}"#).is_err());
    }

    #[test]
    fn nesting_is_bounded_and_said() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(check(deep(MAX_DEPTH).as_bytes()).is_ok());
        let e = check(deep(MAX_DEPTH + 1).as_bytes()).expect_err("too deep");
        assert!(e.to_string().contains("nested deeper than 64"), "{e}");
        // A hundred thousand levels: refused at the bound, no stack overflow.
        assert!(check(deep(100_000).as_bytes()).is_err());
    }

    #[test]
    fn errors_never_quote_the_bytes() {
        for bytes in [
            &b"root:$y$j9T$secret:19000:0:99999:7:::\n"[..],
            b"{\"a\": secret}",
            b"{\"a\": 1} secret",
            b"\"secret\n\"",
        ] {
            let e = check(bytes).expect_err("not JSON").to_string();
            assert!(!e.contains("secret"), "{e}");
            assert!(e.contains(" at line "), "{e}");
        }
    }

    #[test]
    fn values_are_counted_and_bounded() {
        let list = |n: usize| format!("[{}]", vec!["0"; n].join(","));
        // The array itself is a value.
        assert!(check(list(MAX_VALUES - 1).as_bytes()).is_ok());
        let e = check(list(MAX_VALUES).as_bytes()).expect_err("too many");
        assert!(e.to_string().contains("more than 1000000 values"), "{e}");
    }

    #[test]
    fn a_long_key_is_shown_cut() {
        let key = "k".repeat(10_000);
        let e = check(format!("{{\"{key}\": 1, \"{key}\": 2}}").as_bytes()).expect_err("repeat");
        assert!(e.to_string().len() < 200, "{e}");
        assert_eq!(top_kind(b"  [1]"), "an array");
        assert_eq!(top_kind(b"\n{}"), "an object");
        assert_eq!(top_kind(b"-1"), "a number");
    }
}
