//! Paths walked from `/` one component at a time, never through a
//! symbolic link: the filesystem primitives files, directories and shared
//! folders are decided and made with.
//!
//! Each component is opened with `O_DIRECTORY | O_NOFOLLOW`, so a link
//! planted anywhere in the parent chain stops the walk (and the resource
//! fails, naming it) instead of redirecting a read or a write. This works
//! on every kernel the host supports, where `openat2` with
//! `RESOLVE_NO_SYMLINKS` needs Linux 5.6. `walk_parents` only reads (a
//! missing parent ends the walk: the apply would make it);
//! `open_parent` makes missing parents 0755 (like `mkdir -p -m 0755`,
//! set on the new directory's descriptor, whatever the umask).
//!
//! New content goes to a temporary file created `O_EXCL` in the directory,
//! owner and mode set on its descriptor, fsynced, then `renameat` over the
//! name — which replaces a symbolic link planted at the name itself, never
//! its target — and the directory is fsynced (`write_new`).

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Gid, Mode as FsMode, OFlags, Uid, CWD};
use rustix::io::Errno;

use crate::declaration::{AbsPath, Owner};

/// Makes temporary names unique among the threads of this process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Mode of parent directories the walk creates.
const PARENT_MODE: u32 = 0o755;

/// Flags of each directory opened on the way.
fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// The components of `path` split into its parents and its last name.
fn split(path: &AbsPath) -> Result<(Vec<&str>, &str), String> {
    let components: Vec<&str> = path.as_str().split('/').filter(|c| !c.is_empty()).collect();
    let Some((name, parents)) = components.split_last() else {
        return Err(format!("{path} names no file"));
    };
    Ok((parents.to_vec(), name))
}

/// Why opening `component` of `dir` (at `walked`, a parent of `path`)
/// failed: a link, something not a directory, or the error.
fn parent_error(dir: &OwnedFd, component: &str, walked: &str, path: &AbsPath, e: Errno) -> String {
    if matches!(e, Errno::LOOP | Errno::NOTDIR) {
        let is_link = rustix::fs::statat(dir, component, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Symlink);
        if is_link {
            return format!(
                "{walked} (a parent of {path}) is a symbolic link: declared paths are never followed through links; declare the path it points to"
            );
        }
        return format!("{walked} (a parent of {path}) is not a directory: {e}");
    }
    format!("cannot open {walked} (a parent of {path}): {e}")
}

/// The parent directory of `path`, opened without following any link,
/// and the last component; `None` when a parent is missing (reads only).
pub(crate) fn walk_parents(path: &AbsPath) -> Result<Option<(OwnedFd, &str)>, String> {
    let (parents, name) = split(path)?;
    let mut dir = rustix::fs::openat(CWD, "/", dir_flags(), FsMode::empty())
        .map_err(|e| format!("cannot open /: {e}"))?;
    let mut walked = String::new();
    for component in parents {
        walked.push('/');
        walked.push_str(component);
        dir = match rustix::fs::openat(&dir, component, dir_flags(), FsMode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(parent_error(&dir, component, &walked, path, e)),
        };
    }
    Ok(Some((dir, name)))
}

/// The parent directory of `path`, opened without following any link,
/// missing directories made on the way; and the last component.
pub(crate) fn open_parent(path: &AbsPath) -> Result<(OwnedFd, &str), String> {
    let (parents, name) = split(path)?;
    let mut dir = rustix::fs::openat(CWD, "/", dir_flags(), FsMode::empty())
        .map_err(|e| format!("cannot open /: {e}"))?;
    let mut walked = String::new();
    for component in parents {
        walked.push('/');
        walked.push_str(component);
        let next = match rustix::fs::openat(&dir, component, dir_flags(), FsMode::empty()) {
            Err(Errno::NOENT) => {
                let made = match rustix::fs::mkdirat(
                    &dir,
                    component,
                    FsMode::from_raw_mode(PARENT_MODE),
                ) {
                    Ok(()) => true,
                    Err(Errno::EXIST) => false,
                    Err(e) => {
                        return Err(format!("cannot create {walked} (a parent of {path}): {e}"))
                    }
                };
                let opened = rustix::fs::openat(&dir, component, dir_flags(), FsMode::empty());
                if let (true, Ok(fd)) = (made, &opened) {
                    // The umask narrowed it (the service runs with
                    // UMask=0077): parents are 0755 as documented.
                    rustix::fs::fchmod(fd, FsMode::from_raw_mode(PARENT_MODE)).map_err(|e| {
                        format!("cannot set the mode of {walked} (a parent of {path}): {e}")
                    })?;
                }
                opened
            }
            other => other,
        };
        dir = match next {
            Ok(fd) => fd,
            Err(e) => return Err(parent_error(&dir, component, &walked, path, e)),
        };
    }
    Ok((dir, name))
}

/// Writes `content` to a new temporary file in `dir` (owner and mode set on
/// its descriptor, fsynced) and renames it over `name`, then fsyncs `dir`.
pub(crate) fn write_new(
    dir: &OwnedFd,
    path: &str,
    name: &str,
    content: &[u8],
    mode: u32,
    owner: Option<Owner>,
) -> Result<(), String> {
    let (temp, fd) = create_temp(dir, name).map_err(|e| format!("cannot write {path}: {e}"))?;
    let result = (|| {
        let mut file = fs::File::from(fd);
        file.write_all(content)
            .map_err(|e| format!("cannot write {path}: {e}"))?;
        set_owner_and_mode(file.as_fd(), path, mode, owner)?;
        file.sync_all()
            .map_err(|e| format!("cannot sync {path}: {e}"))?;
        drop(file);
        rustix::fs::renameat(dir, &temp, dir, name)
            .map_err(|e| format!("cannot put {path} in place: {e}"))
    })();
    if let Err(e) = result {
        // Best effort: the original error is the one worth reporting.
        let _ = rustix::fs::unlinkat(dir, &temp, AtFlags::empty());
        return Err(e);
    }
    rustix::fs::fsync(dir).map_err(|e| format!("cannot sync the directory of {path}: {e}"))
}

fn create_temp(dir: &OwnedFd, name: &str) -> Result<(OsString, OwnedFd), Errno> {
    let pid = std::process::id();
    let mut last = Errno::EXIST;
    for _ in 0..64 {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        // Long names would exceed NAME_MAX with the suffix: keep a prefix.
        let stem: String = name.chars().take(150).collect();
        let temp = OsString::from(format!(".{stem}.mesh-host.{pid}.{n}.tmp"));
        match rustix::fs::openat(
            dir,
            temp.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            FsMode::from_raw_mode(0o600),
        ) {
            Ok(fd) => return Ok((temp, fd)),
            Err(Errno::EXIST) => last = Errno::EXIST,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// Owner first: `chown` clears set-id bits, which the mode then sets.
pub(crate) fn set_owner_and_mode(
    fd: std::os::fd::BorrowedFd<'_>,
    path: &str,
    mode: u32,
    owner: Option<Owner>,
) -> Result<(), String> {
    if let Some(owner) = owner {
        rustix::fs::fchown(
            fd,
            Some(Uid::from_raw(owner.uid)),
            Some(Gid::from_raw(owner.gid)),
        )
        .map_err(|e| format!("cannot set the owner of {path} to {owner}: {e}"))?;
    }
    rustix::fs::fchmod(fd, FsMode::from_raw_mode(mode))
        .map_err(|e| format!("cannot set the mode of {path} to {mode:04o}: {e}"))
}

/// What differs between the inode's mode/owner and the declared ones.
pub(crate) fn differences(
    st_mode: u32,
    uid: u32,
    gid: u32,
    mode: u32,
    owner: Option<Owner>,
) -> Vec<String> {
    let mut out = Vec::new();
    let have = st_mode & 0o7777;
    if have != mode {
        out.push(format!("mode {have:04o} -> {mode:04o}"));
    }
    if let Some(owner) = owner {
        if (uid, gid) != (owner.uid, owner.gid) {
            out.push(format!("owner {uid}:{gid} -> {owner}"));
        }
    }
    out
}

/// A file type in words.
pub(crate) fn kind(t: FileType) -> &'static str {
    match t {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a named pipe",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "of an unknown type",
    }
}

/// Why a link at a declared directory's path is refused.
pub(crate) fn symlink_refused(path: &str) -> String {
    format!(
        "{path} is a symbolic link: declared paths are never followed through links; remove it or declare the path it points to"
    )
}

/// An open that did not follow (`ELOOP`: a link), in words.
pub(crate) fn not_followed(path: &str, e: Errno) -> String {
    if e == Errno::LOOP {
        symlink_refused(path)
    } else {
        format!("cannot open {path}: {e}")
    }
}

/// Open the directory `name` of `parent` without following a link.
pub(crate) fn open_dir(parent: &OwnedFd, name: &str) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(parent, name, dir_flags(), FsMode::empty())
}

/// Hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
