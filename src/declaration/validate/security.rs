//! Reading a container's `security-opt` and `logging`
//! ([`crate::declaration::options`]): Docker's security options beyond
//! no-new-privileges, each of a form Docker's daemon takes by itself, and
//! a log driver with its options.

use super::fields::{refuse_unknown, take, take_list, Sink};
use super::options::read_string_map;
use crate::declaration::hints::Fields;
use crate::declaration::options::{security_opt_problem, Logging};
use crate::declaration::raw::{Field, List, RawLogging};

/// `security-opt`: each entry `label=…`, `seccomp=unconfined` or
/// `apparmor=PROFILE` (`:` as Docker also takes it), each once.
pub(super) fn read_security_opt(s: &mut Sink, raw: List<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (path, opt) in take_list(s, "security-opt", raw) {
        match security_opt_problem(&opt) {
            Some(why) => s.at(&path, format!("{opt:?}: {why}")),
            None if out.contains(&opt) => s.at(&path, format!("{opt:?} is named twice")),
            None => out.push(opt),
        }
    }
    out
}

/// `logging`: a driver name and its options.
pub(super) fn read_logging(s: &mut Sink, raw: Field<RawLogging>) -> Option<Logging> {
    let l = take(s, "logging", raw)?;
    refuse_unknown(s, "logging", l.unknown, Fields::Logging);
    let driver = take(s, "logging.driver", l.driver).filter(|d| {
        let ok = driver_ok(d);
        if !ok {
            s.at(
                "logging.driver",
                format!(
                    "{d:?} is not a log driver name (such as \"json-file\", \"local\", \"syslog\")"
                ),
            );
        }
        ok
    });
    let options = read_string_map(s, "logging.options", l.options, false);
    Some(Logging { driver, options })
}

/// A driver of Docker's own (`json-file`) or a plugin's (`NAME:TAG`,
/// `REPO/NAME`).
fn driver_ok(d: &str) -> bool {
    !d.is_empty()
        && d.len() <= 255
        && d.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.:-/".contains(&b))
}
