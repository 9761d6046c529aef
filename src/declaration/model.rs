//! The validated declaration: what the engine consumes.
//!
//! Only the validator builds these (their value fields are newtypes checked
//! on construction). They serialise to the canonical form of the declaration:
//! the same field names as the wire format, defaults made explicit, a fixed
//! field order and sorted maps, so the form of an unchanged resource is
//! byte-for-byte stable and can be hashed.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::base64;
use super::types::{
    AbsPath, ContainerName, ImageRef, Mode, ModuleName, NetworkName, Owner, ResourceId, UnitName,
    UserSpec, VolumeName,
};

/// A valid declaration, resources in declaration order (the order of apply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declaration {
    /// The resources, in order.
    pub resources: Vec<Resource>,
}

impl Serialize for Declaration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("declaration", &super::version::VERSION)?;
        map.serialize_entry("resources", &self.resources)?;
        map.end()
    }
}

/// A scheduled step, borrowed from a [`Declaration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step<'a> {
    /// The step's resource.
    pub resource: &'a Resource,
    /// Its container.
    pub container: &'a Container,
    /// Its schedule.
    pub schedule: &'a Schedule,
}

impl Declaration {
    /// The resource with this id.
    pub fn get(&self, id: &str) -> Option<&Resource> {
        self.resources.iter().find(|r| r.id.as_str() == id)
    }

    /// The container with this id (service, run-once or scheduled).
    pub fn container(&self, id: &str) -> Option<&Container> {
        match &self.get(id)?.kind {
            ResourceKind::Container(c) => Some(c),
            _ => None,
        }
    }

    /// Every container, in declaration order, with its resource.
    pub fn containers(&self) -> impl Iterator<Item = (&Resource, &Container)> {
        self.resources.iter().filter_map(|r| match &r.kind {
            ResourceKind::Container(c) => Some((r, &**c)),
            _ => None,
        })
    }

    /// Every scheduled step, in declaration order.
    pub fn steps(&self) -> impl Iterator<Item = Step<'_>> {
        self.containers()
            .filter_map(|(resource, container)| match &container.role {
                Role::Scheduled(schedule) => Some(Step {
                    resource,
                    container,
                    schedule,
                }),
                _ => None,
            })
    }

    /// The identity resource with this id.
    pub fn identity(&self, id: &str) -> Option<&super::identity::Identity> {
        match &self.get(id)?.kind {
            ResourceKind::Identity(i) => Some(i),
            _ => None,
        }
    }

    /// Every declared network, in declaration order, with its resource.
    pub fn networks(
        &self,
    ) -> impl Iterator<Item = (&Resource, &super::networking::NetworkResource)> {
        self.resources.iter().filter_map(|r| match &r.kind {
            ResourceKind::Network(n) => Some((r, n)),
            _ => None,
        })
    }

    /// Every declared volume, in declaration order, with its resource.
    pub fn volumes(&self) -> impl Iterator<Item = (&Resource, &super::networking::VolumeResource)> {
        self.resources.iter().filter_map(|r| match &r.kind {
            ResourceKind::Volume(v) => Some((r, v)),
            _ => None,
        })
    }

    /// The network peer of `c` (`network: "container:NAME"`): the
    /// container named NAME, with its resource.
    pub fn peer_of(&self, c: &Container) -> Option<(&Resource, &Container)> {
        let peer = c.network.as_ref()?.peer()?;
        self.containers().find(|(_, other)| other.name == *peer)
    }

    /// The scheduled step with this id.
    pub fn step(&self, id: &str) -> Option<Step<'_>> {
        self.steps().find(|s| s.resource.id.as_str() == id)
    }
}

/// One resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resource {
    /// Unique in the declaration.
    pub id: ResourceId,
    /// The module grouping it, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module: Option<ModuleName>,
    /// What it is.
    #[serde(flatten)]
    pub kind: ResourceKind,
}

/// What a resource is; serialised with its `type`. A container is boxed:
/// it is a kilobyte, and unboxed it made every resource one (a
/// declaration of 100,000 volumes then held 200 MB).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ResourceKind {
    /// A container: a service, a run-once step or a scheduled step.
    Container(Box<Container>),
    /// A file.
    File(File),
    /// A directory.
    Directory(Directory),
    /// A systemd unit.
    Unit(Unit),
    /// A system account and group.
    Identity(super::identity::Identity),
    /// A folder kept usable by declared identities through POSIX ACLs.
    SharedFolder(super::identity::SharedFolder),
    /// A network containers join.
    Network(super::networking::NetworkResource),
    /// A named volume containers mount.
    Volume(super::networking::VolumeResource),
}

/// `type: "container"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Container {
    /// The runtime's container name, unique in the declaration.
    pub name: ContainerName,
    /// Pinned image.
    pub image: ImageRef,
    /// Arguments replacing the image's command; never empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Environment variables.
    pub env: BTreeMap<String, String>,
    /// Files of environment variables, read at creation.
    pub env_files: Vec<AbsPath>,
    /// The env-files read as compose reads an env file (quotes,
    /// escapes, `export`, comments), not as `docker run --env-file` does
    /// (each value as written). Written `env-files-format: "compose"`.
    #[serde(
        rename = "env-files-format",
        skip_serializing_if = "is_docker_format",
        serialize_with = "format_name"
    )]
    pub env_files_compose: bool,
    /// Bind mounts and volumes; targets distinct.
    pub mounts: Vec<Mount>,
    /// The network; the runtime's default when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<Network>,
    /// Networks joined, each with its aliases and address (exclusive with
    /// `network`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<super::networking::NetworkJoin>,
    /// Ports published on the host.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<Port>,
    /// Resolver addresses.
    pub dns: Vec<IpAddr>,
    /// The user it runs as; the image's when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<UserSpec>,
    /// Service, run-once or scheduled (serialised as the fields that say so).
    #[serde(flatten)]
    pub role: Role,
    /// How long a run-once or scheduled run may take (never on a service).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_seconds"
    )]
    pub timeout: Option<Duration>,
    /// File resources whose change restarts this (service) container.
    pub restart_on: Vec<ResourceId>,
    /// Containers declared before it that it starts after (services).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<super::depends::Dependency>,
    /// The identity resource it runs as (exclusive with `user`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<ResourceId>,
    /// Paths whose owning group it is given as a supplementary group.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub grant: Vec<super::identity::Grant>,
    /// Its health check, replacing the image's; the image's when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<Health>,
    /// How long past its check's start period a replacement of this
    /// service has to become healthy before the old container is put back
    /// ([`DEFAULT_ROLLBACK_AFTER`] when absent). Not part of the
    /// container's identity: it says how a replacement is judged, not
    /// what the container is, so changing it replaces nothing.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_seconds"
    )]
    pub rollback_after: Option<Duration>,
    /// `"registry"`: `mesh-host update` moves the image's digest to what
    /// its tag points to now. Not part of the identity (the digest it
    /// writes is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update: Option<UpdatePolicy>,
    /// Entrypoint, privileges, limits and the rest beyond the image.
    #[serde(flatten)]
    pub options: super::options::SharedOptions,
}

/// The bound of a health-gated replacement when `rollback-after` is not
/// declared: long enough for a check at Docker's default 30 s interval to
/// have answered twice.
pub const DEFAULT_ROLLBACK_AFTER: Duration = Duration::from_secs(90);

impl Container {
    /// Its `rollback-after`, or the default.
    pub fn rollback_after(&self) -> Duration {
        self.rollback_after.unwrap_or(DEFAULT_ROLLBACK_AFTER)
    }
}

/// How a container's image is updated (`update`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UpdatePolicy {
    /// Follow the image's tag in its registry (Podman's
    /// `io.containers.autoupdate: registry`).
    Registry,
}

/// A container's declared `health`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// `"none"`: no health check, not even the image's.
    Disabled,
    /// A check run inside the container.
    Check(HealthCheck),
}

impl Serialize for Health {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Health::Disabled => serializer.serialize_str("none"),
            Health::Check(check) => check.serialize(serializer),
        }
    }
}

impl std::fmt::Display for Health {
    /// As `status` shows it: the command and what is set.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let check = match self {
            Health::Disabled => return f.write_str("none (the image's check is disabled)"),
            Health::Check(check) => check,
        };
        match &check.command {
            Some(command) => write!(f, "{}", serde_json::to_string(command).unwrap_or_default())?,
            None => f.write_str("the image's test")?,
        }
        let secs = |d: Option<Duration>| d.map(|d| d.as_secs());
        if let Some(s) = secs(check.interval) {
            write!(f, ", every {s} s")?;
        }
        if let Some(s) = secs(check.timeout) {
            write!(f, ", timeout {s} s")?;
        }
        if let Some(n) = check.retries {
            write!(f, ", {n} retries")?;
        }
        if let Some(s) = secs(check.start_period) {
            write!(f, ", start period {s} s")?;
        }
        Ok(())
    }
}

/// A health check (exec form); Docker's defaults where a field is absent
/// (30 s interval and timeout, 3 retries, no start period).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct HealthCheck {
    /// The program and its arguments, never empty; `None`: the image's
    /// own test, with the timings given here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Time between two checks.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_seconds"
    )]
    pub interval: Option<Duration>,
    /// Time one check may take.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_seconds"
    )]
    pub timeout: Option<Duration>,
    /// Failures in a row that make the container unhealthy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
    /// Time after a start during which failures do not count.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_seconds"
    )]
    pub start_period: Option<Duration>,
}

fn serialize_seconds<S: Serializer>(
    timeout: &Option<Duration>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match timeout {
        Some(d) => serializer.serialize_u64(d.as_secs()),
        None => serializer.serialize_none(),
    }
}

impl Container {
    /// The schedule, when this is a scheduled step.
    pub fn schedule(&self) -> Option<&Schedule> {
        match &self.role {
            Role::Scheduled(s) => Some(s),
            _ => None,
        }
    }
}

/// What a container is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// Kept running (restart policy `unless-stopped`).
    Service,
    /// Run to completion at apply, gating what follows.
    RunOnce,
    /// Run to completion on a cron cadence.
    Scheduled(Schedule),
}

impl Serialize for Role {
    /// As the wire fields: nothing for a service, `run-once: true`, or
    /// `schedule`, `schedule-zone`, `while-stopped`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self {
            Role::Service => {}
            Role::RunOnce => map.serialize_entry("run-once", &true)?,
            Role::Scheduled(schedule) => {
                map.serialize_entry("schedule", schedule.cron.expr())?;
                if let Some(zone) = schedule.zone {
                    map.serialize_entry("schedule-zone", zone.name())?;
                }
                map.serialize_entry("while-stopped", &schedule.while_stopped)?;
                // Written only when set: the canonical form (and so the
                // fingerprint) of a step without them stays what it was.
                if let Some(delay) = schedule.randomized_delay {
                    map.serialize_entry("randomized-delay", &delay.as_secs())?;
                }
                if schedule.catch_up {
                    map.serialize_entry("catch-up", &true)?;
                }
            }
        }
        map.end()
    }
}

/// When a scheduled step runs and what it holds still.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// The cadence.
    pub cron: crate::cron::CronSchedule,
    /// The zone it is read in; the host's local zone when absent.
    pub zone: Option<chrono_tz::Tz>,
    /// Service containers of the same module held still while it runs,
    /// stopped in this order and started again in reverse.
    pub while_stopped: Vec<ResourceId>,
    /// Each fire is delayed by a value in `[0, this)` stable per node and
    /// step (whole seconds; see `crate::schedule::splay`).
    pub randomized_delay: Option<Duration>,
    /// A fire missed while the node or the daemon was down is run once at
    /// start (`catch-up`, like systemd's `Persistent=`).
    pub catch_up: bool,
}

/// Where a mount comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MountSource {
    /// A host path (bind mount).
    Path(AbsPath),
    /// A named volume.
    Volume(VolumeName),
}

impl MountSource {
    /// Whether the two name the same data, or one lies inside the other.
    pub fn overlaps(&self, other: &MountSource) -> bool {
        match (self, other) {
            (MountSource::Path(a), MountSource::Path(b)) => a.overlaps(b),
            (MountSource::Volume(a), MountSource::Volume(b)) => a == b,
            _ => false,
        }
    }
}

impl std::fmt::Display for MountSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MountSource::Path(p) => write!(f, "{p}"),
            MountSource::Volume(v) => write!(f, "volume {v}"),
        }
    }
}

impl Serialize for MountSource {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            MountSource::Path(p) => serializer.serialize_str(p),
            MountSource::Volume(v) => serializer.serialize_str(v),
        }
    }
}

/// One mount of a container.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Mount {
    /// What is mounted.
    pub source: MountSource,
    /// Where, inside the container.
    pub target: AbsPath,
    /// Mounted read-only.
    pub read_only: bool,
}

/// One published port: the container's `container` port answers on the
/// host's `host` port (one the runtime picks when absent), at `address`
/// (every address when absent).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Port {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<u16>,
    pub container: u16,
    pub protocol: Protocol,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<IpAddr>,
}

impl Port {
    /// Whether `self` and `other` bind the same host port: the same
    /// protocol and port, and the same address or either of them every
    /// address.
    pub fn binds_same(&self, other: &Port) -> bool {
        self.host.is_some()
            && self.host == other.host
            && self.protocol == other.protocol
            && match (self.address, other.address) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

impl std::fmt::Display for Port {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.address {
            Some(IpAddr::V6(a)) => write!(f, "[{a}]:")?,
            Some(a) => write!(f, "{a}:")?,
            None => {}
        }
        match self.host {
            Some(h) => write!(f, "{h}")?,
            None => write!(f, "*")?,
        }
        write!(f, "->{}/{}", self.container, self.protocol.as_str())
    }
}

/// A published port's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Tcp,
    Udp,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        }
    }
}

/// A container's network.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Network {
    /// The host's network namespace.
    Host,
    /// No network.
    None,
    /// A network that exists in the runtime.
    Named(NetworkName),
    /// The network namespace of another service container of the
    /// declaration, its peer (`container:NAME`): a sidecar such as a VPN
    /// whose followers share its addresses, ports and `127.0.0.1`. The
    /// peer is made and started before its follower, and a recreate of
    /// the peer recreates the follower after it.
    Container(ContainerName),
}

impl Network {
    /// The peer whose network namespace it shares, for `container:NAME`.
    pub fn peer(&self) -> Option<&ContainerName> {
        match self {
            Network::Container(name) => Some(name),
            _ => None,
        }
    }
}

impl Serialize for Network {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Network::Host => serializer.serialize_str("host"),
            Network::None => serializer.serialize_str("none"),
            Network::Named(name) => serializer.serialize_str(name),
            Network::Container(peer) => serializer.serialize_str(&format!("container:{peer}")),
        }
    }
}

/// `type: "file"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// Absolute path, not `/`.
    pub path: AbsPath,
    /// The bytes to write.
    pub content: Vec<u8>,
    /// Permission bits (default `0644`).
    pub mode: Mode,
    /// Owner; root's (whoever writes it) when absent.
    pub owner: Option<Owner>,
}

impl Serialize for File {
    /// Content as `content` when it is UTF-8 text, else as `content-base64`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("path", &self.path)?;
        match std::str::from_utf8(&self.content) {
            Ok(text) => map.serialize_entry("content", text)?,
            Err(_) => map.serialize_entry("content-base64", &base64::encode(&self.content))?,
        }
        map.serialize_entry("mode", &self.mode)?;
        if let Some(owner) = &self.owner {
            map.serialize_entry("owner", owner)?;
        }
        map.end()
    }
}

/// `type: "directory"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Directory {
    /// Absolute path, not `/`.
    pub path: AbsPath,
    /// Permission bits (default `0755`).
    pub mode: Mode,
    /// Owner; root's when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
}

/// `type: "unit"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unit {
    /// The unit's name, with its type suffix.
    pub name: UnitName,
    /// The unit file.
    pub content: String,
    /// Whether it should be running.
    pub state: UnitState,
    /// Enabled at boot; left as it is when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// The state a unit is kept in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnitState {
    /// Running, or for a oneshot without RemainAfterExit, ran successfully.
    #[default]
    Started,
    /// Not running.
    Stopped,
}

/// `env-files-format` left out for Docker's, the default.
fn is_docker_format(compose: &bool) -> bool {
    !*compose
}

fn format_name<S: serde::Serializer>(compose: &bool, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(if *compose { "compose" } else { "docker" })
}
