//! A service's replacement gated on its health (CONTRACT, "Updates and
//! rollback").
//!
//! The replacement is recorded ([`crate::apply::rollouts`]) before the
//! old container is stopped; the old one is set aside (stopped, renamed
//! `<name>.replaced`, holding its volumes) and the new one made and
//! started as in any replace, but the old one is removed only once the
//! new one is `healthy`. Not healthy within its check's start period plus
//! `rollback-after` of its own run (counted from its start, so that time
//! spent before it ran — the old one's stop, a kill, a power cut — is
//! never held against it), or `unhealthy` by its check's own verdict, or not
//! started at all): the refusal of that definition is recorded first,
//! then the new container is removed and the old one renamed back and
//! started. A container whose inspection shows no health check (neither
//! declared nor the image's) is kept at once, as before.
//!
//! A kill at any point leaves the next apply what to finish
//! (`decide/services.rs`): the rollout record and both containers — the
//! new one judged again with what is left of its bound if it ran all
//! along, with a whole bound if it is started now; the refusal and
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
    crate::fault::pause("pause-after-recording", name).await;
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
    let since = Utc::now();
    if let Err(e) = tools.runtime.start(name).await {
        let why = format!("would not start: {e}");
        let refused = refusal(
            work,
            &work.built.identity,
            work.built.spec.image.clone(),
            why,
        );
        return roll_back(tools, work, refused, wait_at).await;
    }
    judge_and_finish(tools, work, (since, after), reason, &replaced.kept, wait_at).await
}

/// Finish a replacement a kill interrupted while the new container was
/// judged (or made and not yet started): judged again ([`judge_again`]).
pub(super) async fn resume(tools: &Tools, work: &ServiceWork, rollout: &Rollout) -> Outcome {
    let reason = "an interrupted health-gated recreate is finished".to_string();
    match judge_again(tools, work, rollout).await {
        Verdict::NotHealthy(why) => {
            let refused = refusal(work, &rollout.identity, work.built.spec.image.clone(), why);
            roll_back(tools, work, refused, 0).await
        }
        verdict => keep_new(tools, work, reason, verdict, &[]).await,
    }
}

/// How an interrupted replacement was settled before the declaration's
/// newer definition replaces what stands.
pub(super) enum Settled {
    /// The new container kept (healthy, or it has no check): what is said.
    Kept(String),
    /// It was not healthy: the old one is back and runs; what is said.
    PutBack(String),
    /// The old one could not be put back: nothing more is done.
    Failed(String),
}

/// Settle a replacement a kill interrupted, whose definition the
/// declaration no longer asks for: the new container judged with what is
/// left of its bound, and kept, or refused and the old one put back. Only
/// then may it be replaced by what is declared now: a replace with the old
/// one still set aside would take it for a leftover and remove it.
pub(super) async fn settle(tools: &Tools, work: &ServiceWork, rollout: &Rollout) -> Settled {
    let name = work.name.as_str();
    match judge_again(tools, work, rollout).await {
        Verdict::NotHealthy(why) => {
            // The refused definition is the one in flight, not the one
            // declared now: its identity and image are the container's.
            let image = match tools.runtime.inspect(name).await {
                Ok(Some(info)) => info.image,
                _ => "(unknown)".to_string(),
            };
            let refused = refusal(work, &rollout.identity, image, why.clone());
            match refuse_and_put_back(tools, work, refused).await {
                Ok(()) => Settled::PutBack(format!(
                    "the interrupted recreate was rolled back first ({why})"
                )),
                Err(e) => Settled::Failed(format!(
                    "an interrupted recreate was rolled back ({why}) but {e}: {name} is left \
                     as it is"
                )),
            }
        }
        verdict => {
            remove_replaced(&*tools.runtime, name).await;
            rollouts::end(&tools.store, name);
            Settled::Kept(match verdict {
                Verdict::Healthy(took) => format!(
                    "the interrupted recreate was finished first (healthy after {} s)",
                    took.as_secs()
                ),
                _ => "the interrupted recreate was finished first".to_string(),
            })
        }
    }
}

/// Judge the new container of an interrupted replacement. Found running,
/// it has what is left of its bound, counted from the start the runtime
/// reports (a kill of the apply leaves it running and judged; a power cut
/// has it started again at boot by its restart policy, its bound whole
/// again). Found stopped or only made (a kill before its start, a runtime
/// that starts nothing at boot), it is started now and given its whole
/// bound: it never had a chance to prove itself, however long ago the
/// replacement began.
async fn judge_again(tools: &Tools, work: &ServiceWork, rollout: &Rollout) -> Verdict {
    let name = work.name.as_str();
    tracing::info!(
        "the health-gated recreate of {name} was interrupted (begun {}): judging it again",
        crate::render::time(rollout.started)
    );
    let since = match tools.runtime.inspect(name).await {
        Ok(Some(info)) if info.running => run_began(info.started_at.as_deref(), rollout),
        _ => {
            let now = Utc::now();
            if let Err(e) = tools.runtime.start(name).await {
                return Verdict::NotHealthy(format!("would not start: {e}"));
            }
            now
        }
    };
    judge(tools, work, since, rollout.rollback_after()).await
}

/// When a running new container's run began, from which its bound counts:
/// the start its runtime reports, never before the replacement began (a
/// clock set back); unknown, now (a whole bound rather than a roll back of
/// what may be healthy).
fn run_began(started_at: Option<&str>, rollout: &Rollout) -> DateTime<Utc> {
    match started_at.and_then(|t| DateTime::parse_from_rfc3339(t).ok()) {
        Some(t) => t.with_timezone(&Utc).max(rollout.started),
        None => Utc::now(),
    }
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
    match put_back_interrupted(tools, work, aside, remove_new).await {
        Ok(()) => Outcome::failed_at(
            0,
            format!(
                "an interrupted roll back is finished: {name} runs its previous definition again"
            ),
        ),
        Err(e) => Outcome::failed_at(0, format!("an interrupted roll back could not finish: {e}")),
    }
}

/// The runtime's part of [`finish_put_back`]: the refused one removed
/// (`remove_new`), the one set aside as `aside` renamed back and started.
/// The refusal stays: should this fail, the next apply puts it back again.
pub(super) async fn put_back_interrupted(
    tools: &Tools,
    work: &ServiceWork,
    aside: &str,
    remove_new: bool,
) -> Result<(), String> {
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
    put
}

async fn judge_and_finish(
    tools: &Tools,
    work: &ServiceWork,
    (since, after): (DateTime<Utc>, Duration),
    reason: String,
    kept: &[VolumeMount],
    wait_at: usize,
) -> Outcome {
    match judge(tools, work, since, after).await {
        Verdict::NotHealthy(why) => {
            let refused = refusal(
                work,
                &work.built.identity,
                work.built.spec.image.clone(),
                why,
            );
            roll_back(tools, work, refused, wait_at).await
        }
        verdict => keep_new(tools, work, reason, verdict, kept).await,
    }
}

/// The new container proved itself (or has no check): the old one is
/// removed (its volumes stay) and the replacement is over.
async fn keep_new(
    tools: &Tools,
    work: &ServiceWork,
    reason: String,
    verdict: Verdict,
    kept: &[VolumeMount],
) -> Outcome {
    let name = work.name.as_str();
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

/// Wait for the new container to be healthy, until its check's start
/// period plus `after` (its `rollback-after`) past `since`, when its run
/// began.
async fn judge(
    tools: &Tools,
    work: &ServiceWork,
    since: DateTime<Utc>,
    after: Duration,
) -> Verdict {
    let name = work.name.as_str();
    tools.progress.send(Progress::Waiting {
        id: Some(work.id.clone()),
        on: format!(
            "{name} to be healthy (put back if not within {} s past its start period)",
            after.as_secs()
        ),
    });
    let mut last = String::new();
    let mut first = true;
    loop {
        let elapsed = elapsed_since(since);
        let mut bound = after;
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

/// The refusal of definition `identity` (of `image`) of `work`'s
/// container, for `why`.
fn refusal(work: &ServiceWork, identity: &str, image: String, why: String) -> Refused {
    Refused {
        id: work.id.clone(),
        identity: identity.to_string(),
        image,
        reason: why,
        at: Utc::now(),
    }
}

/// Put the old container back for `refused`'s reason, as the line of
/// `work` failed at step `at`.
async fn roll_back(tools: &Tools, work: &ServiceWork, refused: Refused, at: usize) -> Outcome {
    let why = refused.reason.clone();
    let reason = match refuse_and_put_back(tools, work, refused).await {
        Ok(()) => format!("rolled back: {why}; the previous container runs again"),
        Err(e) => format!("rolled back: {why}; but {e}"),
    };
    Outcome::failed_at(at, reason)
}

/// Put the old container back: the refusal recorded first (so that a
/// kill from here on finishes the roll back, never retries), the alert
/// raised, then the new one removed and the old one renamed back and
/// started.
async fn refuse_and_put_back(
    tools: &Tools,
    work: &ServiceWork,
    refused: Refused,
) -> Result<(), String> {
    let name = work.name.as_str();
    let id = work.id.as_str();
    let why = refused.reason.clone();
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
        message,
    };
    let store = tools.store.clone();
    if let Err(e) =
        tokio::task::spawn_blocking(move || crate::window::alerts::record(&store, alert)).await
    {
        tracing::error!("cannot record the alert for status: {e}");
    }
    put
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
