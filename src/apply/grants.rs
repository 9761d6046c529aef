//! A container's `identity` and `grant`, as the runtime takes them: the
//! identity's `uid:gid` as its user, and the group owning each granted path
//! (read with `stat` at apply, the path never changed) as a supplementary
//! group. Both are part of what the container is, so a change recreates it
//! (`recreated: identity changed`, `recreated: grant changed`).

use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

use serde_json::{json, Value};

use crate::accounts::Accounts;
use crate::acl::walk::read_acl;
use crate::acl::{Tag, W, XATTR_ACCESS};
use crate::declaration::{root_granting_group, Container, Declaration};

/// What the identity and grants add to a container.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Access {
    /// `uid:gid` to run as, when an identity is declared.
    pub user: Option<String>,
    /// Supplementary group ids.
    pub groups: Vec<String>,
    /// Fields of the container's identity digest (only those declared, so
    /// a container without them keeps its digest).
    pub fields: Vec<(String, Value)>,
}

/// Resolve `container`'s identity and grants. Refuses a grant whose group
/// is root's or root-granting, naming it.
pub fn resolve(decl: &Declaration, container: &Container) -> Result<Access, String> {
    let mut access = Access::default();
    if let Some(id) = &container.identity {
        let identity = decl
            .identity(id.as_str())
            .ok_or_else(|| format!("identity {:?}: no identity by that id", id.as_str()))?;
        access.user = Some(format!("{}:{}", identity.uid, identity.gid));
        access.fields.push((
            "identity".into(),
            json!({"id": id.as_str(), "uid": identity.uid, "gid": identity.gid}),
        ));
    }
    if container.grant.is_empty() {
        return Ok(access);
    }
    let accounts = Accounts::system()?;
    let mut granted = Vec::new();
    for grant in &container.grant {
        let path = grant.path.as_str();
        let meta = std::fs::metadata(path).map_err(|e| format!("grant {path}: {e}"))?;
        let gid = meta.gid();
        let name = accounts.group_name(gid);
        if gid == 0 {
            return Err(format!(
                "grant {path}: its group is root's (gid 0), which is never granted"
            ));
        }
        if let Some(why) = name.and_then(root_granting_group) {
            return Err(format!(
                "grant {path}: its group {:?} (gid {gid}) grants root-equivalent power ({why}) and is never granted",
                name.unwrap_or_default()
            ));
        }
        granted.push(json!({"path": path, "gid": gid}));
        if !access.groups.contains(&gid.to_string()) {
            access.groups.push(gid.to_string());
        }
    }
    access.fields.push(("grant".into(), Value::Array(granted)));
    Ok(access)
}

/// The grants of `container` whose group cannot write the path, each said
/// in words: not a refusal, for the operator to decide.
pub fn unhealthy(container: &Container) -> Vec<String> {
    let mut out = Vec::new();
    for grant in &container.grant {
        let path = grant.path.as_str();
        if let Some(false) = group_can_write(path) {
            let gid = std::fs::metadata(path).map(|m| m.gid()).unwrap_or_default();
            out.push(format!(
                "grant {path}: its group (gid {gid}) cannot write it"
            ));
        }
    }
    out
}

/// Whether the owning group of `path` may write it (its ACL when it has
/// one: the owning group's entry as the mask allows); `None` when it
/// cannot be read.
fn group_can_write(path: &str) -> Option<bool> {
    // Only a directory or a file is opened (never a device, whose open
    // may act).
    let kind = std::fs::metadata(path).ok()?.file_type();
    if !kind.is_dir() && !kind.is_file() {
        return None;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        // Never wait on a FIFO put at the path.
        .custom_flags(libc_nonblock())
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    match read_acl(std::os::fd::AsFd::as_fd(&file), XATTR_ACCESS) {
        Ok(Some(acl)) => {
            let group = acl
                .entries()
                .iter()
                .find(|e| e.tag == Tag::GroupObj)
                .map(|e| e.perm)?;
            let mask = acl.mask().unwrap_or(7);
            Some(group & mask & W != 0)
        }
        Ok(None) => Some(meta.mode() & 0o020 != 0),
        Err(_) => None,
    }
}

fn libc_nonblock() -> i32 {
    rustix::fs::OFlags::NONBLOCK.bits() as i32
}
