//! Reading window records without trusting what is in `windows/`, and
//! setting aside a file there that is not a record this host can read.
//!
//! A record is read through a descriptor opened without following a
//! symbolic link and without blocking (a FIFO dropped there must not hang
//! the daemon), checked to be a regular file of bounded size, parsed, and
//! checked to be filed under its own step's name. Anything else (garbage,
//! NUL bytes, an unknown version, a misfiled record, a directory, a link) is
//! *unreadable*: it cannot say which containers it holds, so it is moved to
//! `windows/unreadable/` (by a caller holding `windows.lock`) and alerted,
//! and it never keeps the valid records from being closed.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use crate::store::{ensure_dir, fsync_dir, StoreError};

use super::record::{window_file_name, WindowRecord};

/// The directory under `windows/` that unreadable files are moved to.
pub const UNREADABLE_DIR: &str = "unreadable";

/// The largest record read: a real one is a few hundred bytes.
const MAX_RECORD_BYTES: u64 = 1 << 20;

/// A file in `windows/` that is not a record this host can read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableRecord {
    /// The file.
    pub path: PathBuf,
    /// Why it cannot be read.
    pub reason: String,
}

/// Every file of `windows/`: the records, and those that cannot be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowScan {
    /// The readable records, ordered by file name.
    pub records: Vec<WindowRecord>,
    /// The files that are not records this host can read.
    pub unreadable: Vec<UnreadableRecord>,
}

/// What is at a record's path.
#[derive(Debug)]
pub(super) enum ReadRecord {
    /// Nothing (closed meanwhile).
    Gone,
    /// A record, filed under its own name.
    Record(WindowRecord),
    /// Something that is not a readable record, and why.
    Unreadable(String),
}

/// Read the record at `path` (see the module documentation). An error is
/// an I/O error that says nothing about the file's content (`EMFILE`,
/// `EIO`): the caller must not take the file for unreadable then.
pub(super) fn read_record(path: &Path) -> Result<ReadRecord, StoreError> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(ReadRecord::Gone),
        Err(rustix::io::Errno::LOOP) => {
            return Ok(ReadRecord::Unreadable("a symbolic link".into()))
        }
        Err(rustix::io::Errno::NXIO) => return Ok(ReadRecord::Unreadable("a socket".into())),
        Err(e) => return Err(StoreError::io("open", path, e.into())),
    };
    let file = File::from(fd);
    let meta = file
        .metadata()
        .map_err(|e| StoreError::io("inspect", path, e))?;
    if !meta.is_file() {
        return Ok(ReadRecord::Unreadable("not a regular file".into()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_RECORD_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| StoreError::io("read", path, e))?;
    if bytes.len() as u64 > MAX_RECORD_BYTES {
        return Ok(ReadRecord::Unreadable(format!(
            "larger than {MAX_RECORD_BYTES} bytes"
        )));
    }
    let record: WindowRecord = match serde_json::from_slice(&bytes) {
        Ok(r) => r,
        Err(e) => return Ok(ReadRecord::Unreadable(e.to_string())),
    };
    let expected = match window_file_name(&record.step) {
        Ok(name) => name,
        Err(e) => return Ok(ReadRecord::Unreadable(e.to_string())),
    };
    if path.file_name() != Some(std::ffi::OsStr::new(&expected)) {
        return Ok(ReadRecord::Unreadable(format!(
            "record of step {:?} belongs in {expected}",
            record.step
        )));
    }
    Ok(ReadRecord::Record(record))
}

/// Every file of `windows_dir` that may be a record: those ending in
/// `.json` and not starting with `.` (temporary files), by name.
pub(super) fn record_paths(windows_dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let entries =
        fs::read_dir(windows_dir).map_err(|e| StoreError::io("read directory", windows_dir, e))?;
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io("read directory", windows_dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || !name.ends_with(".json") {
            continue;
        }
        paths.push(entry.path());
    }
    paths.sort();
    Ok(paths)
}

/// Move the file at `path` to `windows/unreadable/` if it is (still)
/// unreadable; `Ok(None)` when it is gone or now a readable record. The
/// caller holds `windows.lock`, so no record is written meanwhile.
/// Returns where it went and why it could not be read.
pub(super) fn set_aside(
    windows_dir: &Path,
    path: &Path,
) -> Result<Option<(PathBuf, String)>, StoreError> {
    let reason = match read_record(path)? {
        ReadRecord::Unreadable(reason) => reason,
        ReadRecord::Gone | ReadRecord::Record(_) => return Ok(None),
    };
    let aside = windows_dir.join(UNREADABLE_DIR);
    ensure_dir(&aside)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "record".into());
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.9fZ");
    let mut n = 0u32;
    loop {
        let target = if n == 0 {
            aside.join(format!("{name}.{stamp}"))
        } else {
            aside.join(format!("{name}.{stamp}.{n}"))
        };
        match rustix::fs::renameat_with(
            rustix::fs::CWD,
            path,
            rustix::fs::CWD,
            &target,
            rustix::fs::RenameFlags::NOREPLACE,
        ) {
            Ok(()) => {
                fsync_dir(windows_dir)
                    .and_then(|()| fsync_dir(&aside))
                    .map_err(|e| StoreError::io("sync directory", &aside, e))?;
                return Ok(Some((target, reason)));
            }
            Err(rustix::io::Errno::EXIST) if n < 100 => n += 1,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(e) => return Err(StoreError::io("move aside", path, io::Error::from(e))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::record::tests::sample;
    use super::super::records::Records;
    use super::*;
    use crate::store::Store;

    fn store() -> (tempfile::TempDir, Records) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        (dir, Records::of(&store))
    }

    #[test]
    fn garbage_nul_bytes_versions_misfiled_and_odd_files_are_unreadable_apart() {
        let (_dir, store) = store();
        let good = WindowRecord {
            step: "good".into(),
            ..sample("boot")
        };
        store.write(&good).expect("write");
        let w = store.dir().to_path_buf();
        fs::write(w.join("garbage.json"), b"{garbage").expect("write");
        fs::write(w.join("nul.json"), b"\0\0\0").expect("write");
        let mut v2 = serde_json::to_value(WindowRecord {
            step: "v2".into(),
            ..sample("boot")
        })
        .expect("json");
        v2["record"] = 2.into();
        fs::write(w.join("v2.json"), serde_json::to_vec(&v2).expect("json")).expect("write");
        fs::copy(w.join("good.json"), w.join("copied.json")).expect("copy");
        fs::create_dir(w.join("dir.json")).expect("mkdir");
        std::os::unix::fs::symlink(w.join("good.json"), w.join("link.json")).expect("symlink");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            w.join("fifo.json"),
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");

        let scan = store.scan().expect("scan");
        assert_eq!(scan.records, vec![good.clone()]);
        let reasons: Vec<(String, String)> = scan
            .unreadable
            .iter()
            .map(|u| {
                let name = u.path.file_name().expect("name").to_string_lossy();
                (name.into_owned(), u.reason.clone())
            })
            .collect();
        let names: Vec<&str> = reasons.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "copied.json",
                "dir.json",
                "fifo.json",
                "garbage.json",
                "link.json",
                "nul.json",
                "v2.json"
            ]
        );
        let reason = |n: &str| &reasons.iter().find(|(m, _)| m == n).expect(n).1;
        assert!(reason("copied.json").contains("belongs in good.json"));
        assert!(reason("v2.json").contains("version 2 is not understood"));
        assert_eq!(reason("link.json"), "a symbolic link");
        assert_eq!(reason("fifo.json"), "not a regular file");
        // The strict listing refuses, naming a file.
        let err = store.all().expect_err("strict");
        assert!(err.to_string().contains("copied.json"), "{err}");

        // Set aside, each is gone from windows/ and kept under unreadable/;
        // the valid record stays.
        for u in &scan.unreadable {
            let (to, why) = store.set_aside(&u.path).expect("set aside").expect("moved");
            assert_eq!(why, u.reason);
            assert!(to.starts_with(w.join(UNREADABLE_DIR)), "{}", to.display());
            assert!(fs::symlink_metadata(&to).is_ok());
        }
        assert_eq!(store.all().expect("all readable"), vec![good]);
        assert_eq!(
            fs::read(
                fs::read_dir(w.join(UNREADABLE_DIR))
                    .expect("dir")
                    .filter_map(|e| e.ok())
                    .find(|e| e.file_name().to_string_lossy().starts_with("nul.json."))
                    .expect("nul kept")
                    .path()
            )
            .expect("read"),
            b"\0\0\0"
        );
    }

    #[test]
    fn a_file_readable_again_or_gone_is_not_set_aside() {
        let (_dir, store) = store();
        let path = store.dir().join("late.json");
        fs::write(&path, b"{").expect("write");
        // Replaced by a valid record before the lock was had.
        store
            .write(&WindowRecord {
                step: "late".into(),
                ..sample("boot")
            })
            .expect("write");
        assert_eq!(store.set_aside(&path).expect("set aside"), None);
        assert!(path.exists());
        store.remove("late").expect("remove");
        assert_eq!(store.set_aside(&path).expect("gone"), None);
    }
}
