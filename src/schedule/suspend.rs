//! Suspended steps: an operator's override (`mesh-host suspend STEP`),
//! kept in the state directory ([`DOC`]) across restarts, reboots and
//! applies, lifted only by `mesh-host resume STEP` or by the step leaving
//! the declaration (the next complete apply drops it).
//!
//! A suspended step's due times pass unrun (each logged `step-suspended`)
//! and are never caught up; `run STEP` refuses it without `--force`. The
//! daemon's scheduler keeps the set in memory and writes it through here;
//! a command with `--local` writes it when no daemon runs, and the next
//! daemon reads it at start. Every change is a read-modify-write under
//! the document's own lock (never the apply lock, which an apply holds for
//! minutes), written atomically.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::store::Store;

/// The store document (`suspended-steps.json`).
pub const DOC: &str = "suspended-steps";

/// The document: suspended step ids and since when.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Suspended {
    /// Step id → its suspension.
    #[serde(default)]
    pub steps: BTreeMap<String, Suspension>,
}

/// One step's suspension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Suspension {
    /// When it was suspended.
    pub since: DateTime<Utc>,
}

impl Suspended {
    /// When `step` was suspended, if it is.
    pub fn since(&self, step: &str) -> Option<DateTime<Utc>> {
        self.steps.get(step).map(|s| s.since)
    }
}

/// The suspended steps as the state directory has them (none: no file).
pub fn load(store: &Store) -> Result<Suspended, String> {
    store
        .load::<Suspended>(DOC)
        .map(Option::unwrap_or_default)
        .map_err(|e| e.to_string())
}

/// [`load`] for a reader that must go on: a damaged file is said and taken
/// as no step suspended (the operator repairs or removes it).
pub fn load_or_none(store: &Store) -> Suspended {
    load(store).unwrap_or_else(|e| {
        tracing::error!("the suspended steps cannot be read ({e}): no step is taken as suspended");
        Suspended::default()
    })
}

/// Change the document under its lock with `change`, writing it back only
/// when `change` changed it; what `change` returned, and the document.
fn modify<T>(
    store: &Store,
    change: impl FnOnce(&mut Suspended) -> T,
) -> Result<(T, Suspended), String> {
    let _lock = store.document_lock(DOC).map_err(|e| e.to_string())?;
    let mut doc = load(store)?;
    let before = doc.clone();
    let out = change(&mut doc);
    if doc != before {
        store.save(DOC, &doc).map_err(|e| e.to_string())?;
    }
    Ok((out, doc))
}

/// Suspend `step` from `now`; a step already suspended keeps its first
/// time. When it is suspended since, and the whole set.
pub fn suspend(
    store: &Store,
    step: &str,
    now: DateTime<Utc>,
) -> Result<(DateTime<Utc>, Suspended), String> {
    modify(store, |doc| {
        doc.steps
            .entry(step.to_string())
            .or_insert(Suspension { since: now })
            .since
    })
}

/// Lift `step`'s suspension: since when it was suspended (`None`: it was
/// not), and the whole set.
pub fn resume(store: &Store, step: &str) -> Result<(Option<DateTime<Utc>>, Suspended), String> {
    modify(store, |doc| doc.steps.remove(step).map(|s| s.since))
}

/// Keep only the suspensions of `declared` steps (after a complete apply):
/// the ids dropped.
pub fn retain(store: &Store, declared: &BTreeSet<String>) -> Result<Vec<String>, String> {
    if !store
        .document_path(DOC)
        .map_err(|e| e.to_string())?
        .exists()
    {
        return Ok(Vec::new());
    }
    modify(store, |doc| {
        let gone: Vec<String> = doc
            .steps
            .keys()
            .filter(|id| !declared.contains(*id))
            .cloned()
            .collect();
        for id in &gone {
            doc.steps.remove(id);
        }
        gone
    })
    .map(|(gone, _)| gone)
}

/// Why `run STEP` refuses a suspended step.
pub fn refusal(step: &str, since: DateTime<Utc>) -> String {
    format!(
        "step {step} is suspended (since {}): not run; mesh-host run {step} --force runs it anyway, mesh-host resume {step} lifts the suspension",
        since.format("%Y-%m-%d %H:%M:%S UTC")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("time").to_utc()
    }

    #[test]
    fn suspend_resume_and_retain_keep_the_document() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        assert_eq!(load(&store), Ok(Suspended::default()));
        let (since, _) = suspend(&store, "gc", at("2026-12-01T10:00:00Z")).expect("suspend");
        assert_eq!(since, at("2026-12-01T10:00:00Z"));
        // Suspended again: its first time stays.
        let (since, doc) = suspend(&store, "gc", at("2026-12-01T11:00:00Z")).expect("again");
        assert_eq!(since, at("2026-12-01T10:00:00Z"));
        assert_eq!(doc.since("gc"), Some(since));
        suspend(&store, "backup", at("2026-12-01T12:00:00Z")).expect("suspend");
        // Read back by another reader (a restart).
        assert_eq!(load(&store).expect("load").steps.len(), 2);
        // A step that left the declaration loses it.
        let gone = retain(&store, &BTreeSet::from(["gc".to_string()])).expect("retain");
        assert_eq!(gone, vec!["backup".to_string()]);
        assert_eq!(load(&store).expect("load").since("backup"), None);
        let (was, doc) = resume(&store, "gc").expect("resume");
        assert_eq!(was, Some(at("2026-12-01T10:00:00Z")));
        assert!(doc.steps.is_empty());
        assert_eq!(resume(&store, "gc").expect("resume").0, None);
    }

    #[test]
    fn a_damaged_document_is_an_error_not_a_guess() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        std::fs::write(dir.path().join("suspended-steps.json"), b"{\"steps\": 3}").expect("damage");
        assert!(load(&store).is_err());
        assert!(suspend(&store, "gc", Utc::now()).is_err());
        assert_eq!(load_or_none(&store), Suspended::default());
        // Nothing to drop without a document: none is made.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        assert_eq!(retain(&store, &BTreeSet::new()), Ok(Vec::new()));
        assert!(!dir.path().join("suspended-steps.json").exists());
    }
}
