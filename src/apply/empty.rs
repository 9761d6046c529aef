//! No wipe by accident: a declaration that declares no resources is not
//! applied over a node where resources are applied, unless asked for
//! (`apply --allow-empty FILE`).
//!
//! An empty file is what a provisioning slip, a template rendered without
//! its data or a truncated copy most often produces, and applying it would
//! remove every container the host made. So the node's own state decides:
//! the last apply recorded in the state directory declared resources, or
//! containers this state made are still known (they would be removed).
//! A fresh node (nothing recorded) applies an empty declaration as before.
//! The check runs under the apply lock, on the state the apply itself
//! would read.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::state::{AppliedState, ContainerInputs};
use crate::runtime::ContainerRuntime;
use crate::store::{Store, APPLIED, CONTAINER_INPUTS};

/// An empty declaration refused over applied resources.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(rename_all = "kebab-case", tag = "refused")]
pub enum EmptyRefused {
    /// Resources are applied that an apply removes once no longer
    /// declared: it would remove them.
    #[error(
        "the declaration declares no resources, but {applied} resource(s) are applied on this node: applying it would remove them (files, directories and volumes stay); nothing was changed (mesh-host apply --allow-empty FILE removes them)"
    )]
    WouldRemove {
        /// How many resources applying it would remove (never a file, a
        /// directory or a volume: no apply removes those).
        applied: usize,
    },
    /// What is applied cannot be told: the state cannot be read.
    #[error(
        "the declaration declares no resources, and what is applied on this node cannot be told ({reason}); nothing was changed (mesh-host apply --allow-empty FILE applies it anyway)"
    )]
    StateUnreadable {
        /// Why.
        reason: String,
    },
}

impl EmptyRefused {
    /// How many resources it would remove, when known.
    pub fn applied(&self) -> Option<usize> {
        match self {
            EmptyRefused::WouldRemove { applied } => Some(*applied),
            EmptyRefused::StateUnreadable { .. } => None,
        }
    }
}

/// How many resources an empty declaration would remove from this node:
/// what an apply removes once it is no longer declared, and nothing it
/// never removes (files, directories and volumes stay). That is the
/// containers the last apply declared (services, run-once steps,
/// scheduled steps: each container or schedule goes), plus those this
/// state made, no longer declared, that still exist (`existing`: the
/// managed containers listed; `None` when the runtime could not list
/// them, and then every known one counts); the unit files it wrote; the
/// accounts it made; the networks it made; the shared folders whose
/// entries it set. 0 on a fresh node.
///
/// A state that cannot be read is an error: an empty declaration is then
/// refused, since whether it would wipe the node cannot be told.
pub fn applied_count(store: &Store, existing: Option<&BTreeSet<String>>) -> Result<usize, String> {
    let previous: Option<AppliedState> = store.load(APPLIED).map_err(|e| e.to_string())?;
    let inputs: BTreeMap<String, ContainerInputs> = store
        .load(CONTAINER_INPUTS)
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    // Every container declared: its container goes, or its schedule.
    let declared: BTreeSet<String> = previous
        .iter()
        .flat_map(|p| p.declaration.heads())
        .filter(|head| head.kind.as_deref() == Some("container"))
        .filter_map(|head| head.name)
        .collect();
    // And each one this state made, no longer declared, still there.
    let mut known: BTreeSet<&str> = previous
        .as_ref()
        .map(|p| p.containers.iter().map(String::as_str).collect())
        .unwrap_or_default();
    known.extend(inputs.keys().map(String::as_str));
    let undeclared = known
        .iter()
        .filter(|name| !declared.contains(**name))
        .filter(|name| existing.is_none_or(|e| e.contains(**name)))
        .count();
    let containers = declared.len() + undeclared;
    let units = previous.as_ref().map_or(0, |p| p.units.len());
    let accounts = store
        .load::<BTreeMap<String, serde_json::Value>>(super::records::ACCOUNTS)
        .map_err(|e| e.to_string())?
        .map_or(0, |made| made.len());
    let networks = store
        .load::<BTreeMap<String, String>>(super::records::NETWORKS)
        .map_err(|e| e.to_string())?
        .map_or(0, |made| made.len());
    let folders = store
        .load::<crate::acl::folders::ManagedFolders>(crate::acl::folders::SHARED_FOLDERS)
        .map_err(|e| e.to_string())?
        .map_or(0, |managed| managed.folders.len());
    Ok(containers + units + accounts + networks + folders)
}

/// `Err` when applying a declaration of `resources` resources would wipe
/// this node and `allow_empty` was not given. The runtime is asked for
/// the managed containers only when `resources` is 0.
pub async fn guard(
    store: &Store,
    runtime: &dyn ContainerRuntime,
    resources: usize,
    allow_empty: bool,
) -> Result<(), EmptyRefused> {
    if resources > 0 || allow_empty {
        return Ok(());
    }
    let existing: Option<BTreeSet<String>> = runtime
        .list_managed()
        .await
        .ok()
        .map(|list| list.into_iter().map(|c| c.name).collect());
    judge(store, existing.as_ref())
}

/// [`guard`]'s verdict for a declaration of nothing.
fn judge(store: &Store, existing: Option<&BTreeSet<String>>) -> Result<(), EmptyRefused> {
    match applied_count(store, existing) {
        Ok(0) => Ok(()),
        Ok(applied) => Err(EmptyRefused::WouldRemove { applied }),
        Err(reason) => Err(EmptyRefused::StateUnreadable { reason }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn applied(store: &Store, resources: serde_json::Value, containers: &[&str]) {
        let state = AppliedState {
            format: super::super::state::APPLIED_FORMAT,
            declaration: crate::apply::recorded::RecordedDeclaration::from_value(
                &json!({"declaration": 1, "resources": resources}),
            ),
            applied_at: chrono::Utc::now(),
            ok: true,
            halted: None,
            lines: Vec::new(),
            files: BTreeMap::new(),
            units: Vec::new(),
            containers: containers.iter().map(|c| c.to_string()).collect(),
        };
        store.save(APPLIED, &state).expect("save");
    }

    #[test]
    fn a_fresh_node_takes_an_empty_declaration() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        assert_eq!(applied_count(&store, None), Ok(0));
        assert_eq!(judge(&store, None), Ok(()));
        // An apply of nothing recorded is still nothing applied.
        applied(&store, json!([]), &[]);
        assert_eq!(judge(&store, None), Ok(()));
    }

    #[test]
    fn applied_resources_and_known_containers_refuse_it_unless_allowed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        applied(
            &store,
            json!([{"id": "web", "type": "container", "name": "web"},
                   {"id": "conf", "type": "file", "path": "/etc/x"}]),
            &["web", "old"],
        );
        // The declared container, and "old" (known, no longer declared,
        // still there) too; the file stays whatever is applied.
        let listed: BTreeSet<String> = ["web".to_string(), "old".to_string()].into();
        let refused = judge(&store, Some(&listed)).expect_err("would wipe");
        assert_eq!(refused.applied(), Some(2));
        let said = refused.to_string();
        assert!(
            said.contains("2 resource(s)") && said.contains("--allow-empty"),
            "{said}"
        );
        // Only containers left over (an apply of nothing that could not
        // remove them): still refused while they exist, or cannot be listed.
        applied(&store, json!([]), &["web"]);
        assert_eq!(
            judge(&store, Some(&listed)),
            Err(EmptyRefused::WouldRemove { applied: 1 })
        );
        assert_eq!(
            judge(&store, None),
            Err(EmptyRefused::WouldRemove { applied: 1 })
        );
        // Known but gone (a step's container never made): nothing to wipe.
        assert_eq!(judge(&store, Some(&BTreeSet::new())), Ok(()));
    }

    #[test]
    fn only_what_an_apply_removes_is_counted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        // Files, directories and volumes: no apply removes them, so an
        // apply of nothing over them removes nothing and is taken.
        applied(
            &store,
            json!([{"id": "conf", "type": "file", "path": "/etc/x", "content": ""},
                   {"id": "data", "type": "directory", "path": "/srv/data"},
                   {"id": "cache", "type": "volume", "name": "cache"}]),
            &[],
        );
        assert_eq!(applied_count(&store, Some(&BTreeSet::new())), Ok(0));
        assert_eq!(judge(&store, Some(&BTreeSet::new())), Ok(()));
        // Beside them, one of each kind an apply removes: a container
        // declared, a unit file written, an account made, a network made,
        // a shared folder's entries set: 5, the 3 others not counted.
        let mut state: AppliedState = store.load(APPLIED).expect("read").expect("state");
        for resource in [
            json!({"id": "web", "type": "container", "name": "web"}),
            json!({"id": "tick", "type": "unit", "name": "tick.timer"}),
            json!({"id": "svc", "type": "identity", "name": "svc"}),
            json!({"id": "back", "type": "network", "name": "back"}),
            json!({"id": "share", "type": "shared-folder", "path": "/srv/share"}),
        ] {
            state.declaration.push(&resource);
        }
        state.units = vec!["tick.timer".into()];
        state.containers = vec!["web".into(), "old".into()];
        store.save(APPLIED, &state).expect("save");
        store
            .save(
                super::super::records::ACCOUNTS,
                &json!({"svc": {"id": "svc", "uid": 990, "gid": 990, "user": true, "group": true}}),
            )
            .expect("save");
        store
            .save(super::super::records::NETWORKS, &json!({"back": "back"}))
            .expect("save");
        store
            .save(
                crate::acl::folders::SHARED_FOLDERS,
                &json!({"folders": {"share": {"path": "/srv/share", "access": []}}}),
            )
            .expect("save");
        let listed: BTreeSet<String> = ["web".to_string()].into();
        assert_eq!(applied_count(&store, Some(&listed)), Ok(5));
        assert_eq!(
            judge(&store, Some(&listed)),
            Err(EmptyRefused::WouldRemove { applied: 5 })
        );
        // "old", made here and no longer declared, counts while it exists.
        let both: BTreeSet<String> = ["web".to_string(), "old".to_string()].into();
        assert_eq!(applied_count(&store, Some(&both)), Ok(6));
    }

    #[test]
    fn an_unreadable_state_refuses_it_too() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        std::fs::write(dir.path().join("applied.json"), b"{").expect("damage");
        let refused = judge(&store, None).expect_err("cannot tell");
        assert!(
            matches!(refused, EmptyRefused::StateUnreadable { .. }),
            "{refused}"
        );
        assert_eq!(refused.applied(), None);
    }
}
