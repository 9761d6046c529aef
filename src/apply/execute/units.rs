//! Units carried out as decided, through the unit manager: every file the
//! plan writes at once when the first unit is reached (systemd reloaded
//! once), then each unit's enablement and job at its place; the units no
//! longer declared removed all at once, systemd reloaded once.

use std::collections::BTreeMap;

use super::super::ledger::Ledger;
use super::super::plan::UnitWork;
use super::super::report::Action;
use super::outcome::{Outcome, Record};
use super::tools::Tools;
use crate::declaration::{Declaration, Unit};
use crate::systemd::unit_files::{summarize, StateStep, Steps};

pub(super) use crate::systemd::unit_files::FileChange;

/// What writing the units' files came to, by resource id, or why none
/// was written.
pub(super) type Written = Result<BTreeMap<String, FileChange>, String>;

/// Write the files of `units` (all of them the plan writes).
pub(super) async fn write_all(tools: &Tools, units: &[(String, Unit)]) -> Written {
    if units.is_empty() {
        return Ok(BTreeMap::new());
    }
    match &tools.units {
        Ok(manager) => manager.prepare(units).await,
        Err(missing) => Err(missing.clone()),
    }
}

/// Bring one unit to what was decided of it.
pub(super) async fn unit(
    tools: &Tools,
    work: &UnitWork,
    written: Option<&mut Written>,
    ledger: &mut Ledger,
    decl: &Declaration,
) -> Outcome {
    let manager = match &tools.units {
        Ok(manager) => manager,
        Err(missing) => return Outcome::failed(missing.clone()),
    };
    let d = &work.decision;
    let id = work.id.as_str();
    let name = work.unit.name.as_str();
    let writes = d.file != FileChange::Unchanged || d.fix_mode;
    let mut at = 0;
    let file = if writes {
        at += 1;
        let found = match written {
            Some(Ok(map)) => match map.get(id) {
                Some(change) => Ok(*change),
                // Decided again after the files were written: its own.
                None => match manager
                    .prepare(&[(id.to_string(), work.unit.clone())])
                    .await
                {
                    Ok(one) => {
                        ledger.units_written(one.keys(), decl);
                        let change = one.get(id).copied();
                        map.extend(one);
                        change.ok_or_else(|| "the unit manager did not write its file".to_string())
                    }
                    Err(e) => Err(e),
                },
            },
            Some(Err(e)) => Err(e.clone()),
            None => Err("the unit manager did not write its file".to_string()),
        };
        match found {
            Ok(change) => change,
            Err(e) => return Outcome::failed_at(0, format!("unit files not written: {e}")),
        }
    } else {
        FileChange::Unchanged
    };
    let enable_at = at;
    let enablement = match d.enable {
        Some(want) => {
            at += 1;
            manager.set_enabled(name, want).await
        }
        None => Ok(None),
    };
    let job_at = at;
    let state = match d.job {
        Some(job) => manager
            .run_job(name, job, &work.unit.content)
            .await
            .unwrap_or_else(StateStep::Failed),
        None => d
            .already_ran
            .map_or(StateStep::AsDeclared, StateStep::AlreadyRan),
    };
    let failed_step = if enablement.is_err() {
        Some(enable_at)
    } else if matches!(state, StateStep::Failed(_)) {
        Some(job_at)
    } else {
        None
    };
    let report = summarize(
        id,
        &Steps {
            file,
            enablement,
            state,
        },
    );
    if report.ok {
        tracing::info!(unit = %name, action = %report.action, "unit {name}: {}", report.action);
    } else {
        tracing::warn!(unit = %name, "unit {name}: {}", report.reason.as_deref().unwrap_or(""));
    }
    let mut outcome = Outcome::new(Action::parse(&report.action), report.reason);
    outcome.failed_step = failed_step;
    outcome
}

/// Stop, disable and delete the unit files the host wrote and no longer
/// declares: their outcomes, by unit name.
pub(super) async fn remove_all(tools: &Tools, names: &[String]) -> BTreeMap<String, Outcome> {
    let manager = match &tools.units {
        Ok(manager) => manager,
        Err(missing) => {
            let reason = format!("no longer declared, but cannot be removed: {missing}");
            return names
                .iter()
                .map(|n| (n.clone(), Outcome::failed(reason.clone())))
                .collect();
        }
    };
    if names.is_empty() {
        return BTreeMap::new();
    }
    manager
        .remove(names)
        .await
        .into_iter()
        .map(|report| {
            let mut outcome = if report.ok {
                let mut done = Outcome::new(Action::parse(&report.action), report.reason);
                done.records.push(Record::UnitGone(report.id.clone()));
                done
            } else {
                Outcome::failed_at(0, report.reason.unwrap_or_default())
            };
            outcome.action = Action::parse(if report.ok { "removed" } else { "failed" });
            (report.id, outcome)
        })
        .collect()
}
