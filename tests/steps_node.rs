//! How a scheduled step's fires are placed in time, with the daemon as a
//! real unit of the sandbox node: the splay of `randomized-delay` (the fire
//! comes when `status` and `plan` said), and the `catch-up` of a fire
//! missed while the daemon was stopped. Checked through journald (when
//! `step-started` was logged) and Docker (how often the step ran).

mod support;

use std::process::Output;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use support::daemon_unit::DaemonUnit;
use support::wait_for;
use support::world::World;

fn every_minute(id: &str, name: &str, image: &str) -> Value {
    json!({"id": id, "type": "container", "name": name, "image": image,
           "command": ["sh", "-c", "echo fired"], "network": "none",
           "schedule": "* * * * *", "timeout": 60})
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn time(v: &Value) -> DateTime<Utc> {
    let text = v.as_str().unwrap_or_else(|| panic!("not a time: {v}"));
    DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .to_utc()
}

/// When journald received each entry of the step's `event`, in order.
fn logged_at(d: &DaemonUnit, event: &str, step: &str) -> Vec<(DateTime<Utc>, String)> {
    let field = format!("MESH_EVENT={event}");
    let step = format!("MESH_STEP={step}");
    d.journal("-10min", &["-o", "json", &field, &step])
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| {
            let micros: i64 = e["__REALTIME_TIMESTAMP"]
                .as_str()
                .and_then(|t| t.parse().ok())
                .expect("a journal timestamp");
            let at = DateTime::from_timestamp_micros(micros).expect("a time");
            (at, e["MESSAGE"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_randomized_delay_fires_at_the_time_status_and_plan_show() {
    let mut w = World::new("splay");
    let machine_id = std::fs::read_to_string("/etc/machine-id")
        .expect("the node's machine id (the machine's)")
        .trim()
        .to_string();
    let bound = Duration::from_secs(30);
    // A step id whose delay on this node is well clear of the cron time, so
    // that a fire at the cron time could not pass for the delayed one.
    let id = (0..100)
        .map(|i| format!("splay{i}"))
        .find(|id| {
            let d = mesh_host::schedule::splay::delay(&machine_id, id, bound);
            d >= Duration::from_secs(8) && d <= Duration::from_secs(25)
        })
        .expect("a step id delayed 8 to 25 s");
    let delay = mesh_host::schedule::splay::delay(&machine_id, &id, bound);
    let run = w.name("run");
    let img = w.busybox();
    w.node.docker_ok(&["pull", &img]);
    let mut step = every_minute(&id, &run, &img);
    step["randomized-delay"] = json!(30);
    w.write_declaration(json!([step]));
    let d = DaemonUnit::install_with_args(&w, "", "--metrics-file=");
    d.start();

    let status = json_of(&d.cli(&["status", "--json"]));
    let shown = &status["steps"][0];
    assert_eq!(shown["step"], json!(id), "{status}");
    assert_eq!(
        shown["delay-ms"],
        json!(delay.as_millis() as u64),
        "{status}"
    );
    let next = time(&shown["next-fire"]);
    // The cron time (a whole minute) plus this node's delay for this step.
    assert_eq!(
        next.timestamp_millis() % 60_000,
        delay.as_millis() as i64,
        "{next}"
    );
    let plan = json_of(&d.cli(&["plan", &id, "--json"]));
    assert_eq!(time(&plan["next-fire"]), next, "{plan}");
    let text = String::from_utf8_lossy(&d.cli(&["status"]).stdout).into_owned();
    assert!(
        text.contains(&format!(
            "(randomized delay {}.{:03} s)",
            delay.as_secs(),
            delay.subsec_millis()
        )),
        "{text}"
    );
    // `mesh-host cron` shows the same time without asking the daemon.
    let cron = json_of(&w.mesh(&[
        "cron",
        "* * * * *",
        "--zone",
        "UTC",
        "--count",
        "1",
        "--from",
        &(next - chrono::TimeDelta::seconds(59)).to_rfc3339(),
        "--randomized-delay",
        "30",
        "--step",
        &id,
        "--json",
    ]));
    assert_eq!(time(&cron["next"][0]), next, "{cron}");

    // The fire comes at the time shown.
    let started = wait_for("the delayed fire", Duration::from_secs(100), || {
        logged_at(&d, "step-started", &id).into_iter().next()
    });
    let late = (started.0 - next).num_milliseconds();
    assert!(
        (0..2000).contains(&late),
        "step-started logged at {} for a fire shown at {next}: {}",
        started.0,
        started.1
    );
    assert!(
        started.1.contains(&format!("(due {})", next.to_rfc3339())),
        "{}",
        started.1
    );
    wait_for("the run to finish", Duration::from_secs(30), || {
        logged_at(&d, "step-finished", &id).into_iter().next()
    });
}

/// The node's clock, as `journalctl --since` reads it.
fn node_now(d: &DaemonUnit) -> String {
    d.node
        .sh_ok("date -u '+%Y-%m-%d %H:%M:%S UTC'")
        .trim()
        .to_string()
}

/// Sleep until `secs` seconds past the next whole minute.
fn until_next_minute_plus(secs: i64) {
    let now = Utc::now();
    let into = now.timestamp_millis().rem_euclid(60_000);
    let wait = 60_000 - into + secs * 1000;
    std::thread::sleep(Duration::from_millis(wait as u64));
}

/// A `* * * * *` step (with `catch-up` or without) that appends a line to
/// a file at each run; the daemon runs it once, is stopped across the next
/// due time, and started again 2 s into the minute after. Returns the
/// lines of the file 20 s later (the step's next due time is still 38 s
/// away), and the node's time of the restart. The world comes first, so
/// that a caller binding the tuple drops the daemon before it.
fn stopped_across_a_due_time(
    tag: &str,
    catch_up: bool,
) -> (World, DaemonUnit, Vec<String>, String) {
    let mut w = World::new(tag);
    let id = format!("{tag}-step");
    let run = w.name("run");
    let img = w.busybox();
    w.node.docker_ok(&["pull", &img]);
    let runs = w.path("runs");
    std::fs::create_dir_all(&runs).expect("runs dir");
    let log = format!("{runs}/log");
    let mut step = every_minute(&id, &run, &img);
    step["command"] = json!(["sh", "-c", "date -u +%H:%M:%S >> /runs/log"]);
    step["mounts"] = json!([{"source": runs, "target": "/runs"}]);
    if catch_up {
        step["catch-up"] = json!(true);
    }
    w.write_declaration(json!([step]));
    let d = DaemonUnit::install_with_args(&w, "", "--metrics-file=");
    d.start();
    let lines = |log: &str| -> Vec<String> {
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    };
    // Its first fire, on its cron schedule, recorded in the history.
    wait_for("the first fire", Duration::from_secs(80), || {
        (lines(&log).len() == 1).then_some(())
    });
    wait_for("the run's end in status", Duration::from_secs(30), || {
        let status = json_of(&d.cli(&["status", "--json"]));
        status["steps"][0]["last-run"].is_string().then_some(())
    });
    d.node
        .sh_ok(&format!("systemctl stop {}", support::quote(&d.unit)));
    // The next due time passes with no daemon.
    until_next_minute_plus(2);
    assert_eq!(lines(&log).len(), 1, "nothing ran while stopped");
    let since = node_now(&d);
    d.start();
    std::thread::sleep(Duration::from_secs(20));
    let got = lines(&log);
    (w, d, got, since)
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_fire_missed_while_the_daemon_was_stopped_is_caught_up_once() {
    let (_w, d, runs, since) = stopped_across_a_due_time("catchup", true);
    assert_eq!(
        runs.len(),
        2,
        "one run before, exactly one catch-up: {runs:?}"
    );
    let caught = d.journal(&since, &["MESH_EVENT=step-caught-up"]);
    assert_eq!(caught.lines().count(), 1, "{caught}");
    assert!(
        caught.contains("step catchup-step catches up its fire due"),
        "{caught}"
    );
    let started = d.journal(&since, &["MESH_EVENT=step-started"]);
    assert_eq!(started.lines().count(), 1, "{started}");
    // The run stands for the due time the message names.
    let due = caught
        .split("fire due ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap_or_else(|| panic!("no due time in {caught}"));
    assert!(
        started.contains(&format!("(due {due})")),
        "{started}\n{caught}"
    );
    let id = json_of(&d.cli(&["status", "--json"]));
    assert_eq!(time(&id["steps"][0]["last-due"]), time(&json!(due)), "{id}");
    // Its MESSAGE_ID is explained by the catalog, as the packages install it
    // (a file name of this test's own: others install theirs).
    let file = "/usr/lib/systemd/catalog/mesh-host-steps-test.catalog";
    std::fs::write(file, include_str!("../units/mesh-host.catalog")).expect("catalog");
    let _catalog = d
        .node
        .on_drop(format!("rm -f {file}; journalctl --update-catalog"));
    d.node.sh_ok("journalctl --update-catalog");
    let id = mesh_host::events::Event::StepCaughtUp.message_id();
    let explained = d.node.journal(&[
        "-x",
        "-u",
        &d.unit,
        &format!("MESSAGE_ID={id}"),
        "--since",
        &since,
    ]);
    assert!(
        explained.contains("caught up a fire it missed"),
        "{explained}"
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn without_catch_up_a_fire_missed_while_stopped_is_only_logged() {
    let (_w, d, runs, since) = stopped_across_a_due_time("nocatch", false);
    assert_eq!(runs.len(), 1, "no run at start: {runs:?}");
    assert!(d
        .journal(&since, &["MESH_EVENT=step-caught-up"])
        .trim()
        .is_empty());
    assert!(d
        .journal(&since, &["MESH_EVENT=step-started"])
        .trim()
        .is_empty());
    let missed = d.journal(&since, &["MESH_EVENT=step-missed"]);
    assert!(missed.contains("missed 1 fire(s)"), "{missed}");
}
