//! The decisions of apply, against the scripted runtime, a temporary state
//! directory and files under a temporary root. The same behaviours are
//! tested on a real Docker in `tests/apply_docker.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use serde_json::{json, Value};

use super::units::FakeUnits;
use super::{Applier, ApplyReport, PullPolicy};
use crate::clock::FakeClock;
use crate::declaration::{self, Declaration};
use crate::runtime::fake::{Call, FakeRuntime};
use crate::runtime::{
    ContainerRuntime, ContainerSpec, RuntimeError, LABEL_MANAGED, LABEL_RESOURCE,
};
use crate::store::Store;
use crate::window::{HeldContainer, WindowRecord};
use crate::window::{Owner, Records, Windows};

fn img(n: u8) -> String {
    format!("registry.test/app@sha256:{}", format!("{n:02x}").repeat(32))
}

struct Rig {
    dir: tempfile::TempDir,
    fake: FakeRuntime,
    store: Store,
    records: Records,
    windows: Windows,
    clock: Arc<FakeClock>,
}

impl Rig {
    fn new() -> Rig {
        let dir = crate::test_dirs::test_dir();
        let store = Store::open(dir.path().join("state")).expect("store");
        let fake = FakeRuntime::new();
        let runtime: Arc<dyn ContainerRuntime> = Arc::new(fake.clone());
        let clock = Arc::new(FakeClock::new(Utc::now()));
        let windows = Windows::new(
            store.clone(),
            runtime,
            clock.clone(),
            Owner::current().expect("owner"),
        );
        Rig {
            dir,
            fake,
            records: Records::of(&store),
            store,
            windows,
            clock,
        }
    }

    fn applier(&self) -> Applier {
        Applier::new(
            self.store.clone(),
            Arc::new(self.fake.clone()),
            self.windows.clone(),
        )
    }

    /// A path under the test's root.
    fn path(&self, rel: &str) -> String {
        self.dir.path().join("root").join(rel).display().to_string()
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).expect("read")
    }

    async fn apply(&self, resources: Value) -> ApplyReport {
        self.applier().apply(&decl(resources)).await
    }

    /// A window record of `step`, opened now, holding `held` (running).
    fn open_window(&self, step: &str, held: &[&str]) {
        use crate::clock::Clock;
        let owner = Owner::current().expect("owner");
        self.records
            .write(&WindowRecord {
                step: step.into(),
                module: None,
                fire_time: self.clock.now(),
                opened_at: self.clock.now(),
                boot_id: owner.boot_id,
                pid: owner.pid,
                pid_start_time: owner.pid_start_time,
                step_container: format!("{step}-run"),
                step_timeout_secs: None,
                opened_since_boot_secs: None,
                lease_since_boot_secs: None,
                owed: false,
                held: held
                    .iter()
                    .map(|n| HeldContainer {
                        id: n.to_string(),
                        name: n.to_string(),
                        was_running: true,
                        starting: false,
                    })
                    .collect(),
            })
            .expect("write window record");
    }

    fn count(&self, want: &Call) -> usize {
        self.fake.calls().iter().filter(|c| *c == want).count()
    }

    fn inspects(&self) -> usize {
        self.fake
            .calls()
            .iter()
            .filter(|c| matches!(c, Call::Inspect(_)))
            .count()
    }
}

fn decl(resources: Value) -> Declaration {
    let bytes =
        serde_json::to_vec(&json!({"declaration": 1, "resources": resources})).expect("json");
    declaration::parse(&bytes).unwrap_or_else(|r| panic!("test declaration refused:\n{r}"))
}

fn file(id: &str, path: &str, content: &str) -> Value {
    json!({"id": id, "type": "file", "path": path, "content": content, "mode": "0600"})
}

fn service(id: &str, image: &str) -> Value {
    json!({"id": id, "type": "container", "name": id, "image": image, "network": "none"})
}

fn run_once(id: &str, image: &str, timeout: Option<u64>) -> Value {
    let mut v = json!({"id": id, "type": "container", "name": id, "image": image,
                       "network": "none", "run-once": true});
    if let Some(t) = timeout {
        v["timeout"] = json!(t);
    }
    v
}

fn step(id: &str, image: &str, holds: &[&str]) -> Value {
    json!({"id": id, "type": "container", "name": format!("{id}-run"), "image": image,
           "network": "none", "schedule": "0 3 * * *", "while-stopped": holds, "timeout": 60})
}

fn actions(report: &ApplyReport) -> Vec<(String, String)> {
    report
        .lines
        .iter()
        .map(|l| (l.id.clone(), l.action.to_string()))
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

fn reason<'r>(report: &'r ApplyReport, id: &str) -> &'r str {
    report
        .line(id)
        .and_then(|l| l.reason.as_deref())
        .unwrap_or_else(|| panic!("no reason on the line of {id}: {report}"))
}

/// A managed container as an earlier host made it (labels only).
fn managed(name: &str, resource: &str, image: &str) -> ContainerSpec {
    ContainerSpec {
        name: name.into(),
        image: image.into(),
        labels: [
            (LABEL_MANAGED.to_string(), "true".to_string()),
            (LABEL_RESOURCE.to_string(), resource.to_string()),
        ]
        .into(),
        ..ContainerSpec::default()
    }
}

fn with_env_file(mut svc: Value, path: &str) -> Value {
    svc["env-files"] = json!([path]);
    svc
}

#[tokio::test]
async fn first_apply_creates_and_a_second_is_a_no_op_costing_one_listing() {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    let env = r.path("etc/app/env");
    let resources = json!([
        {"id": "data", "type": "directory", "path": r.path("srv/data"), "mode": "0750"},
        file("env", &env, "A=1\n"),
        with_env_file(service("web", &img(1)), &env),
        step("gc", &img(2), &[]),
    ]);
    let first = r.apply(resources.clone()).await;
    assert!(first.ok, "{first}");
    assert_eq!(
        actions(&first),
        pairs(&[
            ("data", "created"),
            ("env", "created"),
            ("web", "created"),
            ("gc", "installed"),
        ])
    );
    assert_eq!(reason(&first, "gc"), "image pulled");
    assert!(r.fake.is_running("web"));
    assert_eq!(r.read("etc/app/env"), "A=1\n");
    let spec = r.fake.spec_of("web").expect("created");
    assert_eq!(spec.env, vec![("A".to_string(), "1".to_string())]);
    assert_eq!(spec.restart, crate::runtime::RestartPolicy::UnlessStopped);
    assert!(
        r.fake.spec_of("gc-run").is_none(),
        "a scheduled step is never run at apply"
    );
    assert_eq!(first.steps.len(), 1);
    assert_eq!(first.steps[0].id(), "gc");
    assert!(first.steps[0].is_packed(), "handed to the scheduler packed");

    r.fake.clear_calls();
    let second = r.apply(resources).await;
    assert!(second.ok, "{second}");
    assert_eq!(
        actions(&second),
        pairs(&[
            ("data", "unchanged"),
            ("env", "unchanged"),
            ("web", "unchanged"),
            ("gc", "unchanged"),
        ])
    );
    assert_eq!(r.fake.mutations(), Vec::<Call>::new());
    assert_eq!(r.count(&Call::ListManaged), 1);
    assert_eq!(r.inspects(), 0);
    assert_eq!(
        second.steps.len(),
        1,
        "an unchanged step is still handed over"
    );
}

#[tokio::test]
async fn a_step_declared_otherwise_is_installed_again() {
    let r = Rig::new();
    r.fake.add_image(&img(2));
    let first = r.apply(json!([step("gc", &img(2), &[])])).await;
    assert_eq!(actions(&first), pairs(&[("gc", "installed")]));
    let same = r.apply(json!([step("gc", &img(2), &[])])).await;
    assert_eq!(actions(&same), pairs(&[("gc", "unchanged")]));
    let mut changed = step("gc", &img(2), &[]);
    changed["schedule"] = json!("5 4 * * *");
    let again = r.apply(json!([changed])).await;
    assert_eq!(actions(&again), pairs(&[("gc", "installed")]));
}

#[tokio::test]
async fn a_changed_env_file_recreates_naming_the_file_and_fields_are_named_too() {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    r.fake.add_image(&img(2));
    let env = r.path("etc/app/env");
    let first = r
        .apply(json!([
            file("env", &env, "A=1\n"),
            with_env_file(service("web", &img(1)), &env)
        ]))
        .await;
    assert!(first.ok, "{first}");

    r.fake.clear_calls();
    let changed = r
        .apply(json!([
            file("env", &env, "A=2\n"),
            with_env_file(service("web", &img(1)), &env)
        ]))
        .await;
    assert_eq!(
        actions(&changed),
        pairs(&[("env", "updated"), ("web", "recreated")])
    );
    assert_eq!(reason(&changed, "web"), format!("{env} changed"));
    assert_eq!(
        changed.lines[1].to_string(),
        format!("web recreated: {env} changed")
    );
    assert_eq!(
        r.fake.mutations(),
        vec![
            Call::Stop("web".into()),
            Call::Rename("web".into(), "web.replaced".into()),
            Call::Create("web".into()),
            // Started before the old one goes: a replacement is judged
            // on its health (none here) while the old one is set aside.
            Call::Start("web".into()),
            Call::RemoveStopped("web.replaced".into()),
        ]
    );
    assert_eq!(r.fake.spec_of("web").expect("web").env[0].1, "2");

    let mut other = with_env_file(service("web", &img(2)), &env);
    other["command"] = json!(["serve", "--fast"]);
    let fields = r.apply(json!([file("env", &env, "A=2\n"), other])).await;
    assert_eq!(reason(&fields, "web"), "command changed, image changed");
}

#[tokio::test]
async fn older_record_format_stopped_and_restart_on() {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    // Made by an older host: no identity label.
    r.fake.add_container(managed("web", "web", &img(1)), true);
    let report = r.apply(json!([service("web", &img(1))])).await;
    assert_eq!(
        report.lines[0].to_string(),
        "web recreated: made by an older record format"
    );

    // Stopped by someone, not held: started again.
    r.fake.stop("web").await.expect("stop");
    r.fake.clear_calls();
    let report = r.apply(json!([service("web", &img(1))])).await;
    assert_eq!(report.lines[0].to_string(), "web started: was not running");
    assert_eq!(r.fake.mutations(), vec![Call::Start("web".into())]);

    // A file it restarts on changes: stop + start, not recreated.
    let conf = r.path("etc/web.conf");
    let mut web = service("web", &img(1));
    web["restart-on"] = json!(["conf"]);
    r.apply(json!([file("conf", &conf, "a"), web.clone()]))
        .await;
    r.fake.clear_calls();
    let report = r
        .apply(json!([file("conf", &conf, "b"), web.clone()]))
        .await;
    assert_eq!(
        report.lines[1].to_string(),
        format!("web started: restart-on: {conf} changed")
    );
    assert_eq!(
        r.fake.mutations(),
        vec![Call::Stop("web".into()), Call::Start("web".into())]
    );
    r.fake.clear_calls();
    let report = r.apply(json!([file("conf", &conf, "b"), web])).await;
    assert_eq!(
        actions(&report),
        pairs(&[("conf", "unchanged"), ("web", "unchanged")])
    );
    assert!(r.fake.mutations().is_empty());
}

#[tokio::test]
async fn a_held_container_is_left_alone_and_converged_after_the_window() {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    r.fake.add_image(&img(2));
    let first = r
        .apply(json!([
            service("registry", &img(1)),
            service("old", &img(1)),
            step("gc", &img(1), &["registry"])
        ]))
        .await;
    assert!(first.ok, "{first}");
    // The window of gc holds registry (stopped) and old.
    r.fake.stop("registry").await.expect("stop");
    r.fake.stop("old").await.expect("stop");
    r.open_window("gc", &["registry", "old"]);
    r.fake.clear_calls();
    let during = r
        .apply(json!([
            service("registry", &img(2)),
            step("gc", &img(1), &["registry"])
        ]))
        .await;
    assert!(during.ok, "{during}");
    assert_eq!(
        actions(&during),
        pairs(&[
            ("registry", "held-still"),
            ("gc", "unchanged"),
            ("old", "held-still")
        ])
    );
    assert!(reason(&during, "registry").starts_with("held by the window of gc"));
    assert!(r.fake.mutations().is_empty(), "{:?}", r.fake.mutations());
    assert_eq!(during.windows.len(), 1);
    assert_eq!(during.windows[0].step, "gc");
    assert_eq!(during.windows[0].held, vec!["registry", "old"]);
    assert!(during.to_string().contains("window gc open since"));

    // The window closes (record erased); the next apply converges.
    r.records.remove("gc").expect("close");
    let after = r
        .apply(json!([
            service("registry", &img(2)),
            step("gc", &img(1), &["registry"])
        ]))
        .await;
    assert_eq!(
        actions(&after),
        pairs(&[
            ("registry", "recreated"),
            ("gc", "unchanged"),
            ("old", "removed")
        ])
    );
    assert_eq!(reason(&after, "registry"), "image changed");
    assert!(r.fake.is_running("registry"));
}

#[tokio::test]
async fn a_stale_window_record_holds_nothing() {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    r.apply(json!([service("web", &img(1))])).await;
    r.fake.stop("web").await.expect("stop");
    r.open_window("gc", &["web"]);
    // Its owner is gone (another start time) and it is past its bound.
    let mut record = r.records.get("gc").expect("read").expect("record");
    record.pid_start_time += 1;
    r.records.write(&record).expect("write");
    r.clock.jump(chrono::Duration::hours(7));
    let report = r.apply(json!([service("web", &img(1))])).await;
    assert_eq!(report.lines[0].to_string(), "web started: was not running");
    assert!(report.windows.is_empty());
}

#[tokio::test]
async fn a_wall_clock_jump_does_not_release_a_window_measured_since_boot() {
    use crate::clock::Clock;
    let r = Rig::new();
    r.fake.add_image(&img(1));
    r.apply(json!([service("web", &img(1))])).await;
    r.fake.stop("web").await.expect("stop");
    r.open_window("gc", &["web"]);
    let mut record = r.records.get("gc").expect("read").expect("record");
    record.opened_since_boot_secs = r.clock.since_boot().map(|d| d.as_secs());
    // Even with its owner gone, the age is what the time since boot says.
    record.pid_start_time += 1;
    r.records.write(&record).expect("write");
    r.clock.jump(chrono::Duration::days(2));
    let report = r.apply(json!([service("web", &img(1))])).await;
    assert_eq!(
        actions(&report),
        pairs(&[("web", "held-still")]),
        "{report}"
    );
    assert!(!r.fake.is_running("web"));
    assert_eq!(report.windows.len(), 1);
}

#[tokio::test]
async fn a_failing_run_once_halts_the_apply_and_what_came_before_stays() {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    r.apply(json!([service("undeclared", &img(1))])).await;
    r.fake.exit_with("migrate", 3, Duration::from_millis(10));
    let report = r
        .apply(json!([
            file("env", &r.path("env"), "x"),
            service("db", &img(1)),
            run_once("migrate", &img(1), Some(60)),
            service("app", &img(1)),
        ]))
        .await;
    assert!(!report.ok);
    assert!(
        !report.complete,
        "a halted apply did not read the whole declaration"
    );
    // What followed it, the removal included, was decided and not reached.
    assert_eq!(
        actions(&report),
        pairs(&[
            ("env", "created"),
            ("db", "created"),
            ("migrate", "failed"),
            ("app", "not-reached"),
            ("undeclared", "not-reached")
        ])
    );
    assert_eq!(reason(&report, "migrate"), "exit status 3");
    assert_eq!(
        reason(&report, "app"),
        "the apply halted at migrate before it (it was to be created)"
    );
    let app = report.line("app").expect("app's line");
    assert_eq!(app.steps.len(), 1);
    assert_eq!(app.steps[0].outcome.as_deref(), Some("not reached"));
    assert!(
        !app.changes_something(),
        "what was not reached changed nothing"
    );
    let halt = report.halted.as_ref().expect("halted");
    assert_eq!(
        (halt.id.as_str(), halt.exit_status, halt.not_applied),
        ("migrate", Some(3), 1)
    );
    assert!(
        report
            .summary()
            .contains("halted at migrate (exit status 3)"),
        "{}",
        report.summary()
    );
    assert!(
        r.fake.spec_of("app").is_none(),
        "nothing after it is applied"
    );
    assert!(r.fake.is_running("db"), "what came before stays");
    assert!(r.fake.is_running("undeclared"), "no removals after a halt");
    let applied: super::AppliedState = r
        .store
        .load(crate::store::APPLIED)
        .expect("load")
        .expect("saved");
    assert!(!applied.ok);
    assert_eq!(
        applied.halted.as_ref().map(|h| h.id.as_str()),
        Some("migrate")
    );
}

#[tokio::test]
async fn a_run_once_runs_every_apply_replacing_its_last_container() {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    r.fake.exit_with("migrate", 0, Duration::from_millis(10));
    let resources = json!([
        run_once("migrate", &img(1), Some(60)),
        service("app", &img(1))
    ]);
    let first = r.apply(resources.clone()).await;
    assert_eq!(
        actions(&first),
        pairs(&[("migrate", "ran"), ("app", "created")])
    );
    assert!(r.fake.spec_of("migrate").is_some(), "kept for docker logs");
    r.fake.clear_calls();
    let second = r.apply(resources).await;
    assert_eq!(
        actions(&second),
        pairs(&[("migrate", "ran"), ("app", "unchanged")])
    );
    assert_eq!(
        r.fake.mutations(),
        vec![
            Call::Rename("migrate".into(), "migrate.replaced".into()),
            Call::Create("migrate".into()),
            Call::RemoveStopped("migrate.replaced".into()),
            Call::Start("migrate".into())
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_run_once_owes_its_output_while_it_runs_where_the_runtime_does_not_journal_it() {
    use crate::schedule::forward::Forwards;
    let r = Rig::new();
    r.fake.add_image(&img(1));
    r.fake.forwarding_output();
    r.fake.exit_with("migrate", 0, Duration::from_secs(30));
    let forwards = Forwards::of(&r.store);
    let applier = r.applier();
    let apply = tokio::spawn(async move {
        applier
            .apply(&decl(json!([run_once("migrate", &img(1), Some(60))])))
            .await
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(r.fake.is_running("migrate"));
    let owed: Vec<(String, String)> = forwards
        .all()
        .into_iter()
        .map(|o| (o.step, o.container))
        .collect();
    assert_eq!(owed, vec![("migrate".to_string(), "migrate".to_string())]);
    let report = apply.await.expect("apply");
    assert_eq!(actions(&report), pairs(&[("migrate", "ran")]));
    assert!(
        r.fake.calls().iter().any(|c| matches!(c, Call::Output(_))),
        "followed: {:?}",
        r.fake.calls()
    );
    assert!(forwards.all().is_empty(), "settled once it ended");
}

#[tokio::test(start_paused = true)]
async fn a_run_once_over_its_timeout_is_stopped_and_halts() {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    r.fake.stop_exit_code("slow", 143);
    let began = tokio::time::Instant::now();
    let report = r
        .apply(json!([
            run_once("slow", &img(1), Some(30)),
            service("app", &img(1))
        ]))
        .await;
    assert!(began.elapsed() >= Duration::from_secs(30));
    assert_eq!(
        actions(&report),
        pairs(&[("slow", "failed"), ("app", "not-reached")])
    );
    assert_eq!(
        reason(&report, "slow"),
        "timed out after 30s and was stopped (exit status 143)"
    );
    assert_eq!(
        report.halted.as_ref().and_then(|h| h.exit_status),
        Some(143)
    );
    assert!(!r.fake.is_running("slow"));
}

#[tokio::test]
async fn undeclared_managed_containers_are_removed_and_foreign_ones_never_touched() {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    let first = r
        .apply(json!([
            service("web", &img(1)),
            service("old-svc", &img(1))
        ]))
        .await;
    assert!(first.ok, "{first}");
    // Without the managed label: never touched, even under a declared name.
    for name in ["theirs", "clash"] {
        r.fake.add_container(
            ContainerSpec {
                name: name.into(),
                image: img(1),
                ..ContainerSpec::default()
            },
            true,
        );
    }
    // Managed, but by another state directory: not this host's to remove.
    r.fake
        .add_container(managed("stranger", "web", &img(1)), true);
    r.fake.clear_calls();
    let report = r
        .apply(json!([service("web", &img(1)), service("clash", &img(1))]))
        .await;
    assert!(!report.ok);
    assert_eq!(
        actions(&report),
        pairs(&[
            ("web", "unchanged"),
            ("clash", "failed"),
            ("old-svc", "removed")
        ])
    );
    assert!(
        reason(&report, "clash").contains("does not manage"),
        "{report}"
    );
    assert_eq!(
        reason(&report, "old-svc"),
        "container old-svc is no longer declared"
    );
    let names = r.fake.container_names();
    for kept in ["theirs", "clash", "stranger", "web"] {
        assert!(r.fake.is_running(kept), "{kept} is left running: {names:?}");
    }
    assert!(!names.contains(&"old-svc".to_string()));
    assert_eq!(
        r.fake.mutations(),
        vec![Call::Create("clash".into()), Call::Remove("old-svc".into())]
    );
    let applied: super::AppliedState = r
        .store
        .load(crate::store::APPLIED)
        .expect("load")
        .expect("saved");
    assert_eq!(
        applied.containers,
        vec!["clash".to_string(), "web".to_string()]
    );
}

/// A managed container under `name`'s making name, made as `name`, never
/// started, created `age` seconds ago.
fn left_from_making(r: &Rig, name: &str, age: i64) -> String {
    let making = crate::runtime::making_name(name);
    let mut spec = managed(&making, name, &img(1));
    spec.labels
        .insert(crate::runtime::LABEL_MADE_AS.into(), name.into());
    r.fake.add_container(spec, false);
    r.fake.age(&making, age);
    making
}

#[tokio::test]
async fn containers_left_by_interrupted_creates_are_removed_once_past_the_grace_if_ours() {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    let first = r
        .apply(json!([service("web", &img(1)), service("db", &img(1))]))
        .await;
    assert!(first.ok, "{first}");
    let grace = crate::runtime::MAKING_GRACE.as_secs() as i64;
    // Declared, and known: past the grace, removed.
    let web_old = left_from_making(&r, "web", grace + 5);
    // Known but no longer declared: removed too.
    let db_old = left_from_making(&r, "db", grace + 5);
    // Within the grace: a create may still be making it.
    let web_new = left_from_making(&r, "web2", 30);
    // Made as a name this state never declared: another state's.
    let other = left_from_making(&r, "theirs", grace + 5);
    r.fake.clear_calls();
    let report = r
        .apply(json!([service("web", &img(1)), service("web2", &img(1))]))
        .await;
    assert!(report.ok, "{report}");
    let names = r.fake.container_names();
    for gone in [&web_old, &db_old] {
        assert!(!names.contains(gone), "{gone} is removed: {names:?}");
    }
    for kept in [&web_new, &other] {
        assert!(names.contains(kept), "{kept} stays: {names:?}");
    }
    // Nothing of it in the report: web unchanged, web2 created, db removed.
    assert_eq!(
        actions(&report),
        pairs(&[("web", "unchanged"), ("web2", "created"), ("db", "removed")])
    );
}

#[tokio::test]
async fn step_containers_of_declared_steps_stay_and_a_renamed_service_is_recreated() {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    let mut last_run = managed("gc-run", "gc", &img(1));
    last_run
        .labels
        .insert(crate::container_spec::LABEL_ROLE.into(), "step".into());
    r.fake.add_container(last_run, false);
    let mut web = service("web", &img(1));
    r.apply(json!([web.clone(), step("gc", &img(1), &[])]))
        .await;
    web["name"] = json!("web-2");
    let report = r.apply(json!([web, step("gc", &img(1), &[])])).await;
    assert_eq!(
        actions(&report),
        pairs(&[("web", "recreated"), ("gc", "unchanged")])
    );
    assert_eq!(reason(&report, "web"), "name changed (was web)");
    let names = r.fake.container_names();
    assert!(
        names.contains(&"gc-run".to_string()),
        "its last run is kept"
    );
    assert!(names.contains(&"web-2".to_string()) && !names.contains(&"web".to_string()));
}

#[tokio::test]
async fn scheduled_steps_are_installed_never_run_and_never_fail_the_apply() {
    let r = Rig::new();
    let report = r
        .apply(json!([
            step("gc", &img(7), &[]),
            with_env_file(step("broken", &img(7), &[]), &r.path("missing.env")),
        ]))
        .await;
    assert!(report.ok, "{report}");
    assert_eq!(
        actions(&report),
        pairs(&[("gc", "installed"), ("broken", "failed")])
    );
    assert!(reason(&report, "broken").starts_with("schedule not installed:"));
    assert_eq!(r.count(&Call::Pull(img(7))), 1, "pulled once");
    assert!(!r
        .fake
        .calls()
        .iter()
        .any(|c| matches!(c, Call::Create(_) | Call::Start(_))));
    assert_eq!(
        report.steps.iter().map(|s| s.id()).collect::<Vec<_>>(),
        vec!["gc"]
    );

    // An image that cannot be pulled is reported, and still not a failure.
    let r = Rig::new();
    r.fake.fail_pull(
        &img(8),
        RuntimeError::Registry {
            reference: img(8),
            status: 404,
            reason: "manifest unknown".into(),
        },
    );
    let report = r.apply(json!([step("gc", &img(8), &[])])).await;
    assert!(report.ok, "{report}");
    assert!(reason(&report, "gc").contains("status 404"), "{report}");
}

#[tokio::test]
async fn a_registry_refusal_fails_at_once_naming_the_reference() {
    let r = Rig::new();
    r.fake.fail_pull(
        &img(3),
        RuntimeError::Registry {
            reference: img(3),
            status: 401,
            reason: "unauthorized".into(),
        },
    );
    let report = r.apply(json!([service("web", &img(3))])).await;
    assert!(!report.ok);
    assert!(reason(&report, "web").contains(&img(3)), "{report}");
    assert_eq!(r.count(&Call::Pull(img(3))), 1);
}

fn unavailable(image: &str) -> RuntimeError {
    RuntimeError::RegistryUnavailable {
        reference: image.into(),
        reason: "connection refused".into(),
    }
}

fn policy() -> PullPolicy {
    PullPolicy {
        budget: Duration::from_secs(30),
        first_backoff: Duration::from_secs(2),
        max_backoff: Duration::from_secs(8),
        window_poll: Duration::from_secs(1),
    }
}

#[tokio::test(start_paused = true)]
async fn an_unanswering_registry_is_retried_within_one_budget_per_apply() {
    let r = Rig::new();
    r.fake.fail_pull(&img(4), unavailable(&img(4)));
    r.fake.fail_pull(&img(5), unavailable(&img(5)));
    let began = tokio::time::Instant::now();
    let report = r
        .applier()
        .with_pull_policy(policy())
        .apply(&decl(json!([
            service("svc-a", &img(4)),
            service("svc-b", &img(5))
        ])))
        .await;
    let took = began.elapsed();
    assert_eq!(
        actions(&report),
        pairs(&[("svc-a", "failed"), ("svc-b", "failed")])
    );
    assert!(reason(&report, "svc-a").contains("gave up"), "{report}");
    // Retries at 2, 6, 14, 22, 30 s: six tries, then the budget is spent.
    assert_eq!(r.count(&Call::Pull(img(4))), 6);
    assert_eq!(
        r.count(&Call::Pull(img(5))),
        1,
        "the budget is shared by the apply"
    );
    assert!(took <= Duration::from_secs(31), "{took:?}");

    // Recovering within the budget succeeds.
    let r = Rig::new();
    r.fake.fail_pull_times(&img(4), unavailable(&img(4)), 2);
    let report = r
        .applier()
        .with_pull_policy(policy())
        .apply(&decl(json!([service("svc-a", &img(4))])))
        .await;
    assert_eq!(report.lines[0].to_string(), "svc-a created: image pulled");
}

#[tokio::test(start_paused = true)]
async fn an_unanswering_registry_is_waited_for_while_a_window_is_open() {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    r.fake.fail_pull(&img(4), unavailable(&img(4)));
    r.open_window("gc", &["registry"]);
    // The window closes after 50 s, and then the registry answers.
    let closer = {
        let (store, fake, image) = (r.store.clone(), r.fake.clone(), img(4));
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(50)).await;
            Records::of(&store).remove("gc").expect("close");
            fake.fail_pull_times(&image, unavailable(&image), 0);
        })
    };
    let began = tokio::time::Instant::now();
    let report = r
        .applier()
        .with_pull_policy(policy())
        .apply(&decl(json!([
            service("web", &img(4)),
            step("gc", &img(1), &[])
        ])))
        .await;
    closer.await.expect("closer");
    let took = began.elapsed();
    assert!(report.ok, "{report}");
    assert_eq!(report.lines[0].to_string(), "web created: image pulled");
    assert!(
        took >= Duration::from_secs(50),
        "waited for the window: {took:?}"
    );
    assert!(took < Duration::from_secs(53), "and no longer: {took:?}");
    assert_eq!(
        r.count(&Call::Pull(img(4))),
        2,
        "one try before, one after the window"
    );
}

#[tokio::test]
async fn a_corrupt_state_file_fails_the_apply_and_changes_nothing() {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    let inputs = r
        .store
        .document_path(crate::store::CONTAINER_INPUTS)
        .expect("path");
    std::fs::write(&inputs, b"{\"web\": ").expect("damage");
    let report = r
        .apply(json!([
            file("env", &r.path("env"), "x"),
            service("web", &img(1))
        ]))
        .await;
    assert!(!report.ok);
    assert!(!report.complete, "the schedules must not follow it");
    assert!(report.lines.is_empty());
    let error = report.error.as_deref().expect("error");
    assert!(error.contains(&inputs.display().to_string()), "{error}");
    assert!(error.contains("refuses to guess"), "{error}");
    assert!(r.fake.mutations().is_empty());
    assert!(!std::path::Path::new(&r.path("env")).exists());
    assert_eq!(
        std::fs::read(&inputs).expect("read"),
        b"{\"web\": ",
        "left for the operator"
    );
    assert!(r
        .store
        .load::<Value>(crate::store::APPLIED)
        .expect("load")
        .is_none());
}

#[tokio::test]
async fn units_are_prepared_once_converged_in_place_and_removed_when_undeclared() {
    let r = Rig::new();
    let units = Arc::new(FakeUnits::default());
    let unit = |id: &str, name: &str| json!({"id": id, "type": "unit", "name": name, "content": "[Service]\nExecStart=/bin/true\n"});
    let applier = r.applier().with_units(units.clone());
    let report = applier
        .apply(&decl(json!([
            unit("a", "a.service"),
            file("f", &r.path("f"), "x"),
            unit("b", "b.service")
        ])))
        .await;
    assert!(report.ok, "{report}");
    // Written, then started (declared `started`, not running).
    assert_eq!(
        actions(&report),
        pairs(&[("a", "started"), ("f", "created"), ("b", "started")])
    );
    assert_eq!(reason(&report, "a"), "file created; started");
    // Every file written at the first unit (one reload), each unit
    // started at its place.
    assert_eq!(
        units.calls(),
        vec!["prepare a,b", "start a.service", "start b.service"]
    );
    assert!(units.is_active("a.service") && units.is_active("b.service"));
    let report = applier.apply(&decl(json!([unit("a", "a.service")]))).await;
    assert_eq!(
        actions(&report),
        pairs(&[("a", "unchanged"), ("b.service", "removed")])
    );
    // Nothing to write or start: only the removal.
    assert_eq!(units.calls()[3..], ["remove b.service"]);

    // Without a unit manager, a unit fails with the reason given.
    let report = r
        .applier()
        .without_units("no systemd bus at /run/dbus/system_bus_socket")
        .apply(&decl(json!([unit("a", "a.service")])))
        .await;
    assert!(!report.ok);
    assert_eq!(
        report.lines[0].to_string(),
        "a failed: no systemd bus at /run/dbus/system_bus_socket"
    );
}

#[tokio::test]
async fn a_runtime_that_cannot_list_fails_containers_but_files_apply() {
    let r = Rig::new();
    r.fake.set_unreachable(true);
    let report = r
        .apply(json!([
            file("f", &r.path("f"), "x"),
            service("web", &img(1))
        ]))
        .await;
    assert!(!report.ok);
    assert_eq!(
        actions(&report),
        pairs(&[("f", "created"), ("web", "failed")])
    );
    assert!(reason(&report, "web").contains("unreachable"), "{report}");
    assert_eq!(report.warnings.len(), 1, "{report}");
}

#[tokio::test]
async fn the_report_renders_as_text_and_json() {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    r.fake.add_container(managed("web", "web", &img(1)), true);
    let report = r
        .apply(json!([service("web", &img(1)), step("gc", &img(1), &[])]))
        .await;
    let text = report.to_string();
    assert_eq!(
        text,
        "web recreated: made by an older record format\ngc installed\napply ok: 1 installed, 1 recreated"
    );
    let json = serde_json::to_value(&report).expect("json");
    assert_eq!(json["ok"], true);
    // Each line with the steps it took and what became of them: a
    // service that declares no check may be gated by its image's.
    assert_eq!(
        json["lines"][0],
        json!({"id": "web", "action": "recreated", "reason": "made by an older record format",
               "steps": [{"act": "replace", "on": "container web", "outcome": "done"},
                         {"act": "wait-healthy", "on": "container web", "outcome": "done",
                          "reason": "health-gated on its image's check, if the image declares one: \
the previous container is put back if this one is not healthy within 90 s past its start period"}]})
    );
    assert_eq!(
        json["lines"][1],
        json!({"id": "gc", "action": "installed",
               "steps": [{"act": "install", "on": "schedule gc", "outcome": "done"}]})
    );
    assert!(json.get("steps").is_none());
    assert_eq!(json["windows"], json!([]));
    let back: ApplyReport = serde_json::from_value(json).expect("a client reads it back");
    assert_eq!(back.lines, report.lines);
    assert_eq!(back.to_string(), text);
}

#[tokio::test]
async fn apply_file_installs_it_as_the_node_declaration_under_the_lock() {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    let node_file = r.dir.path().join("etc/mesh-host/declaration.json");
    let resources = json!([service("web", &img(1)), step("gc", &img(1), &["web"])]);
    let bytes =
        serde_json::to_vec(&json!({"declaration": 1, "resources": resources})).expect("json");
    let report = r
        .applier()
        .install_and_apply(&decl(resources), &bytes, &node_file, false)
        .await
        .expect("not empty");
    assert!(report.ok, "{report}");
    assert!(report.complete);
    assert_eq!(report.steps.len(), 1);
    assert_eq!(std::fs::read(&node_file).expect("installed"), bytes);
    // Reconcile, reload and restart read it back, under the lock.
    let (again, report) = r
        .applier()
        .apply_node_declaration(&node_file, false)
        .await
        .expect("readable");
    assert_eq!(
        again,
        decl(json!([
            service("web", &img(1)),
            step("gc", &img(1), &["web"])
        ]))
    );
    assert_eq!(
        actions(&report),
        pairs(&[("web", "unchanged"), ("gc", "unchanged")])
    );
    // A file that cannot be installed fails the apply with nothing changed.
    let blocked = r.dir.path().join("blocker");
    std::fs::write(&blocked, b"x").expect("write");
    let report = r
        .applier()
        .install_and_apply(
            &decl(json!([service("other", &img(1))])),
            b"{}",
            &blocked.join("declaration.json"),
            false,
        )
        .await
        .expect("not empty");
    assert!(!report.ok && !report.complete);
    assert!(
        report
            .error
            .as_deref()
            .unwrap_or("")
            .contains("cannot install"),
        "{report}"
    );
    assert!(r.fake.spec_of("other").is_none());
    // An unreadable node declaration applies nothing.
    let missing = r.dir.path().join("nothing.json");
    let e = r
        .applier()
        .apply_node_declaration(&missing, false)
        .await
        .expect_err("absent");
    assert!(e.to_string().contains("nothing.json"), "{e}");
}

#[tokio::test]
async fn a_no_op_apply_rewrites_only_the_time_of_the_apply() {
    use crate::store::{APPLIED, CONTAINER_INPUTS, LAST_APPLY};
    let r = Rig::new();
    r.fake.add_image(&img(1));
    r.fake.add_image(&img(2));
    let inputs_path = r.store.document_path(CONTAINER_INPUTS).expect("path");
    // With nothing declared the documents are still made.
    let empty = r.apply(json!([])).await;
    assert!(empty.ok, "{empty}");
    assert!(inputs_path.exists(), "made even when empty");
    let services = |api: &str| json!([service("web", &img(1)), service("api", api)]);
    let first = r.apply(services(&img(1))).await;
    assert!(first.ok, "{first}");
    // The same content in another (compact) form: a write would turn it
    // back into the store's pretty form.
    let recorded: Value = r
        .store
        .load(CONTAINER_INPUTS)
        .expect("load")
        .expect("present");
    assert_eq!(recorded["api"]["fields"]["image"], json!(img(1)));
    let compact = serde_json::to_string(&recorded).expect("json");
    std::fs::write(&inputs_path, &compact).expect("write");
    let applied_at = |r: &Rig| {
        super::load_applied(&r.store)
            .expect("load")
            .expect("present")
            .applied_at
    };
    let applied_path = r.store.document_path(APPLIED).expect("path");
    let last_path = r.store.document_path(LAST_APPLY).expect("path");
    // The first no-op records its lines as `unchanged` (they said
    // `created`); from then on what was applied is the same.
    let noop = r.apply(services(&img(1))).await;
    assert!(noop.ok, "{noop}");
    let applied_before = std::fs::read(&applied_path).expect("read");
    let first_at = applied_at(&r);
    let last_before = std::fs::read(&last_path).expect("read");

    let noop = r.apply(services(&img(1))).await;
    assert_eq!(
        actions(&noop),
        pairs(&[("web", "unchanged"), ("api", "unchanged")])
    );
    assert_eq!(
        std::fs::read_to_string(&inputs_path).expect("read"),
        compact,
        "unchanged, so not written again"
    );
    assert_eq!(
        std::fs::read(&applied_path).expect("read"),
        applied_before,
        "what was applied is the same, so not written again"
    );
    assert_ne!(std::fs::read(&last_path).expect("read"), last_before);
    assert!(applied_at(&r) > first_at, "the apply itself is recorded");

    let changed = r.apply(services(&img(2))).await;
    assert_eq!(
        actions(&changed),
        pairs(&[("web", "unchanged"), ("api", "recreated")])
    );
    assert_ne!(
        std::fs::read_to_string(&inputs_path).expect("read"),
        compact
    );
    let recorded: BTreeMap<String, super::ContainerInputs> = r
        .store
        .load(CONTAINER_INPUTS)
        .expect("load")
        .expect("present");
    assert_eq!(recorded["api"].fields.get("image"), Some(json!(img(2))));
    assert_eq!(recorded["web"].fields.get("image"), Some(json!(img(1))));
}

#[tokio::test]
async fn steps_among_many_services_are_unchanged_only_when_declared_alike() {
    let r = Rig::new();
    r.fake.add_image(&img(1));
    r.fake.add_image(&img(2));
    let declared = |gc_schedule: &str| {
        let mut resources: Vec<Value> = (0..200)
            .map(|i| service(&format!("s{i}"), &img(1)))
            .collect();
        let mut gc = step("gc", &img(2), &[]);
        gc["schedule"] = json!(gc_schedule);
        resources.insert(100, gc);
        resources.push(step("backup", &img(2), &[]));
        Value::Array(resources)
    };
    let first = r.apply(declared("0 3 * * *")).await;
    assert!(first.ok, "{first}");
    assert_eq!(
        first.line("gc").expect("gc").action.to_string(),
        "installed"
    );
    let same = r.apply(declared("0 3 * * *")).await;
    assert!(
        same.lines
            .iter()
            .all(|l| l.action.to_string() == "unchanged"),
        "{same}"
    );
    let moved = r.apply(declared("5 4 * * *")).await;
    assert_eq!(
        moved.line("gc").expect("gc").action.to_string(),
        "installed"
    );
    assert_eq!(
        moved.line("backup").expect("backup").action.to_string(),
        "unchanged"
    );
    assert_eq!(
        moved.line("s199").expect("s199").action.to_string(),
        "unchanged"
    );
    // A step is compared with what the last apply declared, not the one
    // before: declared back as it was, it is installed again.
    let back = r.apply(declared("0 3 * * *")).await;
    assert_eq!(back.line("gc").expect("gc").action.to_string(), "installed");
}

#[tokio::test]
async fn an_empty_declaration_never_wipes_a_node_unless_allowed() {
    use super::node_declaration::DeclarationFileError;
    let r = Rig::new();
    r.fake.add_image(&img(1));
    let node_file = r.dir.path().join("etc/mesh-host/declaration.json");
    let empty = serde_json::to_vec(&json!({"declaration": 1, "resources": []})).expect("json");
    // A fresh node takes it, as it always did.
    let report = r
        .applier()
        .install_and_apply(&decl(json!([])), &empty, &node_file, false)
        .await
        .expect("nothing is applied yet");
    assert!(report.ok, "{report}");
    let resources = json!([service("web", &img(1)), step("gc", &img(1), &["web"])]);
    let full =
        serde_json::to_vec(&json!({"declaration": 1, "resources": resources})).expect("json");
    let report = r
        .applier()
        .install_and_apply(&decl(resources), &full, &node_file, false)
        .await
        .expect("not empty");
    assert!(report.ok, "{report}");
    // `apply FILE` of an empty one: refused, nothing removed, the node's
    // file not replaced.
    let refused = r
        .applier()
        .install_and_apply(&decl(json!([])), &empty, &node_file, false)
        .await
        .expect_err("would wipe");
    assert_eq!(refused.applied(), Some(2), "{refused}");
    assert_eq!(std::fs::read(&node_file).expect("kept"), full);
    assert!(r.fake.spec_of("web").is_some());
    assert_eq!(r.count(&Call::Remove("web".into())), 0);
    // The same file written in place (a reload, a restart): refused too.
    std::fs::write(&node_file, &empty).expect("write");
    match r.applier().apply_node_declaration(&node_file, false).await {
        Err(DeclarationFileError::Empty { refused, .. }) => {
            assert_eq!(refused.applied(), Some(2))
        }
        other => panic!("not refused as empty: {other:?}"),
    }
    assert!(r.fake.spec_of("web").is_some());
    // --allow-empty removes it all; after that, empty is what is applied.
    let report = r
        .applier()
        .install_and_apply(&decl(json!([])), &empty, &node_file, true)
        .await
        .expect("allowed");
    assert!(report.ok, "{report}");
    assert!(r.fake.spec_of("web").is_none(), "{report}");
    let (_, report) = r
        .applier()
        .apply_node_declaration(&node_file, false)
        .await
        .expect("nothing left to wipe (the step's container was never made)");
    assert!(report.ok, "{report}");
}

#[tokio::test]
async fn a_step_that_leaves_the_declaration_loses_its_suspension() {
    use crate::schedule::suspend;
    let r = Rig::new();
    r.fake.add_image(&img(1));
    let report = r
        .apply(json!([
            service("web", &img(1)),
            step("gc", &img(1), &["web"]),
            step("backup", &img(1), &["web"])
        ]))
        .await;
    assert!(report.ok, "{report}");
    suspend::suspend(&r.store, "gc", Utc::now()).expect("suspend");
    suspend::suspend(&r.store, "backup", Utc::now()).expect("suspend");
    // Applied again with both: kept across applies.
    let report = r
        .apply(json!([
            service("web", &img(1)),
            step("gc", &img(1), &["web"]),
            step("backup", &img(1), &["web"])
        ]))
        .await;
    assert!(report.ok, "{report}");
    assert_eq!(suspend::load(&r.store).expect("load").steps.len(), 2);
    // backup leaves: its suspension goes, gc's stays.
    let report = r
        .apply(json!([
            service("web", &img(1)),
            step("gc", &img(1), &["web"])
        ]))
        .await;
    assert!(report.ok, "{report}");
    let left = suspend::load(&r.store).expect("load");
    assert!(left.since("gc").is_some());
    assert_eq!(left.since("backup"), None);
}

#[tokio::test]
async fn a_changed_env_file_recreates_a_held_service_and_re_arms_the_step_reading_it() {
    // Every container is built once per apply and every file read once:
    // the file written by this apply is still what the service after it,
    // the step reading it and the steps holding the service see.
    use crate::schedule::jobs::JobTable;
    let r = Rig::new();
    r.fake.add_image(&img(1));
    r.fake.add_image(&img(2));
    let env = r.path("etc/app/env");
    let declared = |content: &str| {
        json!([
            file("env", &env, content),
            with_env_file(service("web", &img(1)), &env),
            with_env_file(step("gc", &img(2), &["web"]), &env),
            step("other", &img(2), &["web"]),
        ])
    };
    let mut table = JobTable::new();
    let mut arm = |report: &ApplyReport| {
        let timings: Vec<_> = report.steps.iter().map(|s| s.timing.clone()).collect();
        table.sync(timings, &BTreeMap::new(), Utc::now()).0
    };
    let held_env = |report: &ApplyReport| {
        let other = report.steps.iter().find(|s| s.id() == "other");
        let held = other.expect("other installed").hold_specs();
        let web = held.iter().find(|s| s.name == "web").expect("web held");
        web.env.clone()
    };
    let first = r.apply(declared("A=1\n")).await;
    assert!(first.ok, "{first}");
    assert_eq!(arm(&first).added, vec!["gc", "other"]);

    let same = r.apply(declared("A=1\n")).await;
    assert_eq!(
        same.line("web").expect("web").action.to_string(),
        "unchanged"
    );
    assert_eq!(arm(&same).kept, vec!["gc", "other"]);

    let changed = r.apply(declared("A=2\n")).await;
    assert_eq!(reason(&changed, "web"), format!("{env} changed"));
    assert_eq!(r.fake.spec_of("web").expect("web").env[0].1, "2");
    let synced = arm(&changed);
    assert_eq!(synced.rearmed, vec!["gc"], "the step reading the file");
    assert_eq!(synced.kept, vec!["other"]);
    assert_eq!(held_env(&changed), vec![("A".to_string(), "2".to_string())]);
    let gc = changed.steps.iter().find(|s| s.id() == "gc").expect("gc");
    assert_eq!(
        gc.def().expect("unpacks").spec.env,
        vec![("A".to_string(), "2".to_string())]
    );

    // The service declared before the file: built before the write, and
    // built again after it for the step that holds it.
    let reordered = r
        .apply(json!([
            with_env_file(service("web", &img(1)), &env),
            file("env", &env, "A=3\n"),
            step("other", &img(2), &["web"]),
        ]))
        .await;
    assert_eq!(
        reordered.line("web").expect("web").action.to_string(),
        "unchanged"
    );
    assert_eq!(
        held_env(&reordered),
        vec![("A".to_string(), "3".to_string())]
    );
}

/// Every file under `dir`, with its content: what a preview must leave
/// as it found it.
fn tree(dir: &std::path::Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                out.insert(
                    path.display().to_string(),
                    std::fs::read(&path).unwrap_or_default(),
                );
            }
        }
    }
    out
}

#[tokio::test]
async fn a_preview_decides_as_the_apply_after_it_and_changes_nothing() {
    let r = Rig::new();
    let conf = r.path("etc/app/app.conf");
    let env = r.path("etc/app/env");
    let readable = |id: &str, path: &str, content: &str| json!({"id": id, "type": "file", "path": path, "content": content, "mode": "0644"});
    let first = r
        .apply(json!([
            readable("conf", &conf, "a=1\nb=2\n"),
            file("env", &env, "A=1\n"),
            with_env_file(service("web", &img(1)), &env),
            service("old", &img(1)),
            step("gc", &img(2), &["web"]),
        ]))
        .await;
    assert!(first.ok, "{first}");
    let next = decl(json!([
        readable("conf", &conf, "a=1\nb=3\n"),
        file("env", &env, "A=2\n"),
        with_env_file(service("web", &img(1)), &env),
        service("new", &img(1)),
        readable("fresh", &r.path("srv/new/file"), "x\n"),
        step("gc", &img(3), &["web"]),
    ]));
    let calls_before = r.fake.calls().len();
    let files_before = tree(r.dir.path());
    let preview = r.applier().preview(&next).await;
    // Nothing written: no runtime call but reads, no file, no state.
    let writes: Vec<_> = r.fake.calls()[calls_before..]
        .iter()
        .filter(|c| {
            !matches!(
                c,
                Call::ListManaged
                    | Call::Inspect(_)
                    | Call::ImagePresent(_)
                    | Call::Network(_)
                    | Call::Volume(_)
            )
        })
        .cloned()
        .collect();
    assert!(writes.is_empty(), "a preview called {writes:?}");
    assert_eq!(tree(r.dir.path()), files_before, "a preview wrote");
    assert!(preview.changed);
    assert_eq!(preview.diff_exit().code(), 1);
    let conf_line = preview.line("conf").expect("conf");
    let diff = conf_line.diff.as_deref().expect("a readable file's diff");
    assert!(diff.contains("-b=2\n+b=3\n"), "{diff}");
    let env_line = preview.line("env").expect("env");
    assert!(
        env_line.diff.is_none(),
        "a secret file's content is never shown"
    );
    assert!(
        env_line
            .reason
            .as_deref()
            .unwrap_or("")
            .contains("not readable by others"),
        "{env_line}"
    );
    // The apply after it does what the preview said, for the same reasons.
    let applied = r.applier().apply(&next).await;
    assert!(applied.ok, "{applied}");
    let said = |report: &ApplyReport| {
        report
            .lines
            .iter()
            .map(|l| {
                let reason = match l.action {
                    super::Action::Recreated | super::Action::Updated => l.reason.clone(),
                    _ => None,
                };
                (l.id.clone(), l.action.to_string(), reason)
            })
            .collect::<Vec<_>>()
    };
    // Reasons of files: the preview adds what it does not show.
    let strip = |mut lines: Vec<(String, String, Option<String>)>| {
        for l in &mut lines {
            if l.0 == "env" {
                l.2 = None;
            }
        }
        lines
    };
    assert_eq!(strip(said(&preview)), strip(said(&applied)));
    assert_eq!(
        preview.line("web").map(|l| l.action.to_string()),
        Some("recreated".to_string())
    );
    assert_eq!(
        preview.line("old").map(|l| l.action.to_string()),
        Some("removed".to_string())
    );
    // And then nothing would change.
    let again = r.applier().preview(&next).await;
    assert!(!again.changed, "{}", super::PreviewText(&again));
    assert_eq!(again.diff_exit().code(), 0);
}

#[path = "volume_tests.rs"]
mod volume_tests;

#[path = "networking_tests.rs"]
mod networking_tests;

#[path = "plan_tests.rs"]
mod plan_tests;

#[path = "depends_tests.rs"]
mod depends_tests;
#[path = "peer_tests.rs"]
mod peer_tests;

#[path = "rollout_tests.rs"]
mod rollout_tests;
