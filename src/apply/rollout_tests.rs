//! Replacements gated on health (CONTRACT, "Updates and rollback"),
//! against the fake runtime's health checks.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::apply::rollouts;
use crate::runtime::{replaced_name, VolumeMount};

fn data_volume(r: &Rig, name: &str) -> String {
    let at_data: Vec<VolumeMount> = r
        .fake
        .volumes_of(name)
        .into_iter()
        .filter(|v| v.target == "/data")
        .collect();
    assert_eq!(at_data.len(), 1, "{name}: {at_data:?}");
    at_data[0].name.clone()
}

fn rig() -> Rig {
    let r = Rig::new();
    for n in [1, 2, 3] {
        r.fake.add_image(&img(n));
        r.fake.set_image_volumes(&img(n), &["/data"]);
    }
    r
}

/// `web` on image `n`, with a declared check and a short bound.
fn checked(n: u8) -> Value {
    let mut web = service("web", &img(n));
    web["health"] = json!({"command": ["true"], "interval": 1, "retries": 1});
    web["rollback-after"] = json!(2);
    web
}

#[tokio::test]
async fn a_healthy_replacement_goes_through_and_removes_the_old_container() {
    let r = rig();
    assert!(r.apply(json!([checked(1)])).await.ok);
    let volume = data_volume(&r, "web");
    r.fake
        .set_health("web", "healthy", "ok", Duration::from_millis(300));
    let report = r.apply(json!([checked(2)])).await;
    assert!(report.ok, "{report}");
    assert_eq!(actions(&report), pairs(&[("web", "recreated")]));
    assert!(
        reason(&report, "web").starts_with("image changed; healthy after"),
        "{report}"
    );
    assert_eq!(r.fake.spec_of("web").expect("web").image, img(2));
    assert!(!r.fake.container_names().contains(&replaced_name("web")));
    assert_eq!(data_volume(&r, "web"), volume);
    assert!(rollouts::in_flight(&r.store).expect("read").is_empty());
}

#[tokio::test]
async fn an_unhealthy_replacement_is_rolled_back_remembered_and_not_retried() {
    let r = rig();
    assert!(r.apply(json!([checked(1)])).await.ok);
    let volume = data_volume(&r, "web");
    r.fake.set_health(
        "web",
        "unhealthy",
        "boom\n\x1b[2Jcleared",
        Duration::from_millis(200),
    );
    let report = r.apply(json!([checked(2)])).await;
    assert!(!report.ok, "{report}");
    assert_eq!(actions(&report), pairs(&[("web", "failed")]));
    let why = reason(&report, "web");
    assert!(
        why.starts_with("rolled back: not healthy after ")
            && why.contains(": boom\\n\\u{1b}[2Jcleared;"),
        "{why}"
    );
    // The old one runs again with its volume; nothing is left aside.
    assert!(r.fake.is_running("web"));
    assert_eq!(r.fake.spec_of("web").expect("web").image, img(1));
    assert_eq!(data_volume(&r, "web"), volume);
    assert!(!r.fake.container_names().contains(&replaced_name("web")));
    let refused = rollouts::refused(&r.store).expect("read");
    assert_eq!(refused["web"].image, img(2));
    let alerts = crate::window::alerts::since(&r.store, None).expect("alerts");
    assert_eq!(alerts.len(), 1);
    assert_eq!(alerts[0].event, "rollout-rolled-back");

    // The same declaration again: not tried again.
    let creates = r
        .fake
        .calls()
        .iter()
        .filter(|c| matches!(c, Call::Create(_)))
        .count();
    let again = r.apply(json!([checked(2)])).await;
    assert!(!again.ok);
    assert!(
        reason(&again, "web").contains("not tried again until the declaration changes it"),
        "{again}"
    );
    let after = r
        .fake
        .calls()
        .iter()
        .filter(|c| matches!(c, Call::Create(_)))
        .count();
    assert_eq!(creates, after, "no container was made");
    assert_eq!(r.fake.spec_of("web").expect("web").image, img(1));

    // Another definition is tried, and the refusal forgotten.
    r.fake.set_health("web", "healthy", "ok", Duration::ZERO);
    let moved = r.apply(json!([checked(3)])).await;
    assert!(moved.ok, "{moved}");
    assert_eq!(r.fake.spec_of("web").expect("web").image, img(3));
    assert!(rollouts::refused(&r.store).expect("read").is_empty());
}

#[tokio::test]
async fn a_replacement_never_healthy_is_rolled_back_at_its_bound() {
    let r = rig();
    assert!(r.apply(json!([checked(1)])).await.ok);
    // Starting for longer than the bound of 2 s.
    r.fake
        .set_health("web", "healthy", "", Duration::from_secs(60));
    let started = std::time::Instant::now();
    let report = r.apply(json!([checked(2)])).await;
    assert!(!report.ok);
    assert!(
        reason(&report, "web").starts_with("rolled back: not healthy after 2 s"),
        "{report}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(r.fake.spec_of("web").expect("web").image, img(1));
}

#[tokio::test]
async fn a_service_without_a_check_is_replaced_as_before() {
    let r = rig();
    let mut web = service("web", &img(1));
    web["health"] = json!("none");
    assert!(r.apply(json!([web.clone()])).await.ok);
    web["image"] = json!(img(2));
    let report = r.apply(json!([web])).await;
    assert_eq!(actions(&report), pairs(&[("web", "recreated")]));
    assert_eq!(reason(&report, "web"), "image changed");
    assert!(rollouts::in_flight(&r.store).expect("read").is_empty());
}

#[tokio::test]
async fn a_kill_while_judging_is_finished_by_the_next_apply() {
    let r = rig();
    assert!(r.apply(json!([checked(1)])).await.ok);
    let volume = data_volume(&r, "web");
    // As a kill while the new one was judged leaves it: the old one set
    // aside, the new one running, the record of the replacement.
    let old_spec = r.fake.spec_of("web").expect("web");
    r.fake.stop("web").await.expect("stop");
    r.fake
        .rename("web", &replaced_name("web"))
        .await
        .expect("rename");
    let built = {
        let d = decl(json!([checked(2)]));
        let (res, c) = d.containers().next().expect("web");
        crate::container_spec::build(&d, res, c).expect("build")
    };
    let mut new = built.spec.clone();
    new.mounts.push(crate::runtime::MountSpec {
        source: volume.clone(),
        target: "/data".into(),
        read_only: false,
    });
    r.fake.add_container(new, true);
    rollouts::begin(
        &r.store,
        "web",
        &rollouts::Rollout {
            id: "web".into(),
            identity: built.identity.clone(),
            started: Utc::now() - chrono::Duration::seconds(60),
            rollback_after: 2,
        },
    )
    .expect("record");
    r.fake
        .set_health("web", "starting", "", Duration::from_secs(60));
    let report = r.apply(json!([checked(2)])).await;
    assert!(!report.ok, "{report}");
    assert!(
        reason(&report, "web").starts_with("rolled back"),
        "{report}"
    );
    assert_eq!(r.fake.spec_of("web").expect("web").image, old_spec.image);
    assert!(r.fake.is_running("web"));
    assert_eq!(data_volume(&r, "web"), volume);
    let names = r.fake.container_names();
    assert!(!names.contains(&replaced_name("web")), "{names:?}");
    assert!(rollouts::in_flight(&r.store).expect("read").is_empty());
}

#[tokio::test]
async fn a_kill_mid_roll_back_is_finished_by_the_next_apply_never_retried() {
    let r = rig();
    assert!(r.apply(json!([checked(1)])).await.ok);
    let volume = data_volume(&r, "web");
    // As a kill between the removal of the new container and the rename
    // back leaves it: the refusal recorded, the old one set aside alone.
    r.fake.stop("web").await.expect("stop");
    r.fake
        .rename("web", &replaced_name("web"))
        .await
        .expect("rename");
    let refused = {
        let d = decl(json!([checked(2)]));
        let (res, c) = d.containers().next().expect("web");
        crate::container_spec::build(&d, res, c).expect("build")
    };
    rollouts::refuse(
        &r.store,
        "web",
        &rollouts::Refused {
            id: "web".into(),
            identity: refused.identity,
            image: img(2),
            reason: "not healthy after 9 s".into(),
            at: Utc::now(),
        },
    )
    .expect("refuse");
    r.fake.clear_calls();
    let report = r.apply(json!([checked(2)])).await;
    assert!(!report.ok, "{report}");
    assert!(
        reason(&report, "web").starts_with("an interrupted roll back is finished"),
        "{report}"
    );
    assert!(
        !r.fake.calls().iter().any(|c| matches!(c, Call::Create(_))),
        "the refused definition is not made"
    );
    assert!(r.fake.is_running("web"));
    assert_eq!(r.fake.spec_of("web").expect("web").image, img(1));
    assert_eq!(data_volume(&r, "web"), volume);
    assert!(!r.fake.container_names().contains(&replaced_name("web")));
}

#[tokio::test]
async fn a_kill_before_the_refused_one_was_removed_puts_the_old_one_back_however_healthy_it_is_now()
{
    let r = rig();
    assert!(r.apply(json!([checked(1)])).await.ok);
    let volume = data_volume(&r, "web");
    // As a kill between the refusal recorded and the new container's
    // removal leaves it (or a removal that failed): the old one set aside,
    // the refused one under the name and healthy by now, both records.
    r.fake.stop("web").await.expect("stop");
    r.fake
        .rename("web", &replaced_name("web"))
        .await
        .expect("rename");
    let built = {
        let d = decl(json!([checked(2)]));
        let (res, c) = d.containers().next().expect("web");
        crate::container_spec::build(&d, res, c).expect("build")
    };
    let mut new = built.spec.clone();
    new.mounts.push(crate::runtime::MountSpec {
        source: volume.clone(),
        target: "/data".into(),
        read_only: false,
    });
    r.fake.add_container(new, true);
    r.fake.set_health("web", "healthy", "", Duration::ZERO);
    rollouts::begin(
        &r.store,
        "web",
        &rollouts::Rollout {
            id: "web".into(),
            identity: built.identity.clone(),
            started: Utc::now() - chrono::Duration::seconds(60),
            rollback_after: 2,
        },
    )
    .expect("record");
    rollouts::refuse(
        &r.store,
        "web",
        &rollouts::Refused {
            id: "web".into(),
            identity: built.identity,
            image: img(2),
            reason: "not healthy after 2 s".into(),
            at: Utc::now(),
        },
    )
    .expect("refuse");
    let report = r.apply(json!([checked(2)])).await;
    assert!(!report.ok, "{report}");
    assert!(
        reason(&report, "web").starts_with("an interrupted roll back is finished"),
        "{report}"
    );
    assert!(r.fake.is_running("web"));
    assert_eq!(
        r.fake.spec_of("web").expect("web").image,
        img(1),
        "the old one kept"
    );
    assert_eq!(data_volume(&r, "web"), volume);
    assert!(!r.fake.container_names().contains(&replaced_name("web")));
    assert!(rollouts::in_flight(&r.store).expect("read").is_empty());
}
