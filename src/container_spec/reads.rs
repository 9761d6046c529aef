//! Files read while building a container, each read once per apply
//! (see `cache`).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// What a mount gives to read: path → SHA-256 (`None`: absent).
type MountReads = BTreeMap<String, Option<String>>;

/// Files read while building, by path: what each build of one apply reads
/// is read once.
#[derive(Debug, Default)]
pub(super) struct FileReads {
    /// Env-files: text and SHA-256, or why it could not be read.
    env: HashMap<PathBuf, Result<(String, String), String>>,
    /// What a bind mount gives to read, by source and read-only flag.
    mounts: HashMap<(PathBuf, bool), Result<MountReads, String>>,
}

impl FileReads {
    /// The text and digest of env-file `path`, read by `read` the first time.
    pub(super) fn env_file(
        &mut self,
        path: &Path,
        read: impl FnOnce(&Path) -> Result<String, String>,
    ) -> Result<(&str, &str), String> {
        let entry = self.env.entry(path.to_path_buf()).or_insert_with(|| {
            read(path).map(|text| {
                let digest = Sha256::digest(text.as_bytes())
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                (text, digest)
            })
        });
        match entry {
            Ok((text, digest)) => Ok((text.as_str(), digest.as_str())),
            Err(e) => Err(e.clone()),
        }
    }

    /// What mounting `source` gives to read, found by `read` the first time.
    pub(super) fn mount(
        &mut self,
        source: &Path,
        read_only: bool,
        read: impl FnOnce(&Path, bool) -> Result<MountReads, String>,
    ) -> Result<&MountReads, String> {
        let entry = self
            .mounts
            .entry((source.to_path_buf(), read_only))
            .or_insert_with(|| read(source, read_only));
        match entry {
            Ok(found) => Ok(found),
            Err(e) => Err(e.clone()),
        }
    }
}
