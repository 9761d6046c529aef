//! A container's options beyond its image, command and mounts: how its
//! process starts and stops, what it may do, and what it may use. The
//! fields compose stacks rely on (CONTRACT "Compose"); each, when
//! declared, is part of the container's identity.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use serde::{Serialize, Serializer};

/// The Linux capabilities `cap-add` and `cap-drop` take (without `CAP_`),
/// and `ALL`.
pub const CAPABILITIES: &[&str] = &[
    "ALL",
    "AUDIT_CONTROL",
    "AUDIT_READ",
    "AUDIT_WRITE",
    "BLOCK_SUSPEND",
    "BPF",
    "CHECKPOINT_RESTORE",
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "IPC_LOCK",
    "IPC_OWNER",
    "KILL",
    "LEASE",
    "LINUX_IMMUTABLE",
    "MAC_ADMIN",
    "MAC_OVERRIDE",
    "MKNOD",
    "NET_ADMIN",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_RAW",
    "PERFMON",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYSLOG",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_CHROOT",
    "SYS_MODULE",
    "SYS_NICE",
    "SYS_PACCT",
    "SYS_PTRACE",
    "SYS_RAWIO",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "WAKE_ALARM",
];

/// Label prefixes mesh-host keeps for its own (`mesh-host.managed`, the
/// journal's `mesh.step`): a declared label under one is refused.
pub const OWN_LABEL_PREFIXES: &[&str] = &["mesh-host.", "mesh."];

/// A container's options as its declared resource holds them: one
/// [`ContainerOptions`] shared by every container that declares none
/// (most; a service or step of a large declaration declares one or two),
/// its own for the others. Options inline made each container of the
/// model 1.2 KB: 7.3 MB at 6,000 of them, at the first apply's peak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedOptions(Arc<ContainerOptions>);

/// The options of a container that declares none.
static NONE_DECLARED: LazyLock<Arc<ContainerOptions>> = LazyLock::new(Arc::default);

impl SharedOptions {
    /// `options`, shared when none are declared.
    pub fn new(options: ContainerOptions) -> Self {
        if options == ContainerOptions::default() {
            SharedOptions(NONE_DECLARED.clone())
        } else {
            SharedOptions(Arc::new(options))
        }
    }
}

impl Default for SharedOptions {
    fn default() -> Self {
        SharedOptions(NONE_DECLARED.clone())
    }
}

impl From<ContainerOptions> for SharedOptions {
    fn from(options: ContainerOptions) -> Self {
        SharedOptions::new(options)
    }
}

impl std::ops::Deref for SharedOptions {
    type Target = ContainerOptions;
    fn deref(&self) -> &ContainerOptions {
        &self.0
    }
}

/// Written as the options themselves.
impl Serialize for SharedOptions {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// A container's declared options; every field absent or empty by default
/// (then the image's or the runtime's own).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ContainerOptions {
    /// A service's restart policy; `unless-stopped` when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart: Option<super::networking::Restart>,
    /// Replaces the image's entrypoint; empty: none at all (the image's
    /// cleared).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrypoint: Option<Vec<String>>,
    /// The process's working directory, in the container.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    /// The image's platform to run (`linux/amd64`): pulled and created
    /// as that one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Labels of the operator's (none under [`OWN_LABEL_PREFIXES`]).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The signal a stop sends first (`SIGTERM` by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_signal: Option<String>,
    /// Seconds a stop waits before SIGKILL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_grace: Option<u64>,
    /// An init process reaps the container's orphans.
    #[serde(skip_serializing_if = "is_false")]
    pub init: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cap_add: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cap_drop: Vec<String>,
    #[serde(skip_serializing_if = "is_false")]
    pub privileged: bool,
    /// The root filesystem mounted read-only.
    #[serde(skip_serializing_if = "is_false")]
    pub read_only_root: bool,
    /// No process of it gains privileges through set-uid or file
    /// capabilities.
    #[serde(skip_serializing_if = "is_false")]
    pub no_new_privileges: bool,
    /// Docker's security options beyond no-new-privileges, as written
    /// (`label=disable`, `seccomp=unconfined`, `apparmor=unconfined`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub security_opt: Vec<String>,
    /// The runtime's log driver for a service, with its options; the
    /// runtime's default when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logging: Option<Logging>,
    /// Bytes of memory, at most.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<u64>,
    /// Bytes of memory it is given back to under memory pressure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_reservation: Option<u64>,
    /// CPUs, at most, in billionths (`cpus: 1.5` is 1,500,000,000).
    #[serde(
        rename = "cpus",
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_cpus"
    )]
    pub nano_cpus: Option<u64>,
    /// Processes (tasks), at most.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pids_limit: Option<u64>,
    /// Bytes of `/dev/shm`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shm_size: Option<u64>,
    /// tmpfs mounts, by target.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tmpfs: Vec<Tmpfs>,
    /// Targets the runtime gives a volume of no name (compose's
    /// `volumes: [/data]`), as it does an image's `VOLUME`: each
    /// replacement is given the old container's, so a recreate keeps
    /// the data.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub anonymous_volumes: Vec<String>,
    /// Resource limits by name (`nofile`, `nproc`, ...); -1 is no limit.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub ulimits: BTreeMap<String, Ulimit>,
    /// Namespaced kernel parameters.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub sysctls: BTreeMap<String, String>,
    /// Names resolved to these addresses in the container's `/etc/hosts`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra_hosts: BTreeMap<String, HostAddress>,
    /// Host devices given to the container.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<Device>,
    /// Devices asked of a device driver (GPUs: compose's `gpus` and
    /// `deploy.resources.reservations.devices`, Docker's `DeviceRequests`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub device_requests: Vec<DeviceRequest>,
}

/// Devices asked of a runtime's device driver (Docker's `DeviceRequest`):
/// `count` of them, or those of `device_ids`, having every one of
/// `capabilities`; the runtime fails the start when no driver on the
/// node answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct DeviceRequest {
    /// The driver (`nvidia`); absent: the first that has the capabilities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<DeviceCount>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub device_ids: Vec<String>,
    pub capabilities: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub options: BTreeMap<String, String>,
}

/// How many devices a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceCount {
    /// Every device the driver has (Docker's `-1`).
    All,
    /// This many, at least 1.
    N(u32),
}

impl DeviceCount {
    /// Docker's `Count`: `-1` for all.
    pub fn docker(self) -> i64 {
        match self {
            DeviceCount::All => -1,
            DeviceCount::N(n) => i64::from(n),
        }
    }
}

impl Serialize for DeviceCount {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            DeviceCount::All => s.serialize_str("all"),
            DeviceCount::N(n) => s.serialize_u32(*n),
        }
    }
}

/// A tmpfs mounted at `target`, of `size` bytes (half the memory by
/// default) and `mode` (octal, `1777` by default); programs on it may be
/// run or not (`exec`; Docker's default: not), its root owned by `uid`
/// and `gid` (root's by default).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tmpfs {
    pub target: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exec: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gid: Option<u32>,
}

impl Tmpfs {
    /// Docker's options string for it (`size=N,mode=M,exec,uid=U,gid=G`),
    /// in the order compose's short form writes them.
    pub fn docker_options(&self) -> String {
        let mut opts = Vec::new();
        if let Some(size) = self.size {
            opts.push(format!("size={size}"));
        }
        if let Some(mode) = &self.mode {
            opts.push(format!("mode={mode}"));
        }
        match self.exec {
            Some(true) => opts.push("exec".to_string()),
            Some(false) => opts.push("noexec".to_string()),
            None => {}
        }
        if let Some(uid) = self.uid {
            opts.push(format!("uid={uid}"));
        }
        if let Some(gid) = self.gid {
            opts.push(format!("gid={gid}"));
        }
        opts.join(",")
    }
}

/// A log driver and its options (Docker's `HostConfig.LogConfig`); no
/// driver: the runtime's default one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Logging {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub options: BTreeMap<String, String>,
}

/// What an `extra-hosts` name resolves to: an IP address, or the node
/// itself as the container reaches it (`host-gateway`: Docker puts the
/// address of its default bridge's gateway, or its `--host-gateway-ip`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostAddress {
    Ip(std::net::IpAddr),
    HostGateway,
}

impl HostAddress {
    /// An IP address or `host-gateway`.
    pub fn parse(text: &str) -> Option<HostAddress> {
        if text == "host-gateway" {
            return Some(HostAddress::HostGateway);
        }
        text.parse().ok().map(HostAddress::Ip)
    }
}

impl std::fmt::Display for HostAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostAddress::Ip(ip) => ip.fmt(f),
            HostAddress::HostGateway => f.write_str("host-gateway"),
        }
    }
}

/// As written in the declaration: the address's text.
impl Serialize for HostAddress {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A resource limit's value that is no limit (`RLIM_INFINITY`), declared
/// as `-1` as Docker and compose write it.
pub const UNLIMITED: u64 = u64::MAX;

/// A resource limit's soft and hard values ([`UNLIMITED`]: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Ulimit {
    #[serde(serialize_with = "rlimit")]
    pub soft: u64,
    #[serde(serialize_with = "rlimit")]
    pub hard: u64,
}

/// A limit as declared: [`UNLIMITED`] as `-1`.
fn rlimit<S: Serializer>(n: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    if *n == UNLIMITED {
        serializer.serialize_i64(-1)
    } else {
        serializer.serialize_u64(*n)
    }
}

/// A host device at `path`, seen at `target` in the container, with
/// cgroup `permissions` (`rwm` by default).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Device {
    pub path: String,
    pub target: String,
    pub permissions: String,
}

/// The resource limits `ulimits` takes (Docker's names).
pub const ULIMITS: &[&str] = &[
    "core",
    "cpu",
    "data",
    "fsize",
    "locks",
    "memlock",
    "msgqueue",
    "nice",
    "nofile",
    "nproc",
    "rss",
    "rtprio",
    "rttime",
    "sigpending",
    "stack",
];

/// Whether the kernel parameter `name` is one a container may set: those
/// of its own IPC and network namespaces, as Docker allows them.
pub fn sysctl_namespaced(name: &str) -> bool {
    const IPC: &[&str] = &[
        "kernel.msgmax",
        "kernel.msgmnb",
        "kernel.msgmni",
        "kernel.sem",
        "kernel.shmall",
        "kernel.shmmax",
        "kernel.shmmni",
        "kernel.shm_rmid_forced",
    ];
    IPC.contains(&name) || name.starts_with("fs.mqueue.") || name.starts_with("net.")
}

/// SELinux label options Docker takes after `label=` (with a value
/// after `:` but for `disable` and `nested`).
const LABEL_KEYS: &[&str] = &["user", "role", "type", "level", "filetype"];

/// Why Docker's daemon would not honour `opt` as it stands, if it would
/// not.
pub fn security_opt_problem(opt: &str) -> Option<String> {
    const FORMS: &str =
        "a security option is label=disable, label=KEY:VALUE, seccomp=unconfined or apparmor=PROFILE";
    if opt.starts_with("no-new-privileges") {
        return Some("declared by the no-new-privileges field (true or false)".into());
    }
    // Docker splits at the first '=', or else at the first ':'.
    let Some((kind, value)) = opt.split_once('=').or_else(|| opt.split_once(':')) else {
        return Some(FORMS.into());
    };
    let word = |v: &str| {
        !v.is_empty()
            && v.len() <= 255
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.:,-/".contains(&b))
    };
    match kind {
        "label" => match value.split_once(':') {
            None if value == "disable" || value == "nested" => None,
            Some((key, v)) if LABEL_KEYS.contains(&key) && word(v) => None,
            _ => Some(format!(
                "not an SELinux label option: disable, nested, or {}:VALUE",
                LABEL_KEYS.join("|")
            )),
        },
        "seccomp" if value == "unconfined" => None,
        "seccomp" => Some(
            "a seccomp profile file is read by Docker's command line, not its daemon, and is not sent: leave it out for the runtime's default profile, or give seccomp=unconfined".into(),
        ),
        "apparmor" if word(value) && !value.contains('/') => None,
        "apparmor" => Some("not an AppArmor profile name (such as unconfined)".into()),
        _ => Some(FORMS.into()),
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `cpus` as the decimal it was declared as.
fn serialize_cpus<S: Serializer>(nano: &Option<u64>, serializer: S) -> Result<S::Ok, S::Error> {
    match nano {
        Some(n) => serializer.serialize_f64(*n as f64 / 1e9),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{security_opt_problem, Arc, ContainerOptions, SharedOptions};

    proptest! {
        /// Whatever a declaration or a compose file holds, the reading
        /// answers, and what it takes is one of Docker's forms, printable,
        /// with nothing the daemon would split otherwise.
        #[test]
        fn any_text_is_answered_and_what_is_taken_is_a_known_form(
            opt in "(label|seccomp|apparmor|no-new-privileges|x)?[=:]?(disable|unconfined|type:|[ -~]{0,12}|\\PC{0,6})",
        ) {
            if security_opt_problem(&opt).is_none() {
                let kind = ["label=", "label:", "seccomp=", "seccomp:", "apparmor=", "apparmor:"]
                    .iter()
                    .any(|k| opt.starts_with(k));
                prop_assert!(kind, "{opt:?}");
                prop_assert!(opt.bytes().all(|b| b.is_ascii_graphic()), "{opt:?}");
            }
        }
    }

    #[test]
    fn the_forms_docker_takes_are_taken_and_others_named() {
        for ok in [
            "label=disable",
            "label:disable",
            "label=type:svirt_apache_t",
            "label=level:s0:c100,c200",
            "seccomp=unconfined",
            "seccomp:unconfined",
            "apparmor=unconfined",
            "apparmor:docker-default",
        ] {
            assert_eq!(security_opt_problem(ok), None, "{ok}");
        }
        for (bad, said) in [
            ("no-new-privileges:true", "no-new-privileges field"),
            ("seccomp=/etc/profile.json", "seccomp profile file"),
            ("seccomp:./profile.json", "seccomp profile file"),
            ("label=disabled", "SELinux"),
            ("label=colour:red", "SELinux"),
            ("apparmor=../x", "AppArmor"),
            ("systempaths", "a security option is"),
            ("umask=0", "a security option is"),
            ("label=type:a\0b", "SELinux"),
        ] {
            let why = security_opt_problem(bad).expect(bad);
            assert!(why.contains(said), "{bad}: {why}");
        }
    }

    #[test]
    fn options_none_declared_are_one_shared_and_written_as_the_options() {
        let none = SharedOptions::new(ContainerOptions::default());
        assert!(Arc::ptr_eq(&none.0, &SharedOptions::default().0));
        let declared = ContainerOptions {
            working_dir: Some("/srv".into()),
            ..ContainerOptions::default()
        };
        let own = SharedOptions::new(declared.clone());
        assert!(!Arc::ptr_eq(&own.0, &none.0));
        assert_eq!(own.working_dir.as_deref(), Some("/srv"));
        assert_eq!(
            serde_json::to_value(&own).expect("json"),
            serde_json::to_value(&declared).expect("json")
        );
        assert_eq!(
            serde_json::to_value(&none).expect("json"),
            serde_json::json!({})
        );
    }
}
