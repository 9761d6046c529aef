//! A project's top-level `networks`, `volumes`, `secrets` and `configs`:
//! the names compose gives them (`PROJECT_KEY`, or `name:`), the network
//! and volume resources they become, and the files secrets and configs
//! are read from.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Map, Value};

use super::project::Project;
use super::Problems;

/// One top-level network or volume.
#[derive(Debug, Clone)]
pub struct Named {
    /// Its name in the runtime.
    pub name: String,
    /// The resource declaring it; `None` for an `external` one, which the
    /// declaration only names.
    pub resource: Option<Value>,
}

/// The top level as the services see it.
#[derive(Debug, Default)]
pub struct TopLevel {
    pub networks: BTreeMap<String, Named>,
    pub volumes: BTreeMap<String, Named>,
    /// Secret and config key → the file it is read from.
    pub secrets: BTreeMap<String, PathBuf>,
    pub configs: BTreeMap<String, PathBuf>,
}

/// A value as the text compose means by it (a number or boolean as
/// written, null as nothing).
pub(super) fn text(v: &Value) -> String {
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

fn entries<'a>(
    project: &'a Project,
    key: &str,
    p: &mut Problems,
) -> Vec<(&'a String, Map<String, Value>)> {
    match project.model.get(key) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(map)) => map
            .iter()
            .filter(|(k, _)| !k.starts_with("x-"))
            .filter_map(|(k, v)| match v {
                Value::Null => Some((k, Map::new())),
                Value::Object(m) => Some((k, m.clone())),
                _ => {
                    p.refuse(format!("{key}.{k}"), "expected a mapping");
                    None
                }
            })
            .collect(),
        Some(_) => {
            p.refuse(key, "expected a mapping");
            Vec::new()
        }
    }
}

/// Refuse every key of `entry` not in `known`.
fn only(entry: &Map<String, Value>, at: &str, known: &[&str], p: &mut Problems) {
    for k in entry.keys() {
        if !known.contains(&k.as_str()) && !k.starts_with("x-") {
            p.refuse(
                format!("{at}.{k}"),
                "not supported by mesh-host import; remove it, then import again",
            );
        }
    }
}

fn external(entry: &Map<String, Value>) -> bool {
    match entry.get("external") {
        Some(Value::Bool(b)) => *b,
        Some(Value::Object(_)) => true,
        _ => false,
    }
}

/// Read the top level.
pub fn read(project: &Project, p: &mut Problems) -> TopLevel {
    let mut top = TopLevel::default();
    let module = &project.name;
    for (key, entry) in entries(project, "networks", p) {
        let at = format!("networks.{key}");
        only(
            &entry,
            &at,
            &[
                "name",
                "driver",
                "driver_opts",
                "internal",
                "external",
                "labels",
                "ipam",
                "attachable",
            ],
            p,
        );
        let name = entry
            .get("name")
            .map(text)
            .unwrap_or_else(|| format!("{module}_{key}"));
        if external(&entry) {
            top.networks.insert(
                key.clone(),
                Named {
                    name,
                    resource: None,
                },
            );
            continue;
        }
        if entry
            .get("driver_opts")
            .is_some_and(|o| !string_map(Some(o)).is_empty())
        {
            p.refuse(format!("{at}.driver_opts"), "not supported: a network is declared with driver, subnet, gateway, internal and labels");
        }
        let mut resource = json!({"id": format!("network-{key}"), "type": "network",
                                   "module": module, "name": name});
        if let Some(d) = entry.get("driver") {
            resource["driver"] = Value::String(text(d));
        }
        if entry.get("internal").and_then(Value::as_bool) == Some(true) {
            resource["internal"] = json!(true);
        }
        let labels = string_map(entry.get("labels"));
        if !labels.is_empty() {
            resource["labels"] = Value::Object(labels);
        }
        if let Some(ipam) = entry.get("ipam").and_then(Value::as_object) {
            only(ipam, &format!("{at}.ipam"), &["driver", "config"], p);
            let configs = ipam
                .get("config")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if configs.len() > 1 {
                p.refuse(
                    format!("{at}.ipam.config"),
                    "one address range per network (mesh-host declares one subnet)",
                );
            }
            if let Some(Value::Object(c)) = configs.first() {
                only(
                    c,
                    &format!("{at}.ipam.config[0]"),
                    &["subnet", "gateway"],
                    p,
                );
                if let Some(s) = c.get("subnet") {
                    resource["subnet"] = Value::String(text(s));
                }
                if let Some(g) = c.get("gateway") {
                    resource["gateway"] = Value::String(text(g));
                }
            }
        }
        top.networks.insert(
            key.clone(),
            Named {
                name,
                resource: Some(resource),
            },
        );
    }
    for (key, entry) in entries(project, "volumes", p) {
        let at = format!("volumes.{key}");
        only(
            &entry,
            &at,
            &["name", "driver", "driver_opts", "labels", "external"],
            p,
        );
        let name = entry
            .get("name")
            .map(text)
            .unwrap_or_else(|| format!("{module}_{key}"));
        if external(&entry) {
            top.volumes.insert(
                key.clone(),
                Named {
                    name,
                    resource: None,
                },
            );
            continue;
        }
        let mut resource = json!({"id": format!("volume-{key}"), "type": "volume",
                                   "module": module, "name": name});
        if let Some(d) = entry.get("driver") {
            resource["driver"] = Value::String(text(d));
        }
        for (from, to) in [("driver_opts", "driver-opts"), ("labels", "labels")] {
            let map = string_map(entry.get(from));
            if !map.is_empty() {
                resource[to] = Value::Object(map);
            }
        }
        top.volumes.insert(
            key.clone(),
            Named {
                name,
                resource: Some(resource),
            },
        );
    }
    for (kind, target) in [("secrets", &mut top.secrets), ("configs", &mut top.configs)] {
        for (key, entry) in entries(project, kind, p) {
            let at = format!("{kind}.{key}");
            match entry.get("file") {
                Some(file) => {
                    only(&entry, &at, &["file", "name"], p);
                    target.insert(key.clone(), super::paths::absolute(project, &text(file)));
                }
                None => p.refuse(
                    at,
                    "only secrets and configs from a file are supported (environment, content and external ones are not): write it to a file, then import again",
                ),
            }
        }
    }
    top
}
