//! A container's options beyond its image (CONTRACT, "Compose"), on the
//! sandbox node's real Docker: what the declaration says is what Docker
//! inspects, and what the process inside sees (its host name, working
//! directory, capabilities, a read-only root, no new privileges, a tmpfs,
//! its ulimits, a namespaced sysctl, an extra host, a device); a changed
//! limit recreates the container and the report names the field; a user
//! given by name is resolved in the image.

mod support;

use serde_json::{json, Value};
use support::declare::text;
use support::world::World;

const LOOP: &str = "trap 'exit 0' TERM; while :; do sleep 1; done";

fn service(name: &str, image: &str, memory: u64) -> Value {
    json!({"id": "svc", "type": "container", "module": "m", "name": name, "image": image,
           "network": "none",
           "entrypoint": ["sh", "-c"], "command": [LOOP],
           "working-dir": "/etc", "hostname": "svc-1",
           "labels": {"com.example.team": "ops"},
           "stop-signal": "SIGINT", "stop-grace": 7, "init": true,
           "cap-drop": ["ALL"], "cap-add": ["NET_ADMIN"],
           "read-only-root": true, "no-new-privileges": true,
           "memory": memory, "memory-reservation": 16777216u64, "cpus": 0.5,
           "pids-limit": 64, "shm-size": 8388608u64,
           "tmpfs": [{"target": "/run/scratch", "size": 1048576u64, "mode": "1770"}],
           "ulimits": {"nofile": {"soft": 512, "hard": 1024}},
           "sysctls": {"kernel.shmmni": "2048"},
           "extra-hosts": {"db.internal": "10.0.0.5"},
           "devices": [{"path": "/dev/zero", "target": "/dev/xzero", "permissions": "r"}]})
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn options_reach_docker_and_the_process_and_a_changed_limit_recreates() {
    let mut w = World::new("options");
    let img = w.pulled_busybox();
    let name = w.name("svc");
    let out = w.apply_local(json!([service(&name, &img, 64 << 20)]));
    assert!(out.status.success(), "{}", text(&out));
    assert!(w.running(&name), "{}", text(&out));

    let inspected = [
        ("{{json .Config.Entrypoint}}", r#"["sh","-c"]"#),
        ("{{.Config.WorkingDir}}", "/etc"),
        ("{{.Config.Hostname}}", "svc-1"),
        ("{{index .Config.Labels \"com.example.team\"}}", "ops"),
        ("{{.Config.StopSignal}}", "SIGINT"),
        ("{{.Config.StopTimeout}}", "7"),
        ("{{.HostConfig.Init}}", "true"),
        ("{{json .HostConfig.CapDrop}}", r#"["ALL"]"#),
        ("{{json .HostConfig.CapAdd}}", r#"["NET_ADMIN"]"#),
        ("{{.HostConfig.ReadonlyRootfs}}", "true"),
        (
            "{{json .HostConfig.SecurityOpt}}",
            r#"["no-new-privileges:true"]"#,
        ),
        ("{{.HostConfig.Memory}}", "67108864"),
        ("{{.HostConfig.MemoryReservation}}", "16777216"),
        ("{{.HostConfig.NanoCpus}}", "500000000"),
        ("{{.HostConfig.PidsLimit}}", "64"),
        ("{{.HostConfig.ShmSize}}", "8388608"),
    ];
    for (format, expected) in inspected {
        assert_eq!(w.inspect(&name, format), expected, "{format}");
    }

    // What the process sees.
    let exec = |script: &str| {
        let out = w.node.docker(&["exec", &name, "sh", "-c", script]);
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
        )
    };
    assert_eq!(exec("hostname"), (true, "svc-1".into()));
    assert_eq!(exec("pwd"), (true, "/etc".into()));
    assert!(!exec("touch /x").0, "the root filesystem is writable");
    assert!(exec("touch /run/scratch/x").0, "the tmpfs is not writable");
    assert_eq!(
        exec("stat -c %a /run/scratch; df -k /run/scratch | tail -n 1 | tr -s ' ' | cut -d' ' -f2"),
        (true, "1770\n1024".into())
    );
    // The limits of the container's own process (PID 1, docker-init, whose
    // child the service is), not of one `docker exec` starts: runc gives
    // an exec'd process its rlimits by prlimit(2) once it runs, racing the
    // Go runtime of `runc init`, which may set its own back (runc#4195,
    // fixed in runc 1.1.13; Debian 12 has 1.1.5): under load one exec in
    // about a hundred read 1024.
    assert_eq!(
        exec("grep 'open files' /proc/1/limits | tr -s ' '"),
        (true, "Max open files 512 1024 files".into())
    );
    assert_eq!(exec("cat /proc/sys/kernel/shmmni"), (true, "2048".into()));
    assert_eq!(
        exec("head -c 3 /dev/xzero | od -An -tx1 | tr -d ' '"),
        (true, "000000".into())
    );
    assert_eq!(
        exec("grep db.internal /etc/hosts | tr -s '\t ' ' '"),
        (true, "10.0.0.5 db.internal".into())
    );
    assert_eq!(
        exec("grep NoNewPrivs /proc/self/status | tr -s '\\t ' ' '"),
        (true, "NoNewPrivs: 1".into())
    );
    // Only CAP_NET_ADMIN (bit 12) is left.
    assert_eq!(
        exec("grep CapEff /proc/self/status | tr -s '\\t ' ' '"),
        (true, "CapEff: 0000000000001000".into())
    );

    // A changed limit: recreated, the field named.
    let id = w.inspect(&name, "{{.Id}}");
    let out = w.apply_local(json!([service(&name, &img, 96 << 20)]));
    let text = text(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("memory changed"), "{text}");
    assert_ne!(w.inspect(&name, "{{.Id}}"), id, "recreated");
    assert_eq!(w.inspect(&name, "{{.HostConfig.Memory}}"), "100663296");
    assert!(w.running(&name));
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_user_by_name_is_resolved_in_the_image_and_one_it_lacks_fails_that_container_alone() {
    let mut w = World::new("user-name");
    let img = w.pulled_busybox();
    let named = w.name("named");
    let missing = w.name("missing");
    let svc = |id: &str, name: &str, user: &str| {
        json!({"id": id, "type": "container", "module": "m", "name": name, "image": img,
               "network": "none", "command": ["sh", "-c", LOOP], "user": user})
    };
    let out = w.apply_local(json!([
        svc("named", &named, "nobody:root"),
        svc("missing", &missing, "no-such-user"),
    ]));
    let text = text(&out);
    assert!(!out.status.success(), "{text}");
    assert!(w.running(&named), "{text}");
    assert_eq!(w.inspect(&named, "{{.Config.User}}"), "nobody:root");
    let id = w.node.docker(&["exec", &named, "id"]);
    // Podman lists no supplementary groups where Docker lists the primary.
    let id = String::from_utf8_lossy(&id.stdout);
    assert!(id.starts_with("uid=65534(nobody) gid=0(root)"), "{id}");
    assert!(!w.running(&missing), "{text}");
    assert!(
        text.contains("no-such-user"),
        "the name is in the reason: {text}"
    );
}

/// `restart` on the real daemon: a `no` service that exits on its own stays
/// exited through the daemon's reconciles (every 2 s here), while a service
/// of the default policy runs on; an `apply` starts it again.
#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_restart_no_service_is_left_exited_by_the_reconcile_and_started_by_an_apply() {
    let mut w = World::new("restart");
    let img = w.pulled_busybox();
    let (once, kept) = (w.name("once"), w.name("kept"));
    let resources = json!([
        {"id": "once", "type": "container", "module": "m", "name": once, "image": img,
         "command": ["sleep", "2"], "network": "none", "restart": "no"},
        {"id": "kept", "type": "container", "module": "m", "name": kept, "image": img,
         "command": ["sleep", "3600"], "network": "none"}
    ]);
    let d = support::daemon_unit::DaemonUnit::started_with_args(
        &w,
        "--reconcile-interval 2 --metrics-file=",
        resources,
    );
    assert_eq!(w.inspect(&once, "{{.HostConfig.RestartPolicy.Name}}"), "no");
    w.wait_stopped("once to exit on its own", &once);
    let exited_at = w.inspect(&once, "{{.State.FinishedAt}}");
    // Several reconciles later: still exited, the same run's end.
    let since = w.journal_now();
    support::wait_for("two reconciles", std::time::Duration::from_secs(30), || {
        let j = d.journal(&since, &["-o", "cat"]);
        (j.matches("apply finished").count() >= 2).then_some(())
    });
    assert!(!w.running(&once), "the reconcile started it again");
    assert_eq!(w.inspect(&once, "{{.State.FinishedAt}}"), exited_at);
    assert!(w.running(&kept));
    // An operator's apply starts it.
    let out = d.cli(&["apply", &w.path("declaration.json")]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("once started"), "{said}");
}
