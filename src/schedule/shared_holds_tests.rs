//! Shared, counted holds: two windows over the same container, against the
//! scripted runtime and a fake clock. The same with Docker's own events on
//! the sandbox node: `tests/shared_holds_node.rs`.

use std::time::Duration;

use crate::runtime::fake::Call;
use crate::schedule::fire::RunOutcome;
use crate::window::{HeldContainer, WindowRecord};
use crate::window::{Owner, Resumed};

use super::tests::{moves, rig, s, step, t0, Rig};

fn count(r: &Rig, call: &Call) -> usize {
    moves(&r.fake).iter().filter(|c| *c == call).count()
}

fn position(r: &Rig, call: &Call) -> usize {
    moves(&r.fake)
        .iter()
        .position(|c| c == call)
        .unwrap_or_else(|| panic!("{call:?} never made: {:?}", moves(&r.fake)))
}

fn last_position(r: &Rig, call: &Call) -> usize {
    moves(&r.fake)
        .iter()
        .rposition(|c| c == call)
        .unwrap_or_else(|| panic!("{call:?} never made: {:?}", moves(&r.fake)))
}

#[tokio::test(start_paused = true)]
async fn two_windows_over_one_container_both_run_and_it_stops_and_starts_once() {
    let r = rig(&[("db", true), ("app", true), ("cache", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(60));
    r.fake.exit_with("scan-run", 0, Duration::from_secs(10));
    let firer = r.firer.clone();
    let gc = tokio::spawn(async move { firer.fire(&step("gc", &["db", "app"], None), t0()).await });
    tokio::time::sleep(Duration::from_secs(5)).await;
    let firer = r.firer.clone();
    let scan = tokio::spawn(async move {
        firer
            .fire(&step("scan", &["cache", "db"], None), t0())
            .await
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    // Both windows are open, both count db.
    let records = r.records.all().expect("records");
    assert_eq!(records.len(), 2, "{records:?}");
    assert!(records.iter().all(|w| w.keeps_stopped("db")));
    let scan = scan.await.expect("scan fire");
    assert_eq!(scan.outcome, RunOutcome::Succeeded);
    assert_eq!(scan.started_again, vec!["cache"], "db is left to gc");
    assert!(!r.fake.is_running("db"), "still held by gc");
    let records = r.records.all().expect("records");
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].step, "gc");
    let gc = gc.await.expect("gc fire");
    assert!(gc.ok(), "{gc:?}");
    assert_eq!(gc.started_again, vec!["app", "db"]);
    assert_eq!(
        moves(&r.fake),
        vec![
            // Each step's container is made before its window's first stop.
            Call::Create(s("gc-run")),
            Call::Stop(s("db")),
            Call::Stop(s("app")),
            Call::Start(s("gc-run")),
            // scan: its own container stopped, db not stopped again.
            Call::Create(s("scan-run")),
            Call::Stop(s("cache")),
            Call::Start(s("scan-run")),
            Call::Start(s("cache")),
            // gc, the last holder of db, in its own reverse order.
            Call::Start(s("app")),
            Call::Start(s("db")),
        ]
    );
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn fired_together_one_failing_the_shared_container_starts_after_both() {
    let r = rig(&[("db", true)]);
    // The stop takes a while: the second window opens while the first is
    // still stopping db, and waits for it rather than stopping it again.
    r.fake.stop_delay("db", Duration::from_secs(3));
    r.fake.exit_with("gc-run", 1, Duration::from_secs(5));
    r.fake.exit_with("scan-run", 0, Duration::from_secs(20));
    let firer = r.firer.clone();
    let gc = tokio::spawn(async move { firer.fire(&step("gc", &["db"], None), t0()).await });
    let firer = r.firer.clone();
    let scan = tokio::spawn(async move { firer.fire(&step("scan", &["db"], None), t0()).await });
    let (gc, scan) = (gc.await.expect("gc"), scan.await.expect("scan"));
    assert_eq!(gc.outcome, RunOutcome::Exited { status: 1 });
    assert_eq!(scan.outcome, RunOutcome::Succeeded);
    assert_eq!(count(&r, &Call::Stop(s("db"))), 1, "{:?}", moves(&r.fake));
    assert_eq!(count(&r, &Call::Start(s("db"))), 1, "{:?}", moves(&r.fake));
    let stop = position(&r, &Call::Stop(s("db")));
    let start = position(&r, &Call::Start(s("db")));
    for run in ["gc-run", "scan-run"] {
        let ran = position(&r, &Call::Start(s(run)));
        assert!(stop < ran && ran < start, "{run}: {:?}", moves(&r.fake));
    }
    assert!(r.fake.is_running("db"));
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn two_windows_closing_at_once_start_the_shared_container_once() {
    let r = rig(&[("db", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(10));
    r.fake.exit_with("scan-run", 0, Duration::from_secs(10));
    let firer = r.firer.clone();
    let gc = tokio::spawn(async move { firer.fire(&step("gc", &["db"], None), t0()).await });
    let firer = r.firer.clone();
    let scan = tokio::spawn(async move { firer.fire(&step("scan", &["db"], None), t0()).await });
    let (gc, scan) = (gc.await.expect("gc"), scan.await.expect("scan"));
    assert!(gc.ok() && scan.ok(), "{gc:?} {scan:?}");
    assert_eq!(count(&r, &Call::Start(s("db"))), 1, "{:?}", moves(&r.fake));
    // One of them started it; the other left it to that one.
    let started: Vec<_> = [&gc, &scan]
        .iter()
        .flat_map(|f| f.started_again.clone())
        .collect();
    assert_eq!(started, vec!["db"]);
    assert!(r.fake.is_running("db"));
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_window_opening_while_another_starts_the_container_waits_and_stops_it_again() {
    let r = rig(&[("db", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(5));
    r.fake.exit_with("scan-run", 0, Duration::from_secs(5));
    // gc's close is starting db again for 20 s (a slow start): all that
    // time db does not run yet, and a window opening must not take it for
    // stopped and then have it started under its step.
    r.fake.start_delay("db", Duration::from_secs(20));
    let firer = r.firer.clone();
    let gc = tokio::spawn(async move { firer.fire(&step("gc", &["db"], None), t0()).await });
    tokio::time::sleep(Duration::from_secs(10)).await;
    let records = r.records.all().expect("records");
    assert!(records[0].is_starting("db"), "{records:?}");
    let scan = r.firer.fire(&step("scan", &["db"], None), t0()).await;
    assert!(scan.ok(), "{scan:?}");
    assert!(gc.await.expect("gc").ok());
    let calls = moves(&r.fake);
    let first_start = position(&r, &Call::Start(s("db")));
    let second_stop = last_position(&r, &Call::Stop(s("db")));
    let scan_ran = position(&r, &Call::Start(s("scan-run")));
    assert!(
        first_start < second_stop && second_stop < scan_ran,
        "scan stopped db again after gc started it, then ran: {calls:?}"
    );
    assert_eq!(count(&r, &Call::Stop(s("db"))), 2, "{calls:?}");
    assert_eq!(count(&r, &Call::Start(s("db"))), 2, "{calls:?}");
    assert!(r.fake.is_running("db"));
}

/// A record of `step` holding `db`, its owner gone (this pid, another
/// start time), of this boot unless `boot` says otherwise.
fn dead_holder(r: &Rig, step: &str, boot: &str, starting: bool) {
    let owner = Owner::current().expect("owner");
    r.records
        .write(&WindowRecord {
            step: step.into(),
            module: None,
            fire_time: t0(),
            opened_at: t0(),
            boot_id: boot.into(),
            pid: owner.pid,
            pid_start_time: owner.pid_start_time + 12345,
            step_container: format!("{step}-run"),
            step_timeout_secs: Some(3600),
            opened_since_boot_secs: None,
            lease_since_boot_secs: None,
            owed: false,
            held: vec![HeldContainer {
                id: "db".into(),
                name: "db".into(),
                was_running: true,
                starting,
            }],
        })
        .expect("write record");
}

#[tokio::test(start_paused = true)]
async fn the_record_of_a_dead_owner_carries_the_count_and_its_taker_starts_the_container() {
    // gc's owner died mid-window, db stopped: scan shares db with it.
    let r = rig(&[("db", false)]);
    let boot = crate::store::boot_id().expect("boot id");
    dead_holder(&r, "gc", &boot, false);
    r.fake.exit_with("scan-run", 0, Duration::from_secs(5));
    let scan = r.firer.fire(&step("scan", &["db"], None), t0()).await;
    assert!(scan.ok(), "{scan:?}");
    assert!(scan.started_again.is_empty(), "db is left to gc's record");
    assert!(!r.fake.is_running("db"));
    assert_eq!(count(&r, &Call::Stop(s("db"))), 0);
    assert_eq!(count(&r, &Call::Start(s("db"))), 0);
    let resumed = r.firer.windows().resume().await.expect("resume");
    match &resumed[..] {
        [Resumed::Closed { step, report, .. }] => {
            assert_eq!(step, "gc");
            assert_eq!(report.started, vec!["db"]);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(count(&r, &Call::Start(s("db"))), 1);
    assert!(r.fake.is_running("db"));
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_start_begun_by_a_dead_last_holder_is_finished_by_its_taker_not_stopped() {
    let r = rig(&[("db", true)]);
    let boot = crate::store::boot_id().expect("boot id");
    dead_holder(&r, "gc", &boot, true);
    let resumed = r.firer.windows().resume().await.expect("resume");
    assert!(
        matches!(&resumed[..], [Resumed::Closed { report, .. }] if report.started == vec!["db"]),
        "{resumed:?}"
    );
    assert_eq!(count(&r, &Call::Stop(s("db"))), 0, "{:?}", moves(&r.fake));
    assert!(r.fake.is_running("db"));
}

#[tokio::test(start_paused = true)]
async fn a_record_of_another_boot_over_the_container_still_skips_the_fire() {
    let r = rig(&[("db", true)]);
    dead_holder(&r, "gc", "00000000-0000-0000-0000-000000000000", false);
    let scan = r.firer.fire(&step("scan", &["db"], None), t0()).await;
    match &scan.outcome {
        RunOutcome::Skipped { reason } => {
            assert!(reason.contains("gc") && reason.contains("db"), "{reason}")
        }
        other => panic!("expected a skip, got {other:?}"),
    }
    assert!(!r.fake.calls().contains(&Call::Start(s("scan-run"))));
    assert!(r.fake.is_running("db"));
}

#[tokio::test(start_paused = true)]
async fn a_step_sharing_a_container_still_being_stopped_waits_for_the_stop() {
    let r = rig(&[("db", true)]);
    r.fake.stop_delay("db", Duration::from_secs(10));
    r.fake.exit_with("gc-run", 0, Duration::from_secs(30));
    r.fake.exit_with("scan-run", 0, Duration::from_secs(5));
    let firer = r.firer.clone();
    let gc = tokio::spawn(async move { firer.fire(&step("gc", &["db"], None), t0()).await });
    tokio::time::sleep(Duration::from_secs(1)).await;
    let firer = r.firer.clone();
    let scan = tokio::spawn(async move { firer.fire(&step("scan", &["db"], None), t0()).await });
    // gc is still stopping db: scan holds it too, but its step waits.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(r.fake.is_running("db"), "the stop takes 10 s");
    assert_eq!(r.records.all().expect("records").len(), 2);
    assert!(
        !r.fake.calls().contains(&Call::Start(s("scan-run"))),
        "scan's step waits for db to stop: {:?}",
        moves(&r.fake)
    );
    assert!(scan.await.expect("scan").ok());
    assert!(gc.await.expect("gc").ok());
    assert_eq!(count(&r, &Call::Stop(s("db"))), 1, "{:?}", moves(&r.fake));
    assert_eq!(count(&r, &Call::Start(s("db"))), 1, "{:?}", moves(&r.fake));
    assert!(r.fake.is_running("db"));
}

/// A window of `step` over `db` that this process opened (not written).
fn own_window(step: &str, boot: &str) -> WindowRecord {
    let owner = Owner::current().expect("owner");
    WindowRecord {
        step: step.into(),
        module: None,
        fire_time: t0(),
        opened_at: t0(),
        boot_id: boot.into(),
        pid: owner.pid,
        pid_start_time: owner.pid_start_time,
        step_container: format!("{step}-run"),
        step_timeout_secs: Some(3600),
        opened_since_boot_secs: None,
        lease_since_boot_secs: None,
        owed: false,
        held: vec![HeldContainer {
            id: "db".into(),
            name: "db".into(),
            was_running: true,
            starting: false,
        }],
    }
}

// A stop that lands after its owner lost the window (taken over and
// closed meanwhile) is undone, unless another window holds the container
// now. The same for real, the owner frozen by SIGSTOP between its check
// and its stop: tests/window_faults.rs.
#[tokio::test(start_paused = true)]
async fn a_late_stop_is_undone_only_when_no_window_holds_the_container() {
    use crate::window::Fence;
    let boot = crate::store::boot_id().expect("boot id");
    let windows = |r: &Rig| r.firer.windows().clone();

    // Still its own: nothing to undo.
    let r = rig(&[("db", false)]);
    let gc = own_window("gc", &boot);
    r.records.write(&gc).expect("write record");
    assert_eq!(windows(&r).after_stop(&gc, "db").await, Fence::Own);
    assert_eq!(count(&r, &Call::Start(s("db"))), 0);

    // Lost, closed by its taker: the late stop is undone.
    let r = rig(&[("db", false)]);
    assert_eq!(windows(&r).after_stop(&gc, "db").await, Fence::Lost);
    assert_eq!(moves(&r.fake), vec![Call::Start(s("db"))]);
    assert!(r.fake.is_running("db"));

    // Lost, and another window of this boot keeps db stopped: left to it.
    let r = rig(&[("db", false)]);
    dead_holder(&r, "scan", &boot, false);
    assert_eq!(windows(&r).after_stop(&gc, "db").await, Fence::Lost);
    assert_eq!(count(&r, &Call::Start(s("db"))), 0);
    assert!(!r.fake.is_running("db"));

    // Lost, and another window is starting db again: started too (a
    // second start is harmless; leaving it could leave db down).
    let r = rig(&[("db", false)]);
    dead_holder(&r, "scan", &boot, true);
    assert_eq!(windows(&r).after_stop(&gc, "db").await, Fence::Lost);
    assert!(r.fake.is_running("db"));
}

// A window opening between a lost owner's late stop and its undo finds
// the container stopped and records it so. The undo must not start it
// beside that window's step: it hands it to that window, whose close
// starts it once its step has ended.
#[tokio::test(start_paused = true)]
async fn a_late_stop_is_handed_to_a_window_that_opened_over_it_not_undone_beside_it() {
    use crate::window::Fence;
    let boot = crate::store::boot_id().expect("boot id");
    // gc's owner lost its window (taken over and closed); its late stop
    // of db has landed.
    let r = rig(&[("db", false)]);
    let gc = own_window("gc", &boot);
    r.fake.exit_with("scan-run", 0, Duration::from_secs(60));
    let firer = r.firer.clone();
    let scan = tokio::spawn(async move { firer.fire(&step("scan", &["db"], None), t0()).await });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(r.fake.calls().contains(&Call::Start(s("scan-run"))));
    let records = r.records.all().expect("records");
    assert_eq!(records.len(), 1, "scan's window is open: {records:?}");
    // Now gc's owner looks again.
    let windows = r.firer.windows().clone();
    assert_eq!(windows.after_stop(&gc, "db").await, Fence::Lost);
    assert!(
        !r.fake.is_running("db"),
        "db is never started beside scan's step: {:?}",
        moves(&r.fake)
    );
    assert!(r.records.all().expect("records")[0].keeps_stopped("db"));
    let scan = scan.await.expect("scan fire");
    assert!(scan.ok(), "{scan:?}");
    assert_eq!(scan.started_again, vec!["db"], "started by scan's close");
    assert!(r.fake.is_running("db"));
    assert_eq!(count(&r, &Call::Start(s("db"))), 1, "{:?}", moves(&r.fake));
    assert!(r.records.all().expect("records").is_empty());
}
