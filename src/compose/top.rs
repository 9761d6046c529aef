//! A project's top-level `networks`, `volumes`, `secrets` and `configs`:
//! the names compose gives them (`PROJECT_KEY`, or `name:`), the network
//! and volume resources they become, and the files secrets and configs
//! are read from.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Map, Value};

use super::project::Project;
use super::values::{string_map, strings_map, text};
use super::{cast, problems::Problems};
use crate::declaration::raw::{Field, RawNetwork, RawResource, RawVolume};

/// One top-level network or volume.
#[derive(Debug)]
pub struct Named {
    /// Its name in the runtime.
    pub name: String,
    /// The resource declaring it; `None` for an `external` one, which the
    /// declaration only names.
    pub resource: Option<RawResource>,
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

fn entries<'a>(
    project: &'a Project,
    key: &str,
    p: &mut Problems,
) -> Vec<(&'a String, Map<String, Value>)> {
    match project.model.get(key) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(map)) => map
            .iter()
            .filter(|(k, _)| !k.starts_with("x-") && super::classify::is_name(k))
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

/// Whether `entry` is `external`, cast as compose casts it (`None`: the
/// value cannot be read, and is refused).
fn external(entry: &Map<String, Value>, at: &str, p: &mut Problems) -> Option<bool> {
    match entry.get("external") {
        None => Some(false),
        Some(Value::Object(_)) => Some(true),
        Some(v) => cast::boolean(p, &format!("{at}.external"), v),
    }
}

/// A boolean of `entry`, absent when not given.
fn flag(entry: &Map<String, Value>, key: &str, at: &str, p: &mut Problems) -> Option<bool> {
    entry
        .get(key)
        .and_then(|v| cast::boolean(p, &format!("{at}.{key}"), v))
}

/// Read the top level.
pub fn read(project: &Project, p: &mut Problems) -> TopLevel {
    let mut top = TopLevel::default();
    let module = &project.name;
    for (key, entry) in entries(project, "networks", p) {
        let at = format!("networks.{key}");
        let name = entry
            .get("name")
            .map(text)
            .unwrap_or_else(|| format!("{module}_{key}"));
        let resource = match external(&entry, &at, p) {
            Some(false) => network(key, &entry, &at, module, &name, p),
            Some(true) | None => None,
        };
        top.networks.insert(key.clone(), Named { name, resource });
    }
    for (key, entry) in entries(project, "volumes", p) {
        let at = format!("volumes.{key}");
        let name = entry
            .get("name")
            .map(text)
            .unwrap_or_else(|| format!("{module}_{key}"));
        let resource = match external(&entry, &at, p) {
            Some(false) => Some(RawResource::Volume(RawVolume {
                id: Field::Present(format!("volume-{key}")),
                module: Field::Present(module.clone()),
                name: Field::Present(name.clone()),
                driver: entry
                    .get("driver")
                    .map_or(Field::Absent, |d| Field::Present(text(d))),
                driver_opts: strings_map(string_map(entry.get("driver_opts"))),
                labels: strings_map(string_map(entry.get("labels"))),
                ..RawVolume::default()
            })),
            Some(true) | None => None,
        };
        top.volumes.insert(key.clone(), Named { name, resource });
    }
    for (kind, target) in [("secrets", &mut top.secrets), ("configs", &mut top.configs)] {
        for (key, entry) in entries(project, kind, p) {
            let at = format!("{kind}.{key}");
            match entry.get("file") {
                Some(file) => {
                    let path = super::paths::absolute(project, &text(file));
                    // Mounted as it is: a missing one would be made a
                    // directory by Docker, a FIFO or a device is no file.
                    match std::fs::metadata(&path) {
                        Ok(m) if m.is_file() => {}
                        Ok(_) => p.refuse(
                            format!("{at}.file"),
                            format!("{} is not a regular file: a secret or config is a file", path.display()),
                        ),
                        Err(_) => p.refuse(
                            format!("{at}.file"),
                            format!("{} does not exist (compose refuses it too)", path.display()),
                        ),
                    }
                    target.insert(key.clone(), path);
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

/// The network resource of a top-level network that is not external.
fn network(
    key: &str,
    entry: &Map<String, Value>,
    at: &str,
    module: &str,
    name: &str,
    p: &mut Problems,
) -> Option<RawResource> {
    let mut n = RawNetwork {
        id: Field::Present(format!("network-{key}")),
        module: Field::Present(module.to_owned()),
        name: Field::Present(name.to_owned()),
        driver: entry
            .get("driver")
            .map_or(Field::Absent, |d| Field::Present(text(d))),
        labels: strings_map(string_map(entry.get("labels"))),
        driver_opts: strings_map(string_map(entry.get("driver_opts"))),
        ..RawNetwork::default()
    };
    if let Some(internal) = flag(entry, "internal", at, p) {
        // Written when true only, as the declaration's default is false.
        if internal {
            n.internal = Field::Present(true);
        }
    }
    if flag(entry, "enable_ipv4", at, p) == Some(false) {
        p.refuse(
            format!("{at}.enable_ipv4"),
            "false: not supported: Docker 20.10 gives every network IPv4; remove it",
        );
    }
    if flag(entry, "enable_ipv6", at, p) == Some(true) {
        n.enable_ipv6 = Field::Present(true);
    }
    if let Some(ipam) = entry.get("ipam").and_then(Value::as_object) {
        if let Some(driver) = ipam.get("driver").map(text) {
            if driver != "default" {
                p.refuse(
                    format!("{at}.ipam.driver"),
                    format!("{driver:?}: not supported: addresses come from Docker's default IPAM driver; remove it"),
                );
            }
        }
        let configs = ipam
            .get("config")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        // One range of each family, in either order: the IPv4 one is the
        // declaration's subnet, the IPv6 one its ipv6-subnet.
        let (mut v4, mut v6) = (0, 0);
        for c in configs.iter().filter_map(Value::as_object) {
            let subnet = c.get("subnet").map(text);
            let is_v6 = subnet.as_deref().is_some_and(|s| s.contains(':'));
            let (count, subnet_field, gateway_field) = if is_v6 {
                (&mut v6, &mut n.ipv6_subnet, &mut n.ipv6_gateway)
            } else {
                (&mut v4, &mut n.subnet, &mut n.gateway)
            };
            *count += 1;
            if *count > 1 {
                continue;
            }
            if let Some(s) = subnet {
                *subnet_field = Field::Present(s);
            }
            if let Some(g) = c.get("gateway") {
                *gateway_field = Field::Present(text(g));
            }
        }
        if v4 > 1 || v6 > 1 {
            p.refuse(
                format!("{at}.ipam.config"),
                "one address range of each family per network (mesh-host declares a subnet and an ipv6-subnet)",
            );
        }
    }
    Some(RawResource::Network(Box::new(n)))
}
