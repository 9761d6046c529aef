//! An operator's stop of a fire's unit at every point of the fire, against
//! the scripted runtime: before the window opens, while it opens, just
//! before the container's start (seen only by asking systemd itself), as
//! the container starts, and while it runs. The same on the sandbox node:
//! `tests/step_stops_node.rs` and `tests/windows_docker.rs`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use crate::runtime::fake::Call;
use crate::schedule::fire::{Firer, RunOutcome};
use crate::systemd::units::{StepUnit, StepUnits, UnitLook};

use super::tests::{moves, rig, s, step, t0, Rig};

/// Step units stopped when the test says so: through the watch (`stop`),
/// or only as systemd itself says when asked (`left`), as a stop landing in
/// the instant before the container's start is seen.
#[derive(Debug)]
struct Units {
    stop: watch::Receiver<bool>,
    left: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl StepUnits for Units {
    async fn begin(
        &self,
        step: &str,
        _module: Option<&str>,
        _fire_time: DateTime<Utc>,
    ) -> Result<Option<StepUnit>, String> {
        Ok(Some(StepUnit {
            name: format!("{step}.scope"),
            cgroup_parent: "/test".into(),
            control_group: None,
            holder_pid: None,
            keeper: None,
            stop_requested: Some(self.stop.clone()),
            stop_watch: None,
        }))
    }
    async fn started(&self, _unit: &mut Option<StepUnit>) {}
    async fn end(&self, _unit: Option<StepUnit>) {}
    async fn stopped_since_begin(&self, _unit: &UnitLook) -> bool {
        self.left.load(Ordering::SeqCst)
    }
}

fn firer(r: &Rig, units: Units) -> Firer {
    Firer::new(
        Arc::new(r.fake.clone()),
        r.firer.windows().clone(),
        Arc::new(units),
        watch::channel(false).1,
    )
}

#[tokio::test(start_paused = true)]
async fn a_unit_stopped_before_the_window_opens_holds_nothing_and_runs_nothing() {
    let r = rig(&[("db", true)]);
    let (_stop, rx) = watch::channel(true);
    let units = Units {
        stop: rx,
        left: Arc::default(),
    };
    let report = firer(&r, units)
        .fire(&step("gc", &["db"], None), t0())
        .await;
    assert_eq!(report.outcome, RunOutcome::Stopped { status: None });
    assert!(!report.ok());
    assert!(
        !moves(&r.fake).contains(&Call::Start(s("gc-run"))),
        "{:?}",
        moves(&r.fake)
    );
    assert!(
        !moves(&r.fake).contains(&Call::Stop(s("db"))),
        "nothing held for a step that does not run"
    );
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_unit_stopped_while_the_window_opens_runs_nothing_and_the_window_closes() {
    let r = rig(&[("db", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(30));
    // The window takes 10 s to open: db's stop waits its grace.
    r.fake.stop_delay("db", Duration::from_secs(10));
    let (stop, rx) = watch::channel(false);
    let units = Units {
        stop: rx,
        left: Arc::default(),
    };
    let firer = firer(&r, units);
    let fire = tokio::spawn(async move { firer.fire(&step("gc", &["db"], None), t0()).await });
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(r.records.all().expect("records").len(), 1, "opening");
    stop.send(true).expect("stop");
    let report = fire.await.expect("fire");
    assert_eq!(report.outcome, RunOutcome::Stopped { status: None });
    assert_eq!(
        moves(&r.fake),
        vec![
            Call::Create(s("gc-run")),
            Call::Stop(s("db")),
            Call::Start(s("db"))
        ],
        "the step never started; db ran again"
    );
    assert_eq!(report.started_again, vec!["db"]);
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_stop_seen_only_by_asking_systemd_before_the_start_runs_nothing() {
    // Its job was gone before its type could be read: the watch never
    // said stop, systemd does when asked.
    let r = rig(&[("db", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(30));
    let (_stop, rx) = watch::channel(false);
    let left = Arc::new(AtomicBool::new(true));
    let units = Units { stop: rx, left };
    let report = firer(&r, units)
        .fire(&step("gc", &["db"], None), t0())
        .await;
    assert_eq!(report.outcome, RunOutcome::Stopped { status: None });
    assert!(
        !moves(&r.fake).contains(&Call::Start(s("gc-run"))),
        "{:?}",
        moves(&r.fake)
    );
    assert!(r.fake.is_running("db"));
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_stop_that_lands_as_the_container_starts_ends_it_at_once() {
    let r = rig(&[("db", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(30));
    // The start takes 2 s; the stop lands in the middle of it.
    r.fake.start_delay("gc-run", Duration::from_secs(2));
    let (stop, rx) = watch::channel(false);
    let units = Units {
        stop: rx,
        left: Arc::default(),
    };
    let firer = firer(&r, units);
    let fire = tokio::spawn(async move { firer.fire(&step("gc", &["db"], None), t0()).await });
    let fake = r.fake.clone();
    wait_until(|| fake.calls().contains(&Call::Start(s("gc-run")))).await;
    stop.send(true).expect("stop");
    let report = fire.await.expect("fire");
    assert!(
        matches!(report.outcome, RunOutcome::Stopped { .. }),
        "{:?}",
        report.outcome
    );
    let moves = moves(&r.fake);
    let at = |c: Call| moves.iter().position(|x| *x == c).expect("made");
    // Killed at once, not given its grace; then db starts again.
    assert!(at(Call::Start(s("gc-run"))) < at(Call::Kill(s("gc-run"))));
    assert!(at(Call::Kill(s("gc-run"))) < at(Call::Start(s("db"))));
    assert!(!r.fake.is_running("gc-run") && r.fake.is_running("db"));
}

/// Wait (on the paused clock) until `done` says so.
async fn wait_until(done: impl Fn() -> bool) {
    while !done() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
