//! A recreate gated on health (CONTRACT, "Updates and rollback"), on the
//! sandbox node's real runtime: a healthy replacement goes through; one
//! whose health check fails is rolled back within its bound, the old
//! container running with its volume's data and the alert in the journal;
//! the same declaration again is not retried; an apply SIGKILLed while it
//! judges the new container leaves one running, and the next apply
//! finishes the roll back with the data kept. Each check reads the
//! runtime (`docker inspect`, `docker exec`) and the journal, not the
//! report alone.

mod support;

use std::process::{Child, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::world::{World, SERVICE_CMD};
use support::{quote, stdout, wait_for};

/// `web` of `image` (which declares `VOLUME /data`), with `env` and a
/// health check running `check` every second, put back after
/// `rollback_after` seconds.
/// A probe may take 10 s: on a loaded node Podman's exec of `true` has
/// passed 1 s, and one timed-out probe is `unhealthy` at one retry.
fn service(name: &str, image: &str, env: &str, check: &[&str], retries: u32, after: u64) -> Value {
    json!({"id": "web", "type": "container", "name": name, "image": image,
           "env": {"MESH_TEST": env}, "command": ["sh", "-c", SERVICE_CMD],
           "network": "none",
           "health": {"command": check, "interval": 1, "timeout": 10, "retries": retries},
           "rollback-after": after})
}

fn healthy(name: &str, image: &str, env: &str) -> Value {
    service(name, image, env, &["true"], 1, 30)
}

fn other(w: &World) -> Value {
    json!({"id": "dir", "type": "directory", "path": w.path("srv")})
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

/// A service running `healthy` with `kept` written in its volume: the
/// world, its name, its volume (removed when the test ends).
fn serving(tag: &str) -> (World, String, String, support::Cleanup) {
    let mut w = World::new(tag);
    let web = w.name("web");
    let image = w.volume_image("a");
    let decl = w.declaration("d1.json", json!([other(&w), healthy(&web, &image, "1")]));
    let out = w.mesh(&["apply", &decl, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    w.wait_running("web to run", &web);
    w.node
        .docker_ok(&["exec", &web, "sh", "-c", "echo kept > /data/mark"]);
    let volume = w
        .inspect(
            &web,
            "{{range .Mounts}}{{if eq .Destination \"/data\"}}{{.Name}}{{end}}{{end}}",
        )
        .trim()
        .to_string();
    assert_eq!(volume.len(), 64, "{volume}");
    let rm = w.node.on_drop(format!(
        "docker volume rm -f {} >/dev/null 2>&1; true",
        quote(&volume)
    ));
    (w, web, image, rm)
}

/// The old definition runs under `web`, with its data.
fn old_one_runs(w: &World, web: &str) {
    w.wait_running("the old web to run again", web);
    assert!(
        w.inspect(web, "{{json .Config.Env}}")
            .contains("MESH_TEST=1"),
        "{}",
        w.inspect(web, "{{json .Config.Env}}")
    );
    let mark = w
        .node
        .docker_ok(&["exec", web, "cat", "/data/mark"])
        .trim()
        .to_string();
    assert_eq!(mark, "kept");
    let replaced = mesh_host::runtime::replaced_name(web);
    assert!(!w.exists(&replaced), "{replaced} is left");
}

/// How many containers of `web` (under its name or set aside) run.
fn running_count(w: &World, web: &str) -> usize {
    let replaced = mesh_host::runtime::replaced_name(web);
    [web, replaced.as_str()]
        .iter()
        .filter(|n| w.running(n))
        .count()
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_healthy_replacement_goes_through_and_the_old_container_is_removed() {
    let (w, web, image, _rm) = serving("rb-healthy");
    let decl = w.declaration("d2.json", json!([other(&w), healthy(&web, &image, "2")]));
    let diff = w.mesh(&["diff", &decl, "--local"]);
    assert!(
        line(&diff, "web").contains("(health-gated, rollback-after 30 s)"),
        "{}",
        stdout(&diff)
    );
    let out = w.mesh(&["apply", &decl, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        line(&out, "web").starts_with("web recreated: env changed; healthy after "),
        "{}",
        stdout(&out)
    );
    assert_eq!(w.inspect(&web, "{{.State.Health.Status}}"), "healthy");
    assert!(w
        .inspect(&web, "{{json .Config.Env}}")
        .contains("MESH_TEST=2"));
    let mark = w.node.docker_ok(&["exec", &web, "cat", "/data/mark"]);
    assert_eq!(mark.trim(), "kept");
    assert!(!w.exists(&mesh_host::runtime::replaced_name(&web)));
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_replacement_whose_check_fails_is_rolled_back_and_not_retried() {
    let (w, web, image, _rm) = serving("rb-failing");
    let id_before = w.inspect(&web, "{{.Id}}");
    let failing = service(&web, &image, "2", &["false"], 2, 10);
    let decl = w.declaration("d2.json", json!([other(&w), failing]));
    let began = Instant::now();
    let out = w.mesh(&["apply", &decl, "--local"]);
    let took = began.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let said = line(&out, "web");
    assert!(
        said.starts_with("web failed: rolled back: not healthy after "),
        "{}",
        stdout(&out)
    );
    // Its check says unhealthy after two failures a second apart, within
    // the bound of 10 s; only a judge that never ends, not a loaded
    // machine, reaches two minutes.
    assert!(took < Duration::from_secs(120), "took {took:?}");
    old_one_runs(&w, &web);
    assert_eq!(w.inspect(&web, "{{.Id}}"), id_before, "the same container");
    // journald takes the entry asynchronously.
    let journal = wait_for("the alert in the journal", Duration::from_secs(30), || {
        let j = w.journal(&["MESH_EVENT=rollout-rolled-back", "-p", "alert"]);
        j.contains(&format!("{web} runs its previous definition again"))
            .then_some(j)
    });
    assert!(
        journal.contains("rolled back: web (not healthy after ")
            && journal.contains(&format!("{web} runs its previous definition again")),
        "{journal}"
    );

    // The same declaration again: not tried (no container made), and
    // status needs attention.
    let again = w.mesh(&["apply", &decl, "--local"]);
    assert_eq!(again.status.code(), Some(1), "{}", stdout(&again));
    assert!(
        line(&again, "web").contains("not tried again until the declaration changes it"),
        "{}",
        stdout(&again)
    );
    assert_eq!(w.inspect(&web, "{{.Id}}"), id_before);
    let status = w.mesh(&["status", "--local"]);
    assert_eq!(status.status.code(), Some(3), "{}", stdout(&status));
    assert!(
        stdout(&status).contains(&format!("container {web} (web) was rolled back")),
        "{}",
        stdout(&status)
    );

    // A new definition is tried again, and goes through.
    let decl = w.declaration("d3.json", json!([other(&w), healthy(&web, &image, "3")]));
    let out = w.mesh(&["apply", &decl, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(w
        .inspect(&web, "{{json .Config.Env}}")
        .contains("MESH_TEST=3"));
}

fn finish(mut child: Child, what: &str) {
    let status = child.wait().expect("wait");
    assert!(!status.success(), "{what} was not killed: {status}");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn an_apply_killed_while_judging_leaves_one_running_and_the_next_apply_rolls_back() {
    let (w, web, image, _rm) = serving("rb-killed");
    // Never unhealthy by its own count (100 failures), never healthy: the
    // bound of 15 s decides.
    let slow = service(&web, &image, "2", &["false"], 100, 15);
    let decl = w.declaration("d2.json", json!([other(&w), slow]));
    let replaced = mesh_host::runtime::replaced_name(&web);
    let killed = w.mesh_spawn(&["apply", &decl, "--local"], Some(&decl));
    wait_for(
        "the new web running beside the old one set aside",
        Duration::from_secs(60),
        || {
            (w.exists(&replaced)
                && w.running(&web)
                && w.inspect(&web, "{{json .Config.Env}}")
                    .contains("MESH_TEST=2"))
            .then_some(())
        },
    );
    std::thread::sleep(Duration::from_secs(2));
    let state = w.path("state");
    let pattern = format!("[a]pply {decl} --local --state-dir {state}");
    w.node
        .sh_ok(&format!("pkill -KILL -f -- {}", quote(&pattern)));
    finish(killed, "the apply");
    assert_eq!(running_count(&w, &web), 1, "exactly one runs");
    assert_eq!(w.inspect(&replaced, "{{.State.Running}}"), "false");

    let out = w.mesh(&["apply", &decl, "--local"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        line(&out, "web").starts_with("web failed: rolled back: not healthy after "),
        "{}",
        stdout(&out)
    );
    old_one_runs(&w, &web);
    assert_eq!(running_count(&w, &web), 1);
}

/// Push a busybox image declaring `VOLUME /data` (and `health`, a
/// Dockerfile HEALTHCHECK line, if any) to `REPO:TAG` of the node's
/// registry, replacing what the tag pointed to: `(REPO:TAG, digest)`.
fn push_to_tag(w: &World, tag: &str, variant: &str, health: Option<&str>) -> (String, String) {
    let repo = format!("{}/busybox-update", w.node.registry());
    let tagged = format!("{repo}:{tag}");
    // `docker commit --change` takes no HEALTHCHECK: a build (the
    // classic builder, from the image present) does.
    let dockerfile = format!(
        "FROM {}\nVOLUME [\"/data\"]\nENV MESH_VARIANT={variant}\n{}\n",
        w.busybox(),
        health.unwrap_or("")
    );
    let script = format!(
        "unset DOCKER_HOST; set -e; docker pull -q {busybox} >/dev/null; \
         printf '%s' {dockerfile} | DOCKER_BUILDKIT=0 docker build -q -t {t} - >/dev/null; \
         docker push -q {t} >/dev/null; \
         docker image inspect -f '{{{{range .RepoDigests}}}}{{{{println .}}}}{{{{end}}}}' {t} \
           | grep -m1 '^{repo}@sha256:' | sed 's/.*@//'; docker rmi {t} >/dev/null",
        busybox = quote(&w.busybox()),
        dockerfile = quote(&dockerfile),
        t = quote(&tagged),
    );
    let digest = w.node.sh_ok(&script).trim().to_string();
    assert!(digest.starts_with("sha256:"), "{digest}");
    (tagged, digest)
}

/// Whether container `name` was made from the image `push_to_tag` built
/// as `variant`.
fn runs_variant(w: &World, name: &str, variant: &str) -> bool {
    w.inspect(name, "{{range .Config.Env}}{{println .}}{{end}}")
        .lines()
        .any(|l| l == format!("MESH_VARIANT={variant}"))
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn update_follows_a_moved_tag_and_a_rolled_back_one_puts_the_old_digest_back() {
    let mut w = World::new("rb-update");
    let web = w.name("web");
    let tag = format!("{}-web", w.name("t"));
    let (tagged, first) = push_to_tag(&w, &tag, "1", None);
    let svc = |digest: &str| {
        json!({"id": "web", "type": "container", "name": web,
               "image": format!("{tagged}@{digest}"), "update": "registry",
               "command": ["sh", "-c", SERVICE_CMD], "network": "none",
               "rollback-after": 5})
    };
    let decl = w.declaration("d.json", json!([other(&w), svc(&first)]));
    let out = w.mesh(&["apply", &decl, "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));

    // Nothing moved: the file is left as it is.
    let out = w.mesh(&["update", &decl, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(answer["moved"], json!([]), "{answer}");
    assert_eq!(answer["left"][0]["why"], "current", "{answer}");

    // A healthy new image on the tag: moved, written, applied.
    let (_, second) = push_to_tag(&w, &tag, "2", Some("HEALTHCHECK --interval=1s CMD true"));
    let out = w.mesh(&["update", &decl, "--apply", "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(&format!("web: {tagged} moved {first} -> {second}")),
        "{}",
        stdout(&out)
    );
    let written = std::fs::read_to_string(&decl).expect("read");
    assert!(written.contains(&second), "{written}");
    let previous = std::fs::read_to_string(format!("{decl}.previous")).expect("previous");
    assert!(previous.contains(&first), "{previous}");
    // The image each variant was built with (Podman's `Config.Image` drops
    // the digest: the variant's own variable tells them apart on both).
    assert!(runs_variant(&w, &web, "2"));

    // One whose own check fails: rolled back, the file back on the
    // digest that runs, and the next update skips the refused one.
    let (_, third) = push_to_tag(
        &w,
        &tag,
        "3",
        Some("HEALTHCHECK --interval=1s --retries=1 CMD false"),
    );
    let out = w.mesh(&["update", &decl, "--apply", "--local"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(runs_variant(&w, &web, "2"));
    w.wait_running("web to run again", &web);
    let written = std::fs::read_to_string(&decl).expect("read");
    assert!(
        written.contains(&second) && !written.contains(&third),
        "{written}"
    );
    let journal = wait_for("the alert in the journal", Duration::from_secs(30), || {
        let j = w.journal(&["MESH_EVENT=rollout-rolled-back"]);
        j.contains("rolled back: web").then_some(j)
    });
    assert!(journal.contains("rolled back: web"), "{journal}");
    let out = w.mesh(&["update", &decl, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(answer["moved"], json!([]), "{answer}");
    assert_eq!(answer["left"][0]["why"], "refused", "{answer}");
}
