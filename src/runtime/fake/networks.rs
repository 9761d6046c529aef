//! The fake's networks and named volumes: made, inspected, removed (a
//! network only, and only when no container is attached), and containers
//! attached or detached. A container's attachments are the networks its
//! spec joins, so a rename or a removal carries them as Docker's do.

use std::collections::BTreeMap;

use super::super::{
    NetworkAttach, NetworkInfo, NetworkSpec, RuntimeError, VolumeInfo, VolumeSpec, LABEL_MANAGED,
    MANAGED_VALUE,
};
use super::{not_found, FakeRuntime, State};

impl State {
    /// The containers with an endpoint on `network` now: the running ones
    /// whose settings name it (what Docker's network inspection lists).
    fn attached(&self, network: &str) -> Vec<String> {
        self.containers
            .iter()
            .filter(|(_, c)| {
                (c.spec.network.as_deref() == Some(network)
                    || c.spec.networks.iter().any(|n| n.network == network))
                    && c.status == super::Status::Running
            })
            .map(|(name, _)| name.clone())
            .collect()
    }
}

impl FakeRuntime {
    /// A network made outside mesh-host (no managed label).
    pub fn add_network(&self, info: NetworkInfo) {
        self.state().networks.insert(info.name.clone(), info);
    }

    /// A volume made outside mesh-host.
    pub fn add_volume(&self, info: VolumeInfo) {
        let mut state = self.state();
        state.volumes.insert(info.name.clone());
        state.volume_info.insert(info.name.clone(), info);
    }

    /// The local image `tag` has these repository digests.
    pub fn set_repo_digests(&self, tag: &str, digests: &[&str]) {
        let mut state = self.state();
        state.images.insert(tag.to_owned());
        state.repo_digests.insert(
            tag.to_owned(),
            digests.iter().map(|d| d.to_string()).collect(),
        );
    }

    /// Every network, by name.
    pub fn networks(&self) -> BTreeMap<String, NetworkInfo> {
        let state = self.state();
        state
            .networks
            .keys()
            .map(|name| (name.clone(), state.network_info(name).unwrap_or_default()))
            .collect()
    }

    /// The networks `container` is attached to, with its place on each.
    pub fn attachments_of(&self, container: &str) -> Vec<NetworkAttach> {
        let state = self.state();
        let Some(c) = state.containers.get(container) else {
            return Vec::new();
        };
        let mut all = c.spec.networks.clone();
        if let Some(n) = c
            .spec
            .network
            .as_ref()
            .filter(|n| state.networks.contains_key(*n))
        {
            all.push(NetworkAttach {
                network: n.clone(),
                ..Default::default()
            });
        }
        all
    }

    pub(super) fn network_of(&self, name: &str) -> Result<Option<NetworkInfo>, RuntimeError> {
        let state = self.enter(super::Call::Network(name.to_owned()))?;
        Ok(state.network_info(name))
    }

    pub(super) fn create_network_of(&self, spec: &NetworkSpec) -> Result<(), RuntimeError> {
        let mut state = self.enter(super::Call::CreateNetwork(spec.name.clone()))?;
        if state.networks.contains_key(&spec.name) {
            return Err(RuntimeError::Conflict {
                what: format!("network {}", spec.name),
                reason: "network with name already exists".into(),
            });
        }
        let mut labels = spec.labels.clone();
        labels.insert(LABEL_MANAGED.into(), MANAGED_VALUE.into());
        state.networks.insert(
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
                containers: Vec::new(),
            },
        );
        Ok(())
    }

    pub(super) fn remove_network_of(&self, name: &str) -> Result<(), RuntimeError> {
        let mut state = self.enter(super::Call::RemoveNetwork(name.to_owned()))?;
        let attached = state.attached(name);
        if !attached.is_empty() && state.networks.contains_key(name) {
            return Err(RuntimeError::Conflict {
                what: format!("network {name}"),
                reason: format!("network has active endpoints: {}", attached.join(", ")),
            });
        }
        state.networks.remove(name);
        Ok(())
    }

    pub(super) fn connect_of(
        &self,
        container: &str,
        attach: &NetworkAttach,
    ) -> Result<(), RuntimeError> {
        let mut state = self.enter(super::Call::Connect(
            container.to_owned(),
            attach.network.clone(),
        ))?;
        if !state.networks.contains_key(&attach.network) {
            return Err(RuntimeError::NotFound {
                what: format!("network {}", attach.network),
            });
        }
        let Some(c) = state.containers.get_mut(container) else {
            return Err(not_found(container));
        };
        c.spec.networks.retain(|n| n.network != attach.network);
        c.spec.networks.push(attach.clone());
        Ok(())
    }

    pub(super) fn disconnect_of(&self, container: &str, network: &str) -> Result<(), RuntimeError> {
        let mut state = self.enter(super::Call::Disconnect(
            container.to_owned(),
            network.to_owned(),
        ))?;
        if let Some(c) = state.containers.get_mut(container) {
            c.spec.networks.retain(|n| n.network != network);
            if c.spec.network.as_deref() == Some(network) {
                c.spec.network = None;
            }
        }
        Ok(())
    }

    pub(super) fn volume_of(&self, name: &str) -> Result<Option<VolumeInfo>, RuntimeError> {
        let state = self.enter(super::Call::Volume(name.to_owned()))?;
        Ok(match state.volume_info.get(name) {
            Some(info) => Some(info.clone()),
            // Made by a mount: the runtime's defaults.
            None if state.volumes.contains(name) => Some(VolumeInfo {
                name: name.to_owned(),
                driver: "local".into(),
                ..Default::default()
            }),
            None => None,
        })
    }

    pub(super) fn create_volume_of(&self, spec: &VolumeSpec) -> Result<(), RuntimeError> {
        let mut state = self.enter(super::Call::CreateVolume(spec.name.clone()))?;
        if state.volumes.insert(spec.name.clone()) {
            state.volume_info.insert(
                spec.name.clone(),
                VolumeInfo {
                    name: spec.name.clone(),
                    driver: spec.driver.clone(),
                    driver_opts: spec.driver_opts.clone(),
                    labels: spec.labels.clone(),
                },
            );
        }
        Ok(())
    }
}

impl State {
    fn network_info(&self, name: &str) -> Option<NetworkInfo> {
        let mut info = self.networks.get(name)?.clone();
        info.containers = self.attached(name);
        Some(info)
    }
}
