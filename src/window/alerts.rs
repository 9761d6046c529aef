//! Alerts since the last apply, for `status`: every `will-not-start-again`
//! and `held-unhealthy` is recorded in the state directory ([`DOC`]) by
//! the process that raised it (the daemon, a local run, an installer's
//! apply), beside its journal entry.
//!
//! `status` names those raised after the last apply and exits 3 for them:
//! a held container that did not come back needs someone, and the journal
//! alone is not where an operator looks first. The record is bounded
//! ([`KEEP`], the latest kept) and changed under its own lock.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use std::time::Duration;

use crate::store::{lock_holder, Store};

use super::budget::Deadline;
use super::record::WindowRecord;

/// The longest one wait for `alerts.lock` (never past the act's deadline).
const ALERTS_LOCK_WAIT: Duration = Duration::from_secs(10);

/// The store document (`alerts.json`).
pub const DOC: &str = "alerts";

/// How many alerts are kept, the latest.
pub const KEEP: usize = 32;

/// One alert as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Alert {
    /// Its `MESH_EVENT`.
    pub event: String,
    /// When it was raised.
    pub at: DateTime<Utc>,
    /// Its step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// Its container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// Its message.
    pub message: String,
}

/// The document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Alerts {
    /// The latest alerts, oldest first.
    #[serde(default)]
    pub recent: Vec<Alert>,
}

/// Raises the alerts of windows: each in the journal (priority `alert` or
/// `err`) and recorded for `status`.
#[derive(Debug, Clone)]
pub struct Alerter {
    store: Store,
}

impl Alerter {
    /// Alerts recorded in `store`'s state directory.
    pub fn new(store: Store) -> Self {
        Alerter { store }
    }

    /// A held container that will not start again: the alert, in the
    /// journal at once and in the record `status` reads, the latter within
    /// `deadline` (a stranger holding `alerts.lock` costs one wait of the
    /// act, and the journal has the alert whatever happens).
    pub async fn will_not_start_again(
        &self,
        record: &WindowRecord,
        name: &str,
        reason: &str,
        deadline: &Deadline,
    ) {
        crate::mesh_alert!(
            MESH_STEP = %record.step,
            MESH_CONTAINER = %name,
            MESH_MODULE = %record.module.as_deref().unwrap_or(""),
            "container {name} WILL NOT START AGAIN after the window of {}: {reason}",
            record.step
        );
        self.record(
            crate::events::Event::WillNotStartAgain,
            &record.step,
            name,
            format!(
                "container {name} WILL NOT START AGAIN after the window of {}: {reason}",
                record.step
            ),
            deadline,
        )
        .await;
    }

    /// Record an alert for `status` (beside its journal entry), waiting
    /// for `alerts.lock` within `deadline` only.
    pub async fn record(
        &self,
        event: crate::events::Event,
        step: &str,
        container: &str,
        message: String,
        deadline: &Deadline,
    ) {
        let alert = Alert {
            event: event.name().to_string(),
            at: Utc::now(),
            step: Some(step.to_string()),
            container: Some(container.to_string()),
            message,
        };
        let path = match self.store.document_lock_path(DOC) {
            Ok(path) => path,
            Err(e) => {
                tracing::error!("cannot record the alert for status: {e}");
                return;
            }
        };
        let locked = deadline
            .lock(
                "alerts.lock",
                ALERTS_LOCK_WAIT,
                || self.store.try_document_lock(DOC),
                || lock_holder(&path),
            )
            .await;
        match locked {
            Ok(_lock) => push(&self.store, alert),
            Err(e) => tracing::error!(
                MESH_STEP = %step,
                MESH_CONTAINER = %container,
                "cannot record the alert of {container} for status: {e}; the journal has it"
            ),
        }
    }
}

/// Record `alert`, waiting for `alerts.lock` as long as it is held; a
/// failure is logged (the alert itself is in the journal).
pub fn record(store: &Store, alert: Alert) {
    match store.document_lock(DOC) {
        Ok(_lock) => push(store, alert),
        Err(e) => tracing::error!("cannot record the alert for status: {e}"),
    }
}

/// Add `alert` to the document; the caller holds `alerts.lock`.
fn push(store: &Store, alert: Alert) {
    // A damaged record is replaced: the journal keeps every alert.
    let mut doc: Alerts = store.load(DOC).ok().flatten().unwrap_or_default();
    doc.recent.push(alert);
    let over = doc.recent.len().saturating_sub(KEEP);
    doc.recent.drain(..over);
    if let Err(e) = store.save(DOC, &doc) {
        tracing::error!("cannot record the alert for status: {e}");
    }
}

/// The alerts raised after `after` (all of them when `None`).
pub fn since(store: &Store, after: Option<DateTime<Utc>>) -> Result<Vec<Alert>, String> {
    let doc: Alerts = store
        .load(DOC)
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    Ok(doc
        .recent
        .into_iter()
        .filter(|a| after.is_none_or(|t| a.at > t))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alert(n: i64) -> Alert {
        Alert {
            event: "will-not-start-again".into(),
            at: DateTime::from_timestamp(1_800_000_000 + n, 0).expect("time"),
            step: Some("gc".into()),
            container: Some(format!("c{n}")),
            message: format!("c{n} WILL NOT START AGAIN"),
        }
    }

    #[test]
    fn alerts_are_kept_bounded_and_read_since_a_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        assert_eq!(since(&store, None), Ok(Vec::new()));
        for n in 0..(KEEP as i64 + 5) {
            record(&store, alert(n));
        }
        let all = since(&store, None).expect("read");
        assert_eq!(all.len(), KEEP);
        assert_eq!(all[0], alert(5), "the oldest went first");
        let after = DateTime::from_timestamp(1_800_000_000 + KEEP as i64 + 2, 0);
        assert_eq!(since(&store, after).expect("read").len(), 2);
        // A damaged record is replaced by the next alert, not kept failing.
        std::fs::write(dir.path().join("alerts.json"), b"{").expect("damage");
        assert!(since(&store, None).is_err());
        record(&store, alert(1));
        assert_eq!(since(&store, None).expect("read"), vec![alert(1)]);
    }
}
