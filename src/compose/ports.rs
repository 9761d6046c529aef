//! A service's `ports`, in every form compose takes: the short syntax
//! (`"3000"`, `"8080:80"`, `"9090-9091:8080-8081"`,
//! `"127.0.0.1:5000-5010:5000-5010"`, `"6060:6060/udp"`,
//! `"[::1]:6001:6001"`) and the long one (`target`, `published`,
//! `host_ip`, `protocol`), each range one entry per port.

use std::net::IpAddr;

use serde_json::{json, Value};

use crate::declaration::raw::{Field, RawPort};

/// One published port as the declaration writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    pub host: Option<u16>,
    pub container: u16,
    pub protocol: String,
    pub address: Option<IpAddr>,
}

impl Published {
    /// As the declaration writes it.
    pub fn to_raw(&self) -> RawPort {
        RawPort {
            host: self
                .host
                .map_or(Field::Absent, |h| Field::Present(json!(h))),
            container: Field::Present(json!(self.container)),
            protocol: Field::Present(self.protocol.clone()),
            address: self
                .address
                .map_or(Field::Absent, |a| Field::Present(a.to_string())),
            ..RawPort::default()
        }
    }
}

fn port(text: &str, whole: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(format!("{whole:?}: {text:?} is not a port (1 to 65535)")),
    }
}

/// `N` or `N-M`, as the ports it spans.
fn range(text: &str, whole: &str) -> Result<Vec<u16>, String> {
    match text.split_once('-') {
        None => Ok(vec![port(text, whole)?]),
        Some((a, b)) => {
            let (a, b) = (port(a, whole)?, port(b, whole)?);
            if a > b {
                return Err(format!("{whole:?}: the range {text} runs backwards"));
            }
            Ok((a..=b).collect())
        }
    }
}

fn protocol(text: &str, whole: &str) -> Result<String, String> {
    match text {
        "tcp" | "udp" => Ok(text.to_owned()),
        other => Err(format!(
            "{whole:?}: protocol {other:?}: mesh-host publishes tcp and udp"
        )),
    }
}

fn address(text: &str, whole: &str) -> Result<Option<IpAddr>, String> {
    let bare = text.trim_start_matches('[').trim_end_matches(']');
    if bare.is_empty() {
        return Ok(None);
    }
    bare.parse::<IpAddr>()
        .map(Some)
        .map_err(|_| format!("{whole:?}: {text:?} is not an IP address"))
}

/// Host ports paired with container ports: equal ranges pair one to one;
/// no host ports leave the runtime to pick.
fn pair(
    hosts: Option<Vec<u16>>,
    containers: Vec<u16>,
    protocol: String,
    address: Option<IpAddr>,
    whole: &str,
) -> Result<Vec<Published>, String> {
    let hosts: Vec<Option<u16>> = match hosts {
        None => vec![None; containers.len()],
        Some(h) if h.len() == containers.len() => h.into_iter().map(Some).collect(),
        Some(_) => {
            return Err(format!(
                "{whole:?}: a host range must be as long as the container range (mesh-host \
                 does not let the runtime pick a port inside a range): write one entry per port"
            ))
        }
    };
    Ok(hosts
        .into_iter()
        .zip(containers)
        .map(|(host, container)| Published {
            host,
            container,
            protocol: protocol.clone(),
            address,
        })
        .collect())
}

/// One entry of the short syntax.
pub fn short(text: &str) -> Result<Vec<Published>, String> {
    let (spec, proto) = match text.rsplit_once('/') {
        Some((spec, proto)) => (spec, protocol(proto, text)?),
        None => (text, "tcp".to_owned()),
    };
    // An IPv6 address in brackets: everything up to its closing bracket.
    let (ip, rest) = if let Some(inner) = spec.strip_prefix('[') {
        let (ip, rest) = inner
            .split_once(']')
            .ok_or_else(|| format!("{text:?}: an IPv6 address without its closing ']'"))?;
        let rest = rest
            .strip_prefix(':')
            .ok_or_else(|| format!("{text:?}: no port after the address"))?;
        (Some(ip), rest)
    } else {
        (None, spec)
    };
    let parts: Vec<&str> = rest.split(':').collect();
    let (ip, host, container) = match (ip, parts.as_slice()) {
        (None, [c]) => (None, None, *c),
        (None, [h, c]) => (None, Some(*h), *c),
        (None, [a, h, c]) => (Some(*a), Some(*h), *c),
        (Some(a), [h, c]) => (Some(a), Some(*h), *c),
        _ => {
            return Err(format!(
                "{text:?} is not a port mapping ([IP:][HOST:]CONTAINER[/PROTOCOL])"
            ))
        }
    };
    let address = match ip {
        Some(a) => address(a, text)?,
        None => None,
    };
    let hosts = match host {
        Some("") | None => None,
        Some(h) => Some(range(h, text)?),
    };
    pair(hosts, range(container, text)?, proto, address, text)
}

/// One entry of the long syntax.
pub fn long(entry: &serde_json::Map<String, Value>) -> Result<Vec<Published>, String> {
    let whole = Value::Object(entry.clone()).to_string();
    for key in entry.keys() {
        if ![
            "target",
            "published",
            "host_ip",
            "protocol",
            "mode",
            "name",
            "app_protocol",
        ]
        .contains(&key.as_str())
        {
            return Err(format!("{whole}: {key}: not a field of a port"));
        }
    }
    if let Some(mode) = entry.get("mode").and_then(Value::as_str) {
        if mode != "host" && mode != "ingress" {
            return Err(format!("{whole}: mode {mode:?}: host or ingress"));
        }
    }
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let target = entry
        .get("target")
        .map(text)
        .ok_or_else(|| format!("{whole}: target: missing"))?;
    let proto = match entry.get("protocol") {
        Some(p) => protocol(&text(p), &whole)?,
        None => "tcp".into(),
    };
    let address = match entry.get("host_ip") {
        Some(a) => address(&text(a), &whole)?,
        None => None,
    };
    let hosts = match entry.get("published").map(text) {
        None => None,
        Some(p) if p.is_empty() => None,
        Some(p) => Some(range(&p, &whole)?),
    };
    pair(hosts, range(&target, &whole)?, proto, address, &whole)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn each(text: &str) -> Vec<(Option<u16>, u16, String, Option<String>)> {
        short(text)
            .unwrap()
            .into_iter()
            .map(|p| {
                (
                    p.host,
                    p.container,
                    p.protocol,
                    p.address.map(|a| a.to_string()),
                )
            })
            .collect()
    }

    #[test]
    fn every_example_of_compose_s_reference_reads() {
        let tcp = || "tcp".to_string();
        assert_eq!(each("3000"), vec![(None, 3000, tcp(), None)]);
        assert_eq!(
            each("3000-3002"),
            vec![
                (None, 3000, tcp(), None),
                (None, 3001, tcp(), None),
                (None, 3002, tcp(), None)
            ]
        );
        assert_eq!(each("8000:8000"), vec![(Some(8000), 8000, tcp(), None)]);
        assert_eq!(
            each("9090-9091:8080-8081"),
            vec![
                (Some(9090), 8080, tcp(), None),
                (Some(9091), 8081, tcp(), None)
            ]
        );
        assert_eq!(each("49100:22"), vec![(Some(49100), 22, tcp(), None)]);
        assert_eq!(
            each("127.0.0.1:8001:8001"),
            vec![(Some(8001), 8001, tcp(), Some("127.0.0.1".into()))]
        );
        let range = each("127.0.0.1:5000-5010:5000-5010");
        assert_eq!(range.len(), 11);
        assert_eq!(
            range[10],
            (Some(5010), 5010, tcp(), Some("127.0.0.1".into()))
        );
        assert_eq!(
            each("6060:6060/udp"),
            vec![(Some(6060), 6060, "udp".into(), None)]
        );
        assert_eq!(
            each("[::1]:6001:6001"),
            vec![(Some(6001), 6001, tcp(), Some("::1".into()))]
        );
        assert_eq!(
            each("127.0.0.1::80"),
            vec![(None, 80, tcp(), Some("127.0.0.1".into()))]
        );
    }

    #[test]
    fn what_cannot_be_published_is_named() {
        for (text, words) in [
            ("8000-9000:80", "as long as the container range"),
            ("0:80", "not a port"),
            ("70000", "not a port"),
            ("80/sctp", "tcp and udp"),
            ("a:b:c:d", "not a port mapping"),
            ("[::1:80", "closing ']'"),
            ("300.1.1.1:80:80", "not an IP address"),
            ("90-80", "runs backwards"),
        ] {
            let e = short(text).unwrap_err();
            assert!(e.contains(words), "{text}: {e}");
        }
    }

    #[test]
    fn the_long_syntax_reads() {
        let entry = |v: Value| long(v.as_object().unwrap());
        let p = entry(
            json!({"target": 80, "published": "8080", "host_ip": "127.0.0.1",
                             "protocol": "udp", "mode": "host"}),
        )
        .unwrap();
        assert_eq!(
            p,
            vec![Published {
                host: Some(8080),
                container: 80,
                protocol: "udp".into(),
                address: Some("127.0.0.1".parse().unwrap()),
            }]
        );
        assert_eq!(entry(json!({"target": 80})).unwrap()[0].host, None);
        assert_eq!(
            entry(json!({"target": "80-81", "published": "8080-8081"}))
                .unwrap()
                .len(),
            2
        );
        assert!(entry(json!({"published": 80}))
            .unwrap_err()
            .contains("target: missing"));
        assert!(entry(json!({"target": 80, "x": 1}))
            .unwrap_err()
            .contains("not a field"));
        assert_eq!(
            serde_json::to_value(
                Published {
                    host: None,
                    container: 80,
                    protocol: "tcp".into(),
                    address: None
                }
                .to_raw()
            )
            .unwrap(),
            json!({"container": 80, "protocol": "tcp"})
        );
    }
}
