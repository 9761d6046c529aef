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
//! A recreate pulls first (if the image is absent) and only then replaces the
//! old container, so a pull that fails leaves the service as it was. The
//! replace (runtime::replace) stops the old one, sets it aside under its
//! replaced name, creates the new one with its anonymous volumes, then
//! removes it: volumes are never deleted, and a container set aside by an
//! interrupted recreate is where the next create carries them from.
//!
//! Each service goes through three stages, so that services declared next
//! to each other can be converged concurrently (see `batch`):
//! [`Run::decide_service`] (in declaration order, reading only what the
//! apply already knows: the listing, the recorded inputs, the files changed
//! so far), [`Work::execute`] (the runtime calls, concurrent, touching no
//! shared state of the apply but the puller) and [`Run::commit_service`]
//! (in declaration order again: the report line, the recorded inputs).

use std::sync::Arc;

use tokio::sync::Mutex;

use crate::declaration::{Container, Resource};
use crate::events::Event;
use crate::mesh_event;
use crate::runtime::{
    kept_volumes_note, replace, replaced_name, ContainerRuntime, ContainerSpec, ContainerSummary,
    RuntimeError, VolumeMount, LABEL_RESOURCE,
};

use super::pull::{Ensured, Puller};
use super::state::ContainerInputs;
use super::{Action, ReportLine, Run};
use crate::container_spec::{
    BuiltContainer, LABEL_IDENTITY, LABEL_RECORD, LABEL_ROLE, RECORD_FORMAT,
};

/// Reason of a recreate forced by a container made under an older format.
pub(crate) const OLDER_RECORD: &str = "made by an older record format";

fn label<'s>(c: &'s ContainerSummary, key: &str) -> Option<&'s str> {
    c.labels.get(key).map(String::as_str)
}

/// What one service needs done, decided before any runtime call.
#[derive(Debug)]
pub(super) enum Work {
    /// Nothing to call: the line is known (held still, or refused).
    Done(ReportLine),
    /// No container by that name: create it, in place of the one under
    /// its former name, or of the one an interrupted recreate set aside
    /// (`leftover`), if any, carrying its volumes.
    Create {
        id: String,
        built: Arc<BuiltContainer>,
        renamed: Option<String>,
        leftover: Option<String>,
    },
    /// A container of another identity: recreate it.
    Recreate {
        id: String,
        built: Arc<BuiltContainer>,
        name: String,
        reason: String,
    },
    /// The container is as declared: start it if stopped, restart it when
    /// a file it restarts on changed in this apply (`restart_on`: its path).
    Keep {
        id: String,
        built: Arc<BuiltContainer>,
        name: String,
        running: bool,
        restart_on: Option<String>,
    },
}

/// What executing a [`Work`] did, to be committed in declaration order.
#[derive(Debug)]
pub(super) struct Outcome {
    line: ReportLine,
    /// Record (or forget) what the container was created reading.
    inputs: Inputs,
    /// A managed container dealt with under another name (renamed).
    consumed: Option<String>,
    /// Log `container-recreated` for this container name.
    recreated: Option<String>,
}

/// The change an [`Outcome`] makes to the recorded inputs.
#[derive(Debug)]
enum Inputs {
    Untouched,
    /// Record these (replacing what was recorded).
    Set(String, ContainerInputs),
    /// Record these only if nothing is recorded (a lost record).
    Default(String, ContainerInputs),
}

impl Outcome {
    /// Whether the service failed (to be made or started).
    pub(super) fn failed(&self) -> bool {
        self.line.action == Action::Failed
    }

    /// A line known without a runtime call, changing nothing recorded.
    fn known(line: ReportLine) -> Self {
        Outcome {
            line,
            inputs: Inputs::Untouched,
            consumed: None,
            recreated: None,
        }
    }

    fn line(id: &str, action: Action, reason: Option<String>) -> Self {
        Outcome::known(ReportLine::new(id, action, reason))
    }
}

/// What [`Work::execute`] may touch: the runtime and the apply's puller.
#[derive(Debug, Clone)]
pub(super) struct Executor {
    pub(super) runtime: Arc<dyn ContainerRuntime>,
    pub(super) puller: Arc<Mutex<Puller>>,
}

impl Run<'_> {
    /// Decide what one service container needs (no runtime call).
    pub(super) fn decide_service(&self, res: &Resource, c: &Container) -> Work {
        let id = res.id.as_str();
        let done = |action, reason| Work::Done(ReportLine::new(id, action, reason));
        let name = c.name.as_str();
        if let Some(why) = self.held.get(name).cloned() {
            return done(Action::HeldStill, Some(why));
        }
        if let Some(why) = self.unusable_for(c) {
            return done(Action::Failed, Some(why));
        }
        let built = match self.builds.build(res, c) {
            Ok(b) => b,
            Err(e) => return done(Action::Failed, Some(e.reason)),
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
                return done(Action::Failed, Some(reason));
            }
        };
        if let Some(old) = &renamed {
            if let Some(why) = self.held.get(&old.name).cloned() {
                return done(Action::HeldStill, Some(why));
            }
        }
        // What an interrupted recreate of this resource set aside.
        let leftover = self.listing.as_ref().ok().and_then(|listing| {
            let aside = listing.get(&replaced_name(name))?;
            (!aside.running && label(aside, LABEL_RESOURCE) == Some(id)).then(|| aside.name.clone())
        });
        let id = id.to_string();
        match existing {
            None => Work::Create {
                id,
                built,
                renamed: renamed.map(|old| old.name),
                leftover,
            },
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
                    Some(reason) => Work::Recreate {
                        id,
                        built,
                        name: current.name,
                        reason,
                    },
                    None => {
                        let restart_on = c
                            .restart_on
                            .iter()
                            .find_map(|rid| self.changed_files.get(rid.as_str()).cloned());
                        let restart = c.options.restart.unwrap_or_default();
                        if self.reconcile
                            && !current.running
                            && restart_on.is_none()
                            && restart.exit_is_final()
                        {
                            let why = format!(
                                "not running; restart: {} leaves it so until an apply",
                                restart.as_str()
                            );
                            return done(Action::Unchanged, Some(why));
                        }
                        Work::Keep {
                            id,
                            built,
                            name: current.name,
                            running: current.running,
                            restart_on,
                        }
                    }
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

    /// Record what a service's execution did, in declaration order.
    pub(super) fn commit_service(&mut self, res: &Resource, outcome: Outcome) {
        match outcome.inputs {
            Inputs::Untouched => {}
            Inputs::Set(name, inputs) => {
                self.inputs.insert(name, inputs);
            }
            Inputs::Default(name, inputs) => {
                self.inputs.entry(name).or_insert(inputs);
            }
        }
        if let Some(old) = outcome.consumed {
            self.inputs.remove(&old);
            self.consumed.insert(old);
        }
        let line = outcome.line;
        if let (Some(name), Some(reason)) = (&outcome.recreated, &line.reason) {
            let id = &line.id;
            mesh_event!(
                info,
                Event::ContainerRecreated,
                MESH_CONTAINER = %name,
                MESH_MODULE = %res.module.as_deref().unwrap_or(""),
                "container {name} ({id}) recreated: {reason}"
            );
        }
        self.push(&line.id.clone(), line.action, line.reason);
    }
}

impl Work {
    /// Do the runtime calls `self` needs. Touches no state of the apply
    /// but the puller (shared, behind its lock).
    pub(super) async fn execute(self, ex: &Executor) -> Outcome {
        match self {
            Work::Done(line) => Outcome::known(line),
            Work::Create {
                id,
                built,
                renamed,
                leftover,
            } => create_service(ex, &id, built, renamed, leftover).await,
            Work::Recreate {
                id,
                built,
                name,
                reason,
            } => recreate(ex, &id, built, &name, reason).await,
            Work::Keep {
                id,
                built,
                name,
                running,
                restart_on,
            } => keep(ex, &id, built, &name, running, restart_on).await,
        }
    }
}

impl Work {
    /// What [`Work::execute`] would report, with no runtime call: the
    /// preview's line (`diff`).
    pub(super) fn preview(self) -> Outcome {
        match self {
            Work::Done(line) => Outcome::known(line),
            Work::Create {
                id,
                renamed,
                leftover,
                ..
            } => match (renamed, leftover) {
                (Some(old), _) => Outcome::line(
                    &id,
                    Action::Recreated,
                    Some(format!("name changed (was {old})")),
                ),
                (None, Some(aside)) => Outcome::line(
                    &id,
                    Action::Recreated,
                    Some(format!(
                        "an interrupted recreate is finished (its volumes carried from {aside})"
                    )),
                ),
                (None, None) => Outcome::line(&id, Action::Created, None),
            },
            Work::Recreate { id, reason, .. } => {
                Outcome::line(&id, Action::Recreated, Some(reason))
            }
            Work::Keep {
                id,
                running,
                restart_on,
                ..
            } => match (running, restart_on) {
                (false, Some(path)) => Outcome::line(
                    &id,
                    Action::Started,
                    Some(format!("was not running (and restart-on: {path} changed)")),
                ),
                (false, None) => {
                    Outcome::line(&id, Action::Started, Some("was not running".to_string()))
                }
                (true, Some(path)) => Outcome::line(
                    &id,
                    Action::Started,
                    Some(format!("restart-on: {path} changed")),
                ),
                (true, None) => Outcome::line(&id, Action::Unchanged, None),
            },
        }
    }
}

async fn create_service(
    ex: &Executor,
    id: &str,
    built: Arc<BuiltContainer>,
    renamed: Option<String>,
    leftover: Option<String>,
) -> Outcome {
    let pulled = match ex.puller.lock().await.ensure(&built.spec.image).await {
        Ok(e) => e == Ensured::Pulled,
        Err(e) => return Outcome::line(id, Action::Failed, Some(format!("image: {e}"))),
    };
    // What it replaces: what an interrupted replace set aside (carrying
    // its volumes), else the container under its former name.
    let from = leftover.as_ref().or(renamed.as_ref());
    let made = make(&*ex.runtime, &built.spec, from.map(String::as_str)).await;
    let mut consumed = None;
    if let Some(old) = &renamed {
        let gone = match (&made, &leftover) {
            // Made from the leftover: the container under its former name
            // is removed as before (its volumes stay).
            (Err(CreateError::NotCreated(_)), _) => false,
            (_, Some(_)) => ex.runtime.remove(old).await.is_ok(),
            (_, None) => true,
        };
        if gone {
            consumed = Some(old.clone());
        }
    }
    let inputs = if matches!(made, Err(CreateError::NotCreated(_))) {
        Inputs::Untouched
    } else {
        Inputs::Set(built.spec.name.clone(), ContainerInputs::of(id, &built))
    };
    let (action, reason, recreated) = match (made, renamed, leftover) {
        (Err(e), _, _) => (Action::Failed, Some(e.to_string()), None),
        (Ok(kept), Some(old), _) => (
            Action::Recreated,
            Some(with_kept(format!("name changed (was {old})"), &kept)),
            Some(built.spec.name.clone()),
        ),
        (Ok(kept), None, Some(aside)) => (
            Action::Recreated,
            Some(with_kept(
                format!("an interrupted recreate is finished (its volumes carried from {aside})"),
                &kept,
            )),
            Some(built.spec.name.clone()),
        ),
        (Ok(_), None, None) => (
            Action::Created,
            pulled.then(|| "image pulled".to_string()),
            None,
        ),
    };
    Outcome {
        line: ReportLine::new(id, action, reason),
        inputs,
        consumed,
        recreated,
    }
}

async fn recreate(
    ex: &Executor,
    id: &str,
    built: Arc<BuiltContainer>,
    name: &str,
    reason: String,
) -> Outcome {
    if let Err(e) = ex.puller.lock().await.ensure(&built.spec.image).await {
        let why = format!("must be recreated ({reason}) but its image is missing: {e}");
        return Outcome::line(id, Action::Failed, Some(why));
    }
    let made = make(&*ex.runtime, &built.spec, Some(name)).await;
    let inputs = if matches!(made, Err(CreateError::NotCreated(_))) {
        Inputs::Untouched
    } else {
        Inputs::Set(name.to_string(), ContainerInputs::of(id, &built))
    };
    let (action, why, recreated) = match made {
        Ok(kept) => (
            Action::Recreated,
            with_kept(reason, &kept),
            Some(name.to_string()),
        ),
        Err(CreateError::NotCreated(e)) => (
            Action::Failed,
            format!("must be recreated ({reason}) but {e}"),
            None,
        ),
        Err(e) => (
            Action::Failed,
            format!("removed to be recreated ({reason}), then: {e}"),
            None,
        ),
    };
    Outcome {
        line: ReportLine::new(id, action, Some(why)),
        inputs,
        consumed: None,
        recreated,
    }
}

/// `reason`, and the volumes a replace left unmounted, if any.
fn with_kept(reason: String, kept: &[VolumeMount]) -> String {
    match kept_volumes_note(kept) {
        Some(note) => format!("{reason}; {note}"),
        None => reason,
    }
}

/// Make `spec`'s container in place of `from` (carrying its anonymous
/// volumes, runtime::replace), or afresh when there is none, and start
/// it. `Ok`: the volumes the old one had that the new one mounts nowhere
/// (kept).
pub(super) async fn make(
    runtime: &dyn ContainerRuntime,
    spec: &ContainerSpec,
    from: Option<&str>,
) -> Result<Vec<VolumeMount>, CreateError> {
    let old = match from {
        None => None,
        Some(old) => runtime
            .inspect(old)
            .await
            .map_err(|e| CreateError::NotCreated(format!("cannot inspect {old}: {e}")))?,
    };
    let Some(old) = old else {
        create_and_start(runtime, spec).await?;
        return Ok(Vec::new());
    };
    let replaced = replace(runtime, spec, &old)
        .await
        .map_err(CreateError::NotCreated)?;
    runtime
        .start(&spec.name)
        .await
        .map_err(|e| CreateError::NotStarted(format!("created, but it would not start: {e}")))?;
    Ok(replaced.kept)
}

/// The container is what the declaration makes: start it if stopped,
/// restart it if a file it restarts on changed in this apply.
async fn keep(
    ex: &Executor,
    id: &str,
    built: Arc<BuiltContainer>,
    name: &str,
    running: bool,
    restart_on: Option<String>,
) -> Outcome {
    // Record what it reads if the record was lost: no runtime call.
    let inputs = Inputs::Default(name.to_string(), ContainerInputs::of(id, &built));
    let with_inputs = |action, reason| Outcome {
        line: ReportLine::new(id, action, reason),
        inputs,
        consumed: None,
        recreated: None,
    };
    if !running {
        let reason = match &restart_on {
            Some(path) => format!("was not running (and restart-on: {path} changed)"),
            None => "was not running".to_string(),
        };
        return match ex.runtime.start(name).await {
            Ok(()) => with_inputs(Action::Started, Some(reason)),
            Err(e) => with_inputs(Action::Failed, Some(format!("would not start: {e}"))),
        };
    }
    let Some(path) = restart_on else {
        return with_inputs(Action::Unchanged, None);
    };
    let restarted = match ex.runtime.stop(name).await {
        Ok(()) => ex.runtime.start(name).await,
        Err(e) => Err(e),
    };
    match restarted {
        Ok(()) => with_inputs(Action::Started, Some(format!("restart-on: {path} changed"))),
        Err(e) => with_inputs(
            Action::Failed,
            Some(format!(
                "restart-on: {path} changed, but the restart failed: {e}"
            )),
        ),
    }
}

/// Create and start a container from `spec`.
pub(super) async fn create_and_start(
    runtime: &dyn ContainerRuntime,
    spec: &ContainerSpec,
) -> Result<(), CreateError> {
    let name = &spec.name;
    match runtime.create(spec).await {
        Ok(_) => {}
        Err(RuntimeError::Conflict { .. }) => {
            return Err(CreateError::NotCreated(format!(
                "a container named {name} exists that mesh-host does not manage (no mesh-host.managed label): it is left alone; rename or remove it"
            )))
        }
        Err(e) => return Err(CreateError::NotCreated(format!("cannot create {name}: {e}"))),
    }
    runtime
        .start(name)
        .await
        .map_err(|e| CreateError::NotStarted(format!("created, but it would not start: {e}")))
}

/// Why [`create_and_start`] failed.
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
