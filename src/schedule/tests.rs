//! Ordering and timing of fires and windows, against the scripted runtime
//! and a fake clock. The same behaviours are tested on a real Docker in
//! `tests/windows_docker.rs`.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use crate::clock::{Clock, FakeClock};
use crate::progress::Reporter;
use crate::runtime::fake::{Call, FakeRuntime};
use crate::runtime::{ContainerRuntime, ContainerSpec};
use crate::schedule::fire::{FireReport, Firer, RunOutcome, StepDef};
use crate::store::Store;
use crate::systemd::units::NoUnits;
use crate::window::{HeldContainer, WindowRecord};
use crate::window::{Owner, Records, Resumed, Windows};

pub(crate) struct Rig {
    pub(crate) fake: FakeRuntime,
    pub(crate) store: Store,
    pub(crate) records: Records,
    pub(crate) clock: Arc<FakeClock>,
    pub(crate) firer: Firer,
    shutdown: watch::Sender<bool>,
    _dir: tempfile::TempDir,
}

pub(crate) fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-06-01T03:00:00Z")
        .expect("test time")
        .to_utc()
}

pub(crate) fn rig(services: &[(&str, bool)]) -> Rig {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("state")).expect("store");
    let fake = FakeRuntime::new();
    fake.add_image("img@sha256:00");
    for (name, running) in services {
        fake.add_container(spec(name), *running);
    }
    let runtime: Arc<dyn ContainerRuntime> = Arc::new(fake.clone());
    let clock = Arc::new(FakeClock::new(t0()));
    let windows = Windows::new(
        store.clone(),
        runtime.clone(),
        clock.clone(),
        Owner::current().expect("owner"),
    );
    let (shutdown, rx) = watch::channel(false);
    let firer = Firer::new(runtime, windows, Arc::new(NoUnits), rx);
    fake.clear_calls();
    Rig {
        fake,
        records: Records::of(&store),
        store,
        clock,
        firer,
        shutdown,
        _dir: dir,
    }
}

pub(crate) fn spec(name: &str) -> ContainerSpec {
    ContainerSpec {
        name: name.into(),
        image: "img@sha256:00".into(),
        ..ContainerSpec::default()
    }
}

pub(crate) fn step(id: &str, holds: &[&str], timeout: Option<u64>) -> StepDef {
    StepDef {
        id: id.into(),
        module: Some("m".into()),
        spec: spec(&format!("{id}-run")).into(),
        timeout: timeout.map(Duration::from_secs),
        holds: holds
            .iter()
            .map(|h| (h.to_string(), h.to_string()))
            .collect(),
        hold_specs: holds.iter().map(|h| std::sync::Arc::new(spec(h))).collect(),
    }
}

/// Starts, stops and creates, in order, leaving out reads.
pub(crate) fn moves(fake: &FakeRuntime) -> Vec<Call> {
    fake.calls()
        .into_iter()
        .filter(|c| {
            matches!(
                c,
                Call::Start(_) | Call::Stop(_) | Call::Create(_) | Call::Kill(_)
            )
        })
        .collect()
}

pub(crate) fn s(n: &str) -> String {
    n.to_string()
}

#[tokio::test(start_paused = true)]
async fn stops_in_order_runs_then_starts_in_reverse() {
    let r = rig(&[("db", true), ("app", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(30));
    let def = step("gc", &["db", "app"], None);
    let firer = r.firer.clone();
    let fire = tokio::spawn(async move { firer.fire(&def, t0()).await });
    // Mid-run: the record is on disk and both services are down.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let records = r.records.all().expect("records");
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0].held_names().collect::<Vec<_>>(),
        vec!["db", "app"]
    );
    assert!(!r.fake.is_running("db") && !r.fake.is_running("app"));
    let report = fire.await.expect("fire task");
    assert_eq!(report.outcome, RunOutcome::Succeeded);
    assert!(report.ok());
    assert_eq!(
        moves(&r.fake),
        vec![
            // The step's container is made before the first stop: the
            // last stop is followed by its start alone.
            Call::Create(s("gc-run")),
            Call::Stop(s("db")),
            Call::Stop(s("app")),
            Call::Start(s("gc-run")),
            Call::Start(s("app")),
            Call::Start(s("db")),
        ]
    );
    assert_eq!(report.started_again, vec!["app", "db"]);
    assert!(
        r.records.all().expect("records").is_empty(),
        "record erased"
    );
}

#[tokio::test(start_paused = true)]
async fn failed_step_still_closes_the_window() {
    let r = rig(&[("registry", true)]);
    r.fake.exit_with("gc-run", 1, Duration::from_secs(3));
    let report = r.firer.fire(&step("gc", &["registry"], None), t0()).await;
    assert_eq!(report.outcome, RunOutcome::Exited { status: 1 });
    assert!(!report.ok());
    assert!(r.fake.is_running("registry"));
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn step_over_its_timeout_is_stopped_and_the_window_closes() {
    let r = rig(&[("registry", true)]);
    // No exit script: the step runs until stopped.
    let report = r
        .firer
        .fire(&step("gc", &["registry"], Some(60)), t0())
        .await;
    assert!(
        matches!(report.outcome, RunOutcome::TimedOut { .. }),
        "{:?}",
        report.outcome
    );
    assert!(report.duration_secs >= 60.0);
    assert!(r.fake.calls().contains(&Call::Stop(s("gc-run"))));
    assert!(!r.fake.is_running("gc-run"));
    assert!(r.fake.is_running("registry"));
}

#[tokio::test(start_paused = true)]
async fn a_start_that_fails_is_reported_and_the_others_still_start() {
    let r = rig(&[("db", true), ("app", true), ("web", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(1));
    r.fake.fail_start("app");
    let report = r
        .firer
        .fire(&step("gc", &["db", "app", "web"], None), t0())
        .await;
    assert_eq!(report.outcome, RunOutcome::Succeeded);
    assert!(!report.ok(), "a held container left down fails the fire");
    assert_eq!(report.not_started, vec!["app"]);
    assert_eq!(report.started_again, vec!["web", "db"]);
    assert!(r.fake.is_running("db") && r.fake.is_running("web"));
    assert!(!r.fake.is_running("app"));
    // The record is erased all the same: the alert is the way out, and the
    // next apply converges the container.
    assert!(r.records.all().expect("records").is_empty());
    // The alert is recorded for `status` too.
    let alerts = crate::window::alerts::since(&r.store, None).expect("alerts");
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!(alerts[0].event, "will-not-start-again");
    assert_eq!(alerts[0].container.as_deref(), Some("app"));
}

#[tokio::test(start_paused = true)]
async fn a_container_already_stopped_stays_stopped() {
    let r = rig(&[("db", false), ("app", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(1));
    let report = r.firer.fire(&step("gc", &["db", "app"], None), t0()).await;
    assert!(report.ok());
    assert!(!r.fake.is_running("db"));
    assert!(r.fake.is_running("app"));
    assert!(!moves(&r.fake).contains(&Call::Stop(s("db"))));
    assert!(!moves(&r.fake).contains(&Call::Start(s("db"))));
}

#[tokio::test(start_paused = true)]
async fn a_held_container_started_by_someone_else_is_stopped_again() {
    let r = rig(&[("registry", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(30));
    let firer = r.firer.clone();
    let fire =
        tokio::spawn(async move { firer.fire(&step("gc", &["registry"], None), t0()).await });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(r.fake.external_start("registry"), "the operator starts it");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !r.fake.is_running("registry"),
        "the window stopped it again"
    );
    let stops = r
        .fake
        .calls()
        .iter()
        .filter(|c| **c == Call::Stop(s("registry")))
        .count();
    assert_eq!(stops, 2);
    assert!(fire.await.expect("fire").ok());
    assert!(r.fake.is_running("registry"));
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_the_step_and_closes_the_window() {
    let r = rig(&[("registry", true)]);
    let firer = r.firer.clone();
    let fire =
        tokio::spawn(async move { firer.fire(&step("gc", &["registry"], None), t0()).await });
    tokio::time::sleep(Duration::from_secs(5)).await;
    r.shutdown.send(true).expect("send");
    let report: FireReport = fire.await.expect("fire");
    assert!(matches!(report.outcome, RunOutcome::Interrupted { .. }));
    assert!(r.fake.is_running("registry"));
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn no_record_no_stop() {
    let r = rig(&[("registry", true)]);
    // The windows directory is replaced by a file: the record cannot be written.
    let windows_dir = r.store.root().join("windows");
    std::fs::remove_dir_all(&windows_dir).expect("rm");
    std::fs::write(&windows_dir, b"not a directory").expect("write");
    let report = r.firer.fire(&step("gc", &["registry"], None), t0()).await;
    match &report.outcome {
        RunOutcome::Error { reason } => assert!(reason.contains("nothing stopped"), "{reason}"),
        other => panic!("expected an error, got {other:?}"),
    }
    assert!(r.fake.is_running("registry"));
    assert!(!r.fake.calls().contains(&Call::Stop(s("registry"))));
    assert!(!r.fake.calls().contains(&Call::Start(s("gc-run"))));
}

#[tokio::test(start_paused = true)]
async fn a_run_still_going_is_never_stacked() {
    let r = rig(&[]);
    r.fake.add_container(spec("gc-run"), true);
    let report = r.firer.fire(&step("gc", &[], None), t0()).await;
    assert!(
        matches!(report.outcome, RunOutcome::Skipped { .. }),
        "{:?}",
        report.outcome
    );
    assert!(!r.fake.calls().contains(&Call::Create(s("gc-run"))));
}

#[tokio::test(start_paused = true)]
async fn a_leftover_exited_container_is_set_aside_replaced_then_removed() {
    let r = rig(&[]);
    r.fake.add_container(spec("gc-run"), false);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(1));
    let report = r.firer.fire(&step("gc", &[], None), t0()).await;
    assert!(report.ok(), "{:?}", report.outcome);
    let calls = r.fake.calls();
    let aside = calls
        .iter()
        .position(|c| *c == Call::Rename(s("gc-run"), s("gc-run.replaced")));
    let created = calls.iter().position(|c| *c == Call::Create(s("gc-run")));
    let removed = calls
        .iter()
        .position(|c| *c == Call::RemoveStopped(s("gc-run.replaced")));
    assert!(
        aside.is_some() && aside < created && created < removed,
        "{calls:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn fires_of_a_step_whose_image_declares_a_volume_carry_it_from_fire_to_fire() {
    let r = rig(&[]);
    r.fake.set_image_volumes("img@sha256:00", &["/data"]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(1));
    for n in 0..4 {
        let report = r
            .firer
            .fire(&step("gc", &[], None), t0() + chrono::Duration::minutes(n))
            .await;
        assert!(report.ok(), "{:?}", report.outcome);
    }
    let volumes = r.fake.volumes();
    assert_eq!(
        volumes.len(),
        1,
        "one volume, not one per fire: {volumes:?}"
    );
    let mounted: Vec<String> = r
        .fake
        .volumes_of("gc-run")
        .into_iter()
        .map(|v| v.name)
        .collect();
    assert_eq!(mounted, volumes);
    assert_eq!(r.fake.container_names(), vec![s("gc-run")]);
}

#[tokio::test(start_paused = true)]
async fn a_fire_carries_the_volume_of_a_container_an_interrupted_replace_set_aside() {
    let r = rig(&[]);
    r.fake.set_image_volumes("img@sha256:00", &["/data"]);
    let mut aside = spec("gc-run.replaced");
    aside.labels.insert(
        crate::runtime::LABEL_MANAGED.into(),
        crate::runtime::MANAGED_VALUE.into(),
    );
    r.fake.add_container(aside, false);
    let volume = r.fake.volumes();
    r.fake.exit_with("gc-run", 0, Duration::from_secs(1));
    let report = r.firer.fire(&step("gc", &[], None), t0()).await;
    assert!(report.ok(), "{:?}", report.outcome);
    assert_eq!(r.fake.volumes(), volume);
    assert_eq!(r.fake.container_names(), vec![s("gc-run")]);
}

/// Write a record whose owner is gone (this pid, another start time).
fn dead_record(r: &Rig, boot: &str, opened: DateTime<Utc>, timeout_secs: u64) {
    let owner = Owner::current().expect("owner");
    let record = WindowRecord {
        step: "gc".into(),
        module: None,
        fire_time: opened,
        opened_at: opened,
        boot_id: boot.to_string(),
        pid: owner.pid,
        // Not this process: a start time it never had.
        pid_start_time: owner.pid_start_time + 12345,
        step_container: "gc-run".into(),
        step_timeout_secs: Some(timeout_secs),
        opened_since_boot_secs: None,
        lease_since_boot_secs: None,
        owed: false,
        held: vec![HeldContainer {
            id: "registry".into(),
            name: "registry".into(),
            was_running: true,
            starting: false,
        }],
    };
    r.records.write(&record).expect("write record");
}

#[tokio::test(start_paused = true)]
async fn a_window_left_by_a_dead_daemon_waits_for_the_step_then_closes() {
    let r = rig(&[("registry", false), ("gc-run", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(20));
    let boot = crate::store::boot_id().expect("boot id");
    dead_record(&r, &boot, t0() - chrono::TimeDelta::minutes(5), 3600);
    let resumed = r.firer.windows().resume().await.expect("resume");
    match &resumed[..] {
        [Resumed::Closed {
            step,
            waited_exit,
            report,
        }] => {
            assert_eq!(step, "gc");
            assert_eq!(*waited_exit, Some(0), "the step was waited for");
            assert_eq!(report.started, vec!["registry"]);
        }
        other => panic!("unexpected {other:?}"),
    }
    // The step finished before the registry started; nothing ran twice.
    let calls = moves(&r.fake);
    assert_eq!(calls, vec![Call::Start(s("registry"))]);
    assert!(r.fake.is_running("registry"));
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_window_of_a_dead_owner_creates_again_a_removed_held_container_as_armed() {
    // The window's opener died; someone removed the registry meanwhile.
    // The adopter has no plan of the opener's, only the armed declaration.
    let r = rig(&[("registry", false)]);
    let boot = crate::store::boot_id().expect("boot id");
    dead_record(&r, &boot, t0() - chrono::TimeDelta::minutes(5), 3600);
    r.fake.remove("registry").await.expect("remove");
    let gc = crate::schedule::step::ScheduledStep {
        def: step("gc", &["registry"], None).into(),
        timing: std::sync::Arc::new(crate::schedule::jobs::StepTiming {
            id: "gc".into(),
            cron: crate::cron::CronSchedule::parse("0 3 * * *").expect("cron"),
            zone: chrono_tz::UTC,
            fingerprint: "f".into(),
            delay: std::time::Duration::ZERO,
            catch_up: false,
        }),
    };
    r.firer
        .windows()
        .know_held_specs(crate::schedule::step::held_specs([&*gc.def.hold_specs]));
    let resumed = r.firer.windows().resume().await.expect("resume");
    match &resumed[..] {
        [Resumed::Closed { report, .. }] => {
            assert_eq!(report.recreated, vec!["registry"]);
            assert_eq!(report.started, vec!["registry"]);
            assert!(report.lost.is_empty(), "{report:?}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(r.fake.is_running("registry"));
    assert_eq!(
        r.fake.spec_of("registry").expect("made").image,
        spec("registry").image
    );
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_window_of_a_dead_owner_reports_a_removed_held_container_lost_when_nothing_declares_it() {
    let r = rig(&[("registry", false)]);
    let boot = crate::store::boot_id().expect("boot id");
    dead_record(&r, &boot, t0() - chrono::TimeDelta::minutes(5), 3600);
    r.fake.remove("registry").await.expect("remove");
    let resumed = r.firer.windows().resume().await.expect("resume");
    match &resumed[..] {
        [Resumed::Closed { report, .. }] => {
            assert!(report.recreated.is_empty());
            assert_eq!(report.lost.len(), 1, "{report:?}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_window_taken_over_when_the_daemon_stops_stops_its_step_and_closes() {
    // A dead owner's step still runs (for an hour); the adopting daemon is
    // told to stop ten seconds into the wait.
    let r = rig(&[("registry", false), ("gc-run", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(3600));
    let boot = crate::store::boot_id().expect("boot id");
    dead_record(&r, &boot, t0() - chrono::TimeDelta::minutes(1), 7200);
    let (stop, stopping) = watch::channel(false);
    let windows = r.firer.windows().clone().stopping_on(stopping);
    let adopt = tokio::spawn(async move { windows.adopt("gc").await });
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(
        !adopt.is_finished(),
        "the step is waited for while the daemon runs"
    );
    assert!(r.fake.is_running("gc-run") && !r.fake.is_running("registry"));
    stop.send(true).expect("send");
    let resumed = tokio::time::timeout(Duration::from_secs(60), adopt)
        .await
        .expect("closes within the step's grace, not the step's hour")
        .expect("task")
        .expect("adopt");
    match resumed {
        Some(Resumed::Closed { report, .. }) => assert_eq!(report.started, vec!["registry"]),
        other => panic!("unexpected {other:?}"),
    }
    let calls = moves(&r.fake);
    let stopped = calls.iter().position(|c| *c == Call::Stop(s("gc-run")));
    let started = calls.iter().position(|c| *c == Call::Start(s("registry")));
    assert!(
        stopped.is_some() && stopped < started,
        "step stopped before the registry started: {calls:?}"
    );
    assert!(!r.fake.is_running("gc-run") && r.fake.is_running("registry"));
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_record_from_another_boot_holds_nothing_and_one_past_its_bound_closes() {
    for (boot, age_hours) in [("00000000-0000-0000-0000-000000000000", 1), ("", 7)] {
        let r = rig(&[("registry", false)]);
        let other_boot = !boot.is_empty();
        let boot = if boot.is_empty() {
            crate::store::boot_id().expect("boot")
        } else {
            boot.to_string()
        };
        dead_record(&r, &boot, t0() - chrono::TimeDelta::hours(age_hours), 3600);
        let resumed = r.firer.windows().resume().await.expect("resume");
        if other_boot {
            assert!(
                matches!(&resumed[..], [Resumed::Stale { .. }]),
                "{resumed:?}"
            );
        } else {
            assert!(
                matches!(
                    &resumed[..],
                    [Resumed::Closed {
                        waited_exit: None,
                        ..
                    }]
                ),
                "{resumed:?}"
            );
        }
        assert!(r.fake.is_running("registry"));
        assert!(r.records.all().expect("records").is_empty());
    }
}

#[tokio::test(start_paused = true)]
async fn a_resumed_step_that_outlives_its_timeout_is_stopped_and_the_window_closes() {
    // The step never exits on its own; its record says timeout 60 s and the
    // window opened 30 s ago: the resumer waits 30 s more, then stops it.
    let r = rig(&[("registry", false), ("gc-run", true)]);
    let boot = crate::store::boot_id().expect("boot id");
    dead_record(&r, &boot, t0() - chrono::TimeDelta::seconds(30), 60);
    let started = tokio::time::Instant::now();
    let resumed = r.firer.windows().resume().await.expect("resume");
    let waited = started.elapsed();
    assert!(
        (Duration::from_secs(30)..Duration::from_secs(40)).contains(&waited),
        "{waited:?}"
    );
    match &resumed[..] {
        [Resumed::Closed { report, .. }] => assert_eq!(report.started, vec!["registry"]),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        moves(&r.fake),
        vec![Call::Stop(s("gc-run")), Call::Start(s("registry"))]
    );
    assert!(!r.fake.is_running("gc-run"));
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_runtime_away_at_the_close_is_waited_for_within_the_budget() {
    let r = rig(&[("db", true), ("app", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(10));
    let def = step("gc", &["db", "app"], None);
    let firer = r.firer.clone();
    let fire = tokio::spawn(async move { firer.fire(&def, t0()).await });
    // Docker goes away while the step runs and comes back 60 s later.
    tokio::time::sleep(Duration::from_secs(5)).await;
    r.fake.set_unreachable(true);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(!fire.is_finished(), "the close waits for the runtime");
    r.fake.set_unreachable(false);
    let report = fire.await.expect("fire task");
    assert!(report.not_started.is_empty(), "{report:?}");
    assert_eq!(report.started_again, vec!["app", "db"]);
    assert!(r.fake.is_running("db") && r.fake.is_running("app"));
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_runtime_away_past_the_budget_leaves_the_starts_owed_until_it_answers() {
    let r = rig(&[("db", true), ("app", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(10));
    let def = step("gc", &["db", "app"], None);
    let firer = r.firer.clone();
    let fire = tokio::spawn(async move { firer.fire(&def, t0()).await });
    tokio::time::sleep(Duration::from_secs(8)).await;
    // Before the step exits, the runtime goes away for longer than the budget.
    r.fake.set_unreachable(true);
    let report = fire.await.expect("fire task");
    assert_eq!(
        report.not_started,
        vec!["app", "db"],
        "alerted after the budget"
    );
    let records = r.records.all().expect("records");
    assert_eq!(records.len(), 1, "what is owed is kept");
    assert!(records[0].owed);
    assert_eq!(
        records[0].held_names().collect::<Vec<_>>(),
        vec!["db", "app"]
    );
    // The window still holds them: nothing else may start them meanwhile.
    assert_eq!(r.firer.windows().live_records().expect("live").len(), 1);
    // The daemon's adopter takes the owed record: it waits for the runtime.
    let windows = r.firer.windows().clone();
    let adopt = tokio::spawn(async move { windows.adopt("gc").await });
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(!adopt.is_finished(), "waits as long as the runtime is away");
    r.fake.set_unreachable(false);
    let resumed = adopt.await.expect("task").expect("adopt");
    match resumed {
        Some(Resumed::Closed { report, .. }) => {
            assert_eq!(report.started, vec!["app", "db"]);
            assert!(report.owed.is_empty());
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(r.fake.is_running("db") && r.fake.is_running("app"));
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_lost_step_is_stopped_and_confirmed_before_anything_starts() {
    let r = rig(&[("db", true)]);
    let def = step("gc", &["db"], None);
    let firer = r.firer.clone();
    let fire = tokio::spawn(async move { firer.fire(&def, t0()).await });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(r.fake.is_running("gc-run"));
    r.fake.lose_track("gc-run");
    let report = fire.await.expect("fire task");
    assert!(
        matches!(&report.outcome, RunOutcome::Error { reason } if reason.contains("lost track")),
        "{:?}",
        report.outcome
    );
    assert!(!r.fake.is_running("gc-run"), "the step was stopped");
    let calls = moves(&r.fake);
    let stopped = calls.iter().position(|c| *c == Call::Stop(s("gc-run")));
    let started = calls.iter().position(|c| *c == Call::Start(s("db")));
    assert!(
        stopped.is_some() && stopped < started,
        "step stopped before db started: {calls:?}"
    );
    assert!(r.fake.is_running("db"));
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_lost_step_that_cannot_be_confirmed_stopped_keeps_its_holds_owed() {
    let r = rig(&[("db", true)]);
    let def = step("gc", &["db"], None);
    let firer = r.firer.clone();
    let fire = tokio::spawn(async move { firer.fire(&def, t0()).await });
    tokio::time::sleep(Duration::from_secs(5)).await;
    r.fake.set_unreachable(true);
    r.fake.lose_track("gc-run");
    let report = fire.await.expect("fire task");
    assert_eq!(report.not_started, vec!["db"]);
    assert!(
        !r.fake.calls().contains(&Call::Start(s("db"))),
        "never beside the step"
    );
    let records = r.records.all().expect("records");
    assert!(records.len() == 1 && records[0].owed, "{records:?}");
    // The runtime answers again: the adopter stops the step, then starts db.
    r.fake.set_unreachable(false);
    let windows = r.firer.windows().clone();
    let resumed = windows.adopt("gc").await.expect("adopt");
    assert!(
        matches!(resumed, Some(Resumed::Closed { .. })),
        "{resumed:?}"
    );
    assert!(!r.fake.is_running("gc-run") && r.fake.is_running("db"));
    assert!(r.records.all().expect("records").is_empty());
}

/// Step units whose unit is "stopped" when the test says so.
#[derive(Debug)]
struct StoppableUnits(watch::Receiver<bool>);

#[async_trait::async_trait]
impl crate::systemd::units::StepUnits for StoppableUnits {
    async fn begin(
        &self,
        step: &str,
        _module: Option<&str>,
        _fire_time: DateTime<Utc>,
    ) -> Result<Option<crate::systemd::units::StepUnit>, String> {
        Ok(Some(crate::systemd::units::StepUnit {
            name: format!("{step}.scope"),
            cgroup_parent: "/test".into(),
            control_group: None,
            holder_pid: None,
            keeper: None,
            stop_requested: Some(self.0.clone()),
            stop_watch: None,
        }))
    }
    async fn started(&self, _unit: &mut Option<crate::systemd::units::StepUnit>) {}
    async fn end(&self, _unit: Option<crate::systemd::units::StepUnit>) {}
}

#[tokio::test(start_paused = true)]
async fn a_stop_of_the_steps_unit_ends_the_run_reported_stopped() {
    let r = rig(&[("db", true)]);
    r.fake.stop_exit_code("gc-run", 137);
    let (stop, stop_rx) = watch::channel(false);
    let firer = Firer::new(
        Arc::new(r.fake.clone()),
        r.firer.windows().clone(),
        Arc::new(StoppableUnits(stop_rx)),
        r.shutdown.subscribe(),
    );
    let def = step("gc", &["db"], None);
    let fire = tokio::spawn(async move { firer.fire(&def, t0()).await });
    tokio::time::sleep(Duration::from_secs(5)).await;
    stop.send(true).expect("stop");
    let report = fire.await.expect("fire task");
    assert_eq!(report.outcome, RunOutcome::Stopped { status: Some(137) });
    assert!(!report.ok());
    assert!(crate::schedule::fire::describe(&report.outcome).contains("stopped"));
    assert!(!r.fake.is_running("gc-run") && r.fake.is_running("db"));
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_forward_clock_jump_never_releases_holds_under_a_running_step() {
    let r = rig(&[("db", true)]);
    // A step with a one-hour timeout, running for 30 minutes.
    r.fake.exit_with("gc-run", 0, Duration::from_secs(1800));
    let def = step("gc", &["db"], Some(3600));
    let firer = r.firer.clone();
    let fire = tokio::spawn(async move { firer.fire(&def, t0()).await });
    tokio::time::sleep(Duration::from_secs(60)).await;
    // NTP steps the wall clock two days forward.
    r.clock.jump(chrono::TimeDelta::days(2));
    let live = r.firer.windows().live_records().expect("live");
    assert_eq!(live.len(), 1, "still holds: its age is measured since boot");
    assert_eq!(
        live[0].age(&r.firer.windows().moment()),
        Duration::from_secs(60)
    );
    // Another process taking over now (as if this owner died) waits for
    // the step rather than stopping it or starting db beside it.
    let mut orphan = r.records.all().expect("records").remove(0);
    orphan.pid_start_time += 1;
    assert!(!r.fake.calls().contains(&Call::Start(s("db"))));
    let report = fire.await.expect("fire task");
    assert_eq!(report.outcome, RunOutcome::Succeeded, "not cut short");
    assert!(report.duration_secs >= 1800.0);
    assert!(r.fake.is_running("db"));
    // And a dead owner's record of a step still running is waited for too.
    let r2 = rig(&[("registry", false), ("gc-run", true)]);
    r2.fake.exit_with("gc-run", 0, Duration::from_secs(120));
    let boot = crate::store::boot_id().expect("boot");
    let mut record = orphan;
    record.boot_id = boot;
    record.step_container = "gc-run".into();
    record.held = vec![HeldContainer {
        id: "registry".into(),
        name: "registry".into(),
        was_running: true,
        starting: false,
    }];
    // Opened a minute ago by the time since boot, two days ago by the wall.
    record.opened_since_boot_secs = r2.clock.since_boot().map(|d| d.as_secs() - 60);
    record.opened_at = t0() - chrono::TimeDelta::days(2);
    r2.records.write(&record).expect("write");
    let resumed = r2.firer.windows().resume().await.expect("resume");
    assert!(
        matches!(
            &resumed[..],
            [Resumed::Closed {
                waited_exit: Some(0),
                ..
            }]
        ),
        "the step was waited for: {resumed:?}"
    );
    assert!(!r2.fake.calls().contains(&Call::Stop(s("gc-run"))));
    assert!(r2.fake.is_running("registry"));
}

#[tokio::test(start_paused = true)]
async fn a_panicked_fire_frees_its_step_and_answers_its_waiters() {
    use crate::schedule::scheduler::Scheduler;
    use crate::schedule::step::ScheduledStep;
    let r = rig(&[("db", true)]);
    // Opening the window inspects db: that panics, outside the step body.
    r.fake.panic_on_inspect("db");
    let (scheduler, handle) =
        Scheduler::new(r.firer.clone(), r.clock.clone(), r.store.clone(), None);
    let (stop, stop_rx) = watch::channel(false);
    let task = tokio::spawn(scheduler.run(stop_rx));
    let def = step("gc", &["db"], None);
    let timing = crate::schedule::jobs::StepTiming {
        id: "gc".into(),
        cron: crate::cron::CronSchedule::parse("0 3 * * *").expect("cron"),
        zone: chrono_tz::UTC,
        fingerprint: "f".into(),
        delay: std::time::Duration::ZERO,
        catch_up: false,
    };
    handle
        .sync(vec![ScheduledStep {
            def: def.into(),
            timing: timing.into(),
        }])
        .await
        .expect("sync");
    let report = handle
        .run_now("gc", false, Reporter::none())
        .await
        .expect("a report");
    assert!(
        matches!(&report.outcome, RunOutcome::Error { reason } if reason.contains("panic")),
        "{:?}",
        report.outcome
    );
    let status = handle.status().await.expect("status");
    assert!(!status[0].running, "the step is free");
    assert!(status[0].history.last_outcome.is_some());
    // Written as `status --json` lists it: the same document.
    let (written, count) = handle.written().await.expect("written");
    assert_eq!(count, 1);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(written.get()).expect("json"),
        serde_json::to_value(&status).expect("json")
    );
    // Free to fire again (and failing the same way, not hanging).
    let again = handle
        .run_now("gc", false, Reporter::none())
        .await
        .expect("a second report");
    assert!(!again.ok());
    stop.send(true).expect("stop");
    task.await.expect("scheduler");
}

#[tokio::test(start_paused = true)]
async fn a_held_container_removed_during_the_window_is_created_again_from_its_declaration() {
    let r = rig(&[("db", true), ("app", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(10));
    let def = step("gc", &["db", "app"], None);
    let firer = r.firer.clone();
    let fire = tokio::spawn(async move { firer.fire(&def, t0()).await });
    tokio::time::sleep(Duration::from_secs(5)).await;
    // Someone removes db while it is held.
    r.fake.remove("db").await.expect("remove");
    let report = fire.await.expect("fire task");
    assert!(report.ok(), "{report:?}");
    assert_eq!(report.started_again, vec!["app", "db"]);
    assert_eq!(report.recreated, vec!["db"]);
    assert!(r.fake.is_running("db") && r.fake.is_running("app"));
    assert!(r.fake.calls().contains(&Call::Create(s("db"))));
    let made = r.fake.spec_of("db").expect("db exists");
    assert_eq!(
        (made.image, made.command),
        (spec("db").image, None),
        "as declared"
    );
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn started_again_means_healthy_and_an_unhealthy_one_does_not_hold_up_the_others() {
    let r = rig(&[("db", true), ("app", true), ("web", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(5));
    // db turns healthy 20 s after its start; app never does.
    r.fake
        .set_health("db", "healthy", "ok", Duration::from_secs(20));
    r.fake.set_health(
        "app",
        "unhealthy",
        "connection refused",
        Duration::from_secs(3),
    );
    let started = tokio::time::Instant::now();
    let report = r
        .firer
        .fire(&step("gc", &["db", "app", "web"], None), t0())
        .await;
    assert_eq!(report.started_again, vec!["web", "app", "db"]);
    assert_eq!(report.healthy, vec!["db"]);
    assert_eq!(report.unhealthy, vec!["app"]);
    assert!(!report.ok(), "an unhealthy held container fails the fire");
    assert!(
        started.elapsed() >= Duration::from_secs(25),
        "the close waited for db's health: {:?}",
        started.elapsed()
    );
    assert!(r.fake.is_running("db") && r.fake.is_running("app") && r.fake.is_running("web"));
    assert!(r.records.all().expect("records").is_empty());
    let alerts = crate::window::alerts::since(&r.store, None).expect("alerts");
    let unhealthy: Vec<_> = alerts
        .iter()
        .map(|a| (a.event.as_str(), a.container.as_deref()))
        .collect();
    assert_eq!(unhealthy, vec![("held-unhealthy", Some("app"))]);
}

/// A live process that is not this one, as a window owner: `(pid, start)`.
fn other_live_owner() -> (std::process::Child, u32, u64) {
    let child = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let start = crate::store::process_start_time(pid).expect("start time");
    (child, pid, start)
}

#[tokio::test(start_paused = true)]
async fn an_owner_whose_window_was_taken_over_starts_nothing_and_erases_nothing() {
    let r = rig(&[("db", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(30));
    let def = step("gc", &["db"], None);
    let firer = r.firer.clone();
    let fire = tokio::spawn(async move { firer.fire(&def, t0()).await });
    tokio::time::sleep(Duration::from_secs(10)).await;
    // Mid-run, another process takes the window over (as a taker does
    // once this owner's lease lapsed).
    let (mut child, pid, start) = other_live_owner();
    let mut taken = r.records.all().expect("records").remove(0);
    taken.pid = pid;
    taken.pid_start_time = start;
    r.records.write(&taken).expect("taken over");
    r.fake.clear_calls();
    let report = fire.await.expect("fire task");
    // The step ended; the owner that lost the window starts nothing and
    // leaves the taker's record alone.
    assert!(report.started_again.is_empty(), "{report:?}");
    assert_eq!(moves(&r.fake), vec![], "nothing started or stopped");
    assert_eq!(r.records.all().expect("records"), vec![taken]);
    assert!(
        !r.fake.is_running("db"),
        "the taker starts it, not the loser"
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// The record of a window of step `gc` holding `registry`, opened a minute
/// before `now` by the live process `pid` of boot `boot`, its lease
/// renewed at `lease` (seconds since boot).
fn foreign_gc_record(boot: &str, pid: u32, start: u64, now: u64, lease: u64) -> WindowRecord {
    WindowRecord {
        step: "gc".into(),
        module: None,
        fire_time: t0(),
        opened_at: t0(),
        boot_id: boot.to_string(),
        pid,
        pid_start_time: start,
        step_container: "gc-run".into(),
        step_timeout_secs: Some(3600),
        opened_since_boot_secs: Some(now - 60),
        lease_since_boot_secs: Some(lease),
        owed: false,
        held: vec![HeldContainer {
            id: "registry".into(),
            name: "registry".into(),
            was_running: true,
            starting: false,
        }],
    }
}

#[tokio::test(start_paused = true)]
async fn a_window_whose_lease_lapsed_is_taken_over_though_its_owner_lives() {
    let r = rig(&[("registry", false)]);
    let (mut child, pid, start) = other_live_owner();
    let boot = crate::store::boot_id().expect("boot id");
    let now = r.clock.since_boot().expect("since boot").as_secs();
    let record = |lease: u64| foreign_gc_record(&boot, pid, start, now, lease);
    // Renewed 10 s ago: its owner holds it.
    r.records.write(&record(now - 10)).expect("write");
    assert_eq!(r.firer.windows().adopt("gc").await.expect("adopt"), None);
    assert!(!r.fake.is_running("registry"));
    // Not renewed for 31 s: taken over and closed.
    r.records.write(&record(now - 31)).expect("write");
    match r.firer.windows().adopt("gc").await.expect("adopt") {
        Some(Resumed::Closed { report, .. }) => assert_eq!(report.started, vec!["registry"]),
        other => panic!("unexpected {other:?}"),
    }
    assert!(r.fake.is_running("registry"));
    assert!(r.records.all().expect("records").is_empty());
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test(start_paused = true)]
async fn an_opening_asks_the_runtime_without_holding_the_records_lock() {
    let r = rig(&[("db", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(5));
    // Docker slow to answer whether db runs.
    r.fake.inspect_delay("db", Duration::from_secs(30));
    let def = step("gc", &["db"], None);
    let firer = r.firer.clone();
    let fire = tokio::spawn(async move { firer.fire(&def, t0()).await });
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(
        r.records.all().expect("records").is_empty(),
        "still asking: nothing written"
    );
    assert!(
        r.records.try_lock().expect("lock").is_some(),
        "windows.lock is free while the runtime is asked"
    );
    let report = fire.await.expect("fire");
    assert!(report.ok(), "{report:?}");
    assert!(r.fake.is_running("db"));
}

#[tokio::test(start_paused = true)]
async fn an_opening_that_saw_a_hold_stopped_before_a_late_stop_was_undone_looks_again() {
    let r = rig(&[("db", false)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(60));
    r.fake.inspect_delay("db", Duration::from_secs(10));
    let def = step("gc", &["db"], None);
    let firer = r.firer.clone();
    let fire = tokio::spawn(async move { firer.fire(&def, t0()).await });
    tokio::time::sleep(Duration::from_secs(2)).await;
    // While the opener waits for its answer (db stopped), another
    // process undoes a late stop of db: under windows.lock, the epoch
    // bumped, then the start.
    {
        let _records = r.records.lock().expect("lock");
        r.records.bump_epoch().expect("epoch");
        assert!(r.fake.external_start("db"));
    }
    // Its first answer is older than the start: it asks again (10 s).
    tokio::time::sleep(Duration::from_secs(25)).await;
    let record = r.records.get("gc").expect("read").expect("record");
    assert!(
        record.held.iter().any(|c| c.name == "db" && c.was_running),
        "recorded as running, so the close starts it: {record:?}"
    );
    let report = fire.await.expect("fire");
    assert!(report.ok(), "{report:?}");
    assert!(r.fake.is_running("db"), "started again at the close");
}

#[tokio::test(start_paused = true)]
async fn a_lease_is_not_lapsed_while_its_owner_beats_though_its_record_is_old() {
    let r = rig(&[("registry", false)]);
    let (mut child, pid, start) = other_live_owner();
    let boot = crate::store::boot_id().expect("boot id");
    let now = r.clock.since_boot().expect("since boot").as_secs();
    // The record's lease is 40 s old: the owner could not take
    // windows.lock to renew it (another process held it).
    let record = foreign_gc_record(&boot, pid, start, now, now - 40);
    r.records.write(&record).expect("write");
    let owner = crate::window::Beater::of(&record);
    // It beat 5 s ago, without the lock: its owner holds it.
    r.records.beats().beat(&owner, now - 5).expect("beat");
    assert_eq!(r.firer.windows().adopt("gc").await.expect("adopt"), None);
    assert!(!r.fake.is_running("registry"));
    // Its beats stopped 31 s ago too (the owner itself is stopped):
    // taken over and closed.
    r.records.beats().beat(&owner, now - 31).expect("beat");
    match r.firer.windows().adopt("gc").await.expect("adopt") {
        Some(Resumed::Closed { report, .. }) => assert_eq!(report.started, vec!["registry"]),
        other => panic!("unexpected {other:?}"),
    }
    assert!(r.fake.is_running("registry"));
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test(start_paused = true)]
async fn an_owner_beats_while_another_process_holds_the_records_lock() {
    let r = rig(&[("db", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(60));
    let def = step("gc", &["db"], None);
    let firer = r.firer.clone();
    let fire = tokio::spawn(async move { firer.fire(&def, t0()).await });
    tokio::time::sleep(Duration::from_secs(1)).await;
    let opened = r.records.get("gc").expect("read").expect("record");
    // Another open file description: a lock another process would hold.
    let hostage = r.records.lock().expect("lock");
    tokio::time::sleep(Duration::from_secs(40)).await;
    let record = r.records.get("gc").expect("read").expect("record");
    assert_eq!(
        record.lease_since_boot_secs, opened.lease_since_boot_secs,
        "the record cannot be renewed while the lock is held"
    );
    let beat = r.records.beats().last(&record);
    let at = r.firer.windows().moment();
    assert!(
        record.lease_lapsed(&at, None),
        "the record alone looks lapsed"
    );
    assert!(
        !record.lease_lapsed(&at, beat),
        "the owner's beat keeps its lease: {beat:?} at {:?}",
        at.since_boot
    );
    drop(hostage);
    let report = fire.await.expect("fire");
    assert!(report.ok(), "{report:?}");
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(
        r.records.beats().last(&record),
        None,
        "no window left: the beat is removed with its renewer"
    );
}

#[tokio::test(start_paused = true)]
async fn an_owner_renews_the_lease_of_its_windows_only() {
    let r = rig(&[("db", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(60));
    let def = step("gc", &["db"], None);
    let firer = r.firer.clone();
    let fire = tokio::spawn(async move { firer.fire(&def, t0()).await });
    tokio::time::sleep(Duration::from_secs(1)).await;
    let opened = r.records.all().expect("records").remove(0);
    let (mut child, pid, start) = other_live_owner();
    let foreign = WindowRecord {
        step: "other".into(),
        pid,
        pid_start_time: start,
        lease_since_boot_secs: Some(1),
        ..opened.clone()
    };
    r.records.write(&foreign).expect("write");
    tokio::time::sleep(Duration::from_secs(20)).await;
    r.firer.windows().renew_once().await.expect("renew");
    let ours = r.records.get("gc").expect("read").expect("record");
    assert!(
        ours.lease_since_boot_secs > opened.lease_since_boot_secs,
        "{ours:?}"
    );
    assert!(ours.same_window_and_owner(&opened));
    assert_eq!(
        r.records.get("other").expect("read"),
        Some(foreign),
        "another's lease is not this process's to renew"
    );
    r.records.remove("other").expect("remove");
    let report = fire.await.expect("fire");
    assert!(report.ok(), "{report:?}");
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test(start_paused = true)]
async fn the_lease_renewer_ends_with_the_last_window_and_starts_with_the_next() {
    // An idle daemon is woken by nothing but its watchdog: the renewer
    // runs only while this process owns a window.
    let r = rig(&[("db", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(12));
    let def = step("gc", &["db"], None);
    let report = r.firer.fire(&def, t0()).await;
    assert!(report.ok(), "{report:?}");
    assert!(r.records.all().expect("records").is_empty());
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert!(
        !r.firer.windows().renews_leases(),
        "no window left: the renewer ended"
    );

    // The next window starts it again, and its lease is renewed.
    let firer = r.firer.clone();
    let again = def.clone();
    let fire = tokio::spawn(async move { firer.fire(&again, t0()).await });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(r.firer.windows().renews_leases());
    let opened = r.records.get("gc").expect("read").expect("record");
    tokio::time::sleep(Duration::from_secs(6)).await;
    let renewed = r.records.get("gc").expect("read").expect("record");
    assert!(
        renewed.lease_since_boot_secs > opened.lease_since_boot_secs,
        "{renewed:?}"
    );
    let report = fire.await.expect("fire");
    assert!(report.ok(), "{report:?}");
}
