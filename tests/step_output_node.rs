//! A step's output in the journal (CONTRACT "A step's output is kept in
//! the journal"), on the node's real runtime and journal: every line a
//! fire writes, stdout and stderr, is an entry of that fire with
//! `MESH_STEP` and `MESH_FIRE`, on Docker (its journald driver writes
//! them) as on Podman (mesh-host forwards them), which its `step-*` events
//! name too; lines written after the daemon was SIGKILLed mid-step, across
//! an upgrade's hand-over, and after a `run --local` owner died are there
//! as well, each once; `docker logs` reads the latest fire back; `mesh-host
//! logs` prints the last fire, or the last N.

mod support;

use std::collections::BTreeMap;
use std::process::Child;
use std::time::Duration;

use serde_json::{json, Value};
use support::daemon_unit::DaemonUnit;
use support::world::World;
use support::{quote, stdout, wait_for, Node};

/// A step of `id`, its container `name`, running `script` once a day.
fn step(id: &str, name: &str, image: &str, script: &str) -> Value {
    json!({"id": id, "type": "container", "name": name, "image": image,
           "command": ["sh", "-c", script], "network": "none",
           "schedule": "0 3 * * *", "timeout": 120})
}

/// Every entry `journalctl -o json ARGS` prints, as objects.
fn entries(node: &Node, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["-o", "json"];
    all.extend_from_slice(args);
    node.journal(&all)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn field<'a>(entry: &'a Value, name: &str) -> &'a str {
    entry.get(name).and_then(Value::as_str).unwrap_or("")
}

/// The lines of output of `fire` of `step`, `(PRIORITY, MESSAGE)`
/// (stdout's, then stderr's): what `journalctl MESH_STEP=… MESH_FIRE=…`
/// finds of it, on Docker and on Podman alike.
fn fire_lines(node: &Node, step: &str, fire: &str) -> Vec<(String, String)> {
    let (step, fire) = (format!("MESH_STEP={step}"), format!("MESH_FIRE={fire}"));
    let mut lines: Vec<(String, String)> = entries(node, &[&step, &fire])
        .iter()
        .filter(|e| !field(e, "CONTAINER_ID").is_empty())
        .map(|e| {
            (
                field(e, "PRIORITY").to_string(),
                field(e, "MESSAGE").trim_end().to_string(),
            )
        })
        .collect();
    // stdout's lines, then stderr's, each in its order: the two are
    // separate pipes, with no order between them.
    lines.sort_by(|a, b| b.0.cmp(&a.0));
    lines
}

/// The fires named by the `step-*` events of `step`, by event, in order.
fn fires_by_event(node: &Node, step: &str) -> BTreeMap<String, Vec<String>> {
    let mut by = BTreeMap::<String, Vec<String>>::new();
    for e in entries(node, &["-t", "mesh-host", &format!("MESH_STEP={step}")]) {
        let event = field(&e, "MESH_EVENT");
        if event.starts_with("step-") {
            by.entry(event.to_string())
                .or_default()
                .push(field(&e, "MESH_FIRE").to_string());
        }
    }
    by
}

/// The step container's hostname (its short ID), which its lines print.
fn hostname(w: &World, name: &str) -> String {
    w.inspect(name, "{{.Id}}").chars().take(12).collect()
}

/// `mesh-host run ID --json` through the daemon: the fire's unit.
fn fire_through(d: &DaemonUnit, id: &str) -> String {
    let out = d.cli(&["run", id, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    field(&report, "unit").to_string()
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn step_output_of_two_fires_is_in_the_journal_each_under_its_fire() {
    let mut w = World::new("stepout");
    let name = w.name("out");
    let id = name.clone();
    let script = "echo \"out $(hostname)\"; echo \"err $(hostname)\" >&2";
    let d = DaemonUnit::started(&w, json!([step(&id, &name, &w.pulled_busybox(), script)]));
    let unit1 = fire_through(&d, &id);
    let host1 = hostname(&w, &name);
    // A fire is named to the second: the next one in another second.
    std::thread::sleep(Duration::from_millis(1100));
    let unit2 = fire_through(&d, &id);
    let host2 = hostname(&w, &name);
    assert_ne!(host1, host2, "each fire has a container of its own");

    let events = fires_by_event(&w.node, &id);
    let started = events.get("step-started").cloned().unwrap_or_default();
    assert_eq!(started.len(), 2, "two fires: {events:?}");
    let (fire1, fire2) = (started[0].clone(), started[1].clone());
    assert_ne!(fire1, fire2);
    assert_eq!(
        events.get("step-finished"),
        Some(&vec![fire1.clone(), fire2.clone()]),
        "each fire's events carry its MESH_FIRE: {events:?}"
    );
    // The fire's name is its transient unit's: a scope of its own with
    // Docker's cgroupfs driver; the step's slice, shared, with systemd's.
    for (fire, unit) in [(&fire1, &unit1), (&fire2, &unit2)] {
        assert!(
            fire.starts_with("mesh-host-step-") && fire.ends_with(".scope"),
            "{fire}"
        );
        if unit.ends_with(".scope") {
            assert_eq!(fire, unit);
        }
    }
    for (fire, host) in [(&fire1, &host1), (&fire2, &host2)] {
        let lines = wait_for(
            "the fire's lines in the journal",
            Duration::from_secs(10),
            || {
                let lines = fire_lines(&w.node, &id, fire);
                (lines.len() >= 2).then_some(lines)
            },
        );
        assert_eq!(
            lines,
            vec![
                ("6".to_string(), format!("out {host}")),
                ("3".to_string(), format!("err {host}"))
            ],
            "stdout at priority 6, stderr at 3, of {fire} alone"
        );
    }
    {
        // One query shows the step's events and its output, fire after fire.
        let step_view: Vec<(String, String)> = entries(&w.node, &[&format!("MESH_STEP={id}")])
            .iter()
            .map(|e| {
                (
                    field(e, "MESH_FIRE").to_string(),
                    field(e, "MESSAGE").to_string(),
                )
            })
            .collect();
        for (fire, line) in [
            (&fire1, format!("out {host1}")),
            (&fire1, format!("err {host1}")),
            (&fire2, format!("out {host2}")),
            (&fire2, format!("err {host2}")),
        ] {
            assert!(
                step_view.contains(&(fire.clone(), line.clone())),
                "journalctl MESH_STEP={id} shows {line} of {fire}: {step_view:?}"
            );
        }
        let ident = entries(
            &w.node,
            &["-t", "mesh-host-step", &format!("MESH_FIRE={fire2}")],
        );
        assert_eq!(ident.len(), 2, "tagged mesh-host-step: {ident:?}");
    }

    // docker logs reads the latest fire's container back.
    let logs = w.node.docker(&["logs", &name]);
    assert_eq!(
        String::from_utf8_lossy(&logs.stdout),
        format!("out {host2}\n")
    );
    assert_eq!(
        String::from_utf8_lossy(&logs.stderr),
        format!("err {host2}\n")
    );

    // mesh-host logs: the last fire, then both; with the daemon and without.
    let last = d.cli_with_state(&["logs", &id]);
    assert_eq!(last.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&last.stdout),
        format!("out {host2}\n")
    );
    assert_eq!(
        String::from_utf8_lossy(&last.stderr),
        format!("err {host2}\n")
    );
    w.node.sh_ok(&format!("systemctl stop {}", quote(&d.unit)));
    let both = w.mesh(&["logs", &id, "--fires", "2"]);
    assert_eq!(both.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&both.stdout),
        format!("-- {fire1} --\nout {host1}\n-- {fire2} --\nout {host2}\n")
    );
    assert_eq!(
        String::from_utf8_lossy(&both.stderr),
        format!("err {host1}\nerr {host2}\n")
    );
    let json = w.mesh(&["logs", &id, "--json"]);
    let lines: Vec<Value> = String::from_utf8_lossy(&json.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    let err = lines
        .iter()
        .find(|l| l["stream"] == json!("stderr"))
        .unwrap_or_else(|| panic!("a stderr line: {lines:?}"));
    assert_eq!(err["fire"], json!(fire2));
    assert_eq!(err["message"], json!(format!("err {host2}")));
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn step_output_written_after_the_daemon_was_sigkilled_mid_step_is_kept() {
    let mut w = World::new("stepkill");
    let name = w.name("k");
    let id = name.clone();
    let gate = w.path("gate");
    std::fs::create_dir_all(&gate).expect("gate dir");
    // It prints, waits for the test, and prints again: its last lines
    // come after the daemon that started it is gone.
    let script = "echo \"before $(hostname)\"; while [ ! -e /gate/go ]; do sleep 0.1; done; \
                  echo \"after $(hostname)\"; echo \"after-err $(hostname)\" >&2";
    let mut s = step(&id, &name, &w.pulled_busybox(), script);
    s["mounts"] = json!([{"source": gate, "target": "/gate", "read-only": true}]);
    let d = DaemonUnit::started(&w, json!([s]));
    let client = d.cli_spawn(&["run", &id]);
    w.wait_running("the step to run", &name);
    let host = hostname(&w, &name);
    let fire = wait_for("the fire's first line", Duration::from_secs(20), || {
        let started = fires_by_event(&w.node, &id).remove("step-started")?;
        let fire = started.first()?.clone();
        fire_lines(&w.node, &id, &fire)
            .contains(&("6".to_string(), format!("before {host}")))
            .then_some(fire)
    });
    let first = d.main_pid();
    w.node.sh_ok(&format!("kill -KILL {first}"));
    reap(client);
    wait_for("the daemon to be gone", Duration::from_secs(30), || {
        (d.main_pid() != first).then_some(())
    });
    assert!(w.running(&name), "the step runs on without the daemon");
    std::fs::write(format!("{gate}/go"), b"").expect("go");
    w.wait_stopped("the step to end", &name);
    let lines = wait_for("the lines after the kill", Duration::from_secs(60), || {
        let lines = fire_lines(&w.node, &id, &fire);
        (lines.len() >= 3).then_some(lines)
    });
    assert_eq!(
        lines,
        vec![
            ("6".to_string(), format!("before {host}")),
            ("6".to_string(), format!("after {host}")),
            ("3".to_string(), format!("after-err {host}"))
        ]
    );
    let logs = w.mesh(&["logs", &id]);
    assert_eq!(
        String::from_utf8_lossy(&logs.stdout),
        format!("before {host}\nafter {host}\n")
    );
    assert_eq!(
        String::from_utf8_lossy(&logs.stderr),
        format!("after-err {host}\n")
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn step_output_of_a_run_once_step_is_in_the_journal_under_its_run() {
    let mut w = World::new("onceout");
    let name = w.name("once");
    let id = name.clone();
    let out = w.apply_local(json!([
        {"id": id, "type": "container", "name": name, "image": w.pulled_busybox(),
         "command": ["sh", "-c", "echo once out; echo once err >&2"], "network": "none",
         "run-once": true}
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let logs = w.mesh(&["logs", &id]);
    assert_eq!(logs.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&logs.stdout), "once out\n");
    assert_eq!(String::from_utf8_lossy(&logs.stderr), "once err\n");
    {
        let fires: Vec<String> = entries(&w.node, &[&format!("MESH_STEP={id}")])
            .iter()
            .map(|e| field(e, "MESH_FIRE").to_string())
            .collect();
        assert_eq!(fires.len(), 2, "{fires:?}");
        assert!(fires[0].starts_with("mesh-host-run-once-"), "{fires:?}");
        assert_eq!(fires[0], fires[1]);
    }
    // A declared service is no step; an id nobody declared nor ran is
    // refused.
    let unknown = w.mesh(&["logs", "no-such-step"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("no step no-such-step"),
        "{}",
        String::from_utf8_lossy(&unknown.stderr)
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn step_output_of_a_fire_on_its_schedule_comes_from_the_container_made_ready_for_it() {
    // Made ahead of its fire (src/schedule/ready.rs), the container already
    // carries the name of the fire it is for: its lines are that fire's.
    let mut w = World::new("cronout");
    let name = w.name("cron");
    let id = name.clone();
    let mut s = step(&id, &name, &w.pulled_busybox(), "echo \"tick $(hostname)\"");
    s["schedule"] = json!("* * * * *");
    let _d = DaemonUnit::started(&w, json!([s]));
    let (fire, host) = wait_for("a container made ready", Duration::from_secs(75), || {
        let out = w.node.docker(&[
            "inspect",
            "-f",
            "{{.State.Status}} {{.Id}} {{index .Config.Labels \"mesh.fire\"}}",
            &name,
        ]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut words = text.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some("created"), Some(id), Some(fire)) => {
                Some((fire.to_string(), id.chars().take(12).collect::<String>()))
            }
            _ => None,
        }
    });
    wait_for("that fire to finish", Duration::from_secs(30), || {
        fires_by_event(&w.node, &id)
            .get("step-finished")
            .is_some_and(|f| f.contains(&fire))
            .then_some(())
    });
    let lines = wait_for("its line", Duration::from_secs(60), || {
        let lines = fire_lines(&w.node, &id, &fire);
        (!lines.is_empty()).then_some(lines)
    });
    assert_eq!(lines, vec![("6".to_string(), format!("tick {host}"))]);
    // The fire it was made for started once. (A fire due before the test
    // first saw a container made ready, when the daemon started just
    // before a minute turned, may have started too: it had its own.)
    let started = fires_by_event(&w.node, &id)
        .remove("step-started")
        .unwrap_or_default();
    assert_eq!(
        started.iter().filter(|f| **f == fire).count(),
        1,
        "the fire it was made for started once: {started:?}"
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn step_output_is_followed_fire_after_fire() {
    let mut w = World::new("followout");
    let name = w.name("f");
    let id = name.clone();
    let script = "echo \"out $(hostname)\"";
    let d = DaemonUnit::started(&w, json!([step(&id, &name, &w.pulled_busybox(), script)]));
    // Before any fire: it waits for what comes.
    let mut follow = w.mesh_spawn(&["logs", &id, "--follow"], None);
    let lines = {
        let out = follow.stdout.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        rx
    };
    let mut seen = Vec::new();
    let mut hosts = Vec::new();
    for _ in 0..2 {
        // Each fire in a second of its own.
        std::thread::sleep(Duration::from_millis(1100));
        fire_through(&d, &id);
        let host = hostname(&w, &name);
        let want = format!("out {host}");
        while !seen.contains(&want) {
            match lines.recv_timeout(Duration::from_secs(20)) {
                Ok(line) => seen.push(line),
                Err(e) => panic!("no {want} from logs --follow ({e}): {seen:?}"),
            }
        }
        hosts.push(host);
    }
    reap(follow);
    let fires = fires_by_event(&w.node, &id)
        .remove("step-started")
        .unwrap_or_default();
    assert_eq!(
        seen,
        vec![
            format!("-- {} --", fires[0]),
            format!("out {}", hosts[0]),
            format!("-- {} --", fires[1]),
            format!("out {}", hosts[1]),
        ]
    );
}

/// A step of `w` that prints a line, waits for the test (a file `go` in
/// the directory it returns), then prints a line on stdout and one on
/// stderr: its last lines come after whatever the test did meanwhile.
fn gated_step(w: &mut World, what: &str) -> (String, String, Value) {
    let name = w.name(what);
    let gate = w.path(&format!("{what}-gate"));
    std::fs::create_dir_all(&gate).expect("gate dir");
    let script = "echo \"before $(hostname)\"; while [ ! -e /gate/go ]; do sleep 0.1; done; \
                  echo \"after $(hostname)\"; echo \"after-err $(hostname)\" >&2";
    let mut s = step(&name, &name, &w.pulled_busybox(), script);
    s["mounts"] = json!([{"source": gate, "target": "/gate", "read-only": true}]);
    (name, gate, s)
}

/// The fire of `id` under way, once its first line is in the journal.
fn fire_with_first_line(w: &World, id: &str, host: &str) -> String {
    wait_for("the fire's first line", Duration::from_secs(30), || {
        let started = fires_by_event(&w.node, id).remove("step-started")?;
        let fire = started.last()?.clone();
        fire_lines(&w.node, id, &fire)
            .contains(&("6".to_string(), format!("before {host}")))
            .then_some(fire)
    })
}

/// Every line of `fire`, each once, once the step has ended.
fn all_lines_once(w: &World, id: &str, fire: &str, host: &str) {
    let want = vec![
        ("6".to_string(), format!("before {host}")),
        ("6".to_string(), format!("after {host}")),
        ("3".to_string(), format!("after-err {host}")),
    ];
    let lines = wait_for("every line of the fire", Duration::from_secs(60), || {
        let lines = fire_lines(&w.node, id, fire);
        (lines.len() >= want.len()).then_some(lines)
    });
    // A moment more: nothing comes twice.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        fire_lines(&w.node, id, fire),
        want,
        "each line once: {lines:?}"
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn step_output_across_an_upgrades_hand_over_is_kept_each_line_once() {
    let mut w = World::new("stephand");
    let (id, gate, s) = gated_step(&mut w, "h");
    let d = DaemonUnit::started(&w, json!([s]));
    let client = d.cli_spawn(&["run", &id]);
    w.wait_running("the step to run", &id);
    let host = hostname(&w, &id);
    let fire = fire_with_first_line(&w, &id, &host);
    // An upgrade's maintainer script: the marker beside the control
    // socket, then a restart; the old daemon hands its fire over.
    let first = d.main_pid();
    std::fs::write(w.path("hand-over"), b"").expect("the hand-over marker");
    d.restart();
    reap(client);
    assert_ne!(d.main_pid(), first, "a new daemon");
    assert!(w.running(&id), "the step ran on across the hand-over");
    std::fs::write(format!("{gate}/go"), b"").expect("go");
    w.wait_stopped("the step to end", &id);
    all_lines_once(&w, &id, &fire, &host);
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn step_output_of_a_local_run_that_dies_mid_fire_is_kept_each_line_once() {
    let mut w = World::new("steplocal");
    let (id, gate, s) = gated_step(&mut w, "l");
    // A daemon runs: it takes over what the dead local run owed.
    let _d = DaemonUnit::started(&w, json!([s]));
    let local = w.spawn_local(&id);
    w.wait_running("the step to run", &id);
    let host = hostname(&w, &id);
    let fire = fire_with_first_line(&w, &id, &host);
    assert!(w.kill_local_run(&id), "the local run was there to kill");
    reap(local);
    assert!(w.running(&id), "the step runs on without its owner");
    std::fs::write(format!("{gate}/go"), b"").expect("go");
    w.wait_stopped("the step to end", &id);
    all_lines_once(&w, &id, &fire, &host);
}

/// Wait for a client that was running when its daemon died.
fn reap(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}
