//! Steps ready before they are due (src/schedule/ready.rs), through the
//! scheduler, against the scripted runtime and a fake clock on paused tokio
//! time: what is created when, what a due second costs, and what happens to
//! a ready container when its step changes, goes, or already runs.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use crate::clock::FakeClock;
use crate::container_spec::LABEL_IDENTITY;
use crate::cron::CronSchedule;
use crate::runtime::fake::{Call, FakeRuntime};
use crate::runtime::{ContainerRuntime, ContainerSpec, RuntimeView};
use crate::schedule::fire::{starts_at_once, Firer, StepDef};
use crate::schedule::jobs::StepTiming;
use crate::schedule::ready::{run_spec, ReadyState, LABEL_READY};
use crate::schedule::scheduler::{Scheduler, SchedulerHandle};
use crate::schedule::step::ScheduledStep;
use crate::store::Store;
use crate::systemd::units::NoUnits;
use crate::window::{Owner, Windows};

struct Rig {
    handle: SchedulerHandle,
    /// The scheduler's readier (shared state: a clone sees its slots).
    readier: crate::schedule::ready::Readier,
    _shutdown: watch::Sender<bool>,
    _dir: tempfile::TempDir,
}

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).expect("time").to_utc()
}

/// Step `id` on `expr`, its container declared with identity `identity`.
fn step(id: &str, expr: &str, identity: &str) -> ScheduledStep {
    ScheduledStep {
        def: StepDef {
            id: id.to_string(),
            module: None,
            spec: std::sync::Arc::new(ContainerSpec {
                name: format!("{id}-run"),
                image: "img@sha256:00".into(),
                labels: [(LABEL_IDENTITY.to_string(), identity.to_string())].into(),
                ..ContainerSpec::default()
            }),
            timeout: None,
            holds: Vec::new(),
            hold_specs: Default::default(),
        }
        .into(),
        timing: std::sync::Arc::new(StepTiming {
            id: id.to_string(),
            cron: CronSchedule::parse(expr).expect("cron"),
            zone: chrono_tz::UTC,
            fingerprint: format!("{expr} {identity}").as_str().into(),
            delay: Duration::ZERO,
            catch_up: false,
        }),
    }
}

/// A scheduler whose clock reads `now`, with `fake` as its runtime.
impl Rig {
    /// Sync the one step `gc` on `expr`, its container of `identity`.
    async fn sync_gc(&self, expr: &str, identity: &str) -> crate::schedule::jobs::SyncReport {
        self.handle
            .sync(vec![step("gc", expr, identity)])
            .await
            .expect("sync")
    }
}

fn rig(now: &str, fake: FakeRuntime) -> Rig {
    rig_with_units(now, fake, Arc::new(NoUnits))
}

/// [`rig`], its fires' units made by `units`.
fn rig_with_units(
    now: &str,
    fake: FakeRuntime,
    units: Arc<dyn crate::systemd::units::StepUnits>,
) -> Rig {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("state")).expect("store");
    fake.add_image("img@sha256:00");
    let runtime: Arc<dyn ContainerRuntime> = Arc::new(fake.clone());
    let clock = Arc::new(FakeClock::new(at(now)));
    let windows = Windows::new(
        store.clone(),
        runtime.clone(),
        clock.clone(),
        Owner::current().expect("owner"),
    );
    let (shutdown, rx) = watch::channel(false);
    let firer = Firer::new(runtime, windows, units, rx.clone());
    let readier = firer.readier().clone();
    let (scheduler, handle) = Scheduler::new(firer, clock, store, None);
    tokio::spawn(scheduler.run(rx));
    Rig {
        handle,
        readier,
        _shutdown: shutdown,
        _dir: dir,
    }
}

fn count(fake: &FakeRuntime, call: &Call) -> usize {
    fake.calls().iter().filter(|c| *c == call).count()
}

async fn ready_state(r: &Rig, id: &str) -> Option<ReadyState> {
    let steps = r.handle.status().await.expect("status");
    steps
        .into_iter()
        .find(|s| s.step == id)
        .and_then(|s| s.ready)
}

#[tokio::test(start_paused = true)]
async fn the_due_second_costs_only_a_start() {
    let fake = FakeRuntime::new();
    fake.exit_with("gc-run", 0, Duration::from_secs(1));
    let r = rig("2026-06-01T02:59:55Z", fake.clone());
    r.handle
        .sync(vec![step("gc", "0 3 * * *", "a")])
        .await
        .expect("sync");
    tokio::time::sleep(Duration::from_secs(1)).await;
    // Made at arming (the fire is less than the lead away), never started.
    assert_eq!(fake.mutations(), vec![Call::Create("gc-run".into())]);
    let spec = fake.spec_of("gc-run").expect("created");
    assert_eq!(spec.labels.get(LABEL_READY), Some(""));
    assert!(!fake.is_running("gc-run"));
    assert!(matches!(
        ready_state(&r, "gc").await,
        Some(ReadyState::Ready { reused: false, fire }) if fire == at("2026-06-01T03:00:00Z")
    ));
    fake.clear_calls();
    tokio::time::sleep(Duration::from_secs(62)).await;
    // The fire started the ready container and nothing else; its end makes
    // the next fire's ready only within the lead (tomorrow 02:59:50).
    assert_eq!(fake.mutations(), vec![Call::Start("gc-run".into())]);
    assert!(matches!(
        ready_state(&r, "gc").await,
        Some(ReadyState::Waiting { at: when, .. }) if when == at("2026-06-02T02:59:50Z")
    ));
}

#[tokio::test(start_paused = true)]
async fn the_last_run_stays_until_the_lead_before_the_next_fire() {
    let fake = FakeRuntime::new();
    let r = rig("2026-06-01T02:00:00Z", fake.clone());
    r.handle
        .sync(vec![step("gc", "0 3 * * *", "a")])
        .await
        .expect("sync");
    tokio::time::sleep(Duration::from_secs(59 * 60 + 49)).await;
    assert!(fake.mutations().is_empty(), "{:?}", fake.mutations());
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(fake.mutations(), vec![Call::Create("gc-run".into())]);
}

#[tokio::test(start_paused = true)]
async fn a_changed_step_replaces_its_ready_container_and_a_removed_one_removes_it() {
    let fake = FakeRuntime::new();
    let r = rig("2026-06-01T02:59:55Z", fake.clone());
    r.handle
        .sync(vec![step("gc", "0 3 * * *", "a")])
        .await
        .expect("sync");
    tokio::time::sleep(Duration::from_secs(1)).await;
    r.handle
        .sync(vec![step("gc", "0 3 * * *", "b")])
        .await
        .expect("sync");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let spec = fake.spec_of("gc-run").expect("made again");
    assert_eq!(spec.labels.get(LABEL_IDENTITY), Some("b"));
    // Set aside, made again, the old one removed (never while it runs).
    assert_eq!(
        count(
            &fake,
            &Call::Rename("gc-run".into(), "gc-run.replaced".into())
        ),
        1
    );
    assert_eq!(
        count(&fake, &Call::RemoveStopped("gc-run.replaced".into())),
        1
    );
    assert_eq!(count(&fake, &Call::Create("gc-run".into())), 2);
    r.handle
        .sync(Vec::<ScheduledStep>::new())
        .await
        .expect("sync");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(fake.spec_of("gc-run").is_none(), "removed with its step");
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(count(&fake, &Call::Start("gc-run".into())), 0);
}

#[tokio::test(start_paused = true)]
async fn a_sync_of_the_same_steps_keeps_them_and_a_changed_one_still_re_arms() {
    let fake = FakeRuntime::new();
    let r = rig("2026-06-01T02:59:55Z", fake.clone());
    r.sync_gc("0 3 * * *", "a").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    // The same step again: kept, its ready container left as it is.
    let again = r.sync_gc("0 3 * * *", "a").await;
    assert_eq!(again.kept, vec!["gc".to_string()]);
    assert!(again.added.is_empty() && again.rearmed.is_empty());
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(count(&fake, &Call::Create("gc-run".into())), 1);
    // What its container reads changed: re-armed, made again.
    assert_eq!(
        r.sync_gc("0 3 * * *", "b").await.rearmed,
        vec!["gc".to_string()]
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(count(&fake, &Call::Create("gc-run".into())), 2);
    // Its schedule changed: re-armed for the new time.
    assert_eq!(
        r.sync_gc("30 3 * * *", "b").await.rearmed,
        vec!["gc".to_string()]
    );
    let status = r.handle.status().await.expect("status");
    assert_eq!(status[0].next_fire, Some(at("2026-06-01T03:30:00Z")));
}

#[tokio::test(start_paused = true)]
async fn a_matching_ready_container_is_reused_after_a_restart() {
    let fake = FakeRuntime::new();
    fake.exit_with("gc-run", 0, Duration::from_secs(1));
    let s = step("gc", "0 3 * * *", "a");
    fake.add_container(run_spec(&s.def, None, at("2026-06-01T03:00:00Z")), false);
    let r = rig("2026-06-01T02:59:55Z", fake.clone());
    r.handle.sync(vec![s]).await.expect("sync");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(fake.mutations().is_empty(), "{:?}", fake.mutations());
    assert!(matches!(
        ready_state(&r, "gc").await,
        Some(ReadyState::Ready { reused: true, .. })
    ));
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(fake.mutations(), vec![Call::Start("gc-run".into())]);
}

#[tokio::test(start_paused = true)]
async fn a_container_made_otherwise_is_replaced_and_a_running_one_never_touched() {
    let fake = FakeRuntime::new();
    let other = step("gc", "0 3 * * *", "old");
    fake.add_container(
        run_spec(&other.def, None, at("2026-06-01T03:00:00Z")),
        false,
    );
    let running = step("scan", "0 3 * * *", "a");
    fake.add_container(ContainerSpec::clone(&running.def.spec), true);
    let r = rig("2026-06-01T02:59:55Z", fake.clone());
    r.handle
        .sync(vec![step("gc", "0 3 * * *", "a"), running])
        .await
        .expect("sync");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let gc = fake.spec_of("gc-run").expect("made again");
    assert_eq!(gc.labels.get(LABEL_IDENTITY), Some("a"));
    assert!(
        fake.is_running("scan-run"),
        "a run in flight is never removed"
    );
    assert_eq!(count(&fake, &Call::RemoveStopped("scan-run".into())), 0);
    assert!(matches!(
        ready_state(&r, "scan").await,
        Some(ReadyState::NotReady { reason }) if reason.contains("runs")
    ));
}

#[tokio::test(start_paused = true)]
async fn a_burst_starts_together_a_few_at_a_time() {
    let fake = FakeRuntime::new();
    let steps: Vec<ScheduledStep> = (0..30)
        .map(|i| step(&format!("s{i}"), "0 3 * * *", "a"))
        .collect();
    for i in 0..30 {
        // Each start takes Docker a second; each run a minute.
        fake.start_delay(&format!("s{i}-run"), Duration::from_secs(1));
        fake.exit_with(&format!("s{i}-run"), 0, Duration::from_secs(60));
    }
    let running = || {
        (0..30)
            .filter(|i| fake.is_running(&format!("s{i}-run")))
            .count()
    };
    let r = rig("2026-06-01T02:59:00Z", fake.clone());
    r.handle.sync(steps).await.expect("sync");
    let at_once = starts_at_once();
    // A second and a half after the due time, exactly as many run as may
    // start at once: not one after another, and no more than the bound.
    tokio::time::sleep(Duration::from_millis(61_500)).await;
    assert_eq!(running(), at_once.min(30));
    // And every one of them once the last group's start is through.
    let groups = 30_u64.div_ceil(at_once as u64);
    tokio::time::sleep(Duration::from_secs(groups - 1)).await;
    assert_eq!(running(), 30);
}

/// Units that count how often, and when, each is begun.
#[derive(Debug, Default)]
struct CountingUnits {
    begun: std::sync::Mutex<Vec<(DateTime<Utc>, tokio::time::Instant)>>,
}

#[async_trait::async_trait]
impl crate::systemd::units::StepUnits for CountingUnits {
    async fn begin(
        &self,
        _step: &str,
        _module: Option<&str>,
        fire_time: DateTime<Utc>,
    ) -> Result<Option<crate::systemd::units::StepUnit>, String> {
        let mut begun = self.begun.lock().unwrap_or_else(|p| p.into_inner());
        begun.push((fire_time, tokio::time::Instant::now()));
        Ok(Some(crate::systemd::units::StepUnit {
            name: format!("unit-{}", fire_time.timestamp()),
            cgroup_parent: format!("/steps/{}", fire_time.timestamp()),
            control_group: None,
            holder_pid: None,
            keeper: None,
            stop_requested: None,
            stop_watch: None,
        }))
    }

    async fn cgroup_parent_for(
        &self,
        _step: &str,
        fire_time: DateTime<Utc>,
    ) -> Result<Option<String>, String> {
        Ok(Some(format!("/steps/{}", fire_time.timestamp())))
    }

    async fn started(&self, _unit: &mut Option<crate::systemd::units::StepUnit>) {}

    async fn end(&self, _unit: Option<crate::systemd::units::StepUnit>) {}
}

#[tokio::test(start_paused = true)]
async fn the_unit_is_made_ahead_and_the_fire_only_starts_its_container() {
    let fake = FakeRuntime::new();
    fake.exit_with("gc-run", 0, Duration::from_secs(1));
    let units = Arc::new(CountingUnits::default());
    let r = rig_with_units("2026-06-01T02:59:00Z", fake.clone(), units.clone());
    let began = tokio::time::Instant::now();
    r.handle
        .sync(vec![step("gc", "0 3 * * *", "a")])
        .await
        .expect("sync");
    tokio::time::sleep(Duration::from_secs(59)).await;
    fake.clear_calls();
    tokio::time::sleep(Duration::from_secs(3)).await;
    // The container was looked at with the unit: at the due second the
    // first request is its start, by the ID it was looked at under.
    assert_eq!(
        fake.calls().first(),
        Some(&Call::Start("gc-run".into())),
        "{:?}",
        fake.calls()
    );
    let begun = units.begun.lock().expect("begun").clone();
    // One unit, for the 03:00 fire, made 2 s before it (58 s in), not at it.
    assert_eq!(begun.len(), 1, "{begun:?}");
    assert_eq!(begun[0].0, at("2026-06-01T03:00:00Z"));
    assert_eq!(begun[0].1 - began, Duration::from_secs(58));
    let spec = fake.spec_of("gc-run").expect("created ahead");
    assert_eq!(spec.cgroup_parent.as_deref(), Some("/steps/1780282800"));
    assert_eq!(fake.mutations(), vec![Call::Start("gc-run".into())]);
}

#[tokio::test(start_paused = true)]
async fn a_ready_container_removed_after_it_was_looked_at_is_made_again_at_its_fire() {
    let fake = FakeRuntime::new();
    fake.exit_with("gc-run", 0, Duration::from_secs(1));
    let units = Arc::new(CountingUnits::default());
    let r = rig_with_units("2026-06-01T02:59:00Z", fake.clone(), units.clone());
    r.handle
        .sync(vec![step("gc", "0 3 * * *", "a")])
        .await
        .expect("sync");
    // Looked at 2 s before its fire, then removed by hand.
    tokio::time::sleep(Duration::from_secs(59)).await;
    let id = fake
        .inspect("gc-run")
        .await
        .expect("inspect")
        .expect("ready")
        .id;
    fake.remove("gc-run").await.expect("remove");
    fake.clear_calls();
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Its ID is gone: made again, for the same unit, and started by name.
    assert_eq!(
        fake.mutations(),
        vec![
            Call::Start(id),
            Call::Create("gc-run".into()),
            Call::Start("gc-run".into())
        ]
    );
    let spec = fake.spec_of("gc-run").expect("made again");
    assert_eq!(spec.cgroup_parent.as_deref(), Some("/steps/1780282800"));
    let status = r.handle.status().await.expect("status");
    assert_eq!(
        status[0].history.last_outcome.as_deref(),
        Some("succeeded"),
        "{status:?}"
    );
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

#[tokio::test(start_paused = true)]
async fn a_fire_beyond_the_horizon_waits_with_no_task_and_is_armed_at_its_edge_in_time() {
    let fake = FakeRuntime::new();
    fake.exit_with("edge-run", 0, Duration::from_secs(1));
    // 03:00 is the horizon (an hour) and a second away; 04:00 two.
    let r = rig("2026-06-01T01:59:59Z", fake.clone());
    tokio::time::sleep(Duration::from_millis(10)).await;
    let before = alive_tasks();
    let mut steps = vec![step("edge", "0 3 * * *", "a")];
    steps.extend((0..50).map(|i| step(&format!("far{i}"), "0 4 * * *", "a")));
    r.handle.sync(steps).await.expect("sync");
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(alive_tasks(), before, "no task waits for a fire beyond");
    assert_eq!(
        ready_state(&r, "edge").await,
        Some(ReadyState::Waiting {
            at: at("2026-06-01T02:59:50Z"),
            fire: at("2026-06-01T03:00:00Z")
        }),
        "said waiting all the same"
    );
    assert_eq!(
        ready_state(&r, "far7").await,
        Some(ReadyState::Waiting {
            at: at("2026-06-01T03:59:50Z"),
            fire: at("2026-06-01T04:00:00Z")
        }),
    );
    assert!(
        r.readier.steps().is_empty(),
        "no step beyond the horizon holds a slot: {:?}",
        r.readier.steps()
    );
    assert_eq!(r.handle.packed("edge").await, Some(true), "kept packed");
    assert_eq!(r.handle.packed("far7").await, Some(true));
    // At the edge (02:00:00) the one due at 03:00 is armed, the others not.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(alive_tasks(), before + 1);
    assert_eq!(
        r.handle.packed("edge").await,
        Some(false),
        "built when armed"
    );
    assert_eq!(r.handle.packed("far7").await, Some(true));
    // It is made ready at its lead and fires on its second.
    tokio::time::sleep(Duration::from_secs(59 * 60 + 58)).await;
    assert_eq!(fake.mutations(), vec![Call::Create("edge-run".into())]);
    assert_eq!(count(&fake, &Call::Start("edge-run".into())), 0);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        count(&fake, &Call::Start("edge-run".into())),
        1,
        "fired at 03:00"
    );
    // The container made is the step's as declared, not a spec read back
    // wrong from its packed form.
    let made = fake.spec_of("edge-run").expect("made");
    let declared = step("edge", "0 3 * * *", "a").def.spec.clone();
    assert_eq!(
        (&made.image, made.labels.get(LABEL_IDENTITY)),
        (&declared.image, declared.labels.get(LABEL_IDENTITY))
    );
    // Past 03:00 the fifty due at 04:00 come within, each armed.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(alive_tasks() >= before + 50, "{} {before}", alive_tasks());
    assert_eq!(r.readier.steps().len(), 51, "each armed holds its slot");
    assert_eq!(r.handle.packed("far7").await, Some(false));
    // Fired, the step's next fire is tomorrow's: packed again.
    assert_eq!(r.handle.packed("edge").await, Some(true));
}

#[tokio::test(start_paused = true)]
async fn a_packed_step_that_no_longer_reads_back_is_refused_with_a_reason_never_lost() {
    let fake = FakeRuntime::new();
    let r = rig("2026-06-01T01:00:00Z", fake.clone());
    r.handle
        .sync(vec![step("far", "0 4 * * *", "a")])
        .await
        .expect("sync");
    assert_eq!(r.handle.packed("far").await, Some(true));
    r.handle.damage("far").await;
    // Answered at once: a caller never waits on a fire that was not made.
    let asked = tokio::time::timeout(
        Duration::from_secs(60),
        r.handle
            .run_now("far", false, crate::progress::Reporter::none()),
    )
    .await
    .expect("answered, not left waiting");
    let why = asked.expect_err("refused");
    assert!(why.contains("does not read back"), "{why}");
    assert!(
        fake.mutations().is_empty(),
        "nothing run: {:?}",
        fake.mutations()
    );
    assert!(!r.handle.status().await.expect("status")[0].running);
}

#[tokio::test(start_paused = true)]
async fn a_packed_step_syncs_as_kept_fires_when_asked_and_a_changed_one_is_rearmed() {
    let fake = FakeRuntime::new();
    fake.exit_with("far-run", 0, Duration::from_millis(10));
    let r = rig("2026-06-01T01:00:00Z", fake.clone());
    let declared = || {
        vec![
            step("far", "0 4 * * *", "a"),
            step("near", "30 1 * * *", "a"),
        ]
    };
    r.handle.sync(declared()).await.expect("sync");
    assert_eq!(r.handle.packed("far").await, Some(true));
    assert_eq!(
        r.handle.packed("near").await,
        Some(false),
        "within the hour"
    );
    // The same steps again: kept where they are, none re-armed.
    let report = r.handle.sync(declared()).await.expect("sync");
    assert_eq!(report.kept, vec!["far".to_string(), "near".to_string()]);
    assert!(report.rearmed.is_empty(), "{report:?}");
    // Asked for, it is what was declared (unpacked), and it runs so.
    let armed = r.handle.armed("far").await.expect("asked").expect("armed");
    assert_eq!(armed, step("far", "0 4 * * *", "a"));
    let fired = r
        .handle
        .run_now("far", false, crate::progress::Reporter::none())
        .await
        .expect("fired");
    assert!(fired.ok(), "{fired:?}");
    let made = fake.spec_of("far-run").expect("made");
    assert_eq!(made.labels.get(LABEL_IDENTITY), Some("a"));
    assert_eq!(r.handle.packed("far").await, Some(true), "packed again");
    // A step whose container changed is no longer the packed one.
    let report = r
        .handle
        .sync(vec![
            step("far", "0 4 * * *", "b"),
            step("near", "30 1 * * *", "a"),
        ])
        .await
        .expect("sync");
    assert_eq!(report.rearmed, vec!["far".to_string()]);
    let armed = r.handle.armed("far").await.expect("asked").expect("armed");
    assert_eq!(armed.def.spec.labels.get(LABEL_IDENTITY), Some("b"));
}

#[tokio::test(start_paused = true)]
async fn a_refresh_makes_again_what_failed_within_the_horizon_and_leaves_the_steps_beyond_waiting()
{
    let fake = FakeRuntime::new();
    let r = rig("2026-06-01T01:29:55Z", fake.clone());
    fake.fail_create(
        "near-run",
        crate::runtime::RuntimeError::Api {
            context: "create container near-run".into(),
            reason: "scripted".into(),
        },
    );
    let mut steps: Vec<ScheduledStep> = (0..20)
        .map(|i| step(&format!("far{i}"), "0 4 * * *", "a"))
        .collect();
    steps.push(step("near", "30 1 * * *", "a"));
    steps.push(step("mid", "45 1 * * *", "a"));
    r.handle.sync(steps).await.expect("sync");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(fake.spec_of("near-run").is_none(), "its create failed");
    assert!(matches!(
        ready_state(&r, "near").await,
        Some(ReadyState::NotReady { .. })
    ));
    // The node as the last apply left it: what failed is made again, what
    // is ready is left, what waits beyond the horizon stays packed.
    assert_eq!(r.handle.refresh().await, Some(22));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(fake.spec_of("near-run").is_some(), "made on the refresh");
    assert_eq!(
        count(&fake, &Call::Create("mid-run".into())),
        0,
        "not yet within its lead"
    );
    assert_eq!(r.readier.steps().len(), 2, "near and mid hold slots");
    assert_eq!(r.handle.packed("far7").await, Some(true));
    // The steps passed over still wait for their edge, and are armed at it.
    tokio::time::sleep(Duration::from_secs(2 * 3600)).await;
    assert!(
        r.readier.steps().iter().any(|s| s == "far7"),
        "{:?}",
        r.readier.steps()
    );
    assert_eq!(r.handle.packed("far7").await, Some(false));
}
