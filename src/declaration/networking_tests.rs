//! Networks, volumes, a container's `networks` and `restart`: read into
//! the model, and every problem named.
#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::networking::Restart;
use super::tests::{accept, assert_problem, refuse, service};
use super::{lint, ResourceKind};

fn joined(id: &str, name: &str, networks: serde_json::Value) -> serde_json::Value {
    let mut c = service(id, name);
    c["networks"] = networks;
    c
}

#[test]
fn networks_volumes_and_joins_are_read_with_their_defaults() {
    let d = accept(json!([
        {"id": "back", "type": "network", "name": "app_back", "subnet": "10.30.0.0/24",
         "gateway": "10.30.0.1", "labels": {"tier": "back"}},
        {"id": "front", "type": "network", "name": "app_front", "internal": true},
        {"id": "data", "type": "volume", "name": "app_data",
         "driver-opts": {"type": "tmpfs", "device": "tmpfs"}},
        joined("db", "db", json!([
            {"name": "app_back", "aliases": ["database", "db.local", "db_primary"], "ipv4-address": "10.30.0.9"},
            {"name": "app_front"}
        ])),
    ]));
    let ResourceKind::Network(back) = &d.resources[0].kind else {
        panic!("not a network")
    };
    assert_eq!(back.driver, "bridge");
    assert_eq!(back.subnet.unwrap().to_string(), "10.30.0.0/24");
    let ResourceKind::Volume(data) = &d.resources[2].kind else {
        panic!("not a volume")
    };
    assert_eq!(data.driver, "local");
    assert_eq!(data.driver_opts["device"], "tmpfs");
    let db = d.container("db").unwrap();
    assert_eq!(db.networks.len(), 2);
    assert_eq!(
        db.networks[0].aliases,
        ["database", "db.local", "db_primary"]
    );
    assert_eq!(
        db.networks[0].ipv4_address.unwrap().to_string(),
        "10.30.0.9"
    );
    // The canonical form reads back to the same model.
    let again = super::parse(&serde_json::to_vec(&d).unwrap()).unwrap();
    assert_eq!(again, d);
    assert!(lint(&d).is_empty(), "{:?}", lint(&d));
}

#[test]
fn every_network_problem_is_named() {
    let problems = refuse(json!([
        {"id": "a", "type": "network", "name": "bridge"},
        {"id": "b", "type": "network", "name": "bb", "subnet": "10.0.0.1/24", "gateway": "nope"},
        {"id": "c", "type": "network", "name": "cc", "subnet": "10.0.0.0/24", "gateway": "10.0.1.1",
         "driver": "my driver", "mtu": 1400},
        {"id": "d", "type": "network", "name": "dd", "gateway": "10.0.0.1"},
        {"id": "e", "type": "network", "name": "cc"},
    ]));
    assert_problem(
        &problems,
        Some("a"),
        Some("name"),
        "the runtime's own network",
    );
    assert_problem(&problems, Some("b"), Some("subnet"), "host bits set");
    assert_problem(&problems, Some("b"), Some("gateway"), "not an IP address");
    assert_problem(
        &problems,
        Some("c"),
        Some("gateway"),
        "not in subnet 10.0.0.0/24",
    );
    assert_problem(&problems, Some("c"), Some("driver"), "not a driver name");
    assert_problem(&problems, Some("c"), Some("mtu"), "unknown field");
    assert_problem(&problems, Some("d"), Some("gateway"), "needs a subnet");
    assert_problem(
        &problems,
        Some("e"),
        Some("name"),
        "already the name of network c",
    );
    assert_eq!(problems.len(), 8, "{problems:#?}");
}

#[test]
fn every_volume_and_join_problem_is_named() {
    let mut both = joined("both", "both", json!([{"name": "nn"}]));
    both["network"] = json!("nn");
    let mut step = service("step", "step");
    step["schedule"] = json!("0 3 * * *");
    step["restart"] = json!("always");
    let mut bad_restart = service("r", "rr");
    bad_restart["restart"] = json!("never");
    let problems = refuse(json!([
        {"id": "v", "type": "volume", "name": "vv", "driver-opts": {"": "x"}, "labels": {"mesh-host.x": "y"}},
        {"id": "w", "type": "volume", "name": "vv"},
        {"id": "n", "type": "network", "name": "nn", "subnet": "10.9.0.0/24"},
        {"id": "plain", "type": "network", "name": "plain"},
        joined("j", "jj", json!([
            {"name": "host"},
            {"name": "nn", "aliases": ["no spaces"]},
            {"name": "nn"},
            {"name": "xx", "ipv4-address": "300.1.1.1", "mac": "x"}
        ])),
        // Valid alone: what only the second pass sees.
        joined("k", "kk", json!([
            {"name": "nn", "ipv4-address": "10.8.0.1"},
            {"name": "plain", "ipv4-address": "10.1.1.1"}
        ])),
        both,
        step,
        bad_restart,
    ]));
    assert_problem(
        &problems,
        Some("v"),
        Some("driver-opts[\"\"]"),
        "must not be empty",
    );
    assert_problem(
        &problems,
        Some("v"),
        Some("labels[\"mesh-host.x\"]"),
        "mesh-host's own",
    );
    assert_problem(
        &problems,
        Some("w"),
        Some("name"),
        "already the name of volume v",
    );
    assert_problem(
        &problems,
        Some("j"),
        Some("networks[0].name"),
        "give it as \"network\"",
    );
    assert_problem(
        &problems,
        Some("j"),
        Some("networks[1].aliases[0]"),
        "not a network alias",
    );
    assert_problem(
        &problems,
        Some("k"),
        Some("networks[0].ipv4-address"),
        "not in subnet 10.9.0.0/24",
    );
    assert_problem(
        &problems,
        Some("j"),
        Some("networks[2].name"),
        "already joined at networks[1].name",
    );
    assert_problem(
        &problems,
        Some("k"),
        Some("networks[1].ipv4-address"),
        "without a subnet",
    );
    assert_problem(
        &problems,
        Some("j"),
        Some("networks[3].ipv4-address"),
        "not an IPv4 address",
    );
    assert_problem(
        &problems,
        Some("j"),
        Some("networks[3].mac"),
        "unknown field",
    );
    assert_problem(&problems, Some("both"), Some("networks"), "exclusive");
    assert_problem(
        &problems,
        Some("step"),
        Some("restart"),
        "applies to a service",
    );
    assert_problem(
        &problems,
        Some("r"),
        Some("restart"),
        "not a restart policy",
    );
    assert_eq!(problems.len(), 13, "{problems:#?}");
}

#[test]
fn ipv6_and_driver_opts_are_read_and_written_back() {
    let d = accept(json!([
        {"id": "back", "type": "network", "name": "app_back", "subnet": "10.31.0.0/24",
         "enable-ipv6": true, "ipv6-subnet": "fd00:31::/64", "ipv6-gateway": "fd00:31::1",
         "driver-opts": {"com.docker.network.driver.mtu": "1400"}},
        joined("db", "db", json!([
            {"name": "app_back", "ipv4-address": "10.31.0.9", "ipv6-address": "fd00:31::9"}
        ])),
    ]));
    let ResourceKind::Network(back) = &d.resources[0].kind else {
        panic!("not a network")
    };
    assert!(back.enable_ipv6);
    assert_eq!(back.ipv6_subnet.unwrap().to_string(), "fd00:31::/64");
    assert_eq!(back.ipv6_gateway.unwrap().to_string(), "fd00:31::1");
    assert_eq!(back.driver_opts["com.docker.network.driver.mtu"], "1400");
    let db = d.container("db").unwrap();
    assert_eq!(
        db.networks[0].ipv6_address.unwrap().to_string(),
        "fd00:31::9"
    );
    let again = super::parse(&serde_json::to_vec(&d).unwrap()).unwrap();
    assert_eq!(again, d);
    // A network without them is written as before (its canonical form,
    // hence its containers' identities, unchanged).
    let plain = accept(json!([{"id": "n", "type": "network", "name": "plain"}]));
    let written = serde_json::to_string(&plain).unwrap();
    assert!(
        !written.contains("ipv6") && !written.contains("driver-opts"),
        "{written}"
    );
}

#[test]
fn every_ipv6_problem_is_named() {
    let problems = refuse(json!([
        {"id": "a", "type": "network", "name": "aa", "enable-ipv6": true},
        {"id": "b", "type": "network", "name": "bb", "ipv6-subnet": "fd00:1::/64"},
        {"id": "c", "type": "network", "name": "cc", "enable-ipv6": true,
         "ipv6-subnet": "10.0.0.0/24", "ipv6-gateway": "10.0.0.1"},
        {"id": "d", "type": "network", "name": "dd", "enable-ipv6": true,
         "ipv6-subnet": "fd00:4::/64", "ipv6-gateway": "fd00:5::1", "subnet": "fd00:6::/64",
         "driver-opts": {"": "x"}},
        {"id": "e", "type": "network", "name": "ee", "subnet": "10.7.0.0/24"},
        joined("w", "w", json!([
            {"name": "dd", "ipv6-address": "fd00:9::5"},
            {"name": "ee", "ipv6-address": "fd00:7::5"},
            {"name": "elsewhere", "ipv6-address": "10.0.0.1"}
        ])),
    ]));
    assert_problem(
        &problems,
        Some("a"),
        Some("enable-ipv6"),
        "needs ipv6-subnet",
    );
    assert_problem(
        &problems,
        Some("b"),
        Some("ipv6-subnet"),
        "needs enable-ipv6: true",
    );
    assert_problem(&problems, Some("c"), Some("ipv6-subnet"), "an IPv4 range");
    assert_problem(
        &problems,
        Some("c"),
        Some("ipv6-gateway"),
        "not an IPv6 address",
    );
    assert_problem(
        &problems,
        Some("d"),
        Some("ipv6-gateway"),
        "not in subnet fd00:4::/64",
    );
    assert_problem(&problems, Some("d"), Some("subnet"), "an IPv6 range");
    assert_problem(
        &problems,
        Some("d"),
        Some("driver-opts[\"\"]"),
        "must not be empty",
    );
    assert_problem(
        &problems,
        Some("w"),
        Some("networks[0].ipv6-address"),
        "not in ipv6-subnet fd00:4::/64 of network dd",
    );
    assert_problem(
        &problems,
        Some("w"),
        Some("networks[1].ipv6-address"),
        "declared without IPv6",
    );
    assert_problem(
        &problems,
        Some("w"),
        Some("networks[2].ipv6-address"),
        "not an IPv6 address",
    );
}

#[test]
fn restart_is_read_and_only_a_declared_one_is_written() {
    let mut once = service("once", "once");
    once["restart"] = json!("no");
    let d = accept(json!([once, service("plain", "plain")]));
    assert_eq!(
        d.container("once").unwrap().options.restart,
        Some(Restart::No)
    );
    assert_eq!(d.container("plain").unwrap().options.restart, None);
    let text = serde_json::to_string(&d).unwrap();
    assert_eq!(text.matches("\"restart\"").count(), 1, "{text}");
}

#[test]
fn check_warns_of_networks_and_volumes_no_one_declares() {
    let mut web = joined(
        "web",
        "web",
        json!([{"name": "made_by_hand"}, {"name": "declared"}]),
    );
    web["mounts"] = json!([
        {"source": "loose", "target": "/a"},
        {"source": "kept", "target": "/b"},
        {"source": "/srv", "target": "/c"}
    ]);
    let mut db = service("db", "db");
    db["network"] = json!("bridge");
    let d = accept(json!([
        {"id": "declared", "type": "network", "name": "declared"},
        {"id": "kept", "type": "volume", "name": "kept"},
        web,
        db,
    ]));
    let warnings: Vec<(String, &str)> = lint(&d).into_iter().map(|w| (w.message, w.lint)).collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].0.contains("\"made_by_hand\""), "{warnings:?}");
    assert_eq!(warnings[0].1, "undeclared-network");
    assert!(warnings[1].0.contains("\"loose\""), "{warnings:?}");
    assert_eq!(warnings[1].1, "undeclared-volume");
}

#[test]
fn depends_on_names_containers_declared_before_it() {
    let mut db = service("db", "db");
    db["health"] = json!({"command": ["true"]});
    let mut web = service("web", "web");
    web["depends-on"] = json!([{"id": "db", "condition": "healthy"}, {"id": "cache"}]);
    let d = accept(json!([db, service("cache", "cache"), web]));
    let deps = &d.container("web").unwrap().depends_on;
    assert_eq!(deps.len(), 2);
    assert_eq!(deps[0].condition, super::depends::Condition::Healthy);
    assert_eq!(deps[1].condition, super::depends::Condition::Started);
    // A run-once step depends on what it needs up before it runs.
    let mut db = service("db", "db");
    db["health"] = json!({"command": ["true"]});
    let mut migrate = service("migrate", "migrate");
    migrate["run-once"] = json!(true);
    migrate["depends-on"] = json!([{"id": "db", "condition": "healthy"}]);
    let d = accept(json!([db, migrate]));
    assert_eq!(d.container("migrate").unwrap().depends_on.len(), 1);

    let mut off = service("off", "off");
    off["health"] = json!("none");
    let mut once = service("once", "once");
    once["run-once"] = json!(true);
    let mut early = service("early", "early");
    early["depends-on"] = json!([{"id": "late"}]);
    let mut bad = service("bad", "bad");
    bad["depends-on"] = json!([
        {"id": "off", "condition": "healthy"},
        {"id": "once", "condition": "healthy"},
        {"id": "nowhere"},
        {"id": "bad"},
        {"id": "off", "condition": "ready"},
        {"id": "vol"}
    ]);
    let mut step = service("step", "step");
    step["schedule"] = json!("@daily");
    step["depends-on"] = json!([{"id": "off"}]);
    let problems = refuse(json!([
        {"id": "vol", "type": "volume", "name": "vol"},
        off, once, early, service("late", "late"), bad, step
    ]));
    assert_problem(
        &problems,
        Some("early"),
        Some("depends-on[0].id"),
        "declared after this container",
    );
    assert_problem(
        &problems,
        Some("bad"),
        Some("depends-on[4].condition"),
        "not a condition",
    );
    assert_problem(
        &problems,
        Some("step"),
        Some("depends-on"),
        "applies to a service or a run-once step: a scheduled step runs on its schedule",
    );
    // And the second pass's on the rest (the entry refused in pass one left out).
    assert_eq!(problems.len(), 8, "{problems:#?}");
    // With pass one clean, what pass two sees.
    let mut bad = service("bad", "bad");
    bad["depends-on"] = json!([
        {"id": "off", "condition": "healthy"},
        {"id": "once", "condition": "healthy"},
        {"id": "nowhere"},
        {"id": "bad"},
        {"id": "vol"}
    ]);
    let mut off = service("off", "off");
    off["health"] = json!("none");
    let mut once = service("once", "once");
    once["run-once"] = json!(true);
    let problems = refuse(json!([{"id": "vol", "type": "volume", "name": "vol"}, off, once, bad]));
    assert_problem(
        &problems,
        Some("bad"),
        Some("depends-on[0].id"),
        "health check disabled",
    );
    assert_problem(
        &problems,
        Some("bad"),
        Some("depends-on[1].id"),
        "run-once step",
    );
    assert_problem(
        &problems,
        Some("bad"),
        Some("depends-on[2].id"),
        "no container by that id",
    );
    assert_problem(
        &problems,
        Some("bad"),
        Some("depends-on[3].id"),
        "declared after this container",
    );
    assert_problem(
        &problems,
        Some("bad"),
        Some("depends-on[4].id"),
        "is a volume, not a container",
    );
    assert_eq!(problems.len(), 5, "{problems:#?}");
}
