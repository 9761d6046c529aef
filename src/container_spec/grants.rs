//! A container's `identity` and `grant`, as the runtime takes them: the
//! identity's `uid:gid` as its user, and the group owning each granted path
//! (read with `stat` at apply, the path never changed) as a supplementary
//! group. Both are part of what the container is, so a change recreates it
//! (`recreated: identity changed`, `recreated: grant changed`).

use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;
use serde_json::{json, Value};

use crate::accounts::Accounts;
use crate::acl::walk::{self, read_acl};
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
///
/// A granted path the plan makes or whose group it sets (`planned`) is
/// judged by the group the plan gives it.
pub fn resolve(
    decl: &Declaration,
    container: &Container,
    planned: &super::planned::Planned,
) -> Result<Access, String> {
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
        let gid = match planned.group_of(grant.path.as_path()) {
            Some(gid) => gid,
            None => open(path)
                .and_then(|fd| rustix::fs::fstat(&fd))
                .map_err(|e| match e {
                    Errno::LOOP => format!("grant {path}: a symbolic link is on the path; a grant is never followed through a link"),
                    e => format!("grant {path}: {e}"),
                })?
                .st_gid,
        };
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
        if let Some((false, gid)) = group_can_write(path) {
            out.push(format!(
                "grant {path}: its group (gid {gid}) cannot write it"
            ));
        }
    }
    out
}

/// What is at `path`, opened (`O_PATH`) without following a link
/// anywhere on the way: a link is `ELOOP`.
fn open(path: &str) -> Result<OwnedFd, Errno> {
    walk::open_any_path(path)
}

/// Whether the owning group of `path` may write it (its ACL when it has
/// one: the owning group's entry as the mask allows), and that group;
/// `None` when it cannot be read.
fn group_can_write(path: &str) -> Option<(bool, u32)> {
    let at = open(path).ok()?;
    let stat = rustix::fs::fstat(&at).ok()?;
    // Only a directory or a file is opened to read its ACL (never a
    // device, whose open may act), and the very object found: reopened
    // through its descriptor, never by name, and never waiting on a FIFO.
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind != FileType::Directory && kind != FileType::RegularFile {
        return None;
    }
    let fd = rustix::fs::open(
        walk::fd_path(at.as_fd()),
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let can = match read_acl(fd.as_fd(), XATTR_ACCESS) {
        Ok(Some(acl)) => {
            let group = acl
                .entries()
                .iter()
                .find(|e| e.tag == Tag::GroupObj)
                .map(|e| e.perm)?;
            let mask = acl.mask().unwrap_or(7);
            group & mask & W != 0
        }
        Ok(None) => stat.st_mode & 0o020 != 0,
        Err(_) => return None,
    };
    Some((can, stat.st_gid))
}
