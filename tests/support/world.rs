//! One test's world on the node: a directory (the same path inside and
//! out), container names unique to the test and removed at its end, and
//! the mesh-host binary run inside the node against its own state.
//!
//! A test builds what it needs one call per thing (`w.name("web")`,
//! `w.identity("ia")`, `w.group()`), declares it (`w.write_declaration`,
//! `w.apply_local`), and everything the world made is taken away when it
//! ends: containers first, then accounts and groups, then its directory.
//! It fires steps as a local run would (`w.run_local`, `w.spawn_local`),
//! waits on Docker (`w.wait_running`, `w.wait_stopped`) and reads Docker's
//! own record of what happened (`w.events`); the resources themselves are
//! written with [`super::declare`].

use std::path::PathBuf;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::accounts::{account, remove_account, Identity};
use super::docker_api::Inspected;
use super::{quote, unique_name, wait_for, Cleanup, Node};

/// A busybox service that stops at once on SIGTERM.
pub const SERVICE_CMD: &str = "trap 'exit 0' TERM; while :; do sleep 1; done";

/// See the module documentation.
pub struct World {
    /// The node.
    pub node: Node,
    /// The test's directory.
    pub dir: PathBuf,
    /// mesh-host inside the node.
    pub bin: String,
    /// Prefix of every name the test makes.
    pub prefix: String,
    /// When the test began (Unix seconds), for journal queries of its own.
    started: u64,
    cleanup: Vec<String>,
    /// Networks and volumes to remove, after the containers.
    networks: Vec<String>,
    volumes: Vec<String>,
    /// Accounts and groups to remove, after the containers running as
    /// them.
    accounts: Vec<Cleanup>,
    /// Docker's container events from the world's start, streamed to
    /// [`World::EVENTS`] in its directory (see [`World::events`]).
    event_stream: Option<Child>,
}

/// Whether `pid` stands as a word of `status` (`systemctl status`, its
/// tree drawing trimmed): systemd lists that process in the unit.
pub fn lists_pid(status: &str, pid: &str) -> bool {
    status.lines().any(|l| {
        l.split_whitespace()
            .any(|w| w.trim_start_matches(['├', '└', '─', '│']) == pid)
    })
}

/// Now, as Docker's `--since`/`--until` read it (seconds and nanoseconds).
pub fn stamp() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format!("{}.{:09}", d.as_secs(), d.subsec_nanos())
}

impl World {
    /// A fresh world; panics without a node.
    pub fn new(tag: &str) -> World {
        World::on(Node::from_env(), tag)
    }

    /// A fresh world on `node` (one of several side by side).
    pub fn on(node: Node, tag: &str) -> World {
        let bin = node.install_bin(env!("CARGO_BIN_EXE_mesh-host"));
        let prefix = unique_name(tag);
        let dir = node.state_dir().join("tests").join(&prefix);
        std::fs::create_dir_all(&dir).expect("test dir");
        let started = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let event_stream = stream_events(&node, &dir);
        World {
            node,
            dir,
            bin,
            prefix,
            started,
            cleanup: Vec::new(),
            networks: Vec::new(),
            volumes: Vec::new(),
            accounts: Vec::new(),
            event_stream,
        }
    }

    /// The file [`World::events`] streams Docker's events into.
    const EVENTS: &'static str = "world.events";

    /// A container name unique to this test (removed at the end).
    pub fn name(&mut self, what: &str) -> String {
        let n = format!("{}-{what}", self.prefix);
        self.cleanup.push(n.clone());
        n
    }

    /// A network name unique to this test (removed at its end, after
    /// its containers).
    pub fn network_name(&mut self, what: &str) -> String {
        let n = format!("{}_{what}", self.prefix);
        self.networks.push(n.clone());
        n
    }

    /// A volume name unique to this test (removed at its end).
    pub fn volume_name(&mut self, what: &str) -> String {
        let n = format!("{}_{what}", self.prefix);
        self.volumes.push(n.clone());
        n
    }

    /// An identity resource `id` of a unique name and number; its account
    /// is made by the apply that declares it, and removed when the world
    /// ends, whatever the test did.
    pub fn identity(&mut self, id: &str) -> Identity {
        let (name, uid) = account();
        self.accounts.push(self.node.on_drop(remove_account(&name)));
        Identity {
            id: id.to_string(),
            name,
            uid,
        }
    }

    /// A system group of a unique name and number, made now (`groupadd`)
    /// and removed when the world ends: its name and gid.
    pub fn group(&mut self) -> (String, u32) {
        let (name, gid) = account();
        self.accounts.push(
            self.node
                .on_drop(format!("groupdel {} >/dev/null 2>&1; true", quote(&name))),
        );
        self.node
            .sh_ok(&format!("groupadd --system -g {gid} {}", quote(&name)));
        (name, gid)
    }

    /// A path under the test's directory, which is made searchable by
    /// every user (an identity reaching a folder there).
    pub fn shared_path(&self, rel: &str) -> String {
        self.node
            .sh_ok(&format!("chmod 755 {}", quote(&self.path(""))));
        self.path(rel)
    }

    /// A path under the test's directory.
    pub fn path(&self, rel: &str) -> String {
        self.dir.join(rel).display().to_string()
    }

    /// The node's busybox image, pinned.
    pub fn busybox(&self) -> String {
        self.node.image("busybox")
    }

    /// A busybox image that declares `VOLUME /data` (`variant` sets an
    /// environment variable, so that two variants are two digests), made
    /// now from the node's busybox and pushed to the node's registry:
    /// its digest-pinned reference. Made with the node's Docker, which
    /// serves the registry on a Podman node too.
    pub fn volume_image(&self, variant: &str) -> String {
        let repo = format!("{}/busybox-volume", self.node.registry());
        let tag = format!("{repo}:{}-{variant}", self.prefix);
        let script = format!(
            "unset DOCKER_HOST; set -e; docker pull -q {busybox} >/dev/null; \
             c=$(docker create {busybox} true); \
             docker commit --change 'VOLUME [\"/data\"]' --change 'CMD [\"/bin/sh\"]' \
               --change 'ENV MESH_VARIANT={variant}' \"$c\" {tag} >/dev/null; \
             docker rm \"$c\" >/dev/null; docker push -q {tag} >/dev/null; \
             docker image inspect -f '{{{{range .RepoDigests}}}}{{{{println .}}}}{{{{end}}}}' {tag} \
               | grep -m1 '^{repo}@sha256:'; docker rmi {tag} >/dev/null",
            busybox = quote(&self.busybox()),
            tag = quote(&tag),
        );
        self.node.sh_ok(&script).trim().to_string()
    }

    /// `docker run -d` a busybox service with a TERM trap (not managed).
    pub fn run_service(&self, name: &str, extra: &[&str]) {
        let mut args = vec!["run", "-d", "--name", name, "--network", "none"];
        args.extend_from_slice(extra);
        let image = self.busybox();
        args.extend_from_slice(&[&image, "sh", "-c", SERVICE_CMD]);
        self.node.docker_ok(&args);
    }

    /// The node's busybox image, pinned, pulled into Docker's store now.
    pub fn pulled_busybox(&self) -> String {
        let image = self.busybox();
        self.node.docker_ok(&["pull", &image]);
        image
    }

    /// A busybox service [`World::name`]d `what`, started now outside
    /// mesh-host (`docker run -d`, see [`World::run_service`]): its name.
    pub fn started_service(&mut self, what: &str) -> String {
        let name = self.name(what);
        self.run_service(&name, &[]);
        name
    }

    /// Fire `step` in this process: `mesh-host run STEP --local`, waited
    /// for.
    pub fn run_local(&self, step: &str) -> Output {
        self.mesh(&["run", step, "--local"])
    }

    /// Fire `step` in this process without waiting:
    /// `mesh-host run STEP --local`.
    pub fn spawn_local(&self, step: &str) -> Child {
        self.mesh_spawn(&["run", step, "--local"], None)
    }

    /// SIGKILL every `mesh-host run STEP --local` of this world's state:
    /// whether there was one.
    pub fn kill_local_run(&self, step: &str) -> bool {
        let state = self.path("state");
        self.node
            .sh(&format!(
                "pkill -KILL -f -- {}",
                quote(&format!("[r]un {step} --local --state-dir {state}"))
            ))
            .status
            .success()
    }

    /// Wait up to 30 s for Docker to say `name` runs (`what` names the
    /// wait in its panic).
    pub fn wait_running(&self, what: &str, name: &str) {
        wait_for(what, Duration::from_secs(30), || {
            self.running(name).then_some(())
        });
    }

    /// Wait up to 30 s for Docker to say `name` does not run (`what` names
    /// the wait in its panic).
    pub fn wait_stopped(&self, what: &str, name: &str) {
        wait_for(what, Duration::from_secs(30), || {
            (!self.running(name)).then_some(())
        });
    }

    /// Write a declaration of `resources` to `rel`; its path.
    pub fn declaration(&self, rel: &str, resources: Value) -> String {
        let path = self.path(rel);
        let decl = json!({"declaration": 1, "resources": resources});
        std::fs::write(&path, serde_json::to_vec_pretty(&decl).expect("json"))
            .expect("write declaration");
        path
    }

    /// Write `declaration.json`, the file `mesh` and `mesh_spawn` pass.
    pub fn write_declaration(&self, resources: Value) -> String {
        self.declaration("declaration.json", resources)
    }

    /// Write `declaration.json` of `resources` and `apply` it in this
    /// process (`--local`): what the command did.
    pub fn apply_local(&self, resources: Value) -> Output {
        let decl = self.write_declaration(resources);
        self.mesh(&["apply", &decl, "--local"])
    }

    /// `args` plus this world's state directory and declaration file
    /// (`decl`, or `declaration.json`).
    pub fn mesh_args(&self, args: &[&str], decl: Option<&str>) -> Vec<String> {
        let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let decl = decl.map_or_else(|| self.path("declaration.json"), str::to_string);
        all.extend([
            "--state-dir".to_string(),
            self.path("state"),
            "--declaration".to_string(),
            decl,
        ]);
        if let Some(host) = self.node.docker_host() {
            all.extend(["--docker-host".to_string(), host.to_string()]);
        }
        // The world's own socket, where its daemon (if any) listens: the
        // node's default one may be served by another test's daemon (the
        // installed package's), which a `--local` command would then
        // defer to.
        if !args.contains(&"--control-socket") {
            all.extend(["--control-socket".to_string(), self.path("control.sock")]);
        }
        all
    }

    /// Run mesh-host inside the node and wait for it.
    pub fn mesh(&self, args: &[&str]) -> Output {
        let out = self
            .node
            .command(&self.bin, &self.mesh_args(args, None))
            .output()
            .expect("run mesh-host");
        eprintln!(
            "mesh-host {args:?} -> {:?}\n--- stdout\n{}--- stderr\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Start mesh-host inside the node without waiting.
    pub fn mesh_spawn(&self, args: &[&str], decl: Option<&str>) -> Child {
        self.node
            .command(&self.bin, &self.mesh_args(args, decl))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mesh-host")
    }

    /// Where the window record of `step` lies in this world's state.
    pub fn window_record_path(&self, step: &str) -> PathBuf {
        self.dir.join(format!("state/windows/{step}.json"))
    }

    /// Leave `record` as the window record of `step`, the way a window's
    /// owner writes it (a temporary file renamed into place), as one that
    /// died or belonged to another boot would have left it: its path.
    pub fn plant_window_record(&self, step: &str, record: &Value) -> PathBuf {
        let path = self.window_record_path(step);
        std::fs::create_dir_all(self.dir.join("state/windows")).expect("windows dir");
        let tmp = self.dir.join(format!("state/windows/.{step}.json.tmp"));
        std::fs::write(&tmp, serde_json::to_vec(record).expect("json")).expect("write");
        std::fs::rename(&tmp, &path).expect("rename");
        path
    }

    /// This boot's id and the node's time now (RFC 3339, UTC): what a
    /// window record opened now, on this boot, says.
    pub fn boot_and_now(&self) -> (String, String) {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").expect("boot id");
        let now = self.node.sh_ok("date -u +%Y-%m-%dT%H:%M:%SZ");
        (boot.trim().to_string(), now.trim().to_string())
    }

    /// The node's time now, as `journalctl --since` reads it.
    pub fn journal_now(&self) -> String {
        self.node
            .sh_ok("date '+%Y-%m-%d %H:%M:%S'")
            .trim()
            .to_string()
    }

    /// `journalctl -t mesh-host ARGS -o cat`, only entries since this test
    /// began (step ids repeat across runs; a test must see its own events).
    pub fn journal(&self, args: &[&str]) -> String {
        let since = format!("@{}", self.started.saturating_sub(1));
        let mut all = vec!["-t", "mesh-host", "--since", since.as_str(), "-o", "cat"];
        all.extend_from_slice(args);
        self.node.journal(&all)
    }

    /// Docker says the container runs (asked over its socket: tests ask
    /// this many times a second while they wait).
    pub fn running(&self, name: &str) -> bool {
        match self.node.inspect_container(name) {
            Inspected::Found(c) => c["State"]["Running"] == true,
            Inspected::Missing | Inspected::NoEngine => false,
        }
    }

    /// `systemctl status UNIT` as the node prints it, whatever its exit
    /// code.
    pub fn unit_status(&self, unit: &str) -> String {
        let out = self
            .node
            .sh(&format!("systemctl status --no-pager {}", quote(unit)));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `mesh-host ARGS` spawned with `MESH_HOST_FAULT=FAULT` (src/fault.rs,
    /// debug builds), its output piped, as [`World::mesh_spawn`].
    pub fn mesh_spawn_faulted(&self, fault: &str, args: &[&str], decl: Option<&str>) -> Child {
        self.mesh_spawn_env(&[&format!("MESH_HOST_FAULT={fault}")], args, decl)
    }

    /// `mesh-host ARGS` spawned with `env` (`NAME=VALUE` each) added to its
    /// environment, its output piped, as [`World::mesh_spawn`].
    pub fn mesh_spawn_env(&self, env: &[&str], args: &[&str], decl: Option<&str>) -> Child {
        let mut all: Vec<String> = env.iter().map(|e| e.to_string()).collect();
        all.push(self.bin.clone());
        all.extend(self.mesh_args(args, decl));
        self.node
            .command("env", &all)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mesh-host")
    }

    /// What `nslookup NAME` inside `container` resolves it to (the first
    /// address: Podman's server answers twice, for the name and for it in
    /// its search domain).
    pub fn resolve(&self, container: &str, name: &str) -> Option<String> {
        let out = self.node.sh(&format!(
            "docker exec {container} nslookup {name} 2>/dev/null | sed -n '/^Name:/,$ s/^Address[^:]*: *//p'"
        ));
        let found = String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        (!found.is_empty()).then_some(found)
    }

    /// Docker has a container by that name.
    pub fn exists(&self, name: &str) -> bool {
        matches!(self.node.inspect_container(name), Inspected::Found(_))
    }

    /// `docker inspect -f FORMAT NAME`, trimmed.
    pub fn inspect(&self, name: &str, format: &str) -> String {
        self.node
            .docker_ok(&["inspect", "-f", format, name])
            .trim()
            .to_string()
    }

    /// Docker's own record of the lifecycle of `names` from `since` (a
    /// [`stamp`]) to now: `(name, action)` in order (create, rename, start,
    /// stop, die, kill, destroy).
    ///
    /// Docker keeps only its last 256 events, which tests running side by
    /// side on one node fill in seconds: what the world streamed since it
    /// began is read, together with what Docker still keeps (the last
    /// moments, which the stream may not have written yet).
    pub fn events(&self, since: &str, names: &[&str]) -> Vec<(String, String)> {
        let until = stamp();
        let mut args = vec![
            "events",
            "--since",
            since,
            "--until",
            &until,
            "--filter",
            "type=container",
            "--format",
            EVENT_FORMAT,
        ]
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
        for n in names {
            args.push("--filter".into());
            args.push(format!("container={n}"));
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let kept = self.node.docker_ok(&refs);
        let streamed = std::fs::read_to_string(self.dir.join(Self::EVENTS)).unwrap_or_default();
        let from = stamp_nanos(since);
        let to = stamp_nanos(&until);
        let mut events: Vec<(u128, String, String)> = kept
            .lines()
            .chain(streamed.lines())
            .filter_map(|l| {
                let mut words = l.splitn(3, ' ');
                let at: u128 = words.next()?.parse().ok()?;
                Some((at, words.next()?.to_string(), words.next()?.to_string()))
            })
            .filter(|(at, name, action)| {
                (from..=to).contains(at)
                    && names.contains(&name.as_str())
                    && matches!(
                        action.as_str(),
                        "create" | "rename" | "start" | "stop" | "die" | "kill" | "destroy"
                    )
            })
            .collect();
        events.sort();
        events.dedup();
        events.into_iter().map(|(_, n, a)| (n, a)).collect()
    }
}

/// One event a line: its time in nanoseconds, the container, the action.
const EVENT_FORMAT: &str = "{{.TimeNano}} {{.Actor.Attributes.name}} {{.Action}}";

/// A [`stamp`] (`SECONDS.NANOS`) in nanoseconds.
fn stamp_nanos(stamp: &str) -> u128 {
    let (secs, nanos) = stamp.split_once('.').unwrap_or((stamp, "0"));
    let secs: u128 = secs.parse().unwrap_or(0);
    let nanos: u128 = format!("{nanos:0<9}")[..9].parse().unwrap_or(0);
    secs * 1_000_000_000 + nanos
}

/// Stream the node's container events from now into `dir`'s
/// [`World::EVENTS`], until the world ends (or ten minutes at most).
fn stream_events(node: &Node, dir: &std::path::Path) -> Option<Child> {
    let out = std::fs::File::create(dir.join(World::EVENTS)).ok()?;
    let script = format!(
        "docker events --since {since} --filter type=container --format {format} & p=$!; \
         i=0; while [ ! -e {stop} ] && [ $i -lt 3000 ]; do sleep 0.2; i=$((i+1)); done; \
         kill $p; wait $p",
        since = stamp(),
        format = quote(EVENT_FORMAT),
        stop = quote(&dir.join("world.events.stop").display().to_string())
    );
    node.command("sh", &["-c", &script])
        .stdout(Stdio::from(out))
        .stderr(Stdio::null())
        .spawn()
        .ok()
}

impl Drop for World {
    fn drop(&mut self) {
        if !self.cleanup.is_empty() {
            // And what a create interrupted by the test may have left under
            // a name's making name (docs/apply.md).
            let names: Vec<String> = self
                .cleanup
                .iter()
                .flat_map(|n| [quote(n), quote(&mesh_host::runtime::making_name(n))])
                .collect();
            let _ = self
                .node
                .sh(&format!("docker rm -f {} >/dev/null 2>&1", names.join(" ")));
        }
        for (kind, names) in [("network", &self.networks), ("volume", &self.volumes)] {
            if !names.is_empty() {
                let names: Vec<String> = names.iter().map(|n| quote(n)).collect();
                let _ = self.node.sh(&format!(
                    "docker {kind} rm {} >/dev/null 2>&1",
                    names.join(" ")
                ));
            }
        }
        if let Some(mut stream) = self.event_stream.take() {
            let _ = std::fs::write(self.dir.join("world.events.stop"), "");
            let _ = stream.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
