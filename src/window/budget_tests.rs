//! One deadline for the whole close, against the scripted runtime and
//! tokio's paused clock: a stranger holding `windows.lock` or
//! `alerts.lock` costs a close one wait, not one per held container; a
//! runtime that answers slowly runs the close into its deadline, never
//! past it; and what is not started is alerted, saying what ran out. The
//! same on the sandbox node, with stopped `flock` holders and a paused
//! dockerd: `tests/close_budget_node.rs`.

use std::time::Duration;

use tokio::time::Instant;

use crate::runtime::fake::Call;
use crate::schedule::fire::FireReport;
use crate::schedule::tests::{rig, s, step, t0, Rig};
use crate::window::{close_budget, RECORDS_LOCK_WAIT};

/// Twelve services, `c01`..`c12`, running.
fn twelve() -> Vec<String> {
    (1..=12).map(|n| format!("c{n:02}")).collect()
}

fn rig_of(names: &[String]) -> Rig {
    let services: Vec<(&str, bool)> = names.iter().map(|n| (n.as_str(), true)).collect();
    rig(&services)
}

/// Fire `gc` holding `names`, its step ending 5 s in; run `meanwhile`
/// once the step runs (the window open). The report, and how long the
/// close took: from the step's end to the fire's.
async fn fire_with<F>(r: &Rig, names: &[String], meanwhile: F) -> (FireReport, Duration)
where
    F: FnOnce(&Rig),
{
    r.fake.exit_with("gc-run", 0, Duration::from_secs(5));
    let holds: Vec<&str> = names.iter().map(String::as_str).collect();
    let def = step("gc", &holds, None);
    let firer = r.firer.clone();
    let fire = tokio::spawn(async move { firer.fire(&def, t0()).await });
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(r.fake.is_running("gc-run"), "the step runs");
    meanwhile(r);
    // The step ends 5 s after its start.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let step_ended = Instant::now();
    let report = fire.await.expect("fire");
    (report, step_ended.elapsed())
}

fn started(r: &Rig, name: &str) -> bool {
    r.fake.calls().contains(&Call::Start(s(name)))
}

#[tokio::test(start_paused = true)]
async fn a_stranger_holding_windows_lock_costs_the_close_one_wait_not_one_per_container() {
    let names = twelve();
    let r = rig_of(&names);
    let mut hostage = None;
    let (report, took) = fire_with(&r, &names, |r| {
        hostage = Some(r.records.lock().expect("the stranger takes windows.lock"));
    })
    .await;
    // Every held container runs again, in one wait of the lock (20 s)
    // and the starts: never twelve waits, which would be four minutes.
    assert!(report.not_started.is_empty(), "{report:?}");
    assert_eq!(report.started_again.len(), 12, "{report:?}");
    assert!(names.iter().all(|n| r.fake.is_running(n)));
    assert!(
        took >= RECORDS_LOCK_WAIT && took < RECORDS_LOCK_WAIT + Duration::from_secs(5),
        "the close took {took:?}"
    );
    // Its record, which only the lock's holder could have let it erase, is
    // erased once the stranger lets go.
    assert_eq!(r.records.all().expect("records").len(), 1);
    drop(hostage);
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_stranger_holding_alerts_lock_never_keeps_a_close_past_its_budget() {
    let names = twelve();
    let r = rig_of(&names);
    // Four will not start: each is alerted.
    for n in &names[..4] {
        r.fake.fail_start(n);
    }
    let mut hostage = None;
    let (report, took) = fire_with(&r, &names, |r| {
        hostage = Some(r.store.document_lock("alerts").expect("alerts.lock"));
    })
    .await;
    assert_eq!(report.not_started.len(), 4, "{report:?}");
    assert_eq!(report.started_again.len(), 8, "{report:?}");
    // One wait of the alerts lock (10 s) at most, and the refusals'
    // retries (two pauses of 2 s each, per container): not four waits.
    assert!(
        took < Duration::from_secs(10 + 4 * 4 + 5),
        "the close took {took:?}"
    );
    assert!(took < close_budget());
    // The alerts could not be recorded for status; the journal has them.
    drop(hostage);
    assert!(crate::window::alerts::since(&r.store, None)
        .expect("alerts")
        .is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_slow_runtime_runs_the_close_into_its_deadline_and_what_is_left_is_alerted_and_owed() {
    let names = twelve();
    let r = rig_of(&names);
    // Started in reverse: c12 and c11 start at once, c10's start does not
    // answer for longer than the whole budget.
    r.fake.start_delay("c10", close_budget() * 2);
    let (report, took) = fire_with(&r, &names, |_| {}).await;
    assert_eq!(report.started_again, vec!["c12", "c11"]);
    assert_eq!(report.not_started.len(), 10, "{report:?}");
    // Never past the budget: the deadline cuts the start short.
    assert!(
        took <= close_budget() + Duration::from_secs(1),
        "the close took {took:?}"
    );
    assert!(took >= close_budget() - Duration::from_secs(1), "{took:?}");
    // c1..c9 were never begun: what ran out is said for each.
    assert!(!started(&r, "c09") && !started(&r, "c01"));
    let alerts = crate::window::alerts::since(&r.store, None).expect("alerts");
    assert_eq!(alerts.len(), 10, "{alerts:?}");
    let budget = close_budget().as_secs();
    for alert in &alerts {
        assert!(
            alert.message.contains(&format!(
                "closing budget of {budget} s ran out waiting for the container runtime to start c10"
            )),
            "{}",
            alert.message
        );
    }
    // Still owed: the record stays, narrowed to them, marked owed.
    let records = r.records.all().expect("records");
    assert_eq!(records.len(), 1);
    assert!(records[0].owed);
    assert_eq!(records[0].held_names().count(), 10);
}

#[tokio::test(start_paused = true)]
async fn both_locks_held_and_the_runtime_slow_a_close_of_twelve_ends_within_its_budget() {
    let names = twelve();
    let r = rig_of(&names);
    // Each start answers 30 s late: twelve would need six minutes, on top
    // of the waits for the locks.
    for n in &names {
        r.fake.start_delay(n, Duration::from_secs(30));
    }
    let mut hostages = (None, None);
    let (report, took) = fire_with(&r, &names, |r| {
        hostages = (
            Some(r.records.lock().expect("windows.lock")),
            Some(r.store.document_lock("alerts").expect("alerts.lock")),
        );
    })
    .await;
    assert!(
        took <= close_budget() + Duration::from_secs(1),
        "the close took {took:?}"
    );
    // Each held container runs again or is alerted on.
    assert_eq!(
        report.started_again.len() + report.not_started.len(),
        12,
        "{report:?}"
    );
    // One wait of windows.lock (20 s), then a start every 30 s: nine,
    // and the tenth cut short by the deadline.
    assert_eq!(report.started_again.len(), 9, "{report:?}");
    for n in &report.started_again {
        assert!(r.fake.is_running(n), "{n}");
    }
}
