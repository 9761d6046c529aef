//! The container runtime behind a small trait; Docker Engine API via bollard.
//!
//! Everything the host does with containers goes through
//! [`ContainerRuntime`], so apply and the scheduler can be tested against the
//! in-memory `fake::FakeRuntime` and the same behaviour against a real
//! Docker ([`docker::DockerRuntime`], `tests/runtime_docker.rs`).
//!
//! The trait speaks in container *names*: the host names every container it
//! manages, and a name survives a recreate while an id does not.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::pin::Pin;

use futures_util::Stream;
use serde::{Deserialize, Serialize};

pub mod docker;
mod error;
#[cfg(any(test, feature = "fake-runtime"))]
pub mod fake;
mod labels;
pub mod networking;
mod process_options;
mod replace;
pub use error::{explain, RuntimeError, UNREACHABLE_HINT};
pub use labels::Labels;
pub use networking::{NetworkAttach, NetworkInfo, NetworkSpec, VolumeInfo, VolumeSpec};

pub use docker::DockerRuntime;
pub use process_options::ProcessOptions;
pub use replace::{
    carried_volumes, is_anonymous_volume, kept_volumes_note, put_back, remove_replaced, replace,
    replace_keeping_aside, replaced_base, replaced_name, Replaced,
};

/// Label set to `"true"` on every container the host creates; the host lists,
/// changes and removes only containers carrying it.
pub const LABEL_MANAGED: &str = "mesh-host.managed";

/// Label holding the declaration resource id a container was created for.
pub const LABEL_RESOURCE: &str = "mesh-host.resource";

/// Label holding the declaration module of that resource, when it has one.
pub const LABEL_MODULE: &str = "mesh-host.module";

/// The value of [`LABEL_MANAGED`] on managed containers.
pub const MANAGED_VALUE: &str = "true";

/// Label holding the name a container made under its making name
/// ([`making_name`]) is for.
pub const LABEL_MADE_AS: &str = "mesh-host.made-as";

/// How old a container under a making name must be before an apply takes
/// it for one left by an interrupted create: a create's three requests take
/// at most three minutes (their timeouts), normally a fraction of a second.
pub const MAKING_GRACE: std::time::Duration = std::time::Duration::from_secs(600);

/// The name a container is created under while it is made whole, before it
/// is renamed to `name` (Docker, network `none`: docs/apply.md).
pub fn making_name(name: &str) -> String {
    format!("{name}.making")
}

/// Whether `summary` is a container an interrupted create left under its
/// making name, at least `grace` old at `now` (Unix seconds).
pub fn is_left_from_making(
    summary: &ContainerSummary,
    now: i64,
    grace: std::time::Duration,
) -> bool {
    !summary.running
        && summary
            .labels
            .get(LABEL_MADE_AS)
            .is_some_and(|name| summary.name == making_name(name))
        && now.saturating_sub(summary.created) >= grace.as_secs() as i64
}

/// What a container runtime reports, read-only: the side of the runtime
/// an apply's decisions are made from (`apply::decide` holds only this),
/// so that deciding cannot change the machine. [`ContainerRuntime`] adds
/// the calls that do.
#[async_trait::async_trait]
pub trait RuntimeView: Send + Sync + fmt::Debug {
    /// Inspects a container; `None` when there is none by that name.
    async fn inspect(&self, name: &str) -> Result<Option<ContainerInfo>, RuntimeError>;

    /// Every container carrying `mesh-host.managed=true`, in any state, read
    /// with one API call (a no-op apply counts on that cost).
    async fn list_managed(&self) -> Result<Vec<ContainerSummary>, RuntimeError>;

    /// Whether an image is present locally (a digest reference matches only
    /// that digest).
    async fn image_present(&self, image: &str) -> Result<bool, RuntimeError>;

    /// The runtime's cgroup driver, which decides what a cgroup parent is.
    async fn cgroup_driver(&self) -> Result<CgroupDriver, RuntimeError>;

    /// Start, die and stop events of the named containers, from the moment of
    /// this call on (events between the call and the subscription reaching
    /// the runtime are replayed). An empty `names` gives a stream that never
    /// yields. The stream ends, or yields an error, when the runtime closes
    /// the connection; the caller subscribes again.
    async fn events(&self, names: &[String]) -> Result<EventStream, RuntimeError>;

    /// The repository digests (`REPO@sha256:…`) of the local image
    /// `reference`; `None` when there is no such image (`mesh-host
    /// import` pins tags with them).
    async fn repo_digests(&self, reference: &str) -> Result<Option<Vec<String>>, RuntimeError>;

    /// The digests (`sha256:…`) the registry's `REPO:TAG` is known by now,
    /// asked through the runtime with its registry credentials. Docker's
    /// distribution inspection answers one and nothing is pulled; Podman
    /// 4.3's compatible API has no such inspection, so there the tag is
    /// pulled (as `podman auto-update` does) and the digests of the image
    /// it gave are read: the apply that follows finds it present.
    async fn registry_digests(&self, reference: &str) -> Result<Vec<String>, RuntimeError>;

    /// Whether the runtime's own log driver writes a container's output to
    /// the journal with the fields of its [`JournalLog`] (Docker). When it
    /// does not (Podman 4.3, whose driver carries no label), mesh-host
    /// forwards the output itself, read with [`RuntimeView::output`].
    fn journals_output(&self) -> bool {
        true
    }

    /// What container `name` wrote, stdout and stderr, from its first
    /// line, as the runtime keeps it; with `follow`, what comes too, until
    /// the container ends. The same lines in the same order each time.
    async fn output(&self, name: &str, follow: bool) -> Result<OutputChunks, RuntimeError>;

    /// The network by this name; `None` when there is none.
    async fn network(&self, name: &str) -> Result<Option<NetworkInfo>, RuntimeError>;

    /// The named volume by this name; `None` when there is none.
    async fn volume(&self, name: &str) -> Result<Option<VolumeInfo>, RuntimeError>;
}

/// A container runtime: Docker (or anything speaking its Engine API).
///
/// Every method addresses containers by name. Methods that change state
/// confirm the result by inspecting afterwards, so a caller that got `Ok`
/// can rely on the state it asked for. What it reports is its
/// [`RuntimeView`].
#[async_trait::async_trait]
pub trait ContainerRuntime: RuntimeView {
    /// Creates (does not start) a container. The image must be present:
    /// create never pulls. [`LABEL_MANAGED`] is always set. A name already in
    /// use is [`RuntimeError::Conflict`]; a missing image is
    /// [`RuntimeError::NotFound`].
    async fn create(&self, spec: &ContainerSpec) -> Result<ContainerId, RuntimeError>;

    /// Starts a container and confirms by inspection that it started (it is
    /// running, or it already ran and exited). Already running is `Ok`.
    async fn start(&self, name: &str) -> Result<(), RuntimeError>;

    /// Stops a container with its own stop signal and grace period (its
    /// `StopSignal` / `StopTimeout`, else the runtime's defaults) and confirms
    /// by inspection that it is not running. Already stopped is `Ok`.
    async fn stop(&self, name: &str) -> Result<(), RuntimeError>;

    /// Starts a container and returns what an inspection right after it
    /// says (`None`: gone), without the inspections [`start`](Self::start)
    /// makes around it: what a window's close uses between two held
    /// starts, where every request delays the next service. Already
    /// running is not an error. The caller judges the inspection (running,
    /// or exited at once).
    async fn start_and_inspect(&self, name: &str) -> Result<Option<ContainerInfo>, RuntimeError> {
        self.start(name).await?;
        self.inspect(name).await
    }

    /// Sends SIGKILL (for a run that outlived its stop grace) and waits
    /// briefly until it is not running. Not running is `Ok`.
    async fn kill(&self, name: &str) -> Result<(), RuntimeError>;

    /// Removes a container, running or not. Its volumes stay, anonymous
    /// ones included: mesh-host never deletes a volume. Missing is `Ok`.
    async fn remove(&self, name: &str) -> Result<(), RuntimeError>;

    /// Removes a container only if it is not running, in one request the
    /// runtime answers atomically: a running one is
    /// [`RuntimeError::Conflict`] and stays. Missing is `Ok`. Its volumes
    /// stay. For what must never cut a run short (a step's ready container
    /// replaced).
    async fn remove_stopped(&self, name: &str) -> Result<(), RuntimeError>;

    /// Renames a container (running or not). A missing one is
    /// [`RuntimeError::NotFound`]; a name in use is
    /// [`RuntimeError::Conflict`].
    async fn rename(&self, name: &str, to: &str) -> Result<(), RuntimeError>;

    /// Waits for the current run of a container to end and returns its exit
    /// code; for a created, never started container, waits for the run that a
    /// later start begins. A run that already ended returns its code at once,
    /// so calling this right after [`start`](Self::start) never misses a
    /// quick exit. A container removed before its exit could be read (e.g.
    /// auto-remove) is [`RuntimeError::NotFound`].
    async fn wait_exit(&self, name: &str) -> Result<i64, RuntimeError>;

    /// Pulls an image by its reference (`REPO@sha256:...`). A registry answer
    /// such as 404 or 401 is [`RuntimeError::Registry`] (retrying will not
    /// help); no answer, a refused connection or a 5xx is
    /// [`RuntimeError::RegistryUnavailable`] (the caller may retry).
    async fn pull(&self, image: &str) -> Result<(), RuntimeError>;

    /// Creates a network, labelled [`LABEL_MANAGED`]. A name in use is
    /// [`RuntimeError::Conflict`].
    async fn create_network(&self, spec: &NetworkSpec) -> Result<(), RuntimeError>;

    /// Removes a network no container is attached to. Missing is `Ok`; one
    /// still in use is [`RuntimeError::Conflict`].
    async fn remove_network(&self, name: &str) -> Result<(), RuntimeError>;

    /// Attaches a container (running or not) to a network with its
    /// aliases and address.
    async fn connect(&self, container: &str, attach: &NetworkAttach) -> Result<(), RuntimeError>;

    /// Detaches a container from a network (forcibly: its endpoint goes
    /// even while it runs). Not attached is `Ok`.
    async fn disconnect(&self, container: &str, network: &str) -> Result<(), RuntimeError>;

    /// Creates a named volume. One by that name that exists already is
    /// left as it is (the caller compares it first).
    async fn create_volume(&self, spec: &VolumeSpec) -> Result<(), RuntimeError>;
}

/// Stop a run (its own stop grace, then a kill if the stop fails) and read
/// its exit status: how a step or run-once over its timeout is ended.
pub async fn stop_run(runtime: &dyn ContainerRuntime, name: &str) -> Option<i64> {
    if let Err(e) = runtime.stop(name).await {
        tracing::warn!("cannot stop {name}: {e}; killing it");
        if let Err(e) = runtime.kill(name).await {
            tracing::error!("cannot kill {name}: {e}");
        }
    }
    match runtime.inspect(name).await {
        Ok(Some(info)) => info.exit_code,
        _ => None,
    }
}

/// Stop a run and confirm that it no longer runs (stopped, or gone),
/// retrying while the runtime does not answer, until `deadline`: what must
/// hold before a window's held containers start again. Returns the run's
/// exit status when one could be read, or why it could not be confirmed.
pub async fn stop_confirmed(
    runtime: &dyn ContainerRuntime,
    name: &str,
    deadline: tokio::time::Instant,
) -> Result<Option<i64>, String> {
    let mut backoff = std::time::Duration::from_millis(500);
    let mut stopped = false;
    loop {
        let last = match runtime.inspect(name).await {
            Ok(None) => return Ok(None),
            Ok(Some(info)) if !info.running => return Ok(info.exit_code),
            // A stop or kill that answered: the next look confirms it.
            Ok(Some(_)) if !stopped => match runtime.stop(name).await {
                Ok(()) => {
                    stopped = true;
                    continue;
                }
                Err(e) => {
                    tracing::warn!("cannot stop {name}: {e}; killing it");
                    match runtime.kill(name).await {
                        Ok(()) => {
                            stopped = true;
                            continue;
                        }
                        Err(e) => e.to_string(),
                    }
                }
            },
            Ok(Some(_)) => {
                stopped = false;
                "still running after a stop".to_string()
            }
            Err(e) => e.to_string(),
        };
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Err(format!("{name} not confirmed stopped: {last}"));
        }
        tokio::time::sleep(backoff.min(deadline - now)).await;
        backoff = (backoff * 2).min(std::time::Duration::from_secs(15));
    }
}

/// The stream returned by [`RuntimeView::events`].
pub type EventStream = Pin<Box<dyn Stream<Item = Result<ContainerEvent, RuntimeError>> + Send>>;

/// A container id as the runtime reports it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContainerId(pub String);

impl fmt::Display for ContainerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Everything needed to create one container.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerSpec {
    /// Container name (unique on the runtime).
    pub name: String,
    /// Image reference, normally pinned by digest.
    pub image: String,
    /// Command (arguments after the image's entrypoint); `None` keeps the
    /// image's own.
    pub command: Option<Vec<String>>,
    /// Environment, already merged from env-files by the caller; later
    /// entries win at the runtime as with `docker run -e`.
    pub env: Vec<(String, String)>,
    /// Bind mounts and volumes.
    pub mounts: Vec<MountSpec>,
    /// Targets the runtime gives a fresh volume of no name (Docker's
    /// `Config.Volumes`, as an image's `VOLUME`) unless a mount covers
    /// them: a replacement carries the old one's there.
    pub anonymous_volumes: Vec<String>,
    /// `"host"`, `"none"` or a network name; `None` = the runtime's default
    /// (or the first of `networks`).
    pub network: Option<String>,
    /// Networks joined, with aliases and addresses; the first is the
    /// container's own network (exclusive with `network`).
    pub networks: Vec<NetworkAttach>,
    /// Ports published on the host.
    pub ports: Vec<PortSpec>,
    /// How its process starts and stops, what it may do and use; the
    /// image's and the runtime's own where unset.
    pub process: ProcessOptions,
    /// DNS servers for the container.
    pub dns: Vec<IpAddr>,
    /// `UID[:GID]` to run as; `None` = the image's user.
    pub user: Option<String>,
    /// Labels; [`LABEL_MANAGED`] is added by [`ContainerRuntime::create`].
    pub labels: Labels,
    /// Restart policy.
    pub restart: RestartPolicy,
    /// Cgroup parent: a cgroup path with the cgroupfs driver, a slice name
    /// (`*.slice`) with the systemd driver.
    pub cgroup_parent: Option<String>,
    /// Remove the container when it exits.
    pub auto_remove: bool,
    /// Supplementary group ids (`HostConfig.GroupAdd`).
    pub groups: Vec<String>,
    /// Its health check; `None` keeps the image's. Boxed, as the journal
    /// below: most containers (every step's) set neither, and thousands of
    /// specs are kept.
    pub health: Option<Box<HealthSpec>>,
    /// Its output written to the journal by the runtime itself; `None`
    /// keeps the runtime's default log driver.
    pub journal: Option<Box<JournalLog>>,
}

/// A container's process options (Docker's `Config` and `HostConfig`
/// fields of the same meaning); each unset or empty keeps the image's or
/// the runtime's own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessSpec {
    pub entrypoint: Option<Vec<String>>,
    pub working_dir: Option<String>,
    /// `os/arch[/variant]`: the image pulled and the container created as
    /// that platform's.
    pub platform: Option<String>,
    pub hostname: Option<String>,
    pub stop_signal: Option<String>,
    /// Seconds a stop waits before SIGKILL.
    pub stop_grace: Option<u64>,
    pub init: bool,
    pub cap_add: Vec<String>,
    pub cap_drop: Vec<String>,
    pub privileged: bool,
    pub read_only_root: bool,
    pub no_new_privileges: bool,
    /// Security options beyond no-new-privileges, as Docker takes them.
    pub security_opt: Vec<String>,
    /// A log driver and its options; `None` keeps the runtime's default
    /// (a step's journal output is [`ContainerSpec::journal`]).
    pub logging: Option<LogSpec>,
    /// Bytes.
    pub memory: Option<u64>,
    /// Bytes.
    pub memory_reservation: Option<u64>,
    /// Billionths of a CPU.
    pub nano_cpus: Option<u64>,
    pub pids_limit: Option<u64>,
    /// Bytes.
    pub shm_size: Option<u64>,
    /// tmpfs mounts: target and Docker's options (`size=N,mode=1777`).
    pub tmpfs: Vec<(String, String)>,
    /// Resource limits: name, soft, hard.
    pub ulimits: Vec<(String, u64, u64)>,
    pub sysctls: Vec<(String, String)>,
    /// `name:address` entries of `/etc/hosts`.
    pub extra_hosts: Vec<String>,
    /// Devices: host path, container path, cgroup permissions.
    pub devices: Vec<(String, String, String)>,
    /// Devices asked of a device driver (`HostConfig.DeviceRequests`).
    pub device_requests: Vec<DeviceRequestSpec>,
}

/// One request for devices of a driver (Docker's `DeviceRequest`), as
/// compose sends it: its capabilities one AND list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceRequestSpec {
    /// Empty: the first driver with the capabilities.
    pub driver: String,
    /// `-1`: every device; `0` with `device_ids`.
    pub count: i64,
    pub device_ids: Vec<String>,
    pub capabilities: Vec<String>,
    pub options: Vec<(String, String)>,
}

/// A declared log driver (Docker's `LogConfig`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogSpec {
    /// The driver; `None` is the runtime's default one.
    pub driver: Option<String>,
    /// Its options.
    pub options: Vec<(String, String)>,
}

/// One published port (Docker's `PortBindings` entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(into = "PortWire")]
pub struct PortSpec {
    /// The host's port; `None` lets the runtime pick one.
    pub host: Option<u16>,
    /// The container's port.
    pub container: u16,
    /// `tcp` or `udp`.
    pub protocol: &'static str,
    /// The host address bound; `None` binds every address.
    pub address: Option<IpAddr>,
}

/// A [`PortSpec`] as it is written: its protocol by name (the spec holds
/// a name of the program's, not allocated).
#[derive(Serialize, Deserialize)]
struct PortWire {
    host: Option<u16>,
    container: u16,
    protocol: String,
    address: Option<IpAddr>,
}

impl From<PortSpec> for PortWire {
    fn from(p: PortSpec) -> Self {
        PortWire {
            host: p.host,
            container: p.container,
            protocol: p.protocol.to_owned(),
            address: p.address,
        }
    }
}

impl<'de> Deserialize<'de> for PortSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        PortSpec::try_from(PortWire::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl TryFrom<PortWire> for PortSpec {
    type Error = String;

    fn try_from(p: PortWire) -> Result<Self, String> {
        let protocol = match p.protocol.as_str() {
            "tcp" => "tcp",
            "udp" => "udp",
            other => return Err(format!("no port protocol {other:?}")),
        };
        Ok(PortSpec {
            host: p.host,
            container: p.container,
            protocol,
            address: p.address,
        })
    }
}

/// A container's output kept in the journal: written there by the runtime
/// (Docker's `journald` log driver), each line an entry, kept whatever
/// happens to the process that started the container; or, where the
/// runtime's driver carries no label ([`RuntimeView::journals_output`]
/// false: Podman 4.3), kept in the runtime's own log of the container and
/// forwarded to the journal by mesh-host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalLog {
    /// Labels the runtime turns into fields of each entry (Docker: a
    /// label `mesh.step` becomes `MESH_STEP`).
    pub labels: Vec<String>,
    /// The entries' `SYSLOG_IDENTIFIER` where those labels are carried.
    pub tag: String,
}

/// Which stream of a container a piece of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// A piece of a container's output as the runtime gives it back: bytes of
/// one stream, a line or more, or part of one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputChunk {
    /// Its stream.
    pub stream: OutputStream,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// The stream returned by [`RuntimeView::output`].
pub type OutputChunks = Pin<Box<dyn Stream<Item = Result<OutputChunk, RuntimeError>> + Send>>;

/// A health check a container is created with (Docker's `Healthcheck`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum HealthSpec {
    /// No check, not even the image's (`Test: ["NONE"]`).
    Disabled,
    /// A check run inside the container; the runtime's defaults where a
    /// value is `None`.
    Check {
        /// The program and its arguments (`Test: ["CMD", ...]`); `None`:
        /// the image's own test (Docker takes each value left unset from
        /// the image's check).
        command: Option<Vec<String>>,
        /// Time between two checks.
        interval: Option<std::time::Duration>,
        /// Time one check may take.
        timeout: Option<std::time::Duration>,
        /// Failures in a row that make it unhealthy.
        retries: Option<u32>,
        /// Time after a start during which failures do not count.
        start_period: Option<std::time::Duration>,
    },
}

/// One mount of a [`ContainerSpec`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountSpec {
    /// An absolute host path (a bind mount) or a volume name.
    pub source: String,
    /// Absolute path inside the container.
    pub target: String,
    /// Mount read-only.
    pub read_only: bool,
}

impl MountSpec {
    /// Whether this is a bind mount of a host path (else a named volume).
    pub fn is_bind(&self) -> bool {
        self.source.starts_with('/')
    }
}

/// Restart policy of a container.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RestartPolicy {
    /// Never restarted by the runtime (steps).
    #[default]
    No,
    /// Restarted by the runtime unless stopped on purpose (services).
    UnlessStopped,
    /// Restarted whenever it stops, and when the runtime starts.
    Always,
    /// Restarted only after a non-zero exit.
    OnFailure,
}

/// What [`RuntimeView::inspect`] reports about a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerInfo {
    /// Full container id.
    pub id: String,
    /// Container name, without Docker's leading `/`.
    pub name: String,
    /// The image reference the container was created from.
    pub image: String,
    /// Whether it is running (or restarting).
    pub running: bool,
    /// Runtime status: `created`, `running`, `exited`, `restarting`, ...
    pub status: String,
    /// Exit code of the last run, once it has exited (`exited` or `dead`).
    pub exit_code: Option<i64>,
    /// When the last run started (RFC 3339), if it ever started.
    pub started_at: Option<String>,
    /// When the last run ended (RFC 3339), if it ever ended.
    pub finished_at: Option<String>,
    /// The container's labels.
    pub labels: BTreeMap<String, String>,
    /// Host PID of its main process while it runs.
    pub pid: Option<u32>,
    /// The kernel's OOM killer killed a process of its last run (Docker's
    /// and Podman's `State.OOMKilled`).
    pub oom_killed: bool,
    /// Its health check's state, when it has one.
    pub health: Option<Health>,
    /// The volumes mounted in it (named and anonymous; not bind mounts).
    pub volumes: Vec<VolumeMount>,
}

/// A volume mounted in a container, as its inspection shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeMount {
    /// The volume's name (an anonymous one's is 64 hex digits).
    pub name: String,
    /// Where it is mounted inside the container.
    pub target: String,
    /// Mounted read-only.
    pub read_only: bool,
}

/// The state of a container's health check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    /// `starting`, `healthy` or `unhealthy`.
    pub status: String,
    /// The output of the last check, trimmed (empty before the first).
    pub last_output: String,
    /// The longest the check takes to reach a verdict after a start: its
    /// start period, then one check more than its retries, each up to
    /// interval + timeout (Docker's defaults where unset). `None`: unknown.
    pub decides_within: Option<std::time::Duration>,
    /// Its start period (zero when none is set or it is unknown).
    pub start_period: std::time::Duration,
}

/// One entry of [`RuntimeView::list_managed`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerSummary {
    /// Full container id.
    pub id: String,
    /// Container name, without Docker's leading `/`.
    pub name: String,
    /// Whether it is running.
    pub running: bool,
    /// The container's labels.
    pub labels: BTreeMap<String, String>,
    /// When it was created, in Unix seconds.
    pub created: i64,
    /// Its network mode as the runtime keeps it (`HostConfig.NetworkMode`):
    /// `container:<id>` for one sharing another's namespace, the id of
    /// that container as it was when this one was created.
    pub network_mode: Option<String>,
}

impl ContainerSummary {
    /// The container whose network namespace it shares, as the runtime
    /// recorded it at create (an id; a name on a runtime that keeps one).
    pub fn network_peer(&self) -> Option<&str> {
        self.network_mode
            .as_deref()?
            .strip_prefix("container:")
            .filter(|peer| !peer.is_empty())
    }
}

/// How the runtime places containers in cgroups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupDriver {
    /// Plain cgroup paths; a cgroup parent is a path.
    Cgroupfs,
    /// Through systemd; a cgroup parent is a slice and each container gets a
    /// scope of its own.
    Systemd,
}

impl fmt::Display for CgroupDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CgroupDriver::Cgroupfs => "cgroupfs",
            CgroupDriver::Systemd => "systemd",
        })
    }
}

/// A lifecycle event of a container, from [`RuntimeView::events`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerEvent {
    /// Container name.
    pub name: String,
    /// What happened.
    pub kind: ContainerEventKind,
}

/// The kinds of [`ContainerEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerEventKind {
    /// The container started (by anyone: the host, an operator, a restart
    /// policy).
    Start,
    /// Its main process ended.
    Die {
        /// Exit code, when the runtime reported one.
        exit_code: Option<i64>,
    },
    /// It was stopped through the runtime's stop operation (follows `Die`).
    Stop,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_mounts_are_absolute_paths_and_the_rest_volumes() {
        let mount = |source: &str| MountSpec {
            source: source.into(),
            target: "/data".into(),
            read_only: false,
        };
        assert!(mount("/srv/data").is_bind());
        assert!(!mount("data-volume").is_bind());
    }
}
