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
async fn a_service_with_no_check_declared_or_in_its_image_is_replaced_ungated() {
    let r = rig();
    // No check declared, and the runtime shows none on the new container.
    let web = |n: u8| service("web", &img(n));
    assert!(r.apply(json!([web(1)])).await.ok);
    let volume = data_volume(&r, "web");
    let report = r.apply(json!([web(2)])).await;
    assert!(report.ok, "{report}");
    assert_eq!(actions(&report), pairs(&[("web", "recreated")]));
    assert_eq!(
        reason(&report, "web"),
        "image changed",
        "nothing was judged"
    );
    assert_eq!(r.fake.spec_of("web").expect("web").image, img(2));
    assert!(r.fake.is_running("web"));
    assert_eq!(data_volume(&r, "web"), volume);
    assert!(!r.fake.container_names().contains(&replaced_name("web")));
    assert!(rollouts::in_flight(&r.store).expect("read").is_empty());
    assert!(rollouts::refused(&r.store).expect("read").is_empty());
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
    let mut new = crate::runtime::ContainerSpec::clone(&built.spec);
    new.mounts.push(crate::runtime::MountSpec {
        source: volume.clone(),
        target: "/data".into(),
        read_only: false,
    });
    r.fake.add_container(new, true);
    // It has run (and been judged) for most of the minute since.
    r.fake.date_start("web", 59);
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
    let mut new = crate::runtime::ContainerSpec::clone(&built.spec);
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

/// As a kill while `checked(n)` was judged leaves it: the old one (as it
/// runs now under `web`) set aside, the new one under the name carrying
/// its volume (running or only made), the record of the replacement.
/// The new one's identity.
async fn interrupted(r: &Rig, n: u8, running: bool, volume: &str) -> String {
    r.fake.stop("web").await.expect("stop");
    r.fake
        .rename("web", &replaced_name("web"))
        .await
        .expect("rename");
    let built = {
        let d = decl(json!([checked(n)]));
        let (res, c) = d.containers().next().expect("web");
        crate::container_spec::build(&d, res, c).expect("build")
    };
    let mut new = crate::runtime::ContainerSpec::clone(&built.spec);
    new.mounts.push(crate::runtime::MountSpec {
        source: volume.to_string(),
        target: "/data".into(),
        read_only: false,
    });
    r.fake.add_container(new, running);
    if running {
        // Judged for most of the minute since the replacement began.
        r.fake.date_start("web", 59);
    }
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
    built.identity
}

fn creates(r: &Rig) -> usize {
    r.fake
        .calls()
        .iter()
        .filter(|c| matches!(c, Call::Create(_)))
        .count()
}

#[tokio::test]
async fn a_declaration_changed_mid_rollout_settles_it_first_then_replaces_the_kept_one() {
    let r = rig();
    assert!(r.apply(json!([checked(1)])).await.ok);
    let volume = data_volume(&r, "web");
    interrupted(&r, 2, true, &volume).await;
    r.fake.set_health("web", "healthy", "ok", Duration::ZERO);
    // The declaration has moved on to a third definition meanwhile.
    let report = r.apply(json!([checked(3)])).await;
    assert!(report.ok, "{report}");
    let why = reason(&report, "web");
    assert!(
        why.starts_with("the interrupted recreate was finished first (healthy after ")
            && why.contains("; then image changed; healthy after "),
        "{why}"
    );
    assert_eq!(r.fake.spec_of("web").expect("web").image, img(3));
    assert!(r.fake.is_running("web"));
    assert_eq!(data_volume(&r, "web"), volume);
    assert!(!r.fake.container_names().contains(&replaced_name("web")));
    assert!(rollouts::in_flight(&r.store).expect("read").is_empty());
    assert!(rollouts::refused(&r.store).expect("read").is_empty());
}

#[tokio::test]
async fn a_declaration_changed_mid_rollout_puts_the_old_one_back_before_trying_the_new_one() {
    let r = rig();
    assert!(r.apply(json!([checked(1)])).await.ok);
    let volume = data_volume(&r, "web");
    let second = interrupted(&r, 2, true, &volume).await;
    // Never healthy: the one in flight is past its bound, and the third
    // definition is given its own 2 s and refused too.
    r.fake
        .set_health("web", "starting", "", Duration::from_secs(60));
    r.fake.clear_calls();
    let report = r.apply(json!([checked(3)])).await;
    assert!(!report.ok, "{report}");
    let why = reason(&report, "web");
    assert!(
        why.starts_with("the interrupted recreate was rolled back first (not healthy after ")
            && why.contains("; then rolled back: not healthy after 2 s"),
        "{why}"
    );
    assert_eq!(creates(&r), 1, "the third definition was tried");
    // The old one, good all along, runs with its data; the refusal is of
    // what was tried last, not of the one settled.
    assert!(r.fake.is_running("web"));
    assert_eq!(r.fake.spec_of("web").expect("web").image, img(1));
    assert_eq!(data_volume(&r, "web"), volume);
    assert!(!r.fake.container_names().contains(&replaced_name("web")));
    let refused = rollouts::refused(&r.store).expect("read");
    assert_eq!(refused["web"].image, img(3));
    assert_ne!(refused["web"].identity, second);
    assert!(rollouts::in_flight(&r.store).expect("read").is_empty());
    let alerts = crate::window::alerts::since(&r.store, None).expect("alerts");
    assert_eq!(alerts.len(), 2, "{alerts:?}");
}

#[tokio::test]
async fn a_declaration_changed_mid_roll_back_never_keeps_the_refused_one_however_healthy() {
    let r = rig();
    assert!(r.apply(json!([checked(1)])).await.ok);
    let volume = data_volume(&r, "web");
    // Killed between the refusal recorded and the refused one's removal;
    // the refused one healthy by now. The declaration moved on.
    let second = interrupted(&r, 2, true, &volume).await;
    rollouts::refuse(
        &r.store,
        "web",
        &rollouts::Refused {
            id: "web".into(),
            identity: second,
            image: img(2),
            reason: "not healthy after 2 s".into(),
            at: Utc::now(),
        },
    )
    .expect("refuse");
    r.fake.set_health("web", "healthy", "", Duration::ZERO);
    let report = r.apply(json!([checked(3)])).await;
    // The refused one is never kept: the old one is put back first, and
    // only then replaced by what is declared.
    assert_ne!(
        r.fake.spec_of("web").expect("web").image,
        img(2),
        "the refused one was kept and the old one lost: {report}"
    );
    assert!(report.ok, "{report}");
    assert!(
        reason(&report, "web").starts_with("an interrupted roll back was finished first"),
        "{report}"
    );
    assert_eq!(r.fake.spec_of("web").expect("web").image, img(3));
    assert_eq!(data_volume(&r, "web"), volume);
    assert!(rollouts::refused(&r.store).expect("read").is_empty());
    assert!(rollouts::in_flight(&r.store).expect("read").is_empty());

    // And the same with what runs now declared again: it is put back and
    // left as it is, nothing made.
    let volume = data_volume(&r, "web");
    let first = interrupted(&r, 1, true, &volume).await;
    rollouts::refuse(
        &r.store,
        "web",
        &rollouts::Refused {
            id: "web".into(),
            identity: first,
            image: img(1),
            reason: "not healthy after 2 s".into(),
            at: Utc::now(),
        },
    )
    .expect("refuse");
    r.fake.clear_calls();
    let report = r.apply(json!([checked(3)])).await;
    assert!(report.ok, "{report}");
    assert!(
        reason(&report, "web").ends_with("web is what is declared"),
        "{report}"
    );
    assert_eq!(creates(&r), 0);
    assert_eq!(r.fake.spec_of("web").expect("web").image, img(3));
    assert!(r.fake.is_running("web"));
}

#[tokio::test]
async fn a_kill_before_the_new_one_started_starts_and_judges_it() {
    let r = rig();
    assert!(r.apply(json!([checked(1)])).await.ok);
    let volume = data_volume(&r, "web");
    // Made, not started: a kill right after the create, a minute ago, far
    // past its 2 s. It never ran, so it has its whole bound now: healthy
    // a second after its start, it is kept.
    interrupted(&r, 2, false, &volume).await;
    r.fake
        .set_health("web", "healthy", "ok", Duration::from_secs(1));
    let report = r.apply(json!([checked(2)])).await;
    assert!(report.ok, "{report}");
    assert!(
        reason(&report, "web").contains("healthy after 1 s"),
        "{report}"
    );
    assert_eq!(actions(&report), pairs(&[("web", "recreated")]));
    assert!(r.fake.is_running("web"));
    assert_eq!(r.fake.spec_of("web").expect("web").image, img(2));
    assert!(!r.fake.container_names().contains(&replaced_name("web")));
}

#[tokio::test]
async fn an_unreadable_record_leaves_its_service_alone_and_applies_the_others() {
    let r = rig();
    let other = |n: u8| {
        let mut db = service("db", &img(n));
        db["name"] = json!("db");
        db["health"] = json!("none");
        db
    };
    assert!(r.apply(json!([checked(1), other(1)])).await.ok);
    let volume = data_volume(&r, "web");
    interrupted(&r, 2, true, &volume).await;
    let record = r.store.root().join("rollout.web.json");
    std::fs::write(&record, "{\"id\": \"secret-token\"").expect("garble");
    r.fake.set_health("web", "healthy", "ok", Duration::ZERO);
    let report = r.apply(json!([checked(3), other(2)])).await;
    assert!(!report.ok, "{report}");
    assert_eq!(
        actions(&report),
        pairs(&[("web", "failed"), ("db", "recreated")])
    );
    let why = reason(&report, "web");
    assert!(
        why.contains(&record.display().to_string())
            && why.contains("web is left alone")
            && !why.contains("secret-token"),
        "{why}"
    );
    // Neither container of web was touched: the one set aside is there.
    assert!(r.fake.container_names().contains(&replaced_name("web")));
    assert_eq!(r.fake.spec_of("web").expect("web").image, img(2));
    // The operator keeps the one under the name and removes the record:
    // the next apply replaces it.
    std::fs::remove_file(&record).expect("rm");
    let report = r.apply(json!([checked(3), other(2)])).await;
    assert!(report.ok, "{report}");
    assert_eq!(r.fake.spec_of("web").expect("web").image, img(3));
}
