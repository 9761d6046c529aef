//! Deciding an apply: every resource's decision (its report line and the
//! work that carries it out), in the order the apply carries them out,
//! from reads alone.
//!
//! The decider holds the runtime's [`RuntimeView`](crate::runtime::RuntimeView),
//! the unit manager's [`UnitReads`](super::UnitReads) and the
//! [`AccountBook`](crate::accounts::AccountBook), never what changes
//! them, and the facts read once before (`facts`): it cannot change the
//! machine. What one
//! decision plans is what the next ones read (a file the plan writes is
//! read as written by a container that reads it; a file that changes
//! restarts the services that `restart-on` it; a network the plan cannot
//! make fails the containers that join it), so the walk keeps it.
//!
//! Order: volumes, then networks (any container may join or mount them),
//! then the declared resources in declaration order, then the removals of
//! what the host made and no longer declares. Each kind's decisions are
//! in a file of their own.

mod context;
mod files;
mod folders;
mod identities;
mod networks;
mod removals;
mod services;
mod steps;
mod units;
mod volumes;
mod walk;

pub(crate) use context::unusable_of;
pub(crate) use folders::{describe, refusal, said, sweep, taken_away, unfinished, OwnedOp};
pub(crate) use identities::made_what;
pub(crate) use walk::Decider;
