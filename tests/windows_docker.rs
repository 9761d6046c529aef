//! Maintenance windows on the sandbox node's real Docker: every behaviour of
//! CONTRACT "Scheduled steps and windows" that `mesh-host run --local`
//! drives, checked through Docker itself (its event stream and inspect)
//! and the node's journal, never through mesh-host's own output alone.

mod support;

use std::process::Output;
use std::time::Duration;

use serde_json::{json, Value};
use support::declare::{self, count, first, free_port, last};
use support::world::{lists_pid, stamp, World, SERVICE_CMD};
use support::{quote, stdout, unique_name, wait_for, CgroupDriver};

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn registry_is_held_still_while_garbage_collect_runs_against_its_storage() {
    let mut w = World::new("gcwin");
    let reg = w.name("registry");
    let gc = w.name("gc");
    let registry_image = w.node.image("registry");
    let port = free_port();
    let storage = w.path("storage");
    let config = w.path("config.yml");
    std::fs::create_dir_all(&storage).expect("storage");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: /var/lib/registry\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n"
        ),
    )
    .expect("config");
    let mounts = json!([
        {"source": storage, "target": "/var/lib/registry", "read-only": false},
        {"source": config, "target": "/etc/docker/registry/config.yml", "read-only": true}
    ]);
    w.node.docker_ok(&["pull", &registry_image]);
    w.node.docker_ok(&[
        "run",
        "-d",
        "--name",
        &reg,
        "--network",
        "host",
        "--restart",
        "unless-stopped",
        "-v",
        &format!("{storage}:/var/lib/registry"),
        "-v",
        &format!("{config}:/etc/docker/registry/config.yml:ro"),
        &registry_image,
        "serve",
        "/etc/docker/registry/config.yml",
    ]);
    // Give the held registry something to collect: one pushed image.
    let pushed = format!("127.0.0.1:{port}/{}/busybox:1", w.prefix);
    w.pulled_busybox();
    w.node.docker_ok(&["tag", &w.busybox(), &pushed]);
    wait_for(
        "the held registry to accept a push",
        Duration::from_secs(20),
        || {
            w.node
                .docker(&["push", &pushed])
                .status
                .success()
                .then_some(())
        },
    );
    w.write_declaration(json!([
        {"id": "registry", "type": "container", "module": "registry", "name": reg,
         "image": registry_image, "command": ["serve", "/etc/docker/registry/config.yml"],
         "network": "host", "mounts": mounts},
        {"id": "garbage-collect", "type": "container", "module": "registry", "name": gc,
         "image": registry_image, "command": ["garbage-collect", "/etc/docker/registry/config.yml"],
         "network": "none", "mounts": mounts, "schedule": "0 3 * * *",
         "while-stopped": ["registry"], "timeout": 300}
    ]));
    let since = stamp();
    let out = w.mesh(&["run", "garbage-collect", "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let events = w.events(&since, &[&reg, &gc]);
    // Docker's order: the registry stopped, then the step ran and ended,
    // then the registry started again.
    let reg_down = first(&events, &reg, "die");
    let gc_start = first(&events, &gc, "start");
    let gc_end = first(&events, &gc, "die");
    let reg_up = last(&events, &reg, "start");
    assert!(
        reg_down < gc_start && gc_start < gc_end && gc_end < reg_up,
        "{events:?}"
    );
    assert_eq!(count(&events, &gc, "start"), 1);
    assert_eq!(w.inspect(&gc, "{{.State.ExitCode}}"), "0");
    assert!(w.running(&reg));
    let logs = w.node.sh_ok(&format!("docker logs {} 2>&1", quote(&gc)));
    assert!(
        logs.contains("blobs marked"),
        "garbage-collect did its work: {logs}"
    );
    // The registry serves what it held after the window, storage intact.
    w.node.docker_ok(&["rmi", &pushed]);
    wait_for(
        "the registry to serve again",
        Duration::from_secs(20),
        || {
            w.node
                .docker(&["pull", &pushed])
                .status
                .success()
                .then_some(())
        },
    );
    assert!(std::fs::read_dir(&w.dir).is_ok());
    let records = std::fs::read_dir(w.dir.join("state/windows"))
        .expect("windows dir")
        .count();
    assert_eq!(records, 0, "the window record is erased");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_step_that_exits_1_fails_and_the_service_runs_again() {
    let mut w = World::new("exit1");
    let img = w.pulled_busybox();
    let svc = w.started_service("svc");
    let step = w.name("step");
    w.write_declaration(json!([
        declare::service("svc", &svc, &img),
        declare::step("fails", &step, &img, "echo failing; exit 1", &["svc"], 60),
    ]));
    let since = stamp();
    let out = w.run_local("fails");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("exited with status 1"),
        "{}",
        stdout(&out)
    );
    assert_eq!(w.inspect(&step, "{{.State.ExitCode}}"), "1");
    let events = w.events(&since, &[&svc, &step]);
    assert!(
        first(&events, &svc, "die") < first(&events, &step, "start"),
        "{events:?}"
    );
    assert!(
        first(&events, &step, "die") < last(&events, &svc, "start"),
        "{events:?}"
    );
    assert!(w.running(&svc));
    let failed = w.journal(&["MESH_EVENT=step-failed", "MESH_STEP=fails"]);
    assert!(failed.contains("exited with status 1"), "{failed}");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_step_over_its_timeout_is_stopped_and_the_service_runs_again() {
    let mut w = World::new("timeout");
    let img = w.pulled_busybox();
    let svc = w.started_service("svc");
    let step = w.name("step");
    w.write_declaration(json!([
        declare::service("svc", &svc, &img),
        declare::step("slow", &step, &img, SERVICE_CMD, &["svc"], 3),
    ]));
    // The step never ends by itself: the run returns only because it was
    // cut at its timeout.
    let out = w.run_local("slow");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("exceeded its timeout"),
        "{}",
        stdout(&out)
    );
    assert_eq!(w.inspect(&step, "{{.State.Running}}"), "false");
    assert!(w.running(&svc));
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_held_container_that_will_not_start_is_an_alert_and_the_others_start() {
    let hold_id = support::unique_step_id("hold");
    let mut w = World::new("nostart");
    let img = w.pulled_busybox();
    let a = w.started_service("a");
    let b = w.name("b");
    let step = w.name("step");
    let net = format!("{}-net", w.prefix);
    w.node.docker_ok(&["network", "create", &net]);
    let _net_gone = w.node.on_drop(format!(
        "docker network rm {} >/dev/null 2>&1 || true",
        quote(&net)
    ));
    // b lives on a network the test removes while b is held: its start fails.
    let image = w.busybox();
    w.node.docker_ok(&[
        "run",
        "-d",
        "--name",
        &b,
        "--network",
        &net,
        &image,
        "sh",
        "-c",
        SERVICE_CMD,
    ]);
    w.write_declaration(json!([
        declare::service("a", &a, &img),
        declare::service("b", &b, &img),
        declare::step(&hold_id, &step, &img, "sleep 4", &["a", "b"], 60),
    ]));
    let child = w.spawn_local(&hold_id);
    w.wait_stopped("b to be held", &b);
    w.node.docker_ok(&["network", "rm", &net]);
    let out = child.wait_with_output().expect("mesh-host run");
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(&format!("{b}: WILL NOT START AGAIN")),
        "{}",
        stdout(&out)
    );
    assert!(w.running(&a), "the other held container was still started");
    assert!(!w.running(&b));
    let alert = w.node.journal(&[
        "-t",
        "mesh-host",
        "MESH_EVENT=will-not-start-again",
        &format!("MESH_CONTAINER={b}"),
        "-o",
        "json",
    ]);
    let entry: Value =
        serde_json::from_str(alert.lines().last().unwrap_or("{}")).expect("journal json");
    assert_eq!(entry["PRIORITY"], "1", "{entry}");
    assert!(
        entry["MESSAGE"]
            .as_str()
            .unwrap_or("")
            .contains("WILL NOT START AGAIN"),
        "{entry}"
    );
    assert_eq!(entry["MESSAGE_ID"], "ab50638306cd43f4884b6fefbd280992");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_container_already_stopped_before_the_window_stays_stopped() {
    let mut w = World::new("stopped");
    let img = w.pulled_busybox();
    let up = w.started_service("up");
    let down = w.started_service("down");
    let step = w.name("step");
    w.node.docker_ok(&["stop", &down]);
    let down_finished = w.inspect(&down, "{{.State.FinishedAt}}");
    w.write_declaration(json!([
        declare::service("up", &up, &img),
        declare::service("down", &down, &img),
        declare::step("stopped", &step, &img, "true", &["down", "up"], 60),
    ]));
    let since = stamp();
    let out = w.run_local("stopped");
    assert_eq!(out.status.code(), Some(0));
    assert!(w.running(&up));
    assert!(!w.running(&down));
    assert_eq!(
        w.inspect(&down, "{{.State.FinishedAt}}"),
        down_finished,
        "never started"
    );
    let events = w.events(&since, &[&down]);
    assert!(
        events.is_empty(),
        "Docker saw nothing happen to it: {events:?}"
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_held_container_started_by_someone_else_is_stopped_again() {
    let mut w = World::new("violate");
    let img = w.pulled_busybox();
    let svc = w.started_service("svc");
    let step = w.name("step");
    // The step runs until the test has seen the stop: the window stays
    // open however long the node takes (a step of `sleep 8` closed it
    // before a loaded node's watcher had stopped svc, and the test waited
    // for a stop that could no longer come).
    let marks = w.path("marks");
    std::fs::create_dir_all(&marks).expect("marks");
    let mut s = declare::step("violated", &step, &img, UNTIL_TOLD, &["svc"], 120);
    s["mounts"] = json!([{"source": marks, "target": "/marks"}]);
    w.write_declaration(json!([declare::service("svc", &svc, &img), s]));
    let child = w.spawn_local("violated");
    w.wait_stopped("svc to be held", &svc);
    w.wait_running("the step to run", &step);
    w.node.docker_ok(&["start", &svc]);
    wait_for(
        "the window to stop svc again",
        Duration::from_secs(60),
        || (!w.running(&svc)).then_some(()),
    );
    std::fs::write(format!("{marks}/go"), "").expect("go");
    let out = child.wait_with_output().expect("mesh-host run");
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(w.running(&svc));
    let violated = w.node.journal(&[
        "-t",
        "mesh-host",
        "MESH_EVENT=hold-violated",
        &format!("MESH_CONTAINER={svc}"),
        "-o",
        "cat",
    ]);
    assert!(violated.contains("stopping it again"), "{violated}");
}

/// A held container that takes 4 s to end on SIGTERM (a stop of it is in
/// flight for that long), counting the SIGTERMs it got in /marks/terms.
const SLOW_TO_STOP: &str =
    "trap 'echo >> /marks/terms; sleep 4; exit 0' TERM; while :; do sleep 3600 & wait $!; done";

/// A step that ends once /marks/go exists: the test says when.
const UNTIL_TOLD: &str = "until [ -e /marks/go ]; do sleep 0.1; done";

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_stop_of_a_held_container_in_flight_when_the_window_closes_does_not_leave_it_stopped() {
    let mut w = World::new("inflight");
    let img = w.pulled_busybox();
    let svc = w.name("svc");
    let step = w.name("step");
    // Where the test and both containers meet: read and written from
    // outside, as Podman runs no exec in a container being stopped.
    let marks = w.path("marks");
    std::fs::create_dir_all(&marks).expect("marks");
    let mount = json!([{"source": marks, "target": "/marks"}]);
    let mut held = declare::service("svc", &svc, &img);
    held["command"] = json!(["sh", "-c", SLOW_TO_STOP]);
    held["mounts"] = mount.clone();
    let mut s = declare::step("inflight", &step, &img, UNTIL_TOLD, &["svc"], 60);
    s["mounts"] = mount;
    // Made by mesh-host, with no declared stop grace: the runtime's
    // default (10 s) holds on Podman too, whose API would record none as
    // 0 and make each stop an immediate SIGKILL.
    let out = w.apply_local(json!([held, s]));
    assert_eq!(out.status.code(), Some(0), "{}", declare::text(&out));
    w.wait_running("the service to run", &svc);
    let terms = || {
        std::fs::read_to_string(format!("{marks}/terms"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let child = w.spawn_local("inflight");
    w.wait_running("the step to run", &step);
    assert_eq!(
        terms(),
        1,
        "the window's stop was a SIGTERM, given its grace"
    );
    // Started by someone else: the window's watcher stops it again, a
    // stop that lasts 4 s. Once it has begun, the step is told to end, so
    // that the close comes while that stop is in flight whatever the
    // node's load. Begun is the second SIGTERM, or the watcher's
    // `hold-violated`, said just before it stops: on a loaded node its
    // SIGTERM can come before the restarted shell has set its trap, and
    // PID 1 ignores a signal it has no handler for (the stop then lasts
    // the 10 s grace and ends in SIGKILL, in flight all the same).
    w.node.docker_ok(&["start", &svc]);
    let violated = format!("MESH_CONTAINER={svc}");
    wait_for(
        "the watcher's stop to begin",
        Duration::from_secs(60),
        || {
            (terms() >= 2
                || !w
                    .journal(&["MESH_EVENT=hold-violated", &violated])
                    .trim()
                    .is_empty())
            .then_some(())
        },
    );
    std::fs::write(format!("{marks}/go"), "").expect("go");
    let out = child.wait_with_output().expect("mesh-host run");
    assert_eq!(out.status.code(), Some(0), "{}", declare::text(&out));
    // Whatever was in flight has landed by now: the service runs. (Cut
    // off, the watcher's stop landed after the close's start.)
    std::thread::sleep(Duration::from_secs(6));
    assert!(
        w.running(&svc),
        "the window closed but {svc} is stopped: {}",
        declare::text(&out)
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_window_owner_killed_mid_step_is_resumed_and_nothing_runs_twice() {
    let gc_id = support::unique_step_id("gc");
    let other1_id = support::unique_step_id("other1");
    let mut w = World::new("killed");
    let img = w.pulled_busybox();
    let svc = w.started_service("svc");
    let step = w.name("step");
    let other = w.name("other");
    w.write_declaration(json!([
        declare::service("svc", &svc, &img),
        declare::step(&gc_id, &step, &img, "sleep 6; echo done", &["svc"], 120),
        declare::step(&other1_id, &other, &img, "true", &[], 60),
    ]));
    let since = stamp();
    let mut child = w.spawn_local(&gc_id);
    w.wait_running("the step to run", &step);
    // SIGKILL the window's owner: nothing of it gets to close the window.
    assert!(w.kill_local_run(&gc_id), "the run was there to kill");
    let _ = child.wait();
    assert!(
        !w.running(&svc),
        "the window stays shut while its owner is dead"
    );
    // The next mesh-host on this state directory resumes the window first.
    let out = w.run_local(&other1_id);
    assert_eq!(out.status.code(), Some(0));
    assert!(w.running(&svc));
    assert_eq!(
        w.inspect(&step, "{{.State.ExitCode}}"),
        "0",
        "the step finished"
    );
    let events = w.events(&since, &[&svc, &step]);
    assert_eq!(count(&events, &step, "start"), 1, "{events:?}");
    assert!(
        first(&events, &step, "die") < last(&events, &svc, "start"),
        "{events:?}"
    );
    let resumed = w.journal(&["MESH_EVENT=window-resumed", &format!("MESH_STEP={gc_id}")]);
    assert!(
        resumed.contains(&format!("resuming the window of {gc_id}")),
        "{resumed}"
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn each_fire_runs_in_a_unit_of_the_step_that_holds_it_and_stopping_it_ends_the_run() {
    let mut w = World::new("scope");
    let step = w.name("step");
    let driver = w.node.cgroup_driver();
    // A step id of this test alone, without dashes, so that the unit names
    // below are written out here rather than computed by mesh-host's code.
    let id = unique_name("scoped").replace('-', "_");
    // With the systemd driver the step's slice outlives a fire; with
    // cgroupfs the scope is gone with its run and the guard finds nothing.
    let slice = format!("mesh-host-step\\x2d{id}.slice");
    let _slice = w.node.on_drop(format!(
        "systemctl stop {} 2>/dev/null || true",
        quote(&slice)
    ));
    let img = w.pulled_busybox();
    let svc = w.started_service("svc");
    let declare_in = |module: &str, script: &str| {
        let mut s = declare::service("svc", &svc, &img);
        let mut t = declare::step(&id, &step, &img, script, &["svc"], 300);
        s["module"] = json!(module);
        t["module"] = json!(module);
        w.write_declaration(json!([s, t]));
    };
    let unit_line = |out: &Output| {
        stdout(out)
            .lines()
            .find_map(|l| l.trim().strip_prefix("unit: ").map(str::to_string))
            .unwrap_or_else(|| panic!("no unit in the report:\n{}", stdout(out)))
    };

    // A first, quick fire.
    declare_in("m", "true");
    let out = w.run_local(&id);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let first_unit = unit_line(&out);
    match driver {
        CgroupDriver::Cgroupfs => {
            assert!(
                first_unit.starts_with(&format!("mesh-host-step-{id}-"))
                    && first_unit.ends_with(".scope"),
                "{first_unit}"
            );
            wait_for(
                "the scope to end with its run",
                Duration::from_secs(60),
                || (w.node.unit_property(&first_unit, "LoadState") == "not-found").then_some(()),
            );
        }
        CgroupDriver::Systemd => {
            assert_eq!(first_unit, slice);
            assert_eq!(w.node.unit_property(&slice, "ActiveState"), "active");
        }
    }

    // The next fire, of a step now in another module, is watched running.
    declare_in("n", "sleep 60");
    let child = w.spawn_local(&id);
    w.wait_running("the step to run", &step);
    let pid = w.inspect(&step, "{{.State.Pid}}");
    let unit = match driver {
        CgroupDriver::Cgroupfs => {
            let unit = w
                .node
                .sh_ok(&format!(
                    "systemctl list-units --no-legend --plain {} | awk '{{print $1}}'",
                    quote(&format!("mesh-host-step-{id}-*"))
                ))
                .trim()
                .to_string();
            assert!(
                unit.starts_with(&format!("mesh-host-step-{id}-")) && unit.ends_with(".scope"),
                "unit {unit:?}"
            );
            unit
        }
        // The earlier fire's slice, reused; Docker's own scope inside.
        CgroupDriver::Systemd => slice.clone(),
    };
    assert_eq!(w.node.unit_property(&unit, "Slice"), "mesh-host.slice");
    let description = w.node.unit_property(&unit, "Description");
    assert!(
        description.contains(&id) && description.contains("module n"),
        "{description}"
    );
    // systemd itself shows the step container's process in the unit, and
    // the kernel has it in the unit's cgroup.
    let status = w.unit_status(&unit);
    assert!(
        lists_pid(&status, &pid) && status.contains("sleep 60"),
        "pid {pid} not in:\n{status}"
    );
    if driver == CgroupDriver::Systemd {
        // The runtime's own scope per container: Podman names it libpod-.
        let container_id = w.inspect(&step, "{{.Id}}");
        let prefix = if w.node.runtime() == "podman" {
            "libpod"
        } else {
            "docker"
        };
        assert!(
            status.contains(&format!("{prefix}-{container_id}.scope")),
            "the runtime's scope of {container_id} not in:\n{status}"
        );
    }
    let cgroups = w.node.sh_ok(&format!("cat /proc/{pid}/cgroup"));
    let cgroup = cgroups
        .lines()
        .find_map(|l| l.split_once(":name=systemd:").map(|(_, p)| p.to_string()))
        .unwrap_or_else(|| panic!("no name=systemd cgroup for {pid}: {cgroups}"));
    let unit_cgroup = w.node.unit_property(&unit, "ControlGroup");
    assert!(
        cgroup.starts_with(&format!("{unit_cgroup}/")),
        "container cgroup {cgroup} is not under {unit_cgroup}"
    );

    // Stopping the unit ends the run: the step's PID 1 ignores SIGTERM, so
    // it is killed (137, not the 0 of its 60 s run to the end) once the
    // stop grace (10 s) has passed. The run is reported stopped, and the
    // window closes.
    w.node.sh_ok(&format!("systemctl stop {}", quote(&unit)));
    let out = child.wait_with_output().expect("mesh-host run");
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("stopped: its unit was stopped (systemctl stop), status 137"),
        "{}",
        stdout(&out)
    );
    assert_eq!(w.inspect(&step, "{{.State.ExitCode}}"), "137", "killed");
    let failed = w.journal(&["MESH_EVENT=step-failed", &format!("MESH_STEP={id}")]);
    assert!(failed.contains("stopped"), "{failed}");
    assert_eq!(unit_line(&out), unit);
    assert!(w.running(&svc), "the held container runs again");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_resumed_window_ends_a_step_that_outlives_its_timeout() {
    let mut w = World::new("hung");
    let img = w.pulled_busybox();
    let svc = w.started_service("svc");
    let step = w.name("step");
    let other = w.name("other");
    // The step hangs (ignores SIGTERM as PID 1) far past its 6 s timeout.
    w.write_declaration(json!([
        declare::service("svc", &svc, &img),
        declare::step("hung", &step, &img, "sleep 600", &["svc"], 6),
        declare::step("other2", &other, &img, "true", &[], 60),
    ]));
    let mut child = w.spawn_local("hung");
    w.wait_running("the step to run", &step);
    assert!(w.kill_local_run("hung"), "the run was there to kill");
    let _ = child.wait();
    assert!(
        w.running(&step) && !w.running(&svc),
        "owner dead, window shut"
    );
    // The next local command resumes the window, ends the step at its
    // timeout (counted from when the window opened) and starts svc: the
    // step killed (137), not waited for to its end (0, ten minutes on).
    let out = w.run_local("other2");
    assert_eq!(out.status.code(), Some(0));
    assert!(!w.running(&step), "the hung step was stopped");
    assert_eq!(w.inspect(&step, "{{.State.ExitCode}}"), "137");
    assert!(w.running(&svc));
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_window_record_from_another_boot_holds_nothing_and_its_container_starts() {
    let mut w = World::new("oldboot");
    let img = w.pulled_busybox();
    let svc = w.started_service("svc");
    let other = w.name("other");
    w.node.docker_ok(&["stop", &svc]);
    w.write_declaration(json!([
        declare::service("svc", &svc, &img),
        declare::step("other3", &other, &img, "true", &[], 60),
    ]));
    // A window a daemon opened before the last reboot: svc was running then.
    let opened = chrono::Utc::now().to_rfc3339();
    let record = json!({
        "record": 1, "step": "oldgc", "module": "m", "fire-time": opened, "opened-at": opened,
        "boot-id": "00000000-0000-4000-8000-000000000000", "pid": 1, "pid-start-time": 1,
        "step-container": format!("{}-gone", w.prefix),
        "held": [{"id": "svc", "name": svc, "was-running": true}],
    });
    let record_path = w.plant_window_record("oldgc", &record);
    let out = w.run_local("other3");
    assert_eq!(out.status.code(), Some(0));
    assert!(w.running(&svc), "the stale window's container runs again");
    assert!(!record_path.exists(), "the record is erased");
    let resumed = w.journal(&["MESH_EVENT=window-resumed", "MESH_STEP=oldgc"]);
    assert!(resumed.contains("another boot"), "{resumed}");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_held_container_removed_during_the_window_is_created_again_from_its_declaration() {
    let mut w = World::new("removed");
    let svc = w.name("svc");
    let step = w.name("step");
    let img = w.busybox();
    let decl = w.write_declaration(json!([
        declare::service("svc", &svc, &img),
        declare::step("gcrm", &step, &img, "sleep 4", &["svc"], 60),
    ]));
    let out = w.mesh(&["apply", &decl, "--local"]);
    assert_eq!(out.status.code(), Some(0));
    let before = w.inspect(&svc, "{{.Id}}");
    let child = w.spawn_local("gcrm");
    wait_for("the step to run", Duration::from_secs(30), || {
        (w.running(&step) && !w.running(&svc)).then_some(())
    });
    w.node.docker_ok(&["rm", "-f", &svc]);
    let out = child.wait_with_output().expect("run");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains(&format!(
            "removed during the window, created again from the declaration: {svc}"
        )),
        "{text}"
    );
    assert!(w.running(&svc), "created again and started");
    assert_ne!(w.inspect(&svc, "{{.Id}}"), before, "a new container");
    assert_eq!(w.inspect(&svc, "{{.Config.Image}}"), img);
    assert_eq!(
        w.inspect(&svc, "{{.HostConfig.RestartPolicy.Name}}"),
        "unless-stopped"
    );
    // Created as the declaration says: the next apply finds nothing to do.
    let out = w.mesh(&["apply", &decl, "--local"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("svc unchanged"), "{}", stdout(&out));
    let container = format!("MESH_CONTAINER={svc}");
    wait_for("the journal to say it", Duration::from_secs(60), || {
        w.journal(&["MESH_STEP=gcrm", &container])
            .contains("created again from its declaration")
            .then_some(())
    });
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_held_container_counts_as_started_again_when_healthy_and_an_unhealthy_one_is_logged() {
    let mut w = World::new("health");
    let img = w.pulled_busybox();
    let ok = w.name("ok");
    let bad = w.name("bad");
    let step = w.name("step");
    // Turns healthy 3 s after each start.
    w.node.docker_ok(&[
        "run", "-d", "--name", &ok, "--network", "none",
        "--health-cmd", "test -e /tmp/ready", "--health-interval", "1s",
        "--health-retries", "60", &img, "sh", "-c",
        "rm -f /tmp/ready; trap 'exit 0' TERM; sleep 3; touch /tmp/ready; while :; do sleep 1; done",
    ]);
    // Never healthy.
    w.run_service(
        &bad,
        &[
            "--health-cmd",
            "echo backend not ready; exit 1",
            "--health-interval",
            "1s",
            "--health-retries",
            "2",
        ],
    );
    w.write_declaration(json!([
        declare::service("ok", &ok, &img),
        declare::service("bad", &bad, &img),
        declare::step("hc", &step, &img, "true", &["ok", "bad"], 60),
    ]));
    let out = w.run_local("hc");
    let text = stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "an unhealthy one fails the run: {text}"
    );
    assert!(text.contains(&format!("healthy again: {ok}")), "{text}");
    assert!(
        text.contains(&format!("{bad}: started again but NOT HEALTHY")),
        "{text}"
    );
    // The close waited for ok's health check: it is healthy now, not starting.
    assert_eq!(w.inspect(&ok, "{{.State.Health.Status}}"), "healthy");
    assert!(w.running(&bad), "its neighbour still started, and it runs");
    let container = format!("MESH_CONTAINER={bad}");
    wait_for(
        "held-unhealthy at priority err",
        Duration::from_secs(10),
        || {
            let found = w.journal(&["MESH_EVENT=held-unhealthy", "-p", "err", &container]);
            found.contains("backend not ready").then_some(found)
        },
    );
    let ok_field = format!("MESH_CONTAINER={ok}");
    assert!(w
        .journal(&["MESH_EVENT=held-unhealthy", &ok_field])
        .trim()
        .is_empty());
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn the_close_waits_for_a_declared_health_check() {
    let mut w = World::new("dhealth");
    let svc = w.name("svc");
    let step = w.name("step");
    let img = w.busybox();
    // Turns healthy 3 s after each start, by the check its declaration gives
    // it (the image has none).
    let mut held = json!({"id": "svc", "type": "container", "module": "m", "name": svc,
        "image": img, "network": "none",
        "command": ["sh", "-c",
            "rm -f /tmp/ready; trap 'exit 0' TERM; sleep 3; touch /tmp/ready; while :; do sleep 1; done"]});
    held["health"] = json!({"command": ["test", "-e", "/tmp/ready"], "interval": 1, "retries": 60});
    let decl = w.write_declaration(json!([
        held,
        declare::step("dhc", &step, &img, "true", &["svc"], 60),
    ]));
    let out = w.mesh(&["apply", &decl, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(
        w.inspect(&svc, "{{json .Config.Healthcheck.Test}}"),
        r#"["CMD","test","-e","/tmp/ready"]"#
    );
    let out = w.run_local("dhc");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains(&format!("healthy again: {svc}")), "{text}");
    // The close waited for the check: healthy now, not starting.
    assert_eq!(w.inspect(&svc, "{{.State.Health.Status}}"), "healthy");
    let closed = w.journal(&["MESH_EVENT=window-closed", "MESH_STEP=dhc"]);
    assert!(!closed.trim().is_empty(), "no window-closed entry");
    assert!(w
        .journal(&[
            "MESH_EVENT=held-unhealthy",
            &format!("MESH_CONTAINER={svc}")
        ])
        .trim()
        .is_empty());
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn the_registry_example_s_health_check_holds_and_releases_a_healthy_registry() {
    let mut w = World::new("exhealth");
    let reg = w.name("registry");
    let gc = w.name("gc");
    let port = free_port();
    // examples/registry.json as the demo runs it: the node's registry
    // image (BusyBox's wget in it, as in the real one), its port, paths
    // and names of this test.
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/registry.json"
    ))
    .expect("the example");
    let hub_image = example
        .split('"')
        .find(|s| s.starts_with("docker.io/library/registry:"))
        .expect("the example's image")
        .to_string();
    // The port first: the node's own image may live at 127.0.0.1:5000.
    let text = example
        .replace("127.0.0.1:5000", &format!("127.0.0.1:{port}"))
        .replace(&hub_image, &w.node.image("registry"))
        .replace("/srv/registry", &w.path("srv/registry"))
        .replace(
            "/etc/registry/config.yml",
            &w.path("etc/registry/config.yml"),
        )
        .replace(
            r#""name": "registry-garbage-collect""#,
            &format!(r#""name": "{gc}""#),
        )
        .replace(r#""name": "registry""#, &format!(r#""name": "{reg}""#));
    let decl: Value = serde_json::from_str(&text).expect("still JSON");
    assert!(
        text.contains(&format!("http://127.0.0.1:{port}/v2/")),
        "the example's health check asks the registry: {text}"
    );
    let file = w.write_declaration(decl["resources"].clone());
    let out = w.mesh(&["apply", &file, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    wait_for("the registry healthy", Duration::from_secs(60), || {
        (w.inspect(&reg, "{{.State.Health.Status}}") == "healthy").then_some(())
    });
    // Something to collect (an empty registry fails garbage-collect).
    let pushed = format!("127.0.0.1:{port}/{}/busybox:1", w.prefix);
    w.pulled_busybox();
    w.node.docker_ok(&["tag", &w.busybox(), &pushed]);
    w.node.docker_ok(&["push", &pushed]);
    let _untag = w
        .node
        .on_drop(format!("docker rmi {} >/dev/null 2>&1", quote(&pushed)));
    let out = w.mesh(&["run", "garbage-collect", "--local"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains(&format!("healthy again: {reg}")), "{text}");
    assert_eq!(w.inspect(&reg, "{{.State.Health.Status}}"), "healthy");
}
