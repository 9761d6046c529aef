//! Handing windows over to the next daemon, for a package upgrade.
//!
//! A plain `SIGTERM` (`systemctl stop`) stops the running steps and closes
//! their windows before the daemon exits. A package upgrade must not cut a
//! step short: its maintainer script first creates [`MARKER`] in the
//! daemon's runtime directory (beside the control socket), then restarts
//! the unit. A daemon told to stop while the marker exists takes it away
//! and **hands its windows over**: their records stay on disk, their steps
//! run on (a step's container needs no daemon), nothing is stopped, and it
//! exits once an apply in flight has finished. It leaves a note
//! ([`NOTE`], in the state directory) naming the windows it handed over.
//!
//! The next daemon finds the note at start-up and does not wait for those
//! steps before it says READY (an upgrade would otherwise wait for a
//! backup of hours): its adopter takes each window over within seconds,
//! as after a crash, waits for the step within the window's bound, and
//! closes it when the step ends.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::store::Store;
use crate::window::Windows;

/// The file a maintainer script creates, in the directory of the control
/// socket (`/run/mesh-host/`), to make the next stop a hand-over.
pub const MARKER: &str = "hand-over";

/// The state document a daemon that handed its windows over leaves for
/// the next one.
pub const NOTE: &str = "handed-over";

/// What a daemon that handed its windows over says to the next one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Note {
    /// The pid of the daemon that handed them over.
    pub pid: u32,
    /// Its boot: a note of another boot means nothing.
    pub boot_id: String,
    /// When.
    pub at: DateTime<Utc>,
    /// The steps whose windows it handed over.
    pub steps: Vec<String>,
}

/// Where the marker is for a daemon listening on `control_socket`.
pub fn marker_path(control_socket: &Path) -> PathBuf {
    control_socket
        .parent()
        .unwrap_or(Path::new("/"))
        .join(MARKER)
}

/// Whether this stop is a hand-over: the marker exists (a plain file, not
/// a link). It is taken away, so that it counts for one stop only.
pub fn requested(control_socket: &Path) -> bool {
    let path = marker_path(control_socket);
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.file_type().is_file() => {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!("cannot remove {}: {e}", path.display());
            }
            true
        }
        Ok(_) => {
            tracing::warn!(
                "{} is not a plain file: ignored, this stop closes the windows",
                path.display()
            );
            false
        }
        Err(_) => false,
    }
}

/// Leave this process's windows to the next daemon: log each, and write
/// the note naming them.
pub fn leave(store: &Store, windows: &Windows) {
    let owner = windows.owner();
    let steps: Vec<String> = match windows.records().all() {
        Ok(records) => records
            .into_iter()
            .filter(|r| owner.owns(r))
            .map(|r| r.step)
            .collect(),
        Err(e) => {
            tracing::error!("cannot read the window records to hand them over: {e}");
            Vec::new()
        }
    };
    for step in &steps {
        tracing::warn!(
            MESH_STEP = %step,
            "handing the window of {step} over to the next mesh-host: its step runs on, and the next daemon closes the window when it ends"
        );
    }
    let note = Note {
        pid: owner.pid,
        boot_id: owner.boot_id.clone(),
        at: Utc::now(),
        steps,
    };
    if let Err(e) = store.save(NOTE, &note) {
        tracing::error!("cannot leave the hand-over note: {e}");
    }
}

/// At start-up: the note a daemon of this boot left, taken away (read
/// once). A note that cannot be read is reported and ignored.
pub fn take(store: &Store, boot_id: &str) -> Option<Note> {
    let note = match store.load::<Note>(NOTE) {
        Ok(note) => note,
        Err(e) => {
            tracing::warn!("ignoring the hand-over note: {e}");
            None
        }
    };
    if let Ok(path) = store.document_path(NOTE) {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("cannot remove {}: {e}", path.display()),
        }
    }
    note.filter(|n| n.boot_id == boot_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_counts_once_and_only_as_a_plain_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("control.sock");
        assert!(!requested(&socket));
        std::fs::write(dir.path().join(MARKER), b"").expect("marker");
        assert!(requested(&socket));
        assert!(!requested(&socket), "taken away");
        std::os::unix::fs::symlink("/dev/null", dir.path().join(MARKER)).expect("link");
        assert!(!requested(&socket), "a link is no marker");
    }

    #[test]
    fn a_note_is_read_once_and_only_in_its_boot() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().join("state")).expect("store");
        let note = Note {
            pid: 42,
            boot_id: "b1".into(),
            at: Utc::now(),
            steps: vec!["backup".into()],
        };
        store.save(NOTE, &note).expect("save");
        assert_eq!(take(&store, "b1"), Some(note.clone()));
        assert_eq!(take(&store, "b1"), None, "read once");
        store.save(NOTE, &note).expect("save");
        assert_eq!(take(&store, "b2"), None, "another boot's");
        assert_eq!(take(&store, "b1"), None, "and gone");
    }
}
