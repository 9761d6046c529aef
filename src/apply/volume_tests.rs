//! Volumes are never deleted (CONTRACT, "Apply"): what recreates,
//! removals and run-once steps do with a container's volumes, against the
//! fake's model of them (an image declaring `VOLUME` gets an anonymous one).

use serde_json::json;

use super::*;
use crate::runtime::{replaced_name, VolumeMount};

/// The one anonymous volume of `name` at `/data`.
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

/// A stopped `web` set aside (as an interrupted recreate leaves it),
/// holding `volume` at `/data`.
fn set_aside_holding(r: &Rig, volume: &str) {
    let mut old = managed(&replaced_name("web"), "web", &img(1));
    old.mounts.push(crate::runtime::MountSpec {
        source: volume.to_string(),
        target: "/data".into(),
        read_only: false,
    });
    r.fake.add_container(old, false);
}

/// A rig whose images 1 and 2 declare `VOLUME /data`.
fn rig() -> Rig {
    let r = Rig::new();
    for n in [1, 2] {
        r.fake.add_image(&img(n));
        r.fake.set_image_volumes(&img(n), &["/data"]);
    }
    r
}

#[tokio::test]
async fn a_recreate_carries_the_anonymous_volume_whatever_changed() {
    let r = rig();
    let first = r.apply(json!([service("web", &img(1))])).await;
    assert!(first.ok, "{first}");
    let volume = data_volume(&r, "web");

    let mut web = service("web", &img(1));
    web["env"] = json!({"A": "1"});
    let by_env = r.apply(json!([web.clone()])).await;
    assert_eq!(actions(&by_env), pairs(&[("web", "recreated")]));
    assert_eq!(data_volume(&r, "web"), volume);

    web["image"] = json!(img(2));
    let by_image = r.apply(json!([web])).await;
    assert_eq!(actions(&by_image), pairs(&[("web", "recreated")]));
    assert_eq!(reason(&by_image, "web"), "image changed");
    assert_eq!(data_volume(&r, "web"), volume);
    assert!(r.fake.is_running("web"));
    // No fresh volume was made on the way, and none was deleted.
    assert_eq!(r.fake.volumes(), vec![volume]);
    assert!(!r.fake.container_names().contains(&replaced_name("web")));
}

/// A declared anonymous volume (compose's `volumes: [/data]`) on an image
/// that declares none is made by the runtime and carried like the
/// image's own.
#[tokio::test]
async fn a_declared_anonymous_volume_is_carried_across_recreates() {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    let mut web = service("web", &img(1));
    web["anonymous-volumes"] = json!(["/data"]);
    let first = r.apply(json!([web.clone()])).await;
    assert!(first.ok, "{first}");
    let volume = data_volume(&r, "web");
    web["env"] = json!({"A": "1"});
    let again = r.apply(json!([web])).await;
    assert_eq!(actions(&again), pairs(&[("web", "recreated")]));
    assert_eq!(data_volume(&r, "web"), volume);
    assert_eq!(r.fake.volumes(), vec![volume]);
}

#[tokio::test]
async fn a_mount_declared_at_the_target_wins_and_the_old_volume_is_kept_and_named() {
    let r = rig();
    r.apply(json!([service("web", &img(1))])).await;
    let volume = data_volume(&r, "web");
    let mut mounted = service("web", &img(1));
    mounted["mounts"] = json!([{"source": "webdata", "target": "/data"}]);
    let report = r.apply(json!([mounted])).await;
    assert_eq!(actions(&report), pairs(&[("web", "recreated")]));
    assert!(
        reason(&report, "web").ends_with(&format!(
            "; kept volume {volume} (/data): docker volume rm to free it"
        )),
        "{report}"
    );
    assert_eq!(data_volume(&r, "web"), "webdata");
    assert!(r.fake.volumes().contains(&volume), "{:?}", r.fake.volumes());
}

#[tokio::test]
async fn a_removal_keeps_every_volume_and_its_line_names_them() {
    let r = rig();
    let mut db = service("db", &img(1));
    db["mounts"] = json!([{"source": "pgdata", "target": "/var/lib/pg"}]);
    let first = r.apply(json!([service("web", &img(1)), db])).await;
    assert!(first.ok, "{first}");
    let volume = data_volume(&r, "db");
    let report = r.apply(json!([service("web", &img(1))])).await;
    assert_eq!(
        actions(&report),
        pairs(&[("web", "unchanged"), ("db", "removed")])
    );
    assert_eq!(
        reason(&report, "db"),
        format!(
            "container db is no longer declared; kept volumes pgdata (/var/lib/pg), \
             {volume} (/data): docker volume rm to free them"
        )
    );
    let volumes = r.fake.volumes();
    assert!(volumes.contains(&volume) && volumes.contains(&"pgdata".to_string()));
}

#[tokio::test]
async fn a_recreate_that_cannot_create_puts_the_old_container_back_running() {
    let r = rig();
    r.apply(json!([service("web", &img(1))])).await;
    let volume = data_volume(&r, "web");
    r.fake.fail_create(
        "web",
        RuntimeError::Api {
            context: "create container web".into(),
            reason: "scripted".into(),
        },
    );
    let report = r.apply(json!([service("web", &img(2))])).await;
    assert_eq!(actions(&report), pairs(&[("web", "failed")]));
    assert!(
        reason(&report, "web").starts_with("must be recreated (image changed) but cannot create"),
        "{report}"
    );
    assert!(r.fake.is_running("web"));
    assert_eq!(r.fake.spec_of("web").expect("web").image, img(1));
    assert_eq!(data_volume(&r, "web"), volume);
    // The next apply recreates it, carrying the volume.
    let again = r.apply(json!([service("web", &img(2))])).await;
    assert_eq!(actions(&again), pairs(&[("web", "recreated")]));
    assert_eq!(data_volume(&r, "web"), volume);
}

#[tokio::test]
async fn the_next_apply_carries_the_volumes_of_a_container_an_interrupted_recreate_set_aside() {
    let r = rig();
    r.apply(json!([service("web", &img(1))])).await;
    let volume = data_volume(&r, "web");
    // Killed after the old one was stopped and set aside, before the new
    // one was made.
    r.fake.stop("web").await.expect("stop");
    r.fake
        .rename("web", &replaced_name("web"))
        .await
        .expect("rename");
    let report = r.apply(json!([service("web", &img(2))])).await;
    assert_eq!(actions(&report), pairs(&[("web", "recreated")]));
    assert_eq!(
        reason(&report, "web"),
        "an interrupted recreate is finished (its volumes carried from web.replaced)"
    );
    assert_eq!(data_volume(&r, "web"), volume);
    assert!(r.fake.is_running("web"));
    assert!(!r.fake.container_names().contains(&replaced_name("web")));
    assert_eq!(r.fake.volumes(), vec![volume]);
}

#[tokio::test]
async fn a_set_aside_container_left_beside_its_replacement_is_removed_and_the_volume_kept() {
    let r = rig();
    r.apply(json!([service("web", &img(1))])).await;
    let volume = data_volume(&r, "web");
    // Killed after the new one was made, before the old one was removed:
    // both name the volume.
    set_aside_holding(&r, &volume);
    r.fake.clear_calls();
    let report = r.apply(json!([service("web", &img(1))])).await;
    assert_eq!(actions(&report), pairs(&[("web", "unchanged")]));
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert_eq!(
        r.fake.mutations(),
        vec![Call::RemoveStopped(replaced_name("web"))]
    );
    assert_eq!(data_volume(&r, "web"), volume);
    assert_eq!(r.fake.volumes(), vec![volume]);

    // A no-op apply then looks at nothing.
    r.fake.clear_calls();
    r.apply(json!([service("web", &img(1))])).await;
    assert_eq!(r.inspects(), 0);
}

#[tokio::test]
async fn a_set_aside_container_of_a_name_no_longer_declared_is_removed_naming_its_volume() {
    let r = rig();
    r.apply(json!([service("web", &img(1)), service("db", &img(1))]))
        .await;
    let volume = data_volume(&r, "db");
    r.fake.stop("db").await.expect("stop");
    r.fake
        .rename("db", &replaced_name("db"))
        .await
        .expect("rename");
    let report = r.apply(json!([service("web", &img(1))])).await;
    assert_eq!(
        actions(&report),
        pairs(&[("web", "unchanged"), ("db", "removed")])
    );
    assert_eq!(
        reason(&report, "db"),
        format!(
            "container db.replaced, set aside by an interrupted replace of db, is no longer \
             declared; kept volume {volume} (/data): docker volume rm to free it"
        )
    );
    assert!(r.fake.volumes().contains(&volume));
}

#[tokio::test]
async fn a_run_once_carries_its_volume_from_run_to_run() {
    let r = rig();
    r.fake
        .exit_with("migrate", 0, std::time::Duration::from_millis(1));
    let resources = json!([run_once("migrate", &img(1), None)]);
    let first = r.apply(resources.clone()).await;
    assert!(first.ok, "{first}");
    let volume = data_volume(&r, "migrate");
    for _ in 0..3 {
        let again = r.apply(resources.clone()).await;
        assert_eq!(actions(&again), pairs(&[("migrate", "ran")]));
    }
    assert_eq!(data_volume(&r, "migrate"), volume);
    assert_eq!(
        r.fake.volumes(),
        vec![volume],
        "one volume, not one per run"
    );
}

#[tokio::test]
async fn a_recreate_finding_a_set_aside_container_in_the_way_removes_it_and_carries_on() {
    let r = rig();
    r.apply(json!([service("web", &img(1))])).await;
    let volume = data_volume(&r, "web");
    set_aside_holding(&r, &volume);
    r.fake.clear_calls();
    let report = r.apply(json!([service("web", &img(2))])).await;
    assert_eq!(actions(&report), pairs(&[("web", "recreated")]));
    let aside = replaced_name("web");
    assert_eq!(
        r.fake.mutations(),
        vec![
            Call::Stop("web".into()),
            Call::Rename("web".into(), aside.clone()),
            Call::RemoveStopped(aside.clone()),
            Call::Rename("web".into(), aside.clone()),
            Call::Create("web".into()),
            Call::Start("web".into()),
            Call::RemoveStopped(aside),
        ]
    );
    assert_eq!(data_volume(&r, "web"), volume);
    assert_eq!(r.fake.volumes(), vec![volume]);
}

#[tokio::test]
async fn a_declared_container_that_has_the_replaced_name_is_never_taken_for_one_set_aside() {
    let r = rig();
    let aside = replaced_name("web");
    let first = r
        .apply(json!([service("web", &img(1)), service(&aside, &img(1))]))
        .await;
    assert!(first.ok, "{first}");
    r.fake.stop(&aside).await.expect("stop");
    let report = r
        .apply(json!([service("web", &img(2)), service(&aside, &img(1))]))
        .await;
    assert_eq!(
        actions(&report),
        pairs(&[("web", "failed"), (aside.as_str(), "started")])
    );
    assert!(
        reason(&report, "web").contains("did not leave there"),
        "{report}"
    );
    // Both stand as they were: web running its old image again.
    assert!(r.fake.is_running("web") && r.fake.is_running(&aside));
    assert_eq!(r.fake.spec_of("web").expect("web").image, img(1));
}
