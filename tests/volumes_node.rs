//! Volumes are never deleted by mesh-host (CONTRACT, "Apply"), on the
//! sandbox node's real runtime: data written in the anonymous volume of an
//! image's `VOLUME` survives a recreate (an env change, an image change) and
//! a removal, a step's fires share one volume, and an apply killed in the
//! middle of a recreate loses nothing. Each check reads the data back
//! through the runtime (`docker exec`, `docker volume inspect`), not
//! through mesh-host's report alone.

mod support;

use std::process::{Child, Output};
use std::time::Duration;

use serde_json::{json, Value};
use support::world::{World, SERVICE_CMD};
use support::{quote, stdout, wait_for};

/// A service of `image` whose data lives in the image's `VOLUME /data`.
fn service(name: &str, image: &str, env: &str) -> Value {
    json!({"id": "web", "type": "container", "name": name, "image": image,
           "env": {"MESH_TEST": env}, "command": ["sh", "-c", SERVICE_CMD],
           "network": "none"})
}

/// Something declared besides the service, so that a declaration without it
/// is not empty.
fn other(w: &World) -> Value {
    json!({"id": "dir", "type": "directory", "path": w.path("srv")})
}

fn apply(w: &World, rel: &str, resources: Value) -> Output {
    let decl = w.declaration(rel, resources);
    let out = w.mesh(&["apply", &decl, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    out
}

/// The one line of `id` in an apply's report.
fn line(out: &Output, id: &str) -> String {
    let text = stdout(out);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(&format!("{id} ")))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    lines[0].to_string()
}

/// The names of the volumes mounted in `name`, and where.
fn volumes(w: &World, name: &str) -> String {
    w.inspect(
        name,
        "{{range .Mounts}}{{if eq .Type \"volume\"}}{{.Name}}:{{.Destination}} {{end}}{{end}}",
    )
}

/// The anonymous volume of `name` at /data, removed when the test ends.
fn data_volume(w: &World, name: &str) -> (String, support::Cleanup) {
    let mounted = volumes(w, name);
    let volume = mounted
        .trim()
        .strip_suffix(":/data")
        .unwrap_or_else(|| panic!("{name} mounts {mounted:?}"))
        .to_string();
    assert_eq!(volume.len(), 64, "{mounted}");
    let cleanup = w.node.on_drop(format!(
        "docker volume rm -f {} >/dev/null 2>&1; true",
        quote(&volume)
    ));
    (volume, cleanup)
}

fn read_mark(w: &World, name: &str) -> String {
    w.node
        .docker_ok(&["exec", name, "cat", "/data/mark"])
        .trim()
        .to_string()
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn data_in_an_image_volume_survives_recreates_and_a_removal_keeps_the_volume() {
    let mut w = World::new("volumes");
    let web = w.name("web");
    let (a, b) = (w.volume_image("a"), w.volume_image("b"));

    let out = apply(&w, "d1.json", json!([other(&w), service(&web, &a, "1")]));
    assert!(
        line(&out, "web").starts_with("web created"),
        "{}",
        stdout(&out)
    );
    w.wait_running("web to run", &web);
    let (volume, _rm) = data_volume(&w, &web);
    w.node
        .docker_ok(&["exec", &web, "sh", "-c", "echo kept > /data/mark"]);

    // (a) An env change recreates it: the new container has the volume.
    let out = apply(&w, "d2.json", json!([other(&w), service(&web, &a, "2")]));
    assert_eq!(line(&out, "web"), "web recreated: env changed");
    w.wait_running("web to run again", &web);
    assert_eq!(volumes(&w, &web).trim(), format!("{volume}:/data"));
    assert_eq!(read_mark(&w, &web), "kept");
    assert!(w
        .inspect(&web, "{{json .Config.Env}}")
        .contains("MESH_TEST=2"));

    // (b) So does an image change.
    let out = apply(&w, "d3.json", json!([other(&w), service(&web, &b, "2")]));
    assert_eq!(line(&out, "web"), "web recreated: image changed");
    w.wait_running("web to run again", &web);
    assert_eq!(w.inspect(&web, "{{.Config.Image}}"), b);
    assert_eq!(read_mark(&w, &web), "kept");
    let replaced = mesh_host::runtime::replaced_name(&web);
    assert!(!w.exists(&replaced), "{replaced} is left");

    // (c) A removal keeps the volume, and its line says so.
    let out = apply(&w, "d4.json", json!([other(&w)]));
    assert_eq!(
        line(&out, "web"),
        format!(
            "web removed: container {web} is no longer declared; kept volume {volume} (/data): \
             docker volume rm to free it"
        )
    );
    assert!(!w.exists(&web));
    let data = w
        .node
        .docker_ok(&["volume", "inspect", "-f", "{{.Mountpoint}}", &volume]);
    assert!(!data.trim().is_empty(), "{data}");
    // Its data is there: read through a container that mounts it.
    let read = w.node.docker_ok(&[
        "run",
        "--rm",
        "--network",
        "none",
        "-v",
        &format!("{volume}:/v"),
        &a,
        "cat",
        "/v/mark",
    ]);
    assert_eq!(read.trim(), "kept");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn the_fires_of_a_step_whose_image_declares_a_volume_share_one() {
    let mut w = World::new("volstep");
    let id = w.name("fill");
    let name = w.name("fill-run");
    let image = w.volume_image("a");
    let step = json!({"id": id, "type": "container", "module": "m", "name": name,
                      "image": image, "network": "none", "schedule": "0 3 * * *",
                      "command": ["sh", "-c", "echo fire >> /data/fires; wc -l < /data/fires"],
                      "timeout": 60});
    let decl = w.declaration("d.json", json!([step]));
    let out = w.mesh(&["apply", &decl, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let mut seen = Vec::new();
    for fire in 1..=3 {
        let out = w.run_local(&id);
        assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
        // The step itself counts the fires its volume has seen.
        let logs = w.node.docker_ok(&["logs", &name]);
        assert_eq!(logs.trim(), fire.to_string(), "fire {fire}");
        seen.push(volumes(&w, &name));
    }
    let (volume, _rm) = data_volume(&w, &name);
    assert!(
        seen.iter().all(|v| v.trim() == format!("{volume}:/data")),
        "{seen:?}"
    );
    let replaced = mesh_host::runtime::replaced_name(&name);
    assert!(!w.exists(&replaced), "{replaced} is left");
}

fn finish(mut child: Child, what: &str) {
    let status = child.wait().expect("wait");
    assert!(!status.success(), "{what} was not killed: {status}");
}

/// An apply of a changed service killed at `fault` (a pause in debug
/// builds, src/fault.rs), then a whole apply: the data is in the volume of
/// the service that runs, whatever the point.
fn killed_mid_recreate(tag: &str, fault: &str, stands: &dyn Fn(&World, &str, &str)) {
    let mut w = World::new(tag);
    let web = w.name("web");
    let image = w.volume_image("a");
    apply(
        &w,
        "d1.json",
        json!([other(&w), service(&web, &image, "1")]),
    );
    w.wait_running("web to run", &web);
    let (volume, _rm) = data_volume(&w, &web);
    w.node
        .docker_ok(&["exec", &web, "sh", "-c", "echo kept > /data/mark"]);

    let decl = w.declaration("d2.json", json!([other(&w), service(&web, &image, "2")]));
    let replaced = mesh_host::runtime::replaced_name(&web);
    let killed = w.mesh_spawn_faulted(
        &format!("{fault}:{web}"),
        &["apply", &decl, "--local"],
        Some(&decl),
    );
    wait_for(
        "the old container set aside",
        Duration::from_secs(60),
        || w.exists(&replaced).then_some(()),
    );
    // Give the apply the moment to reach its pause.
    std::thread::sleep(Duration::from_secs(2));
    let state = w.path("state");
    let pattern = format!("[a]pply {decl} --local --state-dir {state}");
    w.node
        .sh_ok(&format!("pkill -KILL -f -- {}", quote(&pattern)));
    finish(killed, "the apply");
    stands(&w, &web, &replaced);
    // The volume is still named by a container (findable).
    let named = w.node.docker_ok(&[
        "ps",
        "-a",
        "--filter",
        &format!("volume={volume}"),
        "--format",
        "{{.Names}}",
    ]);
    assert!(!named.trim().is_empty(), "no container names {volume}");

    let out = w.mesh(&["apply", &decl, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    w.wait_running("web to run again", &web);
    assert_eq!(volumes(&w, &web).trim(), format!("{volume}:/data"));
    assert_eq!(read_mark(&w, &web), "kept");
    assert!(w
        .inspect(&web, "{{json .Config.Env}}")
        .contains("MESH_TEST=2"));
    assert!(!w.exists(&replaced), "{replaced} is left");
    // And the next apply is a no-op.
    let out = w.mesh(&["apply", &decl, "--local"]);
    assert_eq!(line(&out, "web"), "web unchanged", "{}", stdout(&out));
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn an_apply_killed_after_setting_the_old_container_aside_loses_no_data() {
    killed_mid_recreate("volkill1", "pause-before-replacing", &|w, web, replaced| {
        assert!(!w.exists(web), "{web} exists");
        assert_eq!(w.inspect(replaced, "{{.State.Running}}"), "false");
    });
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn an_apply_killed_before_removing_the_old_container_loses_no_data() {
    killed_mid_recreate(
        "volkill2",
        "pause-before-removing-replaced",
        &|w, web, replaced| {
            assert!(w.exists(web) && w.exists(replaced), "both stand");
        },
    );
}
