//! Validation of what a scheduled step adds to its cadence:
//! `randomized-delay` (the splay of its fires) and `catch-up`.

use serde_json::Value;

use super::fields::{take, Sink, MAX_TIMEOUT_SECS};
use crate::declaration::raw::kind_of;
use crate::declaration::raw::Field;

/// `randomized-delay`: whole seconds, 1 … 30 days, on a scheduled step only.
/// `None` when absent or refused (the problems are in `s`).
pub(super) fn read_randomized_delay(
    s: &mut Sink,
    value: Field<Value>,
    has_schedule: bool,
) -> Option<std::time::Duration> {
    read_seconds(
        s,
        "randomized-delay",
        value,
        has_schedule,
        "randomized-delay needs a schedule: only a scheduled step's fires are delayed",
    )
}

/// `catch-up`: a boolean, `true` only on a scheduled step.
pub(super) fn read_catch_up(s: &mut Sink, value: Field<bool>, has_schedule: bool) -> bool {
    let catch_up = take(s, "catch-up", value).unwrap_or(false);
    if catch_up && !has_schedule {
        s.at(
            "catch-up",
            "catch-up needs a schedule: only a scheduled step has fires to miss",
        );
    }
    catch_up
}

/// `rollback-after`: whole seconds, 1 … 30 days, on a service only (a
/// step is never replaced while it serves). `None` when absent or refused.
pub(super) fn read_rollback_after(
    s: &mut Sink,
    value: Field<Value>,
    is_service: bool,
) -> Option<std::time::Duration> {
    read_seconds(
        s,
        "rollback-after",
        value,
        is_service,
        "rollback-after applies to a service container: only a service's replacement is gated on its health",
    )
}

/// A `field` of whole seconds, 1 … 30 days; where it does not apply
/// (`applies` false) a value given is refused with `not_here`. `None`
/// when absent or refused.
fn read_seconds(
    s: &mut Sink,
    field: &str,
    value: Field<Value>,
    applies: bool,
    not_here: &str,
) -> Option<std::time::Duration> {
    if !value.is_absent() && !applies {
        s.at(field, not_here);
    }
    let value = take(s, field, value)?;
    let rule = format!("a whole number of seconds from 1 to {MAX_TIMEOUT_SECS} (30 days)");
    match &value {
        Value::Number(n) => match n.as_u64() {
            Some(secs @ 1..=MAX_TIMEOUT_SECS) => Some(std::time::Duration::from_secs(secs)),
            _ => {
                s.at(field, format!("must be {rule}, found {n}"));
                None
            }
        },
        other => {
            s.at(field, format!("must be {rule}, found {}", kind_of(other)));
            None
        }
    }
}
