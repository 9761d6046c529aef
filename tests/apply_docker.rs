//! Apply on the sandbox node's real Docker: CONTRACT "Apply" as
//! `mesh-host apply --local` does it, checked through Docker itself (its
//! event stream, inspect) and the filesystem, not through mesh-host's own
//! report alone.

mod support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::{Child, Output};
use std::time::Duration;

use serde_json::{json, Value};
use support::declare::{first, first_made, free_port, is_made};
use support::world::{stamp, World, SERVICE_CMD};
use support::{quote, stdout, wait_for};

/// A busybox service resource (no module).
fn service(w: &World, id: &str, name: &str) -> Value {
    json!({"id": id, "type": "container", "name": name, "image": w.busybox(),
           "command": ["sh", "-c", SERVICE_CMD], "network": "none"})
}

/// `mesh-host apply FILE --local` on a fresh declaration file.
fn apply(w: &World, rel: &str, resources: Value) -> Output {
    let decl = w.declaration(rel, resources);
    w.mesh(&["apply", &decl, "--local"])
}

fn has_line(out: &Output, line: &str) -> bool {
    stdout(out).lines().any(|l| l == line)
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn creates_then_a_second_apply_makes_no_mutating_call_and_a_changed_env_file_recreates() {
    let mut w = World::new("apply-noop");
    let web = w.name("web");
    let step = w.name("gc");
    let env = w.path("etc/web.env");
    let resources = |content: &str| {
        let mut svc = service(&w, "web", &web);
        svc["env-files"] = json!([env]);
        json!([
            {"id": "data", "type": "directory", "path": w.path("srv/data"), "mode": "0750"},
            {"id": "env", "type": "file", "path": env, "content": content, "mode": "0600"},
            svc,
            {"id": "gc", "type": "container", "name": step, "image": w.busybox(),
             "command": ["true"], "network": "none", "schedule": "0 3 * * *"},
        ])
    };
    let out = apply(&w, "d1.json", resources("GREETING=hello\n"));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(has_line(&out, "web created") || has_line(&out, "web created: image pulled"));
    assert!(w.running(&web));
    assert_eq!(
        w.inspect(&web, "{{.HostConfig.RestartPolicy.Name}}"),
        "unless-stopped"
    );
    assert_eq!(
        w.inspect(&web, "{{index .Config.Labels \"mesh-host.managed\"}}"),
        "true"
    );
    assert_eq!(
        w.inspect(&web, "{{index .Config.Labels \"mesh-host.resource\"}}"),
        "web"
    );
    assert!(w
        .inspect(&web, "{{json .Config.Env}}")
        .contains("GREETING=hello"));
    let meta = std::fs::metadata(&env).expect("env file");
    assert_eq!(meta.permissions().mode() & 0o7777, 0o600);
    assert_eq!(
        std::fs::read_to_string(&env).expect("read"),
        "GREETING=hello\n"
    );
    let data = std::fs::metadata(w.path("srv/data")).expect("dir");
    assert!(data.is_dir() && data.permissions().mode() & 0o7777 == 0o750);
    assert!(!w.exists(&step), "a scheduled step is installed, never run");
    let id_before = w.inspect(&web, "{{.Id}}");
    // What the containers read, in another form of the same content (the
    // store writes it pretty): a write by the next apply would show.
    let inputs_path = w.path("state/container-inputs.json");
    let recorded: Value =
        serde_json::from_slice(&std::fs::read(&inputs_path).expect("inputs")).expect("json");
    let compact = serde_json::to_string(&recorded).expect("json");
    std::fs::write(&inputs_path, &compact).expect("rewrite inputs");
    let applied_path = w.path("state/applied.json");
    let applied_before = std::fs::read_to_string(&applied_path).expect("applied");

    // The same declaration again: Docker sees nothing happen, and of the
    // state only the record of the apply is written.
    let since = stamp();
    let out = apply(&w, "d1.json", resources("GREETING=hello\n"));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    for line in [
        "data unchanged",
        "env unchanged",
        "web unchanged",
        "gc unchanged",
    ] {
        assert!(has_line(&out, line), "{line} in\n{}", stdout(&out));
    }
    let events = w.events(&since, &[&web, &step]);
    assert!(events.is_empty(), "a no-op apply made Docker do {events:?}");
    assert_eq!(w.inspect(&web, "{{.Id}}"), id_before);
    assert_eq!(
        std::fs::read_to_string(&inputs_path).expect("inputs"),
        compact,
        "a no-op apply rewrote what the containers read"
    );
    assert_ne!(
        std::fs::read_to_string(&applied_path).expect("applied"),
        applied_before,
        "the apply itself is recorded"
    );

    // The env-file changes: the container is recreated, naming the file.
    let since = stamp();
    let out = apply(&w, "d2.json", resources("GREETING=bonjour\n"));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        has_line(&out, "env updated: content changed"),
        "{}",
        stdout(&out)
    );
    assert!(
        has_line(&out, &format!("web recreated: {env} changed")),
        "{}",
        stdout(&out)
    );
    assert_ne!(w.inspect(&web, "{{.Id}}"), id_before);
    assert!(w.running(&web));
    assert!(w
        .inspect(&web, "{{json .Config.Env}}")
        .contains("GREETING=bonjour"));
    let inputs = std::fs::read_to_string(&inputs_path).expect("inputs");
    assert_ne!(inputs, compact, "the recreate is recorded");
    let recorded: Value = serde_json::from_str(&inputs).expect("json");
    assert_eq!(
        recorded[&web]["identity"].as_str(),
        Some(
            w.inspect(&web, "{{index .Config.Labels \"mesh-host.identity\"}}")
                .as_str()
        ),
        "{inputs}"
    );
    let replaced = mesh_host::runtime::replaced_name(&web);
    let making = mesh_host::runtime::making_name(&web);
    let events = w.events(&since, &[&web, &replaced, &making]);
    let actions: Vec<&str> = events.iter().map(|(_, a)| a.as_str()).collect();
    // Stopped and set aside, the new one made and started, then the old
    // one destroyed (its volumes kept) once the new one is judged on its
    // health (it has none: at once; docs/apply.md, "Volumes";
    // docs/updates.md).
    let n = actions.len();
    assert!(
        n >= 4
            && actions.iter().position(|a| *a == "stop") < Some(n - 3)
            && is_made(actions[n - 3])
            && actions[n - 2] == "start"
            && actions[n - 1] == "destroy",
        "{events:?}"
    );
    let recreated = w.node.journal(&[
        "-t",
        "mesh-host",
        "MESH_EVENT=container-recreated",
        &format!("MESH_CONTAINER={web}"),
        "-o",
        "cat",
    ]);
    assert!(recreated.contains(&format!("{env} changed")), "{recreated}");

    let status = w.mesh(&["status", "--local", "--json"]);
    assert_eq!(status.status.code(), Some(0));
    let status: Value = serde_json::from_slice(&status.stdout).expect("status json");
    assert_eq!(status["last-apply"]["ok"], true);
    assert_eq!(status["steps"][0]["step"], "gc");
    assert!(status["steps"][0]["next-fire"].is_string(), "{status}");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_failing_run_once_halts_and_what_follows_is_not_created() {
    let mut w = World::new("apply-halt");
    let before = w.name("before");
    let migrate = w.name("migrate");
    let after = w.name("after");
    let out = apply(
        &w,
        "d.json",
        json!([
            service(&w, "before", &before),
            {"id": "migrate", "type": "container", "name": migrate, "image": w.busybox(),
             "command": ["sh", "-c", "echo migrating; exit 3"], "network": "none",
             "run-once": true, "timeout": 60},
            service(&w, "after", &after),
        ]),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        has_line(&out, "migrate failed: exit status 3"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("halted at migrate (exit status 3)"),
        "{}",
        stdout(&out)
    );
    assert!(w.running(&before), "what came before stays applied");
    assert_eq!(w.inspect(&migrate, "{{.State.ExitCode}}"), "3");
    assert!(
        !w.exists(&after),
        "nothing after a failed run-once is applied"
    );
    let logs = w
        .node
        .sh_ok(&format!("docker logs {} 2>&1", quote(&migrate)));
    assert!(
        logs.contains("migrating"),
        "its container is kept for its logs: {logs}"
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_scheduled_step_is_installed_with_its_image_pulled_and_no_container_run() {
    let mut w = World::new("apply-step");
    let step = w.name("step");
    let maker = w.name("maker");
    // An image of its own, pushed to the node's registry and then removed
    // from Docker's store: only a pull by apply can bring it back.
    let repo = format!("{}/{}", w.node.registry(), w.prefix);
    let tagged = format!("{repo}:1");
    w.pulled_busybox();
    w.node.docker_ok(&[
        "run",
        "--name",
        &maker,
        "--network",
        "none",
        &w.busybox(),
        "sh",
        "-c",
        &format!("echo {} > /unique", w.prefix),
    ]);
    w.node.docker_ok(&["commit", &maker, &tagged]);
    w.node.docker_ok(&["push", &tagged]);
    let pinned = w.node.docker_ok(&[
        "image",
        "inspect",
        "-f",
        "{{index .RepoDigests 0}}",
        &tagged,
    ]);
    let pinned = pinned.trim().to_string();
    w.node.docker_ok(&["rmi", &tagged]);
    assert!(
        !w.node
            .docker(&["image", "inspect", &pinned])
            .status
            .success(),
        "absent before"
    );

    let since = stamp();
    let out = apply(
        &w,
        "d.json",
        json!([{"id": "nightly", "type": "container", "name": step, "image": pinned,
                "command": ["true"], "network": "none", "schedule": "15 2 * * *", "timeout": 60}]),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        has_line(&out, "nightly installed: image pulled"),
        "{}",
        stdout(&out)
    );
    assert!(
        w.node
            .docker(&["image", "inspect", &pinned])
            .status
            .success(),
        "pulled"
    );
    assert!(!w.exists(&step), "never run at apply");
    assert!(w.events(&since, &[&step]).is_empty());
    let _ = w.node.docker(&["rmi", &pinned]);
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn an_undeclared_managed_container_is_removed_and_a_foreign_one_survives() {
    let mut w = World::new("apply-rm");
    let keep = w.name("keep");
    let gone = w.name("gone");
    let foreign = w.name("foreign");
    w.pulled_busybox();
    w.node.docker_ok(&[
        "run",
        "-d",
        "--name",
        &foreign,
        "--network",
        "none",
        &w.busybox(),
        "sh",
        "-c",
        SERVICE_CMD,
    ]);
    let out = apply(
        &w,
        "d1.json",
        json!([service(&w, "keep", &keep), service(&w, "gone", &gone)]),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(w.running(&gone));
    let out = apply(&w, "d2.json", json!([service(&w, "keep", &keep)]));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        has_line(
            &out,
            &format!("gone removed: container {gone} is no longer declared")
        ),
        "{}",
        stdout(&out)
    );
    assert!(!w.exists(&gone), "removed");
    assert!(w.running(&keep));
    assert!(
        w.running(&foreign),
        "a container without the managed label is never touched"
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_symlink_planted_at_a_file_path_is_not_followed() {
    let w = World::new("apply-link");
    std::fs::create_dir_all(w.path("etc")).expect("mkdir");
    let target = w.path("precious");
    std::fs::write(&target, "do not touch\n").expect("write");
    let planted = w.path("etc/app.conf");
    std::os::unix::fs::symlink(&target, &planted).expect("plant a link");
    // And a link in the parent chain of another file.
    std::fs::create_dir_all(w.path("elsewhere")).expect("mkdir");
    std::os::unix::fs::symlink(w.path("elsewhere"), w.path("linked")).expect("plant a link");
    let behind = w.path("linked/app/other.conf");
    let out = apply(
        &w,
        "d.json",
        json!([
            {"id": "conf", "type": "file", "path": planted, "content": "declared\n", "mode": "0640"},
            {"id": "other", "type": "file", "path": behind, "content": "x\n"},
        ]),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(
        std::fs::read_to_string(&target).expect("read"),
        "do not touch\n"
    );
    let meta = std::fs::symlink_metadata(&planted).expect("lstat");
    assert!(meta.file_type().is_file(), "the path is a regular file now");
    assert_eq!(meta.mode() & 0o7777, 0o640);
    assert_eq!(
        std::fs::read_to_string(&planted).expect("read"),
        "declared\n"
    );
    assert!(
        stdout(&out).contains(&format!("other failed: {} (a parent of", w.path("linked"))),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        std::fs::read_dir(w.path("elsewhere")).expect("ls").count(),
        0,
        "nothing written through the link"
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn an_apply_during_a_window_leaves_the_held_registry_alone_and_converges_it_after() {
    let hold_id = support::unique_step_id("hold");
    let mut w = World::new("apply-race");
    let reg = w.name("registry");
    let hold = w.name("hold");
    let registry_image = w.node.image("registry");
    let busybox = w.busybox();
    let port = free_port();
    let storage = w.path("storage");
    let config = w.path("config.yml");
    w.node.docker_ok(&["pull", &registry_image]);
    w.node.docker_ok(&["pull", &busybox]);
    let mounts = json!([
        {"source": storage, "target": "/var/lib/registry", "read-only": false},
        {"source": config, "target": "/etc/docker/registry/config.yml", "read-only": true}
    ]);
    let resources = |env: Value| {
        json!([
            {"id": "storage", "type": "directory", "path": storage, "mode": "0755"},
            {"id": "config", "type": "file", "path": config, "content": format!(
                "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: /var/lib/registry\nhttp:\n  addr: 127.0.0.1:{port}\n")},
            {"id": "registry", "type": "container", "module": "registry", "name": reg,
             "image": registry_image, "command": ["serve", "/etc/docker/registry/config.yml"],
             "network": "host", "mounts": mounts, "env": env},
            {"id": hold_id, "type": "container", "module": "registry", "name": hold,
             "image": busybox, "network": "none", "schedule": "0 3 * * *",
             "command": ["sh", "-c", "sleep 8; echo done > /var/lib/registry/step-marker"],
             "mounts": [{"source": storage, "target": "/var/lib/registry"}],
             "while-stopped": ["registry"], "timeout": 120},
        ])
    };
    let d1 = w.declaration("d1.json", resources(json!({})));
    let out = w.mesh(&["apply", &d1, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(w.running(&reg));
    let reg_id = w.inspect(&reg, "{{.Id}}");

    // The window of `hold` opens (the registry stopped) and its step runs.
    let child: Child = w.mesh_spawn(&["run", &hold_id, "--local"], Some(&d1));
    wait_for(
        "the step to run with the registry held",
        Duration::from_secs(30),
        || {
            let step_runs = w
                .node
                .docker(&["inspect", "-f", "{{.State.Running}}", &hold]);
            (step_runs.stdout.starts_with(b"true") && !w.running(&reg)).then_some(())
        },
    );

    // An apply that changes the held registry arrives meanwhile (events
    // counted from the next whole second: the window's own stop is before).
    let since = stamp();
    let out = apply(
        &w,
        "d2.json",
        resources(json!({"REGISTRY_LOG_LEVEL": "debug"})),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let held = stdout(&out)
        .lines()
        .find(|l| l.starts_with("registry "))
        .map(str::to_string)
        .unwrap_or_default();
    assert!(
        held.starts_with(&format!(
            "registry held-still: held by the window of {hold_id}"
        )),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains(&format!("window {hold_id} open since")),
        "{}",
        stdout(&out)
    );
    assert!(
        w.node
            .docker(&["inspect", "-f", "{{.State.Running}}", &hold])
            .stdout
            .starts_with(b"true"),
        "the window was still open when the apply ended"
    );
    let events = w.events(&since, &[&reg]);
    assert!(
        events.is_empty(),
        "Docker saw the held registry touched during the window: {events:?}"
    );
    assert!(!w.running(&reg));
    assert_eq!(w.inspect(&reg, "{{.Id}}"), reg_id, "not recreated");

    // The window closes: the registry runs again, the step's work intact.
    let run = child.wait_with_output().expect("mesh-host run");
    assert!(run.status.success(), "mesh-host run: {}", stdout(&run));
    assert!(w.running(&reg));
    assert_eq!(w.inspect(&hold, "{{.State.ExitCode}}"), "0");
    assert_eq!(
        std::fs::read_to_string(w.path("storage/step-marker")).expect("the step's output"),
        "done\n"
    );

    // The first apply after the window converges the registry.
    let out = w.mesh(&["apply", &w.path("d2.json"), "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        has_line(&out, "registry recreated: env changed"),
        "{}",
        stdout(&out)
    );
    assert!(w.running(&reg));
    assert!(w
        .inspect(&reg, "{{json .Config.Env}}")
        .contains("REGISTRY_LOG_LEVEL=debug"));
    wait_for("the registry to serve", Duration::from_secs(20), || {
        let probe = format!("curl -fsS http://127.0.0.1:{port}/v2/");
        w.node.sh(&probe).status.success().then_some(())
    });
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_pull_from_the_held_registry_waits_for_the_window_to_close() {
    let mut w = World::new("apply-pullwait");
    let reg = w.name("registry");
    let hold = w.name("hold");
    let app = w.name("app");
    let maker = w.name("maker");
    let registry_image = w.node.image("registry");
    let busybox = w.busybox();
    let port = free_port();
    let storage = w.path("storage");
    let config = w.path("config.yml");
    std::fs::create_dir_all(&storage).expect("storage");
    std::fs::write(
        &config,
        format!("version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: /var/lib/registry\nhttp:\n  addr: 127.0.0.1:{port}\n"),
    )
    .expect("config");
    w.node.docker_ok(&["pull", &registry_image]);
    w.node.docker_ok(&["pull", &busybox]);
    let registry = json!({"id": "registry", "type": "container", "module": "registry", "name": reg,
        "image": registry_image, "command": ["serve", "/etc/docker/registry/config.yml"],
        "network": "host", "mounts": [
            {"source": storage, "target": "/var/lib/registry", "read-only": false},
            {"source": config, "target": "/etc/docker/registry/config.yml", "read-only": true}]});
    let step = json!({"id": "hold-pull", "type": "container", "module": "registry", "name": hold,
        "image": busybox, "network": "none", "schedule": "0 3 * * *",
        "command": ["sleep", "8"], "while-stopped": ["registry"], "timeout": 120});
    let out = apply(&w, "d1.json", json!([registry.clone(), step.clone()]));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));

    // An image only the held registry serves, absent from Docker's store.
    let tagged = format!("127.0.0.1:{port}/{}:1", w.prefix);
    w.node.docker_ok(&[
        "run",
        "--name",
        &maker,
        "--network",
        "none",
        &busybox,
        "sh",
        "-c",
        &format!("echo {} > /unique", w.prefix),
    ]);
    w.node.docker_ok(&["commit", &maker, &tagged]);
    wait_for(
        "the registry to take a push",
        Duration::from_secs(20),
        || {
            w.node
                .docker(&["push", &tagged])
                .status
                .success()
                .then_some(())
        },
    );
    let digests = w.node.docker_ok(&[
        "image",
        "inspect",
        "-f",
        "{{range .RepoDigests}}{{println .}}{{end}}",
        &tagged,
    ]);
    let pinned = digests
        .lines()
        .find(|d| d.starts_with(&format!("127.0.0.1:{port}/")))
        .expect("a digest from the held registry")
        .to_string();
    w.node.docker_ok(&["rmi", &tagged]);
    assert!(
        !w.node
            .docker(&["image", "inspect", &pinned])
            .status
            .success(),
        "absent before"
    );

    // The window opens: the registry the image lives in is held.
    let child = w.mesh_spawn(&["run", "hold-pull", "--local"], Some(&w.path("d1.json")));
    wait_for("the registry to be held", Duration::from_secs(30), || {
        (w.running(&hold) && !w.running(&reg)).then_some(())
    });
    // An apply that needs that image now waits for the window, then pulls.
    let since = stamp();
    let app_res = json!({"id": "app", "type": "container", "name": app, "image": pinned,
        "command": ["sh", "-c", SERVICE_CMD], "network": "none"});
    let out = apply(&w, "d2.json", json!([registry, step, app_res]));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        has_line(&out, "app created: image pulled"),
        "{}",
        stdout(&out)
    );
    assert!(w.running(&app));
    let run = child.wait_with_output().expect("mesh-host run");
    assert!(run.status.success(), "{}", stdout(&run));
    // Docker's order: the registry came back before the app was created.
    let events = w.events(&since, &[&reg, &app]);
    let reg_up = events.iter().position(|(n, a)| n == &reg && a == "start");
    let app_made = events.iter().position(|(n, a)| n == &app && is_made(a));
    assert!(
        reg_up.is_some() && app_made.is_some() && reg_up < app_made,
        "{events:?}"
    );
    let _ = w.node.docker(&["rmi", "-f", &pinned]);
}

/// Wait at most 90 s for a spawned mesh-host; kill it (and fail) if it hangs.
fn finish(mut child: Child, what: &str) -> Output {
    let status = wait_for(what, Duration::from_secs(90), || {
        child.try_wait().expect("try_wait")
    });
    let mut out = child.wait_with_output().expect("output");
    out.status = status;
    eprintln!(
        "{what} -> {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_file_the_container_writes_is_no_configuration_and_a_fifo_or_link_fails_fast() {
    let mut w = World::new("apply-reads");
    let web = w.name("web");
    let db = w.path("srv/data/db");
    std::fs::create_dir_all(w.path("srv/data")).expect("mkdir");
    std::fs::write(&db, b"").expect("db file");
    let conf_dir = w.path("srv/conf");
    let conf = w.path("srv/conf/app.conf");
    let resources = |extra: Value| {
        let mut svc = service(&w, "web", &web);
        svc["command"] = json!([
            "sh",
            "-c",
            "trap 'exit 0' TERM; while :; do date >> /data/db; sleep 1; done"
        ]);
        svc["mounts"] = json!([
            {"source": db, "target": "/data/db", "read-only": false},
            {"source": conf_dir, "target": "/conf", "read-only": true}
        ]);
        let mut all = vec![
            json!({"id": "confdir", "type": "directory", "path": conf_dir}),
            json!({"id": "conf", "type": "file", "path": conf, "content": "a=1\n"}),
        ];
        if !extra.is_null() {
            all.push(extra);
        }
        all.push(svc);
        Value::Array(all)
    };
    let out = apply(&w, "d.json", resources(Value::Null));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let id = w.inspect(&web, "{{.Id}}");
    wait_for(
        "the container to write its database",
        Duration::from_secs(30),
        || (std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0) > 0).then_some(()),
    );

    // The read-write file changed under it: the same container.
    let since = stamp();
    let out = apply(&w, "d.json", resources(Value::Null));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(has_line(&out, "web unchanged"), "{}", stdout(&out));
    assert!(w.events(&since, &[&web]).is_empty());
    assert_eq!(w.inspect(&web, "{{.Id}}"), id);

    // A FIFO planted where its declared configuration file is: the apply
    // ends (it would wait for a writer for ever), failing both lines.
    std::fs::remove_file(&conf).expect("rm");
    w.node.sh_ok(&format!("mkfifo {}", quote(&conf)));
    let decl = w.declaration("d.json", resources(Value::Null));
    let child = w.mesh_spawn(&["apply", &decl, "--local"], None);
    let out = finish(child, "apply with a FIFO in the mounted directory");
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(&format!("web failed: {conf} is a FIFO, not a regular file")),
        "{}",
        stdout(&out)
    );
    assert_eq!(w.inspect(&web, "{{.Id}}"), id, "left as it was");
    assert!(w.running(&web));
    std::fs::remove_file(&conf).expect("rm fifo");

    // A link out of the mounted directory on the way to a declared file.
    let outside = w.path("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(format!("{outside}/x.conf"), b"secret").expect("write");
    std::os::unix::fs::symlink(&outside, w.path("srv/conf/sub")).expect("link");
    let sub_file = json!({"id": "sub", "type": "file", "path": w.path("srv/conf/sub/x.conf"),
                          "content": "b=2\n"});
    let out = apply(&w, "d.json", resources(sub_file));
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let expected = format!(
        "web failed: {} is a symbolic link under the mounted directory {conf_dir}",
        w.path("srv/conf/sub")
    );
    assert!(stdout(&out).contains(&expected), "{}", stdout(&out));
    assert_eq!(
        std::fs::read(format!("{outside}/x.conf")).expect("read"),
        b"secret",
        "nothing written through the link"
    );
    assert_eq!(w.inspect(&web, "{{.Id}}"), id);
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn apply_local_installs_the_node_declaration_that_run_and_plan_then_use() {
    let gc_id = support::unique_step_id("gc");
    let mut w = World::new("apply-installs");
    let web = w.name("web");
    let gc = w.name("gc");
    let node_decl = w.path("declaration.json");
    assert!(!std::path::Path::new(&node_decl).exists());
    let file = w.declaration(
        "elsewhere.json",
        json!([
            service(&w, "web", &web),
            {"id": gc_id, "type": "container", "name": gc, "image": w.busybox(),
             "command": ["true"], "network": "none", "schedule": "0 3 * * *",
             "while-stopped": ["web"], "timeout": 60}
        ]),
    );
    let out = w.mesh(&["apply", &file, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(
        std::fs::read(&node_decl).expect("installed"),
        std::fs::read(&file).expect("FILE")
    );
    assert_eq!(
        std::fs::metadata(&node_decl)
            .expect("meta")
            .permissions()
            .mode()
            & 0o7777,
        0o600
    );
    // run and plan find the step FILE declared, in the node's declaration.
    let out = w.mesh(&["plan", &gc_id, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let out = w.run_local(&gc_id);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(w.running(&web), "its window closed");
    let out = w.mesh(&["status", "--local"]);
    assert!(
        stdout(&out).contains(&format!("declaration: {node_decl}")),
        "{}",
        stdout(&out)
    );
    // A refused FILE changes nothing, the node's declaration included.
    let before = std::fs::read(&node_decl).expect("installed");
    let bad = w.declaration("bad.json", json!([{"id": "x", "type": "nothing"}]));
    let out = w.mesh(&["apply", &bad, "--local"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert_eq!(std::fs::read(&node_decl).expect("installed"), before);
    assert!(w.running(&web));
}

// ------------------------------------------------------------------------
// Concurrent creates (docs/apply.md "Concurrency"): services declared next
// to each other are converged several at a time; the orderings the contract
// needs are checked here through Docker's own event stream.

/// The ids of a report's lines, in order.
fn line_ids(out: &Output) -> Vec<String> {
    stdout(out)
        .lines()
        .take_while(|l| !l.starts_with("apply ") && !l.starts_with("window "))
        .filter_map(|l| l.split(' ').next().map(str::to_string))
        .collect()
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn concurrent_creates_report_in_order_and_a_run_once_gates_what_follows() {
    let mut w = World::new("apply-gate");
    w.pulled_busybox();
    let before: Vec<String> = (1..=10).map(|i| w.name(&format!("b{i}"))).collect();
    let after: Vec<String> = (1..=10).map(|i| w.name(&format!("a{i}"))).collect();
    let gate = w.name("gate");
    let mut resources = Vec::new();
    for (i, name) in before.iter().enumerate() {
        resources.push(service(&w, &format!("b{}", i + 1), name));
    }
    // Long enough that a service created beside it would show in between.
    resources.push(json!({"id": "gate", "type": "container", "name": gate,
        "image": w.busybox(), "command": ["sh", "-c", "sleep 2; exit 0"],
        "network": "none", "run-once": true, "timeout": 60}));
    for (i, name) in after.iter().enumerate() {
        resources.push(service(&w, &format!("a{}", i + 1), name));
    }
    let since = stamp();
    let out = apply(&w, "d.json", json!(resources));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));

    // The report keeps declaration order, whatever order the creates ended in.
    let mut expected: Vec<String> = (1..=10).map(|i| format!("b{i}")).collect();
    expected.push("gate".to_string());
    expected.extend((1..=10).map(|i| format!("a{i}")));
    assert_eq!(line_ids(&out), expected, "{}", stdout(&out));
    for id in expected.iter().filter(|id| *id != "gate") {
        assert!(has_line(&out, &format!("{id} created")), "{}", stdout(&out));
    }
    for name in before.iter().chain(&after) {
        assert!(w.running(name), "{name} runs");
    }

    // Docker saw: every service before the gate started before the gate was
    // created; every service after it created only after the gate died.
    let mut names: Vec<&str> = before.iter().chain(&after).map(String::as_str).collect();
    names.push(&gate);
    let events = w.events(&since, &names);
    let gate_created = first_made(&events, &gate);
    let gate_died = first(&events, &gate, "die");
    for name in &before {
        assert!(
            first(&events, name, "start") < gate_created,
            "{name} started after the run-once began: {events:?}"
        );
    }
    for name in &after {
        assert!(
            first_made(&events, name) > gate_died,
            "{name} was created before the run-once ended: {events:?}"
        );
    }
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_failure_among_concurrent_creates_fails_alone_and_a_failing_run_once_halts() {
    let mut w = World::new("apply-midfail");
    w.pulled_busybox();
    let before: Vec<String> = (1..=8).map(|i| w.name(&format!("b{i}"))).collect();
    let after: Vec<String> = (1..=4).map(|i| w.name(&format!("a{i}"))).collect();
    let migrate = w.name("migrate");
    // A container mesh-host does not manage holds the name of b4: its
    // create fails, the batch around it goes on.
    w.run_service(&before[3], &[]);
    let foreign_id = w.inspect(&before[3], "{{.Id}}");
    let mut resources = Vec::new();
    for (i, name) in before.iter().enumerate() {
        resources.push(service(&w, &format!("b{}", i + 1), name));
    }
    resources.push(
        json!({"id": "migrate", "type": "container", "name": migrate,
        "image": w.busybox(), "command": ["sh", "-c", "exit 4"],
        "network": "none", "run-once": true, "timeout": 60}),
    );
    for (i, name) in after.iter().enumerate() {
        resources.push(service(&w, &format!("a{}", i + 1), name));
    }
    let out = apply(&w, "d.json", json!(resources));
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let mut expected: Vec<String> = (1..=8).map(|i| format!("b{i}")).collect();
    expected.push("migrate".to_string());
    expected.extend((1..=4).map(|i| format!("a{i}")));
    assert_eq!(
        line_ids(&out),
        expected,
        "every decided line in order: {}",
        stdout(&out)
    );
    let text = stdout(&out);
    // What follows the halt was decided and is reported not reached.
    for i in 1..=4 {
        assert!(
            has_line(
                &out,
                &format!("a{i} not-reached: the apply halted at migrate before it (it was to be created)")
            ),
            "{text}"
        );
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("b4 failed: a container named") && l.contains("does not manage")),
        "{text}"
    );
    assert!(has_line(&out, "migrate failed: exit status 4"), "{text}");
    assert!(
        text.contains("halted at migrate (exit status 4); 4 resource(s) after it not applied"),
        "{text}"
    );
    for (i, name) in before.iter().enumerate() {
        if i != 3 {
            assert!(has_line(&out, &format!("b{} created", i + 1)), "{text}");
            assert!(w.running(name), "{name} runs");
        }
    }
    assert_eq!(
        w.inspect(&before[3], "{{.Id}}"),
        foreign_id,
        "the foreign container is left alone"
    );
    for name in &after {
        assert!(
            !w.exists(name),
            "{name} after the failed run-once is not created"
        );
    }
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn restart_on_follows_the_file_it_names_among_concurrent_services() {
    let mut w = World::new("apply-restarton");
    w.pulled_busybox();
    let conf = w.path("etc/app.conf");
    let watchers: Vec<String> = (1..=6).map(|i| w.name(&format!("w{i}"))).collect();
    let other = w.name("other");
    let resources = |content: &str| {
        let mut all = vec![json!({"id": "conf", "type": "file", "path": conf, "content": content})];
        for (i, name) in watchers.iter().enumerate() {
            let mut svc = service(&w, &format!("w{}", i + 1), name);
            svc["restart-on"] = json!(["conf"]);
            all.push(svc);
        }
        all.push(service(&w, "other", &other));
        json!(all)
    };
    let out = apply(&w, "d1.json", resources("v=1\n"));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let ids_before: Vec<String> = watchers.iter().map(|n| w.inspect(n, "{{.Id}}")).collect();
    let other_started = w.inspect(&other, "{{.State.StartedAt}}");

    let since = stamp();
    let out = apply(&w, "d2.json", resources("v=2\n"));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(has_line(&out, "conf updated: content changed"), "{text}");
    for i in 1..=6 {
        assert!(
            has_line(&out, &format!("w{i} started: restart-on: {conf} changed")),
            "{text}"
        );
    }
    assert!(has_line(&out, "other unchanged"), "{text}");
    // Restarted, not recreated, each after the file was written.
    let written = std::fs::metadata(&conf)
        .expect("conf")
        .modified()
        .expect("mtime");
    let written: chrono::DateTime<chrono::Utc> = written.into();
    for (name, id) in watchers.iter().zip(&ids_before) {
        assert_eq!(&w.inspect(name, "{{.Id}}"), id, "{name} restarted in place");
        let started: chrono::DateTime<chrono::Utc> = w
            .inspect(name, "{{.State.StartedAt}}")
            .parse()
            .expect("StartedAt");
        assert!(
            started > written,
            "{name} started again after {conf} was written"
        );
        assert!(w.running(name));
    }
    assert_eq!(w.inspect(&other, "{{.State.StartedAt}}"), other_started);
    let mut names: Vec<&str> = watchers.iter().map(String::as_str).collect();
    names.push(&other);
    let events = w.events(&since, &names);
    for name in &watchers {
        let died = first(&events, name, "die");
        assert!(first(&events, name, "start") > died, "{events:?}");
    }
    assert!(
        !events.iter().any(|(n, _)| n == &other),
        "the service without restart-on was not touched: {events:?}"
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_window_opening_during_a_concurrent_apply_waits_for_it_and_closes() {
    let mut w = World::new("apply-winrace");
    w.pulled_busybox();
    let services: Vec<String> = (1..=16).map(|i| w.name(&format!("s{i}"))).collect();
    let step = w.name("step");
    let mut resources = Vec::new();
    for (i, name) in services.iter().enumerate() {
        let mut svc = service(&w, &format!("s{}", i + 1), name);
        svc["module"] = json!("m");
        resources.push(svc);
    }
    // The step holds the services the apply creates first and last.
    resources.push(
        json!({"id": "step", "type": "container", "module": "m", "name": step,
        "image": w.busybox(), "command": ["sh", "-c", "sleep 1; exit 0"],
        "network": "none", "schedule": "0 3 * * *", "timeout": 60,
        "while-stopped": ["s1", "s16"]}),
    );
    let decl = w.declaration("declaration.json", json!(resources));
    let since = stamp();
    let applying = w.mesh_spawn(&["apply", &decl, "--local"], Some(&decl));
    // The window is asked for as soon as the apply is under way.
    wait_for(
        "the apply to create a container",
        Duration::from_secs(30),
        || services.iter().any(|n| w.exists(n)).then_some(()),
    );
    let running = w.mesh_spawn(&["run", "step", "--local"], Some(&decl));
    let applied = applying.wait_with_output().expect("apply");
    let ran = running.wait_with_output().expect("run");
    assert_eq!(applied.status.code(), Some(0), "{}", stdout(&applied));
    assert!(ran.status.success(), "run: {}", stdout(&ran));
    let text = stdout(&applied);
    for i in 1..=16 {
        assert!(
            text.lines().any(|l| l == format!("s{i} created")),
            "the window did not open during the apply, so nothing was held: {text}"
        );
    }
    for name in &services {
        assert!(w.running(name), "{name} runs after the window closed");
    }
    // Docker saw the window's first stop only after the apply's last start.
    let mut names: Vec<&str> = services.iter().map(String::as_str).collect();
    names.push(&step);
    let events = w.events(&since, &names);
    let last_start = services
        .iter()
        .map(|n| first(&events, n, "start"))
        .max()
        .expect("starts");
    let first_stop =
        first(&events, &services[0], "stop").min(first(&events, &services[15], "stop"));
    assert!(
        first_stop > last_start,
        "the window stopped a service while the apply was creating: {events:?}"
    );
    assert!(first(&events, &step, "start") > first_stop);
    let restarted = events
        .iter()
        .rposition(|(n, a)| n == &services[0] && a == "start")
        .expect("s1 started again");
    assert!(restarted > first(&events, &step, "die"), "{events:?}");
    let records = std::fs::read_dir(w.dir.join("state/windows"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(records, 0, "no window record is left");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_declared_health_check_reaches_docker_and_a_changed_one_recreates() {
    let mut w = World::new("apply-health");
    let web = w.name("web");
    let resources = |health: Value| {
        let mut svc = service(&w, "web", &web);
        svc["health"] = health;
        json!([svc])
    };
    let check = json!({"command": ["test", "-d", "/tmp"], "interval": 2, "timeout": 1,
                       "retries": 4, "start-period": 7});
    let out = apply(&w, "d1.json", resources(check.clone()));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let config: Value =
        serde_json::from_str(&w.inspect(&web, "{{json .Config.Healthcheck}}")).expect("json");
    assert_eq!(
        config,
        json!({"Test": ["CMD", "test", "-d", "/tmp"], "Interval": 2_000_000_000_u64,
               "Timeout": 1_000_000_000_u64, "StartPeriod": 7_000_000_000_u64, "Retries": 4})
    );
    wait_for("web healthy", Duration::from_secs(30), || {
        (w.inspect(&web, "{{.State.Health.Status}}") == "healthy").then_some(())
    });
    let id_before = w.inspect(&web, "{{.Id}}");
    // The same check again: unchanged; `status` lists it.
    let out = apply(&w, "d1.json", resources(check));
    assert!(has_line(&out, "web unchanged"), "{}", stdout(&out));
    assert_eq!(w.inspect(&web, "{{.Id}}"), id_before);
    let status = stdout(&w.mesh(&["status", "--local"]));
    assert!(
        status.contains(&format!(
            "health web ({web}): [\"test\",\"-d\",\"/tmp\"], every 2 s, timeout 1 s, 4 retries, start period 7 s"
        )),
        "{status}"
    );

    // Another command: recreated, naming the field, and Docker runs the new one.
    let changed = json!({"command": ["test", "-e", "/etc/passwd"], "interval": 3});
    let out = apply(&w, "d2.json", resources(changed));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    // Gated on the new check: kept once it said healthy.
    assert!(
        stdout(&out)
            .lines()
            .any(|l| l.starts_with("web recreated: health changed; healthy after ")),
        "{}",
        stdout(&out)
    );
    assert_ne!(w.inspect(&web, "{{.Id}}"), id_before);
    assert_eq!(
        w.inspect(&web, "{{json .Config.Healthcheck.Test}}"),
        r#"["CMD","test","-e","/etc/passwd"]"#
    );
    assert_eq!(w.inspect(&web, "{{.Config.Healthcheck.Interval}}"), "3s");

    // "none": the check is disabled, and that too is a change of identity.
    let out = apply(&w, "d3.json", resources(json!("none")));
    assert!(
        has_line(&out, "web recreated: health changed"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        w.inspect(&web, "{{json .Config.Healthcheck.Test}}"),
        r#"["NONE"]"#
    );
    assert_eq!(w.inspect(&web, "{{if .State.Health}}checked{{end}}"), "");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn an_apply_killed_before_naming_a_container_leaves_it_unnamed_and_the_next_apply_makes_it() {
    // A service of network `none` is made under its making name, given its
    // /etc/hosts, then renamed (docs/apply.md). The apply is SIGKILLed in
    // between (a pause injected in debug builds): nothing runs under the
    // declared name, and the next apply clears what was left and makes it.
    let mut w = World::new("naming");
    let web = w.name("web");
    let making = mesh_host::runtime::making_name(&web);
    let decl = w.declaration(
        "d.json",
        json!([{"id": "web", "type": "container", "name": web, "image": w.busybox(),
                "network": "none",
                "command": ["sh", "-c", format!("ping -c 1 -W 2 localhost && {SERVICE_CMD}")]}]),
    );
    w.pulled_busybox();
    let killed = w.mesh_spawn_faulted(
        &format!("pause-before-naming:{web}"),
        &["apply", &decl, "--local"],
        Some(&decl),
    );
    wait_for("the making container", Duration::from_secs(60), || {
        w.exists(&making).then_some(())
    });
    let state = w.path("state");
    let pattern = format!("[a]pply {decl} --local --state-dir {state}");
    w.node
        .sh_ok(&format!("pkill -KILL -f -- {}", quote(&pattern)));
    finish(killed, "the killed apply");
    assert!(!w.exists(&web), "{web} exists");
    assert_eq!(
        w.inspect(
            &making,
            "{{.State.Status}} {{index .Config.Labels \"mesh-host.made-as\"}}"
        ),
        format!("created {web}")
    );

    let out = w.mesh(&["apply", &decl, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(has_line(&out, "web created"), "{}", stdout(&out));
    w.wait_running("web to run", &web);
    assert!(!w.exists(&making), "{making} is left");
    // Its /etc/hosts is in: localhost answered before it began to serve.
    let logs = w.node.docker_ok(&["logs", &web]);
    assert!(logs.contains("1 packets received"), "{logs}");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn an_apply_removes_what_an_interrupted_create_left_once_past_the_grace_and_only_its_own() {
    // What a create killed before its rename leaves (docs/apply.md): a
    // managed container under the making name, made as its name, never
    // started. An apply removes it once it is past the grace (ten minutes;
    // shortened here by MESH_HOST_MAKING_GRACE_SECS, debug builds), if the
    // name is this state's; one made as a name this state never had stays.
    let mut w = World::new("leftover");
    let web = w.name("web");
    let theirs = w.name("theirs");
    let img = w.pulled_busybox();
    let decl = w.declaration("d.json", json!([service(&w, "web", &web)]));
    let out = w.mesh(&["apply", &decl, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let left = |name: &str| {
        let making = mesh_host::runtime::making_name(name);
        w.node.docker_ok(&[
            "create",
            "--name",
            &making,
            "--label",
            "mesh-host.managed=true",
            "--label",
            &format!("mesh-host.made-as={name}"),
            "--network",
            "none",
            &img,
            "true",
        ]);
        making
    };
    let (web_left, theirs_left) = (left(&web), left(&theirs));

    // Younger than the grace: a create may still be making it.
    let out = w.mesh(&["apply", &decl, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(w.exists(&web_left) && w.exists(&theirs_left));

    let mut args = vec!["MESH_HOST_MAKING_GRACE_SECS=0".to_string(), w.bin.clone()];
    args.extend(w.mesh_args(&["apply", &decl, "--local"], Some(&decl)));
    let out = w.node.command("env", &args).output().expect("apply");
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(has_line(&out, "web unchanged"), "{}", stdout(&out));
    assert!(!w.exists(&web_left), "{web_left} is left");
    assert!(
        w.exists(&theirs_left),
        "{theirs_left}, not this state's, is removed"
    );
    assert!(w.running(&web));
}
