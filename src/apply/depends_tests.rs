//! `depends-on` honoured when the apply makes and starts services, against
//! the scripted runtime: a service starts only once what it depends on has
//! started, services that depend on nothing still start side by side, and
//! a service whose dependency failed is not started (reported, not made).
//! The same is tested on a real Docker in `tests/networks_node.rs`.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{json, Value};

use super::*;
use crate::runtime::{ContainerEventKind, RuntimeView};

fn rig() -> Rig {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    r
}

fn depending(id: &str, on: &[&str]) -> Value {
    let mut s = service(id, &img(1));
    s["depends-on"] = json!(on.iter().map(|d| json!({"id": d})).collect::<Vec<_>>());
    s
}

/// The names whose start the runtime reported, in the order of the reports.
async fn starts_during(r: &Rig, names: &[&str], resources: Value) -> (ApplyReport, Vec<String>) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut events = r.fake.events(&names).await.unwrap();
    let report = r.apply(resources).await;
    let mut started = Vec::new();
    while let Ok(Some(Ok(event))) =
        tokio::time::timeout(Duration::from_millis(50), events.next()).await
    {
        if event.kind == ContainerEventKind::Start {
            started.push(event.name);
        }
    }
    (report, started)
}

#[tokio::test]
async fn a_service_starts_only_once_what_it_depends_on_has_started() {
    let r = rig();
    // The dependency is slow to start: its dependent, declared next to it
    // (one batch), still starts after it, as compose starts them.
    r.fake.start_delay("dns", Duration::from_millis(300));
    let (report, started) = starts_during(
        &r,
        &["dns", "pihole", "other"],
        json!([
            service("dns", &img(1)),
            depending("pihole", &["dns"]),
            service("other", &img(1))
        ]),
    )
    .await;
    assert!(report.ok, "{report}");
    let at = |n: &str| started.iter().position(|s| s == n).unwrap();
    assert!(at("dns") < at("pihole"), "{started:?}");
    // What depends on nothing is not held back by the slow one.
    assert!(at("other") < at("dns"), "{started:?}");
    // Nor is it made before it: its create comes after the dependency's start.
    let calls = r.fake.calls();
    let call = |c: &Call| calls.iter().position(|x| x == c).unwrap();
    assert!(call(&Call::Start("dns".into())) < call(&Call::Create("pihole".into())));
}

#[tokio::test]
async fn a_chain_of_dependencies_starts_in_its_order_every_time() {
    for _ in 0..5 {
        let r = rig();
        r.fake.start_delay("aa", Duration::from_millis(60));
        r.fake.start_delay("bb", Duration::from_millis(30));
        let (report, started) = starts_during(
            &r,
            &["aa", "bb", "cc"],
            json!([
                service("aa", &img(1)),
                depending("bb", &["aa"]),
                depending("cc", &["bb", "aa"])
            ]),
        )
        .await;
        assert!(report.ok, "{report}");
        assert_eq!(started, ["aa", "bb", "cc"]);
    }
}

#[tokio::test]
async fn a_service_whose_dependency_failed_to_start_is_not_started() {
    let r = rig();
    r.fake.fail_start("dns");
    let report = r
        .apply(json!([
            service("dns", &img(1)),
            depending("pihole", &["dns"]),
            depending("admin", &["pihole"]),
            service("other", &img(1)),
        ]))
        .await;
    assert!(!report.ok, "{report}");
    assert_eq!(
        actions(&report),
        pairs(&[
            ("dns", "failed"),
            ("pihole", "failed"),
            ("admin", "failed"),
            ("other", "created")
        ])
    );
    assert_eq!(
        reason(&report, "pihole"),
        "depends-on dns: dns failed, so this was not started"
    );
    assert_eq!(
        reason(&report, "admin"),
        "depends-on pihole: pihole failed, so this was not started"
    );
    for name in ["pihole", "admin"] {
        assert_eq!(r.count(&Call::Create(name.into())), 0, "{name} made");
        assert_eq!(r.count(&Call::Start(name.into())), 0, "{name} started");
    }
}

#[tokio::test]
async fn a_dependency_that_failed_in_an_earlier_batch_stops_its_dependent_too() {
    let r = rig();
    r.fake.fail_start("db");
    let conf = file("conf", &r.path("etc/app.conf"), "a=1\n");
    let mut healthy = depending("web", &[]);
    healthy["depends-on"] = json!([{"id": "db", "condition": "healthy"}]);
    // A file between them ends the batch: db is committed first.
    let report = r
        .apply(json!([
            service("db", &img(1)),
            conf,
            depending("api", &["db"]),
            healthy
        ]))
        .await;
    assert!(!report.ok, "{report}");
    for id in ["api", "web"] {
        assert_eq!(
            reason(&report, id),
            "depends-on db: db failed, so this was not started",
            "{report}"
        );
        assert_eq!(r.count(&Call::Create(id.into())), 0, "{id} made");
    }
}

#[tokio::test]
async fn a_running_dependent_is_left_running_when_its_dependency_fails() {
    let r = rig();
    let resources = json!([service("dns", &img(1)), depending("pihole", &["dns"])]);
    assert!(r.apply(resources.clone()).await.ok);
    // Now dns is stopped and cannot start: pihole, running and unchanged,
    // is not touched (only what would start it waits on dns).
    r.fake.stop("dns").await.unwrap();
    r.fake.fail_start("dns");
    r.fake.clear_calls();
    let report = r.apply(resources).await;
    assert_eq!(
        actions(&report),
        pairs(&[("dns", "failed"), ("pihole", "unchanged")])
    );
    assert_eq!(r.count(&Call::Stop("pihole".into())), 0);
}

#[tokio::test]
async fn a_dependency_refused_before_any_call_stops_its_dependent_and_diff_says_so() {
    let r = rig();
    // An env-file that is not there: dns fails before any runtime call.
    let mut dns = service("dns", &img(1));
    dns["env-files"] = json!([r.path("etc/missing.env")]);
    let resources = json!([dns, depending("pihole", &["dns"])]);
    let preview = r.applier().preview(&decl(resources.clone())).await;
    assert_eq!(
        preview
            .line("pihole")
            .map(|l| (l.action.to_string(), l.reason.clone())),
        Some((
            "failed".to_string(),
            Some("depends-on dns: dns failed, so this was not started".to_string())
        ))
    );
    let report = r.apply(resources).await;
    assert_eq!(
        actions(&report),
        pairs(&[("dns", "failed"), ("pihole", "failed")])
    );
    assert_eq!(r.count(&Call::Create("pihole".into())), 0);
}

/// A run-once step (compose's `service_completed_successfully` target)
/// with its own dependencies: they start first, then it runs, then what
/// waits for it starts.
#[tokio::test]
async fn a_run_once_step_runs_after_what_it_depends_on_and_before_its_dependent() {
    let r = rig();
    r.fake.start_delay("db", Duration::from_millis(200));
    r.fake.exit_with("migrate", 0, Duration::from_millis(10));
    let mut migrate = run_once("migrate", &img(1), Some(60));
    migrate["depends-on"] = json!([{"id": "db"}]);
    let (report, started) = starts_during(
        &r,
        &["db", "migrate", "web"],
        json!([service("db", &img(1)), migrate, service("web", &img(1))]),
    )
    .await;
    assert!(report.ok, "{report}");
    assert_eq!(started, ["db", "migrate", "web"]);
}

#[tokio::test]
async fn a_run_once_step_whose_dependency_failed_is_not_run_and_halts_the_apply() {
    let r = rig();
    r.fake.fail_start("db");
    let mut migrate = run_once("migrate", &img(1), Some(60));
    migrate["depends-on"] = json!([{"id": "db"}]);
    let report = r
        .apply(json!([
            service("db", &img(1)),
            migrate,
            service("web", &img(1))
        ]))
        .await;
    assert!(!report.ok, "{report}");
    assert_eq!(
        reason(&report, "migrate"),
        "depends-on db: db failed, so this step was not run"
    );
    assert_eq!(actions(&report)[2].1, "not-reached", "{report}");
    for name in ["migrate", "web"] {
        assert_eq!(r.count(&Call::Create(name.into())), 0, "{name} made");
    }

    // One refused before any call: diff says so, and the step halts there.
    let r = rig();
    let mut db = service("db", &img(1));
    db["env-files"] = json!([r.path("etc/missing.env")]);
    let mut migrate = run_once("migrate", &img(1), Some(60));
    migrate["depends-on"] = json!([{"id": "db"}]);
    let resources = json!([db, migrate, service("web", &img(1))]);
    let preview = r.applier().preview(&decl(resources.clone())).await;
    let line = preview.line("migrate").unwrap();
    assert_eq!(line.action.to_string(), "failed");
    assert_eq!(
        line.reason.as_deref(),
        Some("depends-on db: db failed, so this step was not run")
    );
    let report = r.apply(resources).await;
    assert_eq!(actions(&report)[2].1, "not-reached", "{report}");
    assert_eq!(r.count(&Call::Create("migrate".into())), 0);
}
