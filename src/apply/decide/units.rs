//! Units decided: their file against what is in the unit directory, and
//! their state and enablement against what systemd says now
//! ([`crate::systemd::unit_files::decide`]): `diff` says a unit that will
//! be started, stopped, enabled or disabled, not only one whose file
//! changes.

use super::super::content_diff::unit_diff;
use super::super::plan::{Decision, Kind, Slot, UnitWork, Work};
use super::super::report::{Action, ReportLine};
use super::context::Context;
use crate::declaration::Unit;
use crate::systemd::unit_files::{decide, planned_words, FileChange};

pub(super) async fn unit(d: &mut Context<'_>, slot: Slot, id: &str, unit: &Unit) -> Decision {
    let failed = |reason: String| {
        Decision::new(
            slot.clone(),
            Kind::Unit,
            ReportLine::new(id, Action::Failed, Some(reason)),
            Work::Nothing,
        )
    };
    let reads = match d.units {
        Ok(reads) => reads,
        Err(missing) => return failed(missing.to_string()),
    };
    let name = unit.name.as_str();
    let file = match reads.read_file(name).await {
        Ok(file) => file,
        Err(e) => return failed(e),
    };
    let seen = match reads.observe(unit).await {
        Ok(seen) => seen,
        Err(e) => return failed(e),
    };
    let declared = unit.content.as_bytes();
    let change = file.change_to(declared);
    let mut decision = decide(unit, change, &seen);
    decision.fix_mode = change == FileChange::Unchanged && file.mode_to_fix();
    let (action, reason) = planned_words(&decision);
    let mut line = ReportLine::new(id, Action::parse(action), reason);
    if change != FileChange::Unchanged {
        line.diff = unit_diff(&reads.file_of(name), declared, file.content.as_deref());
    }
    let work = if decision.acts() {
        Work::Unit(Box::new(UnitWork {
            id: id.to_string(),
            unit: unit.clone(),
            decision,
        }))
    } else {
        Work::Nothing
    };
    Decision::new(slot, Kind::Unit, line, work)
}
