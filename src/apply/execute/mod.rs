//! Carrying a plan out: each decision's work, in the plan's order, each
//! producing its outcome; the report is the plan with the outcomes.
//!
//! The executor is what holds the machine's writes during an apply: the
//! runtime's [`ContainerRuntime`](crate::runtime::ContainerRuntime), the
//! [`UnitManager`](super::UnitManager), the
//! [`AccountTools`](crate::accounts::AccountTools), the state directory's
//! records (its `Tools`). It never
//! decides what to do, only does what was decided and says what came of
//! it; where the machine is not what the decision read, it acts on the
//! truth and says so (a volume or network that could not be made fails
//! the containers that use it; a dependency that is not healthy fails its
//! dependent).
//!
//! - **Concurrency.** Service containers declared next to each other form
//!   a batch: their runtime calls run [`APPLY_WIDTH`] at a time, their
//!   outcomes are committed in declaration order. Any other resource ends
//!   the batch first, so a file is written before a service after it is
//!   made, and a run-once step gates all that follows. A service waiting
//!   for a healthy dependency ends the batch before it too.
//! - **Run-once steps.** One that fails halts the apply: the decisions
//!   after it are reported `not-reached`. One that runs may have changed
//!   what the decisions after it read (an env-file it wrote, a directory
//!   it filled): they are decided again from the machine as it is then,
//!   and a line whose decision changed says so (`recreated: /etc/app/env
//!   changed (after run-once step migrate)`). So `diff` is exact whenever
//!   no run-once step changes the machine, and the report honest when one
//!   does.
//! - **A power cut.** Where a resumed apply needs a record, it is written
//!   before the first change (a network's remake lists the containers to
//!   attach again; a replace sets the old container aside under a name
//!   the next create carries the volumes from). The next apply decides
//!   again from those: the plan itself is never stored.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use futures_util::StreamExt;
use tokio::sync::watch;

use super::decide::Decider;
use super::depends;
use super::facts::{listing_of, Facts};
use super::ledger::Ledger;
use super::plan::{Decision, Kind, Plan, Slot, Tidy, Work};
use super::report::{Action, ApplyReport, Halt};
use crate::declaration::{Declaration, ResourceKind};
use crate::progress::Progress;

mod accounts;
mod files;
mod folders;
mod health;
mod networks;
pub(crate) mod outcome;
mod rollout;
mod services;
mod steps;
mod tools;
mod units;

pub(crate) use outcome::{Outcome, Record};
pub(crate) use tools::Tools;

/// How many service containers one apply converges at once (the runtime
/// calls of a batch of services declared next to each other: pull, create,
/// start, stop). Fixed, and small next to docker-compose's 64: enough
/// requests in flight to keep Docker busy on a small node, few enough not
/// to flood it (docs/apply.md, docs/benchmarks.md).
pub const APPLY_WIDTH: usize = 16;

/// See the module documentation.
pub(crate) struct Executor<'a> {
    tools: Tools,
    decl: &'a Declaration,
    facts: Facts,
    ledger: Ledger,
    /// Volumes and networks (`volume X`, `network X`) that could not be
    /// made: no container using one is made.
    unusable: BTreeMap<String, String>,
    /// File resources this apply changed: id → path (what a decision
    /// taken again after a run-once step reads for `restart-on`).
    changed_files: BTreeMap<String, String>,
    /// The units whose files the plan writes, all at the first unit
    /// reached (so systemd reloads once): resource id and unit.
    units_to_write: Vec<(String, crate::declaration::Unit)>,
    /// Unit files written at the first unit reached, or why not.
    prepared: Option<Result<BTreeMap<String, units::FileChange>, String>>,
    /// The units no longer declared that the plan removes, all at once.
    units_to_remove: Vec<String>,
    /// Unit removals done at the first removal reached, by unit name.
    unit_removals: Option<BTreeMap<String, Outcome>>,
    /// Resources whose line is `failed`: a service depending on one is
    /// not made or started ([`super::depends`]).
    failed: BTreeSet<String>,
}

impl<'a> Executor<'a> {
    pub(crate) fn new(tools: Tools, decl: &'a Declaration, mut facts: Facts) -> Self {
        let ledger = Ledger::new(&mut facts, tools.progress.clone());
        Executor {
            tools,
            decl,
            facts,
            ledger,
            unusable: BTreeMap::new(),
            changed_files: BTreeMap::new(),
            units_to_write: Vec::new(),
            prepared: None,
            units_to_remove: Vec::new(),
            unit_removals: None,
            failed: BTreeSet::new(),
        }
    }

    /// Commit `decision`'s `outcome` to the ledger, its failure noted.
    fn commit(&mut self, decision: Decision, outcome: Outcome) {
        if outcome.action == Action::Failed {
            self.failed.insert(decision.line.id.clone());
        }
        self.ledger.commit(self.decl, decision, outcome);
    }

    /// What of the unit resources `decisions` says is done all at once.
    fn gather_units<'d>(&mut self, decisions: impl Iterator<Item = &'d Decision>) {
        self.units_to_write.clear();
        self.units_to_remove.clear();
        for decision in decisions {
            match &decision.work {
                Work::Unit(u)
                    if u.decision.file != units::FileChange::Unchanged || u.decision.fix_mode =>
                {
                    self.units_to_write.push((u.id.clone(), u.unit.clone()));
                }
                Work::RemoveUnit(name) => self.units_to_remove.push(name.clone()),
                _ => {}
            }
        }
    }

    /// Carry `plan` out and report.
    pub(crate) async fn run(
        mut self,
        plan: Plan,
        started_at: chrono::DateTime<chrono::Utc>,
    ) -> ApplyReport {
        self.tools.progress.send(Progress::Apply {
            resources: self.decl.resources.len(),
        });
        let Plan {
            decisions,
            mut tidy,
            warnings,
            failed_before,
            mut networks_gone,
            mut inputs_gone,
        } = plan;
        self.ledger.warn_all(warnings, failed_before);
        self.gather_units(decisions.iter());
        let mut decisions: VecDeque<Decision> = decisions.into();
        let mut batch: Vec<Decision> = Vec::new();
        let mut removing = false;
        while let Some(mut decision) = decisions.pop_front() {
            if let Some(halt) = self.ledger.halted().cloned() {
                self.ledger.not_reached(decision, &halt);
                continue;
            }
            if matches!(decision.slot, Slot::Removal(..)) && !removing {
                removing = true;
                self.converge_batch(&mut batch).await;
                self.tidy(&tidy).await;
            }
            if let Work::Service(work) = &decision.work {
                if work.starts() && !work.healthy_first.is_empty() {
                    // What it waits on is converged first.
                    self.converge_batch(&mut batch).await;
                    let failed_dep = container_of(self.decl, &decision.slot)
                        .and_then(|c| {
                            depends::failed_dependency(&self.failed, self.decl, c, &decision)
                        })
                        .map(|dep| depends::not_started(&dep));
                    if let Some(why) = failed_dep {
                        self.commit(decision, Outcome::failed(why));
                        continue;
                    }
                    if let Err(why) = health::wait(&self.tools, &work.id, &work.healthy_first).await
                    {
                        self.commit(decision, Outcome::failed_at(0, why));
                        continue;
                    }
                }
                batch.push(decision);
                continue;
            }
            self.converge_batch(&mut batch).await;
            let work = std::mem::replace(&mut decision.work, Work::Nothing);
            let outcome = self.one(&decision, work).await;
            if decision.kind == Kind::File
                && matches!(outcome.action, Action::Created | Action::Updated)
            {
                if let Some(path) = file_path(self.decl, &decision.slot) {
                    self.changed_files.insert(decision.line.id.clone(), path);
                }
            }
            let run_once = match (decision.kind, &decision.slot) {
                (Kind::RunOnce, Slot::Declared(index)) => Some(*index),
                _ => None,
            };
            let halt = halt_of(&decision, &outcome);
            let ran = outcome.action == Action::Ran;
            let id = decision.line.id.clone();
            self.commit(decision, outcome);
            if let (Some(mut halt), Some(index)) = (halt, run_once) {
                halt.not_applied = self.decl.resources.len() - index - 1;
                self.ledger.halt(halt);
                continue;
            }
            if let (true, Some(index)) = (ran, run_once) {
                let because = format!("after run-once step {id}");
                let tail = self.decide_again(index).await;
                tidy = tail.tidy;
                networks_gone = tail.networks_gone;
                inputs_gone = tail.inputs_gone;
                self.ledger.warn_all(tail.warnings, tail.failed_before);
                decisions = replace_tail(decisions, tail.decisions, &because);
                self.gather_units(decisions.iter());
            }
        }
        self.converge_batch(&mut batch).await;
        if self.ledger.halted().is_none() {
            if !removing {
                self.tidy(&tidy).await;
            }
            self.ledger
                .forget(&networks_gone, &inputs_gone, &self.tools.store);
        }
        let Executor {
            tools,
            decl,
            facts,
            ledger,
            ..
        } = self;
        ledger.finish(&tools.store, decl, facts, started_at)
    }

    /// The decisions after declared resource `index`, taken again from
    /// the machine as it is now.
    async fn decide_again(&mut self, index: usize) -> Plan {
        let listing = listing_of(self.tools.runtime.list_managed().await);
        let facts = self.facts.again(
            &self.tools.store,
            listing,
            self.ledger.inputs().clone(),
            self.ledger.known().clone(),
        );
        let units = match &self.tools.units {
            Ok(units) => Ok(&**units as &dyn super::units::UnitReads),
            Err(missing) => Err(missing.as_str()),
        };
        let view: &dyn crate::runtime::RuntimeView = &*self.tools.runtime;
        let accounts: &dyn crate::accounts::AccountBook = &*self.tools.accounts;
        let decider = Decider::new(self.decl, &facts, view, units, accounts)
            .with_changed_files(self.changed_files.clone());
        decider.tail(index, self.unusable.clone()).await
    }

    /// Carry out one decision that is not a batched service.
    async fn one(&mut self, decision: &Decision, work: Work) -> Outcome {
        let id = decision.line.id.as_str();
        match work {
            Work::Nothing => {
                Outcome::new(decision.line.action.clone(), decision.line.reason.clone())
            }
            Work::Halt => Outcome::failed(decision.line.reason.clone().unwrap_or_default()),
            Work::Volume(spec) => {
                let outcome = networks::volume(&self.tools, &spec, decision).await;
                if outcome.action == Action::Failed {
                    self.unusable.insert(
                        format!("volume {}", spec.name),
                        outcome.reason.clone().unwrap_or_default(),
                    );
                }
                outcome
            }
            Work::Network(work) => {
                let outcome = networks::network(&self.tools, id, &work, decision).await;
                if outcome.action == Action::Failed {
                    self.unusable.insert(
                        format!("network {}", networks::name_of(&work)),
                        outcome.reason.clone().unwrap_or_default(),
                    );
                }
                outcome
            }
            Work::Service(_) => Outcome::failed("a service outside its batch".into()),
            Work::RunOnce(work) => {
                // What it depends on was converged before it: one that
                // failed leaves it not run; a healthy one is waited for.
                let failed_dep = container_of(self.decl, &decision.slot)
                    .and_then(|c| depends::failed_of(&self.failed, self.decl, c))
                    .map(|dep| depends::not_run(&dep));
                if let Some(why) = failed_dep {
                    return Outcome::failed(why);
                }
                if let Err(why) = health::wait(&self.tools, id, &work.healthy_first).await {
                    return Outcome::failed(why);
                }
                steps::run_once(&self.tools, id, &work).await
            }
            Work::Schedule(work) => steps::schedule(&self.tools, work, decision).await,
            Work::File(work) => files::file(&work, decision),
            Work::Directory(work) => files::directory(&work, decision),
            Work::Unit(work) => {
                if self.prepared.is_none() {
                    let written = units::write_all(&self.tools, &self.units_to_write).await;
                    if let Ok(written) = &written {
                        self.ledger.units_written(written.keys(), self.decl);
                    }
                    self.prepared = Some(written);
                }
                units::unit(
                    &self.tools,
                    &work,
                    self.prepared.as_mut(),
                    &mut self.ledger,
                    self.decl,
                )
                .await
            }
            Work::Identity(identity) => accounts::identity(&self.tools, id, &identity).await,
            Work::Folder(work) => folders::folder(&self.tools, &work, decision).await,
            Work::RemoveContainer { name, stopped_only } => {
                services::remove(
                    &self.tools,
                    &name,
                    stopped_only,
                    decision.line.reason.clone(),
                )
                .await
            }
            Work::RemoveUnit(name) => {
                if self.unit_removals.is_none() {
                    self.unit_removals =
                        Some(units::remove_all(&self.tools, &self.units_to_remove).await);
                }
                self.unit_removals
                    .as_mut()
                    .and_then(|done| done.remove(&name))
                    .unwrap_or_else(|| Outcome::failed(format!("{name} was not removed")))
            }
            Work::RemoveAccount { name, made } => accounts::remove(&self.tools, &name, &made).await,
            Work::RemoveFolder { id, folder } => folders::remove(&self.tools, &id, &folder).await,
            Work::RemoveNetwork(name) => networks::remove(&self.tools, &name).await,
            Work::ForgetVolume(name) => networks::forget_volume(&self.tools, &name, decision),
            Work::RecordVolume(name) => networks::record_volume(&self.tools, &name, decision),
        }
    }

    /// Remove the leftovers of interrupted creates and replaces.
    async fn tidy(&mut self, tidy: &[Tidy]) {
        for leftover in tidy {
            let (name, stopped_only) = match leftover {
                Tidy::Making { name, .. } => (name, false),
                Tidy::SetAside { name, .. } => (name, true),
            };
            let removed = if stopped_only {
                self.tools.runtime.remove_stopped(name).await
            } else {
                self.tools.runtime.remove(name).await
            };
            let outcome = match &removed {
                Ok(()) => "done".to_string(),
                Err(e) => format!("failed: {e}"),
            };
            match (&removed, leftover) {
                (
                    Ok(()),
                    Tidy::SetAside {
                        unused: Some(note),
                        base,
                        ..
                    },
                ) => self.ledger.warn(format!(
                    "{name}, left by an interrupted replace of {base}, is removed; {note}"
                )),
                (Ok(()), _) => tracing::info!(
                    "container {name}, {}, is removed",
                    leftover.step().reason.unwrap_or_default()
                ),
                (Err(e), _) => tracing::warn!("cannot remove container {name}: {e}"),
            }
            self.ledger.tidied(leftover.step().with_outcome(outcome));
        }
    }

    /// Execute a batch of decided services, at most [`APPLY_WIDTH`] at a
    /// time, and commit their outcomes in declaration order.
    async fn converge_batch(&mut self, batch: &mut Vec<Decision>) {
        if batch.is_empty() {
            return;
        }
        let decisions = std::mem::take(batch);
        let mut outcomes: Vec<Option<Outcome>> = std::iter::repeat_with(|| None)
            .take(decisions.len())
            .collect();
        {
            let tools = &self.tools;
            let unusable = &self.unusable;
            // Each service waits for its dependencies in the batch
            // (declared before it, so taken into the stream before it: the
            // first unfinished one never waits, and the batch cannot stall).
            let at: HashMap<&str, usize> = decisions
                .iter()
                .enumerate()
                .map(|(i, d)| (d.line.id.as_str(), i))
                .collect();
            let done: Vec<watch::Sender<Option<bool>>> = (0..decisions.len())
                .map(|_| watch::channel(None).0)
                .collect();
            let mut started = Vec::with_capacity(decisions.len());
            for ((i, decision), finished) in decisions.iter().enumerate().zip(done.iter()) {
                let container = container_of(self.decl, &decision.slot);
                // A dependency that failed in an earlier batch.
                let failed_before = container
                    .and_then(|c| depends::failed_dependency(&self.failed, self.decl, c, decision));
                let waits: Vec<(depends::After, depends::Started)> = container
                    .map(|c| {
                        depends::after(self.decl, c)
                            .into_iter()
                            .filter_map(|dep| at.get(dep.id.as_str()).map(|&j| (dep, j)))
                            .map(|(dep, j)| (dep, done[j].subscribe()))
                            .collect()
                    })
                    .unwrap_or_default();
                started.push(async move {
                    let starts = matches!(&decision.work, Work::Service(w) if w.starts());
                    let failed_dep = match failed_before {
                        Some(dep) => Some(dep),
                        None if starts => depends::gate(waits).await,
                        None => None,
                    };
                    let (i, outcome) = match failed_dep {
                        Some(dep) => (i, Outcome::failed(depends::not_started(&dep))),
                        None => batched(tools, unusable, i, decision).await,
                    };
                    finished.send_replace(Some(outcome.action != Action::Failed));
                    (i, outcome)
                });
            }
            let mut running = futures_util::stream::iter(started).buffer_unordered(APPLY_WIDTH);
            while let Some((i, outcome)) = running.next().await {
                outcomes[i] = Some(outcome);
            }
        }
        for (decision, outcome) in decisions.into_iter().zip(outcomes) {
            let outcome = outcome.unwrap_or_else(|| Outcome::failed("not carried out".into()));
            self.commit(decision, outcome);
        }
    }
}

/// One service of a batch carried out (the `i`th): failed at once when a
/// volume or network it uses could not be made.
async fn batched(
    tools: &Tools,
    unusable: &BTreeMap<String, String>,
    i: usize,
    decision: &Decision,
) -> (usize, Outcome) {
    let outcome = match &decision.work {
        Work::Service(work) => match super::decide::unusable_of(unusable, &work.uses) {
            Some(why) => Outcome::failed(why),
            None => services::service(tools, work).await,
        },
        _ => Outcome::new(decision.line.action.clone(), decision.line.reason.clone()),
    };
    (i, outcome)
}

/// The container declared at `slot`, if it is one.
fn container_of<'d>(
    decl: &'d Declaration,
    slot: &Slot,
) -> Option<&'d crate::declaration::Container> {
    let Slot::Declared(index) = slot else {
        return None;
    };
    match &decl.resources.get(*index)?.kind {
        ResourceKind::Container(c) => Some(c),
        _ => None,
    }
}

/// The path of the file resource at `slot`, if it is one.
fn file_path(decl: &Declaration, slot: &Slot) -> Option<String> {
    let Slot::Declared(index) = slot else {
        return None;
    };
    match &decl.resources.get(*index)?.kind {
        ResourceKind::File(f) => Some(f.path.to_string()),
        _ => None,
    }
}

/// Where the apply halts, if `outcome` of `decision` says so: a run-once
/// step that failed (or could not run).
fn halt_of(decision: &Decision, outcome: &Outcome) -> Option<Halt> {
    if decision.kind != Kind::RunOnce || outcome.action != Action::Failed {
        return None;
    }
    let exit_status = outcome.records.iter().find_map(|r| match r {
        Record::ExitStatus(status) => *status,
        _ => None,
    });
    Some(Halt {
        id: decision.line.id.clone(),
        exit_status,
        reason: outcome.reason.clone().unwrap_or_default(),
        not_applied: 0,
    })
}

/// The decisions left (`left`) with their tail decided again (`again`):
/// a decision the same as before is kept; one that changed is taken, its
/// line saying `because`; one no longer needed is dropped.
fn replace_tail(
    left: VecDeque<Decision>,
    again: Vec<Decision>,
    because: &str,
) -> VecDeque<Decision> {
    let mut before: BTreeMap<Slot, Decision> = BTreeMap::new();
    for d in left {
        before.insert(d.slot.clone(), d);
    }
    let mut out = VecDeque::with_capacity(again.len());
    for mut d in again {
        match before.remove(&d.slot) {
            Some(old) if old.line == d.line => out.push_back(old),
            Some(_) | None => {
                d.after = Some(because.to_string());
                out.push_back(d);
            }
        }
    }
    out
}
