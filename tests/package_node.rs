//! The packages, for real: `packaging/build` makes the .deb and the .rpm
//! from the test's own binary; the .deb is installed, upgraded while a
//! maintenance window is open, removed while another is open, and purged,
//! with apt-get inside the sandbox node, whose systemd then runs the
//! packaged `mesh-host.service`. The .rpm, which no node here can install,
//! is checked with Debian's `rpm`: its files against the .deb's (both come
//! from one staged tree) and its scriptlets.
//!
//! The node shares this machine's filesystem: while the package is
//! installed, it is installed on the machine (`/usr/bin/mesh-host`,
//! `/etc/mesh-host`, `/var/lib/mesh-host`). A guard purges it whatever
//! happens, and the test refuses to start over a mesh-host installed by
//! someone else. Package runs (this test, `tests/node/demo`) take one lock.

mod support;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{quote, unique_name, wait_for, wait_for_text, Node};

/// Serialises the runs that install the package on this machine.
const PACKAGE_LOCK: &str = "/run/lock/mesh-host-package.lock";
const UNIT: &str = "mesh-host.service";
const STATE: &str = "/var/lib/mesh-host";
const CONFIG_DIR: &str = "/etc/mesh-host";
const DECLARATION: &str = "/etc/mesh-host/declaration.json";
/// The metrics textfile of the packaged daemon (its default).
const METRICS_FILE: &str = "/var/lib/prometheus/node-exporter/mesh-host.prom";
/// `systemd-analyze security mesh-host.service` on systemd 252, as
/// docs/security.md records it: hardening may only get better (2.3 until
/// RestrictSUIDSGID= was dropped so that declared setuid/setgid modes apply).
const SECURITY_EXPOSURE: f64 = 2.5;
const SERVICE_CMD: &str = "trap 'exit 0' TERM; while :; do sleep 1; done";

/// Every file the packages install, as packaging/install.sh stages them,
/// but the man pages and the docs ([`staged`] adds those).
const STAGED: &[&str] = &[
    "/usr/bin/mesh-host",
    "/usr/lib/systemd/system/mesh-host.service",
    "/usr/lib/systemd/system/mesh-host.slice",
    "/usr/lib/systemd/system/mesh-host-alert@.service",
    "/usr/lib/systemd/system/mesh-host-update.service",
    "/usr/lib/systemd/system/mesh-host-update.timer",
    "/usr/lib/systemd/catalog/mesh-host.catalog",
    "/usr/share/mesh-host/prometheus/mesh-host-alerts.yml",
    "/usr/share/mesh-host/grafana/mesh-host.json",
    "/usr/share/lintian/overrides/mesh-host",
    "/usr/share/bash-completion/completions/mesh-host",
    "/usr/share/zsh/vendor-completions/_mesh-host",
    "/usr/share/fish/vendor_completions.d/mesh-host.fish",
    "/usr/share/doc/mesh-host/README.md.gz",
    "/usr/share/doc/mesh-host/copyright",
    "/usr/share/doc/mesh-host/changelog.Debian.gz",
    "/usr/share/doc/mesh-host/examples/README.md",
    "/usr/share/doc/mesh-host/examples/media.json",
    "/usr/share/doc/mesh-host/examples/refused.json",
    "/usr/share/doc/mesh-host/examples/registry.json",
    "/usr/share/doc/mesh-host/examples/webapp.json",
];

/// Every file the packages install: [`STAGED`], a page per man page the
/// binary generates (a new command brings its own), each of docs/*.md.
fn staged() -> Vec<String> {
    let mut out: Vec<String> = STAGED.iter().map(|s| s.to_string()).collect();
    let gen = tempfile::tempdir().expect("tempdir");
    let status = Command::new(env!("CARGO_BIN_EXE_mesh-host"))
        .arg("generate")
        .arg(gen.path())
        .status()
        .expect("mesh-host generate");
    assert!(status.success(), "mesh-host generate");
    let names = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect()
    };
    for page in names(gen.path()) {
        if let Some((_, section)) = page.rsplit_once('.').filter(|(_, s)| s.len() == 1) {
            out.push(format!("/usr/share/man/man{section}/{page}.gz"));
        }
    }
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    for doc in names(&docs).into_iter().filter(|d| d.ends_with(".md")) {
        out.push(format!("/usr/share/doc/mesh-host/docs/{doc}.gz"));
    }
    out.sort();
    out
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn must(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}",
        out.status,
        text(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `apt-get -y ARGS` inside the node. This machine's `policy-rc.d` (it is
/// a container image) forbids starting services, as it should on the
/// machine; a node is a real host, so the maintainer scripts run without
/// it: it is hidden in a mount namespace of this command only.
fn apt(node: &Node, args: &[&str]) -> Output {
    let script = "if [ -e /usr/sbin/policy-rc.d ]; then mount --bind /dev/null /usr/sbin/policy-rc.d; fi; \
                  DEBIAN_FRONTEND=noninteractive exec apt-get -y -q -o DPkg::Lock::Timeout=300 \"$@\"";
    let mut all = vec![
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        "apt",
    ];
    all.extend_from_slice(args);
    let out = node.command("unshare", &all).output().expect("apt-get");
    eprintln!("apt-get {args:?} -> {:?}", out.status.code());
    out
}

/// Installs a tool from Debian's archive on this machine (the node sees it
/// too), updating the package lists once if they are too old.
fn install_from_debian(package: &str) {
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q", "--no-install-recommends", package])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .expect("apt-get")
    };
    if install().status.success() {
        return;
    }
    must(
        Command::new("apt-get")
            .args(["update", "-q"])
            .output()
            .expect("apt-get"),
        "apt-get update",
    );
    must(install(), &format!("apt-get install {package}"));
}

/// The packaged daemon's unit and files, purged whatever the test did.
struct Installed {
    node: Node,
}

impl Drop for Installed {
    fn drop(&mut self) {
        let state = installed_version(&self.node);
        if state.is_empty() || state.starts_with("not-installed") {
            // Purged already.
            return;
        }
        let out = apt(&self.node, &["purge", "mesh-host"]);
        if !out.status.success() {
            eprintln!("purge failed, forcing it:\n{}", text(&out));
            let _ = self.node.sh(
                "dpkg --purge --force-all mesh-host; systemctl stop mesh-host.service; \
                 rm -f /etc/systemd/system/mesh-host.service \
                       /etc/systemd/system/multi-user.target.wants/mesh-host.service; \
                 systemctl daemon-reload",
            );
        }
        let _ = self.node.sh(&format!(
            "systemctl reset-failed {UNIT} 2>/dev/null; rm -rf {STATE} {CONFIG_DIR}"
        ));
    }
}

/// The packages `packaging/build` made.
struct Built {
    deb: PathBuf,
    rpm: Option<PathBuf>,
}

/// `packaging/build` with the test's binary (fast compression), into `out`.
fn build(out: &Path, deb_version: &str, with_rpm: bool) -> Built {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cmd = Command::new(repo.join("packaging/build"));
    cmd.current_dir(repo)
        .args(["--bin", env!("CARGO_BIN_EXE_mesh-host"), "--fast", "--out"])
        .arg(out)
        .args(["--deb-version", deb_version]);
    if !with_rpm {
        cmd.env("MESH_HOST_SKIP_RPM", "1");
    }
    let printed = must(cmd.output().expect("packaging/build"), "packaging/build");
    let find = |ext: &str| {
        printed
            .lines()
            .find(|l| l.ends_with(ext))
            .map(PathBuf::from)
    };
    let deb = find(".deb").unwrap_or_else(|| panic!("packaging/build printed no .deb: {printed}"));
    let rpm = find(".rpm");
    assert_eq!(
        rpm.is_some(),
        with_rpm,
        "packaging/build printed: {printed}"
    );
    Built { deb, rpm }
}

fn container(id: &str, name: &str, image: &str, extra: Value) -> Value {
    let mut c = json!({"id": id, "type": "container", "module": "pkg", "name": name,
                       "image": image, "command": ["sh", "-c", SERVICE_CMD], "network": "none"});
    if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
        c.extend(extra.clone());
    }
    c
}

fn running(node: &Node, name: &str) -> bool {
    node.docker(&["inspect", "-f", "{{.State.Running}}", name])
        .stdout
        .starts_with(b"true")
}

fn open_windows() -> Vec<String> {
    match std::fs::read_dir(Path::new(STATE).join("windows")) {
        Ok(dir) => dir
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// `mesh-host run STEP` through the packaged daemon, in the background,
/// once its window is open (the step runs, the service is held).
fn open_window(node: &Node, step: &str, step_name: &str, held: &str) -> Child {
    let client = node
        .command("/usr/bin/mesh-host", &["run", step])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mesh-host run");
    wait_for(
        "the step to run and hold the service",
        Duration::from_secs(60),
        || {
            (running(node, step_name) && !running(node, held) && !open_windows().is_empty())
                .then_some(())
        },
    );
    client
}

/// The client of a window the daemon's stop ended: it must not hang.
fn reap(mut client: Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = client.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = client.kill();
    let _ = client.wait();
    panic!("mesh-host run still waits 30 s after the daemon stopped");
}

fn installed_version(node: &Node) -> String {
    let out = node.sh("dpkg-query -W -f '${db:Status-Status} ${Version}' mesh-host 2>/dev/null");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn the_deb_installs_upgrades_under_an_open_window_removes_and_purges_and_the_rpm_matches() {
    let started = Instant::now();
    let node = Node::from_env();
    let lock = File::create(PACKAGE_LOCK).expect("package lock");
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).expect("flock");

    // Never over someone's mesh-host: the purge at the end would take it.
    let before = installed_version(&node);
    assert!(
        before.is_empty()
            || before.starts_with("not-installed")
            || before.starts_with("config-files"),
        "mesh-host is installed on this machine ({before}): the test would purge it"
    );
    let left = std::fs::read_dir(STATE).map(|d| d.count()).unwrap_or(0);
    assert_eq!(
        left, 0,
        "{STATE} holds state of a mesh-host: the test would delete it"
    );
    assert!(
        !Path::new(CONFIG_DIR).exists(),
        "{CONFIG_DIR} exists: the test would delete it"
    );

    // Both packages, then a newer .deb of the same build.
    let out = node.state_dir().join("tests").join(unique_name("package"));
    std::fs::create_dir_all(&out).expect("package dir");
    let _out = node.on_drop(format!("rm -rf {}", quote(&out.display().to_string())));
    let skip_rpm = std::env::var_os("MESH_HOST_SKIP_RPM").is_some();
    if skip_rpm {
        // Straight to standard error, not eprintln!: the test harness would
        // hide that from a passing test.
        let _ = writeln!(
            std::io::stderr(),
            "package_node: MESH_HOST_SKIP_RPM is set: the .rpm is NOT built and NOT checked"
        );
    }
    let v1 = format!("{}-1", env!("CARGO_PKG_VERSION"));
    let v2 = format!("{}-1+upgrade1", env!("CARGO_PKG_VERSION"));
    let first = build(&out, &v1, !skip_rpm);
    let second = build(&out, &v2, false);
    let phase = |what: &str| eprintln!("{:>6.1} s  {what}", started.elapsed().as_secs_f64());
    phase("packages built");

    if let Some(rpm) = &first.rpm {
        check_rpm(rpm, &first.deb);
    }

    let prefix = unique_name("pkg");
    let svc = format!("{prefix}-svc");
    let gc = format!("{prefix}-gc");
    // Dropped after the purge guard below: the daemon is gone by then.
    let _containers = node.on_drop(format!(
        "docker rm -f {} {} {} >/dev/null 2>&1 || true",
        quote(&svc),
        quote(&format!("{gc}-upgrade")),
        quote(&format!("{gc}-remove"))
    ));
    if node.sh("command -v man").status.code() != Some(0) {
        install_from_debian("man-db");
    }

    // A node provisioned before the install (cloud-init's write_files, an
    // image build): its declaration is there first. It holds a service and
    // two steps holding it; "upgrade" runs 20 s and exits 0 only at its end
    // (a stop makes it exit 7).
    let img = node.image("busybox");
    let step = |id: &str, script: &str| {
        container(
            id,
            &format!("{gc}-{id}"),
            &img,
            json!({"schedule": "0 3 * * *", "while-stopped": ["svc"], "timeout": 300,
                   "command": ["sh", "-c", script]}),
        )
    };
    let decl = json!({"declaration": 1, "resources": [
        container("svc", &svc, &img, json!({})),
        step("upgrade", "trap 'exit 7' TERM; sleep 20 & wait; exit 0"),
        step("remove", SERVICE_CMD)
    ]});
    let _provisioned = node.on_drop(format!("rm -rf {CONFIG_DIR}"));
    let provisioned = serde_json::to_vec_pretty(&decl).expect("json");
    node.sh_ok(&format!("install -d -m 0755 {CONFIG_DIR}"));
    std::fs::write(DECLARATION, &provisioned).expect("write");
    node.sh_ok(&format!("chmod 0600 {DECLARATION}"));

    // Install, unattended: enabled, started, ready, and it applied what it
    // found, with nothing done by hand.
    let installed = Installed { node: node.clone() };
    let deb1 = first.deb.display().to_string();
    must(
        apt(&node, &["install", "--no-install-recommends", &deb1]),
        "apt-get install",
    );
    phase("installed");
    assert_eq!(installed_version(&node), format!("installed {v1}"));
    let fragment = node.unit_property(UNIT, "FragmentPath");
    assert!(
        fragment.ends_with("/lib/systemd/system/mesh-host.service"),
        "the packaged unit runs, not an override: {fragment}"
    );
    assert_eq!(node.unit_property(UNIT, "Type"), "notify");
    assert_eq!(node.unit_property(UNIT, "ActiveState"), "active");
    assert_eq!(node.unit_property(UNIT, "SubState"), "running");
    assert_eq!(node.unit_property(UNIT, "UnitFileState"), "enabled");
    let status = node.unit_property(UNIT, "StatusText");
    assert!(
        status.contains("last apply") && status.contains(" ok"),
        "{status}"
    );
    assert!(
        running(&node, &svc),
        "the provisioned declaration was applied"
    );
    assert_eq!(
        std::fs::read(DECLARATION).expect("declaration"),
        provisioned,
        "the provisioned declaration is left as it was"
    );
    assert_declaration_mode();
    let man = must(
        node.command("man", &["-w", "mesh-host"])
            .output()
            .expect("man"),
        "man -w",
    );
    assert_eq!(man.trim(), "/usr/share/man/man8/mesh-host.8.gz");
    for f in staged() {
        assert!(Path::new(&f).is_file(), "{f} is not installed");
    }
    let conffiles = must(
        node.command("dpkg-query", &["-W", "-f", "${Conffiles}", "mesh-host"])
            .output()
            .expect("dpkg-query"),
        "dpkg-query",
    );
    assert!(
        !conffiles.contains(DECLARATION),
        "the node's declaration is no conffile: {conffiles}"
    );
    // The exposure docs/security.md records, for the unit as installed.
    let analysis = node.sh_ok("systemd-analyze security --no-pager mesh-host.service");
    let score: f64 = analysis
        .lines()
        .find_map(|l| {
            l.split("Overall exposure level for mesh-host.service: ")
                .nth(1)
        })
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no overall exposure in: {analysis}"));
    assert!(
        score <= SECURITY_EXPOSURE,
        "exposure {score} > {SECURITY_EXPOSURE}:\n{analysis}"
    );
    let catalog = node.sh_ok("journalctl --list-catalog ab50638306cd43f4884b6fefbd280992");
    assert!(
        catalog.contains("WILL NOT START AGAIN"),
        "catalog compiled: {catalog}"
    );

    // `apply FILE` makes another declaration the node's; a reinstall of
    // the same package keeps it.
    let mut applied = decl.clone();
    applied["resources"][0]["env"] = json!({"APPLIED": "1"});
    let applied_file = out.join("applied.json");
    std::fs::write(
        &applied_file,
        serde_json::to_vec_pretty(&applied).expect("json"),
    )
    .expect("write");
    must(
        node.command(
            "/usr/bin/mesh-host",
            &["apply", &applied_file.display().to_string()],
        )
        .output()
        .expect("mesh-host apply"),
        "mesh-host apply FILE",
    );
    let node_declaration = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(DECLARATION).expect("declaration"))
            .expect("json")
    };
    assert_eq!(node_declaration(), applied);
    must(
        apt(
            &node,
            &["install", "--reinstall", "--no-install-recommends", &deb1],
        ),
        "apt-get install --reinstall",
    );
    phase("reinstalled");
    assert_eq!(node_declaration(), applied, "the reinstall kept it");
    assert_declaration_mode();
    assert_eq!(node.unit_property(UNIT, "ActiveState"), "active");
    wait_for(
        "the declared service to run",
        Duration::from_secs(60),
        || running(&node, &svc).then_some(()),
    );
    // The packaged daemon writes its metrics where node-exporter reads them.
    let metrics = wait_for("the metrics file", Duration::from_secs(30), || {
        std::fs::read_to_string(METRICS_FILE).ok()
    });
    assert!(metrics.contains("mesh_host_apply_ok 1\n"), "{metrics}");

    // Upgrade to the next version while the 20 s step holds the service:
    // the step is not cut short, and the new daemon closes its window.
    let since = node.sh_ok("date '+%Y-%m-%d %H:%M:%S'").trim().to_string();
    let old_pid = node.unit_property(UNIT, "MainPID");
    let step_name = format!("{gc}-upgrade");
    let client = open_window(&node, "upgrade", &step_name, &svc);
    phase("window open");
    let deb2 = second.deb.display().to_string();
    must(
        apt(&node, &["install", "--no-install-recommends", &deb2]),
        "apt-get install (upgrade)",
    );
    phase("upgraded");
    // The old daemon's answer to `run` went with it.
    reap(client);
    assert_eq!(installed_version(&node), format!("installed {v2}"));
    assert_eq!(node.unit_property(UNIT, "ActiveState"), "active");
    let new_pid = node.unit_property(UNIT, "MainPID");
    assert_ne!(new_pid, old_pid, "restarted");
    wait_for("the step to end", Duration::from_secs(60), || {
        (!running(&node, &step_name)).then_some(())
    });
    let exit = node.docker_ok(&["inspect", "-f", "{{.State.ExitCode}}", &step_name]);
    assert_eq!(exit.trim(), "0", "the step ran to its end");
    wait_for(
        "the held service to run again",
        Duration::from_secs(60),
        || running(&node, &svc).then_some(()),
    );
    let time = |name: &str, field: &str| {
        let t = node.docker_ok(&["inspect", "-f", &format!("{{{{.State.{field}}}}}"), name]);
        chrono::DateTime::parse_from_rfc3339(t.trim())
            .unwrap_or_else(|e| panic!("{name} {field} {t:?}: {e}"))
    };
    assert!(
        time(&step_name, "FinishedAt") - time(&step_name, "StartedAt")
            >= chrono::Duration::seconds(19),
        "the step ran its 20 s"
    );
    assert!(
        time(&step_name, "FinishedAt") <= time(&svc, "StartedAt"),
        "the held service started after the step ended"
    );
    wait_for("the window record to go", Duration::from_secs(30), || {
        open_windows().is_empty().then_some(())
    });
    let said = node.journal(&["-u", UNIT, "--since", &since, "-o", "cat"]);
    assert!(
        said.contains("handing the window of upgrade over to the next mesh-host"),
        "the old daemon handed the window over: {said}"
    );
    assert!(
        said.contains(&format!(
            "the previous mesh-host (pid {old_pid}) handed over the windows of upgrade"
        )),
        "the new daemon took the window over: {said}"
    );
    // The close is logged once its record is gone: a moment after.
    let new_pid_field = format!("_PID={new_pid}");
    let closed_by_new = || {
        node.journal(&[
            &new_pid_field,
            "MESH_EVENT=window-closed",
            "MESH_STEP=upgrade",
            "-o",
            "cat",
        ])
    };
    wait_for_text(
        "the new daemon's close",
        Duration::from_secs(10),
        closed_by_new,
        |said| said.contains("window of upgrade closed"),
    );
    assert_eq!(node_declaration(), applied, "the upgrade kept it");
    assert_declaration_mode();

    // Remove while a window is open: stopped, nothing left held, state kept.
    let client = open_window(&node, "remove", &format!("{gc}-remove"), &svc);
    phase("window open");
    must(apt(&node, &["remove", "mesh-host"]), "apt-get remove");
    phase("removed");
    reap(client);
    assert_eq!(node.unit_property(UNIT, "ActiveState"), "inactive");
    // Debian's way (dh_installsystemd's): masked until a reinstall or the
    // purge, so the enablement links left behind start nothing.
    let enabled = node.sh("systemctl is-enabled mesh-host.service").stdout;
    assert_eq!(String::from_utf8_lossy(&enabled).trim(), "masked");
    assert!(running(&node, &svc), "no held container is left stopped");
    assert_eq!(
        open_windows(),
        Vec::<String>::new(),
        "no window record is left"
    );
    assert!(
        Path::new(STATE).join("applied.json").is_file(),
        "state is kept on remove"
    );
    assert!(
        Path::new(DECLARATION).is_file(),
        "configuration is kept on remove"
    );
    assert!(!Path::new("/usr/bin/mesh-host").exists());
    assert!(
        !Path::new(METRICS_FILE).exists(),
        "no daemon, no metrics: the file goes with the package"
    );

    // Purge: state, configuration and enablement are gone.
    must(apt(&node, &["purge", "mesh-host"]), "apt-get purge");
    phase("purged");
    for gone in [
        STATE,
        CONFIG_DIR,
        "/etc/systemd/system/mesh-host.service",
        "/etc/systemd/system/multi-user.target.wants/mesh-host.service",
        "/var/lib/systemd/deb-systemd-helper-enabled/mesh-host.service.dsh-also",
    ] {
        assert!(
            !Path::new(gone).exists() && !Path::new(gone).is_symlink(),
            "{gone} is left after purge"
        );
    }
    let after = installed_version(&node);
    assert!(
        after.is_empty() || after.starts_with("not-installed"),
        "{after}"
    );

    // A node with no declaration: the package makes an empty one, 0600,
    // and the purge takes it.
    must(
        apt(&node, &["install", "--no-install-recommends", &deb2]),
        "apt-get install (fresh)",
    );
    phase("installed afresh");
    assert_eq!(
        node_declaration(),
        json!({"declaration": 1, "resources": []})
    );
    assert_declaration_mode();
    must(apt(&node, &["purge", "mesh-host"]), "apt-get purge");
    phase("purged again");
    assert!(!Path::new(CONFIG_DIR).exists(), "{CONFIG_DIR} is left");
    drop(installed);
}

/// The node's declaration is root's, 0600 (it may carry secrets).
fn assert_declaration_mode() {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(DECLARATION).expect("declaration");
    assert_eq!(
        (meta.mode() & 0o7777, meta.uid()),
        (0o600, 0),
        "{DECLARATION}"
    );
}

/// The .rpm: the same files as the .deb (zsh's completion where Fedora's
/// and RHEL's zsh looks; lintian's overrides left out), no %config file, and scriptlets doing what the
/// systemd macros do, making the node's declaration only when there is
/// none, and handing windows over on an upgrade.
fn check_rpm(rpm: &Path, deb: &Path) {
    if Command::new("rpm").arg("--version").output().is_err() {
        install_from_debian("rpm");
    }
    let rpm_q = |args: &[&str]| {
        must(
            Command::new("rpm")
                .args(args)
                .arg(rpm)
                .output()
                .expect("rpm"),
            &format!("rpm {args:?}"),
        )
    };
    let mut rpm_files: Vec<String> = rpm_q(&["-qpl"]).lines().map(str::to_string).collect();
    rpm_files.sort();
    let mut expected: Vec<String> = staged()
        .iter()
        // lintian's overrides are Debian's alone.
        .filter(|f| !f.starts_with("/usr/share/lintian/"))
        .map(|f| f.replace("/zsh/vendor-completions/", "/zsh/site-functions/"))
        .collect();
    expected.sort();
    assert_eq!(rpm_files, expected, "the rpm's files");

    // The .deb's files are the same tree (cargo-deb's copyright and
    // changelog are the staged ones: the same sources, Cargo.toml).
    let listing = must(
        Command::new("dpkg-deb")
            .arg("-c")
            .arg(deb)
            .output()
            .expect("dpkg-deb"),
        "dpkg-deb -c",
    );
    let mut deb_files: Vec<String> = listing
        .lines()
        .filter(|l| !l.starts_with('d'))
        .filter_map(|l| l.split_whitespace().last())
        .map(|p| p.trim_start_matches('.').to_string())
        .collect();
    deb_files.sort();
    assert_eq!(deb_files, staged(), "the deb's files");

    let flags = rpm_q(&[
        "-qp",
        "--qf",
        "[%{FILEFLAGS:fflags} %{FILEMODES:perms} %{FILENAMES}\\n]",
    ]);
    assert!(
        !flags.contains(" /etc/"),
        "no file under /etc: the node's declaration is no %config file: {flags}"
    );
    assert!(
        flags.lines().any(|l| l == " -rwxr-xr-x /usr/bin/mesh-host"),
        "{flags}"
    );

    let scripts = rpm_q(&["-qp", "--scripts"]);
    // `rpm --scripts` prints each as a header line ("postinstall
    // scriptlet (using /bin/sh):") followed by its body.
    let section = |name: &str| -> String {
        let mut body = None::<String>;
        for line in scripts.lines() {
            let header = line.ends_with(':') && line.contains(" scriptlet");
            match (&mut body, header) {
                (None, true) if line.starts_with(&format!("{name} scriptlet")) => {
                    body = Some(String::new())
                }
                (Some(_), true) => break,
                (Some(b), false) => {
                    b.push_str(line);
                    b.push('\n');
                }
                _ => {}
            }
        }
        body.unwrap_or_else(|| panic!("no {name} scriptlet: {scripts}"))
    };
    let pre = section("preinstall");
    assert!(pre.contains(".declaration.json.upgrade"), "{pre}");
    let post = section("postinstall");
    assert!(post.contains("if [ \"$1\" -eq 1 ]"), "{post}");
    assert!(
        post.contains("if [ ! -e \"$decl\" ] && [ ! -L \"$decl\" ]"),
        "the declaration is made only when none exists: {post}"
    );
    let posttrans = section("posttrans");
    assert!(
        posttrans.contains(".declaration.json.upgrade"),
        "{posttrans}"
    );
    assert!(
        post.contains("systemctl --no-reload preset mesh-host.service"),
        "{post}"
    );
    assert!(post.contains("systemctl daemon-reload"), "{post}");
    assert!(post.contains("journalctl --update-catalog"), "{post}");
    let preun = section("preuninstall");
    assert!(preun.contains("if [ \"$1\" -eq 0 ]"), "{preun}");
    assert!(
        preun.contains("systemctl --no-reload disable --now mesh-host.service"),
        "{preun}"
    );
    let postun = section("postuninstall");
    assert!(postun.contains("systemctl daemon-reload"), "{postun}");
    assert!(postun.contains("if [ \"$1\" -ge 1 ]"), "{postun}");
    assert!(
        postun.contains("systemctl try-restart mesh-host.service"),
        "{postun}"
    );
    assert!(
        postun.contains(": >/run/mesh-host/hand-over"),
        "an upgrade hands the windows over: {postun}"
    );
    // Every scriptlet is valid sh.
    for (name, body) in [
        ("pre", &pre),
        ("post", &post),
        ("preun", &preun),
        ("postun", &postun),
        ("posttrans", &posttrans),
    ] {
        let out = Command::new("sh")
            .args(["-n", "-c", body.as_str()])
            .output()
            .expect("sh");
        assert!(
            out.status.success(),
            "%{name} is not valid sh: {}",
            text(&out)
        );
    }
    let requires = rpm_q(&["-qpR"]);
    assert!(
        requires.lines().any(|l| l.trim() == "systemd"),
        "{requires}"
    );
}
