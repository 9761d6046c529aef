//! The shapes compose values come in, as the importer reads them: text
//! of a scalar, a map in either of compose's forms, a list of strings;
//! and the declaration's raw fields built from them.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::declaration::raw::Field;

/// A value as the text compose means by it (a number or boolean as
/// written, null as nothing).
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A map of strings (`labels`, `driver_opts`), in either of compose's forms.
pub fn string_map(value: Option<&Value>) -> Map<String, Value> {
    match value {
        Some(v) => super::merge::as_map(v.clone(), '=')
            .into_iter()
            .map(|(k, v)| (k, Value::String(text(&v))))
            .collect(),
        None => Map::new(),
    }
}

/// A string or a list of them, as a list.
pub fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.iter().map(text).collect(),
        Value::Null => Vec::new(),
        other => vec![text(other)],
    }
}

/// A present field.
pub fn some<T>(v: T) -> Field<T> {
    Field::Present(v)
}

/// A list of present items, absent when empty.
pub fn list<T>(items: Vec<T>) -> Field<Vec<Field<T>>> {
    if items.is_empty() {
        Field::Absent
    } else {
        Field::Present(items.into_iter().map(Field::Present).collect())
    }
}

/// A map of present strings, absent when empty.
pub fn strings_map(map: Map<String, Value>) -> Field<BTreeMap<String, Field<String>>> {
    if map.is_empty() {
        return Field::Absent;
    }
    Field::Present(
        map.into_iter()
            .map(|(k, v)| (k, Field::Present(text(&v))))
            .collect(),
    )
}
