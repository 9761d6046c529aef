//! `mesh-host import` with compose as the oracle (CONTRACT, "Compose"), on
//! the sandbox node: the fixture stack (tests/fixtures/compose/shop) is
//! brought up by Debian's `docker-compose` and inspected, taken down, then
//! imported and applied by mesh-host and inspected again; the two
//! containers of each service are compared field by field (ports,
//! environment, mounts, networks and aliases, restart policy,
//! capabilities, limits, health check, stop signal, user, hostname). Then
//! the imported stack is used: its services meet by name, its port answers
//! from the node, and a changed variable recreates that service alone with
//! its volume's data kept. A second project (tests/fixtures/compose/meanings)
//! holds what import used to drop or misread: an entrypoint cleared, a
//! health check of timings alone, one not disabled, `read_only: yes`, and
//! a bind source missing under /root; compose's containers and mesh-host's
//! agree on each, on Docker, and mesh-host's are the same on Podman.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use support::declare::text;
use support::wait_for;
use support::world::World;

/// Removes one copy of the stack (its containers, networks and volumes,
/// made by either compose or mesh-host) before the test and after it.
struct Stack<'a> {
    w: &'a World,
    project: &'static str,
}

impl Stack<'_> {
    fn clear(&self) {
        let (node, p) = (&self.w.node, self.project);
        node.sh(&format!(
            "docker rm -f {p}-db-1 {p}-web-1 {p}_db_1 {p}_web_1 >/dev/null 2>&1"
        ));
        node.sh(&format!(
            "docker network rm {p}_back {p}_front {p}_default >/dev/null 2>&1"
        ));
        node.sh(&format!(
            "docker volume rm {p}_dbdata {p}_logs >/dev/null 2>&1"
        ));
    }
}

impl Drop for Stack<'_> {
    fn drop(&mut self) {
        self.clear();
    }
}

fn copy_fixture(to: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compose/shop");
    std::fs::create_dir_all(to).expect("project dir");
    for name in ["compose.yaml", ".env", "web.env"] {
        std::fs::copy(from.join(name), to.join(name)).expect("copy the fixture");
    }
}

fn inspect(w: &World, name: &str) -> Value {
    let out = w.node.docker_ok(&["inspect", name]);
    let all: Value = serde_json::from_str(&out).expect("inspect is JSON");
    all[0].clone()
}

fn sorted(v: &Value) -> Value {
    let mut items: Vec<String> = v
        .as_array()
        .map(|a| a.iter().map(|i| i.to_string()).collect())
        .unwrap_or_default();
    items.sort();
    json!(items)
}

/// What the comparison looks at, of one container, by field.
fn view(c: &Value, service: &str) -> BTreeMap<&'static str, Value> {
    let host = &c["HostConfig"];
    let config = &c["Config"];
    let mounts: Vec<Value> = c["Mounts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|m| json!([m["Type"], m["Name"], m["Destination"], m["RW"]]))
        .collect();
    let networks: BTreeMap<String, Value> = c["NetworkSettings"]["Networks"]
        .as_object()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|(name, n)| {
            let aliases: Vec<&str> = n["Aliases"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let address = n["IPAMConfig"]["IPv4Address"].clone();
            (
                name,
                json!({"alias": aliases.contains(&service), "address": address}),
            )
        })
        .collect();
    BTreeMap::from([
        ("ports", nothing_as_null(&host["PortBindings"])),
        ("env", sorted(&config["Env"])),
        ("mounts", sorted(&json!(mounts))),
        ("networks", json!(networks)),
        ("restart", host["RestartPolicy"]["Name"].clone()),
        ("cap-add", sorted(&host["CapAdd"])),
        ("cap-drop", sorted(&host["CapDrop"])),
        ("memory", host["Memory"].clone()),
        ("cpus", host["NanoCpus"].clone()),
        ("pids", host["PidsLimit"].clone()),
        ("health", config["Healthcheck"].clone()),
        ("stop-signal", config["StopSignal"].clone()),
        ("user", config["User"].clone()),
        // Docker's default is the container's short id: only a declared
        // one compares.
        (
            "hostname",
            match config["Hostname"].as_str() {
                Some(h) if c["Id"].as_str().is_some_and(|id| id.starts_with(h)) => Value::Null,
                _ => config["Hostname"].clone(),
            },
        ),
        ("command", config["Cmd"].clone()),
        ("tmpfs", nothing_as_null(&host["Tmpfs"])),
        ("ulimits", nothing_as_null(&host["Ulimits"])),
    ])
}

/// The differences mesh-host makes on purpose (docs/compose.md, "What
/// differs from compose"): a service without `restart` is kept running.
fn expected_difference(service: &str, field: &str, compose: &Value, mesh: &Value) -> bool {
    // docker-compose 1.29 writes compose's `no` as Docker's empty name.
    field == "restart"
        && service == "db"
        && (compose == "no" || compose == "")
        && mesh == "unless-stopped"
}

/// Docker's answer for nothing (`{}` or `null`) as null.
fn nothing_as_null(v: &Value) -> Value {
    match v {
        Value::Object(m) if m.is_empty() => Value::Null,
        Value::Array(a) if a.is_empty() => Value::Null,
        other => other.clone(),
    }
}

fn import(w: &World, dir: &str, env: &str, project: &str) -> std::process::Output {
    let out = w.node.sh(&format!(
        "cd {dir} && env {env} {bin} import -p {project} -o {dir}/declaration.json {host}",
        bin = w.bin,
        host = w
            .node
            .docker_host()
            .map(|h| format!("--docker-host {h}"))
            .unwrap_or_default()
    ));
    eprintln!("import: {}", text(&out));
    out
}

/// Where one copy of the stack lives on this node's network (the
/// machine's, shared by every node): its subnet's first three bytes and
/// its host ports.
struct Place {
    /// The project name: its containers', networks' and volumes'.
    project: &'static str,
    net: &'static str,
    /// Podman's crun in this sandbox refuses every `ulimits` (its
    /// setrlimit of RLIMIT_NPROC is not permitted: docs/podman.md).
    without_ulimits: bool,
    port: u16,
    udp_port: u16,
}

impl Place {
    fn env(&self, registry: &str) -> String {
        format!(
            "REGISTRY={registry} SHOP_NET={} SHOP_PORT={} SHOP_UDP_PORT={}",
            self.net, self.port, self.udp_port
        )
    }
}

/// The fixture copied for `w`, its image tagged as it names it: the
/// project directory and the environment to import it with.
fn prepare(w: &World, place: &Place) -> (String, String) {
    let dir = w.path("shop");
    copy_fixture(Path::new(&dir));
    if place.without_ulimits {
        let file = Path::new(&dir).join("compose.yaml");
        let text = std::fs::read_to_string(&file).expect("the copy");
        let kept: Vec<&str> = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("ulimits:") && !l.contains("nofile:"))
            .collect();
        assert!(kept.len() + 2 == text.lines().count(), "ulimits taken out");
        std::fs::write(&file, kept.join("\n")).expect("the copy");
    }
    // The fixture names its image by tag; the tag is this node's busybox.
    let busybox = w.pulled_busybox();
    let registry = w.node.registry().to_string();
    w.node
        .docker_ok(&["tag", &busybox, &format!("{registry}/busybox:stable")]);
    (dir, place.env(&registry))
}

/// Import and apply the stack, then use it: web finds db by its name at
/// its fixed address and reads its answer, web's port answers from the
/// node, and a changed variable recreates web alone, its volume's data
/// kept.
fn imported_and_used(w: &World, dir: &str, env: &str, place: &Place) {
    let out = import(w, dir, env, place.project);
    assert!(out.status.success(), "{}", text(&out));
    let decl = format!("{dir}/declaration.json");
    let out = w.mesh(&["apply", &decl, "--local"]);
    assert!(out.status.success(), "{}", text(&out));

    let (db, web) = (
        format!("{}-db-1", place.project),
        format!("{}-web-1", place.project),
    );
    let found = wait_for("db to resolve from web", Duration::from_secs(20), || {
        w.resolve(&web, "db")
    });
    assert_eq!(found, format!("{}.10", place.net));
    let state = w.node.sh_ok(
        &format!("docker exec {web} sh -c 'printf \"GET /state HTTP/1.0\\r\\n\\r\\n\" | nc -w 2 db 5432' | tail -n 1"),
    );
    assert_eq!(state.trim(), "ready");
    let page_at = format!("curl -sf -m 2 http://127.0.0.1:{}/", place.port);
    let page = wait_for("the port to answer", Duration::from_secs(20), || {
        let out = w.node.sh(&page_at);
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    });
    assert_eq!(page, "hello from the shop");

    w.node.sh_ok(&format!(
        "docker exec {web} sh -c 'echo kept > /var/log/web/marker'"
    ));
    let db_id = inspect(w, &db)["Id"].clone();
    let out = import(
        w,
        dir,
        &format!("{env} APP_GREETING=changed"),
        place.project,
    );
    assert!(out.status.success(), "{}", text(&out));
    let out = w.mesh(&["apply", &decl, "--local"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("web recreated: env changed"), "{said}");
    assert_eq!(inspect(w, &db)["Id"], db_id, "db is not recreated");
    let marker = w
        .node
        .sh_ok(&format!("docker exec {web} cat /var/log/web/marker"));
    assert_eq!(marker.trim(), "kept");
    wait_for("the new page", Duration::from_secs(20), || {
        let out = w.node.sh(&page_at);
        (String::from_utf8_lossy(&out.stdout).trim() == "changed").then_some(())
    });
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn an_imported_stack_runs_as_compose_runs_it() {
    let w = World::new("compose");
    let place = Place {
        project: "shop",
        net: "10.231.7",
        without_ulimits: false,
        port: 18080,
        udp_port: 18081,
    };
    let stack = Stack {
        w: &w,
        project: place.project,
    };
    stack.clear();
    let (dir, env) = prepare(&w, &place);

    // The oracle: compose's own containers.
    let up = w.node.sh(&format!(
        "cd {dir} && env {env} docker-compose --compatibility -p shop up -d 2>&1"
    ));
    assert!(up.status.success(), "{}", text(&up));
    let by_compose: BTreeMap<&str, Value> = [("db", "shop_db_1"), ("web", "shop_web_1")]
        .into_iter()
        .map(|(s, name)| (s, inspect(&w, name)))
        .collect();
    let down = w.node.sh(&format!(
        "cd {dir} && env {env} docker-compose -p shop down -v 2>&1"
    ));
    assert!(down.status.success(), "{}", text(&down));

    // mesh-host's, field by field.
    let out = import(&w, &dir, &env, place.project);
    assert!(out.status.success(), "{}", text(&out));
    let out = w.mesh(&["apply", &format!("{dir}/declaration.json"), "--local"]);
    assert!(out.status.success(), "{}", text(&out));
    let mut differ = Vec::new();
    for (service, name) in [("db", "shop-db-1"), ("web", "shop-web-1")] {
        let (compose, mesh) = (
            view(&by_compose[service], service),
            view(&inspect(&w, name), service),
        );
        for (field, theirs) in &compose {
            let ours = &mesh[field];
            if theirs != ours && !expected_difference(service, field, theirs, ours) {
                differ.push(format!(
                    "{service}.{field}: compose {theirs} mesh-host {ours}"
                ));
            }
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    stack.clear();

    imported_and_used(&w, &dir, &env, &place);
}

/// The same stack on Podman's compatible API (docker-compose is not run
/// there: Docker's containers are the oracle), apart on the network from
/// a Docker node's copy.
#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn podman_runs_an_imported_stack() {
    let w = World::new("compose-podman");
    let place = Place {
        project: "shoppod",
        net: "10.232.7",
        without_ulimits: true,
        port: 18090,
        udp_port: 18091,
    };
    let stack = Stack {
        w: &w,
        project: place.project,
    };
    stack.clear();
    let (dir, env) = prepare(&w, &place);
    imported_and_used(&w, &dir, &env, &place);
}

/// An image with an ENTRYPOINT, a CMD and a HEALTHCHECK of its own, built
/// from the node's busybox with the node's Docker and pushed to the
/// node's registry: its tag (import pins it).
fn meanings_image(w: &World) -> String {
    let dir = w.path("meanings-image");
    std::fs::create_dir_all(&dir).expect("image dir");
    std::fs::write(
        Path::new(&dir).join("Dockerfile"),
        format!(
            "FROM {}\nENTRYPOINT [\"env\", \"FROM_THE_IMAGE=1\"]\nCMD [\"sh\", \"-c\", \"trap 'exit 0' TERM; while :; do sleep 1; done\"]\nHEALTHCHECK --interval=7s --timeout=3s --retries=2 CMD [\"true\"]\n",
            w.busybox()
        ),
    )
    .expect("Dockerfile");
    let tag = format!("{}/meanings:{}", w.node.registry(), w.prefix);
    w.node.sh_ok(&format!(
        "unset DOCKER_HOST; set -e; docker pull -q {} >/dev/null; docker build -q -t {tag} {dir} >/dev/null; docker push -q {tag} >/dev/null",
        w.busybox()
    ));
    tag
}

/// What the meanings are seen by, of one container.
fn meanings_view(c: &Value) -> Value {
    let binds: Vec<Value> = c["Mounts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|m| json!([m["Type"], m["Source"], m["Destination"], m["RW"]]))
        .collect();
    json!({
        "entrypoint": nothing_as_null(&c["Config"]["Entrypoint"]),
        "cmd": c["Config"]["Cmd"],
        "health": c["Config"]["Healthcheck"],
        "read-only-root": c["HostConfig"]["ReadonlyRootfs"],
        "mounts": binds,
        "restart": c["HostConfig"]["RestartPolicy"]["Name"],
    })
}

/// Import and apply the meanings project as `project`: each service's
/// container, by service.
fn meanings_applied(
    w: &World,
    dir: &str,
    env: &str,
    project: &str,
) -> BTreeMap<&'static str, Value> {
    let out = import(w, dir, env, project);
    assert!(out.status.success(), "{}", text(&out));
    let out = w.mesh(&["apply", &format!("{dir}/declaration.json"), "--local"]);
    assert!(out.status.success(), "{}", text(&out));
    // What was made is what is declared: a second apply changes nothing.
    let again = w.mesh(&["apply", &format!("{dir}/declaration.json"), "--local"]);
    let said = text(&again);
    assert!(again.status.success(), "{said}");
    assert!(
        said.contains("cleared unchanged") && said.contains("kept unchanged"),
        "{said}"
    );
    [("cleared", "cleared"), ("kept", "kept")]
        .into_iter()
        .map(|(s, _)| (s, inspect(w, &format!("{project}-{s}-1"))))
        .collect()
}

fn meanings_project(w: &World, project: &str) -> (String, String, String) {
    let dir = w.path(project);
    std::fs::create_dir_all(&dir).expect("project dir");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compose/meanings/compose.yaml"),
        Path::new(&dir).join("compose.yaml"),
    )
    .expect("copy the fixture");
    let data = format!("/root/mesh-host-{}-data", w.prefix);
    let env = format!("MEANINGS_IMAGE={} MEANINGS_DATA={data}", meanings_image(w));
    (dir, env, data)
}

/// Removes what one run of the meanings project made (its containers,
/// compose's and mesh-host's, its network, the bind source Docker made
/// under /root) before the test and after it, whether it passed or not.
struct Meanings<'a> {
    w: &'a World,
    project: &'static str,
    data: String,
}

impl Meanings<'_> {
    fn clear(&self) {
        let (p, data) = (self.project, &self.data);
        self.w.node.sh(&format!(
            "docker rm -f {p}-cleared-1 {p}-kept-1 {p}_cleared_1 {p}_kept_1 >/dev/null 2>&1; \
             docker network rm {p}_default >/dev/null 2>&1; rm -rf {data}"
        ));
    }
}

impl Drop for Meanings<'_> {
    fn drop(&mut self) {
        self.clear();
    }
}

/// The fields that say each meaning, as mesh-host must give them: the
/// entrypoint cleared, the image's command run, the image's test kept
/// with the timings given, the whole image's check kept, the root read
/// only, the missing bind source made.
/// On Podman 4.3 the timings of a health check without a test are dropped
/// (its compatible API keeps the image's check whole: docs/podman.md).
fn assert_meanings(mesh: &BTreeMap<&str, Value>, data: &str, podman: bool) {
    let cleared = meanings_view(&mesh["cleared"]);
    // Docker shows a cleared entrypoint as none, Podman as [""].
    assert!(
        cleared["entrypoint"].is_null() || cleared["entrypoint"] == json!([""]),
        "{cleared:#}"
    );
    assert_eq!(cleared["cmd"][0], "sh", "{cleared:#}");
    assert_eq!(
        cleared["health"]["Test"],
        json!(["CMD", "true"]),
        "{cleared:#}"
    );
    let (interval, retries) = if podman {
        (7_000_000_000u64, 2)
    } else {
        (10_000_000_000u64, 5)
    };
    assert_eq!(cleared["health"]["Interval"], interval, "{cleared:#}");
    assert_eq!(cleared["health"]["Retries"], retries, "{cleared:#}");
    assert_eq!(cleared["read-only-root"], true, "{cleared:#}");
    assert_eq!(cleared["mounts"][0][1], data, "{cleared:#}");
    let kept = meanings_view(&mesh["kept"]);
    assert_eq!(
        kept["entrypoint"],
        json!(["env", "FROM_THE_IMAGE=1"]),
        "{kept:#}"
    );
    assert_eq!(kept["health"]["Interval"], 7_000_000_000u64, "{kept:#}");
    assert_eq!(kept["health"]["Retries"], 2, "{kept:#}");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn what_compose_means_by_an_empty_entrypoint_and_a_partial_health_check_is_kept() {
    let w = World::new("compose-meanings");
    let project = "meanings";
    let (dir, env, data) = meanings_project(&w, project);
    let run = Meanings {
        w: &w,
        project,
        data: data.clone(),
    };
    run.clear();

    // The oracle.
    let up = w.node.sh(&format!(
        "cd {dir} && env {env} docker-compose -p {project} up -d 2>&1"
    ));
    assert!(up.status.success(), "{}", text(&up));
    let by_compose: BTreeMap<&str, Value> = ["cleared", "kept"]
        .into_iter()
        .map(|s| (s, meanings_view(&inspect(&w, &format!("{project}_{s}_1")))))
        .collect();
    let down = w.node.sh(&format!(
        "cd {dir} && env {env} docker-compose -p {project} down 2>&1"
    ));
    assert!(down.status.success(), "{}", text(&down));
    w.node.sh_ok(&format!("rm -rf {data}"));

    // mesh-host's: the same, field by field; Docker made the bind source.
    // But one: Debian's docker-compose 1.29 turns `disable: false` into
    // `Test: ["NONE"]`, where compose v2 (compose-go, whose reading
    // immich's stack is written for) keeps the image's check, as
    // mesh-host does (assert_meanings).
    let mesh = meanings_applied(&w, &dir, &env, project);
    for service in ["cleared", "kept"] {
        let mut ours = meanings_view(&mesh[service]);
        let mut theirs = by_compose[service].clone();
        if service == "kept" {
            assert_eq!(theirs["health"]["Test"], json!(["NONE"]), "{theirs:#}");
            ours["health"] = Value::Null;
            theirs["health"] = Value::Null;
        }
        assert_eq!(
            ours, theirs,
            "{service}: mesh-host's container differs from compose's"
        );
    }
    assert_meanings(&mesh, &data, false);
    w.node.sh_ok(&format!("test -d {data}"));
}

/// The same meanings through Podman's compatible API.
#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn podman_keeps_what_compose_means_by_an_empty_entrypoint_and_a_partial_health_check() {
    let w = World::new("compose-meanings-podman");
    let project = "meaningspod";
    let (dir, env, data) = meanings_project(&w, project);
    let run = Meanings {
        w: &w,
        project,
        data: data.clone(),
    };
    run.clear();
    let mesh = meanings_applied(&w, &dir, &env, project);
    assert_meanings(&mesh, &data, true);
    w.node.sh_ok(&format!("test -d {data}"));
}
