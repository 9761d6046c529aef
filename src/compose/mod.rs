//! `mesh-host import`: a compose project in, a declaration out (CONTRACT
//! "Compose"; the field table is docs/compose.md).
//!
//! A room of its own above the declaration it produces: it reads the
//! project ([`project`]: files, `.env`, interpolation, merges, the name),
//! maps the top level (`top`) and each service (`service`), orders the
//! services by `depends_on`, and reaches the runtime only to pin each
//! image's tag to its digest ([`pin`]). Nothing is dropped in silence:
//! what cannot be honoured is refused, all of it listed, each line naming
//! the fix; what means nothing on a node is noted. The output is checked
//! as `check` would before it is written, and is stable: the same project
//! imports to the same bytes.

pub mod interpolate;
mod merge;
mod mounts;
mod paths;
pub mod pin;
pub mod ports;
pub mod project;
mod service;
mod top;
pub mod units;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

pub use project::Source;

/// What an import refuses and notes, each line naming the service and
/// field.
#[derive(Debug, Default)]
pub struct Problems {
    pub refused: Vec<String>,
    pub notes: Vec<String>,
}

impl Problems {
    fn refuse(&mut self, at: impl Into<String>, why: impl Into<String>) {
        self.refused.push(format!("{}: {}", at.into(), why.into()));
    }

    fn note(&mut self, at: impl Into<String>, what: impl Into<String>) {
        self.notes.push(format!("{}: {}", at.into(), what.into()));
    }
}

/// A declaration made from a project.
#[derive(Debug)]
pub struct Imported {
    /// The declaration's bytes (pretty JSON and a newline).
    pub bytes: Vec<u8>,
    /// What was noted on the way (said on stderr).
    pub notes: Vec<String>,
}

/// Top-level keys of a compose file.
const TOP_KEYS: [&str; 7] = [
    "version", "name", "services", "networks", "volumes", "secrets", "configs",
];

/// How one service waits for another (`depends_on`'s conditions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Condition {
    Started,
    Healthy,
    Completed,
}

/// The services enabled by the profiles asked for, by name.
fn enabled(
    services: &Map<String, Value>,
    profiles: &[String],
) -> BTreeMap<String, Map<String, Value>> {
    services
        .iter()
        .filter_map(|(name, svc)| {
            let svc = svc.as_object().cloned().unwrap_or_default();
            let theirs: Vec<String> = svc
                .get("profiles")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|p| p.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            let on = theirs.is_empty() || theirs.iter().any(|p| profiles.contains(p));
            on.then(|| (name.clone(), svc))
        })
        .collect()
}

/// Each service's `depends_on`, read in both forms.
fn depends_on(
    services: &BTreeMap<String, Map<String, Value>>,
    p: &mut Problems,
) -> BTreeMap<String, Vec<(String, Condition)>> {
    let mut deps = BTreeMap::new();
    for (name, svc) in services {
        let mut mine = Vec::new();
        match svc.get("depends_on") {
            None => {}
            Some(Value::Array(items)) => {
                for i in items {
                    mine.push((
                        i.as_str().unwrap_or_default().to_owned(),
                        Condition::Started,
                    ));
                }
            }
            Some(Value::Object(m)) => {
                for (dep, how) in m {
                    let condition = match how.get("condition").and_then(Value::as_str) {
                        None | Some("service_started") => Condition::Started,
                        Some("service_healthy") => Condition::Healthy,
                        Some("service_completed_successfully") => Condition::Completed,
                        Some(other) => {
                            p.refuse(
                                format!("{name}: depends_on.{dep}.condition"),
                                format!("{other:?} is not a condition compose knows"),
                            );
                            continue;
                        }
                    };
                    mine.push((dep.clone(), condition));
                }
            }
            Some(_) => p.refuse(
                format!("{name}: depends_on"),
                "expected a list or a mapping",
            ),
        }
        for (dep, _) in &mine {
            if !services.contains_key(dep) {
                p.refuse(
                    format!("{name}: depends_on"),
                    format!(
                        "{dep:?} is not a service of this project (or its profile is not enabled)"
                    ),
                );
            }
        }
        mine.retain(|(dep, _)| services.contains_key(dep));
        deps.insert(name.clone(), mine);
    }
    deps
}

/// The services in an order where each comes after what it depends on
/// (ties by name); a cycle is refused, naming it.
fn ordered(deps: &BTreeMap<String, Vec<(String, Condition)>>, p: &mut Problems) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    let mut placed: BTreeSet<&str> = BTreeSet::new();
    while placed.len() < deps.len() {
        let next = deps.iter().find(|(name, ds)| {
            !placed.contains(name.as_str()) && ds.iter().all(|(d, _)| placed.contains(d.as_str()))
        });
        match next {
            Some((name, _)) => {
                placed.insert(name);
                order.push(name.clone());
            }
            None => {
                let left: Vec<&str> = deps
                    .keys()
                    .map(String::as_str)
                    .filter(|n| !placed.contains(n))
                    .collect();
                p.refuse(
                    "depends_on",
                    format!("a cycle among {}: no order starts them", left.join(", ")),
                );
                order.extend(left.iter().map(|s| s.to_string()));
                break;
            }
        }
    }
    order
}

/// Read `source` and make its declaration; the images pinned through
/// `pinner` (none: tags left, `--no-resolve`).
pub async fn import(
    source: &Source,
    pinner: Option<&dyn pin::Pinner>,
) -> Result<Imported, Vec<String>> {
    let (project, unset) = project::load(source)?;
    let mut p = Problems {
        refused: unset,
        notes: Vec::new(),
    };
    for key in project.model.keys() {
        match key.as_str() {
            "include" => p.refuse(
                "include",
                "not supported: give each file with -f, then import again",
            ),
            k if TOP_KEYS.contains(&k) || k.starts_with("x-") => {}
            other => p.refuse(other, "not a top-level key of a compose file"),
        }
    }
    let services = match project.model.get("services") {
        Some(Value::Object(s)) => enabled(s, &project.profiles),
        _ => {
            p.refuse("services", "missing: a project declares its services");
            BTreeMap::new()
        }
    };
    let top = top::read(&project, &mut p);
    let deps = depends_on(&services, &mut p);
    let order = ordered(&deps, &mut p);
    let completed: BTreeSet<String> = deps
        .values()
        .flatten()
        .filter(|(_, c)| *c == Condition::Completed)
        .map(|(d, _)| d.clone())
        .collect();

    let mut dirs = BTreeSet::new();
    let mut containers = Vec::new();
    let mut restart_defaulted = Vec::new();
    for name in &order {
        let svc = &services[name];
        let mut c = service::Service {
            project: &project,
            top: &top,
            name,
            p: &mut p,
            dirs: &mut dirs,
            completed: &completed,
        }
        .container(svc);
        let mut after = Vec::new();
        for (dep, condition) in &deps[name] {
            match condition {
                Condition::Started => after.push(json!({"id": dep})),
                Condition::Healthy => after.push(json!({"id": dep, "condition": "healthy"})),
                // A run-once step gates all that follows it.
                Condition::Completed => {}
            }
        }
        if !after.is_empty() {
            c["depends-on"] = Value::Array(after);
        }
        if !svc.contains_key("restart") && c.get("run-once").is_none() {
            restart_defaulted.push(name.clone());
        }
        containers.push(c);
    }
    if !restart_defaulted.is_empty() {
        p.note(
            restart_defaulted.join(", "),
            "no restart: kept running as unless-stopped, mesh-host's default (compose's is no)",
        );
    }

    // Images: pinned to their digests, each once.
    let images: BTreeSet<String> = containers
        .iter()
        .filter_map(|c| c.get("image").and_then(Value::as_str).map(str::to_owned))
        .collect();
    let mut pinned: BTreeMap<String, String> = BTreeMap::new();
    if p.refused.is_empty() {
        match pinner {
            Some(pinner) => {
                for image in &images {
                    match pin::pin(pinner, image).await {
                        Ok(reference) => {
                            pinned.insert(image.clone(), reference);
                        }
                        Err(e) => p.refuse(format!("image {image}"), e),
                    }
                }
            }
            None => {
                let tags: Vec<&str> = images
                    .iter()
                    .map(String::as_str)
                    .filter(|i| !i.contains("@sha256:"))
                    .collect();
                if !tags.is_empty() {
                    p.note(
                        "--no-resolve",
                        format!(
                            "{} left as tags: check refuses them until each is pinned (REPO:TAG@sha256:...)",
                            tags.join(", ")
                        ),
                    );
                }
            }
        }
    }
    for c in &mut containers {
        if let Some(reference) = c
            .get("image")
            .and_then(Value::as_str)
            .and_then(|i| pinned.get(i))
        {
            c["image"] = json!(reference);
        }
    }

    // Networks a service joins that compose makes implicitly: the
    // default one.
    let mut resources: Vec<Value> = Vec::new();
    let joined: BTreeSet<String> = containers
        .iter()
        .flat_map(|c| {
            c.get("networks")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|n| n.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect();
    let default = format!("{}_default", project.name);
    let declares_default = top.networks.contains_key("default");
    if joined.contains(&default) && !declares_default {
        resources.push(json!({"id": "network-default", "type": "network", "module": project.name, "name": default}));
    }
    resources.extend(top.networks.values().filter_map(|n| n.resource.clone()));
    resources.extend(top.volumes.values().filter_map(|v| v.resource.clone()));
    for (i, dir) in dirs.iter().enumerate() {
        resources.push(
            json!({"id": format!("directory-{}", i + 1), "type": "directory",
                              "module": project.name, "path": dir}),
        );
    }
    resources.extend(containers);

    let mut ids = BTreeSet::new();
    for r in &resources {
        let id = r["id"].as_str().unwrap_or_default();
        if !ids.insert(id.to_owned()) {
            p.refuse(id, "two resources would have this id (a service named like a network or volume): rename one");
        }
    }
    if !p.refused.is_empty() {
        return Err(p.refused);
    }
    let declaration = json!({"declaration": 1, "resources": resources});
    let mut bytes = serde_json::to_vec_pretty(&declaration).map_err(|e| vec![e.to_string()])?;
    bytes.push(b'\n');
    // What check says of it: nothing, or (tags left) only that they are
    // not pinned.
    if let Err(refusal) = crate::declaration::parse(&bytes) {
        let left: Vec<String> = refusal
            .problems
            .iter()
            .filter(|problem| {
                !(pinner.is_none() && problem.message.contains("is not pinned by digest"))
            })
            .map(|problem| format!("the declaration made is refused: {problem}"))
            .collect();
        if !left.is_empty() {
            return Err(left);
        }
    }
    Ok(Imported {
        bytes,
        notes: p.notes,
    })
}
