//! The classification table held to what it classifies: the compose
//! specification's JSON Schema (every property in the table, nothing in
//! the table the schema does not have), the importer's code (each
//! translated property changes what is imported), and docs/compose.md
//! (whose field table is the table's own rendering).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::fields::{Class, FIELDS};
use super::{classify, import, yaml, Source};

/// Every property path of the schema, as the table writes them.
fn schema_paths() -> BTreeSet<String> {
    let text = include_str!("spec/compose-spec.json");
    let schema: Value = serde_json::from_str(text).unwrap();
    let mut out = BTreeSet::new();
    walk(&schema, &schema, "", &mut Vec::new(), &mut out);
    out
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// The properties below `node` at `path` (refs followed, each at most
/// once on a branch).
fn walk(
    root: &Value,
    node: &Value,
    path: &str,
    refs: &mut Vec<String>,
    out: &mut BTreeSet<String>,
) {
    let Value::Object(node) = node else { return };
    if let Some(Value::String(r)) = node.get("$ref") {
        let name = r.rsplit('/').next().unwrap().to_owned();
        if refs.contains(&name) {
            return;
        }
        refs.push(name.clone());
        walk(root, &root["definitions"][&name], path, refs, out);
        refs.pop();
        return;
    }
    if let Some(Value::Object(props)) = node.get("properties") {
        for (key, value) in props {
            let here = join(path, key);
            out.insert(here.clone());
            walk(root, value, &here, refs, out);
        }
    }
    for k in ["oneOf", "anyOf", "allOf"] {
        for alt in node.get(k).and_then(Value::as_array).into_iter().flatten() {
            walk(root, alt, path, refs, out);
        }
    }
    if let Some(items) = node.get("items") {
        walk(root, items, &format!("{path}[]"), refs, out);
    }
    // Names (`services.*`): a node of their own when properties lie below.
    let mut named = Vec::new();
    if let Some(Value::Object(patterns)) = node.get("patternProperties") {
        named.extend(
            patterns
                .iter()
                .filter(|(p, _)| !p.starts_with("^x-"))
                .map(|(_, v)| v),
        );
    }
    if let Some(v @ Value::Object(_)) = node.get("additionalProperties") {
        named.push(v);
    }
    for v in named {
        let any = join(path, "*");
        let mut below = BTreeSet::new();
        walk(root, v, &any, refs, &mut below);
        if !below.is_empty() {
            out.insert(any);
            out.extend(below);
        }
    }
}

#[test]
fn the_table_classifies_every_property_of_the_specification_and_no_other() {
    let schema = schema_paths();
    assert!(
        schema.len() > 300,
        "too few properties read: {}",
        schema.len()
    );
    let table: BTreeSet<String> = FIELDS.iter().map(|(p, _)| p.to_string()).collect();
    assert_eq!(table.len(), FIELDS.len(), "a path is in the table twice");
    let missing: Vec<&String> = schema.difference(&table).collect();
    assert!(missing.is_empty(), "not classified: {missing:#?}");
    let stale: Vec<&String> = table.difference(&schema).collect();
    assert!(stale.is_empty(), "not in the specification: {stale:#?}");
}

/// `value` without the last key of `pattern` wherever the pattern leads.
fn without(value: &mut Value, pattern: &[&str]) {
    let Some((first, rest)) = pattern.split_first() else {
        return;
    };
    let (key, items) = match first.strip_suffix("[]") {
        Some(k) => (k, true),
        None => (*first, false),
    };
    let Value::Object(map) = value else { return };
    if rest.is_empty() && !items {
        if key == "*" {
            map.clear();
        } else {
            map.remove(key);
        }
        return;
    }
    let children: Vec<&mut Value> = if key == "*" {
        map.values_mut().collect()
    } else {
        map.get_mut(key).into_iter().collect()
    };
    for child in children {
        if items {
            if let Value::Array(list) = child {
                for item in list {
                    without(item, rest);
                }
            }
        } else {
            without(child, rest);
        }
    }
}

async fn imported(dir: &Path, over: &Value) -> Result<Vec<u8>, Vec<String>> {
    std::fs::write(dir.join("compose.override.yaml"), over.to_string()).unwrap();
    let src = Source {
        dir: dir.to_path_buf(),
        project_name: None,
        ..Source::default()
    };
    import(&src, None).await.map(|i| i.bytes)
}

#[tokio::test]
async fn each_translated_property_changes_what_is_imported() {
    let dir = tempfile::Builder::new().prefix("fields").tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("compose.yaml"),
        "name: fields\nservices:\n  web:\n    image: reg.test/busybox:stable\n",
    )
    .unwrap();
    for (file, text) in [("web.env", "A=1\n"), ("key", "k\n"), ("conf", "c\n")] {
        std::fs::write(d.join(file), text).unwrap();
    }
    for (path, class) in FIELDS {
        let Class::Translated(example) = class else {
            continue;
        };
        let with = yaml::documents(example)
            .unwrap_or_else(|e| panic!("{path}: its example: {e}"))
            .remove(0)
            .value;
        let mut less = with.clone();
        let pattern: Vec<&str> = path.split('.').collect();
        // `a[].b`: the item marker rides on the key before it.
        without(&mut less, &pattern);
        assert_ne!(less, with, "{path}: its example does not hold it");
        let got = imported(d, &with).await;
        if let Err(problems) = &got {
            assert!(
                !problems.iter().any(|p| p.contains("not a property")),
                "{path}: {problems:#?}"
            );
        }
        let base = imported(d, &less).await;
        assert_ne!(got, base, "{path}: importing it changes nothing");
    }
}

#[test]
fn the_field_table_of_the_docs_is_the_tables_own() {
    let page_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/compose.md");
    let page = std::fs::read_to_string(&page_path).unwrap();
    let begin = "<!-- fields: generated from src/compose/fields.rs -->\n";
    let end = "<!-- fields: end -->";
    let table = classify::markdown();
    let start = page.find(begin).map(|i| i + begin.len());
    let stop = page.find(end);
    let current = match (start, stop) {
        (Some(a), Some(b)) if a <= b => &page[a..b],
        _ => "",
    };
    if current != table && std::env::var_os("MESH_HOST_WRITE_DOCS").is_some() {
        let (a, b) = (start.unwrap(), stop.unwrap());
        let mut new = page[..a].to_owned();
        new.push_str(&table);
        new.push_str(&page[b..]);
        std::fs::write(&page_path, new).unwrap();
        return;
    }
    assert!(
        current == table,
        "docs/compose.md's field table differs from src/compose/fields.rs: run the test with MESH_HOST_WRITE_DOCS=1 to write it"
    );
}
