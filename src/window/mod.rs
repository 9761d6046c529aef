//! Maintenance windows: hold containers still while a step runs, and always
//! start them again. The window's rules, all of them, are in this room.
//!
//! A window's life:
//!
//! 1. **Open**, under the apply lock (so no apply is in flight): refuse if
//!    a record of this step is still on disk, or a record of another boot
//!    not yet closed holds one of the same containers; inspect which of
//!    them run, write the window record **before the first stop**, release
//!    the lock, then stop the running ones in the order named. Only those
//!    that were running are held; one already stopped stays stopped. Holds
//!    are counted (see `shared.rs`): a container another window
//!    of this boot keeps stopped is held too but not stopped again.
//! 2. While open, a watcher stops again any held container someone else
//!    starts (`hold-violated`).
//! 3. **Close**, whatever the step did: start the held containers in
//!    reverse order, each confirmed running before the next, within a
//!    bounded budget ([`CLOSE_BUDGET`]). A container another window of the
//!    boot still holds is handed over to it, decided under `windows.lock`:
//!    the last window to close starts it.
//!    One that will not start is an alert (`WILL NOT START AGAIN`) and the
//!    others are still started. While the container runtime does not
//!    answer, starts are retried with backoff for the whole budget; what is
//!    still not started then is alerted and **owed**: the record stays,
//!    narrowed to those containers and marked owed, and the daemon starts
//!    them as soon as the runtime answers again. Otherwise the record is
//!    erased.
//!
//! A record whose owner died is [resumed](Windows::resume) (`takeover.rs`: by the next
//! daemon at start-up, by a running daemon within seconds of the owner's
//! death, or by the next local command): it is first taken over (rewritten
//! with the new owner, under the records lock, so only one process closes
//! it), the step container is waited for if it still runs, within the
//! window's bound, then the window closes. A window's bound is its step's
//! timeout plus the closing budget (six hours without a timeout), measured
//! on the time since boot, which no wall-clock step moves; a window whose
//! step still runs is never released by age alone. A record from another
//! boot holds nothing: its containers are started again if they were
//! running.

//!
//! The files, one concept each:
//!
//! | file | what |
//! |---|---|
//! | `record.rs` | the record: what a window holds, its bound, its lease |
//! | `records.rs` | the records directory and `windows.lock` ([`RecordsLock`]) |
//! | `unreadable.rs` | reading a record without trusting the directory; damaged ones set aside |
//! | `heartbeat.rs`, `lease.rs` | owners' heartbeats, and the renewer of their leases |
//! | `owner.rs` | who owns a window |
//! | `fence.rs` | may an owner still act on its window |
//! | `budget.rs` | the closing budget |
//! | `plan.rs`, `handle.rs` | what a window will hold, and an open window as its opener holds it |
//! | `open.rs`, `stops.rs`, `watcher.rs`, `watch_task.rs` | opening: the record, the stops, the watch on the holds (and its task, waited for before a close starts anything) |
//! | `shared.rs` | counted holds shared between windows |
//! | `close.rs`, `start.rs` | closing: the starts again, each confirmed |
//! | `restore.rs` | undoing a late stop of an owner that lost its window |
//! | `takeover.rs`, `adopt.rs` | windows of dead or stuck owners, taken over and closed |
//! | `alerts.rs` | `WILL NOT START AGAIN` and the alerts `status` reads |
//! | `engine.rs`, `windows.rs` | the engine's shared parts, and [`Windows`], what the rest of mesh-host asks |

pub mod adopt;
pub mod alerts;
mod budget;
#[cfg(test)]
mod budget_tests;
mod close;
#[cfg(test)]
mod close_tests;
mod engine;
mod fence;
mod handle;
mod heartbeat;
mod lease;
mod open;
mod owner;
mod plan;
mod record;
mod records;
mod restore;
#[cfg(test)]
mod restore_tests;
mod shared;
mod start;
mod stops;
mod takeover;
#[cfg(test)]
mod takeover_tests;
mod unreadable;
mod watch_task;
mod watcher;
mod windows;

pub use budget::{close_budget, Deadline, LockWait, Spent, CLOSE_BUDGET};
pub use close::CloseReport;
#[cfg(test)]
pub(crate) use fence::Fence;
pub use handle::OpenWindow;
pub use heartbeat::{Beater, Heartbeats};
pub use open::OpenError;
pub use owner::Owner;
pub use plan::{Specs, WindowPlan};
pub use record::{
    window_file_name, HeldContainer, Moment, WindowRecord, LEASE_LAPSE, LEASE_RENEW,
    WINDOW_MAX_AGE, WINDOW_RECORD_VERSION,
};
pub use records::{Records, RecordsLock, RECORDS_LOCK_WAIT};
pub use takeover::Resumed;
pub use unreadable::{UnreadableRecord, WindowScan, UNREADABLE_DIR};
pub use windows::Windows;
