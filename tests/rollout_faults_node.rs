//! A recreate gated on health with its daemon SIGKILLed at each stage
//! (CONTRACT, "Updates and rollback"), on the sandbox node's real runtime:
//! the daemon runs as a real unit, is stopped at a stage by a pause point
//! (`MESH_HOST_FAULT`, src/fault.rs, read from a file the test removes
//! before the kill), then killed with SIGKILL and started again by systemd
//! (`Restart=on-failure`). Whatever the stage — the replacement recorded,
//! the old container set aside, the new one made, judged, or a roll back
//! about to remove the new one or putting the old one back — once the restarted daemon is ready exactly
//! one of the two containers runs, nothing is left set aside, and the data
//! in its volume is kept. Each check reads the runtime (`docker inspect`,
//! `docker exec`), not a report.
//!
//! The same stages with the node's power cut instead (`outage_power_cut_*`,
//! run on the outage nodes, Docker's and Podman's: `tests/node/node
//! power-cut` kills every process of the node at once and boots it again
//! on the same disk): Docker starts at boot what its restart policy says
//! (Podman nothing: the sandbox runs no podman-restart.service), then the
//! daemon's unit starts as an enabled one does, and the same one container
//! runs with its data.

mod support;

use std::process::Child;
use std::time::Duration;

use serde_json::{json, Value};
use support::daemon_unit::DaemonUnit;
use support::world::{World, SERVICE_CMD};
use support::{quote, wait_for};

/// `web` of `image` (which declares `VOLUME /data`) with `env`, and a
/// health check running `check` every second, put back after `after`
/// seconds.
/// A probe may take 10 s: on a loaded node Podman's exec of `true` has
/// passed 1 s, and one timed-out probe is `unhealthy` at one retry.
fn service(name: &str, image: &str, env: &str, check: &[&str], retries: u32, after: u64) -> Value {
    json!({"id": "web", "type": "container", "name": name, "image": image,
           "env": {"MESH_TEST": env}, "command": ["sh", "-c", SERVICE_CMD],
           "network": "none",
           "health": {"command": check, "interval": 1, "timeout": 10, "retries": retries},
           "rollback-after": after})
}

/// A daemon keeping `web` (definition 1, healthy) with `kept` in its
/// volume, its unit reading `MESH_HOST_FAULT` from `fault.env`.
struct Serving {
    w: World,
    d: DaemonUnit,
    web: String,
    image: String,
    _rm: support::Cleanup,
}

fn serving(tag: &str) -> Serving {
    let mut w = World::new(tag);
    let web = w.name("web");
    let image = w.volume_image("a");
    w.write_declaration(json!([service(&web, &image, "1", &["true"], 1, 30)]));
    let extra = format!("EnvironmentFile=-{}", w.path("fault.env"));
    let d = DaemonUnit::install(&w, &extra);
    d.start();
    w.wait_running("web to run", &web);
    let rm = mark_data(&w, &web);
    Serving {
        w,
        d,
        web,
        image,
        _rm: rm,
    }
}

impl Serving {
    /// Apply `next` through the daemon, stopped at pause point `fault` on
    /// `web`, or, with no fault, once `ready` says so: returns the apply's
    /// client, the daemon held there. The fault file is removed, so the
    /// next daemon runs without it.
    fn reach(&self, fault: Option<&str>, next: Value, ready: impl Fn() -> bool) -> Child {
        let w = &self.w;
        if let Some(fault) = fault {
            std::fs::write(
                w.path("fault.env"),
                format!("MESH_HOST_FAULT={fault}:{}\n", self.web),
            )
            .expect("fault.env");
            // Read at the unit's start only.
            self.d.restart();
        }
        let decl = w.declaration("next.json", json!([next]));
        let client = self.d.cli_spawn(&["apply", &decl]);
        match fault {
            Some(fault) => {
                let pausing = format!("pausing at {fault} in {}", self.web);
                wait_for(
                    "the daemon to stop at its pause point",
                    Duration::from_secs(60),
                    || w.journal(&[]).contains(&pausing).then_some(()),
                );
            }
            None => wait_for(
                "the daemon to reach the stage",
                Duration::from_secs(60),
                || ready().then_some(()),
            ),
        }
        let _ = std::fs::remove_file(w.path("fault.env"));
        client
    }

    /// [`Serving::reach`] the stage, then SIGKILL the daemon, wait for
    /// systemd to have started it again, do `meanwhile`, and wait for its
    /// first apply to have ended (it is ready then).
    fn kill_at(
        &self,
        fault: Option<&str>,
        next: Value,
        ready: impl Fn() -> bool,
        meanwhile: impl FnOnce(),
    ) {
        let mut client = self.reach(fault, next, ready);
        let pid = self.d.main_pid();
        self.w.node.sh_ok(&format!(
            "systemctl kill -s KILL --kill-who=main {}",
            quote(&self.d.unit)
        ));
        let _ = client.kill();
        let _ = client.wait();
        wait_for(
            "systemd to start the daemon again",
            Duration::from_secs(60),
            || {
                let again = self.d.main_pid();
                (again != "0" && again != pid).then_some(())
            },
        );
        meanwhile();
        self.d.wait_active_state("active", Duration::from_secs(120));
    }

    /// [`Serving::reach`] the stage, then cut the node's power, boot it
    /// again, do `meanwhile` (the runtime has started what its restart
    /// policy says by then), and start the daemon as at boot: returns
    /// once its first apply has ended.
    fn cut_at(
        &self,
        fault: Option<&str>,
        next: Value,
        ready: impl Fn() -> bool,
        meanwhile: impl FnOnce(),
    ) {
        let mut client = self.reach(fault, next, ready);
        self.w.node.power_cut();
        let _ = client.kill();
        let _ = client.wait();
        meanwhile();
        self.d.start_after_boot();
    }

    /// Exactly one container of `web` runs, nothing is set aside, it is
    /// definition `env` and its volume has the data.
    fn one_runs(&self, env: &str) {
        let w = &self.w;
        let web = &self.web;
        let replaced = mesh_host::runtime::replaced_name(web);
        assert!(w.running(web), "{web} does not run");
        assert!(!w.exists(&replaced), "{replaced} is left");
        assert!(
            w.inspect(web, "{{json .Config.Env}}")
                .contains(&format!("MESH_TEST={env}")),
            "{}",
            w.inspect(web, "{{json .Config.Env}}")
        );
        let mark = w.node.docker_ok(&["exec", web, "cat", "/data/mark"]);
        assert_eq!(mark.trim(), "kept");
    }

    fn healthy(&self, env: &str) -> Value {
        service(&self.web, &self.image, env, &["true"], 1, 30)
    }
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn rollout_killed_once_the_replacement_is_recorded() {
    let s = serving("rf-recorded");
    s.kill_at(
        Some("pause-after-recording"),
        s.healthy("2"),
        || true,
        || {},
    );
    s.one_runs("2");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn rollout_killed_once_the_old_one_is_set_aside() {
    let s = serving("rf-aside");
    s.kill_at(
        Some("pause-before-replacing"),
        s.healthy("2"),
        || true,
        || {},
    );
    s.one_runs("2");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn rollout_killed_once_the_new_one_is_made_not_started() {
    let s = serving("rf-made");
    s.kill_at(Some("pause-before-judging"), s.healthy("2"), || true, || {});
    s.one_runs("2");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn rollout_killed_while_the_new_one_is_judged() {
    let s = serving("rf-judged");
    // Healthy once /tmp/ok exists in it: starting until the test says.
    let web = s.web.clone();
    let waiting = service(&web, &s.image, "2", &["test", "-e", "/tmp/ok"], 100, 60);
    let replaced = mesh_host::runtime::replaced_name(&web);
    let judged = || {
        s.w.exists(&replaced)
            && s.w.running(&web)
            && s.w
                .inspect(&web, "{{json .Config.Env}}")
                .contains("MESH_TEST=2")
    };
    // The restarted daemon judges it again: it proves itself now.
    let proves = || {
        s.w.node
            .docker_ok(&["exec", &web, "sh", "-c", "touch /tmp/ok"]);
    };
    s.kill_at(None, waiting, judged, proves);
    s.one_runs("2");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn rollout_killed_while_the_old_one_is_put_back() {
    let s = serving("rf-putback");
    let failing = service(&s.web, &s.image, "2", &["false"], 1, 10);
    s.kill_at(Some("pause-before-putting-back"), failing, || true, || {});
    s.one_runs("1");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn rollout_killed_in_a_roll_back_before_the_new_one_is_removed() {
    let s = serving("rf-refused");
    let failing = service(&s.web, &s.image, "2", &["false"], 1, 10);
    s.kill_at(
        Some("pause-before-removing-refused"),
        failing,
        || true,
        || {},
    );
    s.one_runs("1");
}

/// The replacement by definition 2 (never healthy, judged for 8 s) of a
/// `web` applied with `--local`, SIGKILLed while it judges the new
/// container: the old one set aside, the new one running, the record.
fn killed_mid_rollout(tag: &str) -> (World, String, String, support::Cleanup) {
    let (w, web, image, rm) = applied_locally(tag);
    let never = service(&web, &image, "2", &["false"], 100, 8);
    let decl = w.declaration("d2.json", json!([never]));
    let replaced = mesh_host::runtime::replaced_name(&web);
    let killed = w.mesh_spawn(&["apply", &decl, "--local"], Some(&decl));
    wait_for("the new web judged", Duration::from_secs(60), || {
        (w.exists(&replaced)
            && w.running(&web)
            && w.inspect(&web, "{{json .Config.Env}}")
                .contains("MESH_TEST=2"))
        .then_some(())
    });
    kill_local_apply(&w, &decl, killed);
    (w, web, image, rm)
}

/// `web` (definition 1, healthy) applied with `--local`, with `kept` in
/// its volume, which is removed when the returned guard drops.
fn applied_locally(tag: &str) -> (World, String, String, support::Cleanup) {
    let mut w = World::new(tag);
    let web = w.name("web");
    let image = w.volume_image("a");
    let decl = w.declaration(
        "d1.json",
        json!([service(&web, &image, "1", &["true"], 1, 30)]),
    );
    let out = w.mesh(&["apply", &decl, "--local"]);
    assert_eq!(out.status.code(), Some(0));
    w.wait_running("web to run", &web);
    let rm = mark_data(&w, &web);
    (w, web, image, rm)
}

/// Write `kept` into `web`'s volume at /data; the guard removes the
/// volume.
fn mark_data(w: &World, web: &str) -> support::Cleanup {
    w.node
        .docker_ok(&["exec", web, "sh", "-c", "echo kept > /data/mark"]);
    let volume = w
        .inspect(
            web,
            "{{range .Mounts}}{{if eq .Destination \"/data\"}}{{.Name}}{{end}}{{end}}",
        )
        .trim()
        .to_string();
    assert_eq!(volume.len(), 64, "{volume}");
    w.node.on_drop(format!(
        "docker volume rm -f {} >/dev/null 2>&1; true",
        quote(&volume)
    ))
}

/// SIGKILL the `apply DECL --local` that `child` runs, and reap it.
fn kill_local_apply(w: &World, decl: &str, mut child: Child) {
    let pattern = format!("[a]pply {decl} --local --state-dir {}", w.path("state"));
    w.node
        .sh_ok(&format!("pkill -KILL -f -- {}", quote(&pattern)));
    assert!(!child.wait().expect("wait").success());
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn rollout_declaration_changed_mid_way_is_settled_before_replacing() {
    let (w, web, image, _rm) = killed_mid_rollout("rf-changed");
    // The declaration moves on before anything settled the one in flight:
    // it is judged with what is left of its 8 s, put back, and only then
    // is the old one (good all along, with the data) replaced.
    let decl = w.declaration(
        "d3.json",
        json!([service(&web, &image, "3", &["true"], 1, 30)]),
    );
    let out = w.mesh(&["apply", &decl, "--local"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains(
            "web recreated: the interrupted recreate was rolled back first (not healthy after "
        ),
        "{text}"
    );
    let replaced = mesh_host::runtime::replaced_name(&web);
    assert!(w.running(&web));
    assert!(!w.exists(&replaced), "{replaced} is left");
    assert!(w
        .inspect(&web, "{{json .Config.Env}}")
        .contains("MESH_TEST=3"));
    let mark = w.node.docker_ok(&["exec", &web, "cat", "/data/mark"]);
    assert_eq!(mark.trim(), "kept");
}

/// The bound of a health-gated recreate counts the new container's own
/// run: one a kill left made and not started, found long past the bound
/// its replacement began with, is started and judged with its whole
/// bound, and kept once healthy — not rolled back for time it never ran
/// (a slow restart, a node down for the night).
#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn rollout_made_not_started_and_left_past_its_bound_is_started_and_kept() {
    let (w, web, image, _rm) = applied_locally("rf-late");
    // Healthy at its first probe, a second after it starts; 3 s allowed.
    let next = service(&web, &image, "2", &["true"], 1, 3);
    let decl = w.declaration("d2.json", json!([next]));
    let replaced = mesh_host::runtime::replaced_name(&web);
    let killed = w.mesh_spawn_faulted(
        &format!("pause-before-judging:{web}"),
        &["apply", &decl, "--local"],
        Some(&decl),
    );
    wait_for(
        "the new web made, not started",
        Duration::from_secs(60),
        || {
            (w.exists(&replaced)
                && w.exists(&web)
                && !w.running(&web)
                && w.inspect(&web, "{{json .Config.Env}}")
                    .contains("MESH_TEST=2"))
            .then_some(())
        },
    );
    kill_local_apply(&w, &decl, killed);
    // Left past the 3 s its replacement began with.
    std::thread::sleep(Duration::from_secs(5));
    let out = w.mesh(&["apply", &decl, "--local"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("web recreated: "), "{text}");
    assert!(w.running(&web));
    assert!(!w.exists(&replaced), "{replaced} is left");
    assert!(w
        .inspect(&web, "{{json .Config.Env}}")
        .contains("MESH_TEST=2"));
    let mark = w.node.docker_ok(&["exec", &web, "cat", "/data/mark"]);
    assert_eq!(mark.trim(), "kept");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn outage_power_cut_once_the_replacement_is_recorded() {
    let s = serving("pc-recorded");
    s.cut_at(
        Some("pause-after-recording"),
        s.healthy("2"),
        || true,
        || {},
    );
    s.one_runs("2");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn outage_power_cut_once_the_old_one_is_set_aside() {
    let s = serving("pc-aside");
    s.cut_at(
        Some("pause-before-replacing"),
        s.healthy("2"),
        || true,
        || {},
    );
    s.one_runs("2");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn outage_power_cut_once_the_new_one_is_made_not_started() {
    let s = serving("pc-made");
    s.cut_at(Some("pause-before-judging"), s.healthy("2"), || true, || {});
    s.one_runs("2");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn outage_power_cut_while_the_new_one_is_judged() {
    let s = serving("pc-judged");
    let web = s.web.clone();
    let waiting = service(&web, &s.image, "2", &["test", "-e", "/tmp/ok"], 100, 90);
    let replaced = mesh_host::runtime::replaced_name(&web);
    let judged = || {
        s.w.exists(&replaced)
            && s.w.running(&web)
            && s.w
                .inspect(&web, "{{json .Config.Env}}")
                .contains("MESH_TEST=2")
    };
    // At boot Docker starts the new one (its restart policy; Podman starts
    // nothing without podman-restart.service: the daemon's first apply
    // does), never the old one set aside, which mesh-host stopped. The new
    // one proves itself once it runs, while the daemon judges it again.
    let proves = || {
        if s.w.node.runtime() == "docker" {
            wait_for(
                "Docker to start the new web at boot",
                Duration::from_secs(60),
                || s.w.running(&web).then_some(()),
            );
        }
        assert!(!s.w.running(&replaced), "the old web was started at boot");
        let touch = format!(
            "i=0; while [ $i -lt 600 ]; do docker exec {} touch /tmp/ok 2>/dev/null && exit 0; \
             sleep 0.2; i=$((i+1)); done; exit 1",
            quote(&web)
        );
        // Waited for beside the daemon's start: it ends once the touch is
        // done.
        let mut toucher = s.w.node.command("sh", &["-c", &touch]);
        std::thread::spawn(move || toucher.status());
    };
    s.cut_at(None, waiting, judged, proves);
    s.one_runs("2");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn outage_power_cut_in_a_roll_back_before_the_new_one_is_removed() {
    let s = serving("pc-refused");
    let failing = service(&s.web, &s.image, "2", &["false"], 1, 10);
    s.cut_at(
        Some("pause-before-removing-refused"),
        failing,
        || true,
        || {},
    );
    s.one_runs("1");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn outage_power_cut_while_the_old_one_is_put_back() {
    let s = serving("pc-putback");
    let failing = service(&s.web, &s.image, "2", &["false"], 1, 10);
    s.cut_at(Some("pause-before-putting-back"), failing, || true, || {});
    s.one_runs("1");
}
