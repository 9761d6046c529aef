//! The wire format: serde structs mirroring the JSON of a declaration.
//!
//! Serde alone stops at the first problem, and the contract wants all of
//! them. So each field is a [`Field`], which keeps a value of the wrong JSON
//! type as a recorded error rather than failing the whole struct, and each
//! struct gathers the keys it does not know in `unknown` (in place of
//! `deny_unknown_fields`, which would stop at the first) for the validator to
//! refuse one by one, with their paths.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

mod read;
pub use read::read_declaration;

/// The JSON kind of a value, as an operator reads it.
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// One field of a raw struct: absent, read, or present with the wrong type.
///
/// Deserialising a `Field` never fails, so a bad field is reported by the
/// validator next to every other problem instead of ending the parse.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Field<T> {
    /// The key was not there.
    #[default]
    Absent,
    /// The key was there and its value read as `T`.
    Present(T),
    /// The key was there but its value is not a `T`.
    Invalid {
        /// The value as sent.
        value: Value,
        /// Why it could not be read, in the words of an operator.
        error: String,
    },
}

impl<T> Field<T> {
    /// Whether the key was left out. A present but invalid field is not
    /// absent: checks that depend on presence see it as present.
    pub fn is_absent(&self) -> bool {
        matches!(self, Field::Absent)
    }
}

/// Serde speaks of maps, sequences and unit values; a JSON sender thinks of
/// objects, arrays and null.
pub(super) fn plain_words(message: &str) -> String {
    message
        .replace("invalid type: map", "invalid type: object")
        .replace("invalid type: sequence", "invalid type: array")
        .replace("invalid type: unit value", "invalid type: null")
        .replace("expected a sequence", "expected an array")
        .replace("expected a map", "expected an object")
}

/// A list whose items are each read on their own.
pub type List<T> = Field<Vec<Field<T>>>;

/// The whole declaration but its resources, which [`read_declaration`]
/// gives one by one as it reads them (its unknown keys' values are not
/// kept either).
#[derive(Debug, Default)]
pub struct RawDeclaration {
    /// The version; [`super::parse`] checks it before anything else.
    pub declaration: Field<Value>,
    /// What `resources` was.
    pub resources: Listed,
    /// Keys this version does not know (their values are not kept).
    pub unknown: BTreeMap<String, Value>,
}

/// What the `resources` key held.
#[derive(Debug, Default)]
pub enum Listed {
    /// No such key.
    #[default]
    Absent,
    /// Not an array: the value sent.
    Invalid(Value),
    /// An array, each item of which was given to the reader's caller, up
    /// to [`MAX_RESOURCES`]; `beyond` items more were skipped unread.
    Read { beyond: usize },
}

/// How many resources a declaration may declare: 100,000, ten times what
/// the largest declaration of a node holds by hand. Each costs its entry
/// in the validator whatever it is (a list of a million `{}` would cost
/// gigabytes), so past this bound the rest is skipped and the
/// declaration refused.
pub const MAX_RESOURCES: usize = 100_000;

/// One resource, by its `type` (read by [`read`]). A container is boxed:
/// its raw struct is kilobytes (a `Field` per key it may have), and the
/// list of resources read holds one slot per resource until validated.
#[derive(Debug)]
pub enum RawResource {
    /// `type: "container"`.
    Container(Box<RawContainer>),
    /// `type: "file"`.
    File(RawFile),
    /// `type: "directory"`.
    Directory(RawDirectory),
    /// `type: "unit"`.
    Unit(RawUnit),
    /// `type: "identity"`.
    Identity(RawIdentity),
    /// `type: "shared-folder"`.
    SharedFolder(RawSharedFolder),
    /// `type: "network"`.
    Network(RawNetwork),
    /// `type: "volume"`.
    Volume(RawVolume),
}

/// The type names a resource may have, for messages.
pub const RESOURCE_TYPES: [&str; 8] = [
    "container",
    "file",
    "directory",
    "unit",
    "identity",
    "shared-folder",
    "network",
    "volume",
];

impl RawResource {
    /// The `id` field, whatever the type.
    pub fn id(&self) -> &Field<String> {
        match self {
            RawResource::Container(r) => &r.id,
            RawResource::File(r) => &r.id,
            RawResource::Directory(r) => &r.id,
            RawResource::Unit(r) => &r.id,
            RawResource::Identity(r) => &r.id,
            RawResource::SharedFolder(r) => &r.id,
            RawResource::Network(r) => &r.id,
            RawResource::Volume(r) => &r.id,
        }
    }
}

/// `type: "container"`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a container object")]
pub struct RawContainer {
    /// Unique id.
    pub id: Field<String>,
    /// Module grouping resources.
    pub module: Field<String>,
    /// The runtime's container name.
    pub name: Field<String>,
    /// `REPO[:TAG]@sha256:<hex>`.
    pub image: Field<String>,
    /// Arguments replacing the image's command.
    pub command: List<String>,
    /// Environment variables.
    pub env: Field<BTreeMap<String, Field<String>>>,
    /// Files of environment variables.
    pub env_files: List<String>,
    /// Bind mounts and volumes.
    pub mounts: List<RawMount>,
    /// `host`, `none` or a network name.
    pub network: Field<String>,
    /// Networks joined, with aliases and addresses.
    pub networks: List<RawNetworkJoin>,
    /// Ports published on the host.
    pub ports: List<RawPort>,
    /// Resolver addresses.
    pub dns: List<String>,
    /// `UID[:GID]`.
    pub user: Field<String>,
    /// A step run to completion at apply.
    pub run_once: Field<bool>,
    /// Five-field cron expression.
    pub schedule: Field<String>,
    /// IANA zone of `schedule`.
    pub schedule_zone: Field<String>,
    /// Containers held still while the step runs.
    pub while_stopped: List<String>,
    /// Seconds a step may run.
    pub timeout: Field<Value>,
    /// File ids whose change restarts this container.
    pub restart_on: List<String>,
    /// Containers declared before it that it starts after.
    pub depends_on: List<RawDependency>,
    /// The id of the identity it runs as.
    pub identity: Field<String>,
    /// Paths whose owning group it is given.
    pub grant: List<RawGrant>,
    /// Its health check: an object, or `"none"`.
    pub health: Field<Value>,
    /// Seconds each fire is delayed by, at most (exclusive).
    pub randomized_delay: Field<Value>,
    /// Run a fire missed while the daemon was down once at start.
    pub catch_up: Field<bool>,
    /// Options beyond the image (entrypoint, privileges, limits).
    #[serde(flatten)]
    pub options: RawOptions,
    /// Keys a container does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// A container's options beyond its image ([`super::options`]), read
/// from the container object's own keys.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
pub struct RawOptions {
    pub restart: Field<String>,
    pub entrypoint: List<String>,
    pub working_dir: Field<String>,
    pub hostname: Field<String>,
    pub labels: Field<BTreeMap<String, Field<String>>>,
    pub stop_signal: Field<String>,
    pub stop_grace: Field<Value>,
    pub init: Field<bool>,
    pub cap_add: List<String>,
    pub cap_drop: List<String>,
    pub privileged: Field<bool>,
    pub read_only_root: Field<bool>,
    pub no_new_privileges: Field<bool>,
    pub memory: Field<Value>,
    pub memory_reservation: Field<Value>,
    pub cpus: Field<Value>,
    pub pids_limit: Field<Value>,
    pub shm_size: Field<Value>,
    pub tmpfs: List<RawTmpfs>,
    pub ulimits: Field<BTreeMap<String, Field<RawUlimit>>>,
    pub sysctls: Field<BTreeMap<String, Field<String>>>,
    pub extra_hosts: Field<BTreeMap<String, Field<String>>>,
    pub devices: List<RawDevice>,
}

/// One entry of `tmpfs`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a tmpfs object")]
pub struct RawTmpfs {
    pub target: Field<String>,
    pub size: Field<Value>,
    pub mode: Field<String>,
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// One value of `ulimits`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a ulimit object")]
pub struct RawUlimit {
    pub soft: Field<Value>,
    pub hard: Field<Value>,
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// One entry of `devices`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a device object")]
pub struct RawDevice {
    pub path: Field<String>,
    pub target: Field<String>,
    pub permissions: Field<String>,
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// A container's `health` object.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a health object")]
pub struct RawHealth {
    /// The check, exec form.
    pub command: List<String>,
    /// Seconds between two checks.
    pub interval: Field<Value>,
    /// Seconds a check may take.
    pub timeout: Field<Value>,
    /// Failures in a row that make it unhealthy.
    pub retries: Field<Value>,
    /// Seconds after a start during which failures do not count.
    pub start_period: Field<Value>,
    /// Keys a health object does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// One entry of `mounts`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a mount object")]
pub struct RawMount {
    /// Absolute host path or volume name.
    pub source: Field<String>,
    /// Absolute path in the container.
    pub target: Field<String>,
    /// Mounted read-only (default false).
    pub read_only: Field<bool>,
    /// Keys a mount does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// One entry of `ports`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a port object")]
pub struct RawPort {
    /// The host's port; the runtime picks one when absent.
    pub host: Field<Value>,
    /// The container's port.
    pub container: Field<Value>,
    /// `tcp` (default) or `udp`.
    pub protocol: Field<String>,
    /// The host address it is bound to; every address when absent.
    pub address: Field<String>,
    /// Keys a port does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// `type: "file"`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a file object")]
pub struct RawFile {
    /// Unique id.
    pub id: Field<String>,
    /// Module grouping resources.
    pub module: Field<String>,
    /// Absolute path.
    pub path: Field<String>,
    /// Content as UTF-8 text.
    pub content: Field<String>,
    /// Content as base64.
    pub content_base64: Field<String>,
    /// Octal mode string.
    pub mode: Field<Value>,
    /// `UID:GID`.
    pub owner: Field<String>,
    /// Keys a file does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// `type: "directory"`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a directory object")]
pub struct RawDirectory {
    /// Unique id.
    pub id: Field<String>,
    /// Module grouping resources.
    pub module: Field<String>,
    /// Absolute path.
    pub path: Field<String>,
    /// Octal mode string.
    pub mode: Field<Value>,
    /// `UID:GID`.
    pub owner: Field<String>,
    /// Keys a directory does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// `type: "unit"`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a unit object")]
pub struct RawUnit {
    /// Unique id.
    pub id: Field<String>,
    /// Module grouping resources.
    pub module: Field<String>,
    /// Unit name with its type suffix.
    pub name: Field<String>,
    /// The unit file.
    pub content: Field<String>,
    /// `started` or `stopped`.
    pub state: Field<String>,
    /// Enabled at boot.
    pub enabled: Field<bool>,
    /// Keys a unit does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// `type: "identity"`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", expecting = "an identity object")]
pub struct RawIdentity {
    /// Unique id.
    pub id: Field<String>,
    /// Module grouping resources.
    pub module: Field<String>,
    /// The account and group name.
    pub name: Field<String>,
    /// The user id.
    pub uid: Field<Value>,
    /// The group id.
    pub gid: Field<Value>,
    /// Keys an identity does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// `type: "shared-folder"`.
#[derive(Debug, Default, Deserialize)]
#[serde(
    default,
    rename_all = "kebab-case",
    expecting = "a shared-folder object"
)]
pub struct RawSharedFolder {
    /// Unique id.
    pub id: Field<String>,
    /// Module grouping resources.
    pub module: Field<String>,
    /// Absolute path.
    pub path: Field<String>,
    /// Who may use it.
    pub access: List<RawAccess>,
    /// Keys a shared folder does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// One entry of a shared folder's `access`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", expecting = "an access object")]
pub struct RawAccess {
    /// The identity's id.
    pub identity: Field<String>,
    /// Read-write (default false: read-only).
    pub write: Field<bool>,
    /// Keys an access entry does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// One entry of a container's `grant`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a grant object")]
pub struct RawGrant {
    /// The path whose owning group is given.
    pub path: Field<String>,
    /// Keys a grant does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// One entry of a container's `networks`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a network object")]
pub struct RawNetworkJoin {
    pub name: Field<String>,
    pub aliases: List<String>,
    pub ipv4_address: Field<String>,
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// `type: "network"`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a network object")]
pub struct RawNetwork {
    pub id: Field<String>,
    pub module: Field<String>,
    pub name: Field<String>,
    pub driver: Field<String>,
    pub subnet: Field<String>,
    pub gateway: Field<String>,
    pub internal: Field<bool>,
    pub labels: Field<BTreeMap<String, Field<String>>>,
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// `type: "volume"`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a volume object")]
pub struct RawVolume {
    pub id: Field<String>,
    pub module: Field<String>,
    pub name: Field<String>,
    pub driver: Field<String>,
    pub driver_opts: Field<BTreeMap<String, Field<String>>>,
    pub labels: Field<BTreeMap<String, Field<String>>>,
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// One entry of a container's `depends-on`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a dependency object")]
pub struct RawDependency {
    pub id: Field<String>,
    pub condition: Field<String>,
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}
