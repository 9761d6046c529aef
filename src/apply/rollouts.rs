//! The records of replacements gated on health, in the state directory.
//!
//! A replacement of a service that has a health check keeps the old
//! container set aside (`<name>.replaced`, stopped, holding its volumes)
//! until the new one is healthy. The containers alone cannot say what a
//! kill in the middle left: `web` beside `web.replaced` is also what a
//! replace without a check leaves between its create and its removal. So
//! two documents per container name, each written atomically:
//!
//! | document | written | removed | what the next apply does with it |
//! |---|---|---|---|
//! | `rollout.<name>.json` ([`Rollout`]) | before the old one is stopped | once the old one is removed or back | the new one is judged again with what is left of its bound; healthy: done, else put back |
//! | `refused.<name>.json` ([`Refused`]) | before a roll back acts | once the declaration no longer asks for that identity | that definition is not tried again (`status` needs attention); one set aside with no container under its name is put back |
//!
//! Both are keyed by container name; concurrent services of one apply
//! write distinct documents, under the apply lock.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::store::Store;

const ROLLOUT: &str = "rollout.";
const REFUSED: &str = "refused.";

/// A health-gated replacement in flight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Rollout {
    /// The resource.
    pub id: String,
    /// The identity digest of the new definition.
    pub identity: String,
    /// When the replacement began (its bound counts from here).
    pub started: DateTime<Utc>,
    /// Its `rollback-after`, in seconds (the check's start period is
    /// added, read from the new container).
    pub rollback_after: u64,
}

impl Rollout {
    /// Its bound past the check's start period.
    pub fn rollback_after(&self) -> Duration {
        Duration::from_secs(self.rollback_after)
    }
}

/// A definition a roll back refused: not tried again while declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Refused {
    /// The resource.
    pub id: String,
    /// The identity digest of the refused definition.
    pub identity: String,
    /// Its image.
    pub image: String,
    /// Why it was rolled back (`not healthy after 90 s: …`).
    pub reason: String,
    /// When.
    pub at: DateTime<Utc>,
}

fn doc(prefix: &str, name: &str) -> String {
    format!("{prefix}{name}")
}

/// Record `rollout` of container `name`.
pub fn begin(store: &Store, name: &str, rollout: &Rollout) -> Result<(), String> {
    store
        .save(&doc(ROLLOUT, name), rollout)
        .map_err(|e| format!("cannot record the replacement of {name}: {e}"))
}

/// The replacement of `name` is over (done or put back).
pub fn end(store: &Store, name: &str) {
    remove(store, &doc(ROLLOUT, name));
}

/// Remember that `name`'s definition `refused.identity` was rolled back.
pub fn refuse(store: &Store, name: &str, refused: &Refused) -> Result<(), String> {
    store
        .save(&doc(REFUSED, name), refused)
        .map_err(|e| format!("cannot record the roll back of {name}: {e}"))
}

/// Forget the refusal of `name`'s definition (the declaration moved on).
pub fn forget_refused(store: &Store, name: &str) {
    remove(store, &doc(REFUSED, name));
}

/// Every replacement in flight, by container name.
pub fn in_flight(store: &Store) -> Result<BTreeMap<String, Rollout>, String> {
    all(store, ROLLOUT)
}

/// Every refused definition, by container name.
pub fn refused(store: &Store) -> Result<BTreeMap<String, Refused>, String> {
    all(store, REFUSED)
}

fn all<T: serde::de::DeserializeOwned>(
    store: &Store,
    prefix: &str,
) -> Result<BTreeMap<String, T>, String> {
    let dir = match std::fs::read_dir(store.root()) {
        Ok(dir) => dir,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(format!("cannot list {}: {e}", store.root().display())),
    };
    let mut found = BTreeMap::new();
    for entry in dir.flatten() {
        let file = entry.file_name();
        let Some(name) = file
            .to_str()
            .and_then(|f| f.strip_prefix(prefix))
            .and_then(|f| f.strip_suffix(".json"))
        else {
            continue;
        };
        if let Some(value) = store.load(&doc(prefix, name)).map_err(|e| e.to_string())? {
            found.insert(name.to_string(), value);
        }
    }
    Ok(found)
}

fn remove(store: &Store, name: &str) {
    let Ok(path) = store.document_path(name) else {
        return;
    };
    match std::fs::remove_file(&path) {
        Ok(()) => {
            if let Err(e) = crate::store::fsync_dir(store.root()) {
                tracing::warn!("cannot sync {}: {e}", store.root().display());
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!("cannot remove {}: {e}", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_kept_per_container_until_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        assert!(in_flight(&store).expect("read").is_empty());
        let rollout = Rollout {
            id: "web".into(),
            identity: "abc".into(),
            started: DateTime::from_timestamp(1_800_000_000, 0).expect("time"),
            rollback_after: 90,
        };
        begin(&store, "web", &rollout).expect("begin");
        begin(&store, "db.1", &rollout).expect("begin");
        let found = in_flight(&store).expect("read");
        assert_eq!(found.keys().collect::<Vec<_>>(), ["db.1", "web"]);
        assert_eq!(found["web"], rollout);
        end(&store, "web");
        end(&store, "web");
        assert_eq!(
            in_flight(&store).expect("read").keys().collect::<Vec<_>>(),
            ["db.1"]
        );
        let refused_web = Refused {
            id: "web".into(),
            identity: "abc".into(),
            image: "img".into(),
            reason: "not healthy after 9 s: boom".into(),
            at: rollout.started,
        };
        refuse(&store, "web", &refused_web).expect("refuse");
        assert_eq!(refused(&store).expect("read")["web"], refused_web);
        assert!(
            in_flight(&store).expect("read").len() == 1,
            "refusals are not rollouts"
        );
        forget_refused(&store, "web");
        assert!(refused(&store).expect("read").is_empty());
    }
}
