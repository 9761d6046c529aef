//! A service's replacement gated on its health (CONTRACT, "Updates and
//! rollback").
//!
//! The replacement is recorded ([`crate::apply::rollouts`]) before the
//! old container is stopped; the old one is set aside (stopped, renamed
//! `<name>.replaced`, holding its volumes) and the new one made and
//! started as in any replace, but the old one is removed only once the
//! new one is `healthy`. Not healthy within its check's start period plus
//! `rollback-after` (or `unhealthy` by its check's own verdict, or not
//! started at all): the refusal of that definition is recorded first,
//! then the new container is removed and the old one renamed back and
//! started. A container whose inspection shows no health check (neither
//! declared nor the image's) is kept at once, as before.
//!
//! A kill at any point leaves the next apply what to finish
//! (`decide/services.rs`): the rollout record and both containers — the
//! new one judged again with what is left of its bound; the refusal and
//! the old one set aside alone — put back.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::super::plan::ServiceWork;
use super::super::report::Action;
use super::super::rollouts::{self, Refused, Rollout};
use super::outcome::{Outcome, Record};
use super::tools::Tools;
use crate::events::Event;
use crate::progress::Progress;
use crate::runtime::{
    kept_volumes_note, put_back, remove_replaced, replace_keeping_aside, replaced_name, VolumeMount,
};

/// Between two looks at the new container.
const POLL: Duration = Duration::from_millis(500);

/// The most of a probe's output a report line, an event and a refusal
/// carry.
const MOST_OUTPUT: usize = 200;

/// What judging the new container came to.
enum Verdict {
    /// Healthy after this long.
    Healthy(Duration),
    /// Its inspection shows no health check: nothing to wait for.
    NoCheck,
    /// Not healthy: why (`not healthy after 90 s: <last output>`).
    NotHealthy(String),
}

/// Replace `from` (the container under the service's name, or one an
/// interrupted replace set aside) by `work`'s container, gated on its
/// health; `reason` says why it is replaced, `act_at` is the plan's step
/// of the replace (the wait is the next).
pub(super) async fn replace(
    tools: &Tools,
    work: &ServiceWork,
    after: Duration,
    from: &str,
    reason: String,
    act_at: usize,
) -> Outcome {
    let name = work.name.as_str();
    let rollout = Rollout {
        id: work.id.clone(),
        identity: work.built.identity.clone(),
        started: Utc::now(),
        rollback_after: after.as_secs(),
    };
    if let Err(e) = rollouts::begin(&tools.store, name, &rollout) {
        return Outcome::failed_at(act_at, format!("must be recreated ({reason}) but {e}"));
    }
    let old = match tools.runtime.inspect(from).await {
        Ok(Some(old)) => old,
        Ok(None) => {
            rollouts::end(&tools.store, name);
            return Outcome::failed_at(
                act_at,
                format!("must be recreated ({reason}) but {from} is gone"),
            );
        }
        Err(e) => {
            rollouts::end(&tools.store, name);
            return Outcome::failed_at(
                act_at,
                format!("must be recreated ({reason}) but cannot inspect {from}: {e}"),
            );
        }
    };
    let replaced = match replace_keeping_aside(&*tools.runtime, &work.built.spec, &old).await {
        Ok(replaced) => replaced,
        Err(e) => {
            // Nothing made: the old one is back under its name (or still
            // set aside, where the next create finds it).
            rollouts::end(&tools.store, name);
            return Outcome::failed_at(act_at, format!("must be recreated ({reason}) but {e}"));
        }
    };
    crate::fault::pause("pause-before-judging", name).await;
    // The plan lists the wait after the replace.
    let wait_at = act_at + usize::from(work.gate().is_some());
    if let Err(e) = tools.runtime.start(name).await {
        let why = format!("would not start: {e}");
        return roll_back(tools, work, why, wait_at).await;
    }
    judge_and_finish(tools, work, &rollout, reason, &replaced.kept, wait_at).await
}

/// Finish a replacement a kill interrupted while the new container was
/// judged: judged again with what is left of its bound.
pub(super) async fn resume(tools: &Tools, work: &ServiceWork, rollout: &Rollout) -> Outcome {
    tracing::info!(
        "the health-gated recreate of {} was interrupted (begun {}): judging it again",
        work.name,
        crate::render::time(rollout.started)
    );
    let reason = "an interrupted health-gated recreate is finished".to_string();
    judge_and_finish(tools, work, rollout, reason, &[], 0).await
}

/// Finish a roll back a kill interrupted after the new container was
/// removed: the old one, set aside as `aside`, is renamed back and started.
pub(super) async fn finish_put_back(
    tools: &Tools,
    work: &ServiceWork,
    aside: &str,
    remove_new: bool,
) -> Outcome {
    let name = work.name.as_str();
    let put = if remove_new {
        put_back(&*tools.runtime, name).await
    } else {
        match tools.runtime.rename(aside, name).await {
            Ok(()) => tools.runtime.start(name).await.map_err(|e| e.to_string()),
            Err(e) => Err(format!("cannot rename {aside} back to {name}: {e}")),
        }
    };
    rollouts::end(&tools.store, name);
    match put {
        Ok(()) => Outcome::failed_at(
            0,
            format!(
                "an interrupted roll back is finished: {name} runs its previous definition again"
            ),
        ),
        Err(e) => Outcome::failed_at(0, format!("an interrupted roll back could not finish: {e}")),
    }
}

async fn judge_and_finish(
    tools: &Tools,
    work: &ServiceWork,
    rollout: &Rollout,
    reason: String,
    kept: &[VolumeMount],
    wait_at: usize,
) -> Outcome {
    let name = work.name.as_str();
    match judge(tools, work, rollout).await {
        Verdict::NotHealthy(why) => roll_back(tools, work, why, wait_at).await,
        verdict => {
            remove_replaced(&*tools.runtime, name).await;
            rollouts::end(&tools.store, name);
            // Without a check it was replaced as it always was: said so.
            let said = match verdict {
                Verdict::Healthy(took) => format!("{reason}; healthy after {} s", took.as_secs()),
                _ => reason,
            };
            let said = match kept_volumes_note(kept) {
                Some(note) => format!("{said}; {note}"),
                None => said,
            };
            let mut outcome = Outcome::new(Action::Recreated, Some(said));
            outcome.records.push(Record::Inputs(
                name.to_string(),
                Arc::clone(&work.built),
                work.id.clone(),
            ));
            outcome.records.push(Record::Recreated(name.to_string()));
            outcome
        }
    }
}

/// Wait for the new container to be healthy, until its check's start
/// period plus `rollback-after` past the start of the replacement.
async fn judge(tools: &Tools, work: &ServiceWork, rollout: &Rollout) -> Verdict {
    let name = work.name.as_str();
    tools.progress.send(Progress::Waiting {
        id: Some(work.id.clone()),
        on: format!(
            "{name} to be healthy (put back if not within {} s past its start period)",
            rollout.rollback_after
        ),
    });
    let mut last = String::new();
    let mut first = true;
    loop {
        let elapsed = elapsed_since(rollout.started);
        let mut bound = rollout.rollback_after();
        match tools.runtime.inspect(name).await {
            Ok(None) => return Verdict::NotHealthy(format!("{name} is gone")),
            Ok(Some(info)) => match info.health {
                // Docker shows a check's state from the start; a declared
                // one is waited for whatever the first look says.
                None if first && !work.health_declared => return Verdict::NoCheck,
                None => {}
                Some(health) => {
                    bound += health.start_period;
                    if !health.last_output.is_empty() {
                        last = health.last_output;
                    }
                    match health.status.as_str() {
                        "healthy" => return Verdict::Healthy(elapsed),
                        "unhealthy" => return Verdict::NotHealthy(not_healthy(elapsed, &last)),
                        _ => {}
                    }
                }
            },
            // The runtime away: looked at again until the bound.
            Err(e) => tracing::warn!("cannot inspect {name} to judge its health: {e}"),
        }
        first = false;
        if elapsed >= bound {
            return Verdict::NotHealthy(not_healthy(elapsed, &last));
        }
        tokio::time::sleep(POLL).await;
    }
}

fn elapsed_since(started: DateTime<Utc>) -> Duration {
    (Utc::now() - started).to_std().unwrap_or_default()
}

fn not_healthy(after: Duration, output: &str) -> String {
    let shown = shown_output(output);
    if shown.is_empty() {
        format!("not healthy after {} s", after.as_secs())
    } else {
        format!("not healthy after {} s: {shown}", after.as_secs())
    }
}

/// A probe's output as a line may carry it: at most [`MOST_OUTPUT`]
/// characters, control characters escaped (`\n`, `\u{1b}`), so that it
/// can neither break a report line nor drive a terminal.
pub(crate) fn shown_output(output: &str) -> String {
    let mut shown = String::new();
    for (n, c) in output.trim().chars().enumerate() {
        if n == MOST_OUTPUT {
            shown.push('…');
            break;
        }
        if c.is_control() {
            shown.extend(c.escape_default());
        } else {
            shown.push(c);
        }
    }
    shown
}

/// Put the old container back for `why`: the refusal recorded first (so
/// that a kill from here on finishes the roll back, never retries), the
/// alert raised, then the new one removed and the old one renamed back
/// and started.
async fn roll_back(tools: &Tools, work: &ServiceWork, why: String, at: usize) -> Outcome {
    let name = work.name.as_str();
    let id = work.id.as_str();
    let refused = Refused {
        id: id.to_string(),
        identity: work.built.identity.clone(),
        image: work.built.spec.image.clone(),
        reason: why.clone(),
        at: Utc::now(),
    };
    if let Err(e) = rollouts::refuse(&tools.store, name, &refused) {
        tracing::error!("{e}: the next apply may try this definition again");
    }
    let put = put_back(&*tools.runtime, name).await;
    if put.is_ok() {
        rollouts::end(&tools.store, name);
    }
    let message = match &put {
        Ok(()) => format!("rolled back: {id} ({why}); {name} runs its previous definition again"),
        Err(e) => format!(
            "rolled back: {id} ({why}); putting {} back failed: {e}",
            replaced_name(name)
        ),
    };
    crate::mesh_alert_of!(
        Event::RolloutRolledBack,
        MESH_CONTAINER = %name,
        "{message}"
    );
    let alert = crate::window::alerts::Alert {
        event: Event::RolloutRolledBack.name().to_string(),
        at: refused.at,
        step: None,
        container: Some(name.to_string()),
        message: message.clone(),
    };
    let store = tools.store.clone();
    if let Err(e) =
        tokio::task::spawn_blocking(move || crate::window::alerts::record(&store, alert)).await
    {
        tracing::error!("cannot record the alert for status: {e}");
    }
    let reason = match put {
        Ok(()) => format!("rolled back: {why}; the previous container runs again"),
        Err(e) => format!("rolled back: {why}; but {e}"),
    };
    Outcome::failed_at(at, reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_output_is_bounded_and_its_control_characters_escaped() {
        assert_eq!(shown_output("  ok\n"), "ok");
        assert_eq!(shown_output("a\nb\x1b[2J"), "a\\nb\\u{1b}[2J");
        let long = "x".repeat(500);
        let shown = shown_output(&long);
        assert_eq!(shown.chars().count(), MOST_OUTPUT + 1);
        assert!(shown.ends_with('…'));
        assert_eq!(
            not_healthy(Duration::from_secs(90), "boom"),
            "not healthy after 90 s: boom"
        );
        assert_eq!(
            not_healthy(Duration::from_secs(3), ""),
            "not healthy after 3 s"
        );
    }
}
