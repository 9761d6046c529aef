//! Run-once steps, run to completion at their place in the declaration, and
//! the removal of managed containers no longer declared.
//!
//! A run-once step gates what follows it: when it cannot run, exits
//! non-zero or outlives its `timeout`, the apply halts there, fails, and
//! says which step and its exit status. What was applied before it stays
//! applied. Its container is kept after the run (for `docker logs`) and
//! removed before the next run.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::time::Instant;

use crate::declaration::{Container, Resource};
use crate::runtime::{
    is_left_from_making, kept_volumes_note, replaced_base, replaced_name, stop_run,
    ContainerSummary, LABEL_MADE_AS, LABEL_RESOURCE, MAKING_GRACE,
};

use super::{Action, Halt, Run};
use crate::schedule::forward::{Forwarding, Forwards, Owed};
use crate::schedule::output::{run_once_name, to_journal};

impl Run<'_> {
    /// Run a run-once step; `Some` when the apply must halt here (the
    /// caller fills in how much was left).
    pub(super) async fn run_once(&mut self, res: &Resource, c: &Container) -> Option<Halt> {
        let id = res.id.as_str();
        let name = c.name.as_str();
        if let Some(why) = self.held.get(name).cloned() {
            self.push(id, Action::HeldStill, Some(why));
            return None;
        }
        if self.preview {
            // An apply runs it, every time, to completion.
            self.push(
                id,
                Action::Ran,
                Some(format!("{name} would run to completion")),
            );
            return None;
        }
        self.applier
            .progress
            .send(crate::progress::Progress::Waiting {
                id: Some(id.to_string()),
                on: format!("running {name} to completion"),
            });
        match self.run_to_completion(res, c).await {
            Ok(took) => {
                let reason = format!("exit status 0 in {:.1}s", took.as_secs_f64());
                self.push(id, Action::Ran, Some(reason));
                None
            }
            Err((exit_status, reason)) => {
                self.push(id, Action::Failed, Some(reason.clone()));
                Some(Halt {
                    id: id.to_string(),
                    exit_status,
                    reason,
                    not_applied: 0,
                })
            }
        }
    }

    /// Replace the previous run's container, start, wait (within the timeout). `Err`
    /// holds the exit status (when it ran) and the reason.
    async fn run_to_completion(
        &mut self,
        res: &Resource,
        c: &Container,
    ) -> Result<Duration, (Option<i64>, String)> {
        let name = c.name.as_str();
        let fail = |reason: String| (None, reason);
        let built = self.builds.build(res, c).map_err(|e| fail(e.reason))?;
        // The previous run's container, or one an interrupted replace set
        // aside: the new run carries its anonymous volumes.
        let from = match &self.listing {
            Ok(listing) if listing.contains_key(name) => Some(name.to_string()),
            Ok(listing) => listing
                .get(&replaced_name(name))
                .filter(|s| !s.running && s.labels.get(LABEL_RESOURCE) == Some(&res.id.to_string()))
                .map(|s| s.name.clone()),
            Err(e) => return Err(fail(format!("cannot list the managed containers: {e}"))),
        };
        let ensured = self.puller.lock().await.ensure(&built.spec.image).await;
        ensured.map_err(|e| fail(format!("image: {e}")))?;
        let began = Instant::now();
        // Its output goes to the journal as a step's does, under a name of
        // this run (it has no unit of its own).
        let mut spec = built.spec.clone();
        let run = run_once_name(res.id.as_str(), chrono::Utc::now());
        to_journal(&mut spec, res.id.as_str(), &run);
        // Where the runtime keeps the output to itself, it is owed to the
        // journal before the container starts (schedule/forward.rs).
        let mut forwarding = Forwarding::owe(
            self.applier.runtime.clone(),
            &Forwards::of(&self.applier.store),
            Owed::new(
                self.applier.windows().owner(),
                res.id.as_str(),
                res.module.as_deref(),
                &run,
                name,
                &spec.image,
            ),
        );
        if let Err(e) = super::containers::make(self.runtime(), &spec, from.as_deref()).await {
            forwarding.abandon();
            return Err(fail(e.to_string()));
        }
        forwarding.follow();
        let runtime = self.applier.runtime.clone();
        let waited = match c.timeout {
            Some(limit) => tokio::time::timeout(limit, runtime.wait_exit(name))
                .await
                .ok(),
            None => Some(runtime.wait_exit(name).await),
        };
        forwarding.finish().await;
        match waited {
            Some(Ok(0)) => Ok(began.elapsed()),
            Some(Ok(status)) => Err((Some(status), format!("exit status {status}"))),
            Some(Err(e)) => Err(fail(format!("lost track of {name}: {e}"))),
            None => {
                let limit = c.timeout.unwrap_or_default().as_secs();
                let status = stop_run(&*runtime, name).await;
                let shown = status.map_or("unknown".to_string(), |s| s.to_string());
                Err((
                    status,
                    format!("timed out after {limit}s and was stopped (exit status {shown})"),
                ))
            }
        }
    }

    /// Remove the managed containers this state directory declared before
    /// and no longer declares (after the declared resources). Held
    /// containers and open windows' step containers stay; managed
    /// containers this state never declared (another state directory's)
    /// are not ours to remove.
    pub(super) async fn remove_containers(&mut self) {
        let listing = match &self.listing {
            Ok(listing) => listing.clone(),
            Err(e) => {
                self.warnings.push(format!(
                    "cannot list the managed containers, so none was removed: {e}"
                ));
                return;
            }
        };
        let declared: BTreeSet<&str> = self
            .decl
            .containers()
            .map(|(_, c)| c.name.as_str())
            .collect();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let grace = crate::fault::making_grace(MAKING_GRACE);
        for (name, summary) in &listing {
            if self.preview
                && (is_left_from_making(summary, now, grace) || replaced_base(name).is_some())
            {
                // Leftovers of an interrupted create or replace: tidied by
                // the apply, never a resource's line.
                continue;
            }
            if is_left_from_making(summary, now, grace) {
                self.remove_left_from_making(summary, &declared).await;
                continue;
            }
            if let Some(base) = replaced_base(name).filter(|_| !declared.contains(name.as_str())) {
                self.remove_set_aside(summary, base, &declared).await;
                continue;
            }
            if declared.contains(name.as_str())
                || self.consumed.contains(name)
                || !self.known.contains(name)
            {
                continue;
            }
            let id = summary
                .labels
                .get(LABEL_RESOURCE)
                .cloned()
                .unwrap_or_else(|| name.clone());
            if let Some(why) = self.held.get(name).cloned() {
                self.push(
                    &id,
                    Action::HeldStill,
                    Some(format!("{name} is no longer declared but {why}")),
                );
                continue;
            }
            if self.preview {
                let note = self.volumes_kept_by_removing(name).await;
                let reason = format!("container {name} is no longer declared");
                self.push(&id, Action::Removed, Some(with_note(reason, note)));
                continue;
            }
            match self.remove_keeping_volumes(name, false).await {
                Ok(note) => {
                    self.inputs.remove(name);
                    self.removed.insert(name.clone());
                    let reason = format!("container {name} is no longer declared");
                    self.push(&id, Action::Removed, Some(with_note(reason, note)));
                }
                Err(e) => self.push(
                    &id,
                    Action::Failed,
                    Some(format!("cannot remove {name}: {e}")),
                ),
            }
        }
        // Records of containers that are gone and not declared.
        let undeclared: Vec<String> = self
            .inputs
            .keys()
            .filter(|n| !declared.contains(n.as_str()) && !listing.contains_key(*n))
            .cloned()
            .collect();
        for name in undeclared {
            self.inputs.remove(&name);
        }
    }

    /// What removing `name` would keep, as the removal's line says it (an
    /// inspect: a preview reads, never writes).
    async fn volumes_kept_by_removing(&self, name: &str) -> Option<String> {
        match self.runtime().inspect(name).await {
            Ok(Some(info)) => kept_volumes_note(&info.volumes),
            _ => None,
        }
    }

    /// Remove `name` (`stopped`: only if it does not run), keeping its
    /// volumes; what it kept, as the report says it.
    async fn remove_keeping_volumes(
        &self,
        name: &str,
        stopped: bool,
    ) -> Result<Option<String>, crate::runtime::RuntimeError> {
        // A removal may inspect: what it keeps is named in its line.
        let volumes = match self.runtime().inspect(name).await {
            Ok(Some(info)) => info.volumes,
            Ok(None) => return Ok(None),
            Err(e) => {
                tracing::warn!("cannot inspect {name} before removing it: {e}");
                Vec::new()
            }
        };
        if stopped {
            self.runtime().remove_stopped(name).await?;
        } else {
            self.runtime().remove(name).await?;
        }
        Ok(kept_volumes_note(&volumes))
    }

    /// A container an interrupted replace set aside under
    /// runtime::replaced_name of `base`, if `base` is this state's: while
    /// `base` is declared it stays until a container of that name exists
    /// (whose create carried its volumes from it), then it is removed;
    /// once `base` is no longer declared it is removed like any container,
    /// its line naming the volumes it kept.
    async fn remove_set_aside(
        &mut self,
        summary: &ContainerSummary,
        base: &str,
        declared: &BTreeSet<&str>,
    ) {
        let name = summary.name.as_str();
        let ours = declared.contains(base) || self.known.contains(base);
        if summary.running || !ours || self.held.contains_key(base) {
            return;
        }
        if declared.contains(base) {
            let made = match self.runtime().inspect(base).await {
                Ok(Some(made)) => made,
                _ => return,
            };
            let left = match self.runtime().inspect(name).await {
                Ok(Some(left)) => left,
                _ => return,
            };
            if let Err(e) = self.runtime().remove_stopped(name).await {
                tracing::warn!("cannot remove {name}, left by an interrupted replace: {e}");
                return;
            }
            let unused: Vec<_> = left
                .volumes
                .into_iter()
                .filter(|v| !made.volumes.iter().any(|m| m.name == v.name))
                .collect();
            match kept_volumes_note(&unused) {
                Some(note) => self.warnings.push(format!(
                    "{name}, left by an interrupted replace of {base}, is removed; {note}"
                )),
                None => {
                    tracing::info!("{name}, left by an interrupted replace of {base}, is removed")
                }
            }
            return;
        }
        let id = summary
            .labels
            .get(LABEL_RESOURCE)
            .cloned()
            .unwrap_or_else(|| base.to_string());
        match self.remove_keeping_volumes(name, true).await {
            Ok(note) => {
                let reason = format!(
                    "container {name}, set aside by an interrupted replace of {base}, is no \
                     longer declared"
                );
                self.push(&id, Action::Removed, Some(with_note(reason, note)));
            }
            Err(e) => self.push(
                &id,
                Action::Failed,
                Some(format!("cannot remove {name}: {e}")),
            ),
        }
    }

    /// Remove a container an interrupted create left under its making name
    /// (runtime::making_name), if made as a name this state declares or
    /// knows: another state directory's are not ours.
    async fn remove_left_from_making(&self, summary: &ContainerSummary, declared: &BTreeSet<&str>) {
        let made_as = summary
            .labels
            .get(LABEL_MADE_AS)
            .map(String::as_str)
            .unwrap_or_default();
        if !declared.contains(made_as) && !self.known.contains(made_as) {
            return;
        }
        match self.runtime().remove(&summary.name).await {
            Ok(()) => tracing::info!(
                "container {}, left by an interrupted create of {made_as}, is removed",
                summary.name
            ),
            Err(e) => tracing::warn!(
                "cannot remove container {}, left by an interrupted create of {made_as}: {e}",
                summary.name
            ),
        }
    }
}

/// `reason`, then `note` (what a removal kept), if any.
fn with_note(reason: String, note: Option<String>) -> String {
    match note {
        Some(note) => format!("{reason}; {note}"),
        None => reason,
    }
}
