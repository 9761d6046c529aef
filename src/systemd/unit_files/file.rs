//! The unit files themselves: names checked before they become paths,
//! written atomically, removed.

use std::fmt;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde::Serialize;

/// Permission bits of every unit file written.
pub(super) const UNIT_FILE_MODE: u32 = 0o644;

/// What [`UnitFiles::prepare`](super::UnitFiles::prepare) did to one unit's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileChange {
    /// There was no file: it was written.
    Created,
    /// The file had other content: it was replaced.
    Updated,
    /// The file already had the declared content.
    Unchanged,
}

impl FileChange {
    /// The report word: `created`, `updated` or `unchanged`.
    pub fn as_str(self) -> &'static str {
        match self {
            FileChange::Created => "created",
            FileChange::Updated => "updated",
            FileChange::Unchanged => "unchanged",
        }
    }
}

impl fmt::Display for FileChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

pub(super) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "." || name == ".." {
        return Err(format!("{name:?} is not a unit name"));
    }
    if name.contains('/') {
        return Err(format!("unit name {name:?} contains '/'"));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(format!(
            "unit name {name:?} contains the control character {c:?}"
        ));
    }
    Ok(())
}

/// The unit type of a name (`service`, `timer`, ...).
pub(super) fn suffix(name: &str) -> &str {
    name.rsplit_once('.').map_or("", |(_, s)| s)
}

/// Whether a changed file restarts a running unit of this type (see the
/// module documentation for why the others are only started).
pub(super) fn restarts_on_change(name: &str) -> bool {
    matches!(suffix(name), "service" | "socket" | "timer" | "path")
}

/// Compares the file as it is with the declared content.
pub(super) fn file_change(existing: Option<&[u8]>, wanted: &[u8]) -> FileChange {
    match existing {
        None => FileChange::Created,
        Some(old) if old == wanted => FileChange::Unchanged,
        Some(_) => FileChange::Updated,
    }
}

/// Writes `dir/name` with `content` unless it already holds exactly that,
/// and corrects its permission bits if someone changed them.
pub(super) fn write_unit_file(
    dir: &Path,
    name: &str,
    content: &[u8],
) -> Result<FileChange, String> {
    check_name(name)?;
    let path = dir.join(name);
    let existing = match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let change = file_change(existing.as_deref(), content);
    if change == FileChange::Unchanged {
        let meta = std::fs::metadata(&path)
            .map_err(|e| format!("cannot inspect {}: {e}", path.display()))?;
        if meta.permissions().mode() & 0o7777 != UNIT_FILE_MODE {
            // Content is what systemd loads; the mode only needs fixing.
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(UNIT_FILE_MODE))
                .map_err(|e| format!("cannot set the mode of {}: {e}", path.display()))?;
        }
        return Ok(change);
    }
    crate::store::write_atomic(&path, content, UNIT_FILE_MODE)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(change)
}

/// Deletes `dir/name`; whether there was a file.
pub(super) fn delete_unit_file(dir: &Path, name: &str) -> Result<bool, String> {
    check_name(name)?;
    let path = dir.join(name);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("cannot delete {}: {e}", path.display())),
    }
}

/// Runs blocking filesystem work off the async runtime's threads.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| format!("unit file work did not finish: {e}"))
}
