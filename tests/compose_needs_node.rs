//! Fields real stacks need, with compose as the oracle (CONTRACT,
//! "Compose"), on the sandbox node: each fixture of
//! tests/fixtures/compose/needs is brought up by Debian's
//! `docker-compose` 1.29 and inspected, taken down, then imported and
//! applied by mesh-host and inspected again.
//!
//! - GPUs (`deploy.resources.reservations.devices`): the node has no GPU
//!   driver, so compose creates the container and fails its start;
//!   mesh-host's container carries the same `DeviceRequests`, its start
//!   fails the same way, and the report says the driver is missing. On
//!   Podman, which drops them, they are refused by name before the create.
//! - An anonymous volume (`volumes: [/data]`): data written there is read
//!   back after a recreate, as under compose.
//! - `secrets`/`configs` with `uid`, `gid`, `mode`: compose 1.29 warns
//!   and mounts the file with its own owner and mode (configs not at
//!   all); mesh-host refuses them with the fix.
//! - A run-once step (compose's `service_completed_successfully` target)
//!   that itself depends on services: Docker's events show its
//!   dependencies started (and healthy: it finds the mark its healthy
//!   dependency writes) before it, and its dependent after it ran, in
//!   compose's order.

mod support;

use std::path::Path;

use serde_json::{json, Value};
use support::declare::text;
use support::world::{stamp, World};

/// Removes the named containers, then the named volumes, before a test
/// and after it.
struct Clear<'a> {
    w: &'a World,
    names: Vec<String>,
    volumes: Vec<String>,
}

impl Clear<'_> {
    fn clear(&self) {
        self.w.node.sh(&format!(
            "docker rm -f -v {} >/dev/null 2>&1; docker volume rm {} >/dev/null 2>&1",
            self.names.join(" "),
            self.volumes.join(" ")
        ));
    }
}

impl Drop for Clear<'_> {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Fixture `file` copied as `compose.yaml` into a directory of `w`'s; the
/// directory and the environment it is read with.
fn prepare(w: &World, project: &str, file: &str) -> (String, String) {
    let dir = w.path(project);
    std::fs::create_dir_all(&dir).expect("project dir");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/compose/needs")
            .join(file),
        Path::new(&dir).join("compose.yaml"),
    )
    .expect("copy the fixture");
    let busybox = w.pulled_busybox();
    let tag = format!("{}/busybox:needs", w.node.registry());
    w.node.docker_ok(&["tag", &busybox, &tag]);
    (dir, format!("NEEDS_IMAGE={tag}"))
}

fn compose(w: &World, dir: &str, env: &str, project: &str, args: &str) -> (bool, String) {
    let out = w.node.sh(&format!(
        "cd {dir} && env {env} docker-compose -p {project} {args} 2>&1"
    ));
    (out.status.success(), text(&out))
}

/// Import the project in `dir` as `project`, then apply it: whether the
/// apply succeeded, and what it said.
fn import_and_apply(w: &World, dir: &str, env: &str, project: &str) -> (bool, String) {
    let host = w
        .node
        .docker_host()
        .map(|h| format!("--docker-host {h}"))
        .unwrap_or_default();
    let out = w.node.sh(&format!(
        "cd {dir} && env {env} {bin} import -p {project} -o {dir}/declaration.json {host}",
        bin = w.bin
    ));
    assert!(out.status.success(), "{}", text(&out));
    let out = w.mesh(&["apply", &format!("{dir}/declaration.json"), "--local"]);
    (out.status.success(), text(&out))
}

fn inspect(w: &World, name: &str) -> Value {
    let out = w.node.docker_ok(&["inspect", name]);
    let all: Value = serde_json::from_str(&out).expect("inspect is JSON");
    all[0].clone()
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn gpu_reservations_reach_docker_as_compose_sends_them_and_fail_where_no_driver_is() {
    let w = World::new("compose-needs-gpu");
    let project = "needsgpu";
    let run = Clear {
        w: &w,
        names: vec![format!("{project}_ml_1"), format!("{project}-ml-1")],
        volumes: Vec::new(),
    };
    run.clear();
    let (dir, env) = prepare(&w, project, "gpu.yaml");

    // The oracle: created, then its start fails.
    let (up, said) = compose(&w, &dir, &env, project, "up -d");
    assert!(!up, "{said}");
    assert!(said.contains("could not select device driver"), "{said}");
    let theirs = inspect(&w, &format!("{project}_ml_1"))["HostConfig"]["DeviceRequests"].clone();
    compose(&w, &dir, &env, project, "down");

    let (ok, said) = import_and_apply(&w, &dir, &env, project);
    assert!(!ok, "{said}");
    assert!(
        said.contains("could not select device driver")
            && said
                .contains("the device driver its device-requests ask for is missing on this node"),
        "{said}"
    );
    let ours = inspect(&w, &format!("{project}-ml-1"))["HostConfig"]["DeviceRequests"].clone();
    assert_eq!(
        ours, theirs,
        "mesh-host's device requests against compose's"
    );
    assert_eq!(
        ours,
        json!([
            {"Driver": "nvidia", "Count": 1, "DeviceIDs": [], "Capabilities": [["gpu", "utility"]], "Options": {"visible": "yes"}},
            {"Driver": "nvidia", "Count": 0, "DeviceIDs": ["0", "GPU-abc"], "Capabilities": [["gpu"]], "Options": {}},
            {"Driver": "", "Count": -1, "DeviceIDs": [], "Capabilities": [["compute"]], "Options": {}}
        ])
    );
}

/// On Podman, whose compatible API drops device requests (the container
/// would run without its GPUs), they are refused by name before the
/// create (docs/podman.md).
#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn podman_refuses_gpu_reservations_by_name_before_the_create() {
    let w = World::new("compose-needs-gpu-podman");
    let project = "needsgpupod";
    let run = Clear {
        w: &w,
        names: vec![format!("{project}-ml-1")],
        volumes: Vec::new(),
    };
    run.clear();
    let (dir, env) = prepare(&w, project, "gpu.yaml");
    let (ok, said) = import_and_apply(&w, &dir, &env, project);
    assert!(!ok, "{said}");
    assert!(
        said.contains("not supported on Podman: device-requests ("),
        "{said}"
    );
    let exists = w.node.docker(&["inspect", &format!("{project}-ml-1")]);
    assert!(!exists.status.success(), "made on Podman");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn an_anonymous_volume_keeps_its_data_across_a_recreate_as_under_compose() {
    let w = World::new("compose-needs-volume");
    let project = "needsvol";
    let theirs = format!("{project}_keeper_1");
    let ours = format!("{project}-keeper-1");
    let run = Clear {
        w: &w,
        names: vec![theirs.clone(), ours.clone()],
        volumes: Vec::new(),
    };
    run.clear();
    let (dir, env) = prepare(&w, project, "volume.yaml");
    let read_back = |name: &str, apply: &dyn Fn(&str)| {
        apply("STAMP=one");
        w.node
            .docker_ok(&["exec", name, "sh", "-c", "echo kept > /data/f"]);
        let before = inspect(&w, name);
        apply("STAMP=two");
        let after = inspect(&w, name);
        assert_ne!(before["Id"], after["Id"], "{name}: not recreated");
        let volume = |c: &Value| c["Mounts"][0]["Name"].clone();
        assert_eq!(volume(&before), volume(&after), "{name}: another volume");
        w.node.docker_ok(&["exec", name, "cat", "/data/f"])
    };

    let by_compose = read_back(&theirs, &|stamp| {
        let (ok, said) = compose(&w, &dir, &format!("{env} {stamp}"), project, "up -d");
        assert!(ok, "{said}");
    });
    compose(&w, &dir, &env, project, "down -v");
    let by_mesh = read_back(&ours, &|stamp| {
        let (ok, said) = import_and_apply(&w, &dir, &format!("{env} {stamp}"), project);
        assert!(ok, "{said}");
    });
    assert_eq!(by_compose.trim(), "kept");
    assert_eq!(by_mesh, by_compose, "what a recreate kept");
    let c = inspect(&w, &ours);
    assert_eq!(c["Config"]["Volumes"], json!({"/data": {}}), "{c:#}");
}

/// The containers of steps.yaml, as compose 1.29 names them and as
/// mesh-host does.
const STEPS: [(&str, &str); 4] = [
    ("needssteps_db_1", "needssteps-db-1"),
    ("needssteps_cache_1", "needssteps-cache-1"),
    ("needssteps_migrate_1", "needssteps-migrate-1"),
    ("needssteps_web_1", "needssteps-web-1"),
];

/// The order `names` started (and died) in since `since`: each as its
/// place in STEPS, with `-died` for a die.
fn order(w: &World, since: &str, names: &[&str]) -> Vec<String> {
    w.events(since, names)
        .into_iter()
        .filter(|(_, action)| action == "start" || action == "die")
        .filter_map(|(name, action)| {
            let i = names.iter().position(|n| *n == name)?;
            let service = STEPS[i].1.split('-').nth(1)?.to_owned();
            Some(if action == "die" {
                format!("{service}-died")
            } else {
                service
            })
        })
        .collect()
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_step_that_depends_on_services_runs_after_them_and_before_its_dependent() {
    let w = World::new("compose-needs-steps");
    let project = "needssteps";
    let run = Clear {
        w: &w,
        names: STEPS
            .iter()
            .flat_map(|(a, b)| [a.to_string(), b.to_string()])
            .collect(),
        volumes: vec![format!("{project}_shared")],
    };
    run.clear();
    let (dir, env) = prepare(&w, project, "steps.yaml");

    let since = stamp();
    let (ok, said) = compose(&w, &dir, &env, project, "up -d");
    assert!(ok, "{said}");
    let theirs: Vec<&str> = STEPS.iter().map(|(c, _)| *c).collect();
    let by_compose = order(&w, &since, &theirs);
    compose(&w, &dir, &env, project, "down -v");

    let since = stamp();
    let (ok, said) = import_and_apply(&w, &dir, &env, project);
    assert!(ok, "{said}");
    let ours: Vec<&str> = STEPS.iter().map(|(_, m)| *m).collect();
    let by_mesh = order(&w, &since, &ours);
    // db and cache may start in either order; the rest is fixed.
    let at = |o: &[String], s: &str| {
        o.iter()
            .position(|x| x == s)
            .unwrap_or_else(|| panic!("no {s} in {o:?}"))
    };
    for o in [&by_compose, &by_mesh] {
        assert!(at(o, "migrate") > at(o, "db"), "{o:?}");
        assert!(at(o, "migrate") > at(o, "cache"), "{o:?}");
        assert!(at(o, "migrate-died") < at(o, "web"), "{o:?}");
    }
    let tail = |o: &[String]| o[at(o, "migrate")..].to_vec();
    assert_eq!(tail(&by_mesh), tail(&by_compose), "mesh-host {by_mesh:?}");
    // The step found db's mark, written 2 s after db started, when db
    // turned healthy: it waited for that, not for the start alone.
    let out = w.node.docker_ok(&["logs", "needssteps-migrate-1"]);
    assert_eq!(out.trim(), "migrated");
}

/// `secrets` and `configs` with `uid`, `gid` and `mode`: compose 1.29
/// warns and mounts the secret's file with its own owner and mode (and
/// ignores configs); mesh-host refuses them, naming the fix, rather than
/// accept what would not be done.
#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn secret_owners_and_modes_compose_ignores_are_refused_with_the_fix() {
    let w = World::new("compose-needs-secrets");
    let project = "needssecrets";
    let run = Clear {
        w: &w,
        names: vec![format!("{project}_reader_1"), format!("{project}-reader-1")],
        volumes: Vec::new(),
    };
    run.clear();
    let (dir, env) = prepare(&w, project, "secrets.yaml");
    std::fs::write(Path::new(&dir).join("key"), "hunter2\n").expect("key");
    std::fs::write(Path::new(&dir).join("conf"), "a=1\n").expect("conf");
    w.node
        .sh_ok(&format!("chmod 0600 {dir}/key && chown 0:0 {dir}/key"));

    let (ok, said) = compose(&w, &dir, &env, project, "up -d");
    assert!(ok, "{said}");
    assert!(said.contains("uid, gid, or mode"), "{said}");
    let name = format!("{project}_reader_1");
    let seen = w
        .node
        .docker_ok(&["exec", &name, "stat", "-c", "%u:%g %a", "/run/secrets/key"]);
    assert_eq!(
        seen.trim(),
        "0:0 600",
        "compose applied what it says it ignores"
    );
    let conf = w
        .node
        .docker(&["exec", &name, "test", "-e", "/etc/app.conf"]);
    assert!(!conf.status.success(), "compose 1.29 mounted the config");
    compose(&w, &dir, &env, project, "down");

    let host = w
        .node
        .docker_host()
        .map(|h| format!("--docker-host {h}"))
        .unwrap_or_default();
    let out = w.node.sh(&format!(
        "cd {dir} && env {env} {bin} import -p {project} -o {dir}/declaration.json {host}",
        bin = w.bin
    ));
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    for field in [
        "reader: secrets[0].uid",
        "reader: secrets[0].gid",
        "reader: secrets[0].mode",
        "reader: configs[0].mode",
    ] {
        assert!(said.contains(field), "{field}: {said}");
    }
    assert!(
        said.contains("set them on the file (chown, chmod)"),
        "{said}"
    );
}
