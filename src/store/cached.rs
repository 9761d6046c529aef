//! A state document read again only when its file changed: `status` asks
//! what the last apply recorded on every call, and at thousands of
//! resources that record is megabytes of JSON.
//!
//! Every document is replaced by a rename (`write_atomic`), so a new
//! content is a new file: its inode, size and times are compared with
//! those of the file last read. The file is looked at before and after
//! the read and the result kept only when both agree, so a rename between
//! the two is read again next time rather than kept stale.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;

use super::{Store, StoreError};

/// What tells one file from another at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// The file last read (`None`: there was none) and what was kept of it.
type Seen<T> = (Option<Stamp>, Arc<Option<T>>);

/// Document `name` as `keep` makes it of what it holds, read again only
/// when its file changed.
pub struct Cached<T> {
    name: &'static str,
    last: Mutex<Option<Seen<T>>>,
}

impl<T> std::fmt::Debug for Cached<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cached").field("name", &self.name).finish()
    }
}

impl<T> Cached<T> {
    /// Nothing read yet of document `name`.
    pub fn new(name: &'static str) -> Self {
        Cached {
            name,
            last: Mutex::new(None),
        }
    }

    /// The document (`None`: no file), read as `D` and kept as `keep`
    /// makes it (the part the caller needs, so megabytes are not held).
    pub fn get<D: DeserializeOwned>(
        &self,
        store: &Store,
        keep: impl FnOnce(D) -> T,
    ) -> Result<Arc<Option<T>>, StoreError> {
        let path = store.document_path(self.name)?;
        let stamp = |path: &std::path::Path| match fs::metadata(path) {
            Ok(meta) => Ok(Some(Stamp::of(&meta))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io("stat", path, e)),
        };
        let before = stamp(&path)?;
        {
            let last = self.last.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((seen, value)) = last.as_ref() {
                if *seen == before {
                    return Ok(value.clone());
                }
            }
        }
        let value = Arc::new(store.load::<D>(self.name)?.map(keep));
        if stamp(&path)? == before {
            *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some((before, value.clone()));
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn read_once_then_again_only_when_the_file_is_replaced_or_removed() {
        let dir = crate::test_dirs::test_dir();
        let store = Store::open(dir.path()).expect("store");
        let cached: Cached<u64> = Cached::new("applied");
        let reads = AtomicUsize::new(0);
        let get = || {
            cached
                .get(&store, |v: Vec<u64>| {
                    reads.fetch_add(1, Ordering::SeqCst);
                    v.iter().sum()
                })
                .expect("read")
        };
        assert_eq!(*get(), None, "no file yet");
        store.save("applied", &vec![1u64, 2]).expect("save");
        assert_eq!(*get(), Some(3));
        assert_eq!(*get(), Some(3));
        assert_eq!(
            reads.load(Ordering::SeqCst),
            1,
            "the second get read nothing"
        );
        // Same size, written again: a new file, read again.
        store.save("applied", &vec![2u64, 2]).expect("save");
        assert_eq!(*get(), Some(4));
        assert_eq!(reads.load(Ordering::SeqCst), 2);
        std::fs::remove_file(dir.path().join("applied.json")).expect("rm");
        assert_eq!(*get(), None, "a removed file is seen gone");
    }

    #[test]
    fn an_unreadable_document_is_an_error_each_time_and_never_kept() {
        let dir = crate::test_dirs::test_dir();
        let store = Store::open(dir.path()).expect("store");
        std::fs::write(dir.path().join("applied.json"), b"{not json").expect("write");
        let cached: Cached<u64> = Cached::new("applied");
        for _ in 0..2 {
            assert!(cached.get(&store, |v: u64| v).is_err());
        }
        store.save("applied", &7u64).expect("save");
        assert_eq!(*cached.get(&store, |v: u64| v).expect("read"), Some(7));
    }
}
