//! Shared folders: one POSIX ACL entry per declared identity on the folder
//! and everything beneath it ([`crate::acl`]), kept by a sweep at every
//! apply (bounded: [`SWEEP_BOUND`] objects) and by the daemon's watch.
//!
//! | found | action |
//! |---|---|
//! | under a mount point `/etc/fstab` declares, not mounted | `waiting: not mounted ...` (nothing made) |
//! | missing | made (mode 0700, root's), entries set: `created` |
//! | empty, or taken before, or consented to (`mesh-host take ID`) | entries set: `updated` / `unchanged` |
//! | holding data, no consent | `refused: holds data, run mesh-host take ID` |
//! | holding data, owned by root | `refused: holds data and is owned by root: never taken, ...` |
//! | no longer declared | the host's entries taken away, data left: `removed` |
//!
//! Beneath the folder, objects owned by root are never taken, even after
//! `take`. Waiting does not fail the apply (the next apply looks again); a
//! refusal does, until the operator decides.

use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::{files, Action, Run};
use crate::acl::folders::{
    Consents, FolderAccess, ManagedFolder, ManagedFolders, CONSENTS, SHARED_FOLDERS,
};
use crate::acl::walk::{self, Op, Wanted, SWEEP_BOUND};
use crate::acl::watch;
use crate::declaration::{AbsPath, Declaration, Resource, ResourceKind, SharedFolder};

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

/// What a sweep does, owned, for a blocking thread.
#[derive(Debug, Clone)]
enum Work {
    Set(Wanted),
    Unset(Vec<u32>),
}

/// Sweep the folder open at `root` on a blocking thread: a sweep is system
/// calls only, up to [`SWEEP_BOUND`] of them, and must not hold one of the
/// runtime's workers while the apply lock is held.
async fn sweep(root: &OwnedFd, work: Work) -> walk::Sweep {
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
        let op = match &work {
            Work::Set(wanted) => Op::Set(wanted),
            Work::Unset(uids) => Op::Unset(uids),
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

/// What setting a folder's entries said, for the report.
fn describe(sweep: &walk::Sweep) -> Vec<String> {
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

/// What taking entries away left undone, in words; `None` when it
/// finished.
fn unfinished(sweep: &walk::Sweep) -> Option<String> {
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

impl Run<'_> {
    /// Hold the daemon's watch (if this process has one) until the hold is
    /// dropped: it must never act, with the entries it was last told of,
    /// on what this apply takes away. Waited for off the runtime's
    /// workers.
    async fn hold_watch(&self) -> Option<watch::Hold> {
        let watcher = self.applier.folder_watch.clone()?;
        let theirs = watcher.clone();
        match tokio::task::spawn_blocking(move || theirs.hold()).await {
            Ok(hold) => Some(hold),
            // Never applied without it.
            Err(_) => Some(watcher.hold()),
        }
    }

    fn folder_docs(&mut self, id: &str) -> Option<(ManagedFolders, Consents)> {
        let store = &self.applier.store;
        match (store.load(SHARED_FOLDERS), store.load(CONSENTS)) {
            (Ok(m), Ok(c)) => Some((m.unwrap_or_default(), c.unwrap_or_default())),
            (Err(e), _) | (_, Err(e)) => {
                self.push(id, Action::Failed, Some(e.to_string()));
                None
            }
        }
    }

    /// Converge one shared folder.
    pub(super) async fn shared_folder(&mut self, res: &Resource, folder: &SharedFolder) {
        let id = res.id.as_str();
        let module = res.module.as_ref().map(|m| m.to_string());
        let path = folder.path.as_str();
        let fstab = std::fs::read_to_string("/etc/fstab").unwrap_or_default();
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        if let Some(point) = unmounted_mount_point(path, &fstab, &mountinfo) {
            let reason = format!("not mounted: {point} is declared in /etc/fstab but not mounted; {path} is not made on the filesystem beneath it");
            self.lines.push(super::ReportLine::new(
                id,
                Action::Other("waiting".into()),
                Some(reason),
            ));
            return;
        }
        let Some((mut managed, consents)) = self.folder_docs(id) else {
            return;
        };
        let access = wanted_of(self.decl, folder);
        let mut created = false;
        let root = match walk::open_path(path) {
            Ok(fd) => fd,
            Err(Errno::NOENT) if self.preview => {
                let reason = grants_said(&access, &[]);
                return self.push(id, Action::Created, reason);
            }
            Err(Errno::NOENT) => match make(&folder.path) {
                Ok((fd, made)) => {
                    // Made by someone else between the two (EEXIST): what
                    // is there is checked like any folder found.
                    created = made;
                    fd
                }
                Err(e) => return self.push(id, Action::Failed, Some(e)),
            },
            Err(Errno::LOOP | Errno::NOTDIR) => {
                let reason = format!("{path} (or a parent) is a symbolic link or not a directory: a shared folder is never reached through a link");
                return self.push(id, Action::Failed, Some(reason));
            }
            Err(e) => {
                return self.push(id, Action::Failed, Some(format!("cannot open {path}: {e}")))
            }
        };
        let previous = managed.folders.get(id).filter(|m| m.path == path).cloned();
        // A folder being let go (its entries still being taken away) is
        // not one the host keeps: it is checked as if found.
        let kept = previous.as_ref().is_some_and(|p| !p.access.is_empty());
        if !created && !kept {
            let consented = consents.taken.get(id).map(String::as_str) == Some(path);
            let owner = rustix::fs::fstat(&root).map(|s| s.st_uid);
            let refusal = match (holds_data(&root), owner) {
                (Ok(false), Ok(_)) => None,
                // A directory of root's that holds data is root's data:
                // entries on it would let an identity rename or remove
                // what is in it (think of /etc). Never taken, even after
                // take.
                (Ok(true), Ok(0)) => Some(format!(
                    "holds data and is owned by root: never taken, even after take (give {path} to the owner of its data to share it)"
                )),
                (Ok(true), Ok(_)) if consented => None,
                (Ok(true), Ok(_)) => Some(format!("holds data, run mesh-host take {id}")),
                (Err(e), _) | (_, Err(e)) => {
                    let reason = format!("cannot read {path}: {e}");
                    return self.push(id, Action::Failed, Some(reason));
                }
            };
            if let Some(reason) = refusal {
                self.ok = false;
                self.lines.push(super::ReportLine::new(
                    id,
                    Action::Other("refused".into()),
                    Some(reason),
                ));
                return;
            }
        }
        if self.preview {
            // Entries are set by a sweep of the whole tree: a preview says
            // which identities gain or lose access, not each object.
            let before = previous
                .as_ref()
                .map(|p| p.access.clone())
                .unwrap_or_default();
            let reason = grants_said(&access, &before);
            let action = if reason.is_some() {
                Action::Updated
            } else {
                Action::Unchanged
            };
            return self.push(id, action, reason);
        }
        // From the first change until the new entries are recorded, the
        // watch acts on nothing here.
        let _hold = self.hold_watch().await;
        // Identities no longer given access lose their entries first; what
        // a sweep could not finish is recorded and taken again next time.
        let mut notes = Vec::new();
        let mut narrowing = Vec::new();
        if let Some(previous) = &previous {
            let mut dropped: Vec<u32> = previous
                .access
                .iter()
                .map(|a| a.uid)
                .chain(previous.narrowing.iter().copied())
                .filter(|uid| !access.iter().any(|a| a.uid == *uid))
                .collect();
            dropped.sort_unstable();
            dropped.dedup();
            if !dropped.is_empty() {
                let sweep = sweep(&root, Work::Unset(dropped.clone())).await;
                match unfinished(&sweep) {
                    None => notes.push(format!(
                        "entries of uid {dropped:?} taken away from {} object(s)",
                        sweep.changed
                    )),
                    Some(left) => {
                        notes.push(format!(
                            "entries of uid {dropped:?} not all taken away ({left}); taken again at the next apply"
                        ));
                        narrowing = dropped;
                    }
                }
            }
        }
        let pairs: Vec<(u32, bool)> = access.iter().map(|a| (a.uid, a.write)).collect();
        let swept = sweep(&root, Work::Set(Wanted::of(&pairs))).await;
        if kept && swept.changed > 0 {
            // A folder the host keeps: what the sweep changed had been
            // removed or narrowed since (by an application, or by the
            // creation mode of something new while no watch ran). One
            // event with the count.
            let last = watch::absolute(path, swept.last_changed.as_deref().unwrap_or("."));
            watch::log_restored(id, module.as_deref(), &last, swept.changed as u64);
        }
        // One object the host cannot set (a write lease, a full inode) is
        // reported here; the rest is done and the apply goes on.
        notes.extend(describe(&swept));
        managed.folders.insert(
            id.to_string(),
            ManagedFolder {
                path: path.to_string(),
                access,
                module,
                narrowing,
            },
        );
        if let Err(e) = self.applier.store.save(SHARED_FOLDERS, &managed) {
            notes.push(format!("cannot record the folder: {e}"));
            return self.push(id, Action::Failed, Some(notes.join("; ")));
        }
        let action = if created {
            Action::Created
        } else if swept.changed == 0 {
            Action::Unchanged
        } else {
            Action::Updated
        };
        let reason = (!notes.is_empty()).then(|| notes.join("; "));
        self.push(id, action, reason);
    }

    /// Take the host's entries away from folders no longer declared (or
    /// declared at another path); their data stays. A folder whose entries
    /// could not all be taken away stays recorded (with no access, so the
    /// watch lets it go) and is swept again at the next apply.
    pub(super) async fn remove_shared_folders(&mut self) {
        let declared: Vec<(String, String)> = self
            .decl
            .resources
            .iter()
            .filter_map(|r| match &r.kind {
                ResourceKind::SharedFolder(f) => Some((r.id.to_string(), f.path.to_string())),
                _ => None,
            })
            .collect();
        let mut managed = match self.applier.store.load::<ManagedFolders>(SHARED_FOLDERS) {
            Ok(Some(managed)) => managed,
            Ok(None) => return,
            Err(e) => {
                self.ok = false;
                self.warnings.push(format!(
                    "shared folders no longer declared keep their entries: {e}"
                ));
                return;
            }
        };
        let gone: Vec<(String, ManagedFolder)> = managed
            .folders
            .iter()
            .filter(|(id, m)| !declared.iter().any(|(d, p)| d == *id && *p == m.path))
            .map(|(id, m)| (id.clone(), m.clone()))
            .collect();
        if gone.is_empty() {
            return;
        }
        if self.preview {
            for (id, m) in gone {
                let reason = format!("entries taken away from {}, data left", m.path);
                self.push(&id, Action::Removed, Some(reason));
            }
            return;
        }
        // Until the folders' removal is recorded, the watch acts on
        // nothing (it still watches them).
        let _hold = self.hold_watch().await;
        for (id, m) in gone {
            let mut uids: Vec<u32> = m.access.iter().map(|a| a.uid).collect();
            uids.extend(&m.narrowing);
            uids.sort_unstable();
            uids.dedup();
            match walk::open_path(&m.path) {
                Ok(root) => {
                    let sweep = sweep(&root, Work::Unset(uids.clone())).await;
                    if let Some(left) = unfinished(&sweep) {
                        let reason = format!(
                            "entries not all taken away from {}: {left}; kept on record and taken again at the next apply",
                            m.path
                        );
                        self.push(&id, Action::Failed, Some(reason));
                        let entry = managed.folders.entry(id.clone()).or_insert(m);
                        entry.access.clear();
                        entry.narrowing = uids;
                        continue;
                    }
                    let reason = format!(
                        "entries taken away from {} object(s) of {}, data left",
                        sweep.changed, m.path
                    );
                    self.push(&id, Action::Removed, Some(reason));
                }
                Err(Errno::NOENT) => {
                    self.push(&id, Action::Removed, Some(format!("{} is gone", m.path)))
                }
                Err(e) => {
                    let reason = format!(
                        "cannot open {} to take the entries away: {e}; kept on record and taken again at the next apply",
                        m.path
                    );
                    self.push(&id, Action::Failed, Some(reason));
                    let entry = managed.folders.entry(id.clone()).or_insert(m);
                    entry.access.clear();
                    entry.narrowing = uids;
                    continue;
                }
            }
            managed.folders.remove(&id);
        }
        if let Err(e) = self.applier.store.save(SHARED_FOLDERS, &managed) {
            self.warnings
                .push(format!("cannot record the shared folders: {e}"));
        }
    }
}

/// The grants set and taken away going from `before` to `wanted`, as a
/// preview says them; `None` when they are the same.
fn grants_said(wanted: &[FolderAccess], before: &[FolderAccess]) -> Option<String> {
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

/// Make a missing folder (and its parents, as `mkdir -p`), private to root
/// until the entries give the identities their access. Returns it opened,
/// and whether it was made here (`false`: it appeared meanwhile).
fn make(at: &AbsPath) -> Result<(OwnedFd, bool), String> {
    let path = at.as_str();
    let (parent, name) = files::open_parent(at)?;
    let made = match rustix::fs::mkdirat(&parent, name, Mode::from_raw_mode(0o700)) {
        Ok(()) => true,
        Err(Errno::EXIST) => false,
        Err(e) => return Err(format!("cannot create {path}: {e}")),
    };
    let fd = rustix::fs::openat(
        &parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::LOOP | Errno::NOTDIR => format!("{path} is a symbolic link or not a directory: a shared folder is never reached through a link"),
        e => format!("cannot open {path}: {e}"),
    })?;
    rustix::fs::fsync(&parent).map_err(|e| format!("cannot sync the parent of {path}: {e}"))?;
    Ok((fd, made))
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

#[cfg(test)]
mod tests {
    use super::{make, unmounted_mount_point};
    use crate::declaration::AbsPath;

    #[test]
    fn a_folder_that_appears_before_it_is_made_is_not_taken_as_made() {
        // The race itself (another process's mkdir between the host's
        // open and its own) needs the scheduler's help; what the host does
        // when it loses it is this: the folder found is reported as not
        // made here, so the holds-data and root-owned checks apply to it.
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("share");
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::write(dir.join("data"), "x").expect("data");
        let at = AbsPath::try_from(dir.to_str().expect("utf-8")).expect("path");
        let (_, made) = make(&at).expect("open");
        assert!(!made);
        let fresh =
            AbsPath::try_from(tmp.path().join("new").to_str().expect("utf-8")).expect("path");
        let (_, made) = make(&fresh).expect("make");
        assert!(made);
        // A link at the name is never followed.
        std::os::unix::fs::symlink(&dir, tmp.path().join("link")).expect("symlink");
        let link =
            AbsPath::try_from(tmp.path().join("link").to_str().expect("utf-8")).expect("path");
        assert!(make(&link).expect_err("a link").contains("symbolic link"));
    }

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
