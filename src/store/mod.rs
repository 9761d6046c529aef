//! The state directory: its locks, the documents the apply engine and the
//! scheduler keep, and where the window room keeps its records
//! (`crate::window::records`).
//!
//! Layout (default root `/var/lib/mesh-host`, set with `--state-dir`; see also
//! `docs/state-dir.md`):
//!
//! | path | what | written by |
//! |---|---|---|
//! | `lock` | empty file; an exclusive `flock(2)` on it is the apply lock | created by whoever locks first |
//! | `windows.lock` | empty file; its `flock(2)` serialises writing window records (opening, taking over a dead owner's) | created by whoever locks first |
//! | `<name>.json` | a typed JSON document of a consumer ([`Store::save`]) | its consumer, under the lock |
//! | [`APPLIED`]`.json` | what the last apply applied | the apply engine |
//! | [`CONTAINER_INPUTS`]`.json` | per container, digests of what it was created reading | the apply engine |
//! | [`STEP_HISTORY`]`.json` | recent runs of scheduled steps | the scheduler |
//! | `alerts.json` | the latest alerts (`will-not-start-again`, `held-unhealthy`), for `status` | whoever raised one, under `alerts.lock` |
//! | `rollout.<name>.json`, `refused.<name>.json` | a replacement gated on health in flight, a definition a roll back refused (`crate::apply::rollouts`) | the apply engine, under the lock |
//! | `suspended-steps.json` | steps an operator suspended, and since when | `suspend`/`resume`, under `suspended-steps.lock`; the apply engine drops steps no longer declared |
//! | `windows/<step>.json` | one window record per open window (`crate::window::record`) | the scheduler, under the lock |
//! | `leases/<boot>-<pid>-<start>` | the seconds since boot at which that owner of windows last renewed its leases, written without `windows.lock` so that a holder of the lock cannot make it look lapsed | that owner alone |
//! | `forwards/<fire>.json` | a step's output owed to the journal (Podman: `crate::schedule::forward`) | its owner, or whoever takes it over under `forwards.lock` |
//! | `windows.epoch` | a number, bumped under `windows.lock` before a container is started outside any window's close (`crate::window::Records::epoch`) | that starter |
//! | `windows/unreadable/` | files found in `windows/` that are not records this host can read, moved aside (`crate::window::Records::set_aside`) | whoever found them, under `windows.lock` |
//! | `.<file>.<pid>.<n>.tmp` | a write in progress ([`write_atomic`]) | anyone writing |
//!
//! The root and `windows/` are created mode 0700 and files are written 0600:
//! the state is root's alone. Every file is replaced atomically (temporary
//! file in the same directory, fsync, rename, fsync of the directory), so a
//! reader or a crash sees the old document or the new one, never a torn one.
//! A leftover temporary file (a crash mid-write) is never read and may be
//! deleted.
//!
//! A file that exists but cannot be understood is an error naming it
//! ([`StoreError::Corrupt`]), never a silent default: "no window is open"
//! guessed from a damaged record is how a held container gets started under a
//! running step.
//!
//! The store does not decide who may write what; callers hold the lock
//! ([`Store::lock`]) around a read-modify-write, as the contract asks of every
//! apply and of opening a window.

mod atomic;
mod boot;
mod cached;
mod digest;
mod error;
mod holder;
mod lock;

use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

pub(crate) use atomic::{fsync_dir, write_atomic_unsynced};
pub use atomic::{write_atomic, write_atomic_with};
pub use boot::{boot_id, live_process_start_time, process_start_time};
pub use cached::Cached;
pub use digest::{
    config_digest, hash_reader, open_config, read_config, sha256_file, ConfigReadError, MAX_HASHED,
};
pub use error::StoreError;
pub use lock::{
    holder as lock_holder, lock as flock, lock_within as flock_within, try_lock as try_flock,
};
pub use lock::{ApplyLock, DocumentLock, Flock};

/// The default state directory.
pub const DEFAULT_ROOT: &str = "/var/lib/mesh-host";

/// Document name for what the last apply applied (`applied.json`).
pub const APPLIED: &str = "applied";

/// Document name for when the last apply ended (`last-apply.json`): every
/// apply writes it; `applied.json` only when what was applied changed.
pub const LAST_APPLY: &str = "last-apply";

/// Document name for the digests of what each container was created reading
/// (`container-inputs.json`).
pub const CONTAINER_INPUTS: &str = "container-inputs";

/// Document name for the history of scheduled runs (`step-history.json`).
pub const STEP_HISTORY: &str = "step-history";

/// Name of the lock file under the root.
const LOCK_FILE: &str = "lock";

/// Name of the directory of window records under the root.
const WINDOWS_DIR: &str = "windows";

/// Permission bits of every state file: root's alone.
pub(crate) const FILE_MODE: u32 = 0o600;

/// Permission bits of the directories the store creates.
const DIR_MODE: u32 = 0o700;

/// A handle on one state directory. Cheap to clone; holds no descriptors
/// (the lock is taken per call).
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    windows: PathBuf,
}

impl Store {
    /// Opens the state directory at `root`, creating it (mode 0700) and its
    /// `windows` directory if absent. An existing directory keeps its mode
    /// (systemd's `StateDirectory=` may have set it). Fails, naming the path,
    /// when either cannot be created or is not a directory.
    pub fn open(root: impl Into<PathBuf>) -> Result<Store, StoreError> {
        let root = root.into();
        ensure_dir(&root)?;
        let windows = root.join(WINDOWS_DIR);
        ensure_dir(&windows)?;
        Ok(Store { root, windows })
    }

    /// The state directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The lock file (`<root>/lock`).
    pub fn lock_path(&self) -> PathBuf {
        self.root.join(LOCK_FILE)
    }

    /// Takes the apply lock, waiting as long as another process (or another
    /// handle in this one) holds it. Released when the [`ApplyLock`] is
    /// dropped, or by the kernel when the process ends.
    ///
    /// Blocks the calling thread: async code uses [`Store::lock_async`].
    pub fn lock(&self) -> Result<ApplyLock, StoreError> {
        lock::lock(&self.lock_path()).map(ApplyLock::new)
    }

    /// Takes the apply lock if it is free; `Ok(None)` when it is held.
    pub fn try_lock(&self) -> Result<Option<ApplyLock>, StoreError> {
        Ok(lock::try_lock(&self.lock_path())?.map(ApplyLock::new))
    }

    /// [`Store::lock`] on Tokio's blocking pool, so waiting for the lock never
    /// stalls the runtime (the scheduler's loop feeds the watchdog). Must be
    /// awaited within a Tokio runtime.
    ///
    /// If the returned future is dropped while waiting, the lock is still
    /// taken in the background once free and released at once.
    pub async fn lock_async(&self) -> Result<ApplyLock, StoreError> {
        let path = self.lock_path();
        let wait_path = path.clone();
        tokio::task::spawn_blocking(move || lock::lock(&wait_path).map(ApplyLock::new))
            .await
            .map_err(|join| StoreError::Lock {
                path,
                source: io::Error::other(join),
            })?
    }

    /// The directory of window records (watched for new records).
    pub fn windows_dir(&self) -> &Path {
        &self.windows
    }

    /// Takes the lock of document `name` (`<root>/<name>.lock`), for a
    /// short read-modify-write of that document by any process, blocking
    /// the calling thread meanwhile. Apart from the apply lock, so that
    /// it is never waited for behind an apply.
    pub fn document_lock(&self, name: &str) -> Result<DocumentLock, StoreError> {
        let doc = self.document_path(name)?;
        lock::lock(&doc.with_extension("lock")).map(DocumentLock::new)
    }

    /// The lock file of document `name` (`<root>/<name>.lock`).
    pub fn document_lock_path(&self, name: &str) -> Result<PathBuf, StoreError> {
        Ok(self.document_path(name)?.with_extension("lock"))
    }

    /// Takes the lock of document `name` if it is free; `Ok(None)` when
    /// another holder has it (a caller with a deadline polls it).
    pub fn try_document_lock(&self, name: &str) -> Result<Option<DocumentLock>, StoreError> {
        Ok(lock::try_lock(&self.document_lock_path(name)?)?.map(DocumentLock::new))
    }

    /// The path of document `name` (`<root>/<name>.json`).
    ///
    /// A name is letters, digits, `-`, `_` and `.`, not starting with `.`
    /// (those are temporary files): anything else is refused rather than
    /// escaped, since names come from code, not from input.
    pub fn document_path(&self, name: &str) -> Result<PathBuf, StoreError> {
        let invalid = |reason| StoreError::InvalidName {
            name: name.to_owned(),
            reason,
        };
        if name.is_empty() {
            return Err(invalid("empty"));
        }
        if name.starts_with('.') {
            return Err(invalid("starts with '.'"));
        }
        if !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            return Err(invalid(
                "only letters, digits, '-', '_' and '.' are allowed",
            ));
        }
        if name.len() > 200 {
            return Err(invalid("longer than 200 bytes"));
        }
        Ok(self.root.join(format!("{name}.json")))
    }

    /// Reads document `name`: `Ok(None)` if it does not exist; an error
    /// naming the file if it cannot be read or parsed as a `T`.
    pub fn load<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, StoreError> {
        let path = self.document_path(name)?;
        read_json(&path)
    }

    /// Writes document `name` atomically (pretty JSON, mode 0600).
    pub fn save<T: Serialize>(&self, name: &str, value: &T) -> Result<(), StoreError> {
        let path = self.document_path(name)?;
        write_json(&path, value)
    }
}

/// Creates `path` as a 0700 directory if absent (missing parents get the
/// usual modes: only the state directory itself is private); checks that
/// what is there is a directory.
pub(crate) fn ensure_dir(path: &Path) -> Result<(), StoreError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| StoreError::io("create directory", parent, e))?;
    }
    match DirBuilder::new().mode(DIR_MODE).create(path) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
        Err(err) => return Err(StoreError::io("create directory", path, err)),
    }
    let meta = fs::metadata(path).map_err(|e| StoreError::io("inspect", path, e))?;
    if !meta.is_dir() {
        return Err(StoreError::io(
            "use as a directory",
            path,
            rustix::io::Errno::NOTDIR.into(),
        ));
    }
    Ok(())
}

/// Reads and parses a JSON file; `None` if it does not exist.
fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, StoreError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(StoreError::io("read", path, err)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| StoreError::Corrupt {
            path: path.to_owned(),
            reason: e.to_string(),
        })
}

/// Encodes `value` as a document is written (pretty JSON and a newline)
/// into `out`.
fn encode_into<T: Serialize + ?Sized>(
    mut out: impl io::Write,
    value: &T,
) -> serde_json::Result<()> {
    serde_json::to_writer_pretty(&mut out, value)?;
    out.write_all(b"\n").map_err(serde_json::Error::io)
}

/// SHA-256 of `value` as [`Store::save`] would write it, computed as it
/// is encoded (no copy of a document of megabytes is made to tell
/// whether it changed).
pub fn document_digest<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<[u8; 32]> {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    encode_into(&mut hasher, value)?;
    Ok(hasher.finalize().into())
}

/// Encodes `value` as pretty JSON and writes it atomically, mode 0600.
///
/// Encoded straight into the new file through a small buffer: a copy of a
/// document of megabytes (`applied.json` at 5,000 steps, 4.8 MB) was made
/// at an apply's peak and left its pages resident. A value that cannot be
/// encoded leaves `path` as it was, as any failed write does.
pub(crate) fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<(), StoreError> {
    let mut encoding = None;
    let written = write_atomic_with(path, FILE_MODE, |file| {
        let mut out = io::BufWriter::with_capacity(WRITE_BUFFER, file);
        match encode_into(&mut out, value) {
            Ok(()) => io::Write::flush(&mut out),
            Err(e) if e.is_io() => Err(e.into()),
            Err(e) => {
                encoding = Some(e);
                Err(io::Error::other("the value could not be encoded"))
            }
        }
    });
    match (written, encoding) {
        (_, Some(source)) => Err(StoreError::Encode {
            path: path.to_owned(),
            source,
        }),
        (Err(e), None) => Err(StoreError::io("write", path, e)),
        (Ok(()), None) => Ok(()),
    }
}

/// The buffer a document is encoded through on its way to its file.
const WRITE_BUFFER: usize = 64 * 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;

    fn mode_of(path: &Path) -> u32 {
        fs::metadata(path).expect("stat").permissions().mode() & 0o7777
    }

    #[test]
    fn a_documents_digest_is_that_of_the_file_save_writes() {
        use sha2::Digest;
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let value = BTreeMap::from([("a", vec![1, 2]), ("b", vec![])]);
        store.save("doc", &value).expect("save");
        let written = fs::read(dir.path().join("doc.json")).expect("read");
        let digest: [u8; 32] = sha2::Sha256::digest(&written).into();
        assert_eq!(document_digest(&value).expect("digest"), digest);
    }

    #[test]
    fn open_creates_private_root_and_windows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("a/b/state");
        let store = Store::open(&root).expect("open");
        assert_eq!(store.root(), root);
        assert_eq!(mode_of(&root), 0o700);
        assert_eq!(mode_of(&root.join("windows")), 0o700);
        // Opening again is fine and leaves an existing directory as it is.
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755)).expect("chmod");
        Store::open(&root).expect("reopen");
        assert_eq!(mode_of(&root), 0o755);
    }

    #[test]
    fn open_on_a_file_names_the_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("state");
        fs::write(&file, b"").expect("write");
        let err = Store::open(&file).expect_err("a file is no state dir");
        assert!(
            err.to_string().contains(&file.display().to_string()),
            "{err}"
        );

        let below = file.join("deeper");
        let err = Store::open(&below).expect_err("parent is a file");
        assert!(
            err.to_string().contains(&file.display().to_string()),
            "{err}"
        );
    }

    #[test]
    fn documents_round_trip_and_absent_is_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        assert_eq!(
            store.load::<BTreeMap<String, u32>>(APPLIED).expect("load"),
            None
        );
        let doc = BTreeMap::from([("a".to_string(), 1u32), ("b".to_string(), 2)]);
        store.save(APPLIED, &doc).expect("save");
        assert_eq!(store.load(APPLIED).expect("load"), Some(doc));
        let path = dir.path().join("applied.json");
        assert_eq!(mode_of(&path), 0o600);
        assert!(fs::read_to_string(&path).expect("read").ends_with("}\n"));
    }

    #[test]
    fn corrupt_document_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let path = dir.path().join("container-inputs.json");
        for bad in [&b"{\"a\": 1"[..], b"", b"\xff\xfe", b"[1, 2]"] {
            fs::write(&path, bad).expect("write");
            let err = store
                .load::<BTreeMap<String, u32>>(CONTAINER_INPUTS)
                .expect_err("corrupt, never a silent None");
            assert!(
                matches!(&err, StoreError::Corrupt { path: p, .. } if p == &path),
                "{bad:?}: {err:?}"
            );
            assert!(
                err.to_string().contains(&path.display().to_string()),
                "{err}"
            );
        }
        // A directory where the document should be: an I/O error, not None.
        fs::remove_file(&path).expect("rm");
        fs::create_dir(&path).expect("mkdir");
        let err = store
            .load::<BTreeMap<String, u32>>(CONTAINER_INPUTS)
            .expect_err("unreadable");
        assert!(matches!(err, StoreError::Io { .. }), "{err:?}");
        assert!(
            err.to_string().contains(&path.display().to_string()),
            "{err}"
        );
    }

    #[test]
    fn bad_document_names_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        for name in [
            "",
            ".hidden",
            "../escape",
            "a/b",
            "sp ace",
            &"x".repeat(201),
        ] {
            let err = store.save(name, &1).expect_err(name);
            assert!(
                matches!(err, StoreError::InvalidName { .. }),
                "{name}: {err:?}"
            );
        }
        assert_eq!(
            fs::read_dir(dir.path()).expect("ls").count(),
            1,
            "only windows/"
        );
    }

    #[test]
    fn unencodable_value_writes_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let bad = BTreeMap::from([((1, 2), "tuple keys are not JSON")]);
        let err = store.save(STEP_HISTORY, &bad).expect_err("tuple keys");
        assert!(matches!(err, StoreError::Encode { .. }), "{err:?}");
        assert!(!dir.path().join("step-history.json").exists());
    }

    /// Encoded into the file as it goes: a value that fails past the
    /// first buffers written still leaves the document as it was, and no
    /// temporary file.
    #[test]
    fn a_value_failing_midway_leaves_the_document_as_it_was() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        store.save("doc", &vec!["before"]).expect("save");
        let before = fs::read(dir.path().join("doc.json")).expect("read");
        let long = vec!["x".repeat(100); 10_000];
        let bad = (long, BTreeMap::from([((1, 2), "tuple keys are not JSON")]));
        let err = store.save("doc", &bad).expect_err("tuple keys");
        assert!(matches!(err, StoreError::Encode { .. }), "{err:?}");
        assert_eq!(fs::read(dir.path().join("doc.json")).expect("read"), before);
        let mut names: Vec<String> = fs::read_dir(dir.path())
            .expect("ls")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["doc.json", "windows"]);
    }
}
