//! The oneshot units that already ran: for each oneshot service without
//! `RemainAfterExit` that the host started and that exited successfully, the
//! digest of the unit file it ran under.
//!
//! systemd forgets such a unit as soon as it is unreferenced (it is never
//! "active"), so "it already ran" cannot be read back from it, and without
//! this record every apply — every reconcile — would run it again. With it,
//! an unchanged file means the unit is left alone (`unchanged`: it ran
//! successfully for this content); a changed file runs it again. The record
//! is a store document ([`ONESHOT_RUNS`]), written atomically, only under
//! the apply lock (units are converged by an apply).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::store::Store;

/// The store document of the record.
pub const ONESHOT_RUNS: &str = "oneshot-runs";

/// One oneshot's last successful run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct OneshotRun {
    /// SHA-256 of the unit file it ran under.
    pub file_digest: String,
    /// When that run was judged successful.
    pub ran_at: DateTime<Utc>,
}

/// The digest recorded for a unit file's content.
pub fn digest(content: &str) -> String {
    crate::store::hash_reader(content.as_bytes()).unwrap_or_default()
}

/// The record in a state directory.
#[derive(Debug, Clone)]
pub struct OneshotRuns {
    store: Store,
}

impl OneshotRuns {
    /// The record kept in `store`.
    pub fn new(store: Store) -> Self {
        OneshotRuns { store }
    }

    fn load(&self) -> Result<BTreeMap<String, OneshotRun>, String> {
        self.store
            .load(ONESHOT_RUNS)
            .map(Option::unwrap_or_default)
            .map_err(|e| e.to_string())
    }

    /// When `unit` last ran successfully under a file of this `digest`.
    pub fn ran_with(&self, unit: &str, digest: &str) -> Result<Option<DateTime<Utc>>, String> {
        Ok(self
            .load()?
            .get(unit)
            .filter(|r| r.file_digest == digest)
            .map(|r| r.ran_at))
    }

    /// `unit` just ran successfully under a file of this `digest`.
    pub fn remember(&self, unit: &str, digest: &str) -> Result<(), String> {
        let mut all = self.load()?;
        all.insert(
            unit.to_string(),
            OneshotRun {
                file_digest: digest.to_string(),
                ran_at: Utc::now(),
            },
        );
        self.store
            .save(ONESHOT_RUNS, &all)
            .map_err(|e| e.to_string())
    }

    /// `unit` failed, or is no longer the host's: it runs at its next start.
    pub fn forget(&self, unit: &str) -> Result<(), String> {
        let mut all = self.load()?;
        if all.remove(unit).is_some() {
            self.store
                .save(ONESHOT_RUNS, &all)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_counts_only_for_the_file_it_ran_under() {
        let dir = tempfile::tempdir().expect("tempdir");
        let runs = OneshotRuns::new(Store::open(dir.path()).expect("store"));
        let (v1, v2) = (digest("[Service]\nType=oneshot\n"), digest("[Service]\n"));
        assert_ne!(v1, v2);
        assert_eq!(runs.ran_with("a.service", &v1), Ok(None));
        runs.remember("a.service", &v1).expect("remember");
        assert!(runs.ran_with("a.service", &v1).expect("read").is_some());
        assert_eq!(
            runs.ran_with("a.service", &v2),
            Ok(None),
            "the file changed"
        );
        assert_eq!(runs.ran_with("b.service", &v1), Ok(None));
        runs.forget("a.service").expect("forget");
        assert_eq!(runs.ran_with("a.service", &v1), Ok(None));
        // A damaged record is an error, never "it ran".
        std::fs::write(dir.path().join("oneshot-runs.json"), b"{").expect("damage");
        assert!(runs.ran_with("a.service", &v1).is_err());
    }
}
