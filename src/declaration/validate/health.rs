//! Validation of a container's `health`: `"none"`, or an object whose
//! `command` is the check in exec form (absent: the image's own test,
//! with the timings given) and whose `interval`, `timeout`,
//! `retries` and `start-period` are whole positive numbers. Every problem is
//! reported, each at its own field (`health.interval`, `health.command[1]`).

use crate::declaration::hints::Fields;
use serde_json::Value;

use super::fields::{no_nul, refuse_unknown, take, timeout_seconds, Sink};
use crate::declaration::model::{Health, HealthCheck};
use crate::declaration::raw::kind_of;
use crate::declaration::raw::{Field, RawHealth};

/// Most `retries` taken: beyond it a check never decides within any
/// closing budget, so it is almost surely a mistake.
pub const MAX_RETRIES: u64 = 1000;

/// The words Docker reads as a check's form when they lead `Test`; an exec
/// form command must not start with one (it would be read as that form).
const FORM_WORDS: [&str; 3] = ["CMD", "CMD-SHELL", "NONE"];

/// `health`, when given: `None` when it is absent or refused (the problems
/// are in `s`).
pub(super) fn read_health(s: &mut Sink, value: Field<Value>) -> Option<Health> {
    let value = take(s, "health", value)?;
    let raw = match value {
        Value::String(text) if text == "none" => return Some(Health::Disabled),
        Value::Object(_) => match serde_json::from_value::<RawHealth>(value) {
            Ok(raw) => raw,
            Err(e) => {
                s.at("health", e.to_string());
                return None;
            }
        },
        other => {
            let found = match &other {
                Value::String(text) => format!("{text:?}"),
                _ => kind_of(&other).to_string(),
            };
            s.at(
                "health",
                format!("must be \"none\" (no health check, not even the image's) or an object with a command, found {found}"),
            );
            return None;
        }
    };
    refuse_unknown(s, "health", raw.unknown, Fields::Health);
    if raw.command.is_absent()
        && raw.interval.is_absent()
        && raw.timeout.is_absent()
        && raw.retries.is_absent()
        && raw.start_period.is_absent()
    {
        s.at(
            "health",
            "an empty object: give a command, or timings for the image's own test (or leave health out: the image's check runs)",
        );
        return None;
    }
    let command = read_command(s, raw.command);
    let interval = seconds(s, "health.interval", raw.interval);
    let timeout = seconds(s, "health.timeout", raw.timeout);
    let start_period = seconds(s, "health.start-period", raw.start_period);
    let retries = retries(s, raw.retries);
    Some(Health::Check(HealthCheck {
        command: command?,
        interval: interval?,
        timeout: timeout?,
        retries: retries?,
        start_period: start_period?,
    }))
}

/// `health.command`: absent (the image's own test, with the timings
/// given), or not empty, each argument a string without NUL, the program
/// not empty and not one of Docker's form words. `Some(None)`: absent;
/// `None`: refused.
fn read_command(s: &mut Sink, value: Field<Vec<Field<String>>>) -> Option<Option<Vec<String>>> {
    if value.is_absent() {
        return Some(None);
    }
    let items = take(s, "health.command", value)?;
    if items.is_empty() {
        s.at(
            "health.command",
            "must not be empty: give the program and its arguments, or set health to \"none\"",
        );
        return None;
    }
    let mut args = Vec::with_capacity(items.len());
    let mut ok = true;
    for (i, item) in items.into_iter().enumerate() {
        let path = format!("health.command[{i}]");
        match take(s, &path, item) {
            Some(arg) if i == 0 && arg.is_empty() => {
                s.at(&path, "the program must not be empty");
                ok = false;
            }
            Some(arg) if i == 0 && FORM_WORDS.contains(&arg.as_str()) => {
                s.at(
                    &path,
                    format!("{arg:?}: the command is the exec form itself (the program and its arguments); to run a shell line, give [\"sh\", \"-c\", \"...\"]"),
                );
                ok = false;
            }
            Some(arg) if no_nul(s, &path, &arg, "an argument") => args.push(arg),
            _ => ok = false,
        }
    }
    ok.then_some(Some(args))
}

/// A duration of the check, when given: whole seconds, at least 1.
/// `Some(None)`: absent; `None`: refused.
fn seconds(s: &mut Sink, field: &str, value: Field<Value>) -> Option<Option<std::time::Duration>> {
    if value.is_absent() {
        return Some(None);
    }
    let value = take(s, field, value)?;
    match timeout_seconds(&value) {
        Ok(d) => Some(Some(d)),
        Err(e) => {
            s.at(field, e);
            None
        }
    }
}

fn retries(s: &mut Sink, value: Field<Value>) -> Option<Option<u32>> {
    let field = "health.retries";
    if value.is_absent() {
        return Some(None);
    }
    let value = take(s, field, value)?;
    let rule = format!("a whole number from 1 to {MAX_RETRIES}");
    match &value {
        Value::Number(n) => match n.as_u64() {
            Some(r @ 1..=MAX_RETRIES) => Some(Some(r as u32)),
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
