//! How the scheduler's loop sleeps (src/schedule/scheduler.rs, timer.rs),
//! against the scripted runtime and a fake clock on paused tokio time: it
//! wakes for the watchdog and a due time, and at once when the wall clock
//! is stepped, never on a tick of its own.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use tokio::sync::watch;

use crate::clock::FakeClock;
use crate::cron::CronSchedule;
use crate::runtime::fake::{Call, FakeRuntime};
use crate::runtime::{ContainerRuntime, ContainerSpec};
use crate::schedule::fire::{Firer, StepDef};
use crate::schedule::jobs::StepTiming;
use crate::schedule::scheduler::{Scheduler, SchedulerHandle, Watchdog};
use crate::schedule::step::ScheduledStep;
use crate::store::Store;
use crate::systemd::units::NoUnits;
use crate::window::{Owner, Windows};

struct Rig {
    fake: FakeRuntime,
    clock: Arc<FakeClock>,
    handle: SchedulerHandle,
    feeds: Arc<AtomicUsize>,
    _shutdown: watch::Sender<bool>,
    _dir: tempfile::TempDir,
}

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).expect("time").to_utc()
}

/// A running scheduler whose clock reads `now`, its watchdog fed every
/// 15 s (counted), holding `steps` (id, cron expression).
async fn rig(now: &str, steps: &[(&str, &str)]) -> Rig {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("state")).expect("store");
    let fake = FakeRuntime::new();
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
    let firer = Firer::new(runtime, windows, Arc::new(NoUnits), rx.clone());
    let feeds = Arc::new(AtomicUsize::new(0));
    let counted = feeds.clone();
    let watchdog = Watchdog {
        every: Duration::from_secs(15),
        feed: Box::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
        }),
    };
    let (scheduler, handle) = Scheduler::new(firer, clock.clone(), store, Some(watchdog));
    tokio::spawn(scheduler.run(rx));
    let steps = steps
        .iter()
        .map(|(id, expr)| ScheduledStep {
            def: StepDef {
                id: id.to_string(),
                module: None,
                spec: std::sync::Arc::new(ContainerSpec {
                    name: format!("{id}-run"),
                    image: "img@sha256:00".into(),
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
                fingerprint: (*expr).into(),
                delay: std::time::Duration::ZERO,
                catch_up: false,
            }),
        })
        .collect();
    handle.sync(steps).await.expect("sync");
    Rig {
        fake,
        clock,
        handle,
        feeds,
        _shutdown: shutdown,
        _dir: dir,
    }
}

fn fired(fake: &FakeRuntime, name: &str) -> bool {
    fake.calls()
        .iter()
        .any(|c| matches!(c, Call::Start(n) if n == name))
}

#[tokio::test(start_paused = true)]
async fn an_idle_scheduler_wakes_only_to_feed_the_watchdog() {
    let r = rig("2026-06-01T02:00:00Z", &[("gc", "0 3 * * *")]).await;
    let changes = r.handle.changes();
    let seen = *changes.borrow();
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(r.feeds.load(Ordering::SeqCst), 1, "fed once at start");
    tokio::time::sleep(Duration::from_secs(21)).await;
    // t = 31 s: fed at 0, 15 and 30 s, and nothing else happened.
    assert_eq!(r.feeds.load(Ordering::SeqCst), 3);
    assert_eq!(*changes.borrow(), seen, "no change reported while idle");
    assert!(!fired(&r.fake, "gc-run"));
}

#[tokio::test(start_paused = true)]
async fn a_due_time_wakes_the_scheduler_and_is_a_change() {
    let r = rig("2026-06-01T02:59:00Z", &[("gc", "0 3 * * *")]).await;
    let mut changes = r.handle.changes();
    changes.borrow_and_update();
    tokio::time::sleep(Duration::from_secs(59)).await;
    assert!(!fired(&r.fake, "gc-run"), "not before it is due");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        fired(&r.fake, "gc-run"),
        "fired when due: {:?} {:?}",
        r.fake.calls(),
        r.handle.status().await
    );
    assert!(changes.has_changed().expect("scheduler alive"));
}

#[tokio::test(start_paused = true)]
async fn a_forward_clock_step_past_a_due_time_fires_at_once() {
    let r = rig("2026-06-01T02:00:00Z", &[("gc", "0 3 * * *")]).await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    r.clock.jump(TimeDelta::minutes(61));
    // Without a wake on the step the loop would sleep on for an hour.
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(fired(&r.fake, "gc-run"), "{:?}", r.fake.calls());
}

#[tokio::test(start_paused = true)]
async fn a_backward_clock_step_re_arms_the_job_earlier_at_once() {
    let r = rig("2026-06-01T05:30:00Z", &[("hourly", "0 * * * *")]).await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    let before = r.handle.status().await.expect("status");
    assert_eq!(before[0].next_fire, Some(at("2026-06-01T06:00:00Z")));
    // Back to 02:59:58: the next fire is 03:00, two seconds away, not the
    // 06:00 the loop was sleeping towards.
    r.clock.jump(TimeDelta::seconds(-(2 * 3600 + 30 * 60 + 2)));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(fired(&r.fake, "hourly-run"), "{:?}", r.fake.calls());
}
