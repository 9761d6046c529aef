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
/// The bytes go to a new temporary file in the same directory (created with
/// `O_EXCL` under a unique name starting with `.`), which is fsynced, renamed
/// over `path`, and then the directory is fsynced so the rename itself
/// survives a power cut. If anything up to the rename fails, the temporary
/// file is removed and `path` keeps its previous content; if only the final
/// directory fsync fails, the new content is in place but may not survive a
/// crash, and the error is returned all the same.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    write_atomic_with(path, mode, |file| file.write_all(bytes))
}

/// [`write_atomic`] with the content produced by `fill` (lets tests inject a
/// failure in the middle of the write).
pub(crate) fn write_atomic_with(
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
    let (temp_path, mut file) = create_temp(dir, file_name, mode)?;
    let result = (|| {
        fill(&mut file)?;
        if durable {
            file.sync_all()?;
        }
        drop(file);
        fs::rename(&temp_path, path)
    })();
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

/// Creates the temporary file next to the target, with `mode` set on the
/// descriptor (fchmod) so the umask cannot narrow or the old file widen it.
fn create_temp(dir: &Path, file_name: &std::ffi::OsStr, mode: u32) -> io::Result<(PathBuf, File)> {
    let pid = std::process::id();
    let mut last_err = None;
    for _ in 0..TEMP_ATTEMPTS {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let mut name = OsString::from(".");
        name.push(file_name);
        name.push(format!(".{pid}.{n}{TEMP_SUFFIX}"));
        let temp_path = dir.join(name);
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
    fn parent_dir_and_paths_without_a_file_name() {
        assert_eq!(parent_dir(Path::new("x.json")), Path::new("."));
        assert_eq!(parent_dir(Path::new("/a/x.json")), Path::new("/a"));
        let err = write_atomic(Path::new("/"), b"x", 0o600).expect_err("root is no file");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
