//! Atomic file replacement: a reader (or a crash) sees the old content or the
//! new, never a mix or an empty file.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{Mode, OFlags};

/// Suffix of the temporary files `write_atomic` creates; anything ending in it
/// is never a state file.
pub(crate) const TEMP_SUFFIX: &str = ".tmp";

/// How many taken temporary names to step over before giving up; only stale
/// files left by a crashed process of the same pid can take one.
const TEMP_ATTEMPTS: u32 = 64;

/// Makes temporary names unique among the threads of this process (the pid
/// in the name separates processes).
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces `path` with `bytes`, atomically and durably, leaving it with
/// permission bits `mode` (exactly: the umask does not apply).
///
/// The bytes go to a new file in the same directory that has no name while
/// it is written (`O_TMPFILE`): a process killed mid-write (SIGKILL, a
/// SIGTERM it does not catch) leaves nothing behind. Once fsynced it is
/// linked under a hidden temporary name (`.NAME.PID.N.tmp`, never taken
/// for a state file), renamed over `path`, and the directory is fsynced so
/// the rename itself survives a power cut. Where the file system has no
/// `O_TMPFILE`, the file is made under that temporary name from the start
/// (`O_EXCL`). If anything up to the rename fails, the temporary file is
/// removed and `path` keeps its previous content; if only the final
/// directory fsync fails, the new content is in place but may not survive
/// a crash, and the error is returned all the same.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    write_atomic_with(path, mode, |file| file.write_all(bytes))
}

/// [`write_atomic`] with the content produced by `fill`, written in parts
/// (`import -o` pauses between two for a fault test; tests inject a
/// failure in the middle of the write).
pub fn write_atomic_with(
    path: &Path,
    mode: u32,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    replace(path, mode, fill, true)
}

/// [`write_atomic_with`] without the fsyncs: a reader sees the old content
/// or the new, but a power cut may leave either. For what means something
/// only in the boot that wrote it (a heartbeat).
pub(crate) fn write_atomic_unsynced(
    path: &Path,
    mode: u32,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    replace(path, mode, fill, false)
}

fn replace(
    path: &Path,
    mode: u32,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
    durable: bool,
) -> io::Result<()> {
    let file_name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} does not name a file", path.display()),
        )
    })?;
    let dir = parent_dir(path);
    let (temp_path, result) = match unnamed(dir, mode) {
        Some(mut file) => {
            fill(&mut file)?;
            if durable {
                file.sync_all()?;
            }
            let temp_path = name_temp(dir, file_name, file, mode, durable)?;
            let renamed = fs::rename(&temp_path, path);
            (temp_path, renamed)
        }
        None => {
            let (temp_path, mut file) = create_temp(dir, file_name, mode)?;
            let result = (|| {
                fill(&mut file)?;
                if durable {
                    file.sync_all()?;
                }
                drop(file);
                fs::rename(&temp_path, path)
            })();
            (temp_path, result)
        }
    };
    if let Err(err) = result {
        // Best effort: the original error is the one worth reporting.
        let _ = fs::remove_file(&temp_path);
        return Err(err);
    }
    if durable {
        fsync_dir(dir)
    } else {
        Ok(())
    }
}

/// A new file in `dir` with no name (`O_TMPFILE`), `mode` set on it, or
/// `None` where the file system cannot make one (then a named temporary
/// file is used, whose errors are the ones worth reporting).
fn unnamed(dir: &Path, mode: u32) -> Option<File> {
    let fd = rustix::fs::open(
        dir,
        // Read too: where it cannot be linked, its content is copied.
        OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .ok()?;
    let file = File::from(fd);
    file.set_permissions(Permissions::from_mode(mode)).ok()?;
    Some(file)
}

/// Give the written unnamed `file` a temporary name beside the target:
/// linked through `/proc/self/fd` (no privilege needed), else by
/// `AT_EMPTY_PATH` (which needs CAP_DAC_READ_SEARCH); where neither links
/// it, its content is copied into a named temporary file.
fn name_temp(
    dir: &Path,
    file_name: &std::ffi::OsStr,
    file: File,
    mode: u32,
    durable: bool,
) -> io::Result<PathBuf> {
    match link_temp(dir, file_name, &file) {
        Some(temp_path) => Ok(temp_path),
        None => copy_temp(dir, file_name, file, mode, durable),
    }
}

/// Link `file` under a fresh temporary name, or `None` if it cannot be.
fn link_temp(dir: &Path, file_name: &std::ffi::OsStr, file: &File) -> Option<PathBuf> {
    use rustix::fs::{linkat, AtFlags, CWD};
    use std::os::fd::AsRawFd;
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    for _ in 0..TEMP_ATTEMPTS {
        let temp_path = temp_name(dir, file_name);
        let linked = linkat(CWD, &proc_path, CWD, &temp_path, AtFlags::SYMLINK_FOLLOW).or_else(
            |e| match e {
                rustix::io::Errno::EXIST => Err(e),
                _ => linkat(file, "", CWD, &temp_path, AtFlags::EMPTY_PATH),
            },
        );
        match linked {
            Ok(()) => return Some(temp_path),
            Err(rustix::io::Errno::EXIST) => continue,
            Err(_) => return None,
        }
    }
    None
}

/// Copy what was written into the unnamed `file` into a named temporary
/// file, for a system where it cannot be linked (no `/proc`, no privilege).
fn copy_temp(
    dir: &Path,
    file_name: &std::ffi::OsStr,
    mut file: File,
    mode: u32,
    durable: bool,
) -> io::Result<PathBuf> {
    use std::io::Seek;
    let (temp_path, mut copy) = create_temp(dir, file_name, mode)?;
    let copied = (|| {
        file.seek(io::SeekFrom::Start(0))?;
        io::copy(&mut file, &mut copy)?;
        if durable {
            copy.sync_all()?;
        }
        Ok::<(), io::Error>(())
    })();
    if let Err(e) = copied {
        let _ = fs::remove_file(&temp_path);
        return Err(e);
    }
    Ok(temp_path)
}

/// A hidden temporary name beside the target, unique in this process
/// (the pid separates processes): `.NAME.PID.N.tmp`.
fn temp_name(dir: &Path, file_name: &std::ffi::OsStr) -> PathBuf {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut name = OsString::from(".");
    name.push(file_name);
    name.push(format!(".{}.{n}{TEMP_SUFFIX}", std::process::id()));
    dir.join(name)
}

/// Creates the temporary file next to the target, with `mode` set on the
/// descriptor (fchmod) so the umask cannot narrow or the old file widen it.
fn create_temp(dir: &Path, file_name: &std::ffi::OsStr, mode: u32) -> io::Result<(PathBuf, File)> {
    let mut last_err = None;
    for _ in 0..TEMP_ATTEMPTS {
        let temp_path = temp_name(dir, file_name);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp_path)
        {
            Ok(file) => {
                if let Err(err) = file.set_permissions(Permissions::from_mode(mode)) {
                    drop(file);
                    let _ = fs::remove_file(&temp_path);
                    return Err(err);
                }
                return Ok((temp_path, file));
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => last_err = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::other("no free temporary file name")))
}

/// The directory holding `path` (`.` for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Flushes a directory's entries (a rename or unlink in it) to disk.
pub(crate) fn fsync_dir(dir: &Path) -> io::Result<()> {
    let fd = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    rustix::fs::fsync(&fd)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replaces_content_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.json");
        write_atomic(&path, b"first", 0o600).expect("first write");
        write_atomic(&path, b"second, longer", 0o600).expect("second write");
        assert_eq!(fs::read(&path).expect("read"), b"second, longer");
        assert_eq!(entries(dir.path()), vec!["state.json".to_string()]);
    }

    #[test]
    fn sets_the_mode_exactly() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        // 0o666 would be narrowed by a usual umask if applied through open().
        for mode in [0o600, 0o640, 0o666] {
            write_atomic(&path, b"x", mode).expect("write");
            let got = fs::metadata(&path).expect("stat").permissions().mode() & 0o7777;
            assert_eq!(got, mode, "mode {mode:o}");
        }
    }

    #[test]
    fn parent_is_a_file_fails_cleanly() {
        let dir = tempfile::tempdir().expect("tempdir");
        let blocker = dir.path().join("not-a-dir");
        fs::write(&blocker, b"old").expect("write blocker");
        let err = write_atomic(&blocker.join("state.json"), b"new", 0o600)
            .expect_err("parent is a regular file");
        assert_eq!(
            err.raw_os_error(),
            Some(rustix::io::Errno::NOTDIR.raw_os_error())
        );
        assert_eq!(fs::read(&blocker).expect("read"), b"old");
        assert_eq!(entries(dir.path()), vec!["not-a-dir".to_string()]);
    }

    #[test]
    fn failed_rename_keeps_old_content_and_removes_temp() {
        // The target is a non-empty directory: the temporary file is written
        // and synced, and only the rename fails (EISDIR), as root too.
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("state.json");
        fs::create_dir(&target).expect("mkdir");
        fs::write(target.join("inside"), b"old").expect("write inside");
        let err = write_atomic(&target, b"new", 0o600).expect_err("rename over a directory");
        assert_eq!(
            err.raw_os_error(),
            Some(rustix::io::Errno::ISDIR.raw_os_error())
        );
        assert_eq!(fs::read(target.join("inside")).expect("read"), b"old");
        assert_eq!(entries(dir.path()), vec!["state.json".to_string()]);
    }

    #[test]
    fn failure_mid_write_keeps_old_content_and_removes_temp() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.json");
        write_atomic(&path, b"old content", 0o600).expect("first write");
        let err = write_atomic_with(&path, 0o600, |file| {
            file.write_all(b"half of the new")?;
            Err(io::Error::other("disk full"))
        })
        .expect_err("injected failure");
        assert_eq!(err.to_string(), "disk full");
        assert_eq!(fs::read(&path).expect("read"), b"old content");
        assert_eq!(entries(dir.path()), vec!["state.json".to_string()]);
    }

    #[test]
    fn concurrent_writers_never_leave_a_torn_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.json");
        let contents: Vec<Vec<u8>> = (0..8u8)
            .map(|i| vec![b'a' + i; 4096 * (i as usize + 1)])
            .collect();
        std::thread::scope(|s| {
            for content in &contents {
                let path = &path;
                s.spawn(move || {
                    for _ in 0..20 {
                        write_atomic(path, content, 0o600).expect("write");
                    }
                });
            }
        });
        let got = fs::read(&path).expect("read");
        assert!(
            contents.contains(&got),
            "content is one writer's whole output"
        );
        assert_eq!(entries(dir.path()), vec!["state.json".to_string()]);
    }

    #[test]
    fn the_file_being_written_has_no_name_until_it_is_whole() {
        // A process killed here (SIGKILL, an uncaught SIGTERM) leaves
        // nothing: the directory holds only what it held.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out.json");
        write_atomic(&path, b"old", 0o644).expect("first");
        write_atomic_with(&path, 0o644, |file| {
            file.write_all(b"half of it")?;
            assert_eq!(entries(dir.path()), vec!["out.json".to_string()]);
            file.write_all(b", and the rest")
        })
        .expect("second");
        assert_eq!(fs::read(&path).expect("read"), b"half of it, and the rest");
        assert_eq!(entries(dir.path()), vec!["out.json".to_string()]);
    }

    #[test]
    fn an_unnamed_file_that_cannot_be_linked_is_copied_under_a_hidden_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut file = unnamed(dir.path(), 0o640).expect("O_TMPFILE here");
        file.write_all(b"content").expect("write");
        let temp = copy_temp(dir.path(), "out.json".as_ref(), file, 0o640, true).expect("copy");
        let name = temp
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        assert!(
            name.starts_with(".out.json.") && name.ends_with(TEMP_SUFFIX),
            "{name}"
        );
        assert_eq!(fs::read(&temp).expect("read"), b"content");
        let mode = fs::metadata(&temp).expect("stat").permissions().mode() & 0o7777;
        assert_eq!(mode, 0o640);
    }

    #[test]
    fn parent_dir_and_paths_without_a_file_name() {
        assert_eq!(parent_dir(Path::new("x.json")), Path::new("."));
        assert_eq!(parent_dir(Path::new("/a/x.json")), Path::new("/a"));
        let err = write_atomic(Path::new("/"), b"x", 0o600).expect_err("root is no file");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
