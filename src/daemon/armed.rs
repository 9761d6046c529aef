//! The declaration the schedules were last armed from, kept across
//! restarts.
//!
//! Schedules follow only an apply that went through the whole declaration
//! (CONTRACT "Apply"). Within one daemon, an apply that halted simply
//! leaves them as they are; but a new daemon (a restart, the watchdog, an
//! upgrade) starts with nothing armed, and if its first apply halts too —
//! the installed declaration has a failing run-once step — the node would
//! run no schedule at all. So the declaration of each complete apply is
//! kept in the state directory ([`ARMED`], written atomically), and a daemon
//! whose applies have not yet gone through a whole declaration arms its
//! schedules from it.
//!
//! The daemon keeps only [`Armed`] of it in memory — the digest of the
//! record and the health checks `status` shows — not the declaration
//! itself (about 2 KB a step): `plan` asks the scheduler for the armed
//! step, and a restart reads the record back.

use crate::declaration::{self, Declaration};
use crate::store::Store;
use crate::window::Windows;

/// The store document: the canonical form of the declaration of the last
/// complete apply.
pub const ARMED: &str = "armed-declaration";

/// What the daemon keeps of the declaration its schedules are armed from.
#[derive(Debug, Clone, PartialEq)]
pub struct Armed {
    /// SHA-256 of the record as written; `None` when it could not be
    /// written (the next complete apply writes it, changed or not).
    recorded: Option<[u8; 32]>,
    /// The declared health checks (`render::health_checks`), for `status`.
    pub health: serde_json::Value,
}

impl Armed {
    /// Armed from `decl` as read back from the record.
    pub fn recalled(decl: &Declaration) -> Armed {
        Armed {
            recorded: crate::store::document_digest(decl).ok(),
            health: crate::render::health_checks(decl),
        }
    }
}

/// Record `decl` as the declaration the schedules are armed from, unless
/// `was` says the record already holds it (a no-op apply of a large
/// declaration must not rewrite and fsync a copy of it each time); what
/// to keep of it, and why the record could not be written, if it could
/// not.
pub fn remember(store: &Store, decl: &Declaration, was: Option<&Armed>) -> (Armed, Option<String>) {
    let written = crate::store::document_digest(decl)
        .map_err(|e| e.to_string())
        .and_then(|digest| {
            if was.and_then(|w| w.recorded) != Some(digest) {
                store.save(ARMED, decl).map_err(|e| e.to_string())?;
            }
            Ok(digest)
        });
    let (recorded, error) = match written {
        Ok(digest) => (Some(digest), None),
        Err(e) => (None, Some(e)),
    };
    let health = crate::render::health_checks(decl);
    (Armed { recorded, health }, error)
}

/// The declaration the schedules were last armed from, if any.
pub fn recall(store: &Store) -> Result<Option<Declaration>, String> {
    let Some(value) = store
        .load::<serde_json::Value>(ARMED)
        .map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    let bytes = serde_json::to_vec(&value).map_err(|e| e.to_string())?;
    declaration::parse(&bytes)
        .map(Some)
        .map_err(|r| format!("the recorded declaration is no longer accepted:\n{r}"))
}

/// Tell `windows` how the steps of the last complete apply's declaration
/// (`daemon::armed`) declare the containers they hold.
pub(super) fn know_holds(store: &Store, windows: &Windows) {
    match recall(store) {
        Ok(Some(decl)) => {
            let steps = crate::schedule::step::scheduled_steps(&decl).0;
            windows.know_held_specs(crate::schedule::step::held_specs(
                steps.iter().map(|s| &*s.def.hold_specs),
            ));
        }
        Ok(None) => {}
        Err(e) => tracing::warn!("cannot read the declaration the schedules were armed from: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_armed_declaration_reads_back_equal() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        assert_eq!(recall(&store), Ok(None));
        let image = format!("r.test/s@sha256:{}", "0".repeat(64));
        let decl = declaration::parse(
            serde_json::json!({"declaration": 1, "resources": [
                {"id": "gc", "type": "container", "name": "gc", "image": image,
                 "schedule": "0 3 * * *"}
            ]})
            .to_string()
            .as_bytes(),
        )
        .expect("valid");
        let (armed, error) = remember(&store, &decl, None);
        assert_eq!(error, None);
        assert_eq!(recall(&store), Ok(Some(decl.clone())));
        assert_eq!(Armed::recalled(&decl), armed);
        std::fs::write(dir.path().join("armed-declaration.json"), b"{").expect("damage");
        assert!(recall(&store).is_err());
        // The same declaration again is not written again: the damage
        // stays (what a daemon holds says the record holds it).
        assert_eq!(remember(&store, &decl, Some(&armed)), (armed.clone(), None));
        assert!(recall(&store).is_err());
        // Without that knowledge it is written.
        remember(&store, &decl, None);
        assert_eq!(recall(&store), Ok(Some(decl)));
    }

    #[test]
    fn a_record_that_cannot_be_written_is_written_at_the_next_apply() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let decl = declaration::parse(br#"{"declaration": 1, "resources": []}"#).expect("valid");
        let blocker = dir.path().join("armed-declaration.json");
        std::fs::create_dir(&blocker).expect("a directory where the record goes");
        let (failed, error) = remember(&store, &decl, None);
        assert!(error.is_some(), "a directory in the way is an error");
        std::fs::remove_dir(&blocker).expect("unblock");
        let (armed, error) = remember(&store, &decl, Some(&failed));
        assert_eq!(error, None);
        assert_eq!(recall(&store), Ok(Some(decl)));
        assert_ne!(armed, failed);
    }
}
