//! How short a window is, against the scripted runtime: each held
//! container's stop follows the previous one's death and the step waits
//! for every stop to return; each start follows the previous one's
//! `running` with only its confirmation between, the record's bookkeeping
//! is made beside the starts rather than between them, and at every
//! moment the record still names every held container that does not run
//! yet. The same windows run on a real Docker in `tests/windows_docker.rs`
//! and, killed between two starts, in `tests/window_faults.rs`.

use std::time::Duration;

use crate::runtime::fake::Call;
use crate::schedule::tests::{rig, s, step, t0};
use crate::window::WindowRecord;

/// One look at the close: which held containers run, and the record.
#[derive(Debug, Clone)]
struct Look {
    running: Vec<bool>,
    record: Option<WindowRecord>,
}

#[tokio::test(start_paused = true)]
async fn each_start_follows_the_previous_running_with_only_its_confirmation_between() {
    let r = rig(&[("db", true), ("app", true), ("web", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(5));
    let report = r
        .firer
        .fire(&step("gc", &["db", "app", "web"], None), t0())
        .await;
    assert!(report.ok(), "{report:?}");
    assert_eq!(report.started_again, vec!["web", "app", "db"]);
    let calls = r.fake.calls();
    let at = |c: Call| calls.iter().position(|x| *x == c).expect("call made");
    // Between one start and the next: only the inspection confirming the
    // first runs (it is also what says it has no health check to wait for).
    assert_eq!(
        calls[at(Call::Start(s("web"))) + 1..at(Call::Start(s("app")))],
        [Call::Inspect(s("web"))]
    );
    assert_eq!(
        calls[at(Call::Start(s("app"))) + 1..at(Call::Start(s("db")))],
        [Call::Inspect(s("app"))]
    );
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_record_names_every_held_container_not_yet_running_and_books_beside_the_starts() {
    let names = ["db", "app", "web"];
    let r = rig(&[("db", true), ("app", true), ("web", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(5));
    // Docker's start takes a while: the bookkeeping is made meanwhile.
    for n in names {
        r.fake.start_delay(n, Duration::from_secs(2));
    }
    let firer = r.firer.clone();
    let fire = tokio::spawn(async move {
        firer
            .fire(&step("gc", &["db", "app", "web"], None), t0())
            .await
    });
    // Past the opening (the record is written before the first stop, so
    // until the stops the record keeps running containers stopped).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut looks = Vec::new();
    while !fire.is_finished() {
        let record = r.records.all().expect("records").into_iter().next();
        let running = names.iter().map(|n| r.fake.is_running(n)).collect();
        looks.push(Look { running, record });
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let report = fire.await.expect("fire task");
    assert_eq!(report.started_again, vec!["web", "app", "db"]);
    assert!(
        looks.len() > 50,
        "looked through the close: {}",
        looks.len()
    );
    for look in &looks {
        for (i, name) in names.iter().enumerate() {
            let held = look.record.as_ref().map(|r| {
                (
                    r.keeps_stopped(name),
                    r.is_starting(name) || r.keeps_stopped(name),
                )
            });
            if look.running[i] {
                // A container running again is never counted as kept
                // stopped: a window opening now must not share it.
                assert!(
                    held.is_none_or(|(kept, _)| !kept),
                    "{name} runs while the record keeps it stopped: {look:?}"
                );
            } else {
                // One not running yet is still owed by the record: a crash
                // now leaves it to be started by whoever takes it over.
                assert!(
                    held.is_some_and(|(_, listed)| listed),
                    "{name} is down and the record does not name it: {look:?}"
                );
            }
        }
    }
    // While app starts (web running, app not yet): web, started, is
    // already off the record and db already decided on (marked starting),
    // written beside app's start rather than after it.
    let mid = looks
        .iter()
        .filter(|l| l.running == [false, false, true])
        .filter_map(|l| l.record.clone())
        .next_back()
        .expect("a look while app started");
    assert!(
        mid.held_names().all(|n| n != "web"),
        "web taken off: {mid:?}"
    );
    assert!(
        mid.is_starting("db"),
        "db decided beside app's start: {mid:?}"
    );
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn each_stop_follows_the_previous_death_and_the_step_waits_for_every_stop() {
    let r = rig(&[("db", true), ("app", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(30));
    // Docker answers db's stop 3 s after db died (its cleanup).
    r.fake.stop_cleanup("db", Duration::from_secs(3));
    let firer = r.firer.clone();
    let fire =
        tokio::spawn(async move { firer.fire(&step("gc", &["db", "app"], None), t0()).await });
    tokio::time::sleep(Duration::from_secs(1)).await;
    // app's stop went out once db was dead, not once its stop returned;
    // the step waits for every stop to have returned.
    // (The step's container is made before the first stop.)
    assert_eq!(
        crate::schedule::tests::moves(&r.fake),
        vec![
            Call::Create(s("gc-run")),
            Call::Stop(s("db")),
            Call::Stop(s("app"))
        ]
    );
    assert!(!r.fake.is_running("db") && !r.fake.is_running("app"));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let report = fire.await.expect("fire task");
    assert!(report.ok(), "{report:?}");
    assert_eq!(
        crate::schedule::tests::moves(&r.fake),
        vec![
            Call::Create(s("gc-run")),
            Call::Stop(s("db")),
            Call::Stop(s("app")),
            Call::Start(s("gc-run")),
            Call::Start(s("app")),
            Call::Start(s("db")),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_stop_that_fails_after_an_earlier_death_closes_once_every_stop_returned() {
    let r = rig(&[("db", true), ("app", true), ("web", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(30));
    r.fake.stop_cleanup("db", Duration::from_secs(3));
    r.fake.fail_stop("app");
    let began = tokio::time::Instant::now();
    let report = r
        .firer
        .fire(&step("gc", &["db", "app", "web"], None), t0())
        .await;
    assert!(!report.ok(), "{report:?}");
    let moves = crate::schedule::tests::moves(&r.fake);
    // web is never stopped, the step never runs, and db is started again
    // only after its own stop returned (the start is the last move).
    assert!(!moves.contains(&Call::Stop(s("web"))), "{moves:?}");
    assert!(!moves.contains(&Call::Start(s("gc-run"))), "{moves:?}");
    assert_eq!(moves.last(), Some(&Call::Start(s("db"))), "{moves:?}");
    assert!(
        began.elapsed() >= Duration::from_secs(3),
        "{:?}",
        began.elapsed()
    );
    assert!(r.fake.is_running("db") && r.fake.is_running("app") && r.fake.is_running("web"));
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_container_handed_to_the_window_while_it_closes_is_started_before_the_record_goes() {
    // svc was stopped when the window opened (a lost owner's late stop had
    // landed), so the record holds it as not running. While the close
    // starts db, that owner finds it lost its window and hands svc to this
    // one (`after_stop`): the close must start svc too, not erase a record
    // that now owes it a start.
    let r = rig(&[("db", true), ("svc", false)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(5));
    let records = r.records.clone();
    r.fake.on_start("db", move || {
        let _lock = records.lock().expect("windows.lock");
        let mut record = records.get("gc").expect("read").expect("the record");
        for c in record.held.iter_mut().filter(|c| c.name == "svc") {
            c.was_running = true;
        }
        records.write(&record).expect("hand svc over");
    });
    let report = r.firer.fire(&step("gc", &["svc", "db"], None), t0()).await;
    assert!(report.ok(), "{report:?}");
    assert!(r.fake.is_running("db"));
    assert!(r.fake.is_running("svc"), "the container handed over runs");
    assert_eq!(report.started_again, vec!["db", "svc"]);
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_close_that_panics_leaves_its_record_owed_to_the_adopter() {
    // A bug in the close (here: while starting db) is caught and alerted;
    // the record, still holding db, is marked owed so that the adopter
    // closes the window again rather than leaving it to nobody.
    let r = rig(&[("db", true)]);
    r.fake.exit_with("gc-run", 0, Duration::from_secs(5));
    r.fake.on_start("db", || panic!("a bug while starting db"));
    let report = r.firer.fire(&step("gc", &["db"], None), t0()).await;
    assert!(!report.ok(), "{report:?}");
    let records = r.records.all().expect("records");
    assert_eq!(records.len(), 1, "{records:?}");
    assert!(records[0].owed, "handed to the adopter: {records:?}");
    assert!(records[0].held_names().any(|n| n == "db"));
}
