//! The wire format: serde structs mirroring the JSON of a declaration.
//!
//! Serde alone stops at the first problem, and the contract wants all of
//! them. So each field is a [`Field`], which keeps a value of the wrong JSON
//! type as a recorded error rather than failing the whole struct, and each
//! struct gathers the keys it does not know in `unknown` (in place of
//! `deny_unknown_fields`, which would stop at the first) for the validator to
//! refuse one by one, with their paths.
//!
//! The same structs serialise: `mesh-host import` builds a declaration as
//! these values, an absent field left out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize, Serializer};
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

/// A field is written as the value it holds (an absent one is skipped by
/// the struct that holds it): what `mesh-host import` builds is written
/// through these same types, so the compiler ties it to the format.
impl<T: Serialize> Serialize for Field<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Field::Absent => serializer.serialize_unit(),
            Field::Present(v) => v.serialize(serializer),
            Field::Invalid { value, .. } => value.serialize(serializer),
        }
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

/// A declaration as `mesh-host import` writes it: its version and its
/// resources, each written through the raw struct the reader fills, so
/// the compiler ties what is written to what is read.
#[derive(Debug, Serialize)]
pub struct WrittenDeclaration {
    /// [`super::version::VERSION`].
    pub declaration: u64,
    /// The resources, in order.
    pub resources: Vec<RawResource>,
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

/// One resource, by its `type` (read by `raw::read`). A container is boxed:
/// its raw struct is kilobytes (a `Field` per key it may have), and the
/// list of resources read holds one slot per resource until validated.
/// It serialises with its `type`: what `mesh-host import` writes.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
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
    Network(Box<RawNetwork>),
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
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a container object")]
pub struct RawContainer {
    /// Unique id.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub id: Field<String>,
    /// Module grouping resources.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub module: Field<String>,
    /// The runtime's container name.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub name: Field<String>,
    /// `REPO[:TAG]@sha256:<hex>`.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub image: Field<String>,
    /// Arguments replacing the image's command.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub command: List<String>,
    /// Environment variables.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub env: Field<BTreeMap<String, Field<String>>>,
    /// Files of environment variables.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub env_files: List<String>,
    /// How the env-files are read: `docker` (the default) or `compose`.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub env_files_format: Field<String>,
    /// Bind mounts and volumes.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub mounts: List<RawMount>,
    /// `host`, `none` or a network name.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub network: Field<String>,
    /// Networks joined, with aliases and addresses.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub networks: List<RawNetworkJoin>,
    /// Ports published on the host.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub ports: List<RawPort>,
    /// Resolver addresses.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub dns: List<String>,
    /// `UID[:GID]`.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub user: Field<String>,
    /// A step run to completion at apply.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub run_once: Field<bool>,
    /// Five-field cron expression.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub schedule: Field<String>,
    /// IANA zone of `schedule`.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub schedule_zone: Field<String>,
    /// Containers held still while the step runs.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub while_stopped: List<String>,
    /// Seconds a step may run.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub timeout: Field<Value>,
    /// File ids whose change restarts this container.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub restart_on: List<String>,
    /// Containers declared before it that it starts after.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub depends_on: List<RawDependency>,
    /// The id of the identity it runs as.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub identity: Field<String>,
    /// Paths whose owning group it is given.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub grant: List<RawGrant>,
    /// Its health check: an object, or `"none"`.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub health: Field<Value>,
    /// Seconds each fire is delayed by, at most (exclusive).
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub randomized_delay: Field<Value>,
    /// Seconds past its start period a replacement has to become healthy.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub rollback_after: Field<Value>,
    /// `"registry"`: `mesh-host update` follows the image's tag.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub update: Field<String>,
    /// Run a fire missed while the daemon was down once at start.
    #[serde(skip_serializing_if = "Field::is_absent")]
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
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case")]
pub struct RawOptions {
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub restart: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub entrypoint: List<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub working_dir: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub platform: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub hostname: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub labels: Field<BTreeMap<String, Field<String>>>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub stop_signal: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub stop_grace: Field<Value>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub init: Field<bool>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub cap_add: List<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub cap_drop: List<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub privileged: Field<bool>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub read_only_root: Field<bool>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub no_new_privileges: Field<bool>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub security_opt: List<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub logging: Field<RawLogging>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub memory: Field<Value>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub memory_reservation: Field<Value>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub cpus: Field<Value>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub pids_limit: Field<Value>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub shm_size: Field<Value>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub tmpfs: List<RawTmpfs>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub anonymous_volumes: List<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub device_requests: List<RawDeviceRequest>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub ulimits: Field<BTreeMap<String, Field<RawUlimit>>>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub sysctls: Field<BTreeMap<String, Field<String>>>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub extra_hosts: Field<BTreeMap<String, Field<String>>>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub devices: List<RawDevice>,
}

/// One entry of `tmpfs`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a tmpfs object")]
pub struct RawTmpfs {
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub target: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub size: Field<Value>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub mode: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub exec: Field<bool>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub uid: Field<Value>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub gid: Field<Value>,
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// A container's `logging` object.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a logging object")]
pub struct RawLogging {
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub driver: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub options: Field<BTreeMap<String, Field<String>>>,
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// One value of `ulimits`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a ulimit object")]
pub struct RawUlimit {
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub soft: Field<Value>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub hard: Field<Value>,
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// One entry of `devices`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a device object")]
pub struct RawDevice {
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub path: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub target: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub permissions: Field<String>,
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// One entry of `device-requests`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(
    default,
    rename_all = "kebab-case",
    expecting = "a device request object"
)]
pub struct RawDeviceRequest {
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub driver: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub count: Field<Value>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub device_ids: List<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub capabilities: List<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub options: Field<BTreeMap<String, Field<String>>>,
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// A container's `health` object.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a health object")]
pub struct RawHealth {
    /// The check, exec form.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub command: List<String>,
    /// Seconds between two checks.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub interval: Field<Value>,
    /// Seconds a check may take.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub timeout: Field<Value>,
    /// Failures in a row that make it unhealthy.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub retries: Field<Value>,
    /// Seconds after a start during which failures do not count.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub start_period: Field<Value>,
    /// Keys a health object does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// One entry of `mounts`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a mount object")]
pub struct RawMount {
    /// Absolute host path or volume name.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub source: Field<String>,
    /// Absolute path in the container.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub target: Field<String>,
    /// Mounted read-only (default false).
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub read_only: Field<bool>,
    /// Keys a mount does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// One entry of `ports`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a port object")]
pub struct RawPort {
    /// The host's port; the runtime picks one when absent.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub host: Field<Value>,
    /// The container's port.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub container: Field<Value>,
    /// `tcp` (default) or `udp`.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub protocol: Field<String>,
    /// The host address it is bound to; every address when absent.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub address: Field<String>,
    /// Keys a port does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// `type: "file"`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a file object")]
pub struct RawFile {
    /// Unique id.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub id: Field<String>,
    /// Module grouping resources.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub module: Field<String>,
    /// Absolute path.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub path: Field<String>,
    /// Content as UTF-8 text.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub content: Field<String>,
    /// Content as base64.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub content_base64: Field<String>,
    /// Octal mode string.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub mode: Field<Value>,
    /// `UID:GID`.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub owner: Field<String>,
    /// Keys a file does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// `type: "directory"`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a directory object")]
pub struct RawDirectory {
    /// Unique id.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub id: Field<String>,
    /// Module grouping resources.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub module: Field<String>,
    /// Absolute path.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub path: Field<String>,
    /// Octal mode string.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub mode: Field<Value>,
    /// `UID:GID`.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub owner: Field<String>,
    /// Keys a directory does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// `type: "unit"`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a unit object")]
pub struct RawUnit {
    /// Unique id.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub id: Field<String>,
    /// Module grouping resources.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub module: Field<String>,
    /// Unit name with its type suffix.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub name: Field<String>,
    /// The unit file.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub content: Field<String>,
    /// `started` or `stopped`.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub state: Field<String>,
    /// Enabled at boot.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub enabled: Field<bool>,
    /// Keys a unit does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// `type: "identity"`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", expecting = "an identity object")]
pub struct RawIdentity {
    /// Unique id.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub id: Field<String>,
    /// Module grouping resources.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub module: Field<String>,
    /// The account and group name.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub name: Field<String>,
    /// The user id.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub uid: Field<Value>,
    /// The group id.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub gid: Field<Value>,
    /// Keys an identity does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// `type: "shared-folder"`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(
    default,
    rename_all = "kebab-case",
    expecting = "a shared-folder object"
)]
pub struct RawSharedFolder {
    /// Unique id.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub id: Field<String>,
    /// Module grouping resources.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub module: Field<String>,
    /// Absolute path.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub path: Field<String>,
    /// Who may use it.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub access: List<RawAccess>,
    /// Keys a shared folder does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// One entry of a shared folder's `access`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", expecting = "an access object")]
pub struct RawAccess {
    /// The identity's id.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub identity: Field<String>,
    /// Read-write (default false: read-only).
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub write: Field<bool>,
    /// Keys an access entry does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// One entry of a container's `grant`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a grant object")]
pub struct RawGrant {
    /// The path whose owning group is given.
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub path: Field<String>,
    /// Keys a grant does not have.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// One entry of a container's `networks`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a network object")]
pub struct RawNetworkJoin {
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub name: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub aliases: List<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub ipv4_address: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub ipv6_address: Field<String>,
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// `type: "network"`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a network object")]
pub struct RawNetwork {
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub id: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub module: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub name: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub driver: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub subnet: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub gateway: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub internal: Field<bool>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub labels: Field<BTreeMap<String, Field<String>>>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub enable_ipv6: Field<bool>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub ipv6_subnet: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub ipv6_gateway: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub driver_opts: Field<BTreeMap<String, Field<String>>>,
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// `type: "volume"`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a volume object")]
pub struct RawVolume {
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub id: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub module: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub name: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub driver: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub driver_opts: Field<BTreeMap<String, Field<String>>>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub labels: Field<BTreeMap<String, Field<String>>>,
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}

/// One entry of a container's `depends-on`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a dependency object")]
pub struct RawDependency {
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub id: Field<String>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    pub condition: Field<String>,
    #[serde(flatten)]
    pub unknown: BTreeMap<String, Value>,
}
