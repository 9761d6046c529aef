//! Validation of networks and volumes (CONTRACT "Compose"): the `network`
//! and `volume` resources, a container's `networks`, and what spans them
//! (names declared once, a fixed address inside its network's subnet).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::entry::{Entry, Kind};
use super::fields::{
    check, no_nul, read_string_map, refuse_unknown, require, take, take_list, Found, Sink,
};
use crate::declaration::hints::Fields;
use crate::declaration::networking::{
    NetworkJoin, NetworkResource, Subnet, VolumeResource, RUNTIME_NETWORKS,
};
use crate::declaration::raw::{Field, List, RawNetwork, RawNetworkJoin, RawVolume};
use crate::declaration::types::{NetworkName, VolumeName};

/// A driver's name: what Docker takes (a plugin's may hold `/` and `:`).
fn driver(s: &mut Sink, raw: Field<String>, default: &str) -> Option<String> {
    let Some(name) = take(s, "driver", raw) else {
        return Some(default.to_owned());
    };
    let ok = !name.is_empty()
        && name.len() <= 255
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ':'));
    if !ok {
        s.at(
            "driver",
            format!("{name:?} is not a driver name: letters, digits, '-', '_', '.', '/' and ':'"),
        );
        return None;
    }
    Some(name)
}

/// `type: "network"`.
pub(super) fn read_network(
    s: &mut Sink,
    r: RawNetwork,
    entry: &mut Entry,
) -> Option<NetworkResource> {
    refuse_unknown(s, "", r.unknown, Fields::Resource("network"));
    let name = require(s, "name", r.name).and_then(|n| {
        if RUNTIME_NETWORKS.contains(&n.as_str()) {
            s.at(
                "name",
                format!("{n:?} is the runtime's own network: declare a network of another name"),
            );
            return None;
        }
        check(s, "name", NetworkName::try_from(n))
    });
    entry.kind = Kind::Network(name.clone());
    let driver = driver(s, r.driver, "bridge");
    let has_subnet = !r.subnet.is_absent();
    let subnet = take(s, "subnet", r.subnet).and_then(|t| check(s, "subnet", t.parse::<Subnet>()));
    entry.spans.subnet = (subnet.is_some() || !has_subnet).then_some(subnet);
    let gateway = take(s, "gateway", r.gateway).and_then(|t| match t.parse::<IpAddr>() {
        Ok(ip) => Some(ip),
        Err(_) => {
            s.at("gateway", format!("{t:?} is not an IP address"));
            None
        }
    });
    if let Some(gateway) = gateway {
        match subnet {
            Some(subnet) if !subnet.contains(gateway) => {
                s.at("gateway", format!("{gateway} is not in subnet {subnet}"))
            }
            None => s.at(
                "gateway",
                "gateway needs a subnet: the runtime picks both, or neither",
            ),
            _ => {}
        }
    }
    if let Some(v6) = subnet.filter(|s| s.address.is_ipv6()) {
        s.at(
            "subnet",
            format!("{v6} is an IPv6 range: give it as ipv6-subnet, with enable-ipv6: true"),
        );
    }
    let internal = take(s, "internal", r.internal).unwrap_or(false);
    let labels = read_string_map(s, "labels", r.labels, true);
    let driver_opts = read_string_map(s, "driver-opts", r.driver_opts, false);
    let ipv6 = read_ipv6(s, &r.enable_ipv6, r.ipv6_subnet, r.ipv6_gateway);
    let enable_ipv6 = take(s, "enable-ipv6", r.enable_ipv6).unwrap_or(false);
    entry.spans.ipv6 = ipv6.map(|(subnet, _)| (enable_ipv6, subnet));
    let (ipv6_subnet, ipv6_gateway) = ipv6?;
    Some(NetworkResource {
        name: name?,
        driver: driver?,
        subnet: subnet.filter(|s| s.address.is_ipv4()),
        gateway,
        internal,
        labels,
        enable_ipv6,
        ipv6_subnet,
        ipv6_gateway,
        driver_opts,
    })
}

/// A network's `ipv6-subnet` and `ipv6-gateway`, each checked against
/// `enable-ipv6` (Docker 20.10 has no IPv6 pool of its own: it refuses
/// IPv6 without a range, and keeps a range without IPv6 unused). `None`
/// when one did not read.
fn read_ipv6(
    s: &mut Sink,
    enable: &crate::declaration::raw::Field<bool>,
    subnet: crate::declaration::raw::Field<String>,
    gateway: crate::declaration::raw::Field<String>,
) -> Option<(Option<Subnet>, Option<Ipv6Addr>)> {
    let enabled = matches!(enable, crate::declaration::raw::Field::Present(true));
    let has_subnet = !subnet.is_absent();
    let has_gateway = !gateway.is_absent();
    let subnet = take(s, "ipv6-subnet", subnet)
        .and_then(|t| check(s, "ipv6-subnet", t.parse::<Subnet>()))
        .and_then(|net| {
            if net.address.is_ipv6() {
                Some(net)
            } else {
                s.at(
                    "ipv6-subnet",
                    format!("{net} is an IPv4 range: give it as subnet"),
                );
                None
            }
        });
    let gateway = take(s, "ipv6-gateway", gateway).and_then(|t| match t.parse::<Ipv6Addr>() {
        Ok(ip) => Some(ip),
        Err(_) => {
            s.at("ipv6-gateway", format!("{t:?} is not an IPv6 address"));
            None
        }
    });
    if has_subnet && !enabled {
        s.at(
            "ipv6-subnet",
            "needs enable-ipv6: true (without it the runtime gives no container an IPv6 address)",
        );
    }
    if enabled && !has_subnet {
        s.at(
            "enable-ipv6",
            "needs ipv6-subnet: Docker 20.10 has no IPv6 range of its own to pick from",
        );
    }
    match (subnet, gateway) {
        (Some(net), Some(gw)) if !net.contains(IpAddr::V6(gw)) => {
            s.at("ipv6-gateway", format!("{gw} is not in subnet {net}"))
        }
        (None, Some(_)) if !has_subnet => s.at(
            "ipv6-gateway",
            "ipv6-gateway needs an ipv6-subnet: the runtime picks both, or neither",
        ),
        _ => {}
    }
    let read = (subnet.is_some() || !has_subnet) && (gateway.is_some() || !has_gateway);
    read.then_some((subnet, gateway))
}

/// `type: "volume"`.
pub(super) fn read_volume(s: &mut Sink, r: RawVolume, entry: &mut Entry) -> Option<VolumeResource> {
    refuse_unknown(s, "", r.unknown, Fields::Resource("volume"));
    let name = require(s, "name", r.name).and_then(|n| check(s, "name", VolumeName::try_from(n)));
    entry.kind = Kind::Volume(name.clone());
    let driver = driver(s, r.driver, "local");
    let driver_opts = read_string_map(s, "driver-opts", r.driver_opts, false);
    let labels = read_string_map(s, "labels", r.labels, true);
    Some(VolumeResource {
        name: name?,
        driver: driver?,
        driver_opts,
        labels,
    })
}

/// A container's `networks`: each named once, its aliases host names.
pub(super) fn read_networks(s: &mut Sink, raw: List<RawNetworkJoin>) -> Vec<(String, NetworkJoin)> {
    let mut joins: Vec<(String, NetworkJoin)> = Vec::new();
    let mut seen: HashMap<String, String> = HashMap::new();
    for (path, raw) in take_list(s, "networks", raw) {
        refuse_unknown(s, &path, raw.unknown, Fields::NetworkJoin);
        let name_field = format!("{path}.name");
        let name = require(s, &name_field, raw.name).and_then(|n| {
            if n == "host" || n == "none" {
                s.at(
                    &name_field,
                    format!("{n:?} is a network mode: give it as \"network\", alone"),
                );
                return None;
            }
            check(s, &name_field, NetworkName::try_from(n))
        });
        let mut aliases = Vec::new();
        for (field, alias) in take_list(s, &format!("{path}.aliases"), raw.aliases) {
            // Docker's embedded DNS answers names with '_' too (a compose
            // service `my_app` is an alias of its own name), so an alias
            // may hold one where a host name may not.
            let as_host_name = alias.replace('_', "-");
            if super::options::hostname_ok(&as_host_name) && no_nul(s, &field, &alias, "an alias") {
                aliases.push(alias);
            } else {
                s.at(
                    &field,
                    format!("{alias:?} is not a network alias: letters, digits, '-', '_' and '.'"),
                );
            }
        }
        let address_field = format!("{path}.ipv4-address");
        let ipv4_address =
            take(s, &address_field, raw.ipv4_address).and_then(|t| match t.parse::<Ipv4Addr>() {
                Ok(ip) => Some(ip),
                Err(_) => {
                    s.at(&address_field, format!("{t:?} is not an IPv4 address"));
                    None
                }
            });
        let v6_field = format!("{path}.ipv6-address");
        let ipv6_address =
            take(s, &v6_field, raw.ipv6_address).and_then(|t| match t.parse::<Ipv6Addr>() {
                Ok(ip) => Some(ip),
                Err(_) => {
                    s.at(&v6_field, format!("{t:?} is not an IPv6 address"));
                    None
                }
            });
        let Some(name) = name else { continue };
        if let Some(first) = seen.get(name.as_str()) {
            s.at(
                &name_field,
                format!("{:?} is already joined at {first}", name.as_str()),
            );
            continue;
        }
        seen.insert(name.to_string(), name_field);
        joins.push((
            path,
            NetworkJoin {
                name,
                aliases,
                ipv4_address,
                ipv6_address,
            },
        ));
    }
    joins
}

/// Pass two: each network and volume declared once by name; a container's
/// fixed address inside its declared network's subnet (the runtime takes
/// a fixed address only on a network with a subnet of its user's).
pub(super) fn cross_check(found: &mut Found, entries: &[Entry]) {
    // Each network's first declaration, with its subnet when that read.
    let mut networks: HashMap<&str, (&Entry, Option<Option<Subnet>>)> = HashMap::new();
    let mut ipv6: HashMap<&str, (bool, Option<Subnet>)> = HashMap::new();
    let mut volumes: HashMap<&str, &Entry> = HashMap::new();
    for entry in entries {
        match &entry.kind {
            Kind::Network(Some(name)) => {
                if let Some((first, _)) = networks.get(name.as_str()) {
                    entry.sink(found).at(
                        "name",
                        format!(
                            "{:?} is already the name of network {}",
                            name.as_str(),
                            first.label
                        ),
                    );
                    continue;
                }
                networks.insert(name.as_str(), (entry, entry.spans.subnet));
                if let Some(v6) = entry.spans.ipv6 {
                    ipv6.insert(name.as_str(), v6);
                }
            }
            Kind::Volume(Some(name)) => {
                if let Some(first) = volumes.get(name.as_str()) {
                    entry.sink(found).at(
                        "name",
                        format!(
                            "{:?} is already the name of volume {}",
                            name.as_str(),
                            first.label
                        ),
                    );
                    continue;
                }
                volumes.insert(name.as_str(), entry);
            }
            _ => {}
        }
    }
    for entry in entries {
        for (path, join) in &entry.spans.joins {
            if let (Some(address), Some(v6)) = (join.ipv6_address, ipv6.get(join.name.as_str())) {
                let field = format!("{path}.ipv6-address");
                match v6 {
                    (false, _) => entry.sink(found).at(
                        field,
                        format!(
                            "network {} is declared without IPv6: give it enable-ipv6: true and an ipv6-subnet",
                            join.name
                        ),
                    ),
                    (true, Some(subnet)) if !subnet.contains(IpAddr::V6(address)) => {
                        entry.sink(found).at(
                            field,
                            format!(
                                "{address} is not in ipv6-subnet {subnet} of network {}",
                                join.name
                            ),
                        )
                    }
                    _ => {}
                }
            }
            let Some(address) = join.ipv4_address else {
                continue;
            };
            // A network not declared here, or whose subnet did not read
            // (said at the network), says nothing of the address.
            let Some((_, Some(subnet))) = networks.get(join.name.as_str()) else {
                continue;
            };
            let field = format!("{path}.ipv4-address");
            match subnet {
                None => entry.sink(found).at(
                    field,
                    format!(
                        "network {} is declared without a subnet: a fixed address needs one",
                        join.name
                    ),
                ),
                Some(subnet) if !subnet.contains(IpAddr::V4(address)) => entry.sink(found).at(
                    field,
                    format!(
                        "{address} is not in subnet {subnet} of network {}",
                        join.name
                    ),
                ),
                Some(_) => {}
            }
        }
    }
}
