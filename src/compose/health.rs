//! A service's `healthcheck` as compose gives it to Docker: `disable`
//! (cast as compose casts a boolean) or `test: [NONE]` turn every check
//! off; a test replaces the image's; timings without a test keep the
//! image's test with those timings (Docker takes each value left unset
//! from the image's check), and nothing at all (`{disable: false}`) keeps
//! the image's check whole. A timing of 0 is Docker's "unset" under
//! compose too: the image's or Docker's default, left out here.

use serde_json::{json, Value};

use super::context::Service;
use super::values::{some, text};
use super::{cast, units};
use crate::declaration::raw::{Field, RawHealth};

/// The declaration's `health` for a service's `healthcheck` value `h`.
pub(super) fn read(s: &mut Service, h: &Value) -> Field<Value> {
    let Value::Object(h) = h else {
        if !h.is_null() {
            s.refuse("healthcheck", "expected a mapping");
        }
        return Field::Absent;
    };
    if let Some(v) = h.get("disable") {
        match s.boolean("healthcheck.disable", v) {
            Some(true) => return some(json!("none")),
            Some(false) => {}
            // Never defaulted: the project is refused.
            None => return Field::Absent,
        }
    }
    let mut raw = RawHealth::default();
    match h.get("test") {
        None => {}
        Some(Value::String(shell)) => {
            raw.command = some(vec![
                some("/bin/sh".to_owned()),
                some("-c".to_owned()),
                some(shell.clone()),
            ]);
        }
        Some(Value::Array(items)) => {
            let words: Vec<String> = items.iter().map(text).collect();
            match words.first().map(String::as_str) {
                Some("NONE") => return some(json!("none")),
                Some("CMD") if words.len() > 1 => {
                    raw.command = some(words[1..].iter().cloned().map(some).collect());
                }
                Some("CMD-SHELL") if words.len() > 1 => {
                    raw.command = some(vec![
                        some("/bin/sh".to_owned()),
                        some("-c".to_owned()),
                        some(words[1..].join(" ")),
                    ]);
                }
                _ => {
                    s.refuse(
                        "healthcheck.test",
                        "starts with CMD or CMD-SHELL and a command, or is [NONE]",
                    );
                    return Field::Absent;
                }
            }
        }
        Some(_) => {
            s.refuse("healthcheck.test", "expected a string or a list");
            return Field::Absent;
        }
    }
    for (from, to) in [
        ("interval", &mut raw.interval),
        ("timeout", &mut raw.timeout),
        ("start_period", &mut raw.start_period),
    ] {
        let Some(v) = h.get(from) else { continue };
        let field = format!("healthcheck.{from}");
        let at = s.at(&field);
        let Some(d) = cast::duration(s.p, &at, v) else {
            continue;
        };
        match units::seconds_up(d) {
            Ok((0, _)) => s.note(
                &field,
                "0: Docker's default (or the image's), as under compose; left out",
            ),
            Ok((secs, rounded)) => {
                if rounded {
                    s.note(
                        &field,
                        format!(
                            "{d}: rounded up to {secs} s (the declaration counts whole seconds)"
                        ),
                    );
                }
                *to = some(json!(secs));
            }
            Err(e) => s.refuse(&field, e),
        }
    }
    if let Some(r) = h.get("retries") {
        match s.integer("healthcheck.retries", r) {
            Some(n) if n > 0 => raw.retries = some(json!(n)),
            Some(0) => s.note(
                "healthcheck.retries",
                "0: Docker's default (3, or the image's), as under compose; left out",
            ),
            Some(n) => s.refuse("healthcheck.retries", format!("{n} is below 0")),
            None => {}
        }
    }
    if raw.command.is_absent()
        && raw.interval.is_absent()
        && raw.timeout.is_absent()
        && raw.start_period.is_absent()
        && raw.retries.is_absent()
    {
        // Nothing said: the image's own check, as compose leaves it.
        return Field::Absent;
    }
    match serde_json::to_value(&raw) {
        Ok(v) => some(v),
        Err(e) => {
            s.refuse("healthcheck", e.to_string());
            Field::Absent
        }
    }
}
