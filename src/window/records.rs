//! The records directory: `windows/<step>.json`, one record per open
//! window, and `windows.lock`, the lock every decision about them is made
//! under ([`RecordsLock`]).
//!
//! Records are replaced atomically, so they are read without the lock; a
//! read-modify-write holds it. Every wait for it is bounded
//! ([`RECORDS_LOCK_WAIT`]): a holder that never lets go (stopped, hung)
//! costs a bounded wait, naming the holder, never a window that stays shut.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::store::{
    flock_within, fsync_dir, lock_holder, try_flock, write_atomic, write_json, Flock, Store,
    StoreError, FILE_MODE,
};

use super::budget::{Deadline, LockWait};
use super::heartbeat::Heartbeats;
use super::record::{window_file_name, WindowRecord};
use super::unreadable::{self, ReadRecord, UnreadableRecord, WindowScan};

/// Name of the lock file that serialises writing window records (opening
/// one, and a process taking over the record of a dead owner).
const RECORDS_LOCK_FILE: &str = "windows.lock";

/// Name of the file of [`Records::epoch`].
const WINDOWS_EPOCH_FILE: &str = "windows.epoch";

/// How long `windows.lock` is waited for before the wait is given up,
/// naming its holder. Every holder of this code keeps it for a record's
/// read and write (and, at most, a container's start of 10 s): a holder
/// past this is stopped or hung, and a window's close then goes on
/// without it, starting its held containers (docs/security.md).
pub const RECORDS_LOCK_WAIT: Duration = Duration::from_secs(20);

/// The held `windows.lock`: no other process reads-then-writes a window
/// record meanwhile. Dropping it releases the lock.
#[derive(Debug)]
pub struct RecordsLock(#[allow(dead_code)] Flock);

/// The window records of one state directory. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Records {
    root: PathBuf,
    dir: PathBuf,
    beats: Heartbeats,
}

impl Records {
    /// The records kept in `store`'s state directory.
    pub fn of(store: &Store) -> Records {
        Records {
            root: store.root().to_path_buf(),
            dir: store.windows_dir().to_path_buf(),
            beats: Heartbeats::of(store),
        }
    }

    /// The directory of window records (watched for new records).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The owners' heartbeats, renewed beside the records' leases.
    pub fn beats(&self) -> &Heartbeats {
        &self.beats
    }

    /// The path of the window record of `step`.
    pub fn path(&self, step: &str) -> Result<PathBuf, StoreError> {
        Ok(self.dir.join(window_file_name(step)?))
    }

    /// The window record of `step`, if one is on disk (whether or not it
    /// still [holds](WindowRecord::holds)); one that cannot be read is an
    /// error naming the file ([`StoreError::Corrupt`]).
    pub fn get(&self, step: &str) -> Result<Option<WindowRecord>, StoreError> {
        let path = self.path(step)?;
        match unreadable::read_record(&path)? {
            ReadRecord::Gone => Ok(None),
            ReadRecord::Record(r) => Ok(Some(r)),
            ReadRecord::Unreadable(reason) => Err(StoreError::Corrupt { path, reason }),
        }
    }

    /// Every window record on disk, ordered by file name, whether or not it
    /// still holds. One that cannot be read or parsed, or whose step does not
    /// match its file name, fails the whole call naming the file: a caller
    /// must not guess which containers are held (see [`Records::scan`] for
    /// the records and the unreadable files apart).
    pub fn all(&self) -> Result<Vec<WindowRecord>, StoreError> {
        let scan = self.scan()?;
        match scan.unreadable.into_iter().next() {
            Some(u) => Err(StoreError::Corrupt {
                path: u.path,
                reason: u.reason,
            }),
            None => Ok(scan.records),
        }
    }

    /// Every file of `windows/`: the readable records (by file name), and
    /// apart those that are not records this host can read (garbage, an
    /// unknown version, a record misfiled under another step's name, not a
    /// regular file). An I/O error that says nothing of a file's content
    /// (`EMFILE`, `EIO`) fails the call.
    pub fn scan(&self) -> Result<WindowScan, StoreError> {
        let mut scan = WindowScan::default();
        for path in unreadable::record_paths(&self.dir)? {
            match unreadable::read_record(&path)? {
                // Closed (removed) between listing and reading.
                ReadRecord::Gone => {}
                ReadRecord::Record(r) => scan.records.push(r),
                ReadRecord::Unreadable(reason) => {
                    scan.unreadable.push(UnreadableRecord { path, reason })
                }
            }
        }
        Ok(scan)
    }

    /// Move the file at `path` (found by [`Records::scan`]) to
    /// `windows/unreadable/`, if it still cannot be read: returns where it
    /// went and why, `None` when it is gone or readable now. The caller
    /// holds `windows.lock`.
    pub fn set_aside(&self, path: &Path) -> Result<Option<(PathBuf, String)>, StoreError> {
        unreadable::set_aside(&self.dir, path)
    }

    /// Writes `record` atomically to `windows/<escaped step id>.json`,
    /// replacing any record of the same step.
    pub fn write(&self, record: &WindowRecord) -> Result<(), StoreError> {
        write_json(&self.path(&record.step)?, record)
    }

    /// Erases the window record of `step` and makes the erasure durable
    /// (fsync of `windows/`). A record already gone is not an error.
    pub fn remove(&self, step: &str) -> Result<(), StoreError> {
        let path = self.path(step)?;
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(StoreError::io("remove", &path, err)),
        }
        fsync_dir(&self.dir).map_err(|e| StoreError::io("sync directory", &self.dir, e))
    }

    /// How many times a container was started under `windows.lock` outside
    /// any window's close (a late stop undone): bumped by that starter
    /// before its start ([`Records::bump_epoch`]). An opener that asked the
    /// runtime before it took the lock compares it, with the records, to
    /// know that what it saw still holds. Zero when never bumped or
    /// unreadable (an unreadable one is rewritten by the next bump, and a
    /// change from it is seen all the same).
    pub fn epoch(&self) -> u64 {
        fs::read_to_string(self.root.join(WINDOWS_EPOCH_FILE))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Bump [`Records::epoch`]; the caller holds `windows.lock`.
    pub fn bump_epoch(&self) -> Result<(), StoreError> {
        let path = self.root.join(WINDOWS_EPOCH_FILE);
        let next = self.epoch().wrapping_add(1);
        write_atomic(&path, next.to_string().as_bytes(), FILE_MODE)
            .map_err(|e| StoreError::io("write", &path, e))
    }

    fn lock_path(&self) -> PathBuf {
        self.root.join(RECORDS_LOCK_FILE)
    }

    /// Takes `windows.lock`, waiting at most `bound` for its holder
    /// ([`StoreError::LockHeld`], naming the holder, past that), blocking
    /// the calling thread.
    pub fn lock_within(&self, bound: Duration) -> Result<RecordsLock, StoreError> {
        flock_within(&self.lock_path(), bound).map(RecordsLock)
    }

    /// Takes `windows.lock` within [`RECORDS_LOCK_WAIT`], blocking the
    /// calling thread (for the short, synchronous record writes of a
    /// caller outside async code's reach).
    pub fn lock(&self) -> Result<RecordsLock, StoreError> {
        self.lock_within(RECORDS_LOCK_WAIT)
    }

    /// [`Records::lock`] on Tokio's blocking pool, so waiting for the lock
    /// never stalls the runtime.
    pub async fn lock_async(&self) -> Result<RecordsLock, StoreError> {
        self.lock_async_within(RECORDS_LOCK_WAIT).await
    }

    /// [`Records::lock_within`] on Tokio's blocking pool.
    pub async fn lock_async_within(&self, bound: Duration) -> Result<RecordsLock, StoreError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.lock_within(bound))
            .await
            .map_err(|join| StoreError::Lock {
                path: self.lock_path(),
                source: io::Error::other(join),
            })?
    }

    /// Takes `windows.lock` within what is left of `deadline`, waiting at
    /// most [`RECORDS_LOCK_WAIT`], and not at all once this deadline's act
    /// gave it up (see [`Deadline::lock`]): polled on the runtime's clock.
    pub async fn lock_by(&self, deadline: &Deadline) -> Result<RecordsLock, LockWait> {
        let path = self.lock_path();
        deadline
            .lock(
                RECORDS_LOCK_FILE,
                RECORDS_LOCK_WAIT,
                || self.try_lock(),
                || lock_holder(&path),
            )
            .await
    }

    /// Takes `windows.lock` if it is free; `Ok(None)` when it is held.
    pub fn try_lock(&self) -> Result<Option<RecordsLock>, StoreError> {
        Ok(try_flock(&self.lock_path())?.map(RecordsLock))
    }
}

#[cfg(test)]
mod tests {
    use super::super::record::tests::sample;
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode_of(path: &Path) -> u32 {
        fs::metadata(path).expect("stat").permissions().mode() & 0o7777
    }

    fn record(step: &str) -> WindowRecord {
        WindowRecord {
            step: step.into(),
            ..sample("boot")
        }
    }

    #[test]
    fn window_records_round_trip_and_remove() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Records::of(&Store::open(dir.path()).expect("open"));
        assert!(store.all().expect("none").is_empty());
        let b = record("b-step");
        let a = record("a.step");
        store.write(&b).expect("write b");
        store.write(&a).expect("write a");
        assert!(dir.path().join("windows/a.step.json").is_file());
        assert_eq!(mode_of(&dir.path().join("windows/a.step.json")), 0o600);
        assert_eq!(store.all().expect("list"), vec![a.clone(), b.clone()]);
        assert_eq!(store.get("b-step").expect("one"), Some(b.clone()));

        // Rewriting replaces.
        let b2 = WindowRecord {
            held: Vec::new(),
            ..b.clone()
        };
        store.write(&b2).expect("rewrite");
        assert_eq!(store.get("b-step").expect("one"), Some(b2));

        store.remove("b-step").expect("remove");
        store.remove("b-step").expect("already gone is fine");
        assert_eq!(store.all().expect("list"), vec![a]);
        assert_eq!(store.get("b-step").expect("none"), None);
    }

    #[test]
    fn corrupt_window_record_fails_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Records::of(&Store::open(dir.path()).expect("open"));
        store.write(&record("good")).expect("write");
        let bad = dir.path().join("windows/bad.json");
        fs::write(&bad, b"{\"record\": 1, \"step\": \"bad\"").expect("write");
        let err = store.all().expect_err("one record is corrupt");
        assert!(
            matches!(&err, StoreError::Corrupt { path, .. } if path == &bad),
            "{err:?}"
        );
        assert!(err.to_string().contains("windows/bad.json"), "{err}");
    }

    #[test]
    fn window_record_under_another_name_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Records::of(&Store::open(dir.path()).expect("open"));
        store.write(&record("real")).expect("write");
        fs::copy(
            dir.path().join("windows/real.json"),
            dir.path().join("windows/copy.json"),
        )
        .expect("copy");
        let err = store.all().expect_err("misfiled record");
        assert!(err.to_string().contains("copy.json"), "{err}");
        assert!(err.to_string().contains("belongs in real.json"), "{err}");
    }

    #[test]
    fn temporary_and_foreign_files_in_windows_are_ignored() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Records::of(&Store::open(dir.path()).expect("open"));
        let rec = record("s");
        store.write(&rec).expect("write");
        let windows = dir.path().join("windows");
        fs::write(windows.join(".s.json.123.0.tmp"), b"{half").expect("temp");
        fs::write(windows.join("README"), b"notes").expect("foreign");
        assert_eq!(store.all().expect("list"), vec![rec]);
    }

    #[test]
    fn odd_step_ids_get_their_own_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Records::of(&Store::open(dir.path()).expect("open"));
        // The longest id accepted must still leave room for the temporary name.
        let long = "x".repeat(195);
        let ids = ["..", "a/b", "a%2Fb", long.as_str()];
        for id in ids {
            store.write(&record(id)).expect(id);
        }
        let steps: Vec<String> = store
            .all()
            .expect("list")
            .into_iter()
            .map(|r| r.step)
            .collect();
        assert_eq!(steps.len(), ids.len());
        for id in ids {
            assert!(steps.iter().any(|s| s == id), "{id} in {steps:?}");
        }
        // Nothing escaped the windows directory.
        assert_eq!(fs::read_dir(dir.path()).expect("ls").count(), 1);
    }
}
