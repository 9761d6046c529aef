//! Networks decided, before every other resource but volumes, so that
//! any container may join them (CONTRACT "Compose").
//!
//! | found | decided |
//! |---|---|
//! | missing | made: `created` (and what an interrupted remake detached attached again) |
//! | as declared | `unchanged` (or `updated`: attached again after an interrupted remake) |
//! | other settings, mesh-host's | made again, its containers attached again: `recreated` |
//! | other settings, not mesh-host's, or used by containers the declaration does not own | `failed`, never changed |
//! | no longer declared | `removed`, or `kept` while a container uses it ([`super::removals`]) |
//!
//! A remake records the containers to attach again before it detaches the
//! first ([`REMAKES`](super::super::records::REMAKES)): an apply killed
//! in between leaves the next one the list, which it decides from.

use std::collections::BTreeMap;

use super::super::plan::{Decision, Kind, NetworkWork, Slot, Work};
use super::super::report::{Action, ReportLine};
use super::context::Context;
use crate::declaration::{Container, NetworkResource, Resource};
use crate::runtime::{NetworkAttach, NetworkInfo, NetworkSpec, LABEL_MANAGED, MANAGED_VALUE};

/// The settings of `live` that differ from `declared`, by name.
pub(crate) fn network_changes(declared: &NetworkResource, live: &NetworkInfo) -> Vec<&'static str> {
    let mut changed = Vec::new();
    if declared.driver != live.driver {
        changed.push("driver");
    }
    if let Some(subnet) = declared.subnet {
        if live.subnet.as_deref() != Some(subnet.to_string().as_str()) {
            changed.push("subnet");
        }
    }
    if let Some(gateway) = declared.gateway {
        if live.gateway.as_deref() != Some(gateway.to_string().as_str()) {
            changed.push("gateway");
        }
    }
    if declared.internal != live.internal {
        changed.push("internal");
    }
    if declared.enable_ipv6 != live.enable_ipv6 {
        changed.push("enable-ipv6");
    }
    if let Some(subnet) = declared.ipv6_subnet {
        if live.ipv6_subnet.as_deref() != Some(subnet.to_string().as_str()) {
            changed.push("ipv6-subnet");
        }
    }
    if let Some(gateway) = declared.ipv6_gateway {
        if live.ipv6_gateway.as_deref() != Some(gateway.to_string().as_str()) {
            changed.push("ipv6-gateway");
        }
    }
    if declared.driver_opts != live.driver_opts {
        changed.push("driver-opts");
    }
    let mut labels = declared.labels.clone();
    labels.insert(LABEL_MANAGED.into(), MANAGED_VALUE.into());
    if labels != live.labels {
        changed.push("labels");
    }
    changed
}

fn network_spec(n: &NetworkResource) -> NetworkSpec {
    NetworkSpec {
        name: n.name.to_string(),
        driver: n.driver.clone(),
        subnet: n.subnet.map(|s| s.to_string()),
        gateway: n.gateway.map(|g| g.to_string()),
        internal: n.internal,
        labels: n.labels.clone(),
        enable_ipv6: n.enable_ipv6,
        ipv6_subnet: n.ipv6_subnet.map(|s| s.to_string()),
        ipv6_gateway: n.ipv6_gateway.map(|g| g.to_string()),
        driver_opts: n.driver_opts.clone(),
    }
}

/// How `c` joins `network` as declared (`None`: it does not).
pub fn attach_of(c: &Container, network: &str) -> Option<NetworkAttach> {
    if let Some(join) = c.networks.iter().find(|j| j.name.as_str() == network) {
        return Some(NetworkAttach {
            network: network.to_owned(),
            aliases: join.aliases.clone(),
            ipv4_address: join.ipv4_address,
            ipv6_address: join.ipv6_address,
        });
    }
    match &c.network {
        Some(crate::declaration::Network::Named(n)) if n.as_str() == network => {
            Some(NetworkAttach {
                network: network.to_owned(),
                ..Default::default()
            })
        }
        _ => None,
    }
}

/// How a container is attached to `network` again: as `declared` joins
/// it, else (a container the declaration no longer joins to it) plainly.
fn attach_again(declared: Option<&Container>, network: &str) -> NetworkAttach {
    declared
        .and_then(|d| attach_of(d, network))
        .unwrap_or_else(|| NetworkAttach {
            network: network.to_owned(),
            ..Default::default()
        })
}

pub(super) async fn network(
    d: &mut Context<'_>,
    slot: Slot,
    res: &Resource,
    network: &NetworkResource,
) -> Decision {
    let id = res.id.as_str();
    let name = network.name.to_string();
    let what = format!("network {name}");
    let decided = |action, reason, work| {
        Decision::new(
            slot.clone(),
            Kind::Network,
            ReportLine::new(id, action, reason),
            work,
        )
    };
    let declared: BTreeMap<&str, &Container> = d
        .decl
        .containers()
        .map(|(_, c)| (c.name.as_str(), c))
        .collect();
    // What an interrupted remake left to attach again.
    let pending = match &d.facts.remakes {
        Ok(remakes) => remakes.get(&name).cloned(),
        Err(e) => return unusable(d, slot, id, what, e.clone()),
    };
    let again: Vec<(String, NetworkAttach)> = pending
        .iter()
        .flatten()
        .map(|c| {
            (
                c.clone(),
                attach_again(declared.get(c.as_str()).copied(), &name),
            )
        })
        .collect();
    let again_said = pending.as_ref().map(|p| {
        format!(
            "attached again after an interrupted remake: {}",
            p.join(", ")
        )
    });
    let live = match d.view.network(&name).await {
        Ok(live) => live,
        Err(e) => return unusable(d, slot, id, what, crate::runtime::explain(&e)),
    };
    let Some(live) = live else {
        let reason = match &again_said {
            Some(again) => format!("{what}; {again}"),
            None => what.clone(),
        };
        let work = Work::Network(NetworkWork::Make {
            spec: network_spec(network),
            again,
        });
        return decided(Action::Created, Some(reason), work);
    };
    let changes = network_changes(network, &live);
    if changes.is_empty() {
        return match again_said {
            Some(said) => decided(
                Action::Updated,
                Some(said),
                Work::Network(NetworkWork::AttachAgain { again }),
            ),
            None => decided(Action::Unchanged, None, Work::Nothing),
        };
    }
    let changed = format!("{} changed", changes.join(", "));
    let ours = live.labels.get(LABEL_MANAGED).map(String::as_str) == Some(MANAGED_VALUE);
    if !ours {
        let reason = format!(
            "network {name} exists with other settings ({changed}) and was not made by \
             mesh-host: it is never changed; remove it, or declare it as it is"
        );
        return unusable(d, slot, id, what, reason);
    }
    let foreign: Vec<&str> = live
        .containers
        .iter()
        .map(String::as_str)
        .filter(|c| !declared.contains_key(c))
        .collect();
    if !foreign.is_empty() {
        let reason = format!(
            "{changed}, but {} the declaration does not own {} attached: it is made again \
             only once they leave it",
            foreign.join(", "),
            if foreign.len() == 1 { "is" } else { "are" }
        );
        return unusable(d, slot, id, what, reason);
    }
    // Docker lists the running containers on a network; a stopped one
    // keeps it in its own settings all the same: each declared container
    // that joins it is detached and attached again too.
    let mut attached = live.containers.clone();
    if let Ok(listing) = &d.facts.listing {
        for (cname, c) in &declared {
            if attach_of(c, &name).is_some()
                && listing.contains_key(*cname)
                && !attached.iter().any(|a| a == cname)
            {
                attached.push((*cname).to_owned());
            }
        }
    }
    attached.sort();
    let again_words = if attached.is_empty() {
        String::new()
    } else {
        format!("; attached again: {}", attached.join(", "))
    };
    let attached = attached
        .into_iter()
        .map(|c| {
            let attach = attach_again(declared.get(c.as_str()).copied(), &name);
            (c, attach)
        })
        .collect();
    let work = Work::Network(NetworkWork::Remake {
        spec: network_spec(network),
        attached,
    });
    decided(
        Action::Recreated,
        Some(format!("{changed}{again_words}")),
        work,
    )
}

/// A network the plan cannot make: its line fails, and so does every
/// container that joins it.
fn unusable(d: &mut Context<'_>, slot: Slot, id: &str, what: String, reason: String) -> Decision {
    d.unusable.insert(what, reason.clone());
    let line = ReportLine::new(id, Action::Failed, Some(reason));
    Decision::new(slot, Kind::Network, line, Work::Nothing)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn declared(subnet: Option<&str>) -> NetworkResource {
        NetworkResource {
            name: "back".try_into().unwrap(),
            driver: "bridge".into(),
            subnet: subnet.map(|s| s.parse().unwrap()),
            gateway: None,
            internal: false,
            labels: BTreeMap::new(),
            enable_ipv6: false,
            ipv6_subnet: None,
            ipv6_gateway: None,
            driver_opts: BTreeMap::new(),
        }
    }

    fn live(subnet: &str) -> NetworkInfo {
        NetworkInfo {
            name: "back".into(),
            driver: "bridge".into(),
            subnet: Some(subnet.into()),
            gateway: Some("10.1.0.1".into()),
            internal: false,
            labels: BTreeMap::from([(LABEL_MANAGED.into(), MANAGED_VALUE.into())]),
            containers: Vec::new(),
            ..Default::default()
        }
    }

    #[test]
    fn only_declared_settings_are_compared_and_each_change_is_named() {
        assert!(network_changes(&declared(None), &live("10.1.0.0/24")).is_empty());
        assert!(network_changes(&declared(Some("10.1.0.0/24")), &live("10.1.0.0/24")).is_empty());
        assert_eq!(
            network_changes(&declared(Some("10.2.0.0/24")), &live("10.1.0.0/24")),
            vec!["subnet"]
        );
        let mut labelled = declared(None);
        labelled.labels.insert("tier".into(), "back".into());
        labelled.internal = true;
        assert_eq!(
            network_changes(&labelled, &live("10.1.0.0/24")),
            vec!["internal", "labels"]
        );
    }
}
