//! The report's builder: each decision as it was carried out, in order,
//! and what the apply keeps of it (what containers were created reading,
//! which it removed, the files and unit files it wrote, the steps for the
//! scheduler); at the end, the state documents written (each only when it
//! says something new, keeping docs/state-dir.md's promises) and the
//! report built.
//!
//! A line of the report is its decision's line with the outcome: the
//! action and reason the carrying out came to, each step with what became
//! of it (`done`, `failed`, `not reached`).

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};

use super::execute::outcome::{Outcome, Record};
use super::facts::Facts;
use super::plan::{Decision, Kind, Slot};
use super::report::{Action, ApplyReport, Halt, ReportLine, StepLine, WindowLine};
use super::state::{self, AppliedState, ContainerInputs, LastApply};
use crate::declaration::{Declaration, ResourceKind};
use crate::events::Event;
use crate::mesh_event;
use crate::progress::{Progress, Reporter};
use crate::schedule::kept::KeptStep;
use crate::store::{Store, APPLIED, CONTAINER_INPUTS, LAST_APPLY};

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct Ledger {
    progress: Reporter,
    /// What each container was created reading, by container name.
    inputs: BTreeMap<String, ContainerInputs>,
    /// Containers this state directory declared before and has not
    /// removed.
    known: BTreeSet<String>,
    /// Managed containers dealt with under another name (renamed).
    consumed: BTreeSet<String>,
    /// Containers removed by this apply.
    removed: BTreeSet<String>,
    /// Files the host wrote (or found as declared): path → SHA-256.
    written_files: BTreeMap<String, String>,
    /// Unit names whose files the host wrote.
    written_units: BTreeSet<String>,
    lines: Vec<ReportLine>,
    ok: bool,
    halted: Option<Halt>,
    warnings: Vec<String>,
    tidy: Vec<StepLine>,
    steps: Vec<KeptStep>,
}

impl Ledger {
    /// A ledger of an apply decided from `facts` (what it keeps of them is
    /// taken: the decisions are made).
    pub(crate) fn new(facts: &mut Facts, progress: Reporter) -> Self {
        let written_files = facts
            .previous
            .as_ref()
            .map(|p| p.files.clone())
            .unwrap_or_default();
        let written_units = facts
            .previous
            .as_ref()
            .map(|p| p.units.iter().cloned().collect())
            .unwrap_or_default();
        Ledger {
            progress,
            inputs: std::mem::take(&mut facts.inputs),
            known: facts.known.clone(),
            consumed: BTreeSet::new(),
            removed: BTreeSet::new(),
            written_files,
            written_units,
            lines: Vec::new(),
            ok: true,
            halted: None,
            warnings: Vec::new(),
            tidy: Vec::new(),
            steps: Vec::new(),
        }
    }

    /// What containers were created reading, as recorded so far.
    pub(crate) fn inputs(&self) -> &BTreeMap<String, ContainerInputs> {
        &self.inputs
    }

    /// The containers this state knows it declared.
    pub(crate) fn known(&self) -> &BTreeSet<String> {
        &self.known
    }

    /// The run-once step the apply halted at, if it did.
    pub(crate) fn halted(&self) -> Option<&Halt> {
        self.halted.as_ref()
    }

    /// The apply halts at `halt`.
    pub(crate) fn halt(&mut self, halt: Halt) {
        self.ok = false;
        self.halted = Some(halt);
    }

    /// Worth saying; `fails`: it fails the apply.
    pub(crate) fn warn_all(&mut self, warnings: Vec<String>, fails: bool) {
        if fails {
            self.ok = false;
        }
        for warning in warnings {
            if !self.warnings.contains(&warning) {
                self.warnings.push(warning);
            }
        }
    }

    /// Worth saying, failing nothing.
    pub(crate) fn warn(&mut self, warning: String) {
        self.warnings.push(warning);
    }

    /// A leftover tidied away, with its outcome.
    pub(crate) fn tidied(&mut self, step: StepLine) {
        self.tidy.push(step);
    }

    /// Unit files written for these resource ids.
    pub(crate) fn units_written<'d>(
        &mut self,
        ids: impl Iterator<Item = &'d String>,
        decl: &Declaration,
    ) {
        let ids: BTreeSet<&str> = ids.map(String::as_str).collect();
        for r in &decl.resources {
            if let ResourceKind::Unit(u) = &r.kind {
                if ids.contains(r.id.as_str()) {
                    self.written_units.insert(u.name.to_string());
                }
            }
        }
    }

    /// Records of what is gone: networks this state made, and what
    /// containers no longer there were created reading.
    pub(crate) fn forget(&mut self, networks: &[String], inputs: &[String], store: &Store) {
        for name in inputs {
            self.inputs.remove(name);
        }
        if networks.is_empty() {
            return;
        }
        let recorded = store
            .load::<super::records::Names>(super::records::NETWORKS)
            .map(Option::unwrap_or_default);
        match recorded {
            Ok(mut record) => {
                let before = record.len();
                record.retain(|name, _| !networks.contains(name));
                if record.len() != before {
                    if let Err(e) = store.save(super::records::NETWORKS, &record) {
                        self.warnings
                            .push(format!("networks: cannot record it: {e}"));
                    }
                }
            }
            Err(e) => self.warnings.push(format!("networks: {e}")),
        }
    }

    /// A decision never carried out: the apply halted at `halt` before it.
    pub(crate) fn not_reached(&mut self, decision: Decision, halt: &Halt) {
        let decided = decision.line;
        let mut said = decided.action.to_string();
        if let Some(reason) = &decided.reason {
            said.push_str(&format!(": {reason}"));
        }
        let reason = format!(
            "the apply halted at {} before it (it was to be {said})",
            halt.id
        );
        let mut line = ReportLine::new(decided.id, Action::NotReached, Some(reason));
        line.steps = decided
            .steps
            .into_iter()
            .map(|s| s.with_outcome("not reached"))
            .collect();
        self.push(line);
    }

    /// `decision` carried out, coming to `outcome`.
    pub(crate) fn commit(&mut self, decl: &Declaration, decision: Decision, outcome: Outcome) {
        let Decision {
            slot,
            kind,
            line: decided,
            harmless,
            note,
            after,
            ..
        } = decision;
        let failed = outcome.action == Action::Failed;
        if (failed && !harmless) || outcome.action == Action::Other("refused".into()) {
            self.ok = false;
        }
        let resource = match slot {
            Slot::Declared(index) => decl.resources.get(index),
            Slot::Removal(..) => None,
        };
        if let (Kind::File, Some(res), false) = (kind, resource, failed) {
            if let ResourceKind::File(f) = &res.kind {
                self.written_files.insert(
                    f.path.as_str().to_string(),
                    super::nofollow::sha256_hex(&f.content),
                );
            }
        }
        let mut reason = outcome.reason;
        if let Some(after) = after {
            reason = Some(match reason {
                Some(r) => format!("{r} ({after})"),
                None => after,
            });
        }
        if let Some(note) = note {
            reason = Some(match reason {
                Some(r) => format!("{r}; {note}"),
                None => note,
            });
        }
        let steps = decided
            .steps
            .into_iter()
            .enumerate()
            .map(|(i, step)| {
                let said = match outcome.failed_step {
                    Some(at) if i < at => "done",
                    Some(at) if i == at => "failed",
                    _ if failed => "not reached",
                    _ => "done",
                };
                step.with_outcome(said)
            })
            .collect();
        let line = ReportLine {
            id: decided.id,
            action: outcome.action,
            reason,
            diff: if failed { None } else { decided.diff },
            steps,
        };
        for record in outcome.records {
            self.record(record, &line, resource);
        }
        self.push(line);
    }

    fn record(
        &mut self,
        record: Record,
        line: &ReportLine,
        res: Option<&crate::declaration::Resource>,
    ) {
        match record {
            Record::Inputs(name, built, id) => {
                self.inputs.insert(name, ContainerInputs::of(&id, &built));
            }
            Record::InputsIfLost(name, built, id) => {
                self.inputs
                    .entry(name)
                    .or_insert_with(|| ContainerInputs::of(&id, &built));
            }
            Record::Consumed(old) => {
                self.inputs.remove(&old);
                self.consumed.insert(old);
            }
            Record::Removed(name) => {
                self.inputs.remove(&name);
                self.removed.insert(name);
            }
            Record::Recreated(name) => {
                let id = &line.id;
                let reason = line.reason.as_deref().unwrap_or("");
                let module = res.and_then(|r| r.module.as_deref()).unwrap_or("");
                mesh_event!(
                    info,
                    Event::ContainerRecreated,
                    MESH_CONTAINER = %name,
                    MESH_MODULE = %module,
                    "container {name} ({id}) recreated: {reason}"
                );
            }
            Record::Step(step) => self.steps.push(*step),
            Record::UnitGone(name) => {
                self.written_units.remove(&name);
            }
            Record::Warning(warning) => self.warnings.push(warning),
            Record::ExitStatus(_) => {}
        }
    }

    fn push(&mut self, line: ReportLine) {
        self.progress.send(Progress::Decided {
            id: line.id.clone(),
            action: line.action.as_str().to_string(),
            reason: line.reason.clone(),
        });
        self.lines.push(line);
    }

    /// Write the state documents and build the report.
    ///
    /// What containers read is written only when it changed (or there was
    /// no such file): a no-op apply of many services then costs one
    /// atomic write (the record of the apply), not two.
    pub(crate) fn finish(
        mut self,
        store: &Store,
        decl: &Declaration,
        mut facts: Facts,
        started_at: DateTime<Utc>,
    ) -> ApplyReport {
        let mut error = None;
        if facts.inputs_on_disk.as_ref() != Some(&self.inputs) {
            if let Err(e) = store.save(CONTAINER_INPUTS, &self.inputs) {
                error = Some(format!("cannot record what containers read: {e}"));
            }
        }
        let finished_at = Utc::now();
        // Only files still declared are recorded.
        let declared_files: BTreeSet<&str> = decl
            .resources
            .iter()
            .filter_map(|r| match &r.kind {
                ResourceKind::File(f) => Some(f.path.as_str()),
                _ => None,
            })
            .collect();
        self.written_files
            .retain(|path, _| declared_files.contains(path.as_str()));
        let mut known = std::mem::take(&mut self.known);
        known.extend(decl.containers().map(|(_, c)| c.name.to_string()));
        for gone in self.removed.iter().chain(self.consumed.iter()) {
            known.remove(gone);
        }
        // The record keeps what was done, not how: no diff of a file's
        // content, no steps.
        let recorded_lines = self
            .lines
            .iter()
            .map(|l| ReportLine::new(l.id.clone(), l.action.clone(), l.reason.clone()))
            .collect();
        let applied = AppliedState {
            format: state::APPLIED_FORMAT,
            declaration: super::recorded::RecordedDeclaration::of(decl).unwrap_or_default(),
            applied_at: finished_at,
            ok: self.ok && error.is_none(),
            halted: self.halted.clone(),
            lines: recorded_lines,
            files: std::mem::take(&mut self.written_files),
            units: self.written_units.iter().cloned().collect(),
            containers: known.into_iter().collect(),
        };
        // The record of what was applied is the size of the declaration,
        // twice: written only when it says something new; the time of the
        // apply always.
        let same = facts
            .previous
            .as_ref()
            .is_some_and(|p| p.same_but_time(&applied));
        if !same {
            if let Err(e) = store.save(APPLIED, &applied) {
                error = Some(format!("cannot record what was applied: {e}"));
            }
        }
        let last = LastApply {
            applied_at: finished_at,
        };
        if let Err(e) = store.save(LAST_APPLY, &last) {
            error = Some(format!("cannot record when the apply ended: {e}"));
        }
        if self.halted.is_none() {
            // A step that left the declaration loses its suspension (an
            // operator's override of a step, not of its id).
            let declared = decl.steps().map(|s| s.resource.id.to_string()).collect();
            match crate::schedule::suspend::retain(store, &declared) {
                Ok(gone) => {
                    for step in gone {
                        tracing::info!(MESH_STEP = %step, "step {step} is no longer declared: its suspension is dropped");
                    }
                }
                Err(e) => self.warnings.push(format!(
                    "suspensions of steps no longer declared are kept: {e}"
                )),
            }
        }
        let windows = facts.live.iter().map(WindowLine::of).collect();
        release(&mut facts);
        crate::task::drop_later((applied, std::mem::take(&mut self.inputs)));
        ApplyReport {
            ok: self.ok && error.is_none(),
            changed: self.lines.iter().any(ReportLine::changes_something),
            started_at,
            finished_at,
            lines: self.lines,
            unchanged_unlisted: 0,
            windows,
            complete: self.halted.is_none(),
            halted: self.halted,
            error,
            warnings: self.warnings,
            tidy: self.tidy,
            steps: self.steps,
        }
    }
}

/// Free what the apply read off the path of its answer: for a
/// declaration of thousands of resources, tens of milliseconds.
pub(crate) fn release(facts: &mut Facts) {
    crate::task::drop_later((
        facts.previous.take(),
        std::mem::take(&mut facts.inputs),
        facts.inputs_on_disk.take(),
        std::mem::replace(&mut facts.listing, Ok(Default::default())),
        std::mem::take(&mut facts.steps_before),
    ));
}
