//! The state directory's locks: each an exclusive `flock(2)` on a file of
//! its own, held by a type named for what it guards.
//!
//! - [`ApplyLock`], on `<state dir>/lock`: shared by every process that
//!   applies or opens a window on this machine.
//! - [`DocumentLock`], on `<state dir>/<name>.lock`: a short
//!   read-modify-write of one document (`alerts.json`, `suspended-steps.json`).
//! - `windows.lock` serialises writing window records; its type,
//!   `RecordsLock`, lives with the records (`crate::window::records`).
//!
//! `flock` rather than `fcntl` locks because it belongs to the open file
//! description: two opens in one process exclude each other too, and closing
//! an unrelated descriptor of the same file does not drop it. The kernel
//! releases it when the holder exits, however it exits, so a crashed apply
//! never leaves the machine locked.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::FlockOperation;
use rustix::io::Errno;

use super::error::StoreError;

/// A held `flock(2)` on one lock file. Dropping it releases the lock. The
/// typed locks wrap it; it is public for the rooms that keep a lock file of
/// their own (window records).
#[derive(Debug)]
pub struct Flock {
    // Kept for its descriptor, unlocked explicitly on drop.
    file: File,
    path: PathBuf,
}

impl Drop for Flock {
    /// Unlocks before closing: a child forked by another thread of this
    /// process shares the open file description until it execs (and
    /// `O_CLOEXEC` closes it), and closing only our descriptor would leave
    /// the lock held for that moment.
    fn drop(&mut self) {
        let _ = rustix::fs::flock(&self.file, FlockOperation::Unlock);
    }
}

impl Flock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The held apply lock (`<state dir>/lock`): no apply is in flight, and no
/// window opens, while it is held. Dropping it releases the lock.
#[derive(Debug)]
pub struct ApplyLock(Flock);

impl ApplyLock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        self.0.path()
    }

    pub(super) fn new(flock: Flock) -> Self {
        ApplyLock(flock)
    }
}

/// The held lock of one document (`<state dir>/<name>.lock`), for a short
/// read-modify-write of it. Dropping it releases the lock.
#[derive(Debug)]
pub struct DocumentLock(Flock);

impl DocumentLock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        self.0.path()
    }

    pub(super) fn new(flock: Flock) -> Self {
        DocumentLock(flock)
    }
}

/// Opens (creating if needed) the lock file. std opens with `O_CLOEXEC`, so a
/// child process never inherits the lock and outlives us holding it.
fn open_lock_file(path: &Path) -> Result<File, StoreError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map_err(|source| StoreError::Lock {
            path: path.to_owned(),
            source,
        })
}

/// Takes the lock, waiting for the holder to release it.
pub fn lock(path: &Path) -> Result<Flock, StoreError> {
    let file = open_lock_file(path)?;
    loop {
        match rustix::fs::flock(&file, FlockOperation::LockExclusive) {
            Ok(()) => {
                return Ok(Flock {
                    file,
                    path: path.to_owned(),
                })
            }
            // A signal handler ran while waiting; keep waiting.
            Err(Errno::INTR) => continue,
            Err(errno) => {
                return Err(StoreError::Lock {
                    path: path.to_owned(),
                    source: errno.into(),
                })
            }
        }
    }
}

/// Takes the lock, waiting at most `bound` for its holder to release it;
/// past that, [`StoreError::LockHeld`] names the holder. Polled, so that
/// a holder that never lets go (stopped, hung) costs a bounded wait.
pub fn lock_within(path: &Path, bound: Duration) -> Result<Flock, StoreError> {
    let file = open_lock_file(path)?;
    let start = Instant::now();
    let mut pause = Duration::from_millis(2);
    loop {
        match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {
                return Ok(Flock {
                    file,
                    path: path.to_owned(),
                })
            }
            Err(Errno::WOULDBLOCK) | Err(Errno::INTR) => {}
            Err(errno) => {
                return Err(StoreError::Lock {
                    path: path.to_owned(),
                    source: errno.into(),
                })
            }
        }
        let waited = start.elapsed();
        if waited >= bound {
            return Err(StoreError::LockHeld {
                path: path.to_owned(),
                holder: super::holder::describe(&file),
                waited_secs: waited.as_secs(),
            });
        }
        std::thread::sleep(pause.min(bound - waited));
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// Who holds the lock of `path` now, as `/proc/locks` and `/proc` tell
/// (`pid N (COMM, state S: meaning)`), for a wait given up.
pub fn holder(path: &Path) -> String {
    match File::open(path) {
        Ok(file) => super::holder::describe(&file),
        Err(_) => "an unknown process".to_string(),
    }
}

/// Takes the lock if it is free; `None` when another holder has it.
pub fn try_lock(path: &Path) -> Result<Option<Flock>, StoreError> {
    let file = open_lock_file(path)?;
    loop {
        match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {
                return Ok(Some(Flock {
                    file,
                    path: path.to_owned(),
                }))
            }
            Err(Errno::WOULDBLOCK) => return Ok(None),
            Err(Errno::INTR) => continue,
            Err(errno) => {
                return Err(StoreError::Lock {
                    path: path.to_owned(),
                    source: errno.into(),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use super::super::Store;

    /// Exit status `flock(1)` is told to use when the lock is taken.
    const CONFLICT: i32 = 75;

    /// Whether another process (util-linux `flock -n`) can take the lock now.
    fn other_process_can_lock(path: &std::path::Path) -> bool {
        let status = Command::new("flock")
            .args(["-n", "-E", &CONFLICT.to_string()])
            .arg(path)
            .arg("true")
            .status()
            .expect("run flock(1) from util-linux");
        match status.code() {
            Some(0) => true,
            Some(CONFLICT) => false,
            other => panic!("flock(1) failed: {other:?}"),
        }
    }

    #[test]
    fn lock_excludes_another_process_until_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let path = store.lock_path();

        let held = store.lock().expect("lock");
        assert_eq!(held.path(), path);
        assert!(
            !other_process_can_lock(&path),
            "held: another process must wait"
        );
        drop(held);
        assert!(other_process_can_lock(&path), "released on drop");

        let held = store.try_lock().expect("try_lock").expect("free");
        assert!(!other_process_can_lock(&path));
        drop(held);
        assert!(other_process_can_lock(&path));
    }

    #[test]
    fn lock_held_by_another_process_is_waited_for() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        // The child takes the lock, says so, and holds it until its stdin closes.
        let mut child = Command::new("flock")
            .arg(store.lock_path())
            .args(["sh", "-c", "echo locked; read _"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("run flock(1) from util-linux");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read");
        assert_eq!(line, "locked\n");

        assert!(
            store.try_lock().expect("try_lock").is_none(),
            "held elsewhere"
        );

        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let store = store.clone();
            std::thread::spawn(move || {
                let lock = store.lock();
                tx.send(()).expect("send");
                lock
            })
        };
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "lock() returned while another process held the lock"
        );
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(b"\n").expect("release");
        drop(stdin);
        rx.recv_timeout(Duration::from_secs(10))
            .expect("lock() returns once released");
        waiter.join().expect("thread").expect("lock");
        assert!(child.wait().expect("wait").success());
    }

    #[test]
    fn handles_in_one_process_exclude_each_other() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let other = Store::open(dir.path()).expect("open again");
        let held = store.lock().expect("lock");
        assert!(other.try_lock().expect("try_lock").is_none());
        assert!(store.try_lock().expect("try_lock").is_none());
        drop(held);
        assert!(other.try_lock().expect("try_lock").is_some());
    }

    #[test]
    fn lock_error_names_the_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        std::fs::create_dir(store.lock_path()).expect("a directory where the lock goes");
        let err = store
            .lock()
            .expect_err("cannot open a directory for writing");
        assert!(
            err.to_string()
                .contains(&store.lock_path().display().to_string()),
            "{err}"
        );
    }

    #[tokio::test]
    async fn lock_async_waits_without_blocking_the_runtime() {
        // #[tokio::test] runs a single-threaded runtime: if waiting for the
        // lock blocked it, the ticker below could not advance.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let held = store.lock().expect("lock");

        let ticks = Arc::new(AtomicU32::new(0));
        let ticker = {
            let ticks = ticks.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    ticks.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        let waiter = {
            let store = store.clone();
            tokio::spawn(async move { store.lock_async().await })
        };

        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiter.is_finished(), "the lock is still held");
        let before = ticks.load(Ordering::SeqCst);
        assert!(before >= 5, "runtime stalled while waiting: {before} ticks");

        drop(held);
        let lock = tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("lock_async returns once released")
            .expect("task")
            .expect("lock");
        assert!(
            store.try_lock().expect("try_lock").is_none(),
            "now held by lock_async"
        );
        drop(lock);
        assert!(store.try_lock().expect("try_lock").is_some());
        ticker.abort();
    }
}
