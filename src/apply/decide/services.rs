//! Service containers decided from the one listing of managed containers:
//! its labels (`mesh-host.identity`, `mesh-host.record`, ...) and running
//! state say everything needed, so no container is inspected.
//!
//! | found | decided |
//! |---|---|
//! | held by a live window (or a window's step container) | `held-still`, nothing done |
//! | no container by that name | pulled if absent, created, started: `created` |
//! | older record format | replaced: `recreated: made by an older record format` |
//! | other identity | replaced: `recreated: <what changed>` |
//! | same identity, running | `unchanged` (or `started` after a stop and start for `restart-on`) |
//! | same identity, stopped | started: `started` |
//!
//! Its identity is judged against what the plan will have written by the
//! time it is made (a file resource before it writes its env-file: the
//! recreate the write causes is decided here, with its reason).

use super::super::plan::{Decision, Kind, ServiceAct, ServiceWork, Slot, Work};
use super::super::report::{Action, ReportLine};
use super::super::rollouts::Refused;
use super::context::Context;
use crate::container_spec::{
    BuiltContainer, LABEL_IDENTITY, LABEL_RECORD, LABEL_ROLE, RECORD_FORMAT,
};
use crate::declaration::depends::Condition;
use crate::declaration::Health;
use crate::declaration::{Container, Resource};
use crate::runtime::{replaced_name, ContainerSummary, LABEL_RESOURCE};

/// Reason of a recreate forced by a container made under an older format.
pub(crate) const OLDER_RECORD: &str = "made by an older record format";

fn label<'s>(c: &'s ContainerSummary, key: &str) -> Option<&'s str> {
    c.labels.get(key).map(String::as_str)
}

/// Why a container's identity differs, from the recorded inputs.
fn what_changed(d: &Context<'_>, name: &str, built: &BuiltContainer) -> String {
    match d.facts.inputs.get(name) {
        None => {
            "it differs from the declaration (what it was created from is not recorded)".to_string()
        }
        Some(recorded) => {
            let changes = recorded.changes_to(built);
            if changes.is_empty() {
                "it differs from the declaration (its label does not match what was recorded)"
                    .to_string()
            } else {
                changes.join(", ")
            }
        }
    }
}

/// A service's line, as decided, for `act`.
fn words(act: &ServiceAct) -> (Action, Option<String>) {
    match act {
        ServiceAct::Create {
            renamed: Some(old), ..
        } => (Action::Recreated, Some(format!("name changed (was {old})"))),
        ServiceAct::Create {
            renamed: None,
            leftover: Some(aside),
        } => (
            Action::Recreated,
            Some(format!(
                "an interrupted recreate is finished (its volumes carried from {aside})"
            )),
        ),
        ServiceAct::Create { .. } => (Action::Created, None),
        ServiceAct::Replace { reason } => (Action::Recreated, Some(reason.clone())),
        ServiceAct::Start {
            restart_on: Some(path),
        } => (
            Action::Started,
            Some(format!("was not running (and restart-on: {path} changed)")),
        ),
        ServiceAct::Start { restart_on: None } => {
            (Action::Started, Some("was not running".to_string()))
        }
        ServiceAct::Restart { path } => {
            (Action::Started, Some(format!("restart-on: {path} changed")))
        }
        ServiceAct::Keep => (Action::Unchanged, None),
        ServiceAct::Resume { .. } => (
            Action::Recreated,
            Some("an interrupted health-gated recreate is finished".to_string()),
        ),
        ServiceAct::PutBack { aside, .. } => (
            Action::Failed,
            Some(format!(
                "an interrupted roll back is finished ({aside} put back)"
            )),
        ),
    }
}

/// The line of a service whose declared definition a roll back refused:
/// it is not tried again until the declaration asks for another one.
fn refused_line(refused: &Refused) -> String {
    format!(
        "rolled back ({}, {}): this definition is not tried again until the declaration changes it",
        refused.reason,
        crate::render::time(refused.at)
    )
}

/// What one service container needs.
pub(super) async fn service(
    d: &mut Context<'_>,
    slot: Slot,
    res: &Resource,
    c: &Container,
) -> Decision {
    let id = res.id.as_str();
    let done = |action, reason: Option<String>| {
        Decision::new(
            slot.clone(),
            Kind::Service,
            ReportLine::new(id, action, reason),
            Work::Nothing,
        )
    };
    let name = c.name.as_str();
    if let Some(why) = d.facts.held.get(name) {
        return done(Action::HeldStill, Some(why.clone()));
    }
    if let Some(why) = super::context::unusable_for(&d.unusable, c) {
        return done(Action::Failed, Some(why));
    }
    let built = match d.builds.build(res, c) {
        Ok(b) => b,
        Err(e) => return done(Action::Failed, Some(e.reason)),
    };
    let listing = match &d.facts.listing {
        Ok(listing) => listing,
        Err(e) => {
            let reason = format!("cannot list the managed containers: {e}");
            return done(Action::Failed, Some(reason));
        }
    };
    let existing = listing.get(name);
    // The same resource under the name this state gave it before.
    let renamed = match existing {
        Some(_) => None,
        None => listing.values().find(|s| {
            d.facts.known.contains(&s.name)
                && label(s, LABEL_RESOURCE) == Some(id)
                && label(s, LABEL_ROLE) == Some("service")
                && d.decl
                    .containers()
                    .all(|(_, other)| other.name.as_str() != s.name)
        }),
    };
    if let Some(old) = renamed {
        if let Some(why) = d.facts.held.get(&old.name) {
            return done(Action::HeldStill, Some(why.clone()));
        }
    }
    // What an interrupted recreate of this resource set aside.
    let leftover = listing
        .get(&replaced_name(name))
        .filter(|aside| !aside.running && label(aside, LABEL_RESOURCE) == Some(id))
        .map(|aside| aside.name.clone());
    let refused = d
        .facts
        .refused
        .as_ref()
        .ok()
        .and_then(|r| r.get(name))
        .filter(|r| r.identity == built.identity);
    let rollout = d.facts.rollouts.as_ref().ok().and_then(|r| r.get(name));
    let act = match existing {
        None => match (refused, leftover) {
            // Killed in a roll back, after the new one was removed.
            (Some(_), Some(aside)) if renamed.is_none() => ServiceAct::PutBack {
                aside,
                remove_new: false,
            },
            (_, leftover) => ServiceAct::Create {
                renamed: renamed.map(|old| old.name.clone()),
                leftover,
            },
        },
        // Killed in a roll back before the refused one was removed (or its
        // removal failed): the refusal stands, whatever the refused one's
        // health says now, and the old one is put back. Never judged
        // again: a late healthy answer would remove the old one.
        Some(current)
            if leftover.is_some()
                && refused.is_some_and(|r| label(current, LABEL_IDENTITY) == Some(&r.identity)) =>
        {
            ServiceAct::PutBack {
                aside: leftover.expect("matched"),
                remove_new: true,
            }
        }
        // Killed while the new one was judged: judged again.
        Some(current)
            if leftover.is_some()
                && rollout.is_some_and(|r| label(current, LABEL_IDENTITY) == Some(&r.identity)) =>
        {
            ServiceAct::Resume {
                rollout: rollout.cloned().expect("matched"),
            }
        }
        Some(current) => {
            let reason = if label(current, LABEL_RECORD) != Some(RECORD_FORMAT)
                || label(current, LABEL_IDENTITY).is_none()
            {
                Some(OLDER_RECORD.to_string())
            } else if label(current, LABEL_IDENTITY) != Some(built.identity.as_str()) {
                Some(what_changed(d, name, &built))
            } else {
                None
            };
            match reason {
                Some(_) if refused.is_some() => {
                    let refused = refused.expect("matched");
                    return done(Action::Failed, Some(refused_line(refused)));
                }
                Some(reason) => ServiceAct::Replace { reason },
                None => {
                    let restart_on = c
                        .restart_on
                        .iter()
                        .find_map(|rid| d.changed_files.get(rid.as_str()).cloned());
                    let restart = c.options.restart.unwrap_or_default();
                    if d.facts.reconcile
                        && !current.running
                        && restart_on.is_none()
                        && restart.exit_is_final()
                    {
                        let why = format!(
                            "not running; restart: {} leaves it so until an apply",
                            restart.as_str()
                        );
                        return done(Action::Unchanged, Some(why));
                    }
                    match (current.running, restart_on) {
                        (false, restart_on) => ServiceAct::Start { restart_on },
                        (true, Some(path)) => ServiceAct::Restart { path },
                        (true, None) => ServiceAct::Keep,
                    }
                }
            }
        }
    };
    if let ServiceAct::Create {
        renamed: Some(old), ..
    } = &act
    {
        d.consumed.insert(old.clone());
    }
    if matches!(
        act,
        ServiceAct::Create { .. }
            | ServiceAct::Replace { .. }
            | ServiceAct::Resume { .. }
            | ServiceAct::PutBack { .. }
    ) {
        d.replacing.insert(name.to_string());
    }
    let makes = matches!(act, ServiceAct::Create { .. } | ServiceAct::Replace { .. });
    let pull = if makes && !d.image_present(&built.spec.image).await {
        Some(built.spec.image.clone())
    } else {
        None
    };
    let healthy_first = c
        .depends_on
        .iter()
        .filter(|dep| dep.condition == Condition::Healthy)
        .filter_map(|dep| {
            let named = d.decl.container(dep.id.as_str())?;
            Some((dep.id.to_string(), named.name.to_string()))
        })
        .collect();
    let (action, mut reason) = words(&act);
    if pull.is_some()
        && matches!(
            act,
            ServiceAct::Create {
                renamed: None,
                leftover: None
            }
        )
    {
        reason = Some("image pulled".to_string());
    }
    let forget_refused = d
        .facts
        .refused
        .as_ref()
        .is_ok_and(|r| r.get(name).is_some_and(|r| r.identity != built.identity));
    let work = ServiceWork {
        rollback_after: match c.health {
            Some(Health::Disabled) => None,
            _ => Some(c.rollback_after()),
        },
        health_declared: matches!(c.health, Some(Health::Check(_))),
        forget_refused,
        id: id.to_string(),
        name: name.to_string(),
        built,
        pull,
        healthy_first,
        uses: super::context::uses_of(c),
        act,
    };
    if let Some(gate) = work.gate_said() {
        reason = Some(match reason {
            Some(r) => format!("{r} ({gate})"),
            None => gate,
        });
    }
    Decision::new(
        slot,
        Kind::Service,
        ReportLine::new(id, action, reason),
        Work::Service(Box::new(work)),
    )
}
