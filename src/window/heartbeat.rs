//! Owners' heartbeats: `leases/<boot>-<pid>-<start time>`, the seconds since
//! boot at which that process last renewed its leases.
//!
//! A window's lease is renewed in its record, under `windows.lock`. Another
//! process holding that lock (stopped with Ctrl-Z, hung) would keep a
//! healthy owner from renewing, and make it look lapsed to a taker that
//! gets the lock first. So an owner also beats here, without the lock: the
//! file is its own, written by no one else, and a taker reads it beside the
//! record. An owner that is itself stopped or hung beats no more, and its
//! lease lapses as before.
//!
//! A beat is an atomic replace without fsync: it means something only in
//! the boot that wrote it, and a power cut ends that boot.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::store::{ensure_dir, write_atomic_unsynced, Store, StoreError, FILE_MODE};

use super::record::WindowRecord;

/// Name of the directory of heartbeats under the state directory.
const LEASES_DIR: &str = "leases";

/// The heartbeats of the owners of windows, under one state directory.
#[derive(Debug, Clone)]
pub struct Heartbeats {
    root: PathBuf,
}

impl Heartbeats {
    /// The heartbeats kept in `store`'s state directory.
    pub fn of(store: &Store) -> Heartbeats {
        Heartbeats {
            root: store.root().to_path_buf(),
        }
    }

    /// Record that `who` renews its leases now, at `since_boot_secs`:
    /// without `windows.lock`.
    pub fn beat(&self, who: &Beater, since_boot_secs: u64) -> Result<(), StoreError> {
        beat(&self.root, who, since_boot_secs)
    }

    /// When the owner of `record` last beat, in seconds since boot.
    pub fn last(&self, record: &WindowRecord) -> Option<u64> {
        last_beat(&self.root, &Beater::of(record))
    }

    /// Remove the heartbeat of `who`, which owns no window now.
    pub fn end(&self, who: &Beater) -> Result<(), StoreError> {
        end(&self.root, who)
    }

    /// Remove the heartbeats no live process of boot `boot_id` can renew.
    pub fn sweep(&self, boot_id: &str) -> Result<(), StoreError> {
        sweep(&self.root, boot_id, |pid| {
            crate::store::live_process_start_time(pid).ok()
        })
    }
}

/// One process, as a window record names its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beater<'a> {
    pub boot_id: &'a str,
    pub pid: u32,
    pub pid_start_time: u64,
}

impl<'a> Beater<'a> {
    /// The owner a record names.
    pub fn of(record: &'a WindowRecord) -> Beater<'a> {
        Beater {
            boot_id: &record.boot_id,
            pid: record.pid,
            pid_start_time: record.pid_start_time,
        }
    }

    fn file_name(&self) -> String {
        format!("{}-{}-{}", self.boot_id, self.pid, self.pid_start_time)
    }
}

/// Record that `who` renewed its leases at `since_boot_secs`.
fn beat(root: &Path, who: &Beater, since_boot_secs: u64) -> Result<(), StoreError> {
    let dir = root.join(LEASES_DIR);
    ensure_dir(&dir)?;
    let path = dir.join(who.file_name());
    write_atomic_unsynced(&path, FILE_MODE, |f| {
        f.write_all(since_boot_secs.to_string().as_bytes())
    })
    .map_err(|e| StoreError::io("write", &path, e))
}

/// When `who` last beat, in seconds since boot; `None` when it never did
/// (or its file cannot be read: the record's own lease then decides).
fn last_beat(root: &Path, who: &Beater) -> Option<u64> {
    let path = root.join(LEASES_DIR).join(who.file_name());
    let text = fs::read_to_string(path).ok()?;
    text.trim().parse().ok()
}

/// Remove the heartbeat of `who` (it owns no window any more).
fn end(root: &Path, who: &Beater) -> Result<(), StoreError> {
    remove(&root.join(LEASES_DIR).join(who.file_name()))
}

/// Remove every heartbeat that no live process can renew: written in
/// another boot than `boot_id`, by a process that is gone, or not a
/// heartbeat's name at all. A process that died owning a window leaves its
/// own behind; the daemon sweeps them at start.
fn sweep(
    root: &Path,
    boot_id: &str,
    start_time: impl Fn(u32) -> Option<u64>,
) -> Result<(), StoreError> {
    let dir = root.join(LEASES_DIR);
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(StoreError::io("read directory", &dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io("read directory", &dir, e))?;
        let name = entry.file_name();
        let live = name
            .to_str()
            .and_then(parse_name)
            .is_some_and(|(boot, pid, start)| boot == boot_id && start_time(pid) == Some(start));
        if !live {
            remove(&entry.path())?;
        }
    }
    Ok(())
}

/// `<boot>-<pid>-<start>` (a boot id has dashes of its own).
fn parse_name(name: &str) -> Option<(&str, u32, u64)> {
    let mut parts = name.rsplitn(3, '-');
    let start = parts.next()?.parse().ok()?;
    let pid = parts.next()?.parse().ok()?;
    Some((parts.next()?, pid, start))
}

fn remove(path: &PathBuf) -> Result<(), StoreError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io("remove", path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_beat_is_read_back_by_its_owner_only_and_ended() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        let me = Beater {
            boot_id: "b1",
            pid: 10,
            pid_start_time: 7,
        };
        let other = Beater {
            pid: 11,
            ..me.clone()
        };
        assert_eq!(last_beat(dir, &me), None);
        beat(dir, &me, 40).expect("heartbeat file");
        beat(dir, &me, 45).expect("heartbeat file");
        assert_eq!(last_beat(dir, &me), Some(45));
        assert_eq!(last_beat(dir, &other), None);
        end(dir, &me).expect("heartbeat file");
        assert_eq!(last_beat(dir, &me), None);
        end(dir, &me).expect("heartbeat file");
    }

    #[test]
    fn beats_no_live_process_can_renew_are_swept() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        let boot = "6f1c-22ab";
        let live = Beater {
            boot_id: boot,
            pid: 10,
            pid_start_time: 7,
        };
        let gone = Beater {
            pid: 11,
            ..live.clone()
        };
        let recycled = Beater {
            pid: 12,
            ..live.clone()
        };
        let old_boot = Beater {
            boot_id: "0a0a-1b1b",
            ..live.clone()
        };
        // A boot id that begins with this one's is another boot.
        let longer = Beater {
            boot_id: "6f1c-22ab-9",
            ..live.clone()
        };
        for b in [&live, &gone, &recycled, &old_boot, &longer] {
            beat(dir, b, 1).expect("heartbeat file");
        }
        std::fs::write(dir.join(LEASES_DIR).join("not-a-beat"), "1").expect("heartbeat file");
        let processes = |pid| match pid {
            10 => Some(7),
            12 => Some(8),
            _ => None,
        };
        sweep(dir, boot, processes).expect("heartbeat file");
        assert_eq!(last_beat(dir, &live), Some(1));
        for b in [&gone, &recycled, &old_boot, &longer] {
            assert_eq!(last_beat(dir, b), None, "{b:?}");
        }
        assert!(!dir.join(LEASES_DIR).join("not-a-beat").exists());
    }
}
