//! Service containers, decided from the one listing of managed containers:
//! its labels (`mesh-host.identity`, `mesh-host.record`, ...) and running
//! state say everything needed, so no container is inspected.
//!
//! | found | action |
//! |---|---|
//! | held by a live window (or a window's step container) | `held-still`, nothing done |
//! | no container by that name | pull if absent, create, start: `created` |
//! | older record format | recreate: `recreated: made by an older record format` |
//! | other identity | recreate: `recreated: <what changed>` |
//! | same identity, running | `unchanged` (or `started` after a stop+start for `restart-on`) |
//! | same identity, stopped | start: `started` |
//!
//! A recreate pulls first (if the image is absent) and only then removes the
//! old container, so a pull that fails leaves the service as it was.

use crate::declaration::{Container, Resource};
use crate::events::Event;
use crate::mesh_event;
use crate::runtime::{ContainerSpec, ContainerSummary, RuntimeError, LABEL_RESOURCE};

use super::pull::Ensured;
use super::spec::{self, BuiltContainer, LABEL_IDENTITY, LABEL_RECORD, LABEL_ROLE, RECORD_FORMAT};
use super::state::ContainerInputs;
use super::{Action, Run};

/// Reason of a recreate forced by a container made under an older format.
pub(crate) const OLDER_RECORD: &str = "made by an older record format";

fn label<'s>(c: &'s ContainerSummary, key: &str) -> Option<&'s str> {
    c.labels.get(key).map(String::as_str)
}

impl Run<'_> {
    /// Converge one service container.
    pub(super) async fn service(&mut self, res: &Resource, c: &Container) {
        let id = res.id.as_str();
        let name = c.name.as_str();
        if let Some(why) = self.held.get(name).cloned() {
            self.push(id, Action::HeldStill, Some(why));
            return;
        }
        let built = match spec::build(self.decl, res, c) {
            Ok(b) => b,
            Err(e) => return self.push(id, Action::Failed, Some(e.reason)),
        };
        let (existing, renamed) = match &self.listing {
            Ok(listing) => {
                let existing = listing.get(name).cloned();
                // The same resource under the name this state gave it before.
                let renamed = existing.is_none().then(|| {
                    listing
                        .values()
                        .find(|s| {
                            self.known.contains(&s.name)
                                && label(s, LABEL_RESOURCE) == Some(id)
                                && label(s, LABEL_ROLE) == Some("service")
                                && self
                                    .decl
                                    .containers()
                                    .all(|(_, d)| d.name.as_str() != s.name)
                        })
                        .cloned()
                });
                (existing, renamed.flatten())
            }
            Err(e) => {
                let reason = format!("cannot list the managed containers: {e}");
                return self.push(id, Action::Failed, Some(reason));
            }
        };
        if let Some(old) = &renamed {
            if let Some(why) = self.held.get(&old.name).cloned() {
                self.push(id, Action::HeldStill, Some(why));
                return;
            }
        }
        match existing {
            None => self.create_service(id, res, built, renamed).await,
            Some(current) => {
                let reason = if label(&current, LABEL_RECORD) != Some(RECORD_FORMAT)
                    || label(&current, LABEL_IDENTITY).is_none()
                {
                    Some(OLDER_RECORD.to_string())
                } else if label(&current, LABEL_IDENTITY) != Some(built.identity.as_str()) {
                    Some(self.what_changed(name, &built))
                } else {
                    None
                };
                match reason {
                    Some(reason) => self.recreate(id, res, built, &current.name, reason).await,
                    None => self.keep(id, c, built, &current).await,
                }
            }
        }
    }

    /// Why a container's identity differs, from the recorded inputs.
    fn what_changed(&self, name: &str, built: &BuiltContainer) -> String {
        match self.inputs.get(name) {
            None => "it differs from the declaration (what it was created from is not recorded)"
                .to_string(),
            Some(recorded) => {
                let changes = recorded.changes_to(built);
                if changes.is_empty() {
                    "it differs from the declaration (its label does not match what was recorded)"
                        .to_string()
                } else {
                    changes.join(", ")
                }
            }
        }
    }

    async fn create_service(
        &mut self,
        id: &str,
        res: &Resource,
        built: BuiltContainer,
        renamed: Option<ContainerSummary>,
    ) {
        let pulled = match self.puller.ensure(&built.spec.image).await {
            Ok(e) => e == Ensured::Pulled,
            Err(e) => return self.push(id, Action::Failed, Some(format!("image: {e}"))),
        };
        if let Some(old) = &renamed {
            if let Err(e) = self.runtime().remove(&old.name).await {
                let reason = format!("cannot remove {} (its name changed): {e}", old.name);
                return self.push(id, Action::Failed, Some(reason));
            }
            self.consumed.insert(old.name.clone());
            self.inputs.remove(&old.name);
        }
        let result = self.create_and_start(&built.spec).await;
        if !matches!(result, Err(CreateError::NotCreated(_))) {
            self.inputs
                .insert(built.spec.name.clone(), ContainerInputs::of(id, &built));
        }
        match (result, renamed) {
            (Err(e), _) => self.push(id, Action::Failed, Some(e.to_string())),
            (Ok(()), Some(old)) => {
                let reason = format!("name changed (was {})", old.name);
                self.recreated(id, res, &built.spec.name, reason);
            }
            (Ok(()), None) => {
                let reason = pulled.then(|| "image pulled".to_string());
                self.push(id, Action::Created, reason);
            }
        }
    }

    async fn recreate(
        &mut self,
        id: &str,
        res: &Resource,
        built: BuiltContainer,
        name: &str,
        reason: String,
    ) {
        if let Err(e) = self.puller.ensure(&built.spec.image).await {
            let why = format!("must be recreated ({reason}) but its image is missing: {e}");
            return self.push(id, Action::Failed, Some(why));
        }
        if let Err(e) = self.runtime().remove(name).await {
            let why = format!("must be recreated ({reason}) but cannot be removed: {e}");
            return self.push(id, Action::Failed, Some(why));
        }
        let result = self.create_and_start(&built.spec).await;
        if matches!(result, Err(CreateError::NotCreated(_))) {
            self.inputs.remove(name);
        } else {
            self.inputs
                .insert(name.to_string(), ContainerInputs::of(id, &built));
        }
        match result {
            Ok(()) => self.recreated(id, res, name, reason),
            Err(e) => {
                let why = format!("removed to be recreated ({reason}), then: {e}");
                self.push(id, Action::Failed, Some(why));
            }
        }
    }

    fn recreated(&mut self, id: &str, res: &Resource, name: &str, reason: String) {
        mesh_event!(
            info,
            Event::ContainerRecreated,
            MESH_CONTAINER = %name,
            MESH_MODULE = %res.module.as_deref().unwrap_or(""),
            "container {name} ({id}) recreated: {reason}"
        );
        self.push(id, Action::Recreated, Some(reason));
    }

    /// The container is what the declaration makes: start it if stopped,
    /// restart it if a file it restarts on changed in this apply.
    async fn keep(
        &mut self,
        id: &str,
        c: &Container,
        built: BuiltContainer,
        current: &ContainerSummary,
    ) {
        // Record what it reads if the record was lost: no runtime call.
        self.inputs
            .entry(current.name.clone())
            .or_insert_with(|| ContainerInputs::of(id, &built));
        let restart_on = c
            .restart_on
            .iter()
            .find_map(|rid| self.changed_files.get(rid.as_str()).cloned());
        let name = current.name.as_str();
        if !current.running {
            let reason = match &restart_on {
                Some(path) => format!("was not running (and restart-on: {path} changed)"),
                None => "was not running".to_string(),
            };
            match self.runtime().start(name).await {
                Ok(()) => self.push(id, Action::Started, Some(reason)),
                Err(e) => self.push(id, Action::Failed, Some(format!("would not start: {e}"))),
            }
            return;
        }
        let Some(path) = restart_on else {
            self.push(id, Action::Unchanged, None);
            return;
        };
        let restarted = match self.runtime().stop(name).await {
            Ok(()) => self.runtime().start(name).await,
            Err(e) => Err(e),
        };
        match restarted {
            Ok(()) => self.push(
                id,
                Action::Started,
                Some(format!("restart-on: {path} changed")),
            ),
            Err(e) => self.push(
                id,
                Action::Failed,
                Some(format!(
                    "restart-on: {path} changed, but the restart failed: {e}"
                )),
            ),
        }
    }

    /// Create and start a container from `spec`.
    pub(super) async fn create_and_start(&self, spec: &ContainerSpec) -> Result<(), CreateError> {
        let name = &spec.name;
        match self.runtime().create(spec).await {
            Ok(_) => {}
            Err(RuntimeError::Conflict { .. }) => {
                return Err(CreateError::NotCreated(format!(
                    "a container named {name} exists that mesh-host does not manage (no mesh-host.managed label): it is left alone; rename or remove it"
                )))
            }
            Err(e) => return Err(CreateError::NotCreated(format!("cannot create {name}: {e}"))),
        }
        self.runtime()
            .start(name)
            .await
            .map_err(|e| CreateError::NotStarted(format!("created, but it would not start: {e}")))
    }
}

/// Why [`Run::create_and_start`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum CreateError {
    /// Nothing was created.
    NotCreated(String),
    /// Created, not started.
    NotStarted(String),
}

impl std::fmt::Display for CreateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CreateError::NotCreated(s) | CreateError::NotStarted(s) => f.write_str(s),
        }
    }
}
