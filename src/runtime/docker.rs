//! [`ContainerRuntime`] over the Docker Engine API (bollard): the trait's
//! face, each of its parts in a file of its own: the connection
//! (`client`), containers, what an inspection of one says (`inspection`),
//! images, events, and health checks in Docker's terms.

use super::{
    CgroupDriver, ContainerId, ContainerInfo, ContainerRuntime, ContainerSpec, ContainerSummary,
    EventStream, NetworkAttach, NetworkInfo, NetworkSpec, OutputChunks, RuntimeError, RuntimeView,
    VolumeInfo, VolumeSpec,
};

mod client;
mod containers;
mod create;
mod devices;
mod error_text;
mod events;
mod health;
mod image_defaults;
mod images;
mod inspection;
mod log_driver;
mod network_none;
mod networking;
mod output;
mod ping;
mod podman_lacks;

pub use client::{DockerRuntime, DEFAULT_SOCKET};

#[async_trait::async_trait]
impl RuntimeView for DockerRuntime {
    async fn inspect(&self, name: &str) -> Result<Option<ContainerInfo>, RuntimeError> {
        containers::inspect(self, name).await
    }

    async fn list_managed(&self) -> Result<Vec<ContainerSummary>, RuntimeError> {
        containers::list_managed(self).await
    }

    async fn image_present(&self, image: &str) -> Result<bool, RuntimeError> {
        images::image_present(self, image).await
    }

    async fn cgroup_driver(&self) -> Result<CgroupDriver, RuntimeError> {
        client::cgroup_driver(self).await
    }

    async fn events(&self, names: &[String]) -> Result<EventStream, RuntimeError> {
        events::events(self, names).await
    }

    fn journals_output(&self) -> bool {
        // Podman's journald driver carries no label: mesh-host forwards.
        !self.is_podman()
    }

    async fn output(&self, name: &str, follow: bool) -> Result<OutputChunks, RuntimeError> {
        Ok(output::output(self, name, follow))
    }

    async fn repo_digests(&self, reference: &str) -> Result<Option<Vec<String>>, RuntimeError> {
        images::repo_digests(self, reference).await
    }

    async fn registry_digests(&self, reference: &str) -> Result<Vec<String>, RuntimeError> {
        images::registry_digests(self, reference).await
    }

    async fn network(&self, name: &str) -> Result<Option<NetworkInfo>, RuntimeError> {
        networking::network(self, name).await
    }

    async fn volume(&self, name: &str) -> Result<Option<VolumeInfo>, RuntimeError> {
        networking::volume(self, name).await
    }
}

#[async_trait::async_trait]
impl ContainerRuntime for DockerRuntime {
    async fn create(&self, spec: &ContainerSpec) -> Result<ContainerId, RuntimeError> {
        if network_none::applies(self, spec) {
            return network_none::create(self, spec).await;
        }
        containers::create(self, spec).await
    }

    async fn start(&self, name: &str) -> Result<(), RuntimeError> {
        containers::start(self, name).await
    }

    async fn start_and_inspect(&self, name: &str) -> Result<Option<ContainerInfo>, RuntimeError> {
        containers::start_and_inspect(self, name).await
    }

    async fn stop(&self, name: &str) -> Result<(), RuntimeError> {
        containers::stop(self, name).await
    }

    async fn kill(&self, name: &str) -> Result<(), RuntimeError> {
        containers::kill(self, name).await
    }

    async fn remove(&self, name: &str) -> Result<(), RuntimeError> {
        containers::remove(self, name).await
    }

    async fn remove_stopped(&self, name: &str) -> Result<(), RuntimeError> {
        containers::remove_stopped(self, name).await
    }

    async fn rename(&self, name: &str, to: &str) -> Result<(), RuntimeError> {
        containers::rename(self, name, to).await
    }

    async fn wait_exit(&self, name: &str) -> Result<i64, RuntimeError> {
        containers::wait_exit(self, name).await
    }

    async fn pull(&self, image: &str) -> Result<(), RuntimeError> {
        images::pull(self, image).await
    }

    async fn create_network(&self, spec: &NetworkSpec) -> Result<(), RuntimeError> {
        networking::create_network(self, spec).await
    }

    async fn remove_network(&self, name: &str) -> Result<(), RuntimeError> {
        networking::remove_network(self, name).await
    }

    async fn connect(&self, container: &str, attach: &NetworkAttach) -> Result<(), RuntimeError> {
        networking::connect(self, container, attach).await
    }

    async fn disconnect(&self, container: &str, network: &str) -> Result<(), RuntimeError> {
        networking::disconnect(self, container, network).await
    }

    async fn create_volume(&self, spec: &VolumeSpec) -> Result<(), RuntimeError> {
        networking::create_volume(self, spec).await
    }
}

#[cfg(test)]
mod tests {
    use super::client::{pin_version, pinned_version};
    use super::containers::{create_body, is_podman_stopped};
    use super::health::{health_config, health_decides_within};
    use super::images::pull_error;
    use super::inspection::volumes;
    use super::log_driver::log_config;
    use super::*;
    use crate::runtime::PortSpec;
    use crate::runtime::{HealthSpec, JournalLog, MountSpec, RestartPolicy, LABEL_MANAGED};
    use bollard::models::{HealthConfig, MountType, RestartPolicyNameEnum};
    use std::time::Duration;

    #[test]
    fn requests_are_pinned_to_the_older_of_the_daemons_api_and_the_clients() {
        // Docker 20.10 and Podman 4.3 both answer 1.41.
        assert_eq!(pinned_version(Some("1.41")).as_deref(), Some("1.41"));
        // A daemon newer than the client: the client's own version.
        let client = bollard::API_DEFAULT_VERSION.minor_version;
        assert_eq!(pinned_version(Some("1.99")), Some(format!("1.{client}")));
        for unusable in [None, Some(""), Some("2.0"), Some("1.x"), Some("1")] {
            assert_eq!(pinned_version(unusable), None, "{unusable:?}");
        }
    }

    #[test]
    fn volumes_are_read_from_an_inspection_s_mounts_and_binds_left_out() {
        let anon = "3f2a".repeat(16);
        let mounts = format!(
            r#"[{{"Type": "volume", "Name": "{anon}", "Source": "/var/lib/docker/volumes/{anon}/_data",
                 "Destination": "/data", "Driver": "local", "Mode": "", "RW": true, "Propagation": ""}},
                {{"Type": "volume", "Name": "pgdata", "Source": "/x", "Destination": "/pg",
                 "Driver": "local", "Mode": "z", "RW": false, "Propagation": ""}},
                {{"Type": "bind", "Source": "/srv", "Destination": "/srv", "Mode": "",
                 "RW": true, "Propagation": "rprivate"}},
                {{"Type": "volume", "Name": "", "Destination": "/broken"}}]"#
        );
        let parsed: Vec<bollard::models::MountPoint> =
            serde_json::from_str(&mounts).expect("mounts");
        let read: Vec<(String, String, bool)> = volumes(parsed)
            .into_iter()
            .map(|v| (v.name, v.target, v.read_only))
            .collect();
        assert_eq!(
            read,
            [
                (anon.clone(), "/data".to_string(), false),
                ("pgdata".to_string(), "/pg".to_string(), true)
            ]
        );
    }

    #[test]
    fn podmans_transient_stopped_state_is_told_from_other_refusals() {
        // The State of Podman 4.3's inspect answer for a container between
        // its exit and its cleanup, as the client's model reads it.
        let podman = r#"{"Status": "stopped", "Running": false, "ExitCode": 0}"#;
        let err = serde_json::from_str::<bollard::models::ContainerState>(podman)
            .expect_err("Docker's API has no stopped state");
        assert!(is_podman_stopped(&err.to_string()), "{err}");
        let exited = r#"{"Status": "exited", "Running": false, "ExitCode": 0}"#;
        assert!(serde_json::from_str::<bollard::models::ContainerState>(exited).is_ok());
        let other =
            serde_json::from_str::<bollard::models::ContainerState>(r#"{"Status": "frozen"}"#)
                .expect_err("no such state");
        assert!(!is_podman_stopped(&other.to_string()), "{other}");
    }

    #[test]
    fn a_health_check_decides_within_its_start_period_and_retries() {
        let second = 1_000_000_000;
        let declared = HealthConfig {
            interval: Some(2 * second),
            timeout: Some(second),
            retries: Some(4),
            start_period: Some(10 * second),
            ..Default::default()
        };
        // 10 s of start period, then 5 checks of 2 + 1 s.
        assert_eq!(
            health_decides_within(Some(&declared)),
            Some(Duration::from_secs(25))
        );
        // Unset or zero: Docker's 30 s, 30 s, 3 retries, no start period.
        let unset = HealthConfig {
            interval: Some(0),
            ..Default::default()
        };
        assert_eq!(
            health_decides_within(Some(&unset)),
            Some(Duration::from_secs(240))
        );
        assert_eq!(health_decides_within(None), None);
    }

    #[test]
    fn pull_refusals_fail_at_once_and_outages_are_retryable() {
        let r = "127.0.0.1:5000/x@sha256:00";
        let status = |err: RuntimeError| match err {
            RuntimeError::Registry { status, .. } => Some(status),
            RuntimeError::RegistryUnavailable { .. } => None,
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(
            status(pull_error(r, Some(404), "manifest unknown".into())),
            Some(404)
        );
        assert_eq!(status(pull_error(r, Some(403), "denied".into())), Some(403));
        assert_eq!(
            status(pull_error(
                r,
                Some(500),
                "unauthorized: authentication required".into()
            )),
            Some(401)
        );
        assert_eq!(
            status(pull_error(
                r,
                Some(500),
                "Get \"http://127.0.0.1:5999/v2/\": dial tcp 127.0.0.1:5999: connect: connection refused"
                    .into()
            )),
            None
        );
        assert_eq!(
            status(pull_error(
                r,
                None,
                "received unexpected HTTP status: 503".into()
            )),
            None
        );
    }

    #[test]
    fn the_first_network_is_joined_at_create_with_its_aliases_and_address() {
        let spec = ContainerSpec {
            name: "db".into(),
            image: "r/db@sha256:00".into(),
            networks: vec![
                crate::runtime::NetworkAttach {
                    network: "back".into(),
                    aliases: vec!["database".into()],
                    ipv4_address: Some("10.5.0.9".parse().expect("address")),
                    ipv6_address: Some("fd00:5::9".parse().expect("address")),
                },
                crate::runtime::NetworkAttach {
                    network: "front".into(),
                    ..Default::default()
                },
            ],
            restart: RestartPolicy::OnFailure,
            ..Default::default()
        };
        let body = create_body(&spec);
        let host = body.host_config.expect("host config");
        assert_eq!(host.network_mode.as_deref(), Some("back"));
        assert_eq!(
            host.restart_policy.and_then(|p| p.name),
            Some(RestartPolicyNameEnum::ON_FAILURE)
        );
        let endpoints = body
            .networking_config
            .and_then(|n| n.endpoints_config)
            .expect("endpoints");
        assert_eq!(
            endpoints.len(),
            1,
            "Docker 20.10 takes one network at create"
        );
        let back = &endpoints["back"];
        assert_eq!(back.aliases.as_deref(), Some(&["database".to_string()][..]));
        assert_eq!(
            back.ipam_config
                .as_ref()
                .and_then(|c| c.ipv4_address.as_deref()),
            Some("10.5.0.9")
        );
        assert_eq!(
            back.ipam_config
                .as_ref()
                .and_then(|c| c.ipv6_address.as_deref()),
            Some("fd00:5::9")
        );
    }

    #[test]
    fn create_body_carries_the_spec_and_the_managed_label() {
        let spec = ContainerSpec {
            name: "web".into(),
            image: "r/web@sha256:00".into(),
            command: Some(vec!["serve".into()]),
            env: vec![("A".into(), "1".into()), ("B".into(), "x=y".into())],
            mounts: vec![
                MountSpec {
                    source: "/srv/web".into(),
                    target: "/data".into(),
                    read_only: true,
                },
                MountSpec {
                    source: "cache".into(),
                    target: "/cache".into(),
                    read_only: false,
                },
            ],
            anonymous_volumes: Vec::new(),
            network: Some("host".into()),
            networks: Vec::new(),
            ports: Vec::new(),
            process: Default::default(),
            dns: vec!["10.0.0.53".parse().expect("literal address")],
            user: Some("1000:1000".into()),
            labels: [("mesh-host.resource".to_string(), "web".to_string())].into(),
            restart: RestartPolicy::UnlessStopped,
            cgroup_parent: None,
            auto_remove: false,
            groups: Vec::new(),
            health: None,
            journal: None,
        };
        let body = create_body(&spec);
        assert_eq!(body.env, Some(vec!["A=1".to_owned(), "B=x=y".to_owned()]));
        let labels = body.labels.expect("labels set");
        assert_eq!(labels.get(LABEL_MANAGED).map(String::as_str), Some("true"));
        assert_eq!(
            labels.get("mesh-host.resource").map(String::as_str),
            Some("web")
        );
        let host = body.host_config.expect("host config set");
        // A bind as `Binds`, so that Docker makes a missing source; a
        // volume through the Mount API.
        let binds = host.binds.expect("binds set");
        assert_eq!(binds, ["/srv/web:/data:ro"]);
        let mounts = host.mounts.expect("mounts set");
        assert_eq!(mounts.len(), 1);
        assert_eq!(mounts[0].typ, Some(MountType::VOLUME));
        assert_eq!(host.network_mode.as_deref(), Some("host"));
        assert_eq!(host.dns, Some(vec!["10.0.0.53".to_owned()]));
        assert_eq!(
            host.restart_policy.and_then(|p| p.name),
            Some(RestartPolicyNameEnum::UNLESS_STOPPED)
        );
        assert_eq!(body.healthcheck, None, "the image's check is kept");
    }

    #[test]
    fn published_ports_are_exposed_and_bound_per_container_port_and_protocol() {
        let port = |host, container, protocol, address: Option<&str>| PortSpec {
            host,
            container,
            protocol,
            address: address.map(|a| a.parse().expect("literal address")),
        };
        let spec = ContainerSpec {
            network: Some("web-net".into()),
            ports: vec![
                port(Some(8080), 80, "tcp", Some("127.0.0.1")),
                port(Some(8443), 80, "tcp", None),
                port(None, 53, "udp", Some("::1")),
            ],
            ..Default::default()
        };
        let body = create_body(&spec);
        assert_eq!(
            body.exposed_ports,
            Some(vec!["53/udp".to_owned(), "80/tcp".to_owned()])
        );
        let bindings = body
            .host_config
            .and_then(|h| h.port_bindings)
            .expect("bindings");
        let web = bindings
            .get("80/tcp")
            .cloned()
            .flatten()
            .expect("80/tcp bound");
        assert_eq!(web.len(), 2);
        assert_eq!(web[0].host_ip.as_deref(), Some("127.0.0.1"));
        assert_eq!(web[0].host_port.as_deref(), Some("8080"));
        assert_eq!(web[1].host_ip, None, "every address");
        let dns = bindings
            .get("53/udp")
            .cloned()
            .flatten()
            .expect("53/udp bound");
        assert_eq!(dns[0].host_ip.as_deref(), Some("::1"));
        assert_eq!(dns[0].host_port.as_deref(), Some(""), "the runtime picks");
        assert_eq!(
            create_body(&ContainerSpec::default()).exposed_ports,
            None,
            "nothing published: nothing sent"
        );
    }

    #[test]
    fn process_options_reach_docker_s_config_and_host_config() {
        let spec = ContainerSpec {
            process: crate::runtime::ProcessSpec {
                entrypoint: Some(vec!["/init".into()]),
                working_dir: Some("/srv".into()),
                platform: None,
                hostname: Some("db".into()),
                stop_signal: Some("SIGINT".into()),
                stop_grace: Some(30),
                init: true,
                cap_add: vec!["NET_ADMIN".into()],
                cap_drop: vec!["ALL".into()],
                privileged: false,
                read_only_root: true,
                no_new_privileges: true,
                security_opt: vec!["label=disable".into(), "seccomp:unconfined".into()],
                logging: Some(crate::runtime::LogSpec {
                    driver: Some("local".into()),
                    options: vec![("max-size".into(), "1m".into())],
                }),
                memory: Some(256 << 20),
                memory_reservation: Some(128 << 20),
                nano_cpus: Some(1_500_000_000),
                pids_limit: Some(100),
                shm_size: Some(64 << 20),
                tmpfs: vec![("/run".into(), "size=65536,mode=1777".into())],
                ulimits: vec![("nofile".into(), 1024, 4096)],
                sysctls: vec![("net.core.somaxconn".into(), "1024".into())],
                extra_hosts: vec!["db:10.0.0.5".into()],
                devices: vec![("/dev/fuse".into(), "/dev/fuse".into(), "rwm".into())],
                device_requests: vec![crate::runtime::DeviceRequestSpec {
                    driver: "nvidia".into(),
                    count: -1,
                    device_ids: Vec::new(),
                    capabilities: vec!["gpu".into(), "utility".into()],
                    options: vec![("a".into(), "b".into())],
                }],
            }
            .into(),
            anonymous_volumes: vec!["/data".into()],
            ..Default::default()
        };
        let body = create_body(&spec);
        assert_eq!(body.entrypoint, Some(vec!["/init".to_owned()]));
        assert_eq!(body.working_dir.as_deref(), Some("/srv"));
        assert_eq!(body.hostname.as_deref(), Some("db"));
        assert_eq!(body.stop_signal.as_deref(), Some("SIGINT"));
        assert_eq!(body.stop_timeout, Some(30));
        let host = body.host_config.expect("host config");
        assert_eq!(host.init, Some(true));
        assert_eq!(host.cap_add, Some(vec!["NET_ADMIN".to_owned()]));
        assert_eq!(host.cap_drop, Some(vec!["ALL".to_owned()]));
        assert_eq!(host.privileged, None, "not asked: the runtime's own");
        assert_eq!(host.readonly_rootfs, Some(true));
        assert_eq!(
            host.security_opt,
            Some(vec![
                "no-new-privileges:true".to_owned(),
                "label=disable".to_owned(),
                "seccomp:unconfined".to_owned()
            ])
        );
        let log = host.log_config.expect("the declared driver");
        assert_eq!(log.typ.as_deref(), Some("local"));
        assert_eq!(
            log.config
                .and_then(|c| c.get("max-size").cloned())
                .as_deref(),
            Some("1m")
        );
        assert_eq!(host.memory, Some(256 << 20));
        assert_eq!(host.memory_reservation, Some(128 << 20));
        assert_eq!(host.nano_cpus, Some(1_500_000_000));
        assert_eq!(host.pids_limit, Some(100));
        assert_eq!(host.shm_size, Some(64 << 20));
        assert_eq!(
            host.tmpfs.and_then(|t| t.get("/run").cloned()).as_deref(),
            Some("size=65536,mode=1777")
        );
        let nofile = &host.ulimits.expect("ulimits")[0];
        assert_eq!(
            (nofile.name.as_deref(), nofile.soft, nofile.hard),
            (Some("nofile"), Some(1024), Some(4096))
        );
        assert_eq!(
            host.sysctls
                .and_then(|m| m.get("net.core.somaxconn").cloned())
                .as_deref(),
            Some("1024")
        );
        assert_eq!(host.extra_hosts, Some(vec!["db:10.0.0.5".to_owned()]));
        let fuse = &host.devices.expect("devices")[0];
        assert_eq!(fuse.path_on_host.as_deref(), Some("/dev/fuse"));
        assert_eq!(fuse.cgroup_permissions.as_deref(), Some("rwm"));
        // As compose 1.29 sends a reservation: its capabilities one AND list.
        let gpu = &host.device_requests.expect("device requests")[0];
        assert_eq!(
            (gpu.driver.as_deref(), gpu.count),
            (Some("nvidia"), Some(-1))
        );
        assert_eq!(
            gpu.capabilities,
            Some(vec![vec!["gpu".to_owned(), "utility".to_owned()]])
        );
        assert_eq!(body.volumes, Some(vec!["/data".to_owned()]));
        let plain = create_body(&ContainerSpec::default());
        let host = plain.host_config.expect("host config");
        assert_eq!((host.memory, host.init, host.cap_add), (None, None, None));
        assert_eq!(plain.entrypoint, None, "the image's own");
        assert_eq!((host.device_requests, plain.volumes), (None, None));
    }

    #[test]
    fn output_to_the_journal_carries_labels_on_docker_and_goes_to_a_file_on_podman() {
        let journal = JournalLog {
            labels: vec!["mesh.step".into(), "mesh.fire".into()],
            tag: "mesh-host-step".into(),
        };
        let spec = ContainerSpec {
            journal: Some(Box::new(journal.clone())),
            ..Default::default()
        };
        let docker = create_body(&spec)
            .host_config
            .and_then(|h| h.log_config)
            .expect("a log config");
        assert_eq!(docker.typ.as_deref(), Some("journald"));
        let config = docker.config.expect("options");
        assert_eq!(
            config.get("labels").map(String::as_str),
            Some("mesh.step,mesh.fire")
        );
        assert_eq!(
            config.get("tag").map(String::as_str),
            Some("mesh-host-step")
        );
        // Podman's driver carries no label: a file of its own, which
        // mesh-host forwards with the fields.
        let podman = log_config(&journal, true);
        assert_eq!(podman.typ.as_deref(), Some("k8s-file"));
        assert_eq!(podman.config, None);
        // Without one, the runtime's default driver.
        let body = create_body(&ContainerSpec::default());
        assert_eq!(body.host_config.and_then(|h| h.log_config), None);
    }

    #[test]
    fn a_declared_health_check_is_docker_s_exec_form_in_nanoseconds() {
        let check = HealthSpec::Check {
            command: Some(vec!["wget".into(), "-q".into(), "--spider".into()]),
            interval: Some(Duration::from_secs(2)),
            timeout: None,
            retries: Some(5),
            start_period: Some(Duration::from_secs(10)),
        };
        let config = health_config(&check);
        assert_eq!(
            config.test,
            Some(vec![
                "CMD".to_string(),
                "wget".into(),
                "-q".into(),
                "--spider".into()
            ])
        );
        assert_eq!(config.interval, Some(2_000_000_000));
        assert_eq!(config.timeout, None);
        assert_eq!(config.retries, Some(5));
        assert_eq!(config.start_period, Some(10_000_000_000));
        assert_eq!(
            health_decides_within(Some(&config)),
            Some(Duration::from_secs(10 + (2 + 30) * 6))
        );
        let none = health_config(&HealthSpec::Disabled);
        assert_eq!(none.test, Some(vec!["NONE".to_string()]));
        assert_eq!(none.interval, None);
    }

    #[test]
    fn requests_are_pinned_to_the_negotiated_version() {
        let mut request = bollard::BollardRequest::new(bollard::body_full(Default::default()));
        *request.uri_mut() = "unix://2f72756e:0/containers/json?all=true"
            .parse()
            .expect("literal uri");
        let pinned = pin_version(request, "/v1.41");
        assert_eq!(
            pinned.uri().to_string(),
            "unix://2f72756e:0/v1.41/containers/json?all=true"
        );
        let again = pin_version(pinned, "/v1.41");
        assert_eq!(again.uri().path(), "/v1.41/containers/json");
    }

    #[tokio::test]
    async fn a_missing_socket_is_unreachable_naming_it() {
        let err = DockerRuntime::connect(Some("/nonexistent/docker.sock"))
            .await
            .expect_err("no socket there");
        match err {
            RuntimeError::Unreachable { endpoint, .. } => {
                assert_eq!(endpoint, "/nonexistent/docker.sock")
            }
            other => panic!("expected Unreachable, got {other:?}"),
        }
        let err = DockerRuntime::connect(Some("ftp://example"))
            .await
            .expect_err("unsupported scheme");
        assert!(matches!(err, RuntimeError::Unreachable { .. }), "{err:?}");
    }
}
