//! Compose's structure with compose as the oracle (CONTRACT, "Compose"),
//! on the sandbox node: the fixture project tests/fixtures/compose/shapes
//! (a service extending one of another file, run as two replicas, and a
//! service extending it in the same file, after it; an env file with
//! quotes, `export` and comments, read as compose reads it) is brought up by
//! Debian's `docker-compose` 1.29 and inspected, taken down, then
//! imported and applied by mesh-host: the same containers, compared one
//! by one (environment, command, labels, bind mounts), and the service
//! that depends on the replicated one started after each replica.

mod support;

use std::path::Path;

use serde_json::{json, Value};
use support::declare::text;
use support::world::{stamp, World};

const PROJECT: &str = "shapes";

/// The containers, as compose 1.29 names them and as mesh-host does.
const CONTAINERS: [(&str, &str); 3] = [
    ("shapes_web_1", "shapes-web-1"),
    ("shapes_web_2", "shapes-web-2"),
    ("shapes_worker_1", "shapes-worker-1"),
];

/// Removes both copies of the project before the test and after it.
struct Project<'a>(&'a World);

impl Project<'_> {
    fn clear(&self) {
        let names: Vec<&str> = CONTAINERS.iter().flat_map(|(a, b)| [*a, *b]).collect();
        self.0
            .node
            .sh(&format!("docker rm -f {} >/dev/null 2>&1", names.join(" ")));
        self.0.node.sh(&format!(
            "docker network rm {PROJECT}_default >/dev/null 2>&1"
        ));
    }
}

impl Drop for Project<'_> {
    fn drop(&mut self) {
        self.clear();
    }
}

fn copy_fixture(to: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compose/shapes");
    std::fs::create_dir_all(to.join("common")).expect("project dir");
    for name in ["compose.yaml", "common/base.yaml", "common/app.env"] {
        std::fs::copy(from.join(name), to.join(name)).expect("copy the fixture");
    }
}

/// What is compared, of one container.
fn view(w: &World, name: &str) -> Value {
    let out = w.node.docker_ok(&["inspect", name]);
    let all: Value = serde_json::from_str(&out).expect("inspect is JSON");
    let c = &all[0];
    let mut env: Vec<String> = c["Config"]["Env"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    env.sort();
    let binds: Vec<Value> = c["Mounts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|m| json!([m["Type"], m["Source"], m["Destination"], m["RW"]]))
        .collect();
    json!({
        "env": env,
        "command": c["Config"]["Cmd"],
        "kind": c["Config"]["Labels"]["shapes.kind"],
        "mounts": binds,
        "image": c["Config"]["Image"].as_str().map(|i| i.split('@').next().unwrap_or(i).to_owned()),
    })
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn extends_and_replicas_run_as_compose_runs_them() {
    let w = World::new("compose-shapes");
    let project = Project(&w);
    project.clear();
    let dir = w.path("shapes");
    copy_fixture(Path::new(&dir));
    let busybox = w.pulled_busybox();
    let registry = w.node.registry().to_string();
    w.node
        .docker_ok(&["tag", &busybox, &format!("{registry}/busybox:stable")]);
    let env = format!("REGISTRY={registry}");

    // The oracle: compose's own containers.
    let up = w.node.sh(&format!(
        "cd {dir} && env {env} docker-compose -p {PROJECT} up -d 2>&1"
    ));
    assert!(up.status.success(), "{}", text(&up));
    let by_compose: Vec<Value> = CONTAINERS.iter().map(|(c, _)| view(&w, c)).collect();
    let down = w.node.sh(&format!(
        "cd {dir} && env {env} docker-compose -p {PROJECT} down 2>&1"
    ));
    assert!(down.status.success(), "{}", text(&down));
    assert_eq!(
        by_compose[0]["mounts"][0][1],
        json!(format!("{dir}/common/data")),
        "compose reads the base's ./data from its file's directory"
    );

    // mesh-host's.
    let out = w.node.sh(&format!(
        "cd {dir} && env {env} {bin} import -p {PROJECT} -o {dir}/declaration.json {host}",
        bin = w.bin,
        host = w
            .node
            .docker_host()
            .map(|h| format!("--docker-host {h}"))
            .unwrap_or_default()
    ));
    assert!(out.status.success(), "{}", text(&out));
    let since = stamp();
    let out = w.mesh(&["apply", &format!("{dir}/declaration.json"), "--local"]);
    assert!(out.status.success(), "{}", text(&out));
    let mut differ = Vec::new();
    for ((theirs, ours), compose) in CONTAINERS.iter().zip(&by_compose) {
        let mesh = view(&w, ours);
        if &mesh != compose {
            differ.push(format!(
                "{theirs}: compose {compose}\n{ours}: mesh-host {mesh}"
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    let env = &by_compose[0]["env"];
    for want in [
        "A=double quoted",
        "B=single $X",
        "C=plain",
        "D=esc \"q\" tab\tend",
    ] {
        assert!(
            env.as_array().is_some_and(|e| e.contains(&json!(want))),
            "{want}: {env}"
        );
    }

    // The worker waits for each replica of web.
    let names: Vec<&str> = CONTAINERS.iter().map(|(_, m)| *m).collect();
    let starts: Vec<String> = w
        .events(&since, &names)
        .into_iter()
        .filter(|(_, action)| action == "start")
        .map(|(name, _)| name)
        .collect();
    let at = |n: &str| {
        starts
            .iter()
            .position(|s| s == n)
            .unwrap_or_else(|| panic!("{n} never started: {starts:?}"))
    };
    assert!(
        at("shapes-worker-1") > at("shapes-web-1") && at("shapes-worker-1") > at("shapes-web-2"),
        "{starts:?}"
    );
}
