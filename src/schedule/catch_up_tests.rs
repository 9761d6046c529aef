//! `catch-up` and the step history across restarts, through the whole
//! scheduler against the scripted runtime and a fake clock. The same
//! behaviour with the daemon as a real unit: `tests/steps_node.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use crate::clock::FakeClock;
use crate::progress::Reporter;
use crate::runtime::fake::{Call, FakeRuntime};
use crate::runtime::{ContainerRuntime, ContainerSpec};
use crate::schedule::fire::{Firer, StepDef};
use crate::schedule::jobs::StepTiming;
use crate::schedule::scheduler::{Scheduler, SchedulerHandle, StepGauges, StepHistory};
use crate::schedule::step::ScheduledStep;
use crate::store::{Store, STEP_HISTORY};
use crate::systemd::units::NoUnits;
use crate::window::{Owner, Windows};

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).expect("test time").to_utc()
}

/// A scheduler over a fresh store (whose history `prepare` may write
/// first), its clock at `now`, running; and what stops it.
struct Rig {
    fake: FakeRuntime,
    store: Store,
    handle: SchedulerHandle,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    _shutdown: watch::Sender<bool>,
    _dir: tempfile::TempDir,
}

fn rig(now: DateTime<Utc>, prepare: impl FnOnce(&Store)) -> Rig {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("state")).expect("store");
    prepare(&store);
    let fake = FakeRuntime::new();
    fake.add_image("img@sha256:00");
    fake.exit_with("gc-run", 0, Duration::from_secs(1));
    let runtime: Arc<dyn ContainerRuntime> = Arc::new(fake.clone());
    let clock = Arc::new(FakeClock::new(now));
    let windows = Windows::new(
        store.clone(),
        runtime.clone(),
        clock.clone(),
        Owner::current().expect("owner"),
    );
    let (shutdown, rx) = watch::channel(false);
    let firer = Firer::new(runtime, windows, Arc::new(NoUnits), rx);
    let (scheduler, handle) = Scheduler::new(firer, clock, store.clone(), None);
    let (stop, stop_rx) = watch::channel(false);
    let task = tokio::spawn(scheduler.run(stop_rx));
    Rig {
        fake,
        store,
        handle,
        stop,
        task,
        _shutdown: shutdown,
        _dir: dir,
    }
}

fn daily_gc(catch_up: bool) -> ScheduledStep {
    ScheduledStep {
        def: StepDef {
            id: "gc".into(),
            module: None,
            spec: std::sync::Arc::new(ContainerSpec {
                name: "gc-run".into(),
                image: "img@sha256:00".into(),
                ..ContainerSpec::default()
            }),
            timeout: None,
            holds: Vec::new(),
            hold_specs: Default::default(),
        }
        .into(),
        timing: std::sync::Arc::new(StepTiming {
            id: "gc".into(),
            cron: crate::cron::CronSchedule::parse("30 3 * * *").expect("cron"),
            zone: chrono_tz::UTC,
            fingerprint: "f".into(),
            delay: Duration::ZERO,
            catch_up,
        }),
    }
}

fn history_with_last_due(store: &Store, due: &str) {
    let history = BTreeMap::from([(
        "gc".to_string(),
        StepHistory {
            last_due: Some(at(due)),
            ..StepHistory::default()
        },
    )]);
    store.save(STEP_HISTORY, &history).expect("history");
}

fn starts(fake: &FakeRuntime) -> usize {
    fake.calls()
        .iter()
        .filter(|c| matches!(c, Call::Start(n) if n == "gc-run"))
        .count()
}

impl Rig {
    async fn history(&self) -> StepHistory {
        let status = self.handle.status().await.expect("status");
        status[0].history.clone()
    }

    async fn stop(self) {
        self.stop.send(true).expect("stop");
        self.task.await.expect("scheduler");
    }
}

#[tokio::test(start_paused = true)]
async fn a_step_with_catch_up_runs_its_latest_missed_fire_once_at_start() {
    // The daemon handled 03:30 on the 1st, then was down until the 4th at
    // 09:00: the 2nd, 3rd and 4th were missed.
    let r = rig(at("2026-01-04T09:00:00Z"), |s| {
        history_with_last_due(s, "2026-01-01T03:30:00Z")
    });
    r.handle.sync(vec![daily_gc(true)]).await.expect("sync");
    let mut changes = r.handle.changes();
    while r.history().await.last_run.is_none() {
        changes.changed().await.expect("changes");
    }
    assert_eq!(starts(&r.fake), 1, "one run, never one per missed fire");
    let h = r.history().await;
    assert_eq!(h.last_due, Some(at("2026-01-04T03:30:00Z")), "the latest");
    assert_eq!(h.last_outcome.as_deref(), Some("succeeded"));
    // A re-apply is no start: nothing more is caught up.
    r.handle.sync(vec![daily_gc(true)]).await.expect("sync");
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(starts(&r.fake), 1);
    // The history on disk says what ran, for the next start.
    let saved: BTreeMap<String, StepHistory> =
        r.store.load(STEP_HISTORY).expect("load").expect("saved");
    assert_eq!(saved["gc"].last_due, Some(at("2026-01-04T03:30:00Z")));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn without_catch_up_or_with_nothing_missed_nothing_runs_at_start() {
    let r = rig(at("2026-01-04T09:00:00Z"), |s| {
        history_with_last_due(s, "2026-01-01T03:30:00Z")
    });
    r.handle.sync(vec![daily_gc(false)]).await.expect("sync");
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(starts(&r.fake), 0, "missed fires are logged, not run");
    assert_eq!(r.history().await.last_due, Some(at("2026-01-01T03:30:00Z")));
    r.stop().await;
    // Its last fire handled, nothing missed since: no catch-up either.
    let r = rig(at("2026-01-04T09:00:00Z"), |s| {
        history_with_last_due(s, "2026-01-04T03:30:00Z")
    });
    r.handle.sync(vec![daily_gc(true)]).await.expect("sync");
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(starts(&r.fake), 0);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_step_never_fired_counts_its_missed_fires_from_when_it_was_armed() {
    let dir_history = |store: &Store| -> BTreeMap<String, StepHistory> {
        store.load(STEP_HISTORY).expect("load").unwrap_or_default()
    };
    // Armed on the 1st at 09:00, before any fire; the daemon stops.
    let r = rig(at("2026-01-01T09:00:00Z"), |_| {});
    r.handle.sync(vec![daily_gc(true)]).await.expect("sync");
    let armed = dir_history(&r.store)["gc"].armed_at;
    assert_eq!(armed, Some(at("2026-01-01T09:00:00Z")));
    assert_eq!(starts(&r.fake), 0, "arming never runs");
    let saved = dir_history(&r.store);
    r.stop().await;
    // Started again on the 3rd: the 2nd and 3rd at 03:30 were missed.
    let r = rig(at("2026-01-03T12:00:00Z"), |s| {
        s.save(STEP_HISTORY, &saved).expect("history")
    });
    r.handle.sync(vec![daily_gc(true)]).await.expect("sync");
    let mut changes = r.handle.changes();
    while r.history().await.last_run.is_none() {
        changes.changed().await.expect("changes");
    }
    assert_eq!(starts(&r.fake), 1);
    assert_eq!(r.history().await.last_due, Some(at("2026-01-03T03:30:00Z")));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_damaged_history_is_set_aside_and_the_scheduler_starts_without_it() {
    let r = rig(at("2026-01-04T09:00:00Z"), |s| {
        let path = s.root().join("step-history.json");
        std::fs::write(path, b"{\"gc\": {\"last-due\": 17").expect("garbage");
    });
    r.handle.sync(vec![daily_gc(true)]).await.expect("sync");
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(starts(&r.fake), 0, "no history: nothing to catch up");
    let aside = r.store.root().join("step-history.json.damaged");
    assert_eq!(
        std::fs::read(&aside).expect("set aside"),
        b"{\"gc\": {\"last-due\": 17"
    );
    // A fresh, readable history replaces it.
    let saved: BTreeMap<String, StepHistory> = r
        .store
        .load(STEP_HISTORY)
        .expect("readable")
        .expect("saved");
    assert!(saved["gc"].armed_at.is_some());
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_suspended_step_passes_its_due_times_unrun_and_runs_only_forced() {
    let r = rig(at("2026-01-01T03:29:00Z"), |_| {});
    r.handle.sync(vec![daily_gc(false)]).await.expect("sync");
    let unknown = r.handle.suspend("nope").await.expect_err("not declared");
    assert!(unknown.contains("no scheduled step"), "{unknown}");
    let since = r.handle.suspend("gc").await.expect("suspended");
    assert_eq!(since, at("2026-01-01T03:29:00Z"));
    // Written through: a restart reads it.
    let doc = crate::schedule::suspend::load(&r.store).expect("doc");
    assert_eq!(doc.since("gc"), Some(since));
    let status = r.handle.status().await.expect("status");
    assert_eq!(status[0].suspended_since, Some(since));
    // 03:30 comes: handled (logged step-suspended), not run.
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(starts(&r.fake), 0, "a suspended due time is not run");
    assert_eq!(r.history().await.last_due, Some(at("2026-01-01T03:30:00Z")));
    // `run` refuses it; `run --force` runs it, and it stays suspended.
    let refused = r
        .handle
        .run_now("gc", false, Reporter::none())
        .await
        .expect_err("suspended");
    assert!(
        refused.contains("is suspended") && refused.contains("--force"),
        "{refused}"
    );
    let report = r
        .handle
        .run_now("gc", true, Reporter::none())
        .await
        .expect("forced");
    assert!(report.ok(), "{report:?}");
    assert_eq!(starts(&r.fake), 1);
    assert!(r.handle.status().await.expect("status")[0]
        .suspended_since
        .is_some());
    // Resumed: nothing it passed is caught up; the next due time fires.
    assert_eq!(r.handle.resume("gc").await.expect("resumed"), Some(since));
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(starts(&r.fake), 1, "resume catches nothing up");
    assert_eq!(
        r.handle.status().await.expect("status")[0].suspended_since,
        None
    );
    assert_eq!(r.handle.resume("gc").await.expect("not suspended"), None);
    tokio::time::sleep(Duration::from_secs(24 * 3600)).await;
    assert_eq!(starts(&r.fake), 2, "the next day's fire runs");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_suspended_step_with_catch_up_catches_nothing_up_at_start_or_resume() {
    // Suspended before the daemon went down on the 1st; started on the 4th.
    let r = rig(at("2026-01-04T09:00:00Z"), |s| {
        history_with_last_due(s, "2026-01-01T03:30:00Z");
        crate::schedule::suspend::suspend(s, "gc", at("2026-01-01T04:00:00Z")).expect("suspend");
    });
    r.handle.sync(vec![daily_gc(true)]).await.expect("sync");
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(starts(&r.fake), 0, "no catch-up for a suspended step");
    let status = r.handle.status().await.expect("status");
    assert_eq!(status[0].suspended_since, Some(at("2026-01-01T04:00:00Z")));
    // Its missed due time was handled as suspended: a resume (or a later
    // start) does not run it either.
    assert_eq!(r.history().await.last_due, Some(at("2026-01-04T03:30:00Z")));
    r.handle.resume("gc").await.expect("resumed");
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(starts(&r.fake), 0, "resume catches nothing up");
    let saved = r.store.load::<BTreeMap<String, StepHistory>>(STEP_HISTORY);
    r.stop().await;
    let r = rig(at("2026-01-04T10:00:00Z"), |s| {
        s.save(STEP_HISTORY, &saved.expect("load").expect("saved"))
            .expect("history")
    });
    r.handle.sync(vec![daily_gc(true)]).await.expect("sync");
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(starts(&r.fake), 0, "nor does the next start");
    r.stop().await;
}

/// The window of `gc` from before a power cut, holding `db`, not closed
/// yet (its record is of another boot).
fn window_from_before(store: &Store) {
    let owner = Owner::current().expect("owner");
    crate::window::Records::of(store)
        .write(&crate::window::WindowRecord {
            step: "gc".into(),
            module: None,
            fire_time: at("2026-01-01T03:30:00Z"),
            opened_at: at("2026-01-01T03:30:00Z"),
            boot_id: "a-boot-before-the-power-cut".into(),
            pid: owner.pid,
            pid_start_time: owner.pid_start_time + 12345,
            step_container: "gc-run".into(),
            step_timeout_secs: Some(3600),
            opened_since_boot_secs: None,
            lease_since_boot_secs: None,
            owed: false,
            held: vec![crate::window::HeldContainer {
                id: "db".into(),
                name: "db".into(),
                was_running: true,
                starting: false,
            }],
        })
        .expect("record");
}

fn daily_gc_holding_db() -> ScheduledStep {
    let mut gc = daily_gc(true);
    Arc::make_mut(&mut gc.def).holds = vec![("db".into(), "db".into())];
    gc
}

#[tokio::test(start_paused = true)]
async fn a_catch_up_skipped_for_a_window_still_closing_runs_once_it_has_closed() {
    // Powered off on the 1st mid-window; back on the 4th, that window not
    // closed yet when the catch-up comes due: the fire is skipped...
    let r = rig(at("2026-01-04T09:00:00Z"), |s| {
        history_with_last_due(s, "2026-01-01T03:30:00Z");
        window_from_before(s);
    });
    r.fake.add_container(
        ContainerSpec {
            name: "db".into(),
            image: "img@sha256:00".into(),
            ..ContainerSpec::default()
        },
        true,
    );
    r.handle
        .sync(vec![daily_gc_holding_db()])
        .await
        .expect("sync");
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(starts(&r.fake), 0, "skipped while that window is open");
    let h = r.history().await;
    assert_eq!(h.last_due, Some(at("2026-01-04T03:30:00Z")));
    assert_eq!(h.catch_up_owed, Some(at("2026-01-04T03:30:00Z")));
    // ...and owed, across a restart too.
    let saved: BTreeMap<String, StepHistory> =
        r.store.load(STEP_HISTORY).expect("load").expect("saved");
    r.stop().await;
    let r = rig(at("2026-01-04T09:10:00Z"), |s| {
        s.save(STEP_HISTORY, &saved).expect("history");
        window_from_before(s);
    });
    r.fake.add_container(
        ContainerSpec {
            name: "db".into(),
            image: "img@sha256:00".into(),
            ..ContainerSpec::default()
        },
        true,
    );
    r.handle
        .sync(vec![daily_gc_holding_db()])
        .await
        .expect("sync");
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(starts(&r.fake), 0, "still in its way");
    // The window closes: the catch-up runs, once.
    crate::window::Records::of(&r.store)
        .remove("gc")
        .expect("closed");
    let mut changes = r.handle.changes();
    let ran = tokio::time::timeout(Duration::from_secs(10), async {
        while r.history().await.last_run.is_none() {
            changes.changed().await.expect("changes");
        }
    });
    ran.await
        .expect("the catch-up runs within seconds of the window's close");
    assert_eq!(starts(&r.fake), 1);
    let h = r.history().await;
    assert_eq!(h.last_outcome.as_deref(), Some("succeeded"));
    assert_eq!(h.catch_up_owed, None);
    tokio::time::sleep(Duration::from_secs(60)).await;
    r.handle
        .sync(vec![daily_gc_holding_db()])
        .await
        .expect("sync");
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(starts(&r.fake), 1, "never more than once");
    r.stop().await;
}

/// Step `id` due daily at 03:`minute`.
fn daily(id: &str, minute: u32) -> ScheduledStep {
    let mut step = daily_gc(false);
    let mut def = (*step.def).clone();
    def.id = id.into();
    std::sync::Arc::make_mut(&mut def.spec).name = format!("{id}-run");
    step.def = def.into();
    std::sync::Arc::make_mut(&mut step.timing).id = id.into();
    std::sync::Arc::make_mut(&mut step.timing).cron =
        crate::cron::CronSchedule::parse(&format!("{minute} 3 * * *")).expect("cron");
    step
}

#[tokio::test(start_paused = true)]
async fn the_brief_listing_picks_what_the_whole_status_would_and_builds_those_alone() {
    // 30 steps, s0 due last and s29 first; s3's last run failed, s7 is
    // suspended: the ten due first and those two.
    let r = rig(at("2026-01-04T09:00:00Z"), |s| {
        let history = BTreeMap::from([(
            "s3".to_string(),
            StepHistory {
                last_run: Some(at("2026-01-04T03:30:00Z")),
                last_outcome: Some("exited 1".into()),
                ..StepHistory::default()
            },
        )]);
        s.save(STEP_HISTORY, &history).expect("history");
        crate::schedule::suspend::suspend(s, "s7", at("2026-01-01T04:00:00Z")).expect("suspend");
    });
    let steps = (0..30).map(|i| daily(&format!("s{i}"), 59 - i)).collect();
    r.handle.sync(steps).await.expect("sync");
    let listed = r.handle.listed().await.expect("listed");
    let every = r.handle.status().await.expect("status");
    assert_eq!(every.len(), 30);
    let (want, scheduled) = crate::answer::status::listed(every, true);
    assert_eq!(listed.scheduled, scheduled);
    assert_eq!(listed.steps, want);
    let mut ids: Vec<&str> = listed.steps.iter().map(|s| s.step.as_str()).collect();
    ids.sort();
    let mut expected: Vec<String> = (20..30).map(|i| format!("s{i}")).collect();
    expected.extend(["s3".to_string(), "s7".to_string()]);
    expected.sort();
    assert_eq!(ids, expected);
    assert!(listed
        .steps
        .iter()
        .any(|s| s.step == "s7" && s.suspended_since.is_some()));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_metrics_gauges_read_in_place_say_what_every_step_s_state_says() {
    // 30 steps beside a history and a suspension of their own, and the
    // history of a step no longer declared (the walk passes it over).
    let r = rig(at("2026-01-04T09:00:00Z"), |s| {
        let history = BTreeMap::from([
            (
                "s12".to_string(),
                StepHistory {
                    last_run: Some(at("2026-01-04T03:47:09Z")),
                    last_success: Some(at("2026-01-04T03:47:09Z")),
                    last_exit_status: Some(0),
                    last_usage: Some(Box::new(crate::accounting::Usage {
                        cpu_usec: Some(1_250_000),
                        memory_peak_bytes: Some(4096),
                        memory_limit_bytes: Some(8192),
                        ..Default::default()
                    })),
                    ..StepHistory::default()
                },
            ),
            (
                "gone".to_string(),
                StepHistory {
                    last_exit_status: Some(9),
                    ..StepHistory::default()
                },
            ),
            (
                "s3".to_string(),
                StepHistory {
                    last_run: Some(at("2026-01-04T03:56:00Z")),
                    last_exit_status: Some(1),
                    ..StepHistory::default()
                },
            ),
        ]);
        s.save(STEP_HISTORY, &history).expect("history");
        crate::schedule::suspend::suspend(s, "s7", at("2026-01-01T04:00:00Z")).expect("suspend");
    });
    let steps = (0..30).map(|i| daily(&format!("s{i}"), 59 - i)).collect();
    r.handle.sync(steps).await.expect("sync");
    let gauges = r.handle.gauges().await.expect("gauges");
    let every = r.handle.status().await.expect("status");
    let want: Vec<StepGauges> = every.iter().map(StepGauges::of_status).collect();
    assert_eq!(gauges, want);
    let s12 = gauges.iter().find(|g| g.step == "s12").expect("s12");
    assert_eq!(s12.period_secs, Some(86400.0));
    assert_eq!(s12.last_cpu_usec, Some(1_250_000));
    assert_eq!(s12.memory_limit_bytes, Some(8192));
    assert!(gauges
        .iter()
        .any(|g| g.step == "s7" && g.suspended_since.is_some()));
    assert!(!gauges.iter().any(|g| g.step == "gone"));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_summary_says_what_every_step_s_state_says() {
    let r = rig(at("2026-01-01T03:29:00Z"), |_| {});
    r.handle.sync(vec![daily_gc(false)]).await.expect("sync");
    let status = r.handle.status().await.expect("status");
    let summary = r.handle.summary().await.expect("summary");
    assert_eq!(summary.scheduled, 1);
    assert_eq!(
        summary.next,
        Some((status[0].next_fire.expect("armed"), "gc".to_string()))
    );
    assert!(summary.suspended.is_empty());
    // Never ran: stale twice its period (a day) after it was first seen.
    assert_eq!(summary.stale_at, Some(at("2026-01-03T03:29:01Z")));
    // Suspended: no next fire said, no staleness expected.
    let since = r.handle.suspend("gc").await.expect("suspended");
    let summary = r.handle.summary().await.expect("summary");
    assert_eq!(summary.next, None);
    assert_eq!(summary.suspended, vec![("gc".to_string(), since)]);
    assert_eq!(summary.stale_at, None);
    r.stop().await;
}
