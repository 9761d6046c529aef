//! A container's `network: "container:NAME"`: read into the model, the
//! peer checked across the declaration, and the fields Docker refuses
//! beside it named.
#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::tests::{accept, assert_problem, refuse, service};
use super::types::ContainerName;
use super::Network;

fn follower(id: &str, name: &str, peer: &str) -> serde_json::Value {
    let mut c = service(id, name);
    c["network"] = json!(format!("container:{peer}"));
    c
}

#[test]
fn a_follower_shares_its_peers_network_and_reads_back_the_same() {
    let d = accept(json!([
        service("vpn", "app-vpn-1"),
        follower("torrent", "app-torrent-1", "app-vpn-1"),
    ]));
    let torrent = d.container("torrent").unwrap();
    assert_eq!(
        torrent.network,
        Some(Network::Container(
            ContainerName::try_from("app-vpn-1").unwrap()
        ))
    );
    let (peer, _) = d.peer_of(torrent).unwrap();
    assert_eq!(peer.id.as_str(), "vpn");
    let written = serde_json::to_value(&d).unwrap();
    assert_eq!(written["resources"][1]["network"], "container:app-vpn-1");
    let again = super::parse(&serde_json::to_vec(&d).unwrap()).unwrap();
    assert_eq!(again, d);
}

#[test]
fn a_peer_that_is_not_a_declared_service_before_it_is_refused_naming_the_fix() {
    let mut once = service("migrate", "migrate");
    once["run-once"] = json!(true);
    let problems = refuse(json!([
        follower("a", "aa", "nowhere"),
        follower("b", "bb", "bb"),
        once,
        follower("c", "cc", "migrate"),
        follower("d", "dd", "later"),
        service("later", "later"),
        service("vpn", "vpn"),
        follower("e", "ee", "vpn"),
        follower("f", "ff", "ee"),
    ]));
    assert_problem(
        &problems,
        Some("a"),
        Some("network"),
        "no container named \"nowhere\" in this declaration",
    );
    assert_problem(
        &problems,
        Some("b"),
        Some("network"),
        "this container itself",
    );
    assert_problem(
        &problems,
        Some("c"),
        Some("network"),
        "migrate (migrate) is a run-once step",
    );
    assert_problem(
        &problems,
        Some("d"),
        Some("network"),
        "later (later) is declared after this container: declare it first",
    );
    assert_problem(
        &problems,
        Some("f"),
        Some("network"),
        "ee (e) shares the network of vpn itself: name \"container:vpn\" here",
    );
    assert_eq!(problems.len(), 5, "{problems:?}");
}

#[test]
fn what_docker_refuses_beside_a_shared_network_is_named_each() {
    let mut c = follower("web", "web", "vpn");
    c["ports"] = json!([{"host": 8080, "container": 80}]);
    c["dns"] = json!(["9.9.9.9"]);
    c["hostname"] = json!("web");
    c["extra-hosts"] = json!({"db.local": "10.0.0.5"});
    c["networks"] = json!([{"name": "back"}]);
    let problems = refuse(json!([service("vpn", "vpn"), c]));
    for (field, words) in [
        (
            "ports",
            "ports cannot be set with network \"container:vpn\"",
        ),
        ("dns", "dns cannot be set with network \"container:vpn\""),
        (
            "hostname",
            "hostname cannot be set with network \"container:vpn\"",
        ),
        ("extra-hosts", "set it on vpn instead"),
        ("networks", "network and networks are exclusive"),
    ] {
        assert_problem(&problems, Some("web"), Some(field), words);
    }
    assert_eq!(problems.len(), 5, "{problems:?}");
}

#[test]
fn a_bad_peer_name_and_compose_service_form_are_refused() {
    let mut compose_form = service("b", "b");
    compose_form["network"] = json!("service:vpn");
    let problems = refuse(json!([
        service("vpn", "vpn"),
        follower("a", "a", ""),
        compose_form,
    ]));
    assert_problem(
        &problems,
        Some("a"),
        Some("network"),
        "container:NAME names a container of this declaration by its name",
    );
    assert_problem(
        &problems,
        Some("b"),
        Some("network"),
        "service:NAME is compose's",
    );
}

#[test]
fn a_step_may_share_a_services_network() {
    let mut step = follower("backup", "backup", "vpn");
    step["schedule"] = json!("0 3 * * *");
    step["timeout"] = json!(600);
    let d = accept(json!([service("vpn", "vpn"), step]));
    assert!(d.container("backup").unwrap().network.is_some());
}
