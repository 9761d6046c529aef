//! A step is ready before it is due, with the daemon as a real unit of the
//! sandbox node: its next fire's container is created ahead (status and
//! plan say so), an apply and a daemon restart leave it as it is, the due
//! second costs Docker a `start` and no `create`, the run still lives in
//! its transient unit and `systemctl stop` still ends it, the next fire's
//! container is made when the run ends, and a changed or removed step
//! replaces or removes it. Under both cgroup drivers. And (cgroupfs) a
//! ready container removed by hand after its fire looked at it, 2 s ahead,
//! is made again at the due second and runs in the fire's scope.

mod support;

use std::process::Output;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use support::daemon_unit::DaemonUnit;
use support::declare::{self, count, first, first_made, is_made, text};
use support::event_log::EventLog;
use support::world::{lists_pid, World};
use support::{quote, wait_for, CgroupDriver};

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(out)))
}

/// Sleep until `secs` seconds past the next whole minute.
fn until_next_minute_plus(secs: i64) {
    let into = Utc::now().timestamp_millis().rem_euclid(60_000);
    std::thread::sleep(Duration::from_millis((60_000 - into + secs * 1000) as u64));
}

/// The container `name` as Docker has it: id, status, and the unit it was
/// made ready for (its `mesh-host.ready-for` label).
/// Empty when there is none (it may be between its removal and its
/// creation again).
fn container(w: &World, name: &str) -> (String, String, String) {
    let out = w.node.docker(&[
        "inspect",
        "-f",
        "{{.Id}} {{.State.Status}} {{index .Config.Labels \"mesh-host.ready-for\"}}",
        name,
    ]);
    let out = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let mut parts = out.splitn(3, ' ');
    let mut next = || parts.next().unwrap_or_default().to_string();
    (next(), next(), next())
}

/// Waits until `name` is a created container other than `not` and returns it.
fn ready_container(w: &World, name: &str, not: &str) -> (String, String, String) {
    // The lead is 10 s: up to a minute away for a step due every minute.
    wait_for("the next fire's container", Duration::from_secs(75), || {
        let c = container(w, name);
        (c.1 == "created" && c.0 != not).then_some(c)
    })
}

/// The transient unit a fire due at `due` places its container in.
fn unit_of(driver: CgroupDriver, id: &str, due: DateTime<Utc>) -> String {
    match driver {
        CgroupDriver::Cgroupfs => {
            format!("mesh-host-step-{id}-{}.scope", due.format("%Y%m%dT%H%M%SZ"))
        }
        CgroupDriver::Systemd => format!("mesh-host-step\\x2d{id}.slice"),
    }
}

fn next_fire(d: &DaemonUnit) -> DateTime<Utc> {
    let status = json_of(&d.cli(&["status", "--json"]));
    let text = status["steps"][0]["next-fire"].as_str().unwrap_or_default();
    DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("next-fire {text:?}: {e}: {status}"))
        .to_utc()
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_step_is_ready_before_it_is_due_and_its_due_second_costs_only_a_start() {
    let mut w = World::new("ready");
    let driver = w.node.cgroup_driver();
    // An id without dashes: the unit names below are written out here.
    let id = w.prefix.replace('-', "_") + "_gc";
    let (run, img, svc) = (w.name("run"), w.pulled_busybox(), w.name("svc"));
    let slice = format!("mesh-host-step\\x2d{id}.slice");
    let _slice = w.node.on_drop(format!(
        "systemctl stop {} 2>/dev/null || true",
        quote(&slice)
    ));
    let mut step = declare::step(&id, &run, &img, "sleep 30", &["svc"], 120);
    step["schedule"] = json!("* * * * *");
    let service = declare::service("svc", &svc, &img);
    w.write_declaration(json!([service, step]));
    // Five seconds into a minute: the next due time is 55 s away.
    until_next_minute_plus(5);
    let d = DaemonUnit::install_with_args(&w, "", "--metrics-file=");
    d.start();
    assert!(w.running(&svc), "the daemon's apply started the service");

    // Armed, it waits: made ready 10 s before its fire, not before.
    let due = next_fire(&d);
    let status = json_of(&d.cli(&["status", "--json"]));
    let waiting = &status["steps"][0]["ready"];
    assert_eq!(waiting["state"], "waiting", "{status}");
    let lead = due - chrono::TimeDelta::seconds(10);
    let at = waiting["at"].as_str().unwrap_or_default();
    assert_eq!(
        DateTime::parse_from_rfc3339(at).map(|t| t.to_utc()),
        Ok(lead),
        "{status}"
    );
    assert!(!w.exists(&run), "made before its lead");

    // Made ready then, for the unit of its next fire; never started.
    let (ready_id, _, ready_for) = ready_container(&w, &run, "");
    assert!(Utc::now() >= lead, "made ready before its lead");
    let log = EventLog::start(&w, &[&run, &svc]);
    let unit = unit_of(driver, &id, due);
    assert!(ready_for.ends_with(&unit), "{ready_for} is not for {unit}");
    let status = json_of(&d.cli(&["status", "--json"]));
    assert_eq!(status["steps"][0]["ready"]["state"], "ready", "{status}");
    let plan = text(&d.cli(&["plan", &id]));
    assert!(plan.contains("its container: ready"), "{plan}");

    // An apply leaves it as it is; so does a restart of the daemon, which
    // finds it still matching. (The due second may come meanwhile: the
    // same container, by its ID, is what must run.)
    let out = d.cli(&["apply", &w.path("declaration.json")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(container(&w, &run).0, ready_id, "the apply replaced it");
    d.restart();
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(container(&w, &run).0, ready_id, "the restart replaced it");

    // The due second: Docker starts the ready container and creates nothing.
    wait_for(
        "the step to run at its due time",
        Duration::from_secs(90),
        || w.running(&run).then_some(()),
    );
    assert_eq!(
        w.inspect(&run, "{{.Id}}"),
        ready_id,
        "the ready container ran"
    );
    // It runs in its fire's unit: systemd lists its process there.
    let pid = w.inspect(&run, "{{.State.Pid}}");
    let status = w.unit_status(&unit);
    assert!(
        lists_pid(&status, &pid),
        "pid {pid} not in {unit}:\n{status}"
    );
    // And stopping that unit still ends the run; the service runs again.
    w.node.sh_ok(&format!("systemctl stop {}", quote(&unit)));
    wait_for(
        "the held service to run again",
        Duration::from_secs(30),
        || w.running(&svc).then_some(()),
    );
    // The run's container stays, for `docker logs`, until the next lead.
    assert_eq!(
        container(&w, &run).0,
        ready_id,
        "the last run's container went before the next fire's lead"
    );
    let events = log.finish();
    // (The next fire's container may be made already, after the run.)
    let started = first(&events, &run, "start");
    assert!(
        !events[..started]
            .iter()
            .any(|(n, a)| n == &run && is_made(a)),
        "{events:?}"
    );
    assert_eq!(count(&events, &run, "start"), 1, "{events:?}");
    assert!(!w.running(&run), "the run ended with its unit");

    // The run over, the last run's container stays until the lead of the
    // next fire, which its container is then made for.
    let (next_id, _, next_for) = ready_container(&w, &run, &ready_id);
    let next_due = due + chrono::TimeDelta::minutes(1);
    assert!(
        next_for.ends_with(&unit_of(driver, &id, next_due)),
        "{next_for}"
    );

    // A changed step replaces it; a removed one removes it.
    let service = declare::service("svc", &svc, &img);
    let mut changed = declare::step(&id, &run, &img, "sleep 31", &["svc"], 120);
    changed["schedule"] = json!("* * * * *");
    w.write_declaration(json!([service, changed]));
    d.reload_and_wait();
    let (changed_id, _, _) = ready_container(&w, &run, &next_id);
    assert!(
        w.inspect(&run, "{{json .Config.Cmd}}").contains("sleep 31"),
        "made from the changed declaration"
    );
    w.write_declaration(json!([declare::service("svc", &svc, &img)]));
    d.reload_and_wait();
    wait_for(
        "the removed step's container to go",
        Duration::from_secs(30),
        || (!w.exists(&run)).then_some(()),
    );
    assert_ne!(changed_id, next_id);
    assert!(w.running(&svc));
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_ready_container_removed_by_hand_after_it_was_looked_at_is_made_again_and_runs_in_its_unit() {
    let mut w = World::new("readyrm");
    if w.node.cgroup_driver() != CgroupDriver::Cgroupfs {
        eprintln!("the systemd driver's unit is the step's slice, made with no due time: nothing to wait for");
        return;
    }
    let id = w.prefix.replace('-', "_") + "_gc";
    let (run, img) = (w.name("run"), w.pulled_busybox());
    let mut step = declare::step(&id, &run, &img, "sleep 20", &[], 120);
    step["schedule"] = json!("* * * * *");
    w.write_declaration(json!([step]));
    // Thirty seconds into a minute: the next due time is 30 s away.
    until_next_minute_plus(30);
    let d = DaemonUnit::install_with_args(&w, "", "--metrics-file=");
    d.start();
    let due = next_fire(&d);
    let unit = unit_of(CgroupDriver::Cgroupfs, &id, due);
    let (ready_id, _, _) = ready_container(&w, &run, "");
    // The event stream is up before the unit is made: starting it takes a
    // few of the lead's 2 s on a loaded machine.
    let log = EventLog::start(&w, &[&run]);
    // Its unit made, 2 s ahead, the container is looked at right after;
    // then, before its due second, it is removed by hand.
    wait_for(
        "the fire's unit, made ahead",
        Duration::from_secs(30),
        || {
            let out = w.node.sh(&format!("systemctl is-active {}", quote(&unit)));
            (String::from_utf8_lossy(&out.stdout).trim() == "active").then_some(())
        },
    );
    std::thread::sleep(Duration::from_millis(500));
    w.node.sh_ok(&format!("docker rm {}", quote(&run)));
    assert!(Utc::now() < due, "the test ran late: the fire came first");

    // The fire makes it again, starts it, and it runs in the fire's unit.
    wait_for(
        "the step to run at its due time",
        Duration::from_secs(30),
        || w.running(&run).then_some(()),
    );
    assert_ne!(w.inspect(&run, "{{.Id}}"), ready_id, "made again");
    let pid = w.inspect(&run, "{{.State.Pid}}");
    let status = w.unit_status(&unit);
    assert!(
        lists_pid(&status, &pid),
        "pid {pid} not in {unit}:\n{status}"
    );
    let events = log.finish();
    let created = first_made(&events, &run);
    assert!(created > first(&events, &run, "destroy"), "{events:?}");
    assert_eq!(count(&events, &run, "start"), 1, "{events:?}");
    assert!(created < first(&events, &run, "start"), "{events:?}");
    w.node.sh_ok(&format!("systemctl stop {}", quote(&unit)));
}
