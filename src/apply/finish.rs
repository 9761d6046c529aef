//! The end of an apply: the state documents written (each only when it
//! says something new, keeping docs/state-dir.md's promises) and the
//! report built; a preview's report, nothing written.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use super::state::{self, AppliedState, LastApply};
use super::{ApplyReport, Run, WindowLine};
use crate::declaration::ResourceKind;
use crate::store::{APPLIED, CONTAINER_INPUTS, LAST_APPLY};

impl Run<'_> {
    /// Write the state documents and build the report.
    ///
    /// What containers read is written only when it changed (or there was
    /// no such file): a no-op apply of many services then costs one
    /// atomic write (the record of the apply), not two.
    pub(super) fn finish(mut self, started_at: DateTime<Utc>) -> ApplyReport {
        if self.preview {
            return self.previewed(started_at);
        }
        let mut error = None;
        if self.inputs_on_disk.as_ref() != Some(&self.inputs) {
            if let Err(e) = self.applier.store.save(CONTAINER_INPUTS, &self.inputs) {
                error = Some(format!("cannot record what containers read: {e}"));
            }
        }
        let finished_at = Utc::now();
        // Only files still declared are recorded.
        let declared_files: BTreeSet<&str> = self
            .decl
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
        known.extend(self.decl.containers().map(|(_, c)| c.name.to_string()));
        for gone in self.removed.iter().chain(self.consumed.iter()) {
            known.remove(gone);
        }
        let applied = AppliedState {
            format: state::APPLIED_FORMAT,
            declaration: serde_json::to_value(self.decl).unwrap_or_default(),
            applied_at: finished_at,
            ok: self.ok && error.is_none(),
            halted: self.halted.clone(),
            lines: self.lines.clone(),
            files: std::mem::take(&mut self.written_files),
            units: self.written_units.iter().cloned().collect(),
            containers: known.into_iter().collect(),
        };
        // The record of what was applied is the size of the declaration,
        // twice: written only when it says something new; the time of the
        // apply always.
        let same = self
            .previous
            .as_ref()
            .is_some_and(|p| p.same_but_time(&applied));
        if !same {
            if let Err(e) = self.applier.store.save(APPLIED, &applied) {
                error = Some(format!("cannot record what was applied: {e}"));
            }
        }
        let last = LastApply {
            applied_at: finished_at,
        };
        if let Err(e) = self.applier.store.save(LAST_APPLY, &last) {
            error = Some(format!("cannot record when the apply ended: {e}"));
        }
        if self.halted.is_none() {
            // A step that left the declaration loses its suspension (an
            // operator's override of a step, not of its id).
            let declared = self
                .decl
                .steps()
                .map(|s| s.resource.id.to_string())
                .collect();
            match crate::schedule::suspend::retain(&self.applier.store, &declared) {
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
        self.release();
        crate::task::drop_later(applied);
        ApplyReport {
            ok: self.ok && error.is_none(),
            changed: self.lines.iter().any(|l| l.action.changes_something()),
            started_at,
            finished_at,
            lines: self.lines,
            windows: self.live.iter().map(WindowLine::of).collect(),
            complete: self.halted.is_none(),
            halted: self.halted,
            error,
            warnings: self.warnings,
            steps: self.steps,
        }
    }

    /// Free what the apply read and built off the path of its answer:
    /// for a declaration of thousands of resources, tens of milliseconds.
    fn release(&mut self) {
        self.builds.release();
        crate::task::drop_later((
            self.previous.take(),
            std::mem::take(&mut self.inputs),
            self.inputs_on_disk.take(),
            std::mem::replace(&mut self.listing, Ok(Default::default())),
            std::mem::take(&mut self.steps_before),
        ));
    }

    /// A preview's report: what the apply would say, nothing written.
    fn previewed(mut self, started_at: DateTime<Utc>) -> ApplyReport {
        self.release();
        ApplyReport {
            ok: self.ok,
            changed: self.lines.iter().any(|l| l.action.changes_something()),
            started_at,
            finished_at: Utc::now(),
            lines: self.lines,
            windows: self.live.iter().map(WindowLine::of).collect(),
            complete: self.halted.is_none(),
            halted: self.halted,
            error: None,
            warnings: self.warnings,
            steps: Vec::new(),
        }
    }
}
