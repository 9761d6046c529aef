//! The model of identities, shared folders and a container's grants
//! (CONTRACT "Identities and shared folders").

use std::fmt;

use serde::{Serialize, Serializer};

use super::types::{AbsPath, InvalidValue, ResourceId};

/// Names of groups (and accounts) that grant root-equivalent power on a
/// Debian or RHEL node: never an identity's name, never granted.
pub const ROOT_GRANTING: [&str; 15] = [
    "root",
    "sudo",
    "wheel",
    "adm",
    "docker",
    "disk",
    "shadow",
    "systemd-journal",
    "lxd",
    "incus-admin",
    "libvirt",
    "kvm",
    "kmem",
    "tty",
    "input",
];

/// Why a group name is root-granting, for messages; `None` when it is not.
pub fn root_granting_group(name: &str) -> Option<&'static str> {
    root_granting(name)
}

/// Why a name is root-granting, for messages; `None` when it is not.
pub fn root_granting(name: &str) -> Option<&'static str> {
    Some(match name {
        "root" => "root is the superuser",
        "sudo" | "wheel" => "its members may run anything as root",
        "adm" => "its members read every system log",
        "docker" => "its members control the container runtime, hence root",
        "disk" => "its members write raw disks",
        "shadow" => "its members read password hashes",
        "systemd-journal" => "its members read the whole journal",
        "lxd" | "incus-admin" => "its members control the system container manager, hence root",
        "libvirt" => "its members control the virtual machine manager, hence root",
        "kvm" => "its members open /dev/kvm and run code in guests of their own",
        "kmem" => "its members read kernel memory",
        "tty" => "its members write to every terminal (and inject input)",
        "input" => "its members read every keyboard and mouse (passwords typed)",
        _ => return None,
    })
}

/// A system account and group name: as Debian's `useradd` accepts by
/// default (`[a-z_][a-z0-9_-]*`, at most 32 characters).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct AccountName(String);

impl AccountName {
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AccountName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<&str> for AccountName {
    type Error = InvalidValue;

    fn try_from(text: &str) -> Result<Self, Self::Error> {
        let mut chars = text.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
        let rest_ok =
            chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-'));
        if !first_ok || !rest_ok || text.len() > 32 {
            return Err(InvalidValue(format!(
                "{text:?} is not an account name: a lowercase letter or '_', then lowercase letters, digits, '_' or '-', at most 32 characters"
            )));
        }
        Ok(AccountName(text.to_string()))
    }
}

/// `type: "identity"`: a system account and its group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Identity {
    /// Account and group name.
    pub name: AccountName,
    /// User id, not 0.
    pub uid: u32,
    /// Group id, not 0.
    pub gid: u32,
}

/// `type: "shared-folder"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SharedFolder {
    /// Absolute path, not `/`.
    pub path: AbsPath,
    /// One entry per identity, identities distinct.
    pub access: Vec<Access>,
}

/// One identity's access to a shared folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Access {
    /// The identity resource's id.
    pub identity: ResourceId,
    /// Read-write, or read-only.
    pub write: bool,
}

/// One entry of a container's `grant`: the group owning `path` (read at
/// apply) is one of its supplementary groups.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Grant {
    /// The path whose owning group is given.
    pub path: AbsPath,
}

impl Serialize for Grant {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("path", &self.path)?;
        map.end()
    }
}
