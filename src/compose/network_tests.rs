//! The network group of compose's fields as `import` reads them: IPv6
//! (`enable_ipv6`, a second, v6, range, `ipv6_address`), a network's
//! `driver_opts`, `network_mode: service:` and `container:`, `platform`.
#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};

use super::{import, Source};

/// A project of one `compose.yaml` imported without pinning.
async fn run(compose: &str) -> Result<Value, Vec<String>> {
    let dir = tempfile::Builder::new()
        .prefix("netgroup")
        .tempdir()
        .unwrap();
    std::fs::write(dir.path().join("compose.yaml"), compose).unwrap();
    let src = Source {
        dir: dir.path().to_path_buf(),
        project_name: Some("p".into()),
        ..Source::default()
    };
    import(&src, None)
        .await
        .map(|i| serde_json::from_slice(&i.bytes).unwrap())
}

fn resource<'a>(d: &'a Value, id: &str) -> &'a Value {
    d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {d:#}"))
}

fn refused(problems: &[String], words: &str) {
    assert!(
        problems.iter().any(|p| p.contains(words)),
        "no problem says {words:?}: {problems:#?}"
    );
}

#[tokio::test]
async fn ipv6_ranges_of_either_order_an_ipv6_address_and_driver_opts_are_imported() {
    let d = run("services:
  web:
    image: reg.test/busybox:stable
    networks:
      back: {ipv4_address: 10.9.0.5, ipv6_address: 'fd00:9::5'}
networks:
  back:
    enable_ipv6: 'true'
    driver_opts:
      com.docker.network.bridge.name: br-back
      com.docker.network.driver.mtu: 1400
    ipam:
      config:
        - {subnet: 'fd00:9::/64', gateway: 'fd00:9::1'}
        - {subnet: 10.9.0.0/24}
")
    .await
    .unwrap();
    let back = resource(&d, "network-back");
    assert_eq!(back["enable-ipv6"], true, "{back:#}");
    assert_eq!(back["subnet"], "10.9.0.0/24");
    assert_eq!(back["ipv6-subnet"], "fd00:9::/64");
    assert_eq!(back["ipv6-gateway"], "fd00:9::1");
    assert_eq!(
        back["driver-opts"],
        json!({"com.docker.network.bridge.name": "br-back", "com.docker.network.driver.mtu": "1400"})
    );
    let web = resource(&d, "web");
    assert_eq!(web["networks"][0]["ipv6-address"], "fd00:9::5", "{web:#}");
    assert_eq!(web["networks"][0]["ipv4-address"], "10.9.0.5");
}

#[tokio::test]
async fn what_docker_cannot_honour_of_ipv6_is_refused_by_name() {
    for (networks, service, words) in [
        (
            "back: {ipam: {config: [{subnet: 10.9.0.0/24}, {subnet: 10.8.0.0/24}]}}",
            "",
            "networks.back.ipam.config: one address range of each family",
        ),
        ("back: {enable_ipv6: true}", "", "needs ipv6-subnet"),
        (
            "back: {ipam: {config: [{subnet: 'fd00:9::/64'}]}}",
            "",
            "needs enable-ipv6: true",
        ),
        (
            "back: {ipam: {config: [{subnet: 10.9.0.0/24}]}}",
            "{ipv6_address: 'fd00:9::5'}",
            "declared without IPv6",
        ),
        (
            "back: {enable_ipv6: true, ipam: {config: [{subnet: 'fd00:9::/64'}]}}",
            "{ipv6_address: 'fd00:8::5'}",
            "not in ipv6-subnet fd00:9::/64",
        ),
    ] {
        let joins = if service.is_empty() {
            "[back]".to_owned()
        } else {
            format!("{{back: {service}}}")
        };
        let compose = format!(
            "services:\n  web:\n    image: reg.test/busybox:stable\n    networks: {joins}\nnetworks:\n  {networks}\n"
        );
        let p = run(&compose)
            .await
            .err()
            .unwrap_or_else(|| panic!("{networks}: imported"));
        refused(&p, words);
    }
}

#[tokio::test]
async fn platform_is_imported_and_one_a_node_cannot_run_is_refused_by_name() {
    let d =
        run("services:\n  web:\n    image: reg.test/busybox:stable\n    platform: linux/arm64\n")
            .await
            .unwrap();
    assert_eq!(resource(&d, "web")["platform"], "linux/arm64");
    for (platform, words) in [
        ("windows/amd64", "a node runs Linux containers alone"),
        ("Linux/AMD64", "is not a platform"),
        ("linux", "is not a platform"),
    ] {
        let p = run(&format!(
            "services:\n  web:\n    image: reg.test/busybox:stable\n    platform: {platform}\n"
        ))
        .await
        .err()
        .unwrap_or_else(|| panic!("{platform}: imported"));
        refused(&p, words);
    }
}

/// The ids of the containers in the order the declaration names them.
fn order(d: &Value) -> Vec<String> {
    d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["type"] == "container")
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn network_mode_service_and_container_name_the_peers_container_declared_first() {
    // Names that sort before their peer: the peer still comes first.
    let d = run("services:
  app:
    image: reg.test/busybox:stable
    network_mode: service:vpn
  admin:
    image: reg.test/busybox:stable
    network_mode: container:tunnel
  vpn:
    image: reg.test/busybox:stable
    container_name: tunnel
")
    .await
    .unwrap();
    assert_eq!(resource(&d, "app")["network"], "container:tunnel");
    assert_eq!(resource(&d, "admin")["network"], "container:tunnel");
    let ids = order(&d);
    assert_eq!(ids.last().map(String::as_str), Some("app"), "{ids:?}");
    assert_eq!(ids.first().map(String::as_str), Some("vpn"), "{ids:?}");
    // No depends-on written: the peer is an implicit one.
    assert!(resource(&d, "app").get("depends-on").is_none(), "{d:#}");

    let d = run("services:
  app:
    image: reg.test/busybox:stable
    network_mode: service:vpn
  vpn:
    image: reg.test/busybox:stable
")
    .await
    .unwrap();
    assert_eq!(resource(&d, "app")["network"], "container:p-vpn-1");
    assert_eq!(order(&d), ["vpn", "app"]);
}

#[tokio::test]
async fn a_peer_the_project_does_not_run_or_cannot_name_is_refused_naming_the_fix() {
    let p = run("services:
  a:
    image: reg.test/busybox:stable
    network_mode: service:nowhere
  b:
    image: reg.test/busybox:stable
    network_mode: container:elsewhere
  c:
    image: reg.test/busybox:stable
    network_mode: service:c
  d:
    image: reg.test/busybox:stable
    network_mode: service:many
  many:
    image: reg.test/busybox:stable
    deploy: {replicas: 2}
  e:
    image: reg.test/busybox:stable
    network_mode: service:many
    ports: ['8080:80']
")
    .await
    .unwrap_err();
    refused(
        &p,
        "a: network_mode: \"service:nowhere\": \"nowhere\" is not a service of this project",
    );
    refused(
        &p,
        "b: network_mode: \"container:elsewhere\": no container of this project has that name",
    );
    refused(&p, "c: network_mode: \"service:c\" is this service itself");
    refused(
        &p,
        "d: network_mode: \"service:many\": many runs 2 replicas, so which one's network this shares is ambiguous: give many one replica",
    );
}

#[tokio::test]
async fn a_cycle_through_network_mode_is_refused() {
    let p = run("services:
  a:
    image: reg.test/busybox:stable
    network_mode: service:b
  b:
    image: reg.test/busybox:stable
    depends_on: [a]
")
    .await
    .unwrap_err();
    refused(&p, "a cycle among a, b");
}

#[tokio::test]
async fn ports_beside_a_shared_network_are_refused_by_the_check_of_the_declaration_made() {
    let p = run("services:
  vpn:
    image: reg.test/busybox:stable
  app:
    image: reg.test/busybox:stable
    network_mode: service:vpn
    ports: ['8080:80']
")
    .await
    .unwrap_err();
    refused(
        &p,
        "app: ports: ports cannot be set with network \"container:p-vpn-1\"",
    );
}
