//! Identities, shared folders and their ACLs on the node, for the tests of
//! CONTRACT "Identities and shared folders".
//!
//! The node shares this machine's /etc: every account a test makes has a
//! unique name and a number above 2 000 000 000 (unique to this test
//! process), and [`World::identity`](super::world::World::identity)
//! removes it when the world ends, whatever the test did.

use std::process::Output;
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Serialize, Serializer};
use serde_json::{json, Value};

use super::{quote, Node};

/// A unique account name and number (uid = gid) for this test process.
pub fn account() -> (String, u32) {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    (
        format!("mht{pid}x{n}"),
        2_000_000_000 + (pid % 100_000) * 100 + n,
    )
}

/// The script that removes account (and group) `name`, whatever is left
/// of it.
pub fn remove_account(name: &str) -> String {
    format!(
        "userdel {n} >/dev/null 2>&1; groupdel {n} >/dev/null 2>&1; true",
        n = quote(name)
    )
}

/// An identity resource the test declares: serialises as its resource,
/// so it stands as itself in a `json!` declaration.
#[derive(Debug, Clone)]
pub struct Identity {
    /// Its resource id.
    pub id: String,
    /// The account's (and its group's) name.
    pub name: String,
    /// Its uid, which is also its gid.
    pub uid: u32,
}

impl Identity {
    /// `{"type": "identity", ...}`.
    pub fn resource(&self) -> Value {
        json!({"id": self.id, "type": "identity", "name": self.name,
            "uid": self.uid, "gid": self.uid})
    }
}

impl Serialize for Identity {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.resource().serialize(serializer)
    }
}

/// A shared folder `id` at `path`, with `(identity id, write)` access.
pub fn shared_folder(id: &str, path: &str, access: &[(&str, bool)]) -> Value {
    let access: Vec<Value> = access
        .iter()
        .map(|(identity, write)| json!({"identity": identity, "write": write}))
        .collect();
    json!({"id": id, "type": "shared-folder", "path": path, "access": access})
}

/// `python3 -c SCRIPT ARGS...` run inside the node as `uid` (its gid the
/// same, with no other group). The interpreter is called by absolute path:
/// a root-only shim earlier on `$PATH` would fail for any other user.
pub fn as_identity(node: &Node, uid: u32, script: &str, args: &[&str]) -> Output {
    let mut cmd = format!(
        "setpriv --reuid {uid} --regid {uid} --clear-groups /usr/bin/python3 -c {}",
        quote(script)
    );
    for a in args {
        cmd.push(' ');
        cmd.push_str(&quote(a));
    }
    node.sh(&cmd)
}

/// `getfacl -cnp PATH` (numeric, no header): one entry per line.
pub fn getfacl(node: &Node, path: &str) -> Vec<String> {
    node.sh_ok(&format!("getfacl -cnp {}", quote(path)))
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| l.split('\t').next().unwrap_or(l).trim().to_string())
        .collect()
}

/// The named user entries (`user:UID:rwx`) of an access ACL.
pub fn named_users(acl: &[String]) -> Vec<String> {
    acl.iter()
        .filter(|l| l.starts_with("user:") && !l.starts_with("user::"))
        .cloned()
        .collect()
}

/// Whether `path`'s access ACL has an entry of `uid`.
pub fn has_entry(node: &Node, path: &str, uid: u32) -> bool {
    named_users(&getfacl(node, path))
        .iter()
        .any(|e| e.starts_with(&format!("user:{uid}:")))
}
