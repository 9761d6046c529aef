//! `parse` never panics, whatever it is given.
//!
//! Cases per test follow `PROPTEST_CASES` (default 256), e.g.
//! `PROPTEST_CASES=100000 cargo test --lib declaration::proptests`
//! (about 40 s for the four tests, unoptimised, on two cores).

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use serde_json::{Map, Value};

use super::{lint, parse};

/// Keys of every struct of the format, a few near misses, and junk.
const KEYS: &[&str] = &[
    "declaration",
    "resources",
    "type",
    "id",
    "module",
    "name",
    "image",
    "command",
    "env",
    "env-files",
    "mounts",
    "source",
    "target",
    "read-only",
    "network",
    "dns",
    "user",
    "run-once",
    "schedule",
    "schedule-zone",
    "while-stopped",
    "timeout",
    "restart-on",
    "path",
    "content",
    "content-base64",
    "mode",
    "owner",
    "state",
    "enabled",
    "readonly",
    "Type",
    "",
    "a\u{0}b",
    "x\ny",
];

/// Strings that are valid for some field, nearly valid, or hostile.
const STRINGS: &[&str] = &[
    "container",
    "file",
    "directory",
    "unit",
    "volume",
    "a",
    "b",
    "db",
    "app",
    "step",
    "x y",
    "..",
    "/",
    "/srv/data",
    "/srv",
    "/srv/data/x",
    "srv",
    "./x",
    "/a/../b",
    "vol",
    "-v",
    "host",
    "none",
    "net-1",
    "0644",
    "0755",
    "7777",
    "08",
    "644",
    "1000:1000",
    "1000",
    "root",
    "0:0",
    "* * * * *",
    "0 3 * * *",
    "@daily",
    "61 * * * *",
    "0 0 30 2 *",
    "Europe/Berlin",
    "UTC",
    "Mars/X",
    "started",
    "stopped",
    "running",
    "x.service",
    "x",
    "a/b.timer",
    "mesh-host.service",
    "eA==",
    "!!",
    "9.9.9.9",
    "::1",
    "dns.google",
    "nginx:1",
    "r@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "127.0.0.1:5000/r:t@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "\u{0}",
    "é",
    "\u{202e}",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        prop_oneof![
            Just(0i64),
            Just(1),
            Just(-1),
            Just(2),
            Just(600),
            any::<i64>()
        ]
        .prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        proptest::sample::select(STRINGS).prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ]
}

/// Any JSON, with objects keyed mostly by the format's own keys.
fn json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec((key(), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(KEYS).prop_map(str::to_owned),
        1 => "[a-z-]{0,8}",
    ]
}

/// A field's value: mostly the shapes the format uses (a scalar, a list of
/// scalars, an object of scalars such as a mount or `env`), sometimes any
/// JSON.
fn field_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => leaf(),
        2 => proptest::collection::vec(leaf(), 0..4).prop_map(Value::Array),
        2 => proptest::collection::vec(
                proptest::collection::vec((key(), leaf()), 0..4)
                    .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
                0..3,
            )
            .prop_map(Value::Array),
        1 => json(),
    ]
}

/// A resource-shaped object: a plausible type and fields of any shape.
fn resource() -> impl Strategy<Value = Value> {
    (
        proptest::sample::select(&["container", "file", "directory", "unit", "other"][..]),
        proptest::option::of(proptest::sample::select(STRINGS)),
        proptest::collection::vec((proptest::sample::select(KEYS), field_value()), 0..7),
    )
        .prop_map(|(kind, id, fields)| {
            let mut object: Map<String, Value> =
                fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            object.insert("type".to_owned(), Value::from(kind));
            if let Some(id) = id {
                object.insert("id".to_owned(), Value::from(id));
            }
            Value::Object(object)
        })
}

/// A version-1 envelope around resource-shaped values, so that most cases
/// reach the validator rather than stop at the version check.
fn declaration() -> impl Strategy<Value = Value> {
    (
        proptest::collection::vec(prop_oneof![6 => resource(), 1 => leaf()], 0..5),
        proptest::option::of(leaf()),
    )
        .prop_map(|(resources, extra)| {
            let mut object = Map::new();
            object.insert("declaration".to_owned(), Value::from(1));
            object.insert("resources".to_owned(), Value::Array(resources));
            if let Some(extra) = extra {
                object.insert("extra".to_owned(), extra);
            }
            Value::Object(object)
        })
}

/// What must hold of any outcome: an accepted declaration lints and
/// round-trips through its canonical form; a refusal has problems, one line
/// each.
fn check(bytes: &[u8]) -> Result<(), TestCaseError> {
    match parse(bytes) {
        Ok(decl) => {
            let _ = lint(&decl);
            let canonical = serde_json::to_vec(&decl).unwrap();
            let again = parse(&canonical);
            prop_assert_eq!(again.as_ref(), Ok(&decl));
        }
        Err(refusal) => {
            prop_assert!(!refusal.problems.is_empty());
            let text = refusal.to_string();
            prop_assert_eq!(text.lines().count(), refusal.problems.len(), "{}", text);
        }
    }
    Ok(())
}

const EXAMPLE: &[u8] = include_bytes!("../../examples/webapp.json");

proptest! {
    // XorShift: the default ChaCha generator dominates the run time in
    // unoptimised test builds, and these tests need volume, not a
    // cryptographic stream. The case count still follows PROPTEST_CASES.
    #![proptest_config(ProptestConfig {
        rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        check(&bytes)?;
    }

    #[test]
    fn mutated_examples_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)
    ) {
        let mut bytes = EXAMPLE.to_vec();
        for (index, byte) in edits {
            let i = index.index(bytes.len());
            bytes[i] = byte;
        }
        check(&bytes)?;
    }

    #[test]
    fn arbitrary_json_never_panics(value in json()) {
        check(&serde_json::to_vec(&value).unwrap())?;
    }

    #[test]
    fn arbitrary_declarations_never_panic(value in declaration()) {
        check(&serde_json::to_vec(&value).unwrap())?;
    }
}
