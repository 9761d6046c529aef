//! How a service meets the network: `network_mode` (`service:X`, and
//! `container:NAME` naming a container of the project, become the
//! declaration's `container:` and the peer's container name), or the
//! networks it joins (ordered as compose orders them: by `priority`, highest first,
//! then by name, the first one the network the container is created on),
//! each with the service's name as an alias; and the ports it publishes,
//! counted against [`MAX_PORTS`] for the whole project.

use serde_json::{Map, Value};

use super::context::{Peers, Service};
use super::values::{list, some, strings, text};
use super::{cast, ports};
use crate::declaration::raw::{Field, RawContainer, RawNetworkJoin};

/// Published ports one project may declare, counting each port of a
/// range: 16,384 covers the widest ranges real stacks publish (a TURN
/// relay's 49152-65535); `"1-65535:1-65535"` is refused, not expanded.
pub const MAX_PORTS: usize = 16_384;

/// Read `svc`'s network and ports into `c`.
pub(super) fn read(s: &mut Service, svc: &Map<String, Value>, c: &mut RawContainer) {
    if svc.contains_key("networks") && svc.contains_key("network_mode") {
        s.refuse("network_mode", "network_mode and networks are exclusive");
    }
    if let Some(mode) = svc.get("network_mode").map(text) {
        match mode.as_str() {
            "host" | "none" | "bridge" => c.network = some(mode),
            other if other.starts_with("service:") || other.starts_with("container:") => {
                if let Some(peer) = peer(s, svc, other) {
                    c.network = some(format!("container:{peer}"));
                }
            }
            other => s.refuse(
                "network_mode",
                format!("{other:?}: not supported: mesh-host joins host, none, bridge, service:NAME, container:NAME or networks"),
            ),
        }
    } else {
        c.networks = list(networks(s, svc));
    }
    if let Some(v) = svc.get("ports") {
        let mut published = Vec::new();
        let entries = match v {
            Value::Array(items) => items.clone(),
            other => vec![other.clone()],
        };
        for entry in entries {
            let read = match &entry {
                Value::Object(m) => long_port(s, m),
                other => ports::short(&text(other)),
            };
            match read {
                Ok(ps) => {
                    if *s.ports <= MAX_PORTS {
                        *s.ports += ps.len();
                        if *s.ports > MAX_PORTS {
                            s.refuse(
                                "ports",
                                format!("more than {MAX_PORTS} ports published in this project (a range counts each of its ports): publish narrower ranges"),
                            );
                            continue;
                        }
                        published.extend(ps.iter().map(ports::Published::to_raw));
                    }
                }
                Err(e) => s.refuse("ports", e),
            }
        }
        if *s.ports <= MAX_PORTS {
            c.ports = list(published);
        }
    }
}

/// The service whose network `svc` shares (`network_mode: service:X`,
/// or `container:NAME` naming a container of the project), as written:
/// it may be no service of the project.
pub(super) fn peer_service(svc: &Map<String, Value>, peers: &Peers) -> Option<String> {
    let mode = svc.get("network_mode").map(text)?;
    if let Some(service) = mode.strip_prefix("service:") {
        return Some(service.to_owned());
    }
    peers
        .by_container
        .get(mode.strip_prefix("container:")?)
        .cloned()
}

/// The container name of the peer `mode` names, as compose names it:
/// the service's one container (`PROJECT-X-1` or its `container_name`),
/// or a container of the project; anything else refused, naming the fix.
fn peer(s: &mut Service, svc: &Map<String, Value>, mode: &str) -> Option<String> {
    let Some(service) = peer_service(svc, s.peers) else {
        s.refuse(
            "network_mode",
            format!("{mode:?}: no container of this project has that name: mesh-host shares the network of a container it declares; name one of this project's services (service:NAME), or import the project that runs it together with this one"),
        );
        return None;
    };
    if service == s.name {
        s.refuse(
            "network_mode",
            format!("{mode:?} is this service itself: name the service whose network it shares"),
        );
        return None;
    }
    let Some(names) = s.peers.read.get(&service) else {
        // Not read before this one: not a service (a cycle is refused
        // where the services are ordered).
        if !s.peers.services.contains(&service) {
            s.refuse(
                "network_mode",
                format!("{mode:?}: {service:?} is not a service of this project (or its profile is not enabled)"),
            );
        }
        return None;
    };
    match names.as_slice() {
        [one] => Some(one.clone()),
        [] => None,
        many => {
            s.refuse(
                "network_mode",
                format!("{mode:?}: {service} runs {} replicas, so which one's network this shares is ambiguous: give {service} one replica", many.len()),
            );
            None
        }
    }
}

/// A long-form port, its `target` cast as compose casts it.
fn long_port(s: &mut Service, m: &Map<String, Value>) -> Result<Vec<ports::Published>, String> {
    let mut m = m.clone();
    if let Some(t) = m.get("target") {
        let at = s.at("ports.target");
        let n = cast::integer(s.p, &at, t).ok_or_else(|| "target: not a port".to_owned())?;
        m.insert("target".into(), Value::from(n));
    }
    ports::long(&m)
}

/// The networks `svc` joins, in compose's order.
fn networks(s: &mut Service, svc: &Map<String, Value>) -> Vec<RawNetworkJoin> {
    let joined: Vec<(String, Value)> = match svc.get("networks") {
        None | Some(Value::Null) => vec![("default".into(), Value::Null)],
        Some(Value::Array(items)) => items.iter().map(|i| (text(i), Value::Null)).collect(),
        Some(Value::Object(m)) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Some(_) => {
            s.refuse("networks", "expected a list or a mapping");
            Vec::new()
        }
    };
    let mut out: Vec<(i64, String, RawNetworkJoin)> = Vec::new();
    for (key, settings) in joined {
        let name = match s.top.networks.get(&key) {
            Some(n) => n.name.clone(),
            None if key == "default" => format!("{}_default", s.project.name),
            None => {
                s.refuse(
                    "networks",
                    format!("{key:?} is not declared in the top-level networks"),
                );
                continue;
            }
        };
        // Compose gives each service its name as an alias on every
        // network it joins.
        let mut aliases = vec![s.name.to_string()];
        let mut entry = RawNetworkJoin {
            name: some(name),
            ..RawNetworkJoin::default()
        };
        let mut priority = 0;
        if let Value::Object(settings) = settings {
            for a in settings.get("aliases").map(strings).unwrap_or_default() {
                if !aliases.contains(&a) {
                    aliases.push(a);
                }
            }
            if let Some(ip) = settings.get("ipv4_address") {
                entry.ipv4_address = some(text(ip));
            }
            if let Some(ip) = settings.get("ipv6_address") {
                entry.ipv6_address = some(text(ip));
            }
            if let Some(p) = settings.get("priority") {
                priority = s
                    .integer(&format!("networks.{key}.priority"), p)
                    .unwrap_or(0);
            }
        }
        entry.aliases = Field::Present(aliases.into_iter().map(Field::Present).collect());
        out.push((priority, key, entry));
    }
    // Highest priority first, then by name: compose's order, whose first
    // network is the one the container is created on.
    out.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    out.into_iter().map(|(_, _, e)| e).collect()
}
