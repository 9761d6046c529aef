//! How a service meets the network: `network_mode`, or the networks it
//! joins (ordered as compose orders them: by `priority`, highest first,
//! then by name, the first one the network the container is created on),
//! each with the service's name as an alias; and the ports it publishes,
//! counted against [`MAX_PORTS`] for the whole project.

use serde_json::{Map, Value};

use super::context::Service;
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
            other => s.refuse(
                "network_mode",
                format!("{other:?}: not supported: mesh-host joins host, none, bridge or networks; put both services on one network"),
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
