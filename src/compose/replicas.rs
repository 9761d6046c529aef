//! `deploy.replicas` and `scale`: compose runs N containers of a service
//! on one node, named `PROJECT-SERVICE-1` to `-N`; here N container
//! resources, ids `SERVICE-1` to `-N` (one alone keeps the id `SERVICE`).
//! What cannot be given to N containers at once is refused as compose
//! fails on it: a `container_name`, a fixed host port, a fixed address.
//! `deploy.mode: replicated` is compose's default; `global` is one
//! container on one node.

use serde_json::{Map, Value};

use super::context::Service;
use super::values::text;
use crate::declaration::raw::{Field, RawContainer};

/// Containers a project may add by replicas beyond one a service: each
/// is a resource, and a count is outside input.
pub const MAX_EXTRA: usize = 10_000;

/// How many containers of the service compose runs (at least one; a
/// count that cannot be honoured is refused and read as one).
pub fn count(s: &mut Service, svc: &Map<String, Value>) -> usize {
    let deploy = svc.get("deploy");
    let mode = deploy.and_then(|d| d.get("mode")).map(text);
    let replicas = deploy.and_then(|d| d.get("replicas"));
    let mut n = None;
    for (field, v) in [("deploy.replicas", replicas), ("scale", svc.get("scale"))] {
        let Some(v) = v else { continue };
        match s.integer(field, v) {
            None => {}
            Some(0) => s.refuse(
                field,
                "0: compose starts no container of this service; leave the service out (or give it a profile)",
            ),
            Some(k) if k < 0 => s.refuse(field, format!("{k}: a count of containers is not negative")),
            Some(k) => {
                let k = usize::try_from(k).unwrap_or(usize::MAX);
                match n {
                    Some(other) if other != k => s.refuse(
                        "scale",
                        format!("{k} where deploy.replicas is {other}: compose refuses two counts; give one"),
                    ),
                    _ => n = Some(k),
                }
            }
        }
    }
    let n = n.unwrap_or(1);
    match mode.as_deref() {
        None | Some("replicated") => n,
        Some("global") if n == 1 => 1,
        Some("global") => {
            s.refuse(
                "deploy.mode",
                format!(
                    "global runs one container a node, and replicas asks for {n}: give one of them"
                ),
            );
            1
        }
        Some(other) => {
            s.refuse(
                "deploy.mode",
                format!("{other:?}: replicated (N containers) or global (one on one node)"),
            );
            1
        }
    }
}

/// `c` as the `n` containers of its service; `extra` counts the
/// containers added so far in the project, against [`MAX_EXTRA`].
pub fn expand(
    s: &mut Service,
    svc: &Map<String, Value>,
    c: RawContainer,
    n: usize,
    extra: &mut usize,
) -> Vec<RawContainer> {
    if n <= 1 {
        return vec![c];
    }
    if extra.saturating_add(n - 1) > MAX_EXTRA {
        s.refuse(
            "deploy.replicas",
            format!("{n}: more than {MAX_EXTRA} containers added by replicas in one project"),
        );
        return vec![c];
    }
    *extra += n - 1;
    let mut fits = true;
    if svc.contains_key("container_name") {
        s.refuse(
            "container_name",
            format!("{n} replicas cannot share one container name (compose refuses it too): remove container_name"),
        );
        fits = false;
    }
    if let Field::Present(ports) = &c.ports {
        let fixed = ports
            .iter()
            .any(|p| matches!(p, Field::Present(p) if !p.host.is_absent()));
        if fixed {
            s.refuse(
                "ports",
                format!("{n} replicas cannot each publish the same host port (compose fails on the second): give the container port alone (\"80\") or one replica"),
            );
            fits = false;
        }
    }
    if let Field::Present(joins) = &c.networks {
        let fixed = joins
            .iter()
            .any(|j| matches!(j, Field::Present(j) if !j.ipv4_address.is_absent() || !j.ipv6_address.is_absent()));
        if fixed {
            s.refuse(
                "networks",
                format!(
                    "{n} replicas cannot share one ipv4_address or ipv6_address: remove it or give one replica"
                ),
            );
            fits = false;
        }
    }
    if !fits {
        return vec![c];
    }
    // Copied through the format it is written in (the raw types are
    // read and written, never cloned).
    let written = match serde_json::to_value(&c) {
        Ok(v) => v,
        Err(e) => {
            s.refuse("deploy.replicas", e.to_string());
            return vec![c];
        }
    };
    let (project, service) = (s.project.name.clone(), s.name.to_owned());
    let mut out = Vec::with_capacity(n);
    for i in 1..=n {
        match serde_json::from_value::<RawContainer>(written.clone()) {
            Ok(mut one) => {
                one.id = Field::Present(format!("{service}-{i}"));
                one.name = Field::Present(format!("{project}-{service}-{i}"));
                out.push(one);
            }
            Err(e) => {
                s.refuse("deploy.replicas", e.to_string());
                return vec![c];
            }
        }
    }
    out
}
