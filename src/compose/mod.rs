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

mod attach;
mod cast;
mod classify;
mod context;
mod dotenv;
mod extends;
pub mod fields;
mod gpus;
mod health;
pub mod input;
pub mod interpolate;
mod limits;
mod logging;
mod merge;
mod mounts;
mod paths;
pub mod pin;
pub mod ports;
mod problems;
pub mod project;
mod replicas;
mod scalar;
mod security;
mod service;
mod top;
pub mod units;
mod values;
pub mod yaml;

#[cfg(test)]
mod fields_tests;
#[cfg(test)]
mod gpus_tests;
#[cfg(test)]
mod network_tests;
#[cfg(test)]
mod security_tests;
#[cfg(test)]
mod shape_tests;
#[cfg(test)]
mod stacks_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod trust_tests;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

pub use attach::MAX_PORTS;
pub use classify::markdown as field_table;
pub use problems::Problems;
pub use project::Source;

use crate::declaration::raw::{
    Field, RawDependency, RawDirectory, RawNetwork, RawResource, WrittenDeclaration,
};

/// A declaration made from a project.
#[derive(Debug)]
pub struct Imported {
    /// The declaration's bytes (pretty JSON and a newline).
    pub bytes: Vec<u8>,
    /// What was noted on the way (said on stderr).
    pub notes: Vec<String>,
}

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
            // A name compose refuses is refused by the walk, by place.
            (on && classify::is_name(name)).then(|| (name.clone(), svc))
        })
        .collect()
}

/// Each service's `depends_on`, read in both forms; a dependency that is
/// not `required` and not there is left out and noted, as compose warns.
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
                    mine.push((values::text(i), Condition::Started, true));
                }
            }
            Some(Value::Object(m)) => {
                for (dep, how) in m {
                    let at = format!("{name}: depends_on.{dep}");
                    let required = match how.get("required") {
                        Some(v) => match cast::boolean(p, &format!("{at}.required"), v) {
                            Some(r) => r,
                            None => continue,
                        },
                        None => true,
                    };
                    let condition = match how.get("condition").map(values::text).as_deref() {
                        None | Some("service_started") => Condition::Started,
                        Some("service_healthy") => Condition::Healthy,
                        Some("service_completed_successfully") => Condition::Completed,
                        Some(other) => {
                            p.refuse(
                                format!("{at}.condition"),
                                format!("{other:?} is not a condition compose knows"),
                            );
                            continue;
                        }
                    };
                    mine.push((dep.clone(), condition, required));
                }
            }
            Some(_) => p.refuse(
                format!("{name}: depends_on"),
                "expected a list or a mapping",
            ),
        }
        let mut kept = Vec::new();
        for (dep, condition, required) in mine {
            if services.contains_key(&dep) {
                kept.push((dep, condition));
            } else if required {
                p.refuse(
                    format!("{name}: depends_on"),
                    format!(
                        "{dep:?} is not a service of this project (or its profile is not enabled)"
                    ),
                );
            } else {
                p.note(
                    format!("{name}: depends_on.{dep}"),
                    "not a service of this project, and not required: left out, as compose leaves it",
                );
            }
        }
        deps.insert(name.clone(), kept);
    }
    deps
}

/// The services in an order where each comes after what it depends on,
/// ties by name (the smallest name ready first); a cycle is refused,
/// naming it. Linear in the services and their dependencies.
fn ordered(deps: &BTreeMap<String, Vec<(String, Condition)>>, p: &mut Problems) -> Vec<String> {
    let mut waiting: BTreeMap<&str, usize> = BTreeMap::new();
    let mut dependents: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (name, ds) in deps {
        let unique: BTreeSet<&str> = ds.iter().map(|(d, _)| d.as_str()).collect();
        waiting.insert(name, unique.len());
        for d in unique {
            dependents.entry(d).or_default().push(name);
        }
    }
    let mut ready: BTreeSet<&str> = waiting
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(name, _)| *name)
        .collect();
    let mut order = Vec::with_capacity(deps.len());
    while let Some(name) = ready.pop_first() {
        order.push(name.to_owned());
        for d in dependents.get(name).into_iter().flatten() {
            if let Some(n) = waiting.get_mut(d) {
                *n -= 1;
                if *n == 0 {
                    ready.insert(d);
                }
            }
        }
    }
    if order.len() < deps.len() {
        let placed: BTreeSet<&str> = order.iter().map(String::as_str).collect();
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
    }
    order
}

/// Read `source` and make its declaration; the images pinned through
/// `pinner` (none: tags left, `--no-resolve`).
pub async fn import(
    source: &Source,
    pinner: Option<&dyn pin::Pinner>,
) -> Result<Imported, Vec<String>> {
    let loaded = project::load(source)?;
    let project = loaded.project;
    let mut p = Problems {
        refused: loaded.refused,
        notes: loaded.notes,
    };
    let services = match project.model.get("services") {
        Some(Value::Object(s)) => enabled(s, &project.profiles),
        Some(Value::Null) | None => {
            p.refuse("services", "missing: a project declares its services");
            BTreeMap::new()
        }
        Some(_) => {
            p.refuse("services", "expected a mapping of services");
            BTreeMap::new()
        }
    };
    for (name, svc) in project
        .model
        .get("services")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if services.contains_key(name) && !svc.is_object() {
            p.refuse(format!("services.{name}"), "expected a mapping");
        }
    }
    classify::walk(
        &project.model,
        &|name| services.contains_key(name) || !classify::is_name(name),
        &mut p,
    );
    let top = top::read(&project, &mut p);
    let deps = depends_on(&services, &mut p);
    let mut peers = context::Peers::default();
    for (name, svc) in &services {
        let first = svc
            .get("container_name")
            .map(values::text)
            .unwrap_or_else(|| format!("{}-{name}-1", project.name));
        peers
            .by_container
            .entry(first)
            .or_insert_with(|| name.clone());
        peers.services.insert(name.clone());
    }
    // A network peer comes before its followers, as compose orders it
    // (an implicit depends_on): the declaration names it first.
    let mut ordering = deps.clone();
    for (name, svc) in &services {
        if let Some(peer) = attach::peer_service(svc, &peers).filter(|p| services.contains_key(p)) {
            if let Some(mine) = ordering.get_mut(name).filter(|_| peer != *name) {
                mine.push((peer, Condition::Started));
            }
        }
    }
    let order = ordered(&ordering, &mut p);
    let completed: BTreeSet<String> = deps
        .values()
        .flatten()
        .filter(|(_, c)| *c == Condition::Completed)
        .map(|(d, _)| d.clone())
        .collect();

    let mut dirs = BTreeSet::new();
    let mut containers = Vec::new();
    let mut restart_defaulted = Vec::new();
    let mut published = 0;
    let mut extra = 0;
    // Each service's container ids: one, or one a replica.
    let mut ids: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for name in &order {
        let svc = &services[name];
        let mut ctx = context::Service {
            project: &project,
            top: &top,
            name,
            p: &mut p,
            dirs: &mut dirs,
            completed: &completed,
            ports: &mut published,
            peers: &peers,
        };
        let mut c = service::container(&mut ctx, svc);
        let n = replicas::count(&mut ctx, svc);
        let mut after = Vec::new();
        for (dep, condition) in &deps[name] {
            let condition = match condition {
                Condition::Started => Field::Absent,
                Condition::Healthy => Field::Present("healthy".to_owned()),
                // A run-once step gates all that follows it.
                Condition::Completed => continue,
            };
            // A replicated service is waited for in each of its replicas.
            for id in ids.get(dep.as_str()).into_iter().flatten() {
                after.push(RawDependency {
                    id: Field::Present(id.clone()),
                    condition: condition.clone(),
                    ..RawDependency::default()
                });
            }
        }
        c.depends_on = values::list(after);
        if !svc.contains_key("restart") && c.run_once.is_absent() {
            restart_defaulted.push(name.clone());
        }
        let all = replicas::expand(&mut ctx, svc, c, n, &mut extra);
        peers.read.insert(
            name.clone(),
            all.iter()
                .filter_map(|c| match &c.name {
                    Field::Present(n) => Some(n.clone()),
                    _ => None,
                })
                .collect(),
        );
        ids.insert(
            name,
            all.iter()
                .filter_map(|c| match &c.id {
                    Field::Present(id) => Some(id.clone()),
                    _ => None,
                })
                .collect(),
        );
        containers.extend(all);
    }
    if !restart_defaulted.is_empty() {
        p.note(
            restart_defaulted.join(", "),
            "no restart: kept running as unless-stopped, mesh-host's default (compose's is no)",
        );
    }

    // Images: pinned to their digests, each once.
    let image_of = |c: &crate::declaration::raw::RawContainer| match &c.image {
        Field::Present(i) => Some(i.clone()),
        _ => None,
    };
    let images: BTreeSet<String> = containers.iter().filter_map(image_of).collect();
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
        if let Some(reference) = image_of(c).and_then(|i| pinned.get(&i)) {
            c.image = Field::Present(reference.clone());
        }
    }

    // Networks a service joins that compose makes implicitly: the
    // default one.
    let mut resources: Vec<RawResource> = Vec::new();
    let default = format!("{}_default", project.name);
    let joins_default = containers.iter().any(|c| match &c.networks {
        Field::Present(joins) => joins
            .iter()
            .any(|j| matches!(j, Field::Present(j) if j.name == Field::Present(default.clone()))),
        _ => false,
    });
    if joins_default && !top.networks.contains_key("default") {
        resources.push(RawResource::Network(Box::new(RawNetwork {
            id: Field::Present("network-default".into()),
            module: Field::Present(project.name.clone()),
            name: Field::Present(default),
            ..RawNetwork::default()
        })));
    }
    resources.extend(top.networks.into_values().filter_map(|n| n.resource));
    resources.extend(top.volumes.into_values().filter_map(|v| v.resource));
    for (i, dir) in dirs.iter().enumerate() {
        resources.push(RawResource::Directory(RawDirectory {
            id: Field::Present(format!("directory-{}", i + 1)),
            module: Field::Present(project.name.clone()),
            path: Field::Present(dir.clone()),
            ..RawDirectory::default()
        }));
    }
    resources.extend(
        containers
            .into_iter()
            .map(|c| RawResource::Container(Box::new(c))),
    );

    let mut ids = BTreeSet::new();
    for r in &resources {
        if let Field::Present(id) = r.id() {
            if !ids.insert(id.clone()) {
                p.refuse(id, "two resources would have this id (a service named like a network or volume): rename one");
            }
        }
    }
    if !p.refused.is_empty() {
        return Err(p.refused);
    }
    let declaration = WrittenDeclaration {
        declaration: crate::declaration::VERSION,
        resources,
    };
    // Through a JSON value, whose keys are sorted: the same project, the
    // same bytes.
    let value = serde_json::to_value(&declaration).map_err(|e| vec![e.to_string()])?;
    let mut bytes = serde_json::to_vec_pretty(&value).map_err(|e| vec![e.to_string()])?;
    bytes.push(b'\n');
    // What check says of it must be nothing. Tags left as they are
    // (--no-resolve) are checked as if pinned: every other problem is then
    // seen, also past the first thousand a refusal lists.
    let checked = match pinner {
        Some(_) => bytes.clone(),
        None => {
            serde_json::to_vec(&pinned_for_the_check(value)).map_err(|e| vec![e.to_string()])?
        }
    };
    if let Err(refusal) = crate::declaration::parse(&checked) {
        return Err(refusal
            .problems
            .iter()
            .map(|problem| format!("the declaration made is refused: {problem}"))
            .collect());
    }
    Ok(Imported {
        bytes,
        notes: p.notes,
    })
}

/// A declaration whose images left as tags carry a digest no image has:
/// what `check` says of it is what it says of the declaration once each
/// tag is pinned.
fn pinned_for_the_check(mut declaration: serde_json::Value) -> serde_json::Value {
    let unknown = format!("@sha256:{}", "0".repeat(64));
    if let Some(resources) = declaration["resources"].as_array_mut() {
        for r in resources {
            if let Some(serde_json::Value::String(image)) = r.get_mut("image") {
                if !image.contains("@sha256:") {
                    image.push_str(&unknown);
                }
            }
        }
    }
    declaration
}
