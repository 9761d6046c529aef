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
//! | a record of its replacement or roll back that cannot be read | nothing done: `failed`, naming the file and the fix |
//! | a replacement gated on health in flight (record, new one, old one set aside) | settled first (judged; kept or put back), then replaced if the declaration has moved on |
//! | a roll back in flight (refusal, old one set aside) | put back first, then replaced if the declaration has moved on |
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

/// Why a container sharing its network peer's namespace (`network:
/// "container:NAME"`) must be made anew though its identity is the
/// declared one: the runtime joined it to the peer's namespace by the
/// peer's id, so a peer made anew (in this apply, or since the follower
/// was made, by anyone) left it in a namespace that is gone.
fn peer_moved(
    d: &Context<'_>,
    c: &Container,
    current: &ContainerSummary,
    listing: &std::collections::BTreeMap<String, ContainerSummary>,
) -> Option<String> {
    let peer = c.network.as_ref()?.peer()?.as_str();
    if d.replacing.contains(peer) {
        return Some(format!("its network peer {peer} is recreated (before it)"));
    }
    // The runtime keeps the peer's id (Docker, Podman); a runtime that
    // says nothing, or keeps the name, is taken at its word.
    let joined = current.network_peer()?;
    let now = listing.get(peer)?;
    (joined != now.id && joined != now.name).then(|| {
        format!("its network peer {peer} was recreated (this one still shares the namespace of the one it replaced)")
    })
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
        ServiceAct::Resume { then: None, .. } => (
            Action::Recreated,
            Some("an interrupted health-gated recreate is finished".to_string()),
        ),
        ServiceAct::Resume {
            then: Some(reason), ..
        } => (
            Action::Recreated,
            Some(format!(
                "{reason}, once an interrupted health-gated recreate is settled"
            )),
        ),
        ServiceAct::PutBack {
            aside, then: None, ..
        } => (
            Action::Failed,
            Some(format!(
                "an interrupted roll back is finished ({aside} put back)"
            )),
        ),
        ServiceAct::PutBack {
            aside,
            then: Some(reason),
            ..
        } => (
            Action::Recreated,
            Some(format!(
                "{reason}, once an interrupted roll back is finished ({aside} put back)"
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
    let (rollouts, refusals) = match (&d.facts.rollouts, &d.facts.refused) {
        (Ok(rollouts), Ok(refusals)) => (rollouts, refusals),
        (Err(e), _) | (_, Err(e)) => {
            let reason = format!(
                "the records of health-gated replaces cannot be read ({e}): {name} is left alone"
            );
            return done(Action::Failed, Some(reason));
        }
    };
    // A record of its own that cannot be read: which of two containers is
    // the good one is not known, so neither is touched.
    if let Some(problem) = rollouts.problem(name).or_else(|| refusals.problem(name)) {
        return done(Action::Failed, Some(problem));
    }
    // Any refusal recorded, and the one of what is declared now.
    let refusal = refusals.found.get(name);
    let refused = refusal.filter(|r| r.identity == built.identity);
    let rollout = rollouts.found.get(name);
    // What an interrupted replace that the declaration no longer asks for
    // is replaced by once it is settled.
    let then = |settled: &str| (settled != built.identity).then(|| what_changed(d, name, &built));
    let act = match existing {
        None => match (refused, leftover) {
            // Killed in a roll back, after the new one was removed.
            (Some(_), Some(aside)) if renamed.is_none() => ServiceAct::PutBack {
                aside,
                remove_new: false,
                then: None,
            },
            (_, leftover) => ServiceAct::Create {
                renamed: renamed.map(|old| old.name.clone()),
                leftover,
            },
        },
        // Killed in a roll back before the refused one was removed (or its
        // removal failed): the refusal stands, whatever the refused one's
        // health says now, and the old one is put back. Never judged
        // again: a late healthy answer would remove the old one. Then, if
        // the declaration asks for neither, replaced.
        Some(current)
            if leftover.is_some()
                && refusal.is_some_and(|r| label(current, LABEL_IDENTITY) == Some(&r.identity)) =>
        {
            let aside = leftover.expect("matched");
            let old = listing
                .get(&aside)
                .and_then(|a| label(a, LABEL_IDENTITY))
                .unwrap_or_default();
            ServiceAct::PutBack {
                aside,
                remove_new: true,
                then: if refused.is_some() { None } else { then(old) },
            }
        }
        // Killed while the new one was judged: judged again, then, if the
        // declaration has moved on, replaced.
        Some(current)
            if leftover.is_some()
                && rollout.is_some_and(|r| label(current, LABEL_IDENTITY) == Some(&r.identity)) =>
        {
            let rollout = rollout.cloned().expect("matched");
            let then = then(&rollout.identity);
            ServiceAct::Resume { rollout, then }
        }
        Some(current) => {
            let reason = if label(current, LABEL_RECORD) != Some(RECORD_FORMAT)
                || label(current, LABEL_IDENTITY).is_none()
            {
                Some(OLDER_RECORD.to_string())
            } else if label(current, LABEL_IDENTITY) != Some(built.identity.as_str()) {
                Some(what_changed(d, name, &built))
            } else {
                peer_moved(d, c, current, listing)
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
    let makes = matches!(
        act,
        ServiceAct::Create { .. }
            | ServiceAct::Replace { .. }
            | ServiceAct::Resume { then: Some(_), .. }
            | ServiceAct::PutBack { then: Some(_), .. }
    );
    let pull = if makes && !d.image_present(&built.spec.image).await {
        Some(built.spec.image.clone())
    } else {
        None
    };
    let healthy_first = super::super::depends::healthy_first(d.decl, c);
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
    let forget_refused = refusal.is_some_and(|r| r.identity != built.identity);
    // A record with nothing set aside: a kill before the old one was
    // stopped, or the record's removal failed. A replace writes it anew.
    let forget_rollout = rollout.is_some()
        && !matches!(
            act,
            ServiceAct::Create {
                leftover: Some(_),
                ..
            } | ServiceAct::Replace { .. }
                | ServiceAct::Resume { .. }
                | ServiceAct::PutBack { .. }
        );
    let work = ServiceWork {
        rollback_after: match c.health {
            Some(Health::Disabled) => None,
            _ => Some(c.rollback_after()),
        },
        health_declared: matches!(c.health, Some(Health::Check(_))),
        forget_refused,
        forget_rollout,
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
