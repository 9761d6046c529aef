//! The unit files themselves: names checked before they become paths,
//! written atomically, removed.

use super::*;

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

/// The D-Bus interface holding the type-specific properties (`Result`) of a
/// unit type; targets and slices have no `Result`.
pub(super) fn type_interface(name: &str) -> Option<&'static str> {
    Some(match suffix(name) {
        "service" => SERVICE_INTERFACE,
        "socket" => "org.freedesktop.systemd1.Socket",
        "timer" => "org.freedesktop.systemd1.Timer",
        "path" => "org.freedesktop.systemd1.Path",
        "mount" => "org.freedesktop.systemd1.Mount",
        "automount" => "org.freedesktop.systemd1.Automount",
        "swap" => "org.freedesktop.systemd1.Swap",
        _ => return None,
    })
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
