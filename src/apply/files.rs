//! Files and directories, converged without ever following a symbolic link.
//!
//! The path is walked from `/` one component at a time with
//! `O_DIRECTORY | O_NOFOLLOW`, so a link planted anywhere in the parent chain
//! stops the walk (and the resource fails, naming it) instead of redirecting
//! the write. Missing parents are created 0755 (like `mkdir -p -m 0755`:
//! set on the new directory's descriptor, whatever the process's umask). This
//! works on every kernel the host supports, where `openat2` with
//! `RESOLVE_NO_SYMLINKS` needs Linux 5.6.
//!
//! A file is compared through a descriptor opened `O_NOFOLLOW` beneath its
//! parent. New content goes to a temporary file created `O_EXCL` in that
//! directory, owner and mode set on its descriptor, fsynced, then
//! `renameat` over the name — which replaces a symbolic link planted at the
//! name itself, never its target — and the directory is fsynced. Mode and
//! owner alone are fixed through the descriptor (`fchmod`/`fchown`), except
//! on a file with other hard links, which is rewritten rather than changed
//! under the other names.
//!
//! The apply's file and directory resources are converged here too: a file's
//! digest is recorded for the next apply, and its change noted for the
//! containers that `restart-on` it.

use std::ffi::OsString;
use std::fs;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Gid, Mode as FsMode, OFlags, Uid, CWD};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

use super::report::Action;
use super::Run;
use crate::declaration::{AbsPath, Directory, File, Owner};

/// What converging a file or directory did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// It did not exist.
    Created,
    /// It differed; what differed.
    Updated(String),
    /// It was as declared.
    Unchanged,
}

impl Change {
    pub(crate) fn into_action(self) -> (Action, Option<String>) {
        match self {
            Change::Created => (Action::Created, None),
            Change::Updated(why) => (Action::Updated, Some(why)),
            Change::Unchanged => (Action::Unchanged, None),
        }
    }
}

/// Makes temporary names unique among the threads of this process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Mode of parent directories the walk creates.
const PARENT_MODE: u32 = 0o755;

/// Whether a convergence acts, or only decides (a preview: `diff`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Act {
    /// Decide and do it.
    Write,
    /// Decide only: nothing is created, written or changed.
    Preview,
}

/// What converging a file decided, and, in a preview, its content before.
#[derive(Debug)]
pub(crate) struct FileOutcome {
    pub(crate) change: Change,
    /// SHA-256 of the declared content.
    pub(crate) digest: String,
    /// The content found, when a preview found a regular file.
    pub(crate) before: Option<Vec<u8>>,
}

/// Converge a declared file; returns what changed and the SHA-256 of its
/// content as it now is.
#[cfg(test)]
pub(crate) fn converge_file(file: &File) -> Result<(Change, String), String> {
    decide_file(file, Act::Write).map(|o| (o.change, o.digest))
}

/// Converge (or, with [`Act::Preview`], only decide) a declared file:
/// the one set of decisions both the apply and its preview make.
pub(crate) fn decide_file(file: &File, act: Act) -> Result<FileOutcome, String> {
    let path = file.path.as_str();
    let digest = sha256_hex(&file.content);
    let outcome = |change, before| FileOutcome {
        change,
        digest: digest.clone(),
        before,
    };
    let Some((dir, name)) = open_parent_as(&file.path, act)? else {
        // A preview whose parents are missing: the apply makes them.
        return Ok(outcome(Change::Created, None));
    };
    let mode = file.mode.bits();
    let write = |dir: &OwnedFd| match act {
        Act::Write => write_new(dir, path, name, &file.content, mode, file.owner),
        Act::Preview => Ok(()),
    };
    // An undeclared owner is left as it is: a rewrite keeps the old file's.
    let rewrite = |dir: &OwnedFd, uid: u32, gid: u32| {
        let owner = file.owner.or(Some(Owner { uid, gid }));
        match act {
            Act::Write => write_new(dir, path, name, &file.content, mode, owner),
            Act::Preview => Ok(()),
        }
    };
    let stat = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::NOENT) => {
            write(&dir)?;
            return Ok(outcome(Change::Created, None));
        }
        Err(e) => return Err(format!("cannot inspect {path}: {e}")),
    };
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::Symlink => {
            write(&dir)?;
            return Ok(outcome(
                Change::Updated(
                    "was a symbolic link: replaced by the declared file, its target left untouched"
                        .to_string(),
                ),
                None,
            ));
        }
        FileType::RegularFile => {}
        other => {
            return Err(format!(
                "{path} exists and is {}, not a regular file",
                kind(other)
            ))
        }
    }
    let fd = match rustix::fs::openat(
        &dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        FsMode::empty(),
    ) {
        Ok(fd) => fd,
        // Turned into a link since the stat: replace the link.
        Err(Errno::LOOP) => {
            write(&dir)?;
            return Ok(outcome(
                Change::Updated("was a symbolic link: replaced by the declared file".to_string()),
                None,
            ));
        }
        Err(e) => return Err(format!("cannot open {path}: {e}")),
    };
    let stat = rustix::fs::fstat(&fd).map_err(|e| format!("cannot inspect {path}: {e}"))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(format!(
            "{path} changed under the host while it was compared"
        ));
    }
    let mut current = Vec::new();
    let mut reader = fs::File::from(fd);
    reader
        .read_to_end(&mut current)
        .map_err(|e| format!("cannot read {path}: {e}"))?;
    let before = (act == Act::Preview).then(|| current.clone());
    if current != file.content {
        rewrite(&dir, stat.st_uid, stat.st_gid)?;
        return Ok(outcome(
            Change::Updated("content changed".to_string()),
            before,
        ));
    }
    let fixes = differences(stat.st_mode, stat.st_uid, stat.st_gid, mode, file.owner);
    if fixes.is_empty() {
        return Ok(outcome(Change::Unchanged, before));
    }
    let mut why = fixes.join(", ");
    if stat.st_nlink > 1 {
        // Changing the inode would change it under its other names too.
        rewrite(&dir, stat.st_uid, stat.st_gid)?;
        why.push_str(" (rewritten: the file had other hard links)");
    } else if act == Act::Write {
        set_owner_and_mode(reader.as_fd(), path, mode, file.owner)?;
    }
    Ok(outcome(Change::Updated(why), before))
}

/// Converge a declared directory. A symbolic link at its path is refused
/// (replacing it would hide what the link pointed to).
#[cfg(test)]
pub(crate) fn converge_directory(dir: &Directory) -> Result<Change, String> {
    decide_directory(dir, Act::Write)
}

/// Converge (or, with [`Act::Preview`], only decide) a declared directory.
pub(crate) fn decide_directory(dir: &Directory, act: Act) -> Result<Change, String> {
    let path = dir.path.as_str();
    let Some((parent, name)) = open_parent_as(&dir.path, act)? else {
        return Ok(Change::Created);
    };
    let mode = dir.mode.bits();
    let open = |parent: &OwnedFd| {
        rustix::fs::openat(
            parent,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            FsMode::empty(),
        )
    };
    let stat = match rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::NOENT) if act == Act::Preview => return Ok(Change::Created),
        Err(Errno::NOENT) => {
            // Private until its owner and mode are set.
            match rustix::fs::mkdirat(&parent, name, FsMode::from_raw_mode(0o700)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(format!("cannot create {path}: {e}")),
            }
            let fd = open(&parent).map_err(|e| not_followed(path, e))?;
            set_owner_and_mode(fd.as_fd(), path, mode, dir.owner)?;
            rustix::fs::fsync(&parent)
                .map_err(|e| format!("cannot sync the parent of {path}: {e}"))?;
            return Ok(Change::Created);
        }
        Err(e) => return Err(format!("cannot inspect {path}: {e}")),
    };
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::Directory => {}
        FileType::Symlink => return Err(symlink_refused(path)),
        other => {
            return Err(format!(
                "{path} exists and is {}, not a directory",
                kind(other)
            ))
        }
    }
    let fd = open(&parent).map_err(|e| not_followed(path, e))?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| format!("cannot inspect {path}: {e}"))?;
    let fixes = differences(stat.st_mode, stat.st_uid, stat.st_gid, mode, dir.owner);
    if fixes.is_empty() {
        return Ok(Change::Unchanged);
    }
    if act == Act::Write {
        set_owner_and_mode(fd.as_fd(), path, mode, dir.owner)?;
    }
    Ok(Change::Updated(fixes.join(", ")))
}

/// Opens the parent directory of `path` without following any link,
/// creating missing directories on the way. Returns it and the last
/// component.
pub(super) fn open_parent(path: &AbsPath) -> Result<(OwnedFd, &str), String> {
    open_parent_as(path, Act::Write)?.ok_or_else(|| format!("cannot open the parent of {path}"))
}

/// [`open_parent`]; in a preview nothing is made, and a missing parent is
/// `None` (the apply would make it, and the path with it).
fn open_parent_as(path: &AbsPath, act: Act) -> Result<Option<(OwnedFd, &str)>, String> {
    let components: Vec<&str> = path.as_str().split('/').filter(|c| !c.is_empty()).collect();
    let Some((name, parents)) = components.split_last() else {
        return Err(format!("{path} names no file"));
    };
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut dir = rustix::fs::openat(CWD, "/", flags, FsMode::empty())
        .map_err(|e| format!("cannot open /: {e}"))?;
    let mut walked = String::new();
    for component in parents {
        walked.push('/');
        walked.push_str(component);
        let next = match rustix::fs::openat(&dir, *component, flags, FsMode::empty()) {
            Err(Errno::NOENT) if act == Act::Preview => return Ok(None),
            Err(Errno::NOENT) => {
                let made =
                    match rustix::fs::mkdirat(&dir, *component, FsMode::from_raw_mode(PARENT_MODE))
                    {
                        Ok(()) => true,
                        Err(Errno::EXIST) => false,
                        Err(e) => {
                            return Err(format!("cannot create {walked} (a parent of {path}): {e}"))
                        }
                    };
                let opened = rustix::fs::openat(&dir, *component, flags, FsMode::empty());
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
            Err(e @ (Errno::LOOP | Errno::NOTDIR)) => {
                let is_link = rustix::fs::statat(&dir, *component, AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Symlink);
                return Err(if is_link {
                    format!(
                        "{walked} (a parent of {path}) is a symbolic link: declared paths are never followed through links; declare the path it points to"
                    )
                } else {
                    format!("{walked} (a parent of {path}) is not a directory: {e}")
                });
            }
            Err(e) => return Err(format!("cannot open {walked} (a parent of {path}): {e}")),
        };
    }
    Ok(Some((dir, name)))
}

/// Writes `content` to a new temporary file in `dir` (owner and mode set on
/// its descriptor, fsynced) and renames it over `name`, then fsyncs `dir`.
fn write_new(
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
fn set_owner_and_mode(
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
fn differences(st_mode: u32, uid: u32, gid: u32, mode: u32, owner: Option<Owner>) -> Vec<String> {
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

fn kind(t: FileType) -> &'static str {
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

fn symlink_refused(path: &str) -> String {
    format!(
        "{path} is a symbolic link: declared paths are never followed through links; remove it or declare the path it points to"
    )
}

fn not_followed(path: &str, e: Errno) -> String {
    if e == Errno::LOOP {
        symlink_refused(path)
    } else {
        format!("cannot open {path}: {e}")
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Run<'_> {
    /// A file resource: converged, its digest recorded, and its change
    /// noted for the containers that `restart-on` it.
    pub(super) fn file(&mut self, id: &str, file: &File) {
        let act = if self.preview {
            Act::Preview
        } else {
            Act::Write
        };
        match decide_file(file, act) {
            Ok(FileOutcome {
                change,
                digest,
                before,
            }) => {
                self.written_files
                    .insert(file.path.as_str().to_string(), digest);
                let changed = !matches!(change, Change::Unchanged);
                if changed {
                    self.changed_files
                        .insert(id.to_string(), file.path.as_str().to_string());
                }
                let (action, reason) = change.into_action();
                self.push(id, action, reason);
                if self.preview && changed {
                    // What follows is decided as if it were written.
                    self.builds
                        .pretend_written(file.path.as_path(), &file.content);
                    let shown = super::preview::content_diff(file, before.as_deref());
                    if let Some(line) = self.lines.last_mut() {
                        line.diff = shown.diff;
                        if let Some(note) = shown.note {
                            line.reason = Some(match line.reason.take() {
                                Some(reason) => format!("{reason}; {note}"),
                                None => note,
                            });
                        }
                    }
                }
            }
            Err(e) => self.push(id, Action::Failed, Some(e)),
        }
    }

    /// A directory resource.
    pub(super) fn directory(&mut self, id: &str, dir: &Directory) {
        let act = if self.preview {
            Act::Preview
        } else {
            Act::Write
        };
        match decide_directory(dir, act) {
            Ok(change) => {
                let (action, reason) = change.into_action();
                self.push(id, action, reason);
            }
            Err(e) => self.push(id, Action::Failed, Some(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declaration::Mode;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::path::Path;

    fn abs(p: &Path) -> AbsPath {
        AbsPath::try_from(p.to_str().expect("utf-8 path")).expect("absolute")
    }

    fn file(p: &Path, content: &str, mode: u32, owner: Option<(u32, u32)>) -> File {
        File {
            path: abs(p),
            content: content.as_bytes().to_vec(),
            mode: Mode::try_from(mode).expect("mode"),
            owner: owner.map(|(uid, gid)| Owner { uid, gid }),
        }
    }

    fn is_root() -> bool {
        rustix::process::geteuid().is_root()
    }

    #[test]
    fn created_unchanged_then_updated_for_content_mode_and_owner() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("a/b/app.env");
        let f = file(&p, "A=1\n", 0o640, None);
        let (change, digest) = converge_file(&f).expect("create");
        assert_eq!(change, Change::Created);
        assert_eq!(digest, sha256_hex(b"A=1\n"));
        assert_eq!(fs::read(&p).expect("read"), b"A=1\n");
        assert_eq!(
            fs::metadata(&p).expect("stat").permissions().mode() & 0o7777,
            0o640
        );
        assert_eq!(
            fs::metadata(dir.path().join("a/b"))
                .expect("stat")
                .permissions()
                .mode()
                & 0o777,
            0o755 & !umask(),
            "parents made like mkdir -p"
        );
        assert_eq!(converge_file(&f).expect("again").0, Change::Unchanged);

        let inode = fs::metadata(&p).expect("stat").ino();
        let chmod = file(&p, "A=1\n", 0o600, None);
        assert_eq!(
            converge_file(&chmod).expect("chmod").0,
            Change::Updated("mode 0640 -> 0600".into())
        );
        assert_eq!(
            fs::metadata(&p).expect("stat").ino(),
            inode,
            "fixed in place"
        );
        assert_eq!(
            fs::metadata(&p).expect("stat").permissions().mode() & 0o7777,
            0o600
        );

        let edit = file(&p, "A=2\n", 0o600, None);
        assert_eq!(
            converge_file(&edit).expect("edit").0,
            Change::Updated("content changed".into())
        );
        assert_eq!(fs::read(&p).expect("read"), b"A=2\n");
        let names: Vec<_> = fs::read_dir(p.parent().expect("parent"))
            .expect("ls")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(
            names,
            vec![std::ffi::OsString::from("app.env")],
            "no temporary left"
        );

        if is_root() {
            let chown = file(&p, "A=2\n", 0o600, Some((1234, 5678)));
            assert_eq!(
                converge_file(&chown).expect("chown").0,
                Change::Updated("owner 0:0 -> 1234:5678".into())
            );
            let meta = fs::metadata(&p).expect("stat");
            assert_eq!((meta.uid(), meta.gid()), (1234, 5678));
            assert_eq!(converge_file(&chown).expect("again").0, Change::Unchanged);
            // Owner no longer declared: a content change keeps the owner.
            let edit = file(&p, "A=3\n", 0o600, None);
            assert_eq!(
                converge_file(&edit).expect("edit").0,
                Change::Updated("content changed".into())
            );
            let meta = fs::metadata(&p).expect("stat");
            assert_eq!((meta.uid(), meta.gid()), (1234, 5678));
        }
    }

    fn umask() -> u32 {
        // Read without changing it for good: set and restore.
        let old = rustix::process::umask(FsMode::from_raw_mode(0o022));
        rustix::process::umask(old);
        old.bits()
    }

    #[test]
    fn a_symlink_at_the_path_is_replaced_and_its_target_untouched() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("precious");
        fs::write(&target, b"do not touch").expect("write");
        let p = dir.path().join("app.env");
        std::os::unix::fs::symlink(&target, &p).expect("plant link");
        let (change, _) = converge_file(&file(&p, "A=1\n", 0o644, None)).expect("converge");
        assert!(
            matches!(change, Change::Updated(ref why) if why.contains("symbolic link")),
            "{change:?}"
        );
        assert_eq!(fs::read(&target).expect("read"), b"do not touch");
        let meta = fs::symlink_metadata(&p).expect("lstat");
        assert!(meta.file_type().is_file(), "the path is a regular file now");
        assert_eq!(fs::read(&p).expect("read"), b"A=1\n");
    }

    #[test]
    fn a_symlink_in_the_parent_chain_fails_naming_it_and_writes_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let elsewhere = dir.path().join("elsewhere");
        fs::create_dir(&elsewhere).expect("mkdir");
        let link = dir.path().join("etc");
        std::os::unix::fs::symlink(&elsewhere, &link).expect("plant link");
        let p = link.join("app/app.env");
        let err = converge_file(&file(&p, "A=1\n", 0o644, None)).expect_err("refused");
        assert!(
            err.contains(&format!("{} (a parent of", link.display())),
            "{err}"
        );
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(
            fs::read_dir(&elsewhere).expect("ls").count(),
            0,
            "nothing made through the link"
        );

        let d = Directory {
            path: abs(&link.join("data")),
            mode: Mode::DIRECTORY_DEFAULT,
            owner: None,
        };
        let err = converge_directory(&d).expect_err("refused");
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(fs::read_dir(&elsewhere).expect("ls").count(), 0);
    }

    #[test]
    fn a_file_with_other_hard_links_is_rewritten_not_changed_in_place() {
        let dir = tempfile::tempdir().expect("tempdir");
        let other = dir.path().join("other-name");
        fs::write(&other, b"A=1\n").expect("write");
        fs::set_permissions(&other, fs::Permissions::from_mode(0o600)).expect("chmod");
        let p = dir.path().join("app.env");
        fs::hard_link(&other, &p).expect("link");
        let (change, _) = converge_file(&file(&p, "A=1\n", 0o644, None)).expect("converge");
        assert!(
            matches!(change, Change::Updated(ref why) if why.contains("hard links")),
            "{change:?}"
        );
        assert_eq!(
            fs::metadata(&other).expect("stat").permissions().mode() & 0o7777,
            0o600
        );
        assert_eq!(
            fs::metadata(&p).expect("stat").permissions().mode() & 0o7777,
            0o644
        );
    }

    #[test]
    fn directories_created_fixed_and_refused_over_other_things() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("srv/data");
        let d = Directory {
            path: abs(&p),
            mode: Mode::try_from(0o750).expect("mode"),
            owner: None,
        };
        assert_eq!(converge_directory(&d).expect("create"), Change::Created);
        assert_eq!(
            fs::metadata(&p).expect("stat").permissions().mode() & 0o7777,
            0o750
        );
        assert_eq!(converge_directory(&d).expect("again"), Change::Unchanged);
        fs::set_permissions(&p, fs::Permissions::from_mode(0o777)).expect("chmod");
        assert_eq!(
            converge_directory(&d).expect("fix"),
            Change::Updated("mode 0777 -> 0750".into())
        );

        let f = dir.path().join("plain");
        fs::write(&f, b"x").expect("write");
        let not_dir = Directory {
            path: abs(&f),
            mode: Mode::DIRECTORY_DEFAULT,
            owner: None,
        };
        let err = converge_directory(&not_dir).expect_err("a file is there");
        assert!(err.contains("is a regular file, not a directory"), "{err}");
        let err = converge_file(&file(&p, "x", 0o644, None)).expect_err("a directory is there");
        assert!(err.contains("is a directory"), "{err}");
    }
}
