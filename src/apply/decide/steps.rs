//! Run-once and scheduled steps decided.
//!
//! A run-once step runs at every apply, to completion, at its place in
//! the declaration: its decision is that run (carrying the last run's
//! volumes), and a step that cannot run (its listing, its build) halts
//! the apply there as a failing run does. What it does to the machine
//! cannot be known before it runs: the executor decides again what
//! follows it once it ran (docs/apply.md, "Preview").
//!
//! A scheduled step is installed, never run: handed to the scheduler,
//! its image made present first. One the last apply installed declared
//! exactly alike, its image present, is `unchanged`. One that cannot be
//! installed is reported and fails nothing (CONTRACT "Apply").

use super::super::plan::{Decision, Kind, RunOnceWork, ScheduleWork, Slot, Work};
use super::super::report::{Action, ReportLine};
use super::context::Context;
use crate::declaration::{Container, Resource, Role, Step};
use crate::runtime::{replaced_name, LABEL_RESOURCE};
use crate::schedule::kept::KeptStep;
use crate::schedule::step::scheduled_step;

/// A run-once step's run.
pub(super) async fn run_once(
    d: &mut Context<'_>,
    slot: Slot,
    res: &Resource,
    c: &Container,
) -> Decision {
    let id = res.id.as_str();
    let name = c.name.as_str();
    let decided = |action, reason: String, work| {
        Decision::new(
            slot.clone(),
            Kind::RunOnce,
            ReportLine::new(id, action, Some(reason)),
            work,
        )
    };
    if let Some(why) = d.facts.held.get(name) {
        return decided(Action::HeldStill, why.clone(), Work::Nothing);
    }
    let built = match d.builds.build(res, c) {
        Ok(built) => built,
        Err(e) => return decided(Action::Failed, e.reason, Work::Halt),
    };
    // The previous run's container, or one an interrupted replace set
    // aside: the new run carries its anonymous volumes.
    let from = match &d.facts.listing {
        Ok(listing) if listing.contains_key(name) => Some(name.to_string()),
        Ok(listing) => listing
            .get(&replaced_name(name))
            .filter(|s| !s.running && s.labels.get(LABEL_RESOURCE) == Some(&res.id.to_string()))
            .map(|s| s.name.clone()),
        Err(e) => {
            let reason = format!("cannot list the managed containers: {e}");
            return decided(Action::Failed, reason, Work::Halt);
        }
    };
    d.replacing.insert(name.to_string());
    let pull = if d.image_present(&built.spec.image).await {
        None
    } else {
        Some(built.spec.image.clone())
    };
    let work = RunOnceWork {
        name: name.to_string(),
        built,
        module: res.module.as_deref().map(str::to_string),
        pull,
        from,
        timeout: c.timeout,
        healthy_first: super::super::depends::healthy_first(d.decl, c),
    };
    decided(
        Action::Ran,
        format!("{name} runs to completion"),
        Work::RunOnce(Box::new(work)),
    )
}

/// A scheduled step: handed to the scheduler with its image present.
pub(super) async fn scheduled(
    d: &mut Context<'_>,
    slot: Slot,
    res: &Resource,
    c: &Container,
) -> Decision {
    let id = res.id.as_str();
    let decided = |action, reason: Option<String>, work| {
        Decision::new(
            slot.clone(),
            Kind::Scheduled,
            ReportLine::new(id, action, reason),
            work,
        )
    };
    let Role::Scheduled(schedule) = &c.role else {
        let reason = "not found among the scheduled steps".to_string();
        return decided(Action::Failed, Some(reason), Work::Nothing);
    };
    let step = Step {
        resource: res,
        container: c,
        schedule,
    };
    let step = match scheduled_step(&d.builds, &step, &d.facts.machine) {
        Ok(step) => step,
        Err(e) => {
            // Reported, but never fails the apply (CONTRACT "Apply").
            let reason = format!("schedule not installed: {}", e.reason);
            let mut decision = decided(Action::Failed, Some(reason), Work::Nothing);
            decision.harmless = true;
            return decision;
        }
    };
    let alike = declared_alike_before(d, res);
    let pull = if d.image_present(c.image.as_str()).await {
        None
    } else {
        Some(c.image.as_str().to_string())
    };
    let (action, reason) = match (&pull, alike) {
        (Some(_), _) => (Action::Installed, Some("image pulled".to_string())),
        (None, true) => (Action::Unchanged, None),
        (None, false) => (Action::Installed, None),
    };
    let work = Work::Schedule(ScheduleWork {
        // Packed at once: the steps of a large declaration are never all
        // built at the same time.
        step: Box::new(KeptStep::packed(step)),
        pull,
        installs: !alike,
        alike,
    });
    decided(action, reason, work)
}

/// Whether the last apply installed step `res` declared exactly as now.
///
/// Only this resource is serialised: its canonical JSON is the same
/// alone as within the whole declaration's, and serialising the whole
/// declaration per step cost O(steps × resources).
fn declared_alike_before(d: &Context<'_>, res: &Resource) -> bool {
    let Some(before) = d.facts.step_before(res.id.as_str()) else {
        return false;
    };
    crate::apply::recorded::canonical(res)
        .is_ok_and(|now| crate::apply::recorded::alike(&now, before))
}
