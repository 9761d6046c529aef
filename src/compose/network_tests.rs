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
