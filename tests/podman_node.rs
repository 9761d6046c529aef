//! mesh-host against Podman's Docker-compatible API: what an operator of a
//! RHEL node sees, checked through Podman's own record (its events, which it
//! writes to the journal with `PODMAN_*` fields), systemd and the journal.
//!
//! Run on a node booted with `MESH_NODE_RUNTIME=podman` (tests/run's Podman
//! phase; its other phases skip `podman_*`); on a Docker node every test
//! here fails at its first check, which asks the API who answers. The tests of the other files that hold on
//! Podman too run in the same phase (tests/README.md).

mod support;

use std::process::Output;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use support::daemon_unit::DaemonUnit;
use support::wait_for;
use support::world::{World, SERVICE_CMD};

fn service(id: &str, name: &str, image: &str) -> Value {
    json!({"id": id, "type": "container", "module": "m", "name": name, "image": image,
           "command": ["sh", "-c", SERVICE_CMD], "network": "none"})
}

fn step(id: &str, name: &str, image: &str, script: &str, holds: &[&str]) -> Value {
    json!({"id": id, "type": "container", "module": "m", "name": name, "image": image,
           "command": ["sh", "-c", script], "network": "none", "schedule": "0 3 * * *",
           "while-stopped": holds, "timeout": 120})
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Now, as `journalctl --since` reads it.
fn now() -> String {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970");
    format!("@{}.{:06}", t.as_secs(), t.subsec_micros())
}

/// The API under test is Podman's: its version answers for the server.
fn assert_podman(w: &World) {
    let server = w.node.docker_ok(&["version", "-f", "{{.Server.Version}}"]);
    assert!(
        server.trim().starts_with('4'),
        "the API answering is not Podman 4 (server version {server:?}): boot the node \
         with MESH_NODE_RUNTIME=podman"
    );
}

/// Podman's own record of what it did to container `name` since `since`
/// (a `journalctl --since` value): its events, in order.
fn podman_events(w: &World, name: &str, since: &str) -> Vec<String> {
    podman_events_of(w, &[name], since)
        .into_iter()
        .map(|(_, event)| event)
        .collect()
}

/// Podman's record of what it did to any of `names` since `since`, in
/// order, as `(name, event)`: one journal query, so the order across
/// containers is Podman's own.
fn podman_events_of(w: &World, names: &[&str], since: &str) -> Vec<(String, String)> {
    let mut args: Vec<String> = vec!["-t".into(), "podman".into()];
    args.extend(names.iter().map(|n| format!("PODMAN_NAME={n}")));
    args.extend(["--since", since, "-o", "json"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    w.node
        .journal(&args)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|e| {
            Some((
                e["PODMAN_NAME"].as_str()?.to_string(),
                e["PODMAN_EVENT"].as_str()?.to_string(),
            ))
        })
        .collect()
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn podman_runs_what_apply_creates_and_a_noop_apply_makes_it_do_nothing() {
    let mut w = World::new("pod-apply");
    assert_podman(&w);
    let web = w.name("web");
    let img = w.busybox();
    let since = now();
    let first = w.declaration("d1.json", json!([service("web", &web, &img)]));
    let out = w.mesh(&["apply", &first, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("web created"), "{}", stdout(&out));
    assert!(w.running(&web));
    assert_eq!(
        w.inspect(&web, "{{index .Config.Labels \"mesh-host.managed\"}}"),
        "true"
    );
    assert_eq!(
        w.inspect(&web, "{{.HostConfig.RestartPolicy.Name}}"),
        "unless-stopped"
    );
    let events = podman_events(&w, &web, &since);
    assert_eq!(events, ["create", "init", "start"], "Podman's record");

    // A second apply changes nothing: Podman records nothing of it.
    let id = w.inspect(&web, "{{.Id}}");
    let since = now();
    let out = w.mesh(&["apply", &first, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("web unchanged"), "{}", stdout(&out));
    assert_eq!(w.inspect(&web, "{{.Id}}"), id);
    let events = podman_events(&w, &web, &since);
    assert!(events.is_empty(), "a no-op apply made Podman do {events:?}");

    // A changed command recreates it: the old container is stopped, set
    // aside as `NAME.replaced` (so its volumes can be handed over), the
    // new one made with them, and only then is the old one removed.
    // Podman says `remove` where Docker says `destroy`.
    let mut changed = service("web", &web, &img);
    changed["command"] = json!(["sh", "-c", format!("{SERVICE_CMD} # v2")]);
    let second = w.declaration("d2.json", json!([changed]));
    let since = now();
    let out = w.mesh(&["apply", &second, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("web recreated"), "{}", stdout(&out));
    assert_ne!(w.inspect(&web, "{{.Id}}"), id);
    assert!(w.running(&web));
    let aside = format!("{web}.replaced");
    let events = podman_events_of(&w, &[&web, &aside], &since);
    let at = |name: &str, event: &str| {
        events
            .iter()
            .position(|(n, e)| n == name && e == event)
            .unwrap_or_else(|| panic!("no {event} of {name} in {events:?}"))
    };
    assert!(at(&web, "died") < at(&aside, "rename"), "{events:?}");
    assert!(at(&aside, "rename") < at(&web, "create"), "{events:?}");
    // The new container runs before the old one goes: the old one is
    // kept until then, to be put back if the new one would not start.
    assert!(at(&web, "create") < at(&web, "start"), "{events:?}");
    assert!(at(&web, "start") < at(&aside, "remove"), "{events:?}");
    assert_eq!(
        events.last().map(|(n, e)| (n.as_str(), e.as_str())),
        Some((aside.as_str(), "remove")),
        "{events:?}"
    );
    assert!(
        !w.node
            .docker(&["container", "inspect", &aside])
            .status
            .success(),
        "the set-aside container is gone after the recreate"
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn podman_the_daemon_holds_a_service_and_sees_a_start_by_someone_else() {
    let mut w = World::new("pod-hold");
    assert_podman(&w);
    let svc = w.name("svc");
    let job = w.name("job");
    let img = w.busybox();
    // A step id of this test alone: it names the step's slice node-wide.
    let id = support::unique_name("podhold").replace('-', "_");
    let slice = format!("mesh-host-step\\x2d{id}.slice");
    let _slice = w
        .node
        .on_drop(format!("systemctl stop '{slice}' 2>/dev/null || true"));
    w.write_declaration(json!([
        service("svc", &svc, &img),
        step(&id, &job, &img, "sleep 8", &["svc"]),
    ]));
    let d = DaemonUnit::install(&w, "");
    d.start();
    assert!(d.active());
    assert!(w.running(&svc), "applied at start");

    let since = now();
    let client = d.cli_spawn(&["run", &id]);
    wait_for("svc to be held", Duration::from_secs(30), || {
        (!w.running(&svc)).then_some(())
    });
    wait_for("the step to run", Duration::from_secs(30), || {
        w.running(&job).then_some(())
    });
    // Podman runs the step in a scope of its own in the step's slice.
    let container = w.inspect(&job, "{{.Id}}");
    let status = w.node.sh(&format!("systemctl status --no-pager '{slice}'"));
    let status = String::from_utf8_lossy(&status.stdout).into_owned();
    assert!(
        status.contains(&format!("libpod-{container}.scope")) && status.contains("sleep 8"),
        "Podman's scope of {container} not in:\n{status}"
    );

    // Someone starts the held service: the daemon sees it in Podman's
    // event stream and stops it again.
    w.node.docker_ok(&["start", &svc]);
    wait_for(
        "the window to stop svc again",
        Duration::from_secs(10),
        || (!w.running(&svc)).then_some(()),
    );
    let out = client.wait_with_output().expect("mesh-host run");
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    wait_for("svc to run again", Duration::from_secs(30), || {
        w.running(&svc).then_some(())
    });
    let violated = d.journal(
        &since,
        &["MESH_EVENT=hold-violated", &format!("MESH_CONTAINER={svc}")],
    );
    assert!(violated.contains("stopping it again"), "{violated}");
    let closed = d.journal(&since, &["MESH_EVENT=window-closed"]);
    assert!(!closed.trim().is_empty(), "no window-closed entry");

    // Podman's own record: held, started by someone, stopped again, and
    // started once more when the window closed.
    let events: Vec<String> = podman_events(&w, &svc, &since)
        .into_iter()
        .filter(|e| e == "start" || e == "died")
        .collect();
    assert_eq!(
        events,
        ["died", "start", "died", "start"],
        "Podman's record"
    );
}
