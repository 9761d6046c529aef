//! Identities decided: a system account and group with the declared
//! numbers, made through the system's tools when missing.
//!
//! | found | decided |
//! |---|---|
//! | account and group as declared | `unchanged` |
//! | missing (either) | made: `created` |
//! | name or numbers taken otherwise | `failed`, naming both parties |
//! | recorded as made, no longer declared | `removed` ([`super::removals`]) |

use super::super::plan::{Decision, Kind, Slot, Work};
use super::super::report::{Action, ReportLine};
use super::context::Context;
use crate::accounts::{self, Made};
use crate::declaration::Identity;

/// What was (or will be) made, in the report's words.
pub(crate) fn made_what(made: &Made) -> &'static str {
    match (made.user, made.group) {
        (true, true) => "account and group",
        (true, false) => "account (its group existed)",
        _ => "group (the account existed)",
    }
}

pub(super) fn identity(d: &mut Context<'_>, slot: Slot, id: &str, identity: &Identity) -> Decision {
    let decided = |action, reason: Option<String>, work| {
        Decision::new(
            slot.clone(),
            Kind::Identity,
            ReportLine::new(id, action, reason),
            work,
        )
    };
    let found = match d.system_accounts() {
        Ok(found) => found,
        Err(e) => return decided(Action::Failed, Some(e), Work::Nothing),
    };
    let conflicts = found.conflicts(identity);
    if !conflicts.is_empty() {
        let reason = conflicts
            .into_iter()
            .map(|(_, m)| m)
            .collect::<Vec<_>>()
            .join("; ");
        return decided(Action::Failed, Some(reason), Work::Nothing);
    }
    let made = accounts::to_make(identity, found);
    if made == Made::default() {
        return decided(Action::Unchanged, None, Work::Nothing);
    }
    // What is made is recorded, so that its removal removes only that.
    if let Err(e) = &d.facts.accounts {
        return decided(Action::Failed, Some(e.clone()), Work::Nothing);
    }
    let reason = format!(
        "{} {} {}:{}",
        made_what(&made),
        identity.name,
        identity.uid,
        identity.gid
    );
    decided(
        Action::Created,
        Some(reason),
        Work::Identity(identity.clone()),
    )
}
