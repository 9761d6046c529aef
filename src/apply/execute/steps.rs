//! Run-once steps run to completion, and scheduled steps handed to the
//! scheduler, as decided.
//!
//! A run-once step replaces its last run's container (carrying its
//! volumes), starts the new one and waits for it within its `timeout`;
//! one that outlives it is stopped. Exit status 0 is `ran`; anything else
//! fails the step, and the apply halts there. Its output goes to the
//! journal as a step's does, under a name of this run.

use std::time::Duration;

use tokio::time::Instant;

use super::super::plan::{Decision, RunOnceWork, ScheduleWork};
use super::super::pull::Ensured;
use super::super::report::Action;
use super::outcome::{Outcome, Record};
use super::services;
use super::tools::Tools;
use crate::progress::Progress;
use crate::runtime::stop_run;
use crate::schedule::forward::{Forwarding, Forwards, Owed};
use crate::schedule::output::{run_once_name, to_journal};

/// Run a run-once step to completion.
pub(super) async fn run_once(tools: &Tools, id: &str, work: &RunOnceWork) -> Outcome {
    tools.progress.send(Progress::Waiting {
        id: Some(id.to_string()),
        on: format!("running {} to completion", work.name),
    });
    let run_at = usize::from(work.pull.is_some());
    match run_to_completion(tools, id, work).await {
        Ok(took) => {
            let reason = format!("exit status 0 in {:.1}s", took.as_secs_f64());
            Outcome::new(Action::Ran, Some(reason))
        }
        Err((at_pull, exit_status, reason)) => {
            let step = if at_pull { 0 } else { run_at };
            let mut outcome = Outcome::failed_at(step, reason);
            outcome.records.push(Record::ExitStatus(exit_status));
            outcome
        }
    }
}

/// Replace the previous run's container, start, wait (within the
/// timeout). `Err` holds whether the pull failed, the exit status (when
/// it ran) and the reason.
async fn run_to_completion(
    tools: &Tools,
    id: &str,
    work: &RunOnceWork,
) -> Result<Duration, (bool, Option<i64>, String)> {
    let name = work.name.as_str();
    let ensured = tools
        .puller
        .lock()
        .await
        .ensure(&work.built.spec.image)
        .await;
    ensured.map_err(|e| (work.pull.is_some(), None, format!("image: {e}")))?;
    let began = Instant::now();
    // Its output goes to the journal as a step's does, under a name of
    // this run (it has no unit of its own).
    let mut spec = crate::runtime::ContainerSpec::clone(&work.built.spec);
    let run = run_once_name(id, chrono::Utc::now());
    to_journal(&mut spec, id, &run);
    // Where the runtime keeps the output to itself, it is owed to the
    // journal before the container starts (schedule/forward.rs).
    let mut forwarding = Forwarding::owe(
        tools.runtime.clone(),
        &Forwards::of(&tools.store),
        Owed::new(
            &tools.owner,
            id,
            work.module.as_deref(),
            &run,
            name,
            &spec.image,
        ),
    );
    if let Err(e) = services::make(&*tools.runtime, &spec, work.from.as_deref()).await {
        forwarding.abandon();
        return Err((false, None, e.to_string()));
    }
    forwarding.follow();
    let runtime = tools.runtime.clone();
    let waited = match work.timeout {
        Some(limit) => tokio::time::timeout(limit, runtime.wait_exit(name))
            .await
            .ok(),
        None => Some(runtime.wait_exit(name).await),
    };
    forwarding.finish().await;
    match waited {
        Some(Ok(0)) => Ok(began.elapsed()),
        Some(Ok(status)) => Err((false, Some(status), format!("exit status {status}"))),
        Some(Err(e)) => Err((false, None, format!("lost track of {name}: {e}"))),
        None => {
            let limit = work.timeout.unwrap_or_default().as_secs();
            let status = stop_run(&*runtime, name).await;
            let shown = status.map_or("unknown".to_string(), |s| s.to_string());
            Err((
                false,
                status,
                format!("timed out after {limit}s and was stopped (exit status {shown})"),
            ))
        }
    }
}

/// Hand a scheduled step to the scheduler, its image made present first
/// when it is not. Never fails the apply.
pub(super) async fn schedule(tools: &Tools, work: ScheduleWork, decision: &Decision) -> Outcome {
    let ScheduleWork {
        step, pull, alike, ..
    } = work;
    let mut outcome = match pull {
        None => Outcome::new(decision.line.action.clone(), decision.line.reason.clone()),
        Some(image) => {
            let action = Action::Installed;
            match tools.puller.lock().await.ensure(&image).await {
                Ok(Ensured::Pulled) => Outcome::new(action, Some("image pulled".to_string())),
                Ok(Ensured::Present) if alike => Outcome::new(Action::Unchanged, None),
                Ok(Ensured::Present) => Outcome::new(action, None),
                Err(e) => {
                    let mut outcome = Outcome::new(
                        action,
                        Some(format!(
                            "its image is not present and could not be pulled (tried again at the next apply): {e}"
                        )),
                    );
                    outcome.failed_step = Some(0);
                    outcome
                }
            }
        }
    };
    outcome.records.push(Record::Step(step));
    outcome
}
