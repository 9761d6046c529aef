//! Several compose files merged in order, as compose merges them: mappings
//! key by key, a later scalar over an earlier one; in a service,
//! `environment`, `labels`, `extra_hosts` and `sysctls` as maps whatever
//! their form, `volumes` and `devices` by their target, `command`,
//! `entrypoint` and a health check's `test` replaced whole, and other
//! lists (`ports`, `dns`, `cap_add`, ...) joined without repeats.
//! Compose's `!reset` and `!override` ([`super::yaml::Mark`]) take the
//! marked path out of the files before, so that a later file's `ports:
//! !reset []` leaves no port published and `!override` replaces instead
//! of merging.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::yaml::Mark;

/// Take each marked path out of `base`, as compose does before it merges
/// the file that marked it.
pub fn unset_marked(base: &mut Value, marks: &[Mark]) {
    for mark in marks {
        let Some((last, parents)) = mark.path.split_last() else {
            continue;
        };
        let mut at = Some(&mut *base);
        for key in parents {
            at = at.and_then(|v| v.get_mut(key.as_str()));
            // A key of `environment: [A=1]`: the list read as the map
            // it merges as, or the key would stay in silence.
            if let Some(v) = at.as_deref_mut() {
                if v.is_array() && AS_MAPS.contains(&key.as_str()) {
                    let sep = if key == "extra_hosts" { ':' } else { '=' };
                    *v = Value::Object(as_map(std::mem::take(v), sep));
                }
            }
        }
        if let Some(Value::Object(map)) = at {
            map.remove(last);
        }
    }
}

/// Service keys whose list form is `KEY=VALUE` (or `KEY:VALUE` for
/// `extra_hosts`), merged as maps.
const AS_MAPS: [&str; 4] = ["environment", "labels", "extra_hosts", "sysctls"];
/// Service keys replaced whole.
const REPLACED: [&str; 3] = ["command", "entrypoint", "test"];
/// Service keys merged by the target each entry mounts at.
const BY_TARGET: [&str; 2] = ["volumes", "devices"];

/// `later` over `base`: the top level, then each service as compose does.
pub fn merge(base: Value, later: Value) -> Value {
    match (base, later) {
        (Value::Object(mut base), Value::Object(later)) => {
            for (key, value) in later {
                let merged = match (key.as_str(), base.remove(&key)) {
                    ("services", Some(Value::Object(services))) => {
                        Value::Object(merge_services(services, value))
                    }
                    (_, Some(old)) => merge_plain(old, value),
                    (_, None) => value,
                };
                base.insert(key, merged);
            }
            Value::Object(base)
        }
        (_, later) => later,
    }
}

fn merge_services(mut base: Map<String, Value>, later: Value) -> Map<String, Value> {
    let Value::Object(later) = later else {
        return base;
    };
    for (name, service) in later {
        let merged = match (base.remove(&name), service) {
            (Some(Value::Object(old)), Value::Object(new)) => {
                Value::Object(merge_service(old, new))
            }
            (_, new) => new,
        };
        base.insert(name, merged);
    }
    base
}

pub fn merge_service(
    mut base: Map<String, Value>,
    later: Map<String, Value>,
) -> Map<String, Value> {
    for (key, value) in later {
        let merged = match base.remove(&key) {
            None => value,
            Some(old) if AS_MAPS.contains(&key.as_str()) => {
                let sep = if key == "extra_hosts" { ':' } else { '=' };
                let mut map = as_map(old, sep);
                map.extend(as_map(value, sep));
                Value::Object(map)
            }
            Some(_) if REPLACED.contains(&key.as_str()) => value,
            Some(Value::Array(old)) if BY_TARGET.contains(&key.as_str()) => by_target(old, value),
            Some(old) => merge_plain(old, value),
        };
        base.insert(key, merged);
    }
    base
}

/// Mappings key by key (a health check's `test` replaced), lists joined
/// without repeats, anything else replaced.
fn merge_plain(base: Value, later: Value) -> Value {
    match (base, later) {
        (Value::Object(mut base), Value::Object(later)) => {
            for (key, value) in later {
                let merged = match base.remove(&key) {
                    Some(old) if !REPLACED.contains(&key.as_str()) => merge_plain(old, value),
                    _ => value,
                };
                base.insert(key, merged);
            }
            Value::Object(base)
        }
        (Value::Array(mut base), Value::Array(later)) => {
            // Compared by their JSON text: one pass, whatever the lengths.
            let mut seen: HashSet<String> = base.iter().map(Value::to_string).collect();
            for item in later {
                if seen.insert(item.to_string()) {
                    base.push(item);
                }
            }
            Value::Array(base)
        }
        (_, later) => later,
    }
}

/// A `KEY=VALUE` list or a map, as a map (a bare `KEY` maps to null).
pub fn as_map(value: Value, sep: char) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        Value::Array(items) => items
            .into_iter()
            .map(|item| {
                let text = match item {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                // extra_hosts also takes `name=ip` (compose 2.x).
                let split = text.split_once(sep).or_else(|| text.split_once('='));
                match split {
                    Some((k, v)) => (k.to_owned(), Value::String(v.to_owned())),
                    None => (text, Value::Null),
                }
            })
            .collect(),
        _ => Map::new(),
    }
}

/// The mount target of a `volumes` or `devices` entry, short or long.
fn target(entry: &Value) -> Option<String> {
    match entry {
        Value::String(s) => {
            let parts: Vec<&str> = s.split(':').collect();
            Some(match parts.as_slice() {
                [one] => (*one).to_owned(),
                [_, t, ..] => (*t).to_owned(),
                [] => return None,
            })
        }
        Value::Object(m) => m.get("target").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    }
}

fn by_target(mut base: Vec<Value>, later: Value) -> Value {
    let Value::Array(later) = later else {
        return later;
    };
    // Each target's place, so that the pass is linear.
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (i, b) in base.iter().enumerate() {
        if let Some(t) = target(b) {
            at.entry(t).or_insert(i);
        }
    }
    for entry in later {
        match target(&entry) {
            Some(t) => match at.get(&t) {
                Some(&i) => base[i] = entry,
                None => {
                    at.insert(t, base.len());
                    base.push(entry);
                }
            },
            None => base.push(entry),
        }
    }
    Value::Array(base)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn services_merge_as_compose_merges_them() {
        let base = json!({"name": "p", "services": {"web": {
            "image": "a", "command": ["x", "y"], "environment": ["A=1", "B=2"],
            "ports": ["80:80"], "volumes": ["./a:/data", "logs:/logs"],
            "healthcheck": {"test": ["CMD", "a", "b"], "interval": "5s"}
        }, "db": {"image": "d"}}});
        let later = json!({"services": {"web": {
            "image": "b", "command": ["z"], "environment": {"B": "3", "C": "4"},
            "ports": ["80:80", "443:443"], "volumes": ["./b:/data"],
            "healthcheck": {"test": ["CMD", "c"]}
        }}, "volumes": {"logs": {}}});
        let m = merge(base, later);
        let web = &m["services"]["web"];
        assert_eq!(web["image"], "b");
        assert_eq!(web["command"], json!(["z"]));
        assert_eq!(web["environment"], json!({"A": "1", "B": "3", "C": "4"}));
        assert_eq!(web["ports"], json!(["80:80", "443:443"]));
        assert_eq!(web["volumes"], json!(["./b:/data", "logs:/logs"]));
        assert_eq!(
            web["healthcheck"],
            json!({"test": ["CMD", "c"], "interval": "5s"})
        );
        assert_eq!(m["services"]["db"], json!({"image": "d"}));
        assert_eq!(m["volumes"], json!({"logs": {}}));
        assert_eq!(m["name"], "p");
    }

    #[test]
    fn reset_and_override_take_the_earlier_value_out() {
        use crate::compose::yaml::documents;
        let base = documents("services:\n  web:\n    ports: [\"80:80\"]\n    environment: {A: 1, B: 2}\n    dns: [1.1.1.1]\n").unwrap().remove(0).value;
        let later = documents("services:\n  web:\n    ports: !reset []\n    environment: !override {C: 3}\n    dns: [8.8.8.8]\n").unwrap().remove(0);
        let mut base = base;
        unset_marked(&mut base, &later.marks);
        let m = merge(base, later.value);
        let web = &m["services"]["web"];
        assert_eq!(web.get("ports"), None);
        assert_eq!(web["environment"], json!({"C": 3}));
        assert_eq!(web["dns"], json!(["1.1.1.1", "8.8.8.8"]));
    }
}
