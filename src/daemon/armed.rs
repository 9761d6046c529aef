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

use crate::declaration::{self, Declaration};
use crate::store::Store;
use crate::window::Windows;

/// The store document: the canonical form of the declaration of the last
/// complete apply.
pub const ARMED: &str = "armed-declaration";

/// Record `decl` as the declaration the schedules are armed from.
pub fn remember(store: &Store, decl: &Declaration) -> Result<(), String> {
    store.save(ARMED, decl).map_err(|e| e.to_string())
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
            windows.know_held_specs(crate::schedule::step::held_specs(&steps));
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
        remember(&store, &decl).expect("saved");
        assert_eq!(recall(&store), Ok(Some(decl)));
        std::fs::write(dir.path().join("armed-declaration.json"), b"{").expect("damage");
        assert!(recall(&store).is_err());
    }
}
