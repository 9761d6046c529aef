//! The order of an apply: declaration order, neighbouring services
//! converged together, then the removals.
//!
//! Declaration order is the operator's: a file before the service reading
//! it, a run-once step gating all that follows. Converging services one at
//! a time would make an apply of fifty of them wait on fifty pulls in a
//! row, so services declared next to each other form a batch whose runtime
//! calls run concurrently while their lines still come out in declaration
//! order; a service's calls wait for those of the services it depends on
//! (`depends`), as compose starts dependencies first. This file is that ordering and batching; what each resource kind
//! does is in its own file (`files`, `containers`, `run_once`, `scheduled`,
//! `units`, `identities`, `shared_folders`).

use std::collections::HashMap;

use futures_util::StreamExt;
use tokio::sync::watch;

use super::containers::{Executor, Outcome, Work};
use super::{depends, Run};
use crate::declaration::depends::Condition;
use crate::declaration::{Container, Resource, ResourceKind, Role};

/// How many service containers one apply converges at once (the runtime
/// calls of a batch of services declared next to each other: pull, create,
/// start, stop). Fixed, and small next to docker-compose's 64: enough
/// requests in flight to keep Docker busy on a small node, few enough not
/// to flood it (docs/apply.md, docs/benchmarks.md).
pub const APPLY_WIDTH: usize = 16;

impl<'a> Run<'a> {
    /// Every declared resource, in order, until a run-once step fails.
    ///
    /// Service containers declared next to each other form a batch: each
    /// is decided in declaration order as the walk reaches it, the batch's
    /// runtime calls run concurrently ([`APPLY_WIDTH`] at a time), and
    /// their lines are committed in declaration order. Any other resource
    /// ends the batch first: a file, directory, unit, scheduled or run-once
    /// step is applied only once every service before it is done, and a
    /// service after it is decided only once it is (so `restart-on` sees
    /// the files changed before it, and a run-once step gates all that
    /// follows).
    pub(super) async fn resources(&mut self) {
        let decl = self.decl;
        let mut batch: Vec<(&Resource, Work)> = Vec::new();
        for (index, res) in decl.resources.iter().enumerate() {
            let id = res.id.as_str();
            // Made before every other resource (`Run::networks_and_volumes`).
            if matches!(res.kind, ResourceKind::Network(_) | ResourceKind::Volume(_)) {
                continue;
            }
            if let ResourceKind::Container(c) = &res.kind {
                if matches!(c.role, Role::Service) {
                    if c.depends_on
                        .iter()
                        .any(|d| d.condition == Condition::Healthy)
                    {
                        // What it waits on is converged first.
                        self.converge_batch(&mut batch).await;
                        let work = self.decide_service(res, c);
                        let work = self.after_dependencies(res, c, work).await;
                        batch.push((res, work));
                    } else {
                        let work = self.decide_service(res, c);
                        batch.push((res, self.after_failed(res, c, work)));
                    }
                    continue;
                }
            }
            self.converge_batch(&mut batch).await;
            match &res.kind {
                ResourceKind::File(file) => self.file(id, file),
                ResourceKind::Directory(dir) => self.directory(id, dir),
                ResourceKind::Container(c) => match &c.role {
                    Role::Service => {}
                    Role::RunOnce => {
                        if let Some(mut halt) = self.run_once(res, c).await {
                            halt.not_applied = decl.resources.len() - index - 1;
                            self.ok = false;
                            self.halted = Some(halt);
                            return;
                        }
                    }
                    Role::Scheduled(_) => self.scheduled(res, c).await,
                },
                ResourceKind::Unit(unit) => self.unit(id, unit).await,
                ResourceKind::Identity(identity) => self.identity(id, identity).await,
                ResourceKind::SharedFolder(folder) => self.shared_folder(res, folder).await,
                ResourceKind::Network(_) | ResourceKind::Volume(_) => {}
            }
            if let ResourceKind::Container(c) = &res.kind {
                self.note_unhealthy_grants(id, c);
            }
            // A file written, a run-once step run, a folder made, an
            // account added: a container built from here on reads the
            // machine as it is now, not as it was first read.
            if !matches!(&res.kind, ResourceKind::Container(c) if matches!(c.role, Role::Scheduled(_)))
            {
                self.builds.invalidate();
            }
        }
        self.converge_batch(&mut batch).await;
    }

    /// Execute a batch of decided services, at most [`APPLY_WIDTH`] at a
    /// time, and commit their outcomes in declaration order.
    async fn converge_batch(&mut self, batch: &mut Vec<(&'a Resource, Work)>) {
        if batch.is_empty() {
            return;
        }
        if self.preview {
            for (res, work) in std::mem::take(batch) {
                // Committed in order: what it depends on is said by now.
                let work = match &res.kind {
                    ResourceKind::Container(c) => self.after_failed(res, c, work),
                    _ => work,
                };
                self.commit_service(res, work.preview());
                if let ResourceKind::Container(c) = &res.kind {
                    self.note_unhealthy_grants(&res.id, c);
                }
            }
            return;
        }
        let executor = Executor {
            runtime: self.applier.runtime.clone(),
            puller: self.puller.clone(),
        };
        let (resources, works): (Vec<&Resource>, Vec<Work>) =
            std::mem::take(batch).into_iter().unzip();
        let mut outcomes: Vec<Option<Outcome>> =
            std::iter::repeat_with(|| None).take(works.len()).collect();
        // Each service waits for its dependencies in the batch (declared
        // before it, so taken into the stream before it: the first
        // unfinished one never waits, and the batch cannot stall).
        let at: HashMap<&str, usize> = resources
            .iter()
            .enumerate()
            .map(|(i, r)| (r.id.as_str(), i))
            .collect();
        let done: Vec<watch::Sender<Option<bool>>> =
            (0..works.len()).map(|_| watch::channel(None).0).collect();
        let gated: Vec<(String, Vec<(String, depends::Started)>)> = resources
            .iter()
            .map(|r| {
                let waits = match &r.kind {
                    ResourceKind::Container(c) => c
                        .depends_on
                        .iter()
                        .filter_map(|d| at.get(d.id.as_str()))
                        .map(|&j| (resources[j].id.to_string(), done[j].subscribe()))
                        .collect(),
                    _ => Vec::new(),
                };
                (r.id.to_string(), waits)
            })
            .collect();
        let executor = &executor;
        let mut running =
            futures_util::stream::iter(works.into_iter().zip(gated).zip(done).enumerate().map(
                |(i, ((work, (id, waits)), done))| async move {
                    let work = depends::gate(&id, work, waits).await;
                    let outcome = work.execute(executor).await;
                    done.send_replace(Some(!outcome.failed()));
                    (i, outcome)
                },
            ))
            .buffer_unordered(APPLY_WIDTH);
        while let Some((i, outcome)) = running.next().await {
            outcomes[i] = Some(outcome);
        }
        drop(running);
        for (res, outcome) in resources.into_iter().zip(outcomes) {
            if let Some(outcome) = outcome {
                self.commit_service(res, outcome);
            }
            if let ResourceKind::Container(c) = &res.kind {
                self.note_unhealthy_grants(&res.id, c);
            }
        }
    }

    /// After the declared resources: remove what the host made and no
    /// longer declares (managed containers, unit files).
    pub(super) async fn removals(&mut self) {
        self.remove_containers().await;
        self.remove_networks_and_volumes().await;
        self.remove_units().await;
        self.remove_shared_folders().await;
        self.remove_identities().await;
    }

    /// A grant whose group cannot write its path is said on the
    /// container's line (`unhealthy: ...`); it fails nothing.
    fn note_unhealthy_grants(&mut self, id: &str, c: &Container) {
        let unhealthy = crate::container_spec::grants::unhealthy(c);
        if unhealthy.is_empty() {
            return;
        }
        let note = format!("unhealthy: {}", unhealthy.join("; "));
        if let Some(line) = self.lines.iter_mut().rev().find(|l| l.id == id) {
            line.reason = Some(match line.reason.take() {
                Some(reason) => format!("{reason}; {note}"),
                None => note,
            });
        }
    }
}
