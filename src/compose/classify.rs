//! A project walked against the table of compose's properties
//! ([`super::fields`]): each key found is translated (the walk goes on
//! into it), noted, or refused; a key the table does not hold is refused.
//! So "nothing in silence" holds by construction: the code that
//! translates a service reads only keys the walk let through, and a key
//! added to the specification is refused until it is classified. `x-`
//! keys are extensions, ignored as compose ignores them.

use std::collections::HashSet;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::fields::{class, Class, FIELDS};
use super::problems::Problems;

/// Patterns with properties below them (`services.*`, `services.*.ports[]`).
fn parents() -> &'static HashSet<String> {
    static PARENTS: OnceLock<HashSet<String>> = OnceLock::new();
    PARENTS.get_or_init(|| {
        let mut out = HashSet::new();
        for (path, _) in FIELDS {
            let mut end = path.len();
            while let Some(i) = path[..end].rfind(['.', '[']) {
                out.insert(path[..i].to_owned());
                end = i;
            }
        }
        out
    })
}

fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

/// Whether `key` is a name as the specification writes names
/// (`^[a-zA-Z0-9._-]+$`): only such keys are quoted in a message, so that
/// a file that is no compose file (a secret given with `-f`) never has
/// its lines printed as keys.
pub fn is_name(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 128
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A key as a message may show it.
fn quoted(key: &str) -> &str {
    if key.starts_with('[') || is_name(key) {
        key
    } else {
        "(a key that is no name)"
    }
}

/// Where a key is, as messages name it: `web: ports[0].mode` for a
/// service's, `networks.back.internal` for the top level's.
fn shown(at: &[String]) -> String {
    let mut out = String::new();
    let (head, rest) = if at.len() > 2 && at[0] == "services" {
        (Some(&at[1]), &at[2..])
    } else {
        (None, at)
    };
    for part in rest {
        if part.starts_with('[') || out.is_empty() {
            out.push_str(quoted(part));
        } else {
            out.push('.');
            out.push_str(quoted(part));
        }
    }
    match head {
        Some(service) => format!("{}: {out}", quoted(service)),
        None => out,
    }
}

/// Walk `model` (its services only those `enabled` says) and say what is
/// noted and refused.
pub fn walk(model: &Map<String, Value>, enabled: &dyn Fn(&str) -> bool, p: &mut Problems) {
    let mut at = Vec::new();
    for (key, value) in model {
        if key.starts_with("x-") {
            continue;
        }
        at.push(key.clone());
        match (key.as_str(), value) {
            ("services", Value::Object(services)) => {
                for (name, service) in services {
                    if !enabled(name) || name.starts_with("x-") {
                        continue;
                    }
                    at.push(name.clone());
                    if !is_name(name) {
                        p.refuse(
                            shown(&at[..1]),
                            "a service name compose refuses: letters, digits, '.', '_' and '-'",
                        );
                        at.pop();
                        continue;
                    }
                    if let Value::Object(fields) = service {
                        map(fields, "services.*", &mut at, p);
                    }
                    at.pop();
                }
            }
            _ => one(key, value, "", &mut at, p),
        }
        at.pop();
    }
}

/// The keys of one mapping whose pattern is `pattern`.
fn map(fields: &Map<String, Value>, pattern: &str, at: &mut Vec<String>, p: &mut Problems) {
    for (key, value) in fields {
        if key.starts_with("x-") {
            continue;
        }
        at.push(key.clone());
        one(key, value, pattern, at, p);
        at.pop();
    }
}

/// One key below `parent`, at `at`.
fn one(key: &str, value: &Value, parent: &str, at: &mut Vec<String>, p: &mut Problems) {
    let exact = join(parent, key);
    let (pattern, found) = match class(&exact) {
        Some(c) => (exact, c),
        None => {
            let any = join(parent, "*");
            match class(&any) {
                Some(_) if !is_name(key) => {
                    p.refuse(
                        shown(at),
                        "a name compose refuses: letters, digits, '.', '_' and '-'",
                    );
                    return;
                }
                Some(c) => (any, c),
                None => {
                    p.refuse(
                        shown(at),
                        "not a property of the compose specification here: remove it (a typo?)",
                    );
                    return;
                }
            }
        }
    };
    match found {
        Class::Noted(why) => p.note(shown(at), why),
        Class::Refused(why) => p.refuse(shown(at), why),
        Class::Translated(_) => descend(value, &pattern, at, p),
    }
}

/// Into a translated value that has properties of its own.
fn descend(value: &Value, pattern: &str, at: &mut Vec<String>, p: &mut Problems) {
    match value {
        Value::Object(fields) if parents().contains(pattern) => map(fields, pattern, at, p),
        Value::Array(items) => {
            let item_pattern = format!("{pattern}[]");
            if !parents().contains(&item_pattern) {
                return;
            }
            for (i, item) in items.iter().enumerate() {
                if let Value::Object(fields) = item {
                    at.push(format!("[{i}]"));
                    map(fields, &item_pattern, at, p);
                    at.pop();
                }
            }
        }
        _ => {}
    }
}

/// The table as docs/compose.md shows it: one row per property, its
/// class, and what it becomes or why.
pub fn markdown() -> String {
    let mut out = String::from("| compose property | import | why, or the fix |\n|---|---|---|\n");
    for (path, c) in FIELDS {
        let (word, why) = match c {
            Class::Translated(_) => ("translated", ""),
            Class::Noted(why) => ("noted", *why),
            Class::Refused(why) => ("refused", *why),
        };
        out.push_str(&format!("| `{path}` | {word} | {why} |\n"));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn walked(v: Value) -> Problems {
        let mut p = Problems::default();
        walk(v.as_object().unwrap(), &|_| true, &mut p);
        p
    }

    #[test]
    fn each_key_is_translated_noted_or_refused_and_unknown_ones_are_refused() {
        let p = walked(json!({
            "version": "3.8",
            "x-anchors": {"anything": 1},
            "services": {"web": {
                "image": "x", "tty": true, "magic": 1,
                "ports": ["80", {"target": 80, "mode": "host", "oops": 1}],
                "build": {"context": "."},
                "x-own": 1,
                "volumes": [{"type": "bind", "source": "/a", "target": "/b", "bind": {"selinux": "z"}}],
                "depends_on": {"db": {"condition": "service_started", "restart": true}}
            }},
            "networks": {"back": {"attachable": true, "ipam": {"options": {}}}},
            "unknown_top": 1
        }));
        assert_eq!(
            p.refused,
            [
                "networks.back.ipam.options: not supported: mesh-host declares a subnet and a gateway; remove it",
                "web: build: not supported: mesh-host runs published images; build and push it, then import again",
                "web: magic: not a property of the compose specification here: remove it (a typo?)",
                "web: ports[1].oops: not a property of the compose specification here: remove it (a typo?)",
                "unknown_top: not a property of the compose specification here: remove it (a typo?)",
            ]
        );
        let notes: Vec<String> = p
            .notes
            .iter()
            .map(|n| n.split(": ").take(2).collect::<Vec<_>>().join(": "))
            .collect();
        assert_eq!(
            notes,
            [
                "networks.back.attachable: a swarm setting",
                "web: depends_on.db.restart",
                "web: ports[1].mode",
                "web: tty",
                "web: volumes[0].bind.selinux",
                "version: obsolete",
            ]
        );
    }

    #[test]
    fn a_key_that_is_no_name_is_never_quoted() {
        let p = walked(json!({
            "root:$6$secret$hash:1:0:::": null,
            "services": {"we b": {"image": "x"}, "ok": {"image": "x", "a$b": 1}},
            "networks": {"n$x": {}}
        }));
        assert_eq!(p.refused.len(), 4, "{:#?}", p.refused);
        for r in &p.refused {
            assert!(!r.contains('$') && !r.contains("we b"), "{r}");
        }
    }

    #[test]
    fn a_disabled_service_is_not_walked() {
        let mut p = Problems::default();
        let v = json!({"services": {"debug": {"image": "x", "magic": 1}}});
        walk(v.as_object().unwrap(), &|name| name != "debug", &mut p);
        assert!(p.refused.is_empty());
    }
}
