//! The real stacks of tests/fixtures/compose/stacks/ (the second set,
//! README.md there) with compose as the oracle (CONTRACT, "Compose"), on
//! the sandbox node: each stack is brought up by Debian's `docker-compose`
//! 1.29, every container inspected, taken down; then imported and applied
//! by mesh-host, inspected again, and compared container by container on
//! the fields that carry meaning (image, entrypoint and command,
//! environment, mounts and their modes, ports, networks with their
//! aliases and addresses, restart policy, health check, capabilities,
//! security options, tmpfs, extra hosts, DNS, labels other than compose's
//! own, user, working directory, read-only root, ...). A mismatch is
//! listed field by field. Each stack is a test of its own, under a
//! project name of its own and host ports of its own, so that stacks run
//! side by side.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};
use support::declare::text;
use support::world::World;

/// One stack under test: its directory under the fixtures, and the
/// variables that move its published ports off the well-known ones (the
/// node shares the machine's network) and give its fixed container names
/// the project's prefix.
struct Stack {
    name: &'static str,
    env: &'static str,
}

impl Stack {
    /// Its compose project name, mesh-host's too.
    fn project(&self) -> String {
        format!("stk{}", self.name)
    }
}

/// Removes what one run made, compose's and mesh-host's (containers, then
/// networks and volumes), before the comparison and after it.
struct Made<'a> {
    w: &'a World,
    project: String,
    /// mesh-host's containers, networks and volumes, by name, once
    /// imported.
    declared: std::cell::RefCell<Vec<(String, String)>>,
}

impl Made<'_> {
    fn clear(&self) {
        let p = &self.project;
        let label = format!("label=com.docker.compose.project={p}");
        let mut script = format!(
            "docker ps -aq --filter {label} | xargs -r docker rm -f >/dev/null 2>&1; \
             docker network ls -q --filter {label} | xargs -r docker network rm >/dev/null 2>&1; \
             docker volume ls -q --filter {label} | xargs -r docker volume rm >/dev/null 2>&1; "
        );
        let declared = self.declared.borrow();
        for kind in ["container", "network", "volume"] {
            let names: Vec<&str> = declared
                .iter()
                .filter(|(k, _)| k == kind)
                .map(|(_, n)| n.as_str())
                .collect();
            if !names.is_empty() {
                let rm = if kind == "container" {
                    "docker rm -f".to_string()
                } else {
                    format!("docker {kind} rm")
                };
                script.push_str(&format!("{rm} {} >/dev/null 2>&1; ", names.join(" ")));
            }
        }
        script.push_str("true");
        self.w.node.sh(&script);
    }

    /// Remember what `declaration` makes, to remove it.
    fn declared(&self, declaration: &Value) {
        let mut made = self.declared.borrow_mut();
        for r in declaration["resources"].as_array().into_iter().flatten() {
            let kind = r["type"].as_str().unwrap_or_default();
            if let (true, Some(name)) = (
                ["container", "network", "volume"].contains(&kind),
                r["name"].as_str(),
            ) {
                made.push((kind.to_string(), name.to_string()));
            }
        }
    }
}

impl Drop for Made<'_> {
    fn drop(&mut self) {
        self.clear();
    }
}

/// The stack copied for `w` (every file, recursively), where its relative
/// binds may be declared (outside /tmp): its directory.
fn copy_stack(w: &World, name: &str) -> String {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/compose/stacks")
        .join(name);
    let dir = w.path(name);
    copy_tree(&from, Path::new(&dir));
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("project dir");
    for entry in std::fs::read_dir(from).expect("the fixture") {
        let entry = entry.expect("the fixture");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("the fixture").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy the fixture");
        }
    }
}

/// Each container named, as `docker inspect` shows it.
fn inspect(w: &World, names: &[String]) -> BTreeMap<String, Value> {
    if names.is_empty() {
        return BTreeMap::new();
    }
    let mut args = vec!["inspect"];
    args.extend(names.iter().map(String::as_str));
    let out = w.node.docker_ok(&args);
    let all: Value = serde_json::from_str(&out).expect("inspect is JSON");
    all.as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|c| {
            let name = c["Name"].as_str().unwrap_or_default();
            (name.trim_start_matches('/').to_string(), c)
        })
        .collect()
}

/// Docker's answer for nothing (`{}`, `[]`, `""`, `null`) as null.
fn nothing_as_null(v: &Value) -> Value {
    match v {
        Value::Object(m) if m.is_empty() => Value::Null,
        Value::Array(a) if a.is_empty() => Value::Null,
        Value::String(s) if s.is_empty() => Value::Null,
        other => other.clone(),
    }
}

fn sorted(v: &Value) -> Value {
    let mut items: Vec<Value> = v.as_array().cloned().unwrap_or_default();
    items.sort_by_key(Value::to_string);
    nothing_as_null(&json!(items))
}

/// A health check's test in one form: compose 1.29 sends `CMD-SHELL`
/// as written, mesh-host runs it as `CMD /bin/sh -c` (docs/compose.md,
/// "What differs from compose on purpose").
fn health(v: &Value) -> Value {
    let mut h = nothing_as_null(v);
    if let Some(test) = h.get("Test").and_then(Value::as_array).cloned() {
        if test.len() == 2 && test[0] == "CMD-SHELL" {
            h["Test"] = json!(["CMD", "/bin/sh", "-c", test[1]]);
        }
    }
    h
}

/// Tmpfs options as a set, sizes in bytes (compose 1.29 sends `16m` as
/// written, mesh-host the bytes).
fn tmpfs(v: &Value) -> Value {
    let Some(m) = v.as_object() else {
        return nothing_as_null(v);
    };
    let bytes = |n: &str| {
        let (digits, unit) = n.split_at(n.find(|c: char| !c.is_ascii_digit()).unwrap_or(n.len()));
        let scale: u64 = match unit.to_ascii_lowercase().as_str() {
            "k" => 1 << 10,
            "m" => 1 << 20,
            "g" => 1 << 30,
            _ => 1,
        };
        digits
            .parse::<u64>()
            .map_or(n.to_string(), |d| (d * scale).to_string())
    };
    let out: BTreeMap<&String, Vec<String>> = m
        .iter()
        .map(|(target, opts)| {
            let mut o: Vec<String> = opts
                .as_str()
                .unwrap_or_default()
                .split(',')
                .filter(|o| !o.is_empty())
                .map(|o| match o.strip_prefix("size=") {
                    Some(n) => format!("size={}", bytes(n)),
                    None => o.to_string(),
                })
                .collect();
            o.sort();
            (target, o)
        })
        .collect();
    nothing_as_null(&json!(out))
}

/// What is compared, of one container, by field.
fn view(c: &Value) -> BTreeMap<&'static str, Value> {
    let host = &c["HostConfig"];
    let config = &c["Config"];
    let id = c["Id"].as_str().unwrap_or_default();
    let mounts: Vec<Value> = c["Mounts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|m| {
            let source = if m["Type"] == "volume" {
                &m["Name"]
            } else {
                &m["Source"]
            };
            json!([
                m["Type"],
                source,
                m["Destination"],
                m["RW"],
                m["Propagation"]
            ])
        })
        .collect();
    let networks: BTreeMap<String, Value> = c["NetworkSettings"]["Networks"]
        .as_object()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|(name, n)| {
            // Docker adds the container's short id; the rest is asked.
            let mut aliases: Vec<&str> = n["Aliases"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            aliases.retain(|a| !(a.len() == 12 && id.starts_with(a)));
            aliases.sort_unstable();
            aliases.dedup();
            let address = nothing_as_null(&n["IPAMConfig"]["IPv4Address"]);
            (name, json!({"aliases": aliases, "address": address}))
        })
        .collect();
    let labels: BTreeMap<String, Value> = config["Labels"]
        .as_object()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| {
            !k.starts_with("com.docker.compose.")
                && !k.starts_with("mesh-host.")
                && !k.starts_with("mesh.")
        })
        .collect();
    BTreeMap::from([
        ("image", c["Image"].clone()),
        ("entrypoint", nothing_as_null(&config["Entrypoint"])),
        ("command", nothing_as_null(&config["Cmd"])),
        // An entry without `=` (compose 1.29's unset bare name) sets
        // nothing; compose v2 and mesh-host leave it out.
        (
            "env",
            sorted(&json!(config["Env"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|e| e.as_str().is_some_and(|e| e.contains('=')))
                .collect::<Vec<_>>())),
        ),
        ("mounts", sorted(&json!(mounts))),
        ("ports", nothing_as_null(&host["PortBindings"])),
        ("network-mode", host["NetworkMode"].clone()),
        ("networks", json!(networks)),
        ("restart", host["RestartPolicy"].clone()),
        ("health", health(&config["Healthcheck"])),
        ("cap-add", sorted(&host["CapAdd"])),
        ("cap-drop", sorted(&host["CapDrop"])),
        // `no-new-privileges` and `no-new-privileges:true` are one to Docker.
        (
            "security-opt",
            nothing_as_null(&json!(host["SecurityOpt"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(|o| if o == "no-new-privileges" {
                    json!("no-new-privileges:true")
                } else {
                    o
                })
                .collect::<Vec<_>>())),
        ),
        ("privileged", host["Privileged"].clone()),
        ("tmpfs", tmpfs(&host["Tmpfs"])),
        ("extra-hosts", sorted(&host["ExtraHosts"])),
        ("dns", nothing_as_null(&host["Dns"])),
        ("dns-search", nothing_as_null(&host["DnsSearch"])),
        ("labels", nothing_as_null(&json!(labels))),
        ("user", nothing_as_null(&config["User"])),
        ("working-dir", nothing_as_null(&config["WorkingDir"])),
        ("read-only-root", host["ReadonlyRootfs"].clone()),
        ("init", nothing_as_null(&host["Init"])),
        ("pid-mode", nothing_as_null(&host["PidMode"])),
        ("ipc-mode", host["IpcMode"].clone()),
        ("shm-size", host["ShmSize"].clone()),
        ("sysctls", nothing_as_null(&host["Sysctls"])),
        ("ulimits", nothing_as_null(&host["Ulimits"])),
        ("devices", nothing_as_null(&host["Devices"])),
        ("group-add", nothing_as_null(&host["GroupAdd"])),
        ("memory", host["Memory"].clone()),
        ("cpus", host["NanoCpus"].clone()),
        ("pids", nothing_as_null(&host["PidsLimit"])),
        ("log", host["LogConfig"].clone()),
        ("stop-signal", nothing_as_null(&config["StopSignal"])),
        ("stop-timeout", nothing_as_null(&config["StopTimeout"])),
        ("tty", config["Tty"].clone()),
        ("stdin-open", config["OpenStdin"].clone()),
        // Docker's default is the container's short id: only a declared
        // one compares.
        (
            "hostname",
            match config["Hostname"].as_str() {
                Some(h) if id.starts_with(h) => Value::Null,
                _ => config["Hostname"].clone(),
            },
        ),
        ("domainname", nothing_as_null(&config["Domainname"])),
    ])
}

/// The differences mesh-host makes on purpose (docs/compose.md, "What
/// differs from compose on purpose"), each noted by import (`notes`): a
/// service without `restart` is kept running; `tty` and `stdin_open`
/// mean nothing on a node; a run-once step logs to the journal.
fn expected_difference(
    notes: &str,
    service: &str,
    field: &str,
    compose: &Value,
    mesh: &Value,
) -> bool {
    // A note names the services it is of: `a, b: no restart: ...`.
    let noted = |what: &str| {
        notes.lines().any(|l| {
            l.find(&format!(": {what}")).is_some_and(|at| {
                l[..at]
                    .trim_start_matches("mesh-host: import: ")
                    .split(", ")
                    .any(|s| s == service)
            })
        })
    };
    match field {
        // docker-compose 1.29 writes compose's `no` as Docker's empty name.
        "restart" => {
            noted("no restart: kept running")
                && (compose["Name"] == "no" || compose["Name"] == "")
                && mesh["Name"] == "unless-stopped"
        }
        // A step's output goes to the journal, for `mesh-host logs`
        // (docs/step-output.md).
        "log" => mesh["Type"] == "journald" && mesh["Config"]["tag"] == "mesh-host-step",
        "tty" => noted("tty: means nothing on a node"),
        "stdin-open" => noted("stdin_open: means nothing on a node"),
        _ => false,
    }
}

/// The name mesh-host gives compose 1.29's container `name` of `service`
/// (`P_SERVICE_N` is `P-SERVICE-N`; a `container_name` is kept).
fn mesh_name(project: &str, compose: &Value) -> String {
    let name = compose["Name"]
        .as_str()
        .unwrap_or_default()
        .trim_start_matches('/');
    let labels = &compose["Config"]["Labels"];
    let service = labels["com.docker.compose.service"]
        .as_str()
        .unwrap_or_default();
    let number = labels["com.docker.compose.container-number"]
        .as_str()
        .unwrap_or_default();
    if name == format!("{project}_{service}_{number}") {
        format!("{project}-{service}-{number}")
    } else {
        name.to_string()
    }
}

/// Bring `stack` up with compose, then with mesh-host, and compare:
/// every difference, field by field, container by container.
fn compared(stack: &Stack) {
    let w = World::new(&format!("stacks-{}", stack.name));
    let project = stack.project();
    let made = Made {
        w: &w,
        project: project.clone(),
        declared: Default::default(),
    };
    made.clear();
    let dir = copy_stack(&w, stack.name);
    // The stacks name `${REGISTRY}/busybox:stable`: the node's busybox,
    // tagged so in the node's registry's name (its digest pins it).
    let registry = w.node.registry().to_string();
    w.node.docker_ok(&[
        "tag",
        &w.pulled_busybox(),
        &format!("{registry}/busybox:stable"),
    ]);
    // `{dir}`: the project's directory (a home of its own for `~/`);
    // `{registry}`: the node's registry.
    let env = format!(
        "REGISTRY={registry} {}",
        stack
            .env
            .replace("{dir}", &dir)
            .replace("{registry}", &registry)
    );

    // The oracle.
    let up = w.node.sh(&format!(
        "cd {dir} && env {env} docker-compose -p {project} up -d 2>&1"
    ));
    assert!(up.status.success(), "{}", text(&up));
    let names: Vec<String> = w
        .node
        .docker_ok(&[
            "ps",
            "-a",
            "--filter",
            &format!("label=com.docker.compose.project={project}"),
            "--format",
            "{{.Names}}",
        ])
        .lines()
        .map(str::to_string)
        .collect();
    let by_compose = inspect(&w, &names);
    let down = w.node.sh(&format!(
        "cd {dir} && env {env} docker-compose -p {project} down -v 2>&1"
    ));
    assert!(down.status.success(), "{}", text(&down));
    assert!(
        !by_compose.is_empty(),
        "compose made nothing: {}",
        text(&up)
    );

    // mesh-host's.
    let host = w
        .node
        .docker_host()
        .map(|h| format!("--docker-host {h}"))
        .unwrap_or_default();
    let decl = format!("{dir}/declaration.json");
    let imported = w.node.sh(&format!(
        "cd {dir} && env {env} {bin} import -p {project} -o {decl} {host}",
        bin = w.bin
    ));
    let notes = text(&imported);
    assert!(imported.status.success(), "{notes}");
    let declaration: Value =
        serde_json::from_str(&std::fs::read_to_string(&decl).expect("the declaration"))
            .expect("the declaration is JSON");
    made.declared(&declaration);
    let out = w.mesh(&["apply", &decl, "--local"]);
    assert!(out.status.success(), "{}", text(&out));
    let wanted: Vec<String> = by_compose
        .values()
        .map(|c| mesh_name(&project, c))
        .collect();
    let by_mesh = inspect(&w, &wanted);

    let mut differ = Vec::new();
    for (theirs_name, theirs) in &by_compose {
        let ours_name = mesh_name(&project, theirs);
        let Some(ours) = by_mesh.get(&ours_name) else {
            differ.push(format!("{theirs_name}: mesh-host made no {ours_name}"));
            continue;
        };
        let service = theirs["Config"]["Labels"]["com.docker.compose.service"]
            .as_str()
            .unwrap_or_default();
        let (theirs_view, ours_view) = (view(theirs), view(ours));
        for (field, t) in &theirs_view {
            let o = &ours_view[field];
            if t != o && !expected_difference(&notes, service, field, t, o) {
                differ.push(format!(
                    "{ours_name}.{field}:\n  compose   {t}\n  mesh-host {o}"
                ));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "{}: mesh-host's containers differ from compose's:\n{}",
        stack.name,
        differ.join("\n")
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn mailu_runs_as_compose_runs_it() {
    compared(&Stack {
        name: "mailu",
        env: "HTTP_PORT=28101 SMTP_PORT=28102 IMAPS_PORT=28103",
    });
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn loki_runs_as_compose_runs_it() {
    compared(&Stack {
        name: "loki",
        env: "LOKI_PORT=28111 GRAFANA_PORT=28112",
    });
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn jitsi_runs_as_compose_runs_it() {
    compared(&Stack {
        name: "jitsi",
        env: "HTTP_PORT=28121 HTTPS_PORT=28122 JVB_PORT=28123",
    });
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn synapse_runs_as_compose_runs_it() {
    compared(&Stack {
        name: "synapse",
        env: "SYNAPSE_PORT=28131",
    });
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn searxng_runs_as_compose_runs_it() {
    compared(&Stack {
        name: "searxng",
        env: "SEARXNG_PORT=28141 CADDY_NAME=stksearxng-caddy",
    });
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn airflow_runs_as_compose_runs_it() {
    compared(&Stack {
        name: "airflow",
        env: "AIRFLOW_PORT=28151 AIRFLOW_IMAGE_NAME={registry}/busybox:stable",
    });
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn photoprism_runs_as_compose_runs_it() {
    compared(&Stack {
        name: "photoprism",
        env: "PHOTOPRISM_PORT=28161 HOME={dir}",
    });
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn kong_runs_as_compose_runs_it() {
    compared(&Stack {
        name: "kong",
        env: "KONG_DOCKER_TAG={registry}/busybox:stable KONG_PROXY_PORT=28171 KONG_SSL_PROXY_PORT=28172 KONG_ADMIN_PORT=28173 KONG_ADMIN_SSL_PORT=28174 KONG_ADMIN_GUI_PORT=28175 KONG_INBOUND_PROXY_LISTEN=127.0.0.1 KONG_INBOUND_SSL_PROXY_LISTEN=127.0.0.1",
    });
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn nextcloud_runs_as_compose_runs_it() {
    compared(&Stack {
        name: "nextcloud",
        env: "NEXTCLOUD_PORT=28181",
    });
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn gitea_runs_as_compose_runs_it() {
    compared(&Stack {
        name: "gitea",
        env: "GITEA_HTTP_PORT=28191 GITEA_SSH_PORT=28192 GITEA_NAME=stkgitea-server",
    });
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn netdata_runs_as_compose_runs_it() {
    compared(&Stack {
        name: "netdata",
        env: "NETDATA_NAME=stknetdata-agent",
    });
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn paperless_runs_as_compose_runs_it() {
    compared(&Stack {
        name: "paperless",
        env: "PAPERLESS_PORT=28201",
    });
}
