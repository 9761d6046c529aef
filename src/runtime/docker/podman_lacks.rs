//! Declared fields Podman's compatible API (4.3) would take and not
//! honour, or refuse with a message naming no field: refused before the
//! create, naming the field (docs/podman.md).
//!
//! Verified on the sandbox node's Podman 4.3: a `LogConfig` of any
//! driver comes back as the default `journald` with its options dropped,
//! a tmpfs `uid=`/`gid=` option fails the create ("unknown mount
//! option"), and so does an extra host at `host-gateway` ("invalid IP
//! address in add-host"). Its `DeviceRequests` are dropped (a container
//! asking for a GPU driver the node lacks is created and started
//! without it), where Docker fails the start.

use std::collections::BTreeMap;

use crate::runtime::{ContainerSpec, NetworkSpec};

/// Docker's name of a network's MTU option, which Podman's compatible
/// API takes and keeps as its own `mtu`.
const DOCKER_MTU: &str = "com.docker.network.driver.mtu";

/// Why the network `spec` cannot be made as declared on Podman: a
/// bridge's name, which Podman 4.3 takes but its compatible API never
/// reports back (a change of it could not be seen); `None` otherwise.
pub(super) fn network_lacking(spec: &NetworkSpec) -> Option<String> {
    spec.driver_opts
        .contains_key("com.docker.network.bridge.name")
        .then(|| {
            "not supported on Podman: driver-opts com.docker.network.bridge.name (Podman 4.3's compatible API never reports it back); remove it or run on Docker (docs/podman.md)".to_owned()
        })
}

/// A network's options as Podman reports them, under Docker's names.
pub(super) fn docker_network_options(
    mut options: BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    if let Some(mtu) = options.remove("mtu") {
        options.insert(DOCKER_MTU.to_owned(), mtu);
    }
    options
}

/// Why `spec` cannot be created as declared on Podman, naming each field
/// it lacks; `None` when nothing is lacking.
pub(super) fn lacking(spec: &ContainerSpec) -> Option<String> {
    let mut lacks = Vec::new();
    if spec.process.logging.is_some() {
        lacks.push(
            "logging (Podman 4.3's compatible API keeps its default driver and drops the options)",
        );
    }
    let owned = |opts: &str| {
        opts.split(',')
            .any(|o| o.starts_with("uid=") || o.starts_with("gid="))
    };
    if spec.process.tmpfs.iter().any(|(_, opts)| owned(opts)) {
        lacks.push("tmpfs uid and gid (Podman 4.3 has no such tmpfs option)");
    }
    let gateway = |h: &String| h.ends_with(":host-gateway");
    if spec.process.extra_hosts.iter().any(gateway) {
        lacks.push("extra-hosts host-gateway (Podman 4.3 takes IP addresses alone)");
    }
    if !spec.process.device_requests.is_empty() {
        lacks.push("device-requests (Podman 4.3's compatible API drops them: the container would start without its GPUs)");
    }
    (!lacks.is_empty()).then(|| {
        format!(
            "not supported on Podman: {}; remove it or run on Docker (docs/podman.md)",
            lacks.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::lacking;
    use crate::runtime::{ContainerSpec, LogSpec};

    #[test]
    fn a_log_driver_a_tmpfs_owner_and_host_gateway_are_named_and_the_rest_passes() {
        let mut spec = ContainerSpec::default();
        spec.process.tmpfs = vec![("/run".into(), "size=4096,mode=1770,exec".into())];
        spec.process.security_opt = vec!["label=disable".into()];
        assert_eq!(lacking(&spec), None);
        spec.process
            .tmpfs
            .push(("/x".into(), "noexec,uid=1000".into()));
        spec.process.extra_hosts = vec!["gw:host-gateway".into()];
        spec.process.logging = Some(LogSpec {
            driver: Some("local".into()),
            options: Vec::new(),
        });
        let why = lacking(&spec).expect("lacking");
        assert!(
            why.contains("logging (") && why.contains("tmpfs uid and gid"),
            "{why}"
        );
        assert!(why.contains("extra-hosts host-gateway"), "{why}");
        let mut gpu = ContainerSpec::default();
        gpu.process.device_requests = vec![crate::runtime::DeviceRequestSpec {
            driver: "nvidia".into(),
            count: 1,
            device_ids: Vec::new(),
            capabilities: vec!["gpu".into()],
            options: Vec::new(),
        }];
        let why = lacking(&gpu).expect("lacking");
        assert!(why.contains("device-requests ("), "{why}");
    }
}
