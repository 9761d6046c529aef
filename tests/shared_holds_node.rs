//! Shared, counted holds on the sandbox node: two steps whose windows hold
//! the same container both run; the container is stopped once, held while
//! either runs, and started once when the last one ends — also when one
//! step fails, and when the daemon is SIGKILLed between the two releases.
//! Counted in Docker's own events, streamed live from before the action
//! (its history keeps only 256 events).
//!
//! Nothing here disturbs the rest of the node: these run beside the other
//! node tests.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::daemon_unit::DaemonUnit;
use support::declare::{self, count, first};
use support::event_log::EventLog;
use support::world::World;
use support::{quote, stdout, wait_for};

/// The shared container was stopped once, before either step ran, and
/// started once, after both ended; each step ran once.
fn assert_held_once_across(events: &[(String, String)], shared: &str, runs: &[&str]) {
    assert_eq!(count(events, shared, "stop"), 1, "{events:#?}");
    assert_eq!(count(events, shared, "start"), 1, "{events:#?}");
    let stopped = first(events, shared, "die");
    let started = first(events, shared, "start");
    for run in runs {
        assert_eq!(
            count(events, run, "start"),
            1,
            "{run} ran once: {events:#?}"
        );
        assert!(
            stopped < first(events, run, "start"),
            "{shared} stopped before {run} ran: {events:#?}"
        );
        assert!(
            first(events, run, "die") < started,
            "{shared} started after {run} ended: {events:#?}"
        );
    }
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn two_local_runs_fired_together_share_a_hold_and_one_fails() {
    let mut w = World::new("shared");
    let db = w.name("db");
    let (a_only, b_only) = (w.name("aonly"), w.name("bonly"));
    let (run_a, run_b) = (w.name("runa"), w.name("runb"));
    let (id_a, id_b) = (w.name("sha"), w.name("shb"));
    let img = w.busybox();
    w.node.docker_ok(&["pull", &img]);
    for n in [&db, &a_only, &b_only] {
        w.run_service(n, &[]);
    }
    w.write_declaration(json!([
        declare::service("db", &db, &img),
        declare::service("aonly", &a_only, &img),
        declare::service("bonly", &b_only, &img),
        // Each keeps its own order: a stops db then aonly; b stops bonly
        // then db. b fails, and ends last.
        declare::step(&id_a, &run_a, &img, "sleep 3", &["db", "aonly"], 120),
        declare::step(
            &id_b,
            &run_b,
            &img,
            "sleep 8; exit 1",
            &["bonly", "db"],
            120
        ),
    ]));
    let events = EventLog::start(&w, &[&db, &a_only, &b_only, &run_a, &run_b]);
    // Both in the same second.
    let a = w.mesh_spawn(&["run", &id_a, "--local"], None);
    let b = w.mesh_spawn(&["run", &id_b, "--local"], None);
    let (a, b) = (
        a.wait_with_output().expect("run a"),
        b.wait_with_output().expect("run b"),
    );
    assert_eq!(a.status.code(), Some(0), "{}", stdout(&a));
    assert_eq!(b.status.code(), Some(1), "{}", stdout(&b));
    assert!(
        stdout(&b).contains("exited with status 1"),
        "{}",
        stdout(&b)
    );
    let events = events.finish();
    assert_held_once_across(&events, &db, &[&run_a, &run_b]);
    for (own, run) in [(&a_only, &run_a), (&b_only, &run_b)] {
        assert_eq!(count(&events, own, "stop"), 1, "{events:#?}");
        assert_eq!(count(&events, own, "start"), 1, "{events:#?}");
        assert!(first(&events, run, "die") < first(&events, own, "start"));
    }
    for n in [&db, &a_only, &b_only] {
        assert!(w.running(n), "{n} runs again");
    }
    let shared = w.journal(&["MESH_EVENT=window-opened"]);
    assert!(
        shared.contains(&format!(
            "shared with another window, not stopped again: {db}"
        )),
        "{shared}"
    );
    assert!(
        std::fs::read_dir(w.dir.join("state/windows"))
            .map(|d| d
                .filter_map(|e| e.ok())
                .all(|e| !e.file_name().to_string_lossy().ends_with(".json")))
            .unwrap_or(true),
        "every record erased"
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_daemon_sigkilled_between_the_two_releases_still_starts_the_shared_container_once() {
    let mut w = World::new("sharedkill");
    let db = w.name("db");
    let (run_a, run_b) = (w.name("runa"), w.name("runb"));
    let (id_a, id_b) = (w.name("ska"), w.name("skb"));
    let img = w.busybox();
    w.node.docker_ok(&["pull", &img]);
    w.run_service(&db, &[]);
    w.write_declaration(json!([
        declare::service("db", &db, &img),
        declare::step(&id_a, &run_a, &img, "sleep 2", &["db"], 120),
        declare::step(&id_b, &run_b, &img, "sleep 20", &["db"], 120),
    ]));
    let d = DaemonUnit::install(&w, "");
    d.start();
    assert!(w.running(&db), "applied at start");
    let events = EventLog::start(&w, &[&db, &run_a, &run_b]);
    let state = w.dir.join("state/windows");
    let record = |id: &str| state.join(format!("{id}.json")).exists();
    // Both fired by the daemon, together: its windows, both holding db.
    let ca = d.cli_spawn(&["run", &id_a]);
    let cb = d.cli_spawn(&["run", &id_b]);
    wait_for("both steps to run", Duration::from_secs(30), || {
        (w.running(&run_b) && record(&id_a) && record(&id_b)).then_some(())
    });
    // The first release: a's window closes and leaves db to b's.
    wait_for("a's window to close", Duration::from_secs(30), || {
        (!record(&id_a)).then_some(())
    });
    assert!(!w.running(&db), "still held by b's window");
    assert!(w.running(&run_b), "b still runs");
    let first_pid = d.main_pid();
    w.node.sh_ok(&format!("kill -KILL {first_pid}"));
    for c in [ca, cb] {
        let _ = c.wait_with_output();
    }
    // The next daemon takes b's window over, waits for b, starts db.
    wait_for("the daemon to run again", Duration::from_secs(60), || {
        (d.active() && d.main_pid() != first_pid).then_some(())
    });
    wait_for("db to run again", Duration::from_secs(90), || {
        w.running(&db).then_some(())
    });
    wait_for("b's record to go", Duration::from_secs(30), || {
        (!record(&id_b)).then_some(())
    });
    let events = events.finish();
    assert_held_once_across(&events, &db, &[&run_a, &run_b]);
    let handed = w.journal(&[&format!("MESH_STEP={id_a}")]);
    assert!(
        handed.contains(&format!(
            "{db} stays stopped: the window of {id_b} still holds it"
        )),
        "{handed}"
    );
    let taken = w.journal(&["MESH_EVENT=window-taken-over", &format!("MESH_STEP={id_b}")]);
    assert!(
        !taken.trim().is_empty(),
        "the next daemon took b's window over"
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn plan_shows_a_shared_hold_and_a_second_run_shares_it() {
    let mut w = World::new("sharedplan");
    let (a, b) = (w.name("a"), w.name("b"));
    let (s1, s2) = (w.name("s1"), w.name("s2"));
    let (first_id, second_id) = (w.name("first"), w.name("second"));
    let img = w.busybox();
    w.node.docker_ok(&["pull", &img]);
    w.run_service(&a, &[]);
    w.run_service(&b, &[]);
    w.write_declaration(json!([
        declare::service("a", &a, &img),
        declare::service("b", &b, &img),
        declare::step(&first_id, &s1, &img, "sleep 8", &["a", "b"], 120),
        declare::step(&second_id, &s2, &img, "true", &["b"], 120),
    ]));
    let out = w.mesh(&["plan", &first_id, "--local", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let plan: Value = serde_json::from_slice(&out.stdout).expect("plan json");
    assert_eq!(plan["stop-order"], json!([a, b]), "{plan}");
    assert_eq!(plan["start-order"], json!([b, a]), "{plan}");
    assert_eq!(plan["conflicts"], json!([]), "{plan}");
    assert_eq!(plan["holds"][0]["state"], "running", "{plan}");
    let child = w.mesh_spawn(&["run", &first_id, "--local"], None);
    wait_for("the window of first", Duration::from_secs(30), || {
        (!w.running(&b) && w.running(&s1)).then_some(())
    });
    let out = w.mesh(&["plan", &second_id, "--local", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let plan: Value = serde_json::from_slice(&out.stdout).expect("plan json");
    assert_eq!(plan["holds"][0]["shared"], json!(true), "{plan}");
    assert_eq!(plan["stop-order"], json!([]), "not stopped again: {plan}");
    assert_eq!(plan["conflicts"], json!([]), "{plan}");
    let out = w.mesh(&["plan", &second_id, "--local"]);
    assert!(
        stdout(&out).contains("shared: not stopped again")
            && stdout(&out).contains("a fire now would run"),
        "{}",
        stdout(&out)
    );
    // Fired for real, the second step runs beside the first, and b stays
    // stopped for the first.
    let out = w.mesh(&["run", &second_id, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(w.inspect(&s2, "{{.State.ExitCode}}"), "0", "it ran");
    assert!(!w.running(&b), "still held by the first window");
    assert!(w.running(&s1), "the first step still runs");
    let out = child.wait_with_output().expect("run");
    assert_eq!(out.status.code(), Some(0));
    assert!(w.running(&a) && w.running(&b));
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn two_steps_due_in_the_same_second_fired_by_the_daemon_share_a_hold() {
    let mut w = World::new("sharedcron");
    let db = w.name("db");
    let (run_a, run_b) = (w.name("runa"), w.name("runb"));
    let (id_a, id_b) = (w.name("cra"), w.name("crb"));
    let img = w.busybox();
    w.node.docker_ok(&["pull", &img]);
    let every_minute = |id: &str, run: &str, script: &str| {
        let mut s = declare::step(id, run, &img, script, &["db"], 120);
        s["schedule"] = json!("* * * * *");
        s
    };
    w.write_declaration(json!([
        declare::service("db", &db, &img),
        every_minute(&id_a, &run_a, "sleep 3"),
        every_minute(&id_b, &run_b, "sleep 6"),
    ]));
    // Well before a whole minute, so that the stream below listens before
    // the fire, and both windows close long before the next one.
    wait_for(
        "the first half of a minute",
        Duration::from_secs(70),
        || {
            let secs: u32 = w.node.sh_ok("date +%S").trim().parse().expect("seconds");
            (secs < 30).then_some(())
        },
    );
    let d = DaemonUnit::install(&w, "");
    d.start();
    assert!(w.running(&db), "applied at start");
    let events = EventLog::start(&w, &[&db, &run_a, &run_b]);
    let state = w.dir.join("state/windows");
    // Each step's container is there from the start (made ready ahead of
    // its fire): that they ran is read from the daemon's history.
    wait_for("both steps to have run", Duration::from_secs(90), || {
        let status: Value =
            serde_json::from_slice(&d.cli(&["status", "--json"]).stdout).unwrap_or_default();
        let ran = status["steps"].as_array().map_or(0, |s| {
            s.iter().filter(|s| s["last-run"].is_string()).count()
        });
        (ran == 2).then_some(())
    });
    wait_for("both windows to close", Duration::from_secs(30), || {
        let open = std::fs::read_dir(&state)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .any(|e| e.file_name().to_string_lossy().ends_with(".json"))
            })
            .unwrap_or(false);
        (!open && w.running(&db)).then_some(())
    });
    // No third fire: the daemon stops before the next minute.
    w.node.sh_ok(&format!("systemctl stop {}", quote(&d.unit)));
    let events = events.finish();
    assert_held_once_across(&events, &db, &[&run_a, &run_b]);
    // Both fires stood for the same due time.
    let started = w.journal(&["MESH_EVENT=step-started"]);
    let due = |id: &str| {
        started
            .lines()
            .find(|l| l.starts_with(&format!("step {id} started")))
            .and_then(|l| l.split("(due ").nth(1))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no start of {id}: {started}"))
    };
    assert_eq!(due(&id_a), due(&id_b), "{started}");
}
