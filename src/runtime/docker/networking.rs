//! Networks and volumes through the Docker client: inspect, create,
//! remove (networks only: mesh-host never removes a volume), and a
//! container attached to or detached from a network.

use std::collections::{BTreeMap, HashMap};

use bollard::errors::Error as BollardError;
use bollard::models::{
    EndpointIpamConfig, EndpointSettings, Ipam, IpamConfig, NetworkConnectRequest,
    NetworkCreateRequest, NetworkDisconnectRequest, VolumeCreateRequest,
};

use super::client::DockerRuntime;
use crate::runtime::{
    NetworkAttach, NetworkInfo, NetworkSpec, RuntimeError, VolumeInfo, VolumeSpec, LABEL_MANAGED,
    MANAGED_VALUE,
};

fn is_missing(err: &BollardError) -> bool {
    matches!(
        err,
        BollardError::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}

fn sorted(map: Option<HashMap<String, String>>) -> BTreeMap<String, String> {
    map.unwrap_or_default().into_iter().collect()
}

/// The endpoint settings of `attach` (aliases and a fixed address).
pub(super) fn endpoint(attach: &NetworkAttach) -> EndpointSettings {
    EndpointSettings {
        aliases: (!attach.aliases.is_empty()).then(|| attach.aliases.clone()),
        ipam_config: (attach.ipv4_address.is_some() || attach.ipv6_address.is_some()).then(|| {
            EndpointIpamConfig {
                ipv4_address: attach.ipv4_address.map(|ip| ip.to_string()),
                ipv6_address: attach.ipv6_address.map(|ip| ip.to_string()),
                ..Default::default()
            }
        }),
        ..Default::default()
    }
}

pub(super) async fn network(
    rt: &DockerRuntime,
    name: &str,
) -> Result<Option<NetworkInfo>, RuntimeError> {
    let answer = match rt.docker.inspect_network(name, None).await {
        Ok(answer) => answer,
        Err(e) if is_missing(&e) => return Ok(None),
        Err(e) => {
            return Err(rt.error(
                &format!("inspect network {name}"),
                &format!("network {name}"),
                e,
            ))
        }
    };
    // One range of each family, as a network is declared: the first of
    // each (a range's family read from its address).
    let configs = answer.ipam.and_then(|ipam| ipam.config).unwrap_or_default();
    let of_family = |v6: bool| {
        configs
            .iter()
            .find(|c| {
                c.subnet
                    .as_deref()
                    .is_some_and(|s| !s.is_empty() && s.contains(':') == v6)
            })
            .cloned()
            .unwrap_or_default()
    };
    let first = of_family(false);
    let v6 = of_family(true);
    let mut containers: Vec<String> = answer
        .containers
        .unwrap_or_default()
        .into_values()
        .filter_map(|c| c.name)
        .collect();
    containers.sort();
    Ok(Some(NetworkInfo {
        name: answer.name.unwrap_or_else(|| name.to_owned()),
        driver: answer.driver.unwrap_or_default(),
        subnet: first.subnet.filter(|s| !s.is_empty()),
        gateway: first.gateway.filter(|g| !g.is_empty()),
        internal: answer.internal.unwrap_or(false),
        labels: sorted(answer.labels),
        enable_ipv6: answer.enable_ipv6.unwrap_or(false),
        ipv6_subnet: v6.subnet.filter(|s| !s.is_empty()),
        ipv6_gateway: v6.gateway.filter(|g| !g.is_empty()),
        driver_opts: if rt.is_podman() {
            super::podman_lacks::docker_network_options(sorted(answer.options))
        } else {
            sorted(answer.options)
        },
        containers,
    }))
}

pub(super) async fn create_network(
    rt: &DockerRuntime,
    spec: &NetworkSpec,
) -> Result<(), RuntimeError> {
    if rt.is_podman() {
        if let Some(reason) = super::podman_lacks::network_lacking(spec) {
            return Err(RuntimeError::Api {
                context: format!("create network {}", spec.name),
                reason,
            });
        }
    }
    let mut labels: HashMap<String, String> = spec.labels.clone().into_iter().collect();
    labels.insert(LABEL_MANAGED.into(), MANAGED_VALUE.into());
    // The IPv4 range first, then the IPv6 one, as compose sends them.
    let ranges: Vec<IpamConfig> = [
        (&spec.subnet, &spec.gateway),
        (&spec.ipv6_subnet, &spec.ipv6_gateway),
    ]
    .into_iter()
    .filter_map(|(subnet, gateway)| {
        subnet.as_ref().map(|subnet| IpamConfig {
            subnet: Some(subnet.clone()),
            gateway: gateway.clone(),
            ..Default::default()
        })
    })
    .collect();
    let ipam = (!ranges.is_empty()).then(|| Ipam {
        config: Some(ranges),
        ..Default::default()
    });
    let request = NetworkCreateRequest {
        name: spec.name.clone(),
        driver: Some(spec.driver.clone()),
        internal: Some(spec.internal),
        enable_ipv6: spec.enable_ipv6.then_some(true),
        options: (!spec.driver_opts.is_empty())
            .then(|| spec.driver_opts.clone().into_iter().collect()),
        ipam,
        labels: Some(labels),
        ..Default::default()
    };
    rt.docker
        .create_network(request)
        .await
        .map(|_| ())
        .map_err(|e| {
            rt.error(
                &format!("create network {}", spec.name),
                &format!("network {}", spec.name),
                e,
            )
        })
}

pub(super) async fn remove_network(rt: &DockerRuntime, name: &str) -> Result<(), RuntimeError> {
    match rt.docker.remove_network(name).await {
        Ok(()) => Ok(()),
        Err(e) if is_missing(&e) => Ok(()),
        // Docker answers 403 for a network with endpoints.
        Err(BollardError::DockerResponseServerError {
            status_code: 403 | 409,
            message,
        }) => Err(RuntimeError::Conflict {
            what: format!("network {name}"),
            reason: message,
        }),
        Err(e) => Err(rt.error(
            &format!("remove network {name}"),
            &format!("network {name}"),
            e,
        )),
    }
}

pub(super) async fn connect(
    rt: &DockerRuntime,
    container: &str,
    attach: &NetworkAttach,
) -> Result<(), RuntimeError> {
    let request = NetworkConnectRequest {
        container: container.to_owned(),
        endpoint_config: Some(endpoint(attach)),
    };
    match rt.docker.connect_network(&attach.network, request).await {
        Ok(()) => Ok(()),
        // Attached already (Docker: "endpoint with name ... already
        // exists in network"; Podman: "... already connected"): what was
        // asked for.
        Err(BollardError::DockerResponseServerError { message, .. })
            if message.contains("already exists in network")
                || message.contains("already connected") =>
        {
            Ok(())
        }
        Err(e) => Err(rt.error(
            &format!(
                "connect container {container} to network {}",
                attach.network
            ),
            &format!("network {}", attach.network),
            e,
        )),
    }
}

pub(super) async fn disconnect(
    rt: &DockerRuntime,
    container: &str,
    network: &str,
) -> Result<(), RuntimeError> {
    let request = NetworkDisconnectRequest {
        container: container.to_owned(),
        force: Some(true),
    };
    match rt.docker.disconnect_network(network, request).await {
        Ok(()) => Ok(()),
        Err(e) if is_missing(&e) => Ok(()),
        // Not attached (a stopped container detached before): done.
        Err(BollardError::DockerResponseServerError { message, .. })
            if message.contains("not connected") =>
        {
            Ok(())
        }
        Err(e) => Err(rt.error(
            &format!("disconnect container {container} from network {network}"),
            &format!("network {network}"),
            e,
        )),
    }
}

pub(super) async fn volume(
    rt: &DockerRuntime,
    name: &str,
) -> Result<Option<VolumeInfo>, RuntimeError> {
    match rt.docker.inspect_volume(name).await {
        Ok(v) => Ok(Some(VolumeInfo {
            name: v.name,
            driver: v.driver,
            driver_opts: v.options.into_iter().collect(),
            labels: v.labels.into_iter().collect(),
        })),
        Err(e) if is_missing(&e) => Ok(None),
        Err(e) => Err(rt.error(
            &format!("inspect volume {name}"),
            &format!("volume {name}"),
            e,
        )),
    }
}

pub(super) async fn create_volume(
    rt: &DockerRuntime,
    spec: &VolumeSpec,
) -> Result<(), RuntimeError> {
    let request = VolumeCreateRequest {
        name: Some(spec.name.clone()),
        driver: Some(spec.driver.clone()),
        driver_opts: Some(spec.driver_opts.clone().into_iter().collect()),
        labels: Some(spec.labels.clone().into_iter().collect()),
        ..Default::default()
    };
    rt.docker
        .create_volume(request)
        .await
        .map(|_| ())
        .map_err(|e| {
            rt.error(
                &format!("create volume {}", spec.name),
                &format!("volume {}", spec.name),
                e,
            )
        })
}
