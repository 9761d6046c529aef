//! Helpers for integration tests against the sandbox node (`tests/node/node`):
//! a real systemd 252 and Docker booted in private PID and mount namespaces of
//! this machine. Use as `mod support;` from a file under `tests/`.
//!
//! A node test is `#[ignore = "needs the sandbox node: run tests/run"]` and
//! starts with [`Node::from_env`], which panics when no node is there: a node
//! test must never pass without one. `tests/run` boots the node and sets
//! `MESH_HOST_NODE`; see `tests/README.md`.

// Each test file uses its own subset of these helpers.
#![allow(dead_code)]

pub mod accounts;
pub mod daemon_unit;
pub mod dashboard;
pub mod declare;
pub mod docker_api;
pub mod event_log;
pub mod package;
pub mod unit_files;
pub mod world;

use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Environment variable naming the node env file written by `node up`.
pub const NODE_ENV_VAR: &str = "MESH_HOST_NODE";

/// How long [`wait_for`] sleeps between probes, once it has waited
/// `waited`: ten times a second at first, less often as a wait goes on.
/// The long waits are on a clock (a minute to turn, a timeout to pass),
/// and every probe starts processes (`nsenter`, `journalctl`, ...) on a
/// machine whose two cores all the tests share: eighty seconds at ten a
/// second were 800 probes. A state a test waits for lasts seconds (a
/// step's `sleep 2` at least), so 400 ms still sees it several times.
fn poll_interval(waited: Duration) -> Duration {
    match waited.as_secs() {
        0..5 => Duration::from_millis(100),
        5..20 => Duration::from_millis(200),
        _ => Duration::from_millis(400),
    }
}

/// Docker's cgroup driver on the node, chosen at `node up`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupDriver {
    /// `cgroupfs`: a container's cgroup parent is a cgroup path such as a
    /// scope's `ControlGroup` (`/system.slice/NAME.scope`).
    Cgroupfs,
    /// `systemd`: a container's cgroup parent must be a slice name
    /// (`NAME.slice`); Docker makes its own `docker-<id>.scope` inside.
    Systemd,
}

impl CgroupDriver {
    /// The name Docker gives the driver (`docker info -f '{{.CgroupDriver}}'`).
    pub fn as_str(self) -> &'static str {
        match self {
            CgroupDriver::Cgroupfs => "cgroupfs",
            CgroupDriver::Systemd => "systemd",
        }
    }
}

impl fmt::Display for CgroupDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `pid` is a running systemd (a node's PID 1).
fn is_systemd(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.trim() == "systemd")
}

/// A running sandbox node, as described by its env file.
#[derive(Debug, Clone)]
pub struct Node {
    env_file: PathBuf,
    vars: HashMap<String, String>,
    pid: u32,
}

impl Node {
    /// The node named by `MESH_HOST_NODE`.
    ///
    /// # Panics
    ///
    /// When the variable is unset, the env file is unreadable or malformed,
    /// or the node's systemd is no longer running.
    pub fn from_env() -> Node {
        let Some(env_file) = std::env::var_os(NODE_ENV_VAR) else {
            panic!(
                "{NODE_ENV_VAR} is not set: this test needs the sandbox node. Run tests/run, \
                 or boot one with `tests/node/node up` and export the {NODE_ENV_VAR}=... it prints"
            );
        };
        Node::from_file(Path::new(&env_file))
    }

    /// The node described by the env file at `env_file`.
    ///
    /// # Panics
    ///
    /// As [`Node::from_env`].
    pub fn from_file(env_file: &Path) -> Node {
        let text = fs::read_to_string(env_file).unwrap_or_else(|e| {
            panic!(
                "cannot read the node env file {} ({e}): is the node up? (tests/node/node up)",
                env_file.display()
            )
        });
        let vars = parse_env_file(&text)
            .unwrap_or_else(|e| panic!("malformed node env file {}: {e}", env_file.display()));
        let pid_text = vars
            .get("MESH_NODE_PID")
            .unwrap_or_else(|| panic!("node env file {} has no MESH_NODE_PID", env_file.display()));
        let pid: u32 = pid_text.parse().unwrap_or_else(|_| {
            panic!(
                "node env file {}: MESH_NODE_PID={pid_text:?} is not a PID",
                env_file.display()
            )
        });
        assert!(
            is_systemd(pid),
            "the node of {} (systemd, PID {pid}) is not running: boot it again with \
             tests/node/node up",
            env_file.display()
        );
        Node {
            env_file: env_file.to_path_buf(),
            vars,
            pid,
        }
    }

    /// PID of the node's systemd as this machine sees it: after a
    /// [`Node::power_cut`], the new one, as the env file names it (every
    /// clone of this node follows the boot).
    pub fn pid(&self) -> u32 {
        if is_systemd(self.pid) {
            return self.pid;
        }
        fs::read_to_string(&self.env_file)
            .ok()
            .and_then(|text| parse_env_file(&text).ok())
            .and_then(|vars| vars.get("MESH_NODE_PID")?.parse().ok())
            .filter(|pid| is_systemd(*pid))
            .unwrap_or(self.pid)
    }

    /// Cut the node's power and boot it again on the same disk
    /// (`tests/node/node power-cut`): every process of it dies at once,
    /// Docker's data and the machine's files stay, `/run` and `/tmp` are
    /// new. Returns once the node runs again with Docker and its registry
    /// answering.
    ///
    /// # Panics
    ///
    /// When the node could not be cut or did not come back.
    pub fn power_cut(&self) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node/node");
        let port = self
            .registry()
            .rsplit_once(':')
            .map(|(_, port)| port.to_string())
            .unwrap_or_default();
        let out = Command::new(script)
            .arg("power-cut")
            .env("MESH_NODE_STATE", self.state_dir())
            .env("MESH_NODE_REGISTRY_PORT", port)
            .stdin(Stdio::null())
            .output()
            .expect("run tests/node/node power-cut");
        assert!(
            out.status.success(),
            "tests/node/node power-cut failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A value of the node env file.
    ///
    /// # Panics
    ///
    /// When the env file has no such key.
    pub fn var(&self, key: &str) -> &str {
        self.vars.get(key).map(String::as_str).unwrap_or_else(|| {
            panic!(
                "node env file {} has no {key}: boot the node again with tests/node/node up",
                self.env_file.display()
            )
        })
    }

    /// The node state directory, on the machine's real filesystem and at the
    /// same path inside the node.
    pub fn state_dir(&self) -> PathBuf {
        PathBuf::from(self.var("MESH_NODE_STATE"))
    }

    /// The loopback registry's address (`127.0.0.1:5000`).
    pub fn registry(&self) -> &str {
        self.var("MESH_NODE_REGISTRY")
    }

    /// Docker's cgroup driver on this node.
    ///
    /// # Panics
    ///
    /// When the env file names another driver.
    pub fn cgroup_driver(&self) -> CgroupDriver {
        match self.var("MESH_NODE_CGROUP_DRIVER") {
            "cgroupfs" => CgroupDriver::Cgroupfs,
            "systemd" => CgroupDriver::Systemd,
            other => panic!("unknown cgroup driver {other:?} in the node env file"),
        }
    }

    /// The cgroup the node's systemd takes as its root (less `/init.scope`):
    /// `/` for a node booted at the hierarchies' root, a subtree for a node
    /// booted beside another one. systemd's `ControlGroup` paths start with
    /// it. A node env file written before the key existed means `/`.
    pub fn cgroup_root(&self) -> &str {
        self.vars
            .get("MESH_NODE_CGROUP_ROOT")
            .map_or("/", String::as_str)
    }

    /// `path` (`/system.slice/x.scope`) as systemd's `ControlGroup` on this
    /// node names it: under [`Node::cgroup_root`].
    pub fn control_group(&self, path: &str) -> String {
        format!("{}{path}", self.cgroup_root().trim_end_matches('/'))
    }

    /// The digest-pinned reference of a test image served by the node's
    /// registry: `busybox`, `busybox-alt` (the same with one more file,
    /// `/etc/mesh-node-variant`, so another digest) or `registry` (the
    /// distribution registry; entrypoint the registry binary).
    ///
    /// The busybox images are not in Docker's local store after boot: the
    /// first use pulls them.
    pub fn image(&self, name: &str) -> String {
        let key = format!(
            "MESH_NODE_IMAGE_{}",
            name.to_ascii_uppercase().replace('-', "_")
        );
        self.var(&key).to_string()
    }

    /// The container runtime under test: `docker`, or `podman` (Podman's
    /// Docker-compatible API; the node's Docker then only serves the
    /// registry). A node env file written before the key existed means
    /// `docker`.
    pub fn runtime(&self) -> &str {
        self.vars
            .get("MESH_NODE_RUNTIME")
            .map_or("docker", String::as_str)
    }

    /// The runtime's API endpoint inside the node when it is not Docker's
    /// own socket (`unix:///run/podman/podman.sock`): every command run in
    /// the node gets it as `DOCKER_HOST`, and mesh-host as `--docker-host`.
    pub fn docker_host(&self) -> Option<&str> {
        self.vars.get("MESH_NODE_DOCKER_HOST").map(String::as_str)
    }

    /// A command run inside the node (its PID, mount and UTS namespaces) with a
    /// clean environment and `/` as working directory; standard input is
    /// empty unless the caller sets it. On a node whose runtime is not
    /// Docker, `DOCKER_HOST` names it, so `docker` and mesh-host talk to it.
    pub fn command<S: AsRef<str>>(&self, program: &str, args: &[S]) -> Command {
        let mut cmd = Command::new("nsenter");
        cmd.arg("-t")
            .arg(self.pid().to_string())
            .args(["-p", "-m", "-u", "--wd=/", "--", "env", "-i"])
            .arg(format!("PATH={}", self.var("MESH_NODE_PATH")))
            .args(["HOME=/root", "LANG=C.UTF-8"]);
        if let Some(host) = self.docker_host() {
            cmd.arg(format!("DOCKER_HOST={host}"));
        }
        cmd.arg(program)
            .args(args.iter().map(AsRef::as_ref))
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `sh -c SCRIPT` inside the node and returns what it did.
    ///
    /// # Panics
    ///
    /// When `nsenter` itself cannot be started.
    pub fn sh(&self, script: &str) -> Output {
        run(self.command("sh", &["-c", script]), script)
    }

    /// Runs `sh -c SCRIPT` inside the node and returns its standard output.
    ///
    /// # Panics
    ///
    /// When the script fails, with its output and errors.
    pub fn sh_ok(&self, script: &str) -> String {
        ok(self.sh(script), script)
    }

    /// Runs Debian's `docker` client inside the node (against the node's
    /// runtime: Podman's API on a Podman node).
    ///
    /// # Panics
    ///
    /// When `nsenter` itself cannot be started.
    pub fn docker(&self, args: &[&str]) -> Output {
        run(
            self.command("docker", args),
            &format!("docker {}", args.join(" ")),
        )
    }

    /// Runs `docker ARGS` inside the node and returns its standard output.
    ///
    /// # Panics
    ///
    /// When the command fails, with its output and errors.
    pub fn docker_ok(&self, args: &[&str]) -> String {
        let what = format!("docker {}", args.join(" "));
        ok(self.docker(args), &what)
    }

    /// `journalctl --no-pager ARGS` inside the node: its standard output,
    /// with every entry logged before the call. journald takes entries
    /// from its sockets when it gets to them, later still on a loaded
    /// machine: `journalctl --sync` returns once it has written all it had
    /// been sent (it handles the request after what its sockets hold).
    ///
    /// # Panics
    ///
    /// When journalctl fails.
    pub fn journal(&self, args: &[&str]) -> String {
        let sync = "journalctl --sync";
        ok(run(self.command("journalctl", &["--sync"]), sync), sync);
        let mut all = vec!["--no-pager"];
        all.extend_from_slice(args);
        let what = format!("journalctl {}", all.join(" "));
        ok(run(self.command("journalctl", &all), &what), &what)
    }

    /// One property of a unit (`systemctl show -P PROPERTY UNIT`).
    ///
    /// # Panics
    ///
    /// When systemctl fails.
    pub fn unit_property(&self, unit: &str, property: &str) -> String {
        let args = ["show", "-P", property, unit];
        let what = format!("systemctl {}", args.join(" "));
        ok(run(self.command("systemctl", &args), &what), &what)
            .trim()
            .to_string()
    }

    /// Copies a file of this machine (a test binary, a script) into the node
    /// state directory, where the node sees it at the same path, and returns
    /// that path. Files under this machine's /tmp are not visible inside the
    /// node, which has a /tmp of its own.
    ///
    /// # Panics
    ///
    /// When the file cannot be copied.
    pub fn install_bin(&self, host_path: impl AsRef<Path>) -> String {
        // Once per build and process: each build of the binary gets a
        // directory of its own, named after where it was built, its size
        // and its time, and a copy there is never written again. So test
        // runs of two checkouts on one node never run each other's binary,
        // and no test execs a file another thread is still writing ("text
        // file busy": a child forked mid-copy holds its write descriptor).
        static INSTALLED: std::sync::Mutex<Option<HashMap<PathBuf, String>>> =
            std::sync::Mutex::new(None);
        let src = host_path.as_ref();
        let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(dest) = installed.get_or_insert_with(HashMap::new).get(src) {
            return dest.clone();
        }
        let name = src
            .file_name()
            .unwrap_or_else(|| panic!("install_bin: {} names no file", src.display()));
        let meta = fs::metadata(src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        let built = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .unwrap_or_default();
        let key = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            src.hash(&mut h);
            meta.len().hash(&mut h);
            built.hash(&mut h);
            format!("{:016x}", h.finish())
        };
        let dir = PathBuf::from(self.var("MESH_NODE_BIN_DIR")).join(key);
        fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        let dest = dir.join(name);
        if !dest.exists() {
            // Copy then rename: nobody sees half a file.
            let tmp = dir.join(format!(
                ".{}.{}",
                name.to_string_lossy(),
                unique_name("install")
            ));
            fs::copy(src, &tmp).unwrap_or_else(|e| {
                panic!("cannot copy {} to {}: {e}", src.display(), tmp.display())
            });
            set_executable(&tmp);
            fs::rename(&tmp, &dest).unwrap_or_else(|e| {
                panic!("cannot rename {} to {}: {e}", tmp.display(), dest.display())
            });
        }
        let dest = dest.to_string_lossy().into_owned();
        installed
            .get_or_insert_with(HashMap::new)
            .insert(src.to_path_buf(), dest.clone());
        dest
    }

    /// A guard that runs `script` inside the node when dropped, test failed
    /// or not: removal of what a test made (`docker rm -f NAME`, `systemctl
    /// stop UNIT`), so tests sharing one node leave nothing behind.
    pub fn on_drop(&self, script: impl Into<String>) -> Cleanup {
        Cleanup {
            node: self.clone(),
            script: script.into(),
        }
    }
}

/// Runs a script inside the node when dropped; see [`Node::on_drop`].
#[derive(Debug)]
#[must_use = "the script runs when the guard is dropped"]
pub struct Cleanup {
    node: Node,
    script: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        // Never panic in drop (it may run while unwinding): report instead.
        let out = self.node.sh(&self.script);
        if !out.status.success() {
            eprintln!(
                "cleanup `{}` failed: {}",
                self.script,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// A name no other test on this machine uses at the same time, for
/// containers, units and files: `PREFIX-PID-N-NANOS`, made of letters, digits
/// and dashes (valid for Docker and for systemd; note that in a slice name
/// each dash is a level of hierarchy, so slices want [`unique_slice_name`]).
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}-{}-{n}-{nanos}", std::process::id())
}

/// A step id of one test alone (`PREFIX_PID_N_NANOS`): every test daemon
/// on a node shares its systemd, where a fire's unit is named after the
/// step and the second it fired, so two tests firing a step of the same id
/// in the same second would ask for one unit name.
pub fn unique_step_id(prefix: &str) -> String {
    unique_name(prefix).replace('-', "_")
}

/// A unique slice unit name without dashes (`PREFIX_PID_N_NANOS.slice`), so
/// systemd makes it directly under `-.slice`.
pub fn unique_slice_name(prefix: &str) -> String {
    format!("{}.slice", unique_name(prefix).replace('-', "_"))
}

/// Polls `probe` until it returns `Some`, and returns that value.
///
/// # Panics
///
/// When `timeout` passes first, naming `what` was awaited.
pub fn wait_for<T>(what: &str, timeout: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    poll_until(what, timeout, || probe().ok_or_else(String::new))
}

/// Reads `read` until `seen` holds of what it gives (a journal that must
/// come to say something), and returns that.
///
/// # Panics
///
/// When `timeout` passes first, naming `what` was awaited and showing
/// what was read last.
pub fn wait_for_text(
    what: &str,
    timeout: Duration,
    mut read: impl FnMut() -> String,
    seen: impl Fn(&str) -> bool,
) -> String {
    poll_until(what, timeout, || {
        let text = read();
        if seen(&text) {
            Ok(text)
        } else {
            Err(format!("; read last:\n{text}"))
        }
    })
}

/// Polls `probe` until it returns `Ok`; on a timeout, panics naming `what`
/// followed by the last `Err`'s text.
fn poll_until<T>(what: &str, timeout: Duration, mut probe: impl FnMut() -> Result<T, String>) -> T {
    let start = Instant::now();
    loop {
        let last = match probe() {
            Ok(value) => return value,
            Err(last) => last,
        };
        let waited = start.elapsed();
        if waited >= timeout {
            panic!("timed out after {timeout:?} waiting for {what}{last}");
        }
        std::thread::sleep(poll_interval(waited).min(timeout - waited));
    }
}

/// A command's standard output, as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `s` quoted for `sh`.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Parses `KEY=value` lines (blank lines and `#` comments skipped).
fn parse_env_file(text: &str) -> Result<HashMap<String, String>, String> {
    let mut vars = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| format!("line {}: no '=' in {line:?}", i + 1))?;
        vars.insert(key.to_string(), value.to_string());
    }
    Ok(vars)
}

fn run(mut cmd: Command, what: &str) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run `{what}` in the node through nsenter: {e}"))
}

fn ok(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "`{what}` failed in the node ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn set_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("cannot make {} executable: {e}", path.display()));
}
