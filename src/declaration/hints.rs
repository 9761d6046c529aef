//! Hints that name the fix: the field a misspelt or foreign one most
//! likely meant, and what a file that is not JSON most likely is.
//!
//! The known fields come from the declaration's JSON Schema
//! ([`super::version::SCHEMA`]), which the tests hold equal to what the validator
//! reads, so a hint never names a field `check` would refuse.

use std::sync::LazyLock;

use serde_json::Value;

/// Where a set of fields lives in the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fields {
    /// The top level: `declaration`, `resources`.
    Top,
    /// A resource of this `type` (`container`, `file`, ...).
    Resource(&'static str),
    /// One of a container's `mounts`.
    Mount,
    /// One of a container's `ports`.
    Port,
    /// One of a container's `tmpfs`.
    Tmpfs,
    /// One value of a container's `ulimits`.
    Ulimit,
    /// A container's `logging` object.
    Logging,
    /// One of a container's `devices`.
    Device,
    /// One of a container's `device-requests`.
    DeviceRequest,
    /// A container's `health` object.
    Health,
    /// One of a container's `grant` entries.
    Grant,
    /// One of a shared folder's `access` entries.
    Access,
    NetworkJoin,
    Dependency,
}

static SCHEMA: LazyLock<Value> =
    LazyLock::new(|| serde_json::from_str(super::version::SCHEMA).unwrap_or(Value::Null));

/// The field names the schema gives `fields`.
pub fn known(fields: Fields) -> Vec<&'static str> {
    let defs = &SCHEMA["$defs"];
    let props = match fields {
        Fields::Top => &SCHEMA["properties"],
        Fields::Resource(kind) => &defs[kind]["properties"],
        Fields::Mount => &defs["mount"]["properties"],
        Fields::Port => &defs["container"]["properties"]["ports"]["items"]["properties"],
        Fields::Tmpfs => &defs["container"]["properties"]["tmpfs"]["items"]["properties"],
        Fields::Ulimit => {
            &defs["container"]["properties"]["ulimits"]["additionalProperties"]["properties"]
        }
        Fields::Device => &defs["container"]["properties"]["devices"]["items"]["properties"],
        Fields::DeviceRequest => {
            &defs["container"]["properties"]["device-requests"]["items"]["properties"]
        }
        Fields::Logging => &defs["container"]["properties"]["logging"]["properties"],
        Fields::Health => &defs["container"]["properties"]["health"]["oneOf"][1]["properties"],
        Fields::Grant => &defs["container"]["properties"]["grant"]["items"]["properties"],
        Fields::Access => &defs["shared-folder"]["properties"]["access"]["items"]["properties"],
        Fields::NetworkJoin => &defs["container"]["properties"]["networks"]["items"]["properties"],
        Fields::Dependency => &defs["container"]["properties"]["depends-on"]["items"]["properties"],
    };
    props
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// Names other tools give a field, and ours (compose's, mostly).
const ALIASES: &[(&str, &str)] = &[
    ("healthcheck", "health"),
    ("env_file", "env-files"),
    ("environment", "env"),
    ("volumes", "mounts"),
    ("container_name", "name"),
    ("cron", "schedule"),
    ("depends_on", "while-stopped"),
    ("readonly", "read-only"),
    ("ro", "read-only"),
    ("mem_limit", "memory"),
    ("mem_reservation", "memory-reservation"),
    ("stop_grace_period", "stop-grace"),
];

/// The field `unknown` most likely meant among `known`, if one is close:
/// the same but for case and `_` (`read_only`), a known alias
/// (`healthcheck`), or a spelling one or two edits away (`helth`).
pub fn nearest<'k>(unknown: &str, known: &[&'k str]) -> Option<&'k str> {
    // No field name is this long: nothing to compare (and the distance is
    // quadratic in the lengths).
    if unknown.len() > 64 {
        return None;
    }
    let norm = |s: &str| s.to_ascii_lowercase().replace('_', "-");
    let wanted = norm(unknown);
    if let Some(k) = known.iter().find(|k| norm(k) == wanted) {
        return Some(k);
    }
    if let Some((_, to)) = ALIASES.iter().find(|(from, _)| norm(from) == wanted) {
        if let Some(k) = known.iter().find(|k| *k == to) {
            return Some(k);
        }
    }
    let limit = if wanted.chars().count() <= 4 { 1 } else { 2 };
    known
        .iter()
        .map(|k| (edits(&wanted, k), *k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// The message for an unknown field, with its likeliest meaning.
pub fn unknown_field(key: &str, fields: Fields) -> String {
    match nearest(key, &known(fields)) {
        Some(k) => format!("unknown field; did you mean {k:?}?"),
        None => "unknown field".to_string(),
    }
}

/// Levenshtein distance (small strings: field names).
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}

/// Why bytes that are not JSON are not, when it can be told: a byte
/// order mark, or what looks like YAML.
pub fn not_json(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Some(
            "the file starts with a UTF-8 byte order mark (EF BB BF), which JSON does not allow: \
             save it as UTF-8 without one",
        );
    }
    let text = String::from_utf8_lossy(bytes);
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))?;
    let yaml_key = first.split_once(':').is_some_and(|(k, rest)| {
        !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            && (rest.is_empty() || rest.starts_with(' '))
    });
    (first == "---" || first.starts_with("- ") || yaml_key).then_some(
        "this looks like YAML: a declaration is JSON ({\"declaration\": 1, \"resources\": [...]}); \
         `mesh-host schema` prints its JSON Schema",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misspelt_and_foreign_names_find_the_field_they_meant() {
        let container = known(Fields::Resource("container"));
        assert!(container.contains(&"read-only") || known(Fields::Mount).contains(&"read-only"));
        assert_eq!(nearest("helth", &container), Some("health"));
        assert_eq!(nearest("healthcheck", &container), Some("health"));
        assert_eq!(nearest("imagee", &container), Some("image"));
        assert_eq!(nearest("env_files", &container), Some("env-files"));
        assert_eq!(nearest("Schedule", &container), Some("schedule"));
        assert_eq!(
            nearest("read_only", &known(Fields::Mount)),
            Some("read-only")
        );
        assert_eq!(
            nearest("readonly", &known(Fields::Mount)),
            Some("read-only")
        );
        assert_eq!(
            nearest("start_period", &known(Fields::Health)),
            Some("start-period")
        );
        assert_eq!(nearest("cap_add", &container), Some("cap-add"));
        assert_eq!(nearest("working_dir", &container), Some("working-dir"));
        assert_eq!(nearest("mem_limit", &container), Some("memory"));
        assert_eq!(nearest("stop_grace_period", &container), Some("stop-grace"));
        // Far from everything: no guess.
        assert_eq!(nearest("xyzzy", &container), None);
        assert_eq!(nearest("x", &known(Fields::Resource("file"))), None);
    }

    #[test]
    fn every_place_of_fields_has_fields() {
        for fields in [
            Fields::Top,
            Fields::Resource("container"),
            Fields::Resource("file"),
            Fields::Resource("directory"),
            Fields::Resource("unit"),
            Fields::Resource("identity"),
            Fields::Resource("shared-folder"),
            Fields::Mount,
            Fields::Port,
            Fields::Tmpfs,
            Fields::Ulimit,
            Fields::Device,
            Fields::Logging,
            Fields::Health,
            Fields::Grant,
            Fields::Access,
            Fields::NetworkJoin,
            Fields::Dependency,
            Fields::Resource("network"),
            Fields::Resource("volume"),
        ] {
            assert!(!known(fields).is_empty(), "{fields:?}");
        }
    }

    #[test]
    fn a_byte_order_mark_and_yaml_are_named() {
        let bom = not_json(b"\xEF\xBB\xBF{\"declaration\": 1}").expect("bom");
        assert!(bom.contains("byte order mark"), "{bom}");
        for yaml in [
            "declaration: 1\nresources: []\n",
            "# a comment\nservices:\n  web:\n    image: nginx\n",
            "---\ndeclaration: 1\n",
            "- id: web\n",
        ] {
            let why = not_json(yaml.as_bytes()).unwrap_or_else(|| panic!("{yaml}"));
            assert!(why.contains("YAML"), "{why}");
        }
        for other in ["{\"declaration\": 1,}", "", "[1, 2", "http://x"] {
            assert_eq!(not_json(other.as_bytes()), None, "{other}");
        }
    }
}
