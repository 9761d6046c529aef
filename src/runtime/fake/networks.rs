//! The fake's networks: made, inspected, removed (only when no container
//! is attached), and containers attached or detached. A container's
//! attachments are the networks its spec joins, so a rename or a removal
//! carries them as Docker's do.

use std::collections::BTreeMap;

use super::super::{
    NetworkAttach, NetworkInfo, NetworkSpec, RuntimeError, LABEL_MANAGED, MANAGED_VALUE,
};
use super::container::{not_found, Container, Status};

/// Every network, by name (its containers read from theirs).
#[derive(Debug, Default)]
pub(super) struct Networks {
    all: BTreeMap<String, NetworkInfo>,
}

/// The containers with an endpoint on `network` now: the running ones
/// whose settings name it (what Docker's network inspection lists).
fn attached(containers: &BTreeMap<String, Container>, network: &str) -> Vec<String> {
    containers
        .iter()
        .filter(|(_, c)| {
            (c.spec.network.as_deref() == Some(network)
                || c.spec.networks.iter().any(|n| n.network == network))
                && c.status == Status::Running
        })
        .map(|(name, _)| name.clone())
        .collect()
}

impl Networks {
    /// A network made outside mesh-host (no managed label).
    pub(super) fn add(&mut self, info: NetworkInfo) {
        self.all.insert(info.name.clone(), info);
    }

    /// Whether a network of this name exists.
    pub(super) fn has(&self, name: &str) -> bool {
        self.all.contains_key(name)
    }

    /// Every network's name.
    pub(super) fn names(&self) -> Vec<String> {
        self.all.keys().cloned().collect()
    }

    /// The network `name` as the runtime reports it.
    pub(super) fn info(
        &self,
        name: &str,
        containers: &BTreeMap<String, Container>,
    ) -> Option<NetworkInfo> {
        let mut info = self.all.get(name)?.clone();
        info.containers = attached(containers, name);
        Some(info)
    }

    pub(super) fn create(&mut self, spec: &NetworkSpec) -> Result<(), RuntimeError> {
        if self.all.contains_key(&spec.name) {
            return Err(RuntimeError::Conflict {
                what: format!("network {}", spec.name),
                reason: "network with name already exists".into(),
            });
        }
        let mut labels = spec.labels.clone();
        labels.insert(LABEL_MANAGED.into(), MANAGED_VALUE.into());
        self.all.insert(
            spec.name.clone(),
            NetworkInfo {
                name: spec.name.clone(),
                driver: spec.driver.clone(),
                subnet: Some(
                    spec.subnet
                        .clone()
                        .unwrap_or_else(|| "172.30.0.0/16".into()),
                ),
                gateway: spec.gateway.clone(),
                internal: spec.internal,
                labels,
                enable_ipv6: spec.enable_ipv6,
                ipv6_subnet: spec.ipv6_subnet.clone(),
                ipv6_gateway: spec.ipv6_gateway.clone(),
                driver_opts: spec.driver_opts.clone(),
                containers: Vec::new(),
            },
        );
        Ok(())
    }

    pub(super) fn remove(
        &mut self,
        name: &str,
        containers: &BTreeMap<String, Container>,
    ) -> Result<(), RuntimeError> {
        let attached = attached(containers, name);
        if !attached.is_empty() && self.all.contains_key(name) {
            return Err(RuntimeError::Conflict {
                what: format!("network {name}"),
                reason: format!("network has active endpoints: {}", attached.join(", ")),
            });
        }
        self.all.remove(name);
        Ok(())
    }

    pub(super) fn connect(
        &self,
        containers: &mut BTreeMap<String, Container>,
        container: &str,
        attach: &NetworkAttach,
    ) -> Result<(), RuntimeError> {
        if !self.all.contains_key(&attach.network) {
            return Err(RuntimeError::NotFound {
                what: format!("network {}", attach.network),
            });
        }
        let Some(c) = containers.get_mut(container) else {
            return Err(not_found(container));
        };
        c.spec.networks.retain(|n| n.network != attach.network);
        c.spec.networks.push(attach.clone());
        Ok(())
    }

    pub(super) fn disconnect(
        containers: &mut BTreeMap<String, Container>,
        container: &str,
        network: &str,
    ) {
        if let Some(c) = containers.get_mut(container) {
            c.spec.networks.retain(|n| n.network != network);
            if c.spec.network.as_deref() == Some(network) {
                c.spec.network = None;
            }
        }
    }
}
