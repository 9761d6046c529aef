//! One fire of a scheduled step: open its window, run its container to
//! completion inside a transient unit, close the window whatever happened.
//!
//! The step body runs on a task of its own so that a panic in it is caught
//! and the window still closes; closing runs on another task of its own
//! (see [`Windows::close`]) so that nothing the caller does can cut it short.

use std::sync::Arc;

use tokio::time::Instant;

use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio::sync::{watch, OwnedMutexGuard, Semaphore};

use crate::accounting::{Meter, Usage};
use crate::events::Event;
use crate::mesh_event;
use crate::progress::{Phase, Progress, Reporter};
use crate::runtime::{ContainerInfo, ContainerRuntime, RuntimeError};
use crate::schedule::ended::Ended;
use crate::schedule::forward::{Forwarding, Forwards, Owed};
use crate::schedule::output::fire_name;
use crate::schedule::ready::{is_ready_for, make_in_place, run_spec, Readier};
use crate::schedule::run_end;
use crate::systemd::units::{StepUnit, StepUnits};
use crate::window::{close_budget, CloseReport, OpenError, WindowPlan, Windows};

use crate::schedule::outcome::SKIPPED_FOR_A_WINDOW;
pub use crate::schedule::outcome::{describe, RunOutcome};
pub use crate::schedule::step::StepDef;

/// What one fire did (`run --json`: its keys kebab-case, as in every
/// other document mesh-host prints).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct FireReport {
    /// The step.
    pub step: String,
    /// The due time (or the moment of a manual fire).
    pub due: DateTime<Utc>,
    /// How the run ended.
    pub outcome: RunOutcome,
    /// The transient unit the run was placed in, if any.
    pub unit: Option<String>,
    /// How long the run took.
    pub duration_secs: f64,
    /// Held containers started again.
    pub started_again: Vec<String>,
    /// Held containers that would not start (alerted).
    pub not_started: Vec<String>,
    /// Of `started_again`, those removed during the window and created
    /// again from their declaration.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub recreated: Vec<String>,
    /// Of `started_again`, those whose health check reported `healthy`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub healthy: Vec<String>,
    /// Of `started_again`, those whose health check did not report
    /// `healthy` within the closing budget (`held-unhealthy`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unhealthy: Vec<String>,
    /// What the run used, read from its unit's cgroup (`None`: it did not
    /// run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// How long its window held containers stopped, from its opening to
    /// its close (`None`: no window).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_secs: Option<f64>,
}

impl FireReport {
    /// The step succeeded and every held container runs again (healthy,
    /// when it has a health check).
    pub fn ok(&self) -> bool {
        self.outcome == RunOutcome::Succeeded
            && self.not_started.is_empty()
            && self.unhealthy.is_empty()
    }
}

/// Fires steps: the one path shared by the scheduler and `mesh-host run`.
#[derive(Debug, Clone)]
pub struct Firer {
    runtime: Arc<dyn ContainerRuntime>,
    windows: Windows,
    units: Arc<dyn StepUnits>,
    shutdown: watch::Receiver<bool>,
    readier: Readier,
    /// Fires making and starting their container at once, at most
    /// [`starts_at_once`]: a burst starts together, a few at a time.
    starts: Arc<Semaphore>,
}

/// How many fires may make and start their containers at the same time:
/// twice the CPUs, from 2 to 32. Docker's start of a container is CPU
/// work (its shim and runc processes): given a whole burst at once it
/// shares the CPUs among all of them and every one finishes late; given
/// a few at a time, they finish one after another in about the same total
/// time. On the two-core sandbox node, 4 at a time against 32 halved a
/// burst of 30's median lateness and left its p95 as it was
/// (docs/benchmarks.md).
pub fn starts_at_once() -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cpus * 2).clamp(2, 32)
}

impl Firer {
    /// A firer; `shutdown` turning true stops a running step (its window
    /// still closes).
    pub fn new(
        runtime: Arc<dyn ContainerRuntime>,
        windows: Windows,
        units: Arc<dyn StepUnits>,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        Firer {
            readier: Readier::new(runtime.clone(), units.clone()),
            runtime,
            windows,
            units,
            shutdown,
            starts: Arc::new(Semaphore::new(starts_at_once())),
        }
    }

    /// What makes steps' containers ready ahead of their fires.
    pub fn readier(&self) -> &Readier {
        &self.readier
    }

    /// The window engine.
    pub fn windows(&self) -> &Windows {
        &self.windows
    }

    /// Fire `step` for `due`, wait for it, and report.
    pub async fn fire(&self, step: &StepDef, due: DateTime<Utc>) -> FireReport {
        self.fire_reporting(step, due, &Reporter::none()).await
    }

    /// [`Firer::fire`], telling `progress` of the fire's name and of each
    /// phase as the fire enters it.
    pub async fn fire_reporting(
        &self,
        step: &StepDef,
        due: DateTime<Utc>,
        progress: &Reporter,
    ) -> FireReport {
        let phase = |phase: Phase, detail: Option<String>| {
            progress.send(Progress::Phase {
                step: step.id.clone(),
                phase,
                detail,
            })
        };
        let held = step
            .holds
            .iter()
            .map(|(_, name)| name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let report = self.fire_phases(step, due, progress, &phase, &held).await;
        phase(Phase::Done, None);
        report
    }

    async fn fire_phases(
        &self,
        step: &StepDef,
        due: DateTime<Utc>,
        progress: &Reporter,
        phase: &impl Fn(Phase, Option<String>),
        held: &str,
    ) -> FireReport {
        let started = Instant::now();
        let mut report = FireReport {
            step: step.id.clone(),
            due,
            outcome: RunOutcome::Succeeded,
            unit: None,
            duration_secs: 0.0,
            started_again: Vec::new(),
            not_started: Vec::new(),
            recreated: Vec::new(),
            healthy: Vec::new(),
            unhealthy: Vec::new(),
            usage: None,
            held_secs: None,
        };
        let fire = fire_name(&step.id, due);
        mesh_event!(
            info,
            Event::StepStarted,
            MESH_STEP = %step.id,
            MESH_FIRE = %fire,
            MESH_CONTAINER = %step.spec.name,
            "step {} started (due {})",
            step.id,
            due.to_rfc3339()
        );
        progress.send(Progress::Fire {
            step: step.id.clone(),
            fire: fire.clone(),
        });
        phase(Phase::Preparing, Some(step.spec.name.clone()));
        // Everything a run needs is made before anything is held: its
        // transient unit and its container (ready already, or created
        // now), so that a window's last stop is followed by the start alone.
        let prepared = {
            let _permit = self.starts.acquire().await;
            prepare_run(&*self.runtime, &*self.units, &self.readier, step, due).await
        };
        let prepared = match prepared {
            Ok(p) => p,
            Err(run) => {
                report.outcome = run.outcome;
                report.unit = run.unit;
                return self.finish(step, report, started);
            }
        };
        report.unit = prepared.unit.as_ref().map(|u| u.name.clone());
        if prepared.stopped() {
            // Its unit was stopped already: nothing is held for a step
            // that does not run.
            self.units.end(prepared.unit).await;
            report.outcome = RunOutcome::Stopped { status: None };
            return self.finish(step, report, started);
        }
        let mut window = None;
        let mut held_from = None;
        if !step.holds.is_empty() {
            let plan = WindowPlan {
                step: step.id.clone(),
                module: step.module.clone(),
                fire_time: due,
                step_container: step.spec.name.clone(),
                step_timeout: step.timeout,
                holds: step.holds.clone(),
                hold_specs: step
                    .hold_specs
                    .iter()
                    .map(|spec| (spec.name.clone(), spec.clone()))
                    .collect(),
            };
            phase(Phase::Holding, Some(held.to_string()));
            held_from = Some(Instant::now());
            match self.windows.open(&plan).await {
                Ok(w) => window = Some(w),
                Err(OpenError::Busy { other, container }) => {
                    self.units.end(prepared.unit).await;
                    report.outcome = RunOutcome::Skipped {
                        reason: format!("{SKIPPED_FOR_A_WINDOW}{other} holds {container}"),
                    };
                    return self.finish(step, report, started);
                }
                Err(OpenError::Stop {
                    container,
                    source,
                    closed,
                }) => {
                    self.units.end(prepared.unit).await;
                    absorb(&mut report, &closed);
                    report.outcome = RunOutcome::Error {
                        reason: format!("held container {container} would not stop: {source}"),
                    };
                    return self.finish(step, report, started);
                }
                Err(e) => {
                    self.units.end(prepared.unit).await;
                    report.outcome = RunOutcome::Error {
                        reason: format!("window not opened, nothing stopped: {e}"),
                    };
                    return self.finish(step, report, started);
                }
            }
        }
        phase(Phase::Running, Some(step.spec.name.clone()));
        // Where the runtime keeps the output to itself, it is owed to the
        // journal before the container starts (`forward`).
        let forwarding = Forwarding::owe(
            self.runtime.clone(),
            &Forwards::of(self.windows.store()),
            Owed::new(
                self.windows.owner(),
                &step.id,
                step.module.as_deref(),
                &fire,
                &step.spec.name,
                &step.spec.image,
            ),
        );
        // The body on a task of its own: a panic in it is caught here.
        let body = {
            let (runtime, units, shutdown, step, starts) = (
                self.runtime.clone(),
                self.units.clone(),
                self.shutdown.clone(),
                step.clone(),
                self.starts.clone(),
            );
            tokio::spawn(async move {
                run_step(
                    &*runtime, &*units, shutdown, &step, prepared, &starts, forwarding,
                )
                .await
            })
        };
        // Should this fire unwind, its run must not act on after it: the
        // window is then closed by another (the adopter), which a run still
        // creating or starting its container would race.
        let _run = crate::task::AbortOnDrop::new(&body);
        let ended = match body.await {
            Ok(run) => {
                report.outcome = run.outcome;
                report.unit = run.unit;
                report.usage = run.usage;
                run.ended
            }
            Err(e) => {
                report.outcome = RunOutcome::Error {
                    reason: format!("the step's run panicked: {e}"),
                };
                // The container may run on: it ends before anything held
                // starts again.
                crate::runtime::stop_confirmed(
                    &*self.runtime,
                    &step.spec.name,
                    Instant::now() + close_budget(),
                )
                .await
                .map(|_| ())
            }
        };
        // A bug here leaves the window open with the step ended and no one
        // in this fire to close it (the scheduler hands it over).
        crate::fault::point("panic-in-fire", &step.id);
        if let Some(mut w) = window {
            phase(Phase::Releasing, Some(held.to_string()));
            let closed = match ended {
                Ok(()) => self.windows.close(&mut w).await,
                Err(reason) => self.windows.close_unconfirmed(&mut w, &reason).await,
            };
            absorb(&mut report, &closed);
            report.held_secs = held_from.map(|t| t.elapsed().as_secs_f64());
        }
        self.finish(step, report, started)
    }

    fn finish(&self, step: &StepDef, mut report: FireReport, started: Instant) -> FireReport {
        report.duration_secs = started.elapsed().as_secs_f64();
        let fire = fire_name(&step.id, report.due);
        match &report.outcome {
            RunOutcome::Skipped { reason } => mesh_event!(
                warn,
                Event::StepSkipped,
                MESH_STEP = %step.id,
                MESH_FIRE = %fire,
                MESH_MODULE = step.module.as_deref(),
                "step {} skipped its fire due {}: {reason}",
                step.id,
                report.due.to_rfc3339()
            ),
            outcome => Ended {
                step: &step.id,
                fire: &fire,
                module: step.module.as_deref(),
                exit_status: outcome.exit_status(),
                failure: (*outcome != RunOutcome::Succeeded)
                    .then(|| (outcome.reason(), describe(outcome))),
                duration_secs: report.duration_secs,
                usage: report.usage.as_ref(),
                held: report
                    .started_again
                    .iter()
                    .chain(&report.not_started)
                    .map(String::as_str)
                    .collect(),
                held_secs: report.held_secs,
            }
            .log(),
        }
        report
    }
}

fn absorb(report: &mut FireReport, closed: &CloseReport) {
    report.started_again.extend(closed.started.iter().cloned());
    report.recreated.extend(closed.recreated.iter().cloned());
    report.healthy.extend(closed.healthy.iter().cloned());
    report
        .unhealthy
        .extend(closed.unhealthy.iter().map(|(n, _)| n.clone()));
    report
        .not_started
        .extend(closed.lost.iter().map(|(n, _)| n.clone()));
}

/// How the step body ended.
struct StepRun {
    outcome: RunOutcome,
    /// The transient unit it ran in.
    unit: Option<String>,
    /// `Ok` when the step container is known not to run any more (it
    /// exited, was stopped and confirmed, or never started); otherwise why
    /// that could not be confirmed.
    ended: Result<(), String>,
    /// What it used, when it ran.
    usage: Option<Usage>,
}

/// A run made ready to start: its unit made, its container created inside
/// it, and the step's lock held until the container runs.
struct PreparedRun {
    unit: Option<StepUnit>,
    /// The step's lock ([`Readier::take`]).
    step_lock: OwnedMutexGuard<()>,
    /// The due time of the fire it is for.
    due: DateTime<Utc>,
    /// The container's ID when it was looked at ahead of the due time
    /// ([`crate::schedule::ready::Ahead::container`]): started by that ID,
    /// with no request before.
    looked_at_ahead: Option<String>,
}

impl PreparedRun {
    /// Whether its unit was stopped already (`systemctl stop`).
    fn stopped(&self) -> bool {
        self.unit
            .as_ref()
            .and_then(|u| u.stop_requested.as_ref())
            .is_some_and(|rx| *rx.borrow())
    }
}

/// Make the step's unit and see that its container is created inside it:
/// the ready one when it matches this fire, else made now. A running
/// container means a run is in flight elsewhere, and runs never stack.
/// When the unit was made ahead and the container looked at then, nothing
/// is asked of Docker here: the due second costs the start alone.
async fn prepare_run(
    runtime: &dyn ContainerRuntime,
    units: &dyn StepUnits,
    readier: &Readier,
    step: &StepDef,
    due: DateTime<Utc>,
) -> Result<PreparedRun, StepRun> {
    let name = &step.spec.name;
    let early = |outcome: RunOutcome, unit: Option<String>| StepRun {
        outcome,
        unit,
        ended: Ok(()),
        usage: None,
    };
    let (step_lock, ahead) = readier.take(&step.id, due).await;
    let (made_ahead, looked_at_ahead) = match ahead {
        Some(a) => (a.unit, a.container),
        None => (None, None),
    };
    if looked_at_ahead.is_some() {
        crate::fault::pause("pause-after-unit", &step.id).await;
        tracing::debug!(MESH_STEP = %step.id, "step {}'s container was ready", step.id);
        return Ok(PreparedRun {
            unit: made_ahead,
            step_lock,
            due,
            looked_at_ahead,
        });
    }
    let existing = match runtime.inspect(name).await {
        Ok(Some(info)) if info.running => {
            return Err(early(
                RunOutcome::Skipped {
                    reason: format!("its container {name} is still running"),
                },
                None,
            ))
        }
        Ok(existing) => existing,
        Err(e) => return Err(early(error(format!("cannot inspect {name}: {e}")), None)),
    };
    let begun = match made_ahead {
        Some(unit) => Ok(Some(unit)),
        None => units.begin(&step.id, step.module.as_deref(), due).await,
    };
    let unit: Option<StepUnit> = match begun {
        Ok(u) => u,
        Err(e) => {
            return Err(early(
                error(format!("cannot create the step's transient unit: {e}")),
                None,
            ))
        }
    };
    let unit_name = unit.as_ref().map(|u| u.name.clone());
    crate::fault::pause("pause-after-unit", &step.id).await;
    let parent = unit.as_ref().map(|u| u.cgroup_parent.clone());
    match make_container(runtime, step, existing, parent.as_deref(), due).await {
        Ok(ready) => tracing::debug!(
            MESH_STEP = %step.id,
            "step {}'s container {}",
            step.id,
            if ready { "was ready" } else { "made at its fire" }
        ),
        Err(e) => {
            units.end(unit).await;
            return Err(early(error(e), unit_name));
        }
    }
    Ok(PreparedRun {
        unit,
        step_lock,
        due,
        looked_at_ahead: None,
    })
}

/// See that the step's container, `existing` as last looked at (not
/// running), is one a fire in a unit giving `parent` can start: kept if it
/// is (`true`), else replaced by one made again.
async fn make_container(
    runtime: &dyn ContainerRuntime,
    step: &StepDef,
    existing: Option<ContainerInfo>,
    parent: Option<&str>,
    due: DateTime<Utc>,
) -> Result<bool, String> {
    if existing
        .as_ref()
        .is_some_and(|info| is_ready_for(info, step, parent, due))
    {
        return Ok(true);
    }
    // The last run's, or one made for another unit or declaration: its
    // anonymous volumes are carried to the new one.
    make_in_place(runtime, &run_spec(step, parent, due), existing).await?;
    Ok(false)
}

/// Start the prepared container: by the ID it was looked at ahead under,
/// else by name. When that ID is gone (removed by hand since), the step's
/// container is made again and started by name, unless another of that
/// name runs: runs never stack. (That ID started by hand since is the
/// container made for this fire, in its unit: its run is this fire's.)
async fn start_prepared(
    runtime: &dyn ContainerRuntime,
    step: &StepDef,
    looked_at_ahead: Option<&str>,
    parent: Option<&str>,
    due: DateTime<Utc>,
) -> Result<(), String> {
    let name = &step.spec.name;
    if let Some(id) = looked_at_ahead {
        match runtime.start_and_inspect(id).await {
            Err(RuntimeError::NotFound { .. }) => {
                let existing = match runtime.inspect(name).await {
                    Ok(Some(info)) if info.running => {
                        return Err(format!("{name} was started by another meanwhile"))
                    }
                    Ok(existing) => existing,
                    Err(e) => return Err(format!("cannot inspect {name}: {e}")),
                };
                make_container(runtime, step, existing, parent, due).await?;
            }
            other => return judge_start(other),
        }
    }
    judge_start(runtime.start_and_inspect(name).await)
}

/// A start request's answer and the inspection after it, judged.
fn judge_start(answer: Result<Option<ContainerInfo>, RuntimeError>) -> Result<(), String> {
    match answer {
        Ok(Some(info)) if !info.running && info.started_at.is_none() => Err(format!(
            "accepted but not running afterwards (status {})",
            info.status
        )),
        // Running, already exited, or (auto-removed) already gone.
        Ok(_) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// Start the prepared container and run it to completion.
async fn run_step(
    runtime: &dyn ContainerRuntime,
    units: &dyn StepUnits,
    mut shutdown: watch::Receiver<bool>,
    step: &StepDef,
    prepared: PreparedRun,
    starts: &Semaphore,
    mut forwarding: Forwarding,
) -> StepRun {
    let name = &step.spec.name;
    let PreparedRun {
        mut unit,
        step_lock,
        due: prepared_due,
        looked_at_ahead,
    } = prepared;
    let unit_name = unit.as_ref().map(|u| u.name.clone());
    let parent = unit.as_ref().map(|u| u.cgroup_parent.clone());
    let stop_requested = unit.as_mut().and_then(|u| u.stop_requested.take());
    // The fire's unit stopped before its container started (while the
    // window opened), as its watch says or systemd, asked now: the step
    // does not run (see `run_end`).
    let look = unit.as_ref().map(StepUnit::look);
    if run_end::stopped_before_start(units, look, &stop_requested).await {
        drop(step_lock);
        forwarding.abandon();
        units.end(unit).await;
        tracing::warn!(
            MESH_STEP = %step.id,
            "the unit of {name} was stopped before its container started: the step does not run"
        );
        return StepRun {
            outcome: RunOutcome::Stopped { status: None },
            unit: unit_name,
            ended: Ok(()),
            usage: None,
        };
    }
    // From here a removal of the unit is the run's own end, not a stop.
    if let Some(unit) = &unit {
        unit.starting();
    }
    let meter = Meter::start(
        unit.as_ref().and_then(|u| u.control_group.as_deref()),
        unit.as_ref().and_then(|u| u.holder_pid),
    );
    // The container is known `created` (looked at or made under the
    // step's lock): one start request, judged by one inspection after it.
    let started = {
        let _permit = starts.acquire().await;
        start_prepared(
            runtime,
            step,
            looked_at_ahead.as_deref(),
            parent.as_deref(),
            prepared_due,
        )
        .await
    };
    drop(step_lock);
    if let Err(e) = started {
        forwarding.abandon();
        units.end(unit).await;
        // A start that did not answer may still have started it.
        let ended = crate::runtime::stop_confirmed(runtime, name, Instant::now() + close_budget())
            .await
            .map(|_| ());
        return StepRun {
            outcome: error(format!("cannot start {name}: {e}")),
            unit: unit_name,
            ended,
            usage: None,
        };
    }
    // A stop that landed in the instant before the start: the container
    // is ended at once (see `run_end`).
    if let Some((status, ended)) =
        run_end::stopped_as_it_started(runtime, &stop_requested, name, &step.id).await
    {
        forwarding.follow();
        // Read while the unit still holds its cgroup.
        let usage = meter
            .finish_run(runtime, name, None, step.spec.process.memory)
            .await;
        units.end(unit).await;
        forwarding.finish().await;
        return StepRun {
            outcome: RunOutcome::Stopped { status },
            unit: unit_name,
            ended,
            usage: Some(usage),
        };
    }
    forwarding.follow();
    units.started(&mut unit).await;
    // The worst moment for a bug: the window open, the step running.
    crate::fault::point("panic-in-step-run", &step.id);
    let (mut outcome, exited) =
        run_end::wait_run(runtime, &mut shutdown, stop_requested, name, step.timeout).await;
    // Read while the unit still holds its cgroup.
    let exit = outcome.exit_status().filter(|_| exited);
    let usage = meter
        .finish_run(runtime, name, exit, step.spec.process.memory)
        .await;
    units.end(unit).await;
    forwarding.finish().await;
    if let (Some(true), RunOutcome::Exited { status }) = (usage.oom_killed, &outcome) {
        outcome = RunOutcome::OomKilled { status: *status };
    }
    // Unless it was seen exiting, the step container is confirmed stopped
    // (or gone) before the window may close: retried while the runtime
    // does not answer, within the closing budget.
    let ended = if exited {
        Ok(())
    } else {
        crate::runtime::stop_confirmed(runtime, name, Instant::now() + close_budget())
            .await
            .map(|_| ())
    };
    StepRun {
        outcome,
        unit: unit_name,
        ended,
        usage: Some(usage),
    }
}

fn error(reason: String) -> RunOutcome {
    RunOutcome::Error { reason }
}
