//! `DockerRuntime` against the real Docker of the sandbox node.
//!
//! The node (tests/README.md) runs Docker 20.10 on its own /run/docker.sock
//! (or, on a Podman node, Podman's API on the socket its env file names),
//! reached from here through `/proc/<node pid>/root`. Every container and
//! image a test makes has a name unique to that test run and is removed by a
//! drop guard, pass or fail.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt;
use mesh_host::runtime::{
    making_name, CgroupDriver, ContainerEvent, ContainerEventKind, ContainerRuntime, ContainerSpec,
    DockerRuntime, RestartPolicy, RuntimeError, RuntimeView, LABEL_MADE_AS, LABEL_MANAGED,
    LABEL_RESOURCE,
};

const NEEDS_NODE: &str = "needs the sandbox node: run tests/run";

/// A shell loop that exits at once on SIGTERM (a bare `sleep` as PID 1
/// ignores it and every stop would wait the full grace).
/// Serves until a TERM, which it answers at once once it says `trapped`
/// (before, the shell as PID 1 ignores TERM and a stop sits out its grace).
const SERVE: &str = "trap 'exit 0' TERM; echo trapped; while :; do sleep 1; done";

// ---- a small local stand-in for the harness's shared test support ----

/// What the node's env file says about it.
struct Node {
    /// The node's root directory, seen from here (`/proc/<pid>/root`).
    root: String,
    socket: String,
    busybox: String,
    registry: String,
    cgroup_driver: String,
}

fn node() -> Node {
    let path = std::env::var("MESH_HOST_NODE")
        .unwrap_or_else(|_| "/var/lib/mesh-host-test-node/node.env".to_owned());
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read node env file {path}: {err} ({NEEDS_NODE})"));
    let vars: BTreeMap<&str, &str> = text
        .lines()
        .filter_map(|line| line.split_once('='))
        .collect();
    let var = |key: &str| {
        vars.get(key)
            .unwrap_or_else(|| panic!("{key} missing from {path}"))
            .to_string()
    };
    // The runtime under test: Docker's socket, or the endpoint the env file
    // names (Podman's Docker-compatible API on a Podman node).
    let inside = vars
        .get("MESH_NODE_DOCKER_HOST")
        .map_or("/run/docker.sock", |h| h.trim_start_matches("unix://"));
    let root = format!("/proc/{}/root", var("MESH_NODE_PID"));
    Node {
        socket: format!("{root}{inside}"),
        root,
        busybox: var("MESH_NODE_IMAGE_BUSYBOX"),
        registry: var("MESH_NODE_REGISTRY"),
        cgroup_driver: var("MESH_NODE_CGROUP_DRIVER"),
    }
}

/// A name no other test or run uses.
fn unique(what: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .subsec_nanos();
    format!("mesh-rt-{what}-{}-{nanos}", std::process::id())
}

/// Runs the docker CLI against the node's daemon; returns stdout.
fn docker_cli(node: &Node, args: &[&str]) -> String {
    let host = format!("unix://{}", node.socket);
    let out = Command::new("docker")
        .arg("-H")
        .arg(&host)
        .args(args)
        .output()
        .expect("run the docker CLI");
    assert!(
        out.status.success(),
        "docker {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Removes the containers and images a test made, pass or fail.
struct Cleanup<'a> {
    node: &'a Node,
    containers: Vec<String>,
    images: Vec<String>,
}

impl<'a> Cleanup<'a> {
    fn new(node: &'a Node) -> Self {
        Cleanup {
            node,
            containers: Vec::new(),
            images: Vec::new(),
        }
    }
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let host = format!("unix://{}", self.node.socket);
        for name in &self.containers {
            let _ = Command::new("docker")
                .args(["-H", &host, "rm", "-f", name])
                .output();
        }
        for image in &self.images {
            let _ = Command::new("docker")
                .args(["-H", &host, "rmi", "-f", image])
                .output();
        }
    }
}

async fn connect(node: &Node) -> DockerRuntime {
    DockerRuntime::connect(Some(&node.socket))
        .await
        .expect("connect to the node's Docker")
}

async fn ensure_busybox(runtime: &DockerRuntime, node: &Node) {
    if !runtime
        .image_present(&node.busybox)
        .await
        .expect("image check")
    {
        runtime.pull(&node.busybox).await.expect("pull busybox");
    }
}

fn spec(node: &Node, name: &str, script: &str) -> ContainerSpec {
    ContainerSpec {
        name: name.to_owned(),
        image: node.busybox.clone(),
        command: Some(vec!["sh".into(), "-c".into(), script.into()]),
        // The node's Docker runs without a bridge.
        network: Some("none".into()),
        labels: [(LABEL_RESOURCE.to_owned(), name.to_owned())].into(),
        ..Default::default()
    }
}

/// Polls `inspect` until `done` holds, for at most 20 s.
async fn inspect_until(
    runtime: &DockerRuntime,
    name: &str,
    done: impl Fn(&mesh_host::runtime::ContainerInfo) -> bool,
) -> mesh_host::runtime::ContainerInfo {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info = runtime
            .inspect(name)
            .await
            .expect("inspect")
            .expect("container exists");
        if done(&info) {
            return info;
        }
        assert!(Instant::now() < deadline, "gave up waiting: {info:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

// ---- the tests ----

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn negotiates_the_api_and_reads_the_cgroup_driver() {
    let node = node();
    let runtime = connect(&node).await;
    assert_eq!(runtime.api_version(), "1.41", "node runs Docker 20.10");
    let expected = match node.cgroup_driver.as_str() {
        "systemd" => CgroupDriver::Systemd,
        _ => CgroupDriver::Cgroupfs,
    };
    assert_eq!(runtime.cgroup_driver().await.expect("info"), expected);
    // Who answers (mesh-host reads it from the ping's headers; the CLI
    // from the version answer).
    let components = docker_cli(
        &node,
        &[
            "version",
            "-f",
            "{{range .Server.Components}}{{.Name}};{{end}}",
        ],
    );
    assert_eq!(
        runtime.is_podman(),
        components.contains("Podman"),
        "{components}"
    );
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn create_start_stop_remove_round_trip() {
    let node = node();
    let mut cleanup = Cleanup::new(&node);
    let runtime = connect(&node).await;
    ensure_busybox(&runtime, &node).await;
    let name = unique("trip");
    cleanup.containers.push(name.clone());

    let id = runtime
        .create(&spec(&node, &name, SERVE))
        .await
        .expect("create");
    let info = runtime
        .inspect(&name)
        .await
        .expect("inspect")
        .expect("exists");
    assert_eq!(info.id, id.0);
    assert_eq!(info.name, name);
    assert_eq!(info.image, node.busybox);
    assert_eq!((info.status.as_str(), info.running), ("created", false));
    assert_eq!(info.started_at, None);
    assert_eq!(
        info.labels.get(LABEL_MANAGED).map(String::as_str),
        Some("true")
    );
    assert_eq!(info.labels.get(LABEL_RESOURCE), Some(&name));

    let again = runtime
        .create(&spec(&node, &name, SERVE))
        .await
        .expect_err("name in use");
    assert!(matches!(again, RuntimeError::Conflict { .. }), "{again:?}");

    runtime.start(&name).await.expect("start");
    let info = runtime
        .inspect(&name)
        .await
        .expect("inspect")
        .expect("exists");
    assert!(info.running, "{info:?}");
    assert_eq!(info.status, "running");
    assert!(info.pid.is_some() && info.started_at.is_some(), "{info:?}");
    runtime.start(&name).await.expect("already running is Ok");

    // The trap is set (on a loaded machine the stop could come first).
    logs_with(&node, &name, "trapped");
    runtime.stop(&name).await.expect("stop");
    // The TERM trap ended it (0), not the KILL at the grace's end (137).
    let stopped = runtime
        .inspect(&name)
        .await
        .expect("inspect")
        .expect("exists");
    assert_eq!((stopped.running, stopped.exit_code), (false, Some(0)));
    let info = runtime
        .inspect(&name)
        .await
        .expect("inspect")
        .expect("exists");
    assert!(!info.running);
    assert_eq!((info.status.as_str(), info.exit_code), ("exited", Some(0)));
    assert!(info.finished_at.is_some());
    runtime.stop(&name).await.expect("already stopped is Ok");

    // Started again, then removed while running: remove forces.
    runtime.start(&name).await.expect("start again");
    runtime.remove(&name).await.expect("remove");
    assert_eq!(runtime.inspect(&name).await.expect("inspect"), None);
    runtime.remove(&name).await.expect("missing is Ok");
    let err = runtime.start(&name).await.expect_err("gone");
    assert!(matches!(err, RuntimeError::NotFound { .. }), "{err:?}");
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn stop_uses_the_containers_own_signal_and_grace() {
    let node = node();
    let mut cleanup = Cleanup::new(&node);
    let runtime = connect(&node).await;
    ensure_busybox(&runtime, &node).await;

    // Ignores SIGTERM (PID 1 without a handler): the stop must kill it after
    // the container's 2 s grace, not Docker's default 10 s.
    let stubborn = unique("grace");
    cleanup.containers.push(stubborn.clone());
    docker_cli(
        &node,
        &[
            "create",
            "--name",
            &stubborn,
            "--network",
            "none",
            "--stop-timeout",
            "2",
            &node.busybox,
            "sh",
            "-c",
            "while :; do sleep 1; done",
        ],
    );
    runtime.start(&stubborn).await.expect("start");
    let begun = Instant::now();
    runtime.stop(&stubborn).await.expect("stop");
    let took = begun.elapsed();
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(8),
        "{took:?}"
    );
    let info = runtime
        .inspect(&stubborn)
        .await
        .expect("inspect")
        .expect("exists");
    assert_eq!((info.running, info.exit_code), (false, Some(137)));

    // Its own stop signal: USR1, which it handles by exiting 3.
    let signalled = unique("signal");
    cleanup.containers.push(signalled.clone());
    docker_cli(
        &node,
        &[
            "create",
            "--name",
            &signalled,
            "--network",
            "none",
            "--stop-signal",
            "SIGUSR1",
            &node.busybox,
            "sh",
            "-c",
            "trap 'exit 3' USR1; while :; do sleep 1; done",
        ],
    );
    runtime.start(&signalled).await.expect("start");
    runtime.stop(&signalled).await.expect("stop");
    // Its own stop signal's trap ended it (3), not a KILL (137).
    let info = runtime
        .inspect(&signalled)
        .await
        .expect("inspect")
        .expect("exists");
    assert_eq!((info.running, info.exit_code), (false, Some(3)));
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn create_without_the_image_is_not_found_and_does_not_pull() {
    let node = node();
    let mut cleanup = Cleanup::new(&node);
    let runtime = connect(&node).await;
    let name = unique("noimage");
    cleanup.containers.push(name.clone());
    let mut missing = spec(&node, &name, "true");
    missing.image = format!(
        "{}/mesh-rt-absent@sha256:{}",
        node.registry,
        "ab".repeat(32)
    );
    let err = runtime.create(&missing).await.expect_err("image absent");
    assert!(matches!(err, RuntimeError::NotFound { .. }), "{err:?}");
    assert!(!runtime.image_present(&missing.image).await.expect("check"));
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn wait_exit_returns_zero_and_non_zero_codes_even_after_the_fact() {
    let node = node();
    let mut cleanup = Cleanup::new(&node);
    let runtime = connect(&node).await;
    ensure_busybox(&runtime, &node).await;

    // Waiting on a created container waits for the run a start begins.
    let zero = unique("wait0");
    cleanup.containers.push(zero.clone());
    runtime
        .create(&spec(&node, &zero, "sleep 1; exit 0"))
        .await
        .expect("create");
    let waiter = {
        let runtime = runtime.clone();
        let zero = zero.clone();
        tokio::spawn(async move { runtime.wait_exit(&zero).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    runtime.start(&zero).await.expect("start");
    let code = tokio::time::timeout(Duration::from_secs(20), waiter)
        .await
        .expect("exit within 20 s")
        .expect("join")
        .expect("wait");
    assert_eq!(code, 0);

    // Non-zero, waited for while running.
    let seven = unique("wait7");
    cleanup.containers.push(seven.clone());
    runtime
        .create(&spec(&node, &seven, "sleep 1; exit 7"))
        .await
        .expect("create");
    runtime.start(&seven).await.expect("start");
    assert_eq!(runtime.wait_exit(&seven).await.expect("wait"), 7);

    // Already exited before the call: its code at once.
    let five = unique("wait5");
    cleanup.containers.push(five.clone());
    runtime
        .create(&spec(&node, &five, "exit 5"))
        .await
        .expect("create");
    runtime
        .start(&five)
        .await
        .expect("a quick exit still counts as started");
    inspect_until(&runtime, &five, |i| i.status == "exited").await;
    // The wait of a run already over answers, rather than waiting for one
    // to come.
    let waited = tokio::time::timeout(Duration::from_secs(60), runtime.wait_exit(&five)).await;
    assert_eq!(waited.expect("answered").expect("wait"), 5);

    // Killed: 137.
    let killed = unique("kill");
    cleanup.containers.push(killed.clone());
    runtime
        .create(&spec(&node, &killed, "while :; do sleep 1; done"))
        .await
        .expect("create");
    runtime.start(&killed).await.expect("start");
    runtime.kill(&killed).await.expect("kill");
    let info = runtime
        .inspect(&killed)
        .await
        .expect("inspect")
        .expect("exists");
    assert_eq!((info.running, info.exit_code), (false, Some(137)));
    assert_eq!(runtime.wait_exit(&killed).await.expect("wait"), 137);
    runtime
        .kill(&killed)
        .await
        .expect("kill of a stopped container is Ok");

    let err = runtime
        .wait_exit(&unique("nothing"))
        .await
        .expect_err("missing");
    assert!(matches!(err, RuntimeError::NotFound { .. }), "{err:?}");
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn start_and_inspect_answers_with_the_state_right_after_the_start() {
    let node = node();
    let mut cleanup = Cleanup::new(&node);
    let runtime = connect(&node).await;
    ensure_busybox(&runtime, &node).await;

    // A stopped service: started, and seen running by the one inspection.
    let svc = unique("sai");
    cleanup.containers.push(svc.clone());
    runtime
        .create(&spec(
            &node,
            &svc,
            "trap 'exit 0' TERM; while :; do sleep 1; done",
        ))
        .await
        .expect("create");
    let info = runtime
        .start_and_inspect(&svc)
        .await
        .expect("start")
        .expect("there");
    assert!(info.running, "{info:?}");
    let pid = info.pid;
    // Already running: Docker's 304 is no error, and the run is the same.
    let again = runtime
        .start_and_inspect(&svc)
        .await
        .expect("start of a running container")
        .expect("there");
    assert!(again.running && again.pid == pid, "{again:?}");

    // One that exits at once: the inspection says so, the caller judges.
    let quick = unique("saiq");
    cleanup.containers.push(quick.clone());
    runtime
        .create(&spec(&node, &quick, "exit 3"))
        .await
        .expect("create");
    let info = runtime
        .start_and_inspect(&quick)
        .await
        .expect("start")
        .expect("there");
    if !info.running {
        assert_eq!(info.exit_code, Some(3), "{info:?}");
    }
    assert_eq!(runtime.wait_exit(&quick).await.expect("wait"), 3);

    let err = runtime
        .start_and_inspect(&unique("nothing"))
        .await
        .expect_err("missing");
    assert!(matches!(err, RuntimeError::NotFound { .. }), "{err:?}");
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn pull_by_digest_fetches_an_absent_image() {
    let node = node();
    let mut cleanup = Cleanup::new(&node);
    let runtime = connect(&node).await;

    // An image no one else has: one layer holding a unique file, pushed to
    // the node's registry and then dropped locally.
    let dir = tempfile::tempdir().expect("temp dir");
    let marker = unique("marker");
    std::fs::write(dir.path().join("marker"), &marker).expect("write marker");
    let repo = format!("{}/{}", node.registry, unique("pull"));
    let tagged = format!("{repo}:t");
    let tar = Command::new("tar")
        .arg("-C")
        .arg(dir.path())
        .args(["-cf", "-", "."])
        .output()
        .expect("tar");
    assert!(tar.status.success());
    let host = format!("unix://{}", node.socket);
    let mut import = Command::new("docker")
        .args(["-H", &host, "import", "-", &tagged])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("docker import");
    {
        use std::io::Write;
        let mut stdin = import.stdin.take().expect("stdin piped");
        stdin.write_all(&tar.stdout).expect("feed the tar");
    }
    let image_id = String::from_utf8_lossy(&import.wait_with_output().expect("import").stdout)
        .trim()
        .to_owned();
    assert!(image_id.starts_with("sha256:"), "import said {image_id:?}");
    cleanup.images.push(image_id.clone());
    docker_cli(&node, &["push", &tagged]);
    let reference = docker_cli(
        &node,
        &[
            "image",
            "inspect",
            "-f",
            "{{index .RepoDigests 0}}",
            &tagged,
        ],
    );
    assert!(
        reference.starts_with(&format!("{repo}@sha256:")),
        "{reference}"
    );
    docker_cli(&node, &["rmi", "-f", &image_id]);
    assert!(!runtime.image_present(&reference).await.expect("check"));

    runtime.pull(&reference).await.expect("pull by digest");
    assert!(runtime.image_present(&reference).await.expect("check"));
    let pulled_id = docker_cli(&node, &["image", "inspect", "-f", "{{.Id}}", &reference]);
    assert_eq!(pulled_id, image_id, "the same image came back");
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn pull_failures_separate_refusals_from_outages() {
    let node = node();
    let runtime = connect(&node).await;

    // A repository the registry has, a digest it does not.
    let (busybox_repo, _) = node.busybox.split_once('@').expect("digest reference");
    let unknown = format!("{busybox_repo}@sha256:{}", "0".repeat(64));
    let begun = Instant::now();
    let err = runtime.pull(&unknown).await.expect_err("unknown digest");
    assert!(
        matches!(err, RuntimeError::Registry { status: 404, .. }),
        "{err:?}"
    );
    assert!(begun.elapsed() < Duration::from_secs(10), "failed at once");
    assert!(!err.is_transient());

    let silent = format!("127.0.0.1:5999/mesh-rt-silent@sha256:{}", "1".repeat(64));
    let err = runtime.pull(&silent).await.expect_err("nothing listens");
    assert!(
        matches!(err, RuntimeError::RegistryUnavailable { .. }),
        "{err:?}"
    );
    assert!(err.is_transient());
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn list_managed_returns_only_labelled_containers() {
    let node = node();
    let mut cleanup = Cleanup::new(&node);
    let runtime = connect(&node).await;
    ensure_busybox(&runtime, &node).await;

    let managed = unique("managed");
    cleanup.containers.push(managed.clone());
    runtime
        .create(&spec(&node, &managed, "true"))
        .await
        .expect("create");
    let running = unique("managed-running");
    cleanup.containers.push(running.clone());
    runtime
        .create(&spec(&node, &running, SERVE))
        .await
        .expect("create");
    runtime.start(&running).await.expect("start");
    let foreign = unique("foreign");
    cleanup.containers.push(foreign.clone());
    docker_cli(
        &node,
        &[
            "create",
            "--name",
            &foreign,
            "--network",
            "none",
            &node.busybox,
            "true",
        ],
    );

    let list = runtime.list_managed().await.expect("list");
    let find = |name: &str| list.iter().find(|c| c.name == name);
    let entry = find(&managed).expect("managed container listed");
    assert!(!entry.running);
    assert_eq!(entry.labels.get(LABEL_RESOURCE), Some(&managed));
    assert!(find(&running).expect("listed").running);
    assert!(find(&foreign).is_none(), "unlabelled container listed");
    assert!(list
        .iter()
        .all(|c| c.labels.get(LABEL_MANAGED).map(String::as_str) == Some("true")));
    runtime.stop(&running).await.expect("stop");
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn events_report_start_die_and_stop_of_named_containers() {
    let node = node();
    let mut cleanup = Cleanup::new(&node);
    let runtime = connect(&node).await;
    ensure_busybox(&runtime, &node).await;

    let watched = unique("watched");
    let other = unique("other");
    cleanup.containers.extend([watched.clone(), other.clone()]);
    for name in [&watched, &other] {
        runtime
            .create(&spec(&node, name, SERVE))
            .await
            .expect("create");
    }
    let mut events = runtime
        .events(std::slice::from_ref(&watched))
        .await
        .expect("subscribe");
    // Started before the stream is first polled: still reported.
    runtime.start(&other).await.expect("start other");
    runtime.start(&watched).await.expect("start watched");
    // Stopped once its TERM trap is set (its loop's first `sleep` runs):
    // a SIGTERM before it would be ignored by PID 1 and end in a SIGKILL.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !docker_cli(&node, &["top", &watched]).contains("sleep 1") {
        assert!(
            std::time::Instant::now() < deadline,
            "{watched} never reached its loop"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    runtime.stop(&watched).await.expect("stop watched");

    let mut seen = Vec::new();
    while seen.len() < 3 {
        let event = tokio::time::timeout(Duration::from_secs(20), events.next())
            .await
            .expect("an event within 20 s")
            .expect("stream open")
            .expect("event ok");
        seen.push(event);
    }
    let event = |kind| ContainerEvent {
        name: watched.clone(),
        kind,
    };
    assert_eq!(
        seen,
        vec![
            event(ContainerEventKind::Start),
            event(ContainerEventKind::Die { exit_code: Some(0) }),
            event(ContainerEventKind::Stop),
        ]
    );
    runtime.stop(&other).await.expect("stop other");
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn a_start_that_cannot_happen_is_an_error_not_not_found() {
    let node = node();
    let mut cleanup = Cleanup::new(&node);
    let runtime = connect(&node).await;
    ensure_busybox(&runtime, &node).await;

    // The real way a held container will not start again: its network went
    // away while it was stopped.
    let network = unique("net");
    docker_cli(&node, &["network", "create", &network]);
    let name = unique("netless");
    cleanup.containers.push(name.clone());
    let mut netless = spec(&node, &name, SERVE);
    netless.network = Some(network.clone());
    netless.restart = RestartPolicy::UnlessStopped;
    let created = runtime.create(&netless).await;
    docker_cli(&node, &["network", "rm", &network]);
    created.expect("create");
    let err = runtime.start(&name).await.expect_err("network is gone");
    assert!(matches!(err, RuntimeError::Api { .. }), "{err:?}");
    assert!(err.to_string().contains(&network), "{err}");
}

#[tokio::test]
async fn unreachable_endpoints_are_errors_naming_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let not_a_socket = dir.path().join("docker.sock");
    std::fs::write(&not_a_socket, "").expect("plain file");
    let not_a_socket = not_a_socket.to_string_lossy().into_owned();
    for endpoint in [
        "/nonexistent/docker.sock".to_owned(),
        format!("unix://{not_a_socket}"),
        // Nothing listens there (the port the pull test uses as silent).
        "tcp://127.0.0.1:5999".to_owned(),
    ] {
        match DockerRuntime::connect(Some(&endpoint)).await {
            Err(RuntimeError::Unreachable {
                endpoint: named, ..
            }) => assert_eq!(named, endpoint),
            other => panic!("{endpoint}: expected Unreachable, got {other:?}"),
        }
    }
}

// ---- network `none` without Docker's network hook ----

/// The OCI prestart hooks Docker gave the running container `id`, from the
/// spec it handed containerd (Docker 20.10's path in the node).
fn prestart_hooks(node: &Node, id: &str) -> Vec<serde_json::Value> {
    let path = format!(
        "{}/run/docker/containerd/daemon/io.containerd.runtime.v2.task/moby/{id}/config.json",
        node.root
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let spec: serde_json::Value = serde_json::from_str(&text).expect("an OCI spec");
    spec["hooks"]["prestart"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The ID of what stands under `name`'s making name, or "".
fn under_making_name(node: &Node, name: &str) -> String {
    let filter = format!("name=^/{}$", making_name(name));
    docker_cli(node, &["ps", "-aq", "--filter", &filter])
}

/// The logs of `name` once they hold `line`, for at most 20 s.
fn logs_with(node: &Node, name: &str, line: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let logs = docker_cli(node, &["logs", name]);
        if logs.lines().any(|l| l == line) {
            return logs;
        }
        assert!(Instant::now() < deadline, "no {line:?} in the logs: {logs}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn a_network_none_container_starts_without_the_network_hook_and_resolves_localhost() {
    let node = node();
    let mut cleanup = Cleanup::new(&node);
    let runtime = connect(&node).await;
    ensure_busybox(&runtime, &node).await;
    let name = unique("nohook");
    let peer = unique("nohook-peer");
    cleanup.containers.extend([name.clone(), peer.clone()]);
    let script = format!(
        "cat /etc/hosts; echo --; ping -c 1 -W 2 localhost >/dev/null && echo localhost answers; {SERVE}"
    );

    let id = runtime
        .create(&spec(&node, &name, &script))
        .await
        .expect("create");
    // Made whole under its making name, then named: nothing is left there.
    let made = docker_cli(
        &node,
        &[
            "inspect",
            "-f",
            "{{.Name}} {{.Config.NetworkDisabled}} {{.HostConfig.NetworkMode}}",
            &id.0,
        ],
    );
    assert_eq!(made, format!("/{name} true none"));
    let info = runtime
        .inspect(&name)
        .await
        .expect("inspect")
        .expect("exists");
    assert_eq!(info.labels.get(LABEL_MADE_AS), Some(&name));
    let making = under_making_name(&node, &name);
    assert_eq!(making, "", "a container is left under the making name");

    // The peer: what the docker CLI makes of the same container.
    docker_cli(
        &node,
        &[
            "run",
            "-d",
            "--name",
            &peer,
            "--network",
            "none",
            &node.busybox,
            "sh",
            "-c",
            &script,
        ],
    );
    runtime.start(&name).await.expect("start");
    // Read once each has said all it says (`trapped` comes last).
    let ours = logs_with(&node, &name, "trapped");
    let theirs = logs_with(&node, &peer, "trapped");
    // The same /etc/hosts, to the byte, and the loopback answers in both.
    assert_eq!(ours, theirs);
    assert!(ours.lines().any(|l| l == "localhost answers"), "{ours}");
    assert!(ours.starts_with("127.0.0.1\tlocalhost\n"), "{ours}");
    // Docker's spec of the peer runs `dockerd` again before it starts; ours
    // runs nothing.
    let peer_id = docker_cli(&node, &["inspect", "-f", "{{.Id}}", &peer]);
    let peer_hooks = prestart_hooks(&node, &peer_id);
    assert!(
        peer_hooks
            .iter()
            .any(|h| h.to_string().contains("libnetwork-setkey")),
        "{peer_hooks:?}"
    );
    assert_eq!(
        prestart_hooks(&node, &id.0),
        Vec::<serde_json::Value>::new()
    );
    runtime.stop(&name).await.expect("stop");
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn what_an_interrupted_create_left_is_cleared_by_the_next_and_a_stranger_is_not() {
    let node = node();
    let mut cleanup = Cleanup::new(&node);
    let runtime = connect(&node).await;
    ensure_busybox(&runtime, &node).await;
    let name = unique("left");
    let left = making_name(&name);
    let stranger_for = unique("stranger");
    let stranger = making_name(&stranger_for);
    cleanup.containers.extend([
        name.clone(),
        left.clone(),
        stranger_for.clone(),
        stranger.clone(),
    ]);
    // What a create killed before its rename leaves: managed, made as
    // `name`, never started, with no /etc/hosts put in.
    let made_as = format!("{LABEL_MADE_AS}={name}");
    let managed = format!("{LABEL_MANAGED}=true");
    let left_id = docker_cli(
        &node,
        &[
            "create",
            "--name",
            &left,
            "--label",
            &managed,
            "--label",
            &made_as,
            "--network",
            "none",
            &node.busybox,
            "true",
        ],
    );
    let id = runtime
        .create(&spec(&node, &name, "true"))
        .await
        .expect("create over what was left");
    assert_ne!(id.0, left_id);
    assert_eq!(
        runtime.inspect(&left).await.expect("inspect"),
        None,
        "the leftover is removed"
    );
    let info = runtime
        .inspect(&name)
        .await
        .expect("inspect")
        .expect("made");
    assert_eq!(
        (info.id.as_str(), info.status.as_str()),
        (id.0.as_str(), "created")
    );

    // Under the making name, but not left by mesh-host: never removed, and
    // the create fails naming it.
    docker_cli(
        &node,
        &[
            "create",
            "--name",
            &stranger,
            "--network",
            "none",
            &node.busybox,
            "true",
        ],
    );
    let err = runtime
        .create(&spec(&node, &stranger_for, "true"))
        .await
        .expect_err("the making name is taken");
    assert!(
        matches!(&err, RuntimeError::Api { reason, .. } if reason.contains(&stranger)),
        "{err:?}"
    );
    assert!(runtime.inspect(&stranger).await.expect("inspect").is_some());
    assert_eq!(runtime.inspect(&stranger_for).await.expect("inspect"), None);
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn an_image_with_a_directory_at_etc_hosts_gets_a_container_as_declared() {
    let node = node();
    let mut cleanup = Cleanup::new(&node);
    let runtime = connect(&node).await;
    let image = format!("{}:test", unique("hosts-dir"));
    cleanup.images.push(image.clone());
    let name = unique("hosts-dir");
    cleanup.containers.push(name.clone());
    // An image of one directory, /etc/hosts/.
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Directory);
    header.set_mode(0o755);
    header.set_size(0);
    let mut archive = tar::Builder::new(Vec::new());
    archive
        .append_data(&mut header, "etc/hosts/", std::io::empty())
        .expect("tar");
    let bytes = archive.into_inner().expect("tar");
    let host = format!("unix://{}", node.socket);
    let mut import = Command::new("docker")
        .args(["-H", &host, "import", "-", &image])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("docker import");
    std::io::Write::write_all(&mut import.stdin.take().expect("stdin"), &bytes).expect("write");
    assert!(import.wait().expect("import").success());

    let mut declared = spec(&node, &name, "true");
    declared.image = image;
    runtime.create(&declared).await.expect("create");
    // Docker refused to put a file in place of the image's directory: the
    // container is made as declared, with Docker's network hook.
    let made = docker_cli(
        &node,
        &["inspect", "-f", "{{.Config.NetworkDisabled}}", &name],
    );
    assert_eq!(made, "false");
    let making = under_making_name(&node, &name);
    assert_eq!(making, "", "nothing is left under the making name");
}
