//! The Ansible collection (`contrib/ansible/ansible_collections/meshhost/
//! node`, CONTRACT "Fleets") driving several real nodes at once: a pinned
//! `ansible` from the Python registry, in a virtual environment this test
//! makes, reaches each node through `community.docker.nsenter` (the
//! namespaces of its systemd). Each node has its own host name, Docker,
//! journal, daemon unit, state directory and declaration. The role starts
//! the daemons; the declaration module then applies everywhere, changes
//! nothing the second time, previews in check mode without Docker seeing
//! anything happen, and a rolling apply stops at the node that refuses.
//!
//! The nodes: `MESH_FLEET_NODES`, the env files of two or more nodes
//! booted with `MESH_NODE_HOSTNAME` (tests/run boots them).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};
use support::daemon_unit::DaemonUnit;
use support::world::World;
use support::Node;

/// The `ansible` release the test runs (and its `ansible-core`).
const ANSIBLE: &str = "ansible==9.13.0";
const ANSIBLE_CORE: &str = "ansible-core==2.16.14";

fn fleet() -> Vec<Node> {
    let Some(files) = std::env::var_os("MESH_FLEET_NODES") else {
        panic!(
            "MESH_FLEET_NODES is not set: this test needs two or more nodes side by side; \
             tests/run boots them (MESH_NODE_HOSTNAME=fleet-a tests/node/node up, ...)"
        );
    };
    let nodes: Vec<Node> = files
        .to_string_lossy()
        .split_whitespace()
        .map(|f| Node::from_file(Path::new(f)))
        .collect();
    assert!(nodes.len() >= 2, "two nodes at least: {files:?}");
    nodes
}

/// The virtual environment with the pinned `ansible`, made once and kept
/// beside the build (a second run reuses it).
fn ansible_venv() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ansible-9.13.0");
    let ready = dir.join("ready");
    if ready.exists() {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    let run = |cmd: &mut Command| {
        let out = cmd.output().expect("run");
        assert!(
            out.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(Command::new("python3").args(["-m", "venv"]).arg(&dir));
    // --no-compile: the package's tens of thousands of modules are not
    // compiled to bytecode at install (10 s of CPU against 32, measured
    // on a fresh venv); Python compiles the few a playbook imports when
    // it first runs.
    run(Command::new(dir.join("bin/pip")).args([
        "install",
        "--quiet",
        "--no-compile",
        "--disable-pip-version-check",
        ANSIBLE,
        ANSIBLE_CORE,
    ]));
    std::fs::write(&ready, "").expect("mark");
    dir
}

/// One node of the fleet, its daemon a unit of its own (installed, not
/// started: the role starts it).
struct Member {
    w: World,
    daemon: DaemonUnit,
    host: String,
}

/// A service of `node`'s busybox, serving nothing, named `name`.
fn service(id: &str, name: &str, image: &str) -> Value {
    json!({"id": id, "type": "container", "module": "fleet", "name": name, "image": image,
           "command": ["sleep", "3600"], "network": "none"})
}

struct Fleet {
    members: Vec<Member>,
    venv: PathBuf,
    dir: PathBuf,
}

impl Fleet {
    fn new() -> Fleet {
        let venv = ansible_venv();
        let members: Vec<Member> = fleet()
            .into_iter()
            .map(|node| {
                let host = node.sh_ok("hostname").trim().to_string();
                let w = World::on(node, "fleet");
                w.pulled_busybox();
                let daemon = DaemonUnit::install(&w, "");
                Member { w, daemon, host }
            })
            .collect();
        let hosts: Vec<&str> = members.iter().map(|m| m.host.as_str()).collect();
        let mut unique = hosts.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            hosts.len(),
            "each node its own host name: {hosts:?}"
        );
        let dir = members[0].w.dir.join("ansible");
        std::fs::create_dir_all(&dir).expect("dir");
        let fleet = Fleet { members, venv, dir };
        fleet.write_inventory();
        fleet
    }

    fn write_inventory(&self) {
        let mut hosts = serde_json::Map::new();
        for m in &self.members {
            let mut env = json!({
                "MESH_HOST_STATE_DIR": m.w.path("state"),
                "MESH_HOST_DECLARATION": m.w.path("declaration.json"),
                "MESH_HOST_CONTROL_SOCKET": m.w.path("control.sock"),
            });
            if let Some(h) = m.w.node.docker_host() {
                env["DOCKER_HOST"] = json!(h);
            }
            hosts.insert(
                m.host.clone(),
                json!({
                    "ansible_connection": "community.docker.nsenter",
                    "ansible_nsenter_pid": m.w.node.pid(),
                    "ansible_python_interpreter": "/usr/bin/python3",
                    "mesh_env": env,
                    "mesh_host_service": m.daemon.unit,
                    "mesh_host_service_enabled": false,
                    "mesh_host_declaration_path": m.w.path("declaration.json"),
                    "mesh_host_executable": m.w.bin,
                    "busybox": m.w.busybox(),
                }),
            );
        }
        let inventory = json!({"all": {"hosts": hosts}});
        std::fs::write(
            self.dir.join("inventory.json"),
            serde_json::to_vec_pretty(&inventory).expect("json"),
        )
        .expect("inventory");
    }

    /// `ansible-playbook PLAYBOOK` with `args`, the JSON callback's answer.
    fn play(&self, playbook: &str, args: &[&str]) -> (Output, Value) {
        let collections = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/ansible");
        let out = Command::new(self.venv.join("bin/ansible-playbook"))
            .arg("-i")
            .arg(self.dir.join("inventory.json"))
            .arg(self.dir.join(playbook))
            .args(args)
            .env("ANSIBLE_COLLECTIONS_PATH", &collections)
            .env("ANSIBLE_STDOUT_CALLBACK", "ansible.posix.json")
            .env("ANSIBLE_HOST_KEY_CHECKING", "False")
            .env("ANSIBLE_LOCAL_TEMP", self.dir.join("tmp"))
            .env("ANSIBLE_REMOTE_TMP", "/tmp/.ansible-fleet")
            .output()
            .expect("ansible-playbook");
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "ansible-playbook said no JSON ({e}):\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out, answer)
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.dir.join(name), text).expect("write");
    }

    /// The declaration of each member, by host name, as the playbook
    /// reads it (`decl_<host>.json`).
    fn declare(&self, each: impl Fn(&Member) -> Vec<Value>) {
        for m in &self.members {
            let decl = json!({"declaration": 1, "resources": each(m)});
            self.write(
                &format!("decl_{}.json", m.host),
                &serde_json::to_string_pretty(&decl).expect("json"),
            );
        }
    }
}

/// Docker's container events on `node` between two [`support::world::stamp`]s.
fn container_events(node: &Node, since: &str, until: &str) -> String {
    node.docker_ok(&[
        "events",
        "--since",
        since,
        "--until",
        until,
        "--filter",
        "type=container",
        "--format",
        "{{.Action}} {{.Actor.Attributes.name}}",
    ])
}

/// `stats[host][key]` of the JSON callback.
fn stat(answer: &Value, host: &str, key: &str) -> u64 {
    answer["stats"][host][key].as_u64().unwrap_or(0)
}

/// The results of task `name`, by host.
fn results<'a>(answer: &'a Value, name: &str) -> Vec<(&'a String, &'a Value)> {
    answer["plays"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| p["tasks"].as_array().into_iter().flatten())
        .filter(|t| t["task"]["name"] == name)
        .flat_map(|t| t["hosts"].as_object().into_iter().flatten())
        .collect()
}

const SETUP: &str = r#"
- name: Install and start mesh-host
  hosts: all
  gather_facts: false
  environment: "{{ mesh_env }}"
  roles:
    - role: meshhost.node.mesh_host
      vars:
        mesh_host_declaration: {"declaration": 1, "resources": []}
"#;

const APPLY: &str = r#"
- name: Apply each node's declaration
  hosts: all
  gather_facts: false
  environment: "{{ mesh_env }}"
  tasks:
    - name: Apply
      meshhost.node.declaration:
        src: "decl_{{ inventory_hostname }}.json"
        executable: "{{ mesh_host_executable }}"
    - name: Status
      meshhost.node.status:
        executable: "{{ mesh_host_executable }}"
"#;

const ROLL: &str = r#"
- name: Roll the declaration one node at a time
  hosts: all
  gather_facts: false
  serial: 1
  max_fail_percentage: 0
  environment: "{{ mesh_env }}"
  tasks:
    - name: Apply
      meshhost.node.declaration:
        src: "decl_{{ inventory_hostname }}.json"
        executable: "{{ mesh_host_executable }}"
"#;

#[test]
#[ignore = "needs two sandbox nodes side by side: run tests/run"]
fn a_fleet_is_rolled_checked_stopped_where_it_fails_and_its_alerts_gathered() {
    let fleet = Fleet::new();
    the_collection_builds_and_documents_itself(&fleet);
    fleet.write("setup.yml", SETUP);
    fleet.write("apply.yml", APPLY);
    fleet.write("roll.yml", ROLL);
    let hosts: Vec<String> = fleet.members.iter().map(|m| m.host.clone()).collect();

    // The role starts every daemon.
    let (out, answer) = fleet.play("setup.yml", &[]);
    assert!(out.status.success(), "{answer:#}");
    for m in &fleet.members {
        assert!(m.daemon.active(), "{} runs its daemon", m.host);
    }

    // A first apply everywhere: each node's own service made.
    let web = |m: &Member| format!("{}-web", m.w.prefix);
    fleet.declare(|m| vec![service("web", &web(m), &m.w.busybox())]);
    let (out, answer) = fleet.play("apply.yml", &[]);
    assert!(out.status.success(), "{answer:#}");
    for m in &fleet.members {
        assert_eq!(stat(&answer, &m.host, "changed"), 1, "{answer:#}");
        assert!(m.w.running(&web(m)), "{}: Docker runs {}", m.host, web(m));
    }
    let status = results(&answer, "Status");
    assert_eq!(status.len(), hosts.len());
    for (_, r) in status {
        assert!(r["ansible_facts"]["mesh_host"].is_object(), "{r:#}");
    }

    // Again: nothing changes anywhere.
    let (out, answer) = fleet.play("apply.yml", &[]);
    assert!(out.status.success(), "{answer:#}");
    for h in &hosts {
        assert_eq!(stat(&answer, h, "changed"), 0, "{h}: {answer:#}");
    }

    // Check mode with a changed declaration: each node says what it would
    // do, with the diff, and Docker on each sees nothing happen.
    let cache = |m: &Member| format!("{}-cache", m.w.prefix);
    fleet.declare(|m| {
        vec![
            service("web", &web(m), &m.w.busybox()),
            service("cache", &cache(m), &m.w.busybox()),
        ]
    });
    let since = support::world::stamp();
    let (out, answer) = fleet.play("apply.yml", &["--check", "--diff"]);
    assert!(out.status.success(), "{answer:#}");
    let until = support::world::stamp();
    let checked = results(&answer, "Apply");
    assert_eq!(checked.len(), hosts.len(), "{answer:#}");
    for (host, r) in checked {
        assert_eq!(r["changed"], true, "{host}: {r:#}");
        // The plan: each line and the steps the apply would take.
        let plan = r["diff"][1]["after"].as_str().unwrap_or_default();
        assert!(plan.contains("cache created"), "{host}: {r:#}");
        let member = fleet.members.iter().find(|m| &m.host == host);
        let step = format!(
            "  - create container {}\n",
            member.map(cache).unwrap_or_default()
        );
        assert!(plan.contains(&step), "{host} lacks {step:?}: {r:#}");
        assert!(
            r["diff"][0]["after"]
                .as_str()
                .unwrap_or_default()
                .contains("-cache"),
            "{host}: {r:#}"
        );
    }
    for m in &fleet.members {
        let events = container_events(&m.w.node, &since, &until);
        assert!(events.trim().is_empty(), "{}: Docker saw {events}", m.host);
        assert!(!m.w.exists(&cache(m)), "{}", m.host);
    }

    // A rolling apply of a declaration the first node refuses (an
    // env-file only the second node has, in its own /run): it stops
    // there, and the second node is untouched.
    let env_file = format!("/run/{}-env", fleet.members[0].w.prefix);
    let second = &fleet.members[1];
    second
        .w
        .node
        .sh_ok(&format!("echo GREETING=hello > {env_file}"));
    fleet.declare(|m| {
        let mut s = service("web", &web(m), &m.w.busybox());
        s["env-files"] = json!([env_file]);
        vec![s]
    });
    let since = support::world::stamp();
    let (out, answer) = fleet.play("roll.yml", &[]);
    let until = support::world::stamp();
    assert!(!out.status.success(), "{answer:#}");
    let first = &fleet.members[0];
    assert_eq!(stat(&answer, &first.host, "failures"), 1, "{answer:#}");
    let applied: Vec<&String> = results(&answer, "Apply")
        .into_iter()
        .map(|(h, _)| h)
        .collect();
    assert_eq!(applied, [&first.host], "the roll stopped at {}", first.host);
    let events = container_events(&second.w.node, &since, &until);
    assert!(
        events.trim().is_empty(),
        "{}: Docker saw {events}",
        second.host
    );
    assert!(second.w.running(&web(second)));
    let _ = second.w.node.sh(&format!("rm -f {env_file}"));

    steps_are_fired_suspended_and_resumed(&fleet, second, &web(second));

    alerts_are_gathered_centrally(&fleet);
    the_role_installs_the_package_it_is_given(&fleet);
}

const STEPS: &str = r#"
- name: Fire, suspend and resume a step
  hosts: all
  gather_facts: false
  environment: "{{ mesh_env }}"
  tasks:
    - name: Fire
      meshhost.node.step:
        name: "{{ step }}"
        executable: "{{ mesh_host_executable }}"
    - name: Suspend
      meshhost.node.step:
        name: "{{ step }}"
        state: suspended
        executable: "{{ mesh_host_executable }}"
    - name: Suspend again
      meshhost.node.step:
        name: "{{ step }}"
        state: suspended
        executable: "{{ mesh_host_executable }}"
    - name: Status
      meshhost.node.status:
        executable: "{{ mesh_host_executable }}"
    - name: Resume
      meshhost.node.step:
        name: "{{ step }}"
        state: resumed
        executable: "{{ mesh_host_executable }}"
"#;

/// The step module on one node: a fire that holds its service, a
/// suspension changed once and then found as it is, the status facts
/// saying so, a resume.
fn steps_are_fired_suspended_and_resumed(fleet: &Fleet, m: &Member, held: &str) {
    let gc = format!("{}-nightly", m.w.prefix);
    let decl = json!({"declaration": 1, "resources": [
        service("web", held, &m.w.busybox()),
        {"id": "nightly", "type": "container", "module": "fleet", "name": gc,
         "image": m.w.busybox(), "command": ["true"], "network": "none",
         "schedule": "0 3 1 1 *", "while-stopped": ["web"], "timeout": 60}
    ]});
    fleet.write(
        &format!("decl_{}.json", m.host),
        &serde_json::to_string_pretty(&decl).expect("json"),
    );
    let (out, answer) = fleet.play("apply.yml", &["--limit", &m.host]);
    assert!(out.status.success(), "{answer:#}");
    fleet.write("steps.yml", STEPS);
    let (out, answer) = fleet.play("steps.yml", &["--limit", &m.host, "-e", "step=nightly"]);
    assert!(out.status.success(), "{answer:#}");
    let changed = |task: &str| {
        let r = results(&answer, task);
        assert_eq!(r.len(), 1, "{task}: {answer:#}");
        r[0].1["changed"].as_bool().unwrap_or(false)
    };
    assert!(changed("Fire"), "{answer:#}");
    assert!(changed("Suspend"));
    assert!(!changed("Suspend again"), "a suspended step stays as it is");
    assert!(changed("Resume"));
    let status = &results(&answer, "Status")[0].1["ansible_facts"]["mesh_host"];
    let step = status["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["step"] == "nightly"))
        .unwrap_or_else(|| panic!("no step nightly in {status:#}"));
    assert!(step["suspended-since"].is_string(), "{step:#}");
    // The fire's figures, read from its unit's cgroup, are in the facts.
    assert_eq!(step["last-outcome"], "succeeded", "{step:#}");
    assert!(step["last-usage"]["cpu-usec"].is_u64(), "{step:#}");
    assert!(step["last-usage"]["memory-peak-bytes"].is_u64(), "{step:#}");
    assert_eq!(step["last-usage"]["oom-killed"], false, "{step:#}");
    assert!(
        m.w.running(held),
        "the held service runs again after the fire"
    );
}

/// Serialises the runs that install the package on this machine (with
/// tests/package_node.rs and tests/node/demo).
const PACKAGE_LOCK: &str = "/run/lock/mesh-host-package.lock";

const INSTALL: &str = r#"
- name: Install mesh-host from its package and start it
  hosts: all
  gather_facts: false
  roles:
    - role: meshhost.node.mesh_host
      vars:
        mesh_host_package: "{{ package }}"
        mesh_host_declaration: "{{ lookup('file', 'decl_' ~ inventory_hostname ~ '.json') | from_json }}"
        # The package's own paths and unit, over the inventory's test ones.
        mesh_host_declaration_path: /etc/mesh-host/declaration.json
        mesh_host_service: mesh-host.service
        mesh_host_service_enabled: true
        mesh_host_executable: mesh-host
"#;

/// The role on the first node with the .deb `packaging/build` makes of
/// this build: installed, its declaration written, `mesh-host.service`
/// enabled, started and applying it; a second run changes nothing. The
/// nodes share the machine's files, so the package is installed on the
/// machine meanwhile: taken under the package lock, never over a
/// mesh-host already there, and purged whatever happens.
fn the_role_installs_the_package_it_is_given(fleet: &Fleet) {
    let lock = std::fs::File::create(PACKAGE_LOCK).expect("package lock");
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).expect("flock");
    let m = &fleet.members[0];
    let node = &m.w.node;
    let status = node.sh("dpkg-query -W -f '${db:Status-Status}' mesh-host 2>/dev/null");
    let status = String::from_utf8_lossy(&status.stdout).into_owned();
    assert!(
        status.is_empty() || status == "not-installed" || status == "config-files",
        "mesh-host is installed on this machine ({status}): the test would purge it"
    );
    let state = std::fs::read_dir("/var/lib/mesh-host").map_or(0, |d| d.count());
    assert!(
        !Path::new("/etc/mesh-host").exists() && state == 0,
        "a mesh-host's files are on this machine: the test would delete them"
    );
    let _purge = node.on_drop(
        "systemctl stop mesh-host.service >/dev/null 2>&1; \
         apt-get purge -y mesh-host >/dev/null 2>&1; \
         rm -rf /etc/mesh-host /var/lib/mesh-host; systemctl daemon-reload"
            .to_string(),
    );
    let deb = support::package::build_deb(&fleet.dir, &format!("{}-1", env!("CARGO_PKG_VERSION")));

    let svc = format!("{}-pkg", m.w.prefix);
    let _svc = node.on_drop(format!("docker rm -f {svc} >/dev/null 2>&1 || true"));
    fleet.declare(|x| {
        vec![service(
            "pkg",
            &format!("{}-pkg", x.w.prefix),
            &x.w.busybox(),
        )]
    });
    fleet.write("install.yml", INSTALL);
    let args = ["--limit", m.host.as_str(), "-e", &format!("package={deb}")];
    let (out, answer) = fleet.play("install.yml", &args);
    assert!(out.status.success(), "{answer:#}");
    assert!(stat(&answer, &m.host, "changed") >= 3, "{answer:#}");
    let installed = node.sh_ok("dpkg-query -W -f '${db:Status-Status}' mesh-host");
    assert_eq!(installed, "installed");
    assert_eq!(
        node.sh_ok("systemctl is-enabled mesh-host.service").trim(),
        "enabled"
    );
    support::wait_for(
        "the packaged daemon's apply",
        std::time::Duration::from_secs(60),
        || m.w.running(&svc).then_some(()),
    );
    let (out, answer) = fleet.play("install.yml", &args);
    assert!(out.status.success(), "{answer:#}");
    assert_eq!(stat(&answer, &m.host, "changed"), 0, "{answer:#}");
    let others: Vec<&String> = fleet.members[1..].iter().map(|x| &x.host).collect();
    for h in others {
        assert_eq!(stat(&answer, h, "ok"), 0, "{h} is left alone: {answer:#}");
    }
}

/// `ansible-galaxy collection build` packs it, and `ansible-doc` reads
/// every module's documentation.
fn the_collection_builds_and_documents_itself(fleet: &Fleet) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/ansible");
    let out = Command::new(fleet.venv.join("bin/ansible-galaxy"))
        .args(["collection", "build", "--force", "--output-path"])
        .arg(&fleet.dir)
        .arg(root.join("ansible_collections/meshhost/node"))
        .output()
        .expect("ansible-galaxy");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(fleet.dir.join("meshhost-node-0.1.0.tar.gz").exists());
    for module in ["declaration", "step", "status"] {
        let out = Command::new(fleet.venv.join("bin/ansible-doc"))
            .arg(format!("meshhost.node.{module}"))
            .env("ANSIBLE_COLLECTIONS_PATH", &root)
            .output()
            .expect("ansible-doc");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("EXAMPLES") && text.contains("OPTIONS"),
            "{module}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

const JOURNAL: &str = r#"
- name: Ship each node's journal to the collector
  hosts: all
  gather_facts: false
  environment: "{{ mesh_env }}"
  roles:
    - role: meshhost.node.mesh_host
      vars:
        mesh_host_journal_collector: "{{ collector }}"
        # The nodes share the machine's files: the package is there, and
        # the upload's settings go to each node's own /run.
        mesh_host_journal_install: false
        mesh_host_journal_upload_conf_dir: /run/systemd/journal-upload.conf.d
        mesh_host_journal_upload_enabled: false
"#;

/// systemd-journal-remote on the machine, every node's systemd-journal-
/// upload pointed at it by the role, and a node's `WILL NOT START AGAIN`
/// found in the collector's journal with its host name and fields.
fn alerts_are_gathered_centrally(fleet: &Fleet) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let collected = fleet.dir.join("collected");
    std::fs::create_dir_all(&collected).expect("dir");
    let mut collector = Command::new("/lib/systemd/systemd-journal-remote")
        .arg(format!("--listen-http={port}"))
        .arg(format!("--output={}/", collected.display()))
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("systemd-journal-remote (Debian's systemd-journal-remote)");
    struct Stop<'a>(&'a mut std::process::Child);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _collector = Stop(&mut collector);
    // Each node's upload keeps its cursor in a state directory of its
    // own: the nodes share the machine's /var/lib.
    for m in &fleet.members {
        let dropin = format!(
            "/proc/{}/root/run/systemd/system/systemd-journal-upload.service.d",
            m.w.node.pid()
        );
        std::fs::create_dir_all(&dropin).expect("drop-in dir");
        std::fs::write(
            format!("{dropin}/10-fleet-node.conf"),
            format!(
                "[Service]\nStateDirectory=\nStateDirectory=systemd/journal-upload-{0}\n\
                 ExecStart=\nExecStart=/lib/systemd/systemd-journal-upload --save-state=/var/lib/systemd/journal-upload-{0}/state\n",
                m.w.prefix
            ),
        )
        .expect("drop-in");
        m.w.node.sh_ok("systemctl daemon-reload");
    }
    let _stop_uploads: Vec<_> = fleet
        .members
        .iter()
        .map(|m| {
            m.w.node.on_drop(
                "systemctl stop systemd-journal-upload.service; \
                 rm -rf /run/systemd/system/systemd-journal-upload.service.d /run/systemd/journal-upload.conf.d; \
                 systemctl daemon-reload"
                    .to_string(),
            )
        })
        .collect();
    fleet.write("journal.yml", JOURNAL);
    let collector_url = format!("http://127.0.0.1:{port}");
    let (out, answer) = fleet.play(
        "journal.yml",
        &["-e", &format!("collector={collector_url}")],
    );
    assert!(out.status.success(), "{answer:#}");

    // WILL NOT START AGAIN on the second node, for real: its held
    // container's network is removed while a step holds it stopped.
    let m = &fleet.members[1];
    let (node, w) = (&m.w.node, &m.w);
    let net = format!("{}-wnsa", w.prefix);
    node.docker_ok(&["network", "create", &net]);
    let _net = node.on_drop(format!("docker network rm {net}"));
    let svc = format!("{}-held", w.prefix);
    let gc = format!("{}-gc", w.prefix);
    let mut held = service("held", &svc, &w.busybox());
    held["network"] = json!(net);
    let step = json!({"id": gc, "type": "container", "module": "fleet", "name": gc,
        "image": w.busybox(), "command": ["sleep", "3"], "network": "none",
        "schedule": "0 3 1 1 *", "while-stopped": ["held"], "timeout": 300});
    let out = m
        .daemon
        .cli(&["apply", &w.declaration("wnsa.json", json!([held, step]))]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let run = m.daemon.cli_spawn(&["run", &gc]);
    support::wait_for(
        "the held container to stop",
        std::time::Duration::from_secs(30),
        || {
            let s = node.docker_ok(&["inspect", "-f", "{{.State.Running}}", &svc]);
            (s.trim() == "false").then_some(())
        },
    );
    node.docker_ok(&["network", "rm", &net]);
    let out = run.wait_with_output().expect("run");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let entry = support::wait_for(
        "the alert at the collector",
        std::time::Duration::from_secs(60),
        || {
            let out = Command::new("journalctl")
                .arg("-D")
                .arg(&collected)
                .args([
                    "-o",
                    "json",
                    "--no-pager",
                    "MESH_EVENT=will-not-start-again",
                ])
                .output()
                .ok()?;
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find(|e| e["MESH_STEP"] == gc.as_str())
        },
    );
    assert_eq!(entry["_HOSTNAME"], m.host.as_str(), "{entry:#}");
    assert_eq!(entry["MESH_CONTAINER"], svc.as_str(), "{entry:#}");
    assert_eq!(entry["PRIORITY"], "1", "priority alert: {entry:#}");
    assert!(
        entry["MESSAGE"]
            .as_str()
            .unwrap_or_default()
            .contains("WILL NOT START AGAIN"),
        "{entry:#}"
    );
}
