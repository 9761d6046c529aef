//! The closing budget: how long closing a window may take, all of it.

use std::time::Duration;

/// How long closing a window may take, all starts included (the closing
/// budget). A window's bound is its step's timeout plus this.
pub const CLOSE_BUDGET: Duration = Duration::from_secs(5 * 60);

/// The budget every close spends (and a fire confirming its step stopped):
/// [`CLOSE_BUDGET`], shortened only by a node test in a debug build
/// ([`crate::fault::close_budget`]).
pub fn close_budget() -> Duration {
    crate::fault::close_budget(CLOSE_BUDGET)
}
