//! Shared folders decided: one POSIX ACL entry per declared identity on
//! the folder and everything beneath it ([`crate::acl`]), the entries a
//! sweep would set counted before anything is set ([`Op::Count`]).
//!
//! | found | decided |
//! |---|---|
//! | under a mount point `/etc/fstab` declares, not mounted | `waiting: not mounted ...` (nothing made) |
//! | missing | made (mode 0700, root's), entries set: `created` |
//! | empty, or taken before, or consented to (`mesh-host take ID`) | entries set where missing: `updated` / `unchanged` |
//! | holding data, no consent | `refused: holds data, run mesh-host take ID` |
//! | holding data, owned by root | `refused: holds data and is owned by root: never taken, ...` |
//! | no longer declared | the host's entries taken away, data left: `removed` ([`super::removals`]) |
//!
//! Beneath the folder, objects owned by root are never taken, even after
//! `take`. Waiting does not fail the apply (the next apply looks again); a
//! refusal does, until the operator decides. The count is a walk of the
//! tree that reads only; the apply's sweep then sets what it counted (and
//! what a writer narrowed meanwhile: the sweep is the truth).

use std::os::fd::{AsFd, OwnedFd};

use rustix::io::Errno;

use super::super::plan::{Decision, FolderWork, Kind, Slot, Work};
use super::super::report::{Action, ReportLine};
use super::context::Context;
use crate::acl::folders::{Consents, FolderAccess};
use crate::acl::walk::{self, Op, Wanted, SWEEP_BOUND};
use crate::declaration::{Declaration, Resource, SharedFolder};

/// The mount point `path` waits for: the deepest one `fstab` declares that
/// holds `path` and that `mountinfo` (`/proc/self/mountinfo`) does not show
/// mounted. `/` and swap never count.
pub fn unmounted_mount_point(path: &str, fstab: &str, mountinfo: &str) -> Option<String> {
    let unescape = |s: &str| {
        s.replace("\\040", " ")
            .replace("\\011", "\t")
            .replace("\\012", "\n")
            .replace("\\134", "\\")
    };
    let declared = fstab
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            let point = unescape(fields.get(1)?);
            let kind = fields.get(2).copied().unwrap_or("");
            (kind != "swap" && point.starts_with('/') && point != "/")
                .then(|| point.trim_end_matches('/').to_string())
        })
        .filter(|point| path == point || path.starts_with(&format!("{point}/")))
        .max_by_key(|point| point.len())?;
    let mounted = mountinfo.lines().any(|l| {
        l.split_whitespace()
            .nth(4)
            .is_some_and(|m| unescape(m) == declared)
    });
    (!mounted).then_some(declared)
}

fn wanted_of(decl: &Declaration, folder: &SharedFolder) -> Vec<FolderAccess> {
    folder
        .access
        .iter()
        .filter_map(|a| {
            decl.identity(a.identity.as_str()).map(|i| FolderAccess {
                uid: i.uid,
                write: a.write,
            })
        })
        .collect()
}

/// The entries `access` asks for.
pub(crate) fn wanted(access: &[FolderAccess]) -> Wanted {
    let pairs: Vec<(u32, bool)> = access.iter().map(|a| (a.uid, a.write)).collect();
    Wanted::of(&pairs)
}

/// Whether the directory holds anything.
fn holds_data(dir: &OwnedFd) -> Result<bool, Errno> {
    for entry in rustix::fs::Dir::read_from(dir)? {
        let name = entry?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Why the folder found open at `root` is not taken: it holds data, and
/// is root's or was not consented to. `Err`: it cannot be read.
pub(crate) fn refusal(
    root: &OwnedFd,
    id: &str,
    path: &str,
    consents: &Consents,
) -> Result<Option<String>, String> {
    let consented = consents.taken.get(id).map(String::as_str) == Some(path);
    let owner = rustix::fs::fstat(root).map(|s| s.st_uid);
    match (holds_data(root), owner) {
        (Ok(false), Ok(_)) => Ok(None),
        // A directory of root's that holds data is root's data: entries
        // on it would let an identity rename or remove what is in it
        // (think of /etc). Never taken, even after take.
        (Ok(true), Ok(0)) => Ok(Some(format!(
            "holds data and is owned by root: never taken, even after take (give {path} to the owner of its data to share it)"
        ))),
        (Ok(true), Ok(_)) if consented => Ok(None),
        (Ok(true), Ok(_)) => Ok(Some(format!("holds data, run mesh-host take {id}"))),
        (Err(e), _) | (_, Err(e)) => Err(format!("cannot read {path}: {e}")),
    }
}

/// What setting a folder's entries says (or, counted, will say).
pub(crate) fn describe(sweep: &walk::Sweep) -> Vec<String> {
    let mut notes = Vec::new();
    if sweep.changed > 0 {
        notes.push(format!("entries set on {} object(s)", sweep.changed));
    }
    if sweep.root_owned > 0 {
        notes.push(format!(
            "{} object(s) owned by root left alone",
            sweep.root_owned
        ));
    }
    if sweep.truncated {
        notes.push(format!(
            "the sweep stopped at its bound of {SWEEP_BOUND} entries"
        ));
    }
    if sweep.failed > 0 {
        notes.push(format!(
            "could not set {} object(s): {}",
            sweep.failed,
            sweep.errors.join("; ")
        ));
    }
    notes
}

/// The grants set and taken away going from `before` to `wanted`, in
/// words; `None` when they are the same.
pub(crate) fn grants_said(wanted: &[FolderAccess], before: &[FolderAccess]) -> Option<String> {
    let word = |w: bool| if w { "write" } else { "read" };
    let mut said = Vec::new();
    for a in wanted {
        match before.iter().find(|b| b.uid == a.uid) {
            Some(b) if b.write == a.write => {}
            _ => said.push(format!("grant set: uid {} {}", a.uid, word(a.write))),
        }
    }
    for b in before {
        if !wanted.iter().any(|a| a.uid == b.uid) {
            said.push(format!("grant taken away: uid {}", b.uid));
        }
    }
    (!said.is_empty()).then(|| said.join(", "))
}

/// Walk the folder open at `root` with `op` on a blocking thread: a
/// sweep is system calls only, up to [`SWEEP_BOUND`] of them, and must not
/// hold one of the runtime's workers while the apply lock is held.
pub(crate) async fn sweep(root: &OwnedFd, op: OwnedOp) -> walk::Sweep {
    let fd = match rustix::io::fcntl_dupfd_cloexec(root, 0) {
        Ok(fd) => fd,
        Err(e) => {
            return walk::Sweep {
                failed: 1,
                errors: vec![format!(".: {e}")],
                ..walk::Sweep::default()
            }
        }
    };
    let job = move || {
        let op = match &op {
            OwnedOp::Set(wanted) => Op::Set(wanted),
            OwnedOp::Unset(uids) => Op::Unset(uids),
            OwnedOp::Count(wanted) => Op::Count(wanted),
            OwnedOp::CountUnset(uids) => Op::CountUnset(uids),
        };
        walk::sweep(fd.as_fd(), op, SWEEP_BOUND, |_| {})
    };
    match tokio::task::spawn_blocking(job).await {
        Ok(sweep) => sweep,
        Err(e) => walk::Sweep {
            failed: 1,
            errors: vec![format!("the sweep did not finish: {e}")],
            ..walk::Sweep::default()
        },
    }
}

/// A walk's [`Op`], owned, for a blocking thread.
#[derive(Debug, Clone)]
pub(crate) enum OwnedOp {
    Set(Wanted),
    Unset(Vec<u32>),
    Count(Wanted),
    CountUnset(Vec<u32>),
}

/// What taking entries away left undone, in words; `None` when it
/// finished.
pub(crate) fn unfinished(sweep: &walk::Sweep) -> Option<String> {
    let mut left = Vec::new();
    if sweep.failed > 0 {
        left.push(format!(
            "{} object(s) could not be reached: {}",
            sweep.failed,
            sweep.errors.join("; ")
        ));
    }
    if sweep.truncated {
        left.push(format!(
            "the sweep stopped at its bound of {SWEEP_BOUND} entries"
        ));
    }
    (!left.is_empty()).then(|| left.join("; "))
}

/// What taking the entries of `uids` away says, from its sweep (or,
/// counted, will say); `Err` when it did not finish.
pub(crate) fn taken_away(uids: &[u32], sweep: &walk::Sweep) -> Result<String, String> {
    match unfinished(sweep) {
        None => Ok(format!(
            "entries of uid {uids:?} taken away from {} object(s)",
            sweep.changed
        )),
        Some(left) => Err(format!(
            "entries of uid {uids:?} not all taken away ({left}); taken again at the next apply"
        )),
    }
}

pub(super) async fn shared_folder(
    d: &mut Context<'_>,
    slot: Slot,
    res: &Resource,
    folder: &SharedFolder,
) -> Decision {
    let id = res.id.as_str();
    let decided = |action, reason: Option<String>, work| {
        Decision::new(
            slot.clone(),
            Kind::SharedFolder,
            ReportLine::new(id, action, reason),
            work,
        )
    };
    let path = folder.path.as_str();
    let fstab = std::fs::read_to_string("/etc/fstab").unwrap_or_default();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    if let Some(point) = unmounted_mount_point(path, &fstab, &mountinfo) {
        let reason = format!("not mounted: {point} is declared in /etc/fstab but not mounted; {path} is not made on the filesystem beneath it");
        return decided(Action::Other("waiting".into()), Some(reason), Work::Nothing);
    }
    let (managed, consents) = match &d.facts.folders {
        Ok(docs) => docs,
        Err(e) => return decided(Action::Failed, Some(e.clone()), Work::Nothing),
    };
    let access = wanted_of(d.decl, folder);
    let previous = managed.folders.get(id).filter(|m| m.path == path);
    let before = previous.map(|p| p.access.clone()).unwrap_or_default();
    let grants = grants_said(&access, &before);
    // A folder being let go (its entries still being taken away) is not
    // one the host keeps: it is checked as if found.
    let kept = previous.is_some_and(|p| !p.access.is_empty());
    // Identities no longer given access lose their entries first (and
    // what a sweep could not finish before is taken again).
    let mut take_away: Vec<u32> = previous
        .iter()
        .flat_map(|p| {
            p.access
                .iter()
                .map(|a| a.uid)
                .chain(p.narrowing.iter().copied())
        })
        .filter(|uid| !access.iter().any(|a| a.uid == *uid))
        .collect();
    take_away.sort_unstable();
    take_away.dedup();
    let module = res.module.as_ref().map(|m| m.to_string());
    let record_changes = previous
        .is_none_or(|p| p.access != access || p.module != module || !p.narrowing.is_empty());
    let work = |make: bool, set: Option<Wanted>, access: Vec<FolderAccess>, counted| {
        Work::Folder(Box::new(FolderWork {
            id: id.to_string(),
            path: path.to_string(),
            make,
            kept,
            take_away: take_away.clone(),
            set,
            access,
            module: module.clone(),
            grants: grants.clone(),
            counted,
        }))
    };
    // What taking entries away will say, from a walk that counts them
    // (a folder made new has none to take).
    let taking = |swept: &walk::Sweep| {
        (!take_away.is_empty()).then(|| taken_away(&take_away, swept).unwrap_or_else(|e| e))
    };
    let root = match walk::open_path(path) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => {
            // Made empty: its one object gets the entries.
            let made = walk::Sweep {
                changed: 1,
                ..walk::Sweep::default()
            };
            let notes: Vec<String> = taking(&walk::Sweep::default())
                .into_iter()
                .chain(describe(&made))
                .collect();
            let reason = said(grants.as_deref(), &notes);
            let set = Some(wanted(&access));
            return decided(Action::Created, reason, work(true, set, access, Vec::new()));
        }
        Err(Errno::LOOP | Errno::NOTDIR) => {
            let reason = format!("{path} (or a parent) is a symbolic link or not a directory: a shared folder is never reached through a link");
            return decided(Action::Failed, Some(reason), Work::Nothing);
        }
        Err(e) => {
            let reason = format!("cannot open {path}: {e}");
            return decided(Action::Failed, Some(reason), Work::Nothing);
        }
    };
    if !kept {
        match refusal(&root, id, path, consents) {
            Ok(None) => {}
            Ok(Some(reason)) => {
                return decided(Action::Other("refused".into()), Some(reason), Work::Nothing)
            }
            Err(reason) => return decided(Action::Failed, Some(reason), Work::Nothing),
        }
    }
    let taken = if take_away.is_empty() {
        None
    } else {
        taking(&sweep(&root, OwnedOp::CountUnset(take_away.clone())).await)
    };
    let counted = sweep(&root, OwnedOp::Count(wanted(&access))).await;
    let action = if counted.changed == 0 {
        Action::Unchanged
    } else {
        Action::Updated
    };
    let counted = describe(&counted);
    let notes: Vec<String> = taken.into_iter().chain(counted.iter().cloned()).collect();
    let reason = said(grants.as_deref(), &notes);
    let set = (action == Action::Updated).then(|| wanted(&access));
    if set.is_none() && take_away.is_empty() && !record_changes {
        return decided(action, reason, Work::Nothing);
    }
    decided(action, reason, work(false, set, access, counted))
}

/// The grants said, then the notes.
pub(crate) fn said(grants: Option<&str>, notes: &[String]) -> Option<String> {
    let all: Vec<&str> = grants
        .into_iter()
        .chain(notes.iter().map(String::as_str))
        .collect();
    (!all.is_empty()).then(|| all.join("; "))
}

#[cfg(test)]
mod tests {
    use super::unmounted_mount_point;

    const FSTAB: &str = "# <file system> <mount point> <type>\nUUID=1 / ext4 defaults 0 1\nUUID=2 /srv/data ext4 defaults 0 2\nUUID=3 /srv/data/deep xfs defaults 0 2\n/swapfile none swap sw 0 0\nserver:/x /mnt/my\\040share nfs defaults 0 0\n";

    fn mountinfo(points: &[&str]) -> String {
        points
            .iter()
            .map(|p| format!("22 1 8:1 / {p} rw,relatime shared:1 - ext4 /dev/sda1 rw\n"))
            .collect()
    }

    #[test]
    fn a_folder_under_an_unmounted_declared_mount_point_waits() {
        let only_root = mountinfo(&["/"]);
        assert_eq!(
            unmounted_mount_point("/srv/data/media", FSTAB, &only_root).as_deref(),
            Some("/srv/data")
        );
        assert_eq!(
            unmounted_mount_point("/srv/data/deep/x", FSTAB, &mountinfo(&["/", "/srv/data"]))
                .as_deref(),
            Some("/srv/data/deep"),
            "the deepest declared mount point counts"
        );
        assert_eq!(
            unmounted_mount_point("/mnt/my share/a", FSTAB, &only_root).as_deref(),
            Some("/mnt/my share"),
            "fstab escapes"
        );
    }

    #[test]
    fn a_mounted_or_undeclared_mount_point_does_not_wait() {
        let mounted = mountinfo(&["/", "/srv/data"]);
        assert_eq!(
            unmounted_mount_point("/srv/data/media", FSTAB, &mounted),
            None
        );
        assert_eq!(
            unmounted_mount_point("/srv/other", FSTAB, &mountinfo(&["/"])),
            None
        );
        assert_eq!(
            unmounted_mount_point("/srv/database", FSTAB, &mountinfo(&["/"])),
            None,
            "a prefix of a name is not a parent"
        );
        assert_eq!(
            unmounted_mount_point("/swapfile/x", FSTAB, &mountinfo(&["/"])),
            None
        );
    }
}
