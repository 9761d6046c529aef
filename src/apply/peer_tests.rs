//! A container sharing its peer's network namespace (`network:
//! "container:NAME"`), against the scripted runtime, which keeps the
//! peer's id as Docker does: the peer is made and started first, a peer
//! that failed leaves its follower not made, and a peer made anew (in
//! this apply or by anyone) makes its follower anew after it. The same
//! is tested on a real Docker in `tests/network_peer_node.rs`.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::runtime::{ContainerRuntime, RuntimeView};

fn rig() -> Rig {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    r
}

fn vpn(env: &str) -> Value {
    json!({"id": "vpn", "type": "container", "name": "vpn", "image": img(1),
           "env": {"CONF": env}})
}

fn follower(id: &str) -> Value {
    json!({"id": id, "type": "container", "name": id, "image": img(1),
           "network": "container:vpn"})
}

/// The peer id `name` was created with (`container:<id>`).
fn joined(r: &Rig, name: &str) -> String {
    r.fake.spec_of(name).unwrap().network.unwrap()
}

async fn id_of(r: &Rig, name: &str) -> String {
    r.fake.inspect(name).await.unwrap().unwrap().id
}

#[tokio::test]
async fn the_peer_is_started_before_its_follower_which_joins_it_by_id() {
    let r = rig();
    // Slow to start, and in one batch with its follower.
    r.fake.start_delay("vpn", Duration::from_millis(200));
    let report = r.apply(json!([vpn("a"), follower("torrent")])).await;
    assert!(report.ok, "{report}");
    let calls = r.fake.calls();
    let call = |c: &Call| calls.iter().position(|x| x == c).unwrap();
    assert!(call(&Call::Start("vpn".into())) < call(&Call::Create("torrent".into())));
    assert_eq!(
        joined(&r, "torrent"),
        format!("container:{}", id_of(&r, "vpn").await)
    );
    assert!(r.fake.is_running("torrent"));
    // Nothing moved: nothing done.
    let again = r.apply(json!([vpn("a"), follower("torrent")])).await;
    assert_eq!(
        actions(&again),
        pairs(&[("vpn", "unchanged"), ("torrent", "unchanged")])
    );
}

#[tokio::test]
async fn a_recreated_peer_recreates_its_followers_after_it() {
    let r = rig();
    let first = r
        .apply(json!([
            vpn("a"),
            follower("torrent"),
            follower("web"),
            service("other", &img(1))
        ]))
        .await;
    assert!(first.ok, "{first}");
    let before = r.fake.calls().len();
    let next = json!([
        vpn("b"),
        follower("torrent"),
        follower("web"),
        service("other", &img(1))
    ]);
    // The preview says it, from the same decisions.
    let preview = r.applier().preview(&decl(next.clone())).await;
    assert_eq!(
        preview.line("torrent").unwrap().reason.as_deref(),
        Some("its network peer vpn is recreated (before it)")
    );
    let report = r.apply(next).await;
    assert!(report.ok, "{report}");
    assert_eq!(
        actions(&report),
        pairs(&[
            ("vpn", "recreated"),
            ("torrent", "recreated"),
            ("web", "recreated"),
            ("other", "unchanged")
        ])
    );
    assert_eq!(reason(&report, "vpn"), "env changed");
    assert_eq!(
        reason(&report, "web"),
        "its network peer vpn is recreated (before it)"
    );
    let calls = r.fake.calls()[before..].to_vec();
    let call = |c: &Call| calls.iter().position(|x| x == c).unwrap();
    assert!(call(&Call::Start("vpn".into())) < call(&Call::Create("torrent".into())));
    let peer = format!("container:{}", id_of(&r, "vpn").await);
    assert_eq!(joined(&r, "torrent"), peer);
    assert_eq!(joined(&r, "web"), peer);
    assert!(r.fake.is_running("torrent") && r.fake.is_running("web"));
}

#[tokio::test]
async fn a_peer_made_anew_by_someone_else_recreates_its_follower() {
    let r = rig();
    let resources = json!([vpn("a"), follower("torrent")]);
    assert!(r.apply(resources.clone()).await.ok);
    // Someone removes the peer and makes it again as it was: same
    // labels, a new id. The follower's namespace is gone.
    let spec = r.fake.spec_of("vpn").unwrap();
    r.fake.stop("vpn").await.unwrap();
    ContainerRuntime::remove(&r.fake, "vpn").await.unwrap();
    r.fake.add_container(spec, true);
    let report = r.apply(resources).await;
    assert!(report.ok, "{report}");
    assert_eq!(
        actions(&report),
        pairs(&[("vpn", "unchanged"), ("torrent", "recreated")])
    );
    assert!(
        reason(&report, "torrent").starts_with("its network peer vpn was recreated"),
        "{report}"
    );
    assert_eq!(
        joined(&r, "torrent"),
        format!("container:{}", id_of(&r, "vpn").await)
    );
}

#[tokio::test]
async fn a_peer_that_failed_leaves_its_follower_not_made() {
    let r = rig();
    r.fake.fail_start("vpn");
    let report = r
        .apply(json!([
            vpn("a"),
            follower("torrent"),
            service("other", &img(1))
        ]))
        .await;
    assert!(!report.ok, "{report}");
    assert_eq!(
        actions(&report),
        pairs(&[
            ("vpn", "failed"),
            ("torrent", "failed"),
            ("other", "created")
        ])
    );
    assert_eq!(
        reason(&report, "torrent"),
        "network peer vpn: vpn failed, so this was not started"
    );
    assert_eq!(r.count(&Call::Create("torrent".into())), 0);
}
