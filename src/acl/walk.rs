//! Setting (or taking away) a shared folder's entries on the folder and
//! everything beneath it, through descriptors opened here.
//!
//! The tree is walked breadth-first: each name is looked at with
//! `fstatat(AT_SYMLINK_NOFOLLOW)`, and only a directory or a regular file
//! is opened, with `O_NOFOLLOW | O_NONBLOCK` (a name swapped for a FIFO
//! meanwhile cannot block the open), then `fstat`ed again and dropped
//! unless it is still the same object; what is changed is changed through
//! that descriptor, never by name again. Symbolic links, FIFOs, sockets
//! and devices are left alone and never followed. Below the folder itself,
//! anything owned by root is never taken: not changed, not entered. The
//! walk stays on the folder's filesystem (a mount inside it is not
//! entered, as `find -xdev`), and a regular file with other hard links is
//! never given entries: its other names may lie outside the folder, and
//! entries on it would give the identities access there too. Taking
//! entries away ([`Op::Unset`]) reaches those files, and root's objects,
//! too: narrowing is safe wherever an object's other names are, and an
//! identity that linked a file (`ln f f.keep`) or an object root took back
//! keep nothing the host gave.
//!
//! Directories waiting their turn are remembered as [`Link`]s (see
//! [`super::tree`]), not paths and not open descriptors: the walk's memory
//! grows with the number of directories, not their depth, and it holds a
//! bounded number of descriptors whatever the tree.
//!
//! A walk reads at most [`SWEEP_BOUND`] names (skipped ones count too):
//! the sweep at every apply costs at most that, and a bigger tree is
//! finished by the watch (which sets new objects as they come) and
//! reported as truncated. An object that cannot be set is counted and
//! reported; the rest is done.

use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, XattrFlags};
use rustix::io::Errno;

use super::tree::{self, FdCache, Link, CACHED_FDS};
use super::{Acl, R, W, X, XATTR_ACCESS, XATTR_DEFAULT};

/// Most objects (files and directories) one walk visits.
pub const SWEEP_BOUND: usize = 100_000;

/// The entries a folder's identities must have, by object kind.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Wanted {
    /// On directories (access and default ACL): `rwx` or `r-x`.
    pub dir: Vec<(u32, u16)>,
    /// On files: `rw-` or `r--`.
    pub file: Vec<(u32, u16)>,
}

impl Wanted {
    /// The entries of `(uid, write)` pairs.
    pub fn of(access: &[(u32, bool)]) -> Wanted {
        Wanted {
            dir: access
                .iter()
                .map(|&(uid, write)| (uid, if write { R | W | X } else { R | X }))
                .collect(),
            file: access
                .iter()
                .map(|&(uid, write)| (uid, if write { R | W } else { R }))
                .collect(),
        }
    }

    /// The uids it names.
    pub fn uids(&self) -> Vec<u32> {
        self.dir.iter().map(|(u, _)| *u).collect()
    }
}

/// What a walk does to each object.
#[derive(Debug, Clone, Copy)]
pub enum Op<'a> {
    /// Make sure the entries are there.
    Set(&'a Wanted),
    /// Take the entries of these uids away.
    Unset(&'a [u32]),
    /// Count the objects [`Op::Set`] would change, changing nothing: what
    /// an apply decides from before it sets anything.
    Count(&'a Wanted),
    /// Count the objects [`Op::Unset`] would change, changing nothing.
    CountUnset(&'a [u32]),
}

/// What a walk did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Objects looked at.
    pub visited: usize,
    /// Objects whose ACLs changed.
    pub changed: usize,
    /// The last of them, relative to the start (bounded).
    pub last_changed: Option<String>,
    /// Root-owned objects left alone.
    pub root_owned: usize,
    /// Objects that could not be set (or read).
    pub failed: usize,
    /// The first few of them, with why (paths bounded).
    pub errors: Vec<String>,
    /// Whether the bound stopped the walk.
    pub truncated: bool,
}

/// Read one ACL attribute; `None` when the object has none.
pub fn read_acl(fd: BorrowedFd<'_>, name: &str) -> Result<Option<Acl>, Errno> {
    let mut buf = vec![0u8; 1024];
    loop {
        match rustix::fs::fgetxattr(fd, name, &mut buf[..]) {
            Ok(n) => {
                return Acl::decode(&buf[..n]).map(Some).map_err(|_| Errno::INVAL);
            }
            Err(Errno::NODATA) => return Ok(None),
            Err(Errno::RANGE) if buf.len() < 1 << 20 => {
                let size = rustix::fs::fgetxattr_query(fd, name)?;
                buf = vec![0u8; size.max(buf.len() * 2)];
            }
            Err(e) => return Err(e),
        }
    }
}

fn write_acl(fd: BorrowedFd<'_>, name: &str, acl: &Acl) -> Result<(), Errno> {
    rustix::fs::fsetxattr(fd, name, &acl.encode(), XattrFlags::empty())
}

/// Apply `op` to one opened object; returns whether anything changed
/// (for [`Op::Count`] and [`Op::CountUnset`], would change).
pub fn converge_fd(fd: BorrowedFd<'_>, is_dir: bool, op: Op<'_>) -> Result<bool, Errno> {
    let stat = rustix::fs::fstat(fd)?;
    let access = read_acl(fd, XATTR_ACCESS)?;
    let current = access
        .clone()
        .unwrap_or_else(|| Acl::from_mode(stat.st_mode));
    let mut changed = false;
    match op {
        Op::Set(wanted) => {
            let entries = if is_dir { &wanted.dir } else { &wanted.file };
            let new_access = if current.grants(entries) {
                current
            } else {
                let new = current.with_users(entries);
                write_acl(fd, XATTR_ACCESS, &new)?;
                changed = true;
                new
            };
            if is_dir {
                match read_acl(fd, XATTR_DEFAULT)? {
                    Some(default) if default.grants(entries) => {}
                    Some(default) => {
                        write_acl(fd, XATTR_DEFAULT, &default.with_users(entries))?;
                        changed = true;
                    }
                    None => {
                        // New objects start from the folder's own owner,
                        // group and other bits, plus the identities.
                        let base = Acl::from_entries(
                            new_access
                                .entries()
                                .iter()
                                .filter(|e| !e.tag.named() && e.tag != super::Tag::Mask)
                                .copied()
                                .collect(),
                        );
                        write_acl(fd, XATTR_DEFAULT, &base.with_users(entries))?;
                        changed = true;
                    }
                }
            }
        }
        Op::Count(wanted) => {
            let entries = if is_dir { &wanted.dir } else { &wanted.file };
            changed = !current.grants(entries)
                || (is_dir && !read_acl(fd, XATTR_DEFAULT)?.is_some_and(|d| d.grants(entries)));
        }
        Op::CountUnset(uids) => {
            changed = (access.is_some() && uids.iter().any(|u| current.user(*u).is_some()))
                || (is_dir
                    && read_acl(fd, XATTR_DEFAULT)?
                        .is_some_and(|d| uids.iter().any(|u| d.user(*u).is_some())));
        }
        Op::Unset(uids) => {
            if access.is_some() && uids.iter().any(|u| current.user(*u).is_some()) {
                write_acl(fd, XATTR_ACCESS, &current.without_users(uids))?;
                changed = true;
            }
            if is_dir {
                if let Some(default) = read_acl(fd, XATTR_DEFAULT)? {
                    if uids.iter().any(|u| default.user(*u).is_some()) {
                        let left = default.without_users(uids);
                        if left.is_minimal() {
                            match rustix::fs::fremovexattr(fd, XATTR_DEFAULT) {
                                Ok(()) | Err(Errno::NODATA) => {}
                                Err(e) => return Err(e),
                            }
                        } else {
                            write_acl(fd, XATTR_DEFAULT, &left)?;
                        }
                        changed = true;
                    }
                }
            }
        }
    }
    if let Op::Set(wanted) = op {
        // Root took the object between the check and the write (a chown
        // racing the watch): what was just given is taken back, so root's
        // objects never keep an identity's entries from the host.
        if changed && stat.st_uid != 0 && rustix::fs::fstat(fd)?.st_uid == 0 {
            converge_fd(fd, is_dir, Op::Unset(&wanted.uids()))?;
            return Ok(false);
        }
    }
    Ok(changed)
}

/// A child of a directory, opened without following anything, on the
/// folder's filesystem `dev`.
#[derive(Debug)]
pub enum Child {
    /// A directory or regular file, opened, with what its descriptor's
    /// `fstat` said.
    Open {
        /// The descriptor.
        fd: OwnedFd,
        /// Whether it is a directory.
        is_dir: bool,
        /// Its owner.
        uid: u32,
        /// Its inode (on the folder's device).
        ino: u64,
    },
    /// Anything else (a link, FIFO, socket, device, a mount, a file with
    /// other hard links unless they are allowed), or gone: left alone.
    Skipped,
}

/// Open `name` beneath `dir` if it is a directory or regular file, never
/// following a link and never blocking on a FIFO. A regular file with
/// other hard links is opened only when `links` (taking entries away is
/// safe wherever its other names are; giving them is not).
pub fn open_child(dir: BorrowedFd<'_>, name: &CStr, dev: u64, links: bool) -> Result<Child, Errno> {
    let before = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(s) => s,
        Err(Errno::NOENT) => return Ok(Child::Skipped),
        Err(e) => return Err(e),
    };
    let is_dir = match FileType::from_raw_mode(before.st_mode) {
        FileType::Directory => true,
        FileType::RegularFile if before.st_nlink <= 1 || links => false,
        _ => return Ok(Child::Skipped),
    };
    if before.st_dev != dev {
        return Ok(Child::Skipped);
    }
    let mut flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    if is_dir {
        flags |= OFlags::DIRECTORY;
    }
    let fd = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        // Replaced by a link or something else meanwhile, or gone.
        Err(Errno::LOOP | Errno::NOTDIR | Errno::NOENT | Errno::NXIO) => return Ok(Child::Skipped),
        // A write lease (or a mandatory lock) held by the writer.
        Err(Errno::WOULDBLOCK) => return Err(Errno::WOULDBLOCK),
        Err(e) => return Err(e),
    };
    let after = rustix::fs::fstat(&fd)?;
    if after.st_dev != before.st_dev
        || after.st_ino != before.st_ino
        || FileType::from_raw_mode(after.st_mode) != FileType::from_raw_mode(before.st_mode)
        || (!is_dir && !links && after.st_nlink > 1)
    {
        return Ok(Child::Skipped);
    }
    Ok(Child::Open {
        fd,
        is_dir,
        uid: after.st_uid,
        ino: after.st_ino,
    })
}

/// Open a directory by a path relative to `root` (`.` for root itself),
/// one component at a time, never following a link. Paths are bytes: a
/// name need not be UTF-8.
pub fn open_relative(root: BorrowedFd<'_>, rel: impl AsRef<[u8]>) -> Result<OwnedFd, Errno> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut dir = rustix::fs::openat(root, ".", flags, Mode::empty())?;
    for component in rel
        .as_ref()
        .split(|b| *b == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
    {
        dir = rustix::fs::openat(&dir, component, flags, Mode::empty())?;
    }
    Ok(dir)
}

/// Open the directory at absolute `path` from `/`, one component at a
/// time, never following a link.
pub fn open_path(path: &str) -> Result<OwnedFd, Errno> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let root = rustix::fs::openat(rustix::fs::CWD, "/", flags, Mode::empty())?;
    open_relative(root.as_fd(), path.trim_start_matches('/'))
}

/// Open whatever is at absolute `path` (a file, a directory, a device:
/// `O_PATH`, so nothing is read and no device acts) from `/`, one
/// component at a time, never following a link: a link anywhere on the
/// path is `ELOOP`.
pub fn open_any_path(path: &str) -> Result<OwnedFd, Errno> {
    let rel = path.trim_start_matches('/');
    let (parent, name) = match rel.rsplit_once('/') {
        Some((parent, name)) => (parent, name),
        None => ("", rel),
    };
    let dir = open_path(&format!("/{parent}"))?;
    if name.is_empty() {
        return Ok(dir);
    }
    let fd = rustix::fs::openat(
        &dir,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    if FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode) == FileType::Symlink {
        return Err(Errno::LOOP);
    }
    Ok(fd)
}

/// `name` beneath relative path `parent` (`.` for the folder itself).
pub fn join(parent: &[u8], name: &[u8]) -> Vec<u8> {
    if parent == b"." {
        name.to_vec()
    } else {
        [parent, b"/", name].concat()
    }
}

/// Most errors a sweep keeps to report.
const KEPT_ERRORS: usize = 5;

/// One directory a sweep walks, for the watch to follow it: its
/// descriptor (the object checked), its index in the sweep (0 for the
/// start) and its [`Link`] (its parent's index).
#[derive(Debug)]
pub struct DirVisit<'a> {
    /// The directory.
    pub fd: BorrowedFd<'a>,
    /// Its index in this sweep.
    pub index: u32,
    /// Its parent, name, device and inode.
    pub link: &'a Link<u32>,
}

/// Apply `op` to the directory open at `start` and everything beneath it,
/// visiting at most `bound` entries (every name read counts, skipped ones
/// too). `on_dir` is called with each directory walked.
///
/// Descriptors stay bounded whatever the tree: directories waiting their
/// turn are kept as [`Link`]s (index of the parent, name, device, inode),
/// not open, and reopened through a cache of [`CACHED_FDS`].
pub fn sweep(
    start: BorrowedFd<'_>,
    op: Op<'_>,
    bound: usize,
    mut on_dir: impl FnMut(&DirVisit<'_>),
) -> Sweep {
    let mut out = Sweep::default();
    let (dev, ino) = match rustix::fs::fstat(start) {
        Ok(stat) => (stat.st_dev, stat.st_ino),
        Err(e) => {
            out.note(".".into(), e);
            return out;
        }
    };
    let unset = matches!(op, Op::Unset(_) | Op::CountUnset(_));
    // A count changes nothing, so a file's second name would count it
    // twice where the change itself finds it done: files counted are
    // counted once.
    let counts = matches!(op, Op::Count(_) | Op::CountUnset(_));
    let mut counted_files = std::collections::HashSet::new();
    let mut dirs: Vec<Link<u32>> = vec![Link {
        parent: None,
        name: Box::default(),
        dev,
        ino,
    }];
    out.visited += 1;
    match converge_fd(start, true, op) {
        Ok(true) => {
            out.changed += 1;
            out.last_changed = Some(".".into());
        }
        Ok(false) => {}
        Err(e) => out.note(".".into(), e),
    }
    let mut cache = FdCache::new(CACHED_FDS);
    let mut next = 0;
    while next < dirs.len() {
        let index = next as u32;
        next += 1;
        let shown = |dirs: &[Link<u32>], name: Option<&[u8]>| {
            tree::shown(Some(index), name, |k| dirs.get(k as usize))
        };
        let dir = match tree::reopen(start, &mut cache, index, |k| dirs.get(k as usize), next) {
            Ok(fd) => fd,
            // Renamed or replaced since it was queued: the watch sees it
            // where it went.
            Err(Errno::STALE) => continue,
            Err(e) => {
                out.note(shown(&dirs, None), e);
                continue;
            }
        };
        on_dir(&DirVisit {
            fd: dir.as_fd(),
            index,
            link: &dirs[index as usize],
        });
        let entries = match rustix::fs::Dir::read_from(&dir) {
            Ok(entries) => entries,
            Err(e) => {
                out.note(shown(&dirs, None), e);
                continue;
            }
        };
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    out.note(shown(&dirs, None), e);
                    break;
                }
            };
            let name = entry.file_name();
            let bytes = name.to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            if out.visited >= bound {
                out.truncated = true;
                return out;
            }
            out.visited += 1;
            let (fd, is_dir, uid, ino) = match open_child(dir.as_fd(), name, dev, unset) {
                Ok(Child::Open {
                    fd,
                    is_dir,
                    uid,
                    ino,
                }) => (fd, is_dir, uid, ino),
                Ok(Child::Skipped) => continue,
                Err(e) => {
                    out.note(shown(&dirs, Some(bytes)), e);
                    continue;
                }
            };
            // Root's objects are never taken (entries taken away from
            // them are the identities' own, which is safe).
            if uid == 0 && !unset {
                out.root_owned += 1;
                continue;
            }
            match converge_fd(fd.as_fd(), is_dir, op) {
                Ok(true) if counts && !is_dir && !counted_files.insert(ino) => {}
                Ok(true) => {
                    out.changed += 1;
                    out.last_changed = Some(shown(&dirs, Some(bytes)));
                }
                Ok(false) => {}
                Err(e) => out.note(shown(&dirs, Some(bytes)), e),
            }
            if is_dir {
                dirs.push(Link {
                    parent: Some(index),
                    name: bytes.into(),
                    dev,
                    ino,
                });
            }
        }
    }
    out
}

impl Sweep {
    fn note(&mut self, path: String, e: Errno) {
        self.failed += 1;
        if self.errors.len() < KEPT_ERRORS {
            self.errors.push(format!("{path}: {e}"));
        }
    }
}

/// The path of a descriptor for calls that only take paths (inotify):
/// `/proc/self/fd/N`, which the kernel resolves to that very object.
pub fn fd_path(fd: BorrowedFd<'_>) -> String {
    format!("/proc/self/fd/{}", fd.as_raw_fd())
}

#[cfg(test)]
mod tests {
    //! On a real directory tree (the walk is all system calls): what a
    //! sweep sets, what it leaves alone, and what taking entries away
    //! leaves.

    use std::os::unix::fs::{symlink, PermissionsExt};

    use super::*;
    use crate::acl::{Tag, R, W, X};

    fn acl_of(path: &std::path::Path) -> Option<Acl> {
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .expect("open");
        read_acl(fd.as_fd(), XATTR_ACCESS).expect("read")
    }

    fn default_of(path: &std::path::Path) -> Option<Acl> {
        let fd = open_path(path.to_str().expect("utf-8")).expect("open");
        read_acl(fd.as_fd(), XATTR_DEFAULT).expect("read")
    }

    /// Owned by someone else than root when the test can say so (as root,
    /// objects made here are root's, which the walk never takes).
    fn give_away(path: &std::path::Path) {
        if rustix::process::geteuid().is_root() {
            std::os::unix::fs::lchown(path, Some(4242), Some(4242)).expect("chown");
        }
    }

    #[test]
    fn a_sweep_sets_every_file_and_directory_and_follows_nothing() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let folder = tmp.path().join("share");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(folder.join("sub/deeper")).expect("dirs");
        std::fs::create_dir(&outside).expect("outside");
        std::fs::write(folder.join("sub/file"), "x").expect("file");
        std::fs::write(outside.join("secret"), "x").expect("secret");
        symlink(&outside, folder.join("link-out")).expect("symlink");
        symlink(outside.join("secret"), folder.join("link-file")).expect("symlink");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            folder.join("fifo").as_path(),
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .expect("fifo");
        // A hard link to a file outside: other names, never taken.
        std::fs::hard_link(outside.join("secret"), folder.join("hard-link")).expect("link");
        for p in ["sub", "sub/deeper", "sub/file", "fifo", "hard-link"] {
            give_away(&folder.join(p));
        }
        std::fs::set_permissions(
            folder.join("sub/deeper"),
            std::fs::Permissions::from_mode(0o700),
        )
        .expect("chmod");

        let wanted = Wanted::of(&[(2001, true), (2002, false)]);
        let root = open_path(folder.to_str().expect("utf-8")).expect("open");
        // Counted first: what a Set would change, nothing changed.
        let counted = super::sweep(root.as_fd(), Op::Count(&wanted), SWEEP_BOUND, |_| {});
        assert_eq!((counted.visited, counted.changed), (8, 4), "{counted:?}");
        assert_eq!(acl_of(&folder.join("sub")), None, "a count sets nothing");
        let mut dirs = Vec::new();
        let sweep = sweep(root.as_fd(), Op::Set(&wanted), SWEEP_BOUND, |v| {
            dirs.push(String::from_utf8_lossy(&v.link.name).into_owned())
        });
        assert!(sweep.errors.is_empty(), "{:?}", sweep.errors);
        assert_eq!(dirs, vec!["", "sub", "deeper"]);
        // Every name counts against the bound: ., sub, sub/deeper,
        // sub/file, and the links, the FIFO and the file with another
        // name, which are not opened.
        assert_eq!(sweep.visited, 8, "{sweep:?}");
        assert_eq!(sweep.changed, 4, "{sweep:?}");

        for dir in [".", "sub", "sub/deeper"] {
            let acl = acl_of(&folder.join(dir)).expect("an ACL");
            assert_eq!(acl.user(2001), Some(R | W | X), "{dir}: {acl}");
            assert_eq!(acl.user(2002), Some(R | X), "{dir}: {acl}");
            assert!(acl.grants(&wanted.dir), "{dir}: {acl}");
            let default = default_of(&folder.join(dir)).expect("a default ACL");
            assert!(default.grants(&wanted.dir), "{dir}: {default}");
        }
        // chmod 700 had left no group class: the mask now grants the entries.
        let deeper = acl_of(&folder.join("sub/deeper")).expect("acl");
        assert_eq!(deeper.mask(), Some(R | W | X));
        let file = acl_of(&folder.join("sub/file")).expect("an ACL");
        assert_eq!(file.user(2001), Some(R | W), "{file}");
        assert_eq!(file.user(2002), Some(R), "{file}");
        assert_eq!(acl_of(&outside), None, "a link's target is never changed");
        assert_eq!(acl_of(&outside.join("secret")), None, "nor a hard link's");

        // A second sweep finds nothing to do, and a count says so.
        let again = super::sweep(root.as_fd(), Op::Set(&wanted), SWEEP_BOUND, |_| {});
        assert_eq!(again.changed, 0, "{again:?}");
        let counted = super::sweep(root.as_fd(), Op::Count(&wanted), SWEEP_BOUND, |_| {});
        assert_eq!(counted.changed, 0, "{counted:?}");

        // A writer keeps a second name of a file it was given: taking the
        // entries away reaches it all the same.
        std::fs::hard_link(folder.join("sub/file"), folder.join("sub/file.keep")).expect("ln");
        // Counted first, changing nothing: the count is what taking
        // them away then changes.
        let uids = [2001, 2002];
        let counted = super::sweep(root.as_fd(), Op::CountUnset(&uids), SWEEP_BOUND, |_| {});
        assert_eq!(counted.changed, 4, "{counted:?}");
        assert_eq!(
            file.user(2001),
            acl_of(&folder.join("sub/file")).expect("acl").user(2001)
        );
        // Taking the entries away leaves no named entry and no default.
        let gone = super::sweep(root.as_fd(), Op::Unset(&uids), SWEEP_BOUND, |_| {});
        assert_eq!(gone.changed, 4, "{gone:?}");
        let again = super::sweep(root.as_fd(), Op::CountUnset(&uids), SWEEP_BOUND, |_| {});
        assert_eq!(again.changed, 0, "{again:?}");
        for p in [".", "sub", "sub/deeper", "sub/file", "sub/file.keep"] {
            let left = acl_of(&folder.join(p)).unwrap_or_else(|| Acl::from_mode(0));
            assert!(
                !left.entries().iter().any(|e| e.tag == Tag::User),
                "{p}: {left}"
            );
        }
        assert_eq!(default_of(&folder), None);
    }

    #[test]
    fn names_that_are_not_utf8_are_walked_and_reopened() {
        use std::os::unix::ffi::OsStrExt;
        let tmp = tempfile::tempdir().expect("tempdir");
        let folder = tmp.path().join("share");
        let odd = std::ffi::OsStr::from_bytes(b"caf\xe9");
        std::fs::create_dir_all(folder.join(odd)).expect("dir");
        std::fs::write(folder.join(odd).join("f"), "x").expect("file");
        give_away(&folder.join(odd));
        give_away(&folder.join(odd).join("f"));
        let wanted = Wanted::of(&[(2001, true)]);
        let root = open_path(folder.to_str().expect("utf-8")).expect("open");
        let mut dirs: Vec<Vec<u8>> = Vec::new();
        let sweep = sweep(root.as_fd(), Op::Set(&wanted), SWEEP_BOUND, |v| {
            dirs.push(v.link.name.to_vec())
        });
        assert!(sweep.errors.is_empty(), "{:?}", sweep.errors);
        assert_eq!(dirs, vec![b"".to_vec(), b"caf\xe9".to_vec()]);
        assert!(acl_of(&folder.join(odd).join("f")).is_some_and(|a| a.user(2001) == Some(R | W)));
    }

    /// Open descriptors of this process.
    fn open_fds() -> usize {
        std::fs::read_dir("/proc/self/fd").expect("fds").count()
    }

    #[test]
    fn a_wide_tree_costs_a_bounded_number_of_descriptors() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let folder = tmp.path().join("share");
        for i in 0..3000 {
            std::fs::create_dir_all(folder.join(format!("d{i}/e"))).expect("dirs");
        }
        let root = open_path(folder.to_str().expect("utf-8")).expect("open");
        let before = open_fds();
        let mut most = 0;
        let sweep = sweep(root.as_fd(), Op::Unset(&[2001]), SWEEP_BOUND, |_| {
            most = most.max(open_fds());
        });
        assert!(sweep.errors.is_empty(), "{:?}", sweep.errors);
        assert_eq!(sweep.visited, 6001);
        // Other tests run beside this one in the process: a margin.
        assert!(
            most < before + CACHED_FDS + 40,
            "{most} descriptors open at most, {before} before"
        );
    }

    #[test]
    fn root_owned_objects_are_left_alone_and_the_bound_holds() {
        if !rustix::process::geteuid().is_root() {
            // Objects made by another user are not root's: nothing to prove.
            eprintln!("skipped: needs root to make root-owned objects beside others'");
            return;
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        let folder = tmp.path().join("share");
        std::fs::create_dir_all(folder.join("roots")).expect("dirs");
        std::fs::write(folder.join("roots/file"), "x").expect("file");
        for i in 0..10 {
            let p = folder.join(format!("f{i}"));
            std::fs::write(&p, "x").expect("file");
            give_away(&p);
        }
        let wanted = Wanted::of(&[(2001, true)]);
        let root = open_path(folder.to_str().expect("utf-8")).expect("open");
        let sweep = sweep(root.as_fd(), Op::Set(&wanted), SWEEP_BOUND, |_| {});
        assert_eq!(sweep.root_owned, 1, "roots/, not entered: {sweep:?}");
        assert_eq!(acl_of(&folder.join("roots")), None);
        assert_eq!(acl_of(&folder.join("roots/file")), None);
        assert!(acl_of(&folder.join("f3")).is_some_and(|a| a.user(2001) == Some(R | W)));

        let bounded = super::sweep(root.as_fd(), Op::Unset(&[2001]), 5, |_| {});
        assert!(bounded.truncated);
        assert_eq!(bounded.visited, 5);
    }
}
