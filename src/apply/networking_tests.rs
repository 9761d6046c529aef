//! Networks and volumes made before the containers that use them, made
//! again when their settings change, and a volume never changed or
//! removed (CONTRACT "Compose"), against the fake's model of them.

#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};

use super::*;
use crate::runtime::{NetworkInfo, VolumeInfo};

fn network(id: &str, name: &str, subnet: &str) -> Value {
    json!({"id": id, "type": "network", "name": name, "subnet": subnet})
}

fn volume(id: &str, name: &str) -> Value {
    json!({"id": id, "type": "volume", "name": name})
}

/// A service on `networks` (name, aliases, address).
fn joining(id: &str, networks: Value) -> Value {
    json!({"id": id, "type": "container", "name": id, "image": img(1), "networks": networks})
}

/// Apply network `back` (`app_back`, of `subnet`) and `web`: the report,
/// asserted ok.
async fn apply_back(r: &Rig, subnet: &str, web: &Value) -> ApplyReport {
    let report = r
        .apply(json!([network("back", "app_back", subnet), web]))
        .await;
    assert!(report.ok, "{report}");
    report
}

fn rig() -> Rig {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    r
}

#[tokio::test]
async fn networks_and_volumes_are_made_first_and_a_second_apply_changes_nothing() {
    let r = rig();
    let mut web = joining("web", json!([{"name": "app_back", "aliases": ["www"]}]));
    web["mounts"] = json!([{"source": "app_data", "target": "/data"}]);
    // Declared after the container that uses them: made before it anyway.
    let resources = json!([
        web,
        network("back", "app_back", "10.40.0.0/24"),
        volume("data", "app_data")
    ]);
    let first = r.apply(resources.clone()).await;
    assert!(first.ok, "{first}");
    assert_eq!(
        actions(&first),
        pairs(&[("data", "created"), ("back", "created"), ("web", "created")])
    );
    let calls = r.fake.calls();
    let made = |c: &Call| calls.iter().position(|x| x == c).expect("called");
    assert!(made(&Call::CreateNetwork("app_back".into())) < made(&Call::Create("web".into())));
    assert!(made(&Call::CreateVolume("app_data".into())) < made(&Call::Create("web".into())));
    assert_eq!(r.fake.attachments_of("web")[0].aliases, ["www"]);

    let second = r.apply(resources).await;
    assert!(second.ok, "{second}");
    assert_eq!(
        actions(&second),
        pairs(&[
            ("data", "unchanged"),
            ("back", "unchanged"),
            ("web", "unchanged")
        ])
    );
    assert!(!second.changed, "{second}");
}

#[tokio::test]
async fn a_changed_subnet_makes_the_network_again_with_its_containers_attached_again() {
    let r = rig();
    let web = joining(
        "web",
        json!([{"name": "app_back", "aliases": ["www"], "ipv4-address": "10.40.0.5"}]),
    );
    apply_back(&r, "10.40.0.0/24", &web).await;

    let moved = joining(
        "web",
        json!([{"name": "app_back", "aliases": ["www"], "ipv4-address": "10.41.0.5"}]),
    );
    let second = apply_back(&r, "10.41.0.0/24", &moved).await;
    assert_eq!(second.line("back").unwrap().action.to_string(), "recreated");
    assert_eq!(
        reason(&second, "back"),
        "subnet changed; attached again: web"
    );
    assert_eq!(
        r.fake.networks()["app_back"].subnet.as_deref(),
        Some("10.41.0.0/24")
    );
    // The container's own change (its address) recreates it too.
    assert_eq!(reason(&second, "web"), "networks changed");
    assert_eq!(
        r.fake.attachments_of("web")[0]
            .ipv4_address
            .map(|a| a.to_string()),
        Some("10.41.0.5".to_string())
    );
}

#[tokio::test]
async fn a_network_made_by_hand_or_used_by_others_is_never_made_again() {
    let r = rig();
    r.fake.add_network(NetworkInfo {
        name: "by_hand".into(),
        driver: "bridge".into(),
        subnet: Some("10.50.0.0/24".into()),
        ..Default::default()
    });
    let web = joining("web", json!([{"name": "by_hand"}]));
    let report = r
        .apply(json!([network("hand", "by_hand", "10.51.0.0/24"), web]))
        .await;
    assert!(!report.ok);
    assert!(
        reason(&report, "hand").contains("not made by mesh-host"),
        "{report}"
    );
    // Its container is not made on a network that is not as declared.
    assert_eq!(report.line("web").unwrap().action.to_string(), "failed");
    assert!(
        reason(&report, "web").starts_with("network by_hand:"),
        "{report}"
    );
    assert_eq!(r.count(&Call::Create("web".into())), 0);
    assert_eq!(r.count(&Call::RemoveNetwork("by_hand".into())), 0);

    // One of ours that a foreign container joined is kept as it is.
    let r = rig();
    let first = r
        .apply(json!([network("back", "app_back", "10.40.0.0/24")]))
        .await;
    assert!(first.ok, "{first}");
    let mut stranger = managed("stranger", "x", &img(1));
    stranger.labels = Default::default();
    stranger.network = Some("app_back".into());
    r.fake.add_container(stranger, true);
    let second = r
        .apply(json!([network("back", "app_back", "10.42.0.0/24")]))
        .await;
    assert!(reason(&second, "back").contains("stranger"), "{second}");
    assert_eq!(r.count(&Call::RemoveNetwork("app_back".into())), 0);

    // Left out of the declaration: kept while the stranger uses it, then removed.
    let third = r.apply(json!([])).await;
    assert_eq!(third.line("back").unwrap().action.to_string(), "kept");
    assert!(
        reason(&third, "back").contains("stranger still uses it"),
        "{third}"
    );
    r.fake.remove("stranger").await.unwrap();
    let fourth = r.apply(json!([])).await;
    assert_eq!(actions(&fourth), pairs(&[("back", "removed")]));
    assert!(r.fake.networks().is_empty());
}

#[tokio::test]
async fn a_volume_is_never_changed_nor_removed_and_one_made_otherwise_is_refused() {
    let r = rig();
    r.fake.add_volume(VolumeInfo {
        name: "nfs_data".into(),
        driver: "local".into(),
        driver_opts: [("type".to_string(), "nfs".to_string())].into(),
        ..Default::default()
    });
    let mut web = service("web", &img(1));
    web["mounts"] = json!([{"source": "nfs_data", "target": "/data"}]);
    let report = r
        .apply(json!([volume("data", "nfs_data"), web.clone()]))
        .await;
    assert!(!report.ok);
    assert!(
        reason(&report, "data")
            .contains("exists with driver-opts {\"type\":\"nfs\"} (declared {})"),
        "{report}"
    );
    assert!(
        reason(&report, "web").starts_with("volume nfs_data:"),
        "{report}"
    );
    assert_eq!(r.count(&Call::CreateVolume("nfs_data".into())), 0);

    let r = rig();
    let first = r.apply(json!([volume("data", "app_data")])).await;
    assert_eq!(actions(&first), pairs(&[("data", "created")]));
    let gone = r.apply(json!([])).await;
    assert!(gone.ok, "{gone}");
    assert_eq!(actions(&gone), pairs(&[("data", "kept")]));
    assert!(
        reason(&gone, "data").contains("docker volume rm app_data"),
        "{gone}"
    );
    assert!(!gone.changed, "{gone}");
    assert_eq!(r.fake.volumes(), ["app_data"]);
    // Said once.
    assert!(r.apply(json!([])).await.lines.is_empty());
}

#[tokio::test]
async fn a_preview_says_what_networks_and_volumes_would_become_and_makes_nothing() {
    let r = rig();
    let resources = json!([
        network("back", "app_back", "10.40.0.0/24"),
        volume("data", "app_data")
    ]);
    let preview = r.applier().preview(&decl(resources.clone())).await;
    assert_eq!(
        actions(&preview),
        pairs(&[("data", "created"), ("back", "created")])
    );
    assert!(r.fake.networks().is_empty());
    assert!(r.fake.volumes().is_empty());
    assert!(r.apply(resources).await.ok);
    let changed = json!([network("back", "app_back", "10.41.0.0/24")]);
    let preview = r.applier().preview(&decl(changed)).await;
    assert_eq!(
        actions(&preview),
        pairs(&[("back", "recreated"), ("data", "kept")])
    );
    assert_eq!(
        r.fake.networks()["app_back"].subnet.as_deref(),
        Some("10.40.0.0/24")
    );
}

#[tokio::test]
async fn the_reconcile_leaves_a_service_that_exited_for_good_and_an_apply_starts_it() {
    let r = rig();
    let node_file = r.dir.path().join("etc/mesh-host/declaration.json");
    let mut once = service("once", &img(1));
    once["restart"] = json!("no");
    let mut failing = service("retry", &img(1));
    failing["restart"] = json!("on-failure");
    let resources = json!([once, failing, service("kept", &img(1))]);
    std::fs::create_dir_all(node_file.parent().unwrap()).unwrap();
    std::fs::write(
        &node_file,
        serde_json::to_vec(&json!({"declaration": 1, "resources": resources})).unwrap(),
    )
    .unwrap();
    let (_, first) = r
        .applier()
        .apply_node_declaration(&node_file, false)
        .await
        .unwrap();
    assert!(first.ok, "{first}");
    for name in ["once", "retry", "kept"] {
        r.fake.stop(name).await.unwrap();
    }
    let (_, reconciled) = r
        .applier()
        .apply_node_declaration(&node_file, true)
        .await
        .unwrap();
    assert_eq!(
        actions(&reconciled),
        pairs(&[
            ("once", "unchanged"),
            ("retry", "unchanged"),
            ("kept", "started")
        ])
    );
    assert_eq!(
        reason(&reconciled, "once"),
        "not running; restart: no leaves it so until an apply"
    );
    let (_, applied) = r
        .applier()
        .apply_node_declaration(&node_file, false)
        .await
        .unwrap();
    assert_eq!(
        actions(&applied),
        pairs(&[
            ("once", "started"),
            ("retry", "started"),
            ("kept", "unchanged")
        ])
    );
    // The policy reaches the runtime.
    let spec = r.fake.spec_of("retry").unwrap();
    assert_eq!(spec.restart, crate::runtime::RestartPolicy::OnFailure);
}

#[tokio::test]
async fn a_service_waits_for_a_healthy_dependency_and_fails_alone_on_an_unhealthy_one() {
    let r = rig();
    let mut db = service("db", &img(1));
    db["health"] = json!({"command": ["true"], "interval": 1, "retries": 1});
    let mut web = service("web", &img(1));
    web["depends-on"] = json!([{"id": "db", "condition": "healthy"}]);
    r.fake
        .set_health("db", "healthy", "ok", std::time::Duration::from_millis(300));
    let report = r
        .apply(json!([db.clone(), web.clone(), service("other", &img(1))]))
        .await;
    assert!(report.ok, "{report}");
    let calls = r.fake.calls();
    let at = |c: &Call| calls.iter().position(|x| x == c).unwrap();
    // db was asked about (its health) after its start and before web's create.
    let db_started = at(&Call::Start("db".into()));
    let web_created = at(&Call::Create("web".into()));
    assert!(
        calls[db_started..web_created].contains(&Call::Inspect("db".into())),
        "{calls:?}"
    );

    // Running and unchanged: nothing waits.
    r.fake.clear_calls();
    let again = r
        .apply(json!([db.clone(), web.clone(), service("other", &img(1))]))
        .await;
    assert!(again.ok, "{again}");
    assert_eq!(r.count(&Call::Inspect("db".into())), 0);

    // Unhealthy: web fails, naming why; the rest goes on.
    let r = rig();
    r.fake.set_health(
        "db",
        "unhealthy",
        "connection refused",
        std::time::Duration::ZERO,
    );
    let report = r.apply(json!([db, web, service("other", &img(1))])).await;
    assert!(!report.ok);
    assert_eq!(
        reason(&report, "web"),
        "depends-on db: db is unhealthy: connection refused"
    );
    assert_eq!(report.line("other").unwrap().action.to_string(), "created");
    assert_eq!(r.count(&Call::Create("web".into())), 0);
}

#[tokio::test]
async fn a_remake_cut_short_is_finished_by_the_next_apply() {
    let r = rig();
    let web = joining("web", json!([{"name": "app_back", "aliases": ["www"]}]));
    let first = r
        .apply(json!([
            network("back", "app_back", "10.40.0.0/24"),
            web.clone()
        ]))
        .await;
    assert!(first.ok, "{first}");
    // As an apply killed between detaching web and attaching it again
    // leaves the node: the record written, web detached, the network
    // gone (or made again: the second case below).
    r.store
        .save(
            super::super::records::REMAKES,
            &BTreeMap::from([("app_back".to_string(), vec!["web".to_string()])]),
        )
        .unwrap();
    r.fake.disconnect("web", "app_back").await.unwrap();
    r.fake.remove_network("app_back").await.unwrap();
    assert!(r.fake.attachments_of("web").is_empty());
    let next = r
        .apply(json!([
            network("back", "app_back", "10.41.0.0/24"),
            web.clone()
        ]))
        .await;
    assert!(next.ok, "{next}");
    assert_eq!(
        reason(&next, "back"),
        "network app_back; attached again after an interrupted remake: web"
    );
    assert_eq!(r.fake.attachments_of("web")[0].aliases, ["www"]);
    let left: Option<BTreeMap<String, Vec<String>>> =
        r.store.load(super::super::records::REMAKES).unwrap();
    assert_eq!(left, Some(BTreeMap::new()), "the record is gone");

    // Cut after the network was made again: it is as declared, web is not
    // on it.
    r.store
        .save(
            super::super::records::REMAKES,
            &BTreeMap::from([("app_back".to_string(), vec!["web".to_string()])]),
        )
        .unwrap();
    r.fake.disconnect("web", "app_back").await.unwrap();
    let again = apply_back(&r, "10.41.0.0/24", &web).await;
    assert_eq!(again.line("back").unwrap().action.to_string(), "updated");
    assert_eq!(r.fake.attachments_of("web").len(), 1);
}

#[tokio::test]
async fn a_stopped_container_is_detached_and_attached_again_with_the_network() {
    let r = rig();
    let web = joining("web", json!([{"name": "app_back"}]));
    let first = r
        .apply(json!([
            network("back", "app_back", "10.40.0.0/24"),
            web.clone()
        ]))
        .await;
    assert!(first.ok, "{first}");
    r.fake.stop("web").await.unwrap();
    r.fake.clear_calls();
    let next = apply_back(&r, "10.41.0.0/24", &web).await;
    // The runtime lists no stopped container on a network: web is found
    // in the declaration.
    assert_eq!(reason(&next, "back"), "subnet changed; attached again: web");
    assert_eq!(
        r.count(&Call::Disconnect("web".into(), "app_back".into())),
        1
    );
    assert_eq!(r.count(&Call::Connect("web".into(), "app_back".into())), 1);
    assert_eq!(next.line("web").unwrap().action.to_string(), "started");
}
