//! Reading one field of a raw resource into the model, and where its
//! problems go.
//!
//! Every reader of a resource kind takes its fields through these: a field
//! left out, of the wrong type or refused by a value rule is written to the
//! resource's [`Sink`] with its path (`mounts[0].target`), so that one pass
//! reports every problem rather than the first.

use crate::declaration::hints::Fields;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Display;
use std::time::Duration;

use serde_json::Value;

use crate::declaration::options::OWN_LABEL_PREFIXES;
use crate::declaration::raw::{kind_of, Field, List};
use crate::declaration::refusal::Problem;
use crate::declaration::types::{AbsPath, ResourceId};

/// Longest `timeout` taken: 30 days. Longer is almost surely a unit mistake
/// (milliseconds), and keeps deadlines far from overflowing.
pub const MAX_TIMEOUT_SECS: u64 = 30 * 24 * 3600;

/// How many problems a refusal lists; past them, it says how many more
/// there are. A declaration of a million wrong values would otherwise be
/// refused with gigabytes of problems.
pub const MAX_LISTED: usize = 1000;

/// Problems found so far, each with the position it sorts at: 0 for the top
/// level, `N + 1` for `resources[N]`. The first [`MAX_LISTED`] in that
/// order are kept; of the others only their number.
#[derive(Debug, Default)]
pub(super) struct Found {
    kept: Vec<(usize, Problem)>,
    more: usize,
}

impl Found {
    pub(super) fn new() -> Found {
        Found::default()
    }

    fn push(&mut self, order: usize, problem: Problem) {
        self.kept.push((order, problem));
        if self.kept.len() >= 2 * MAX_LISTED {
            self.trim();
        }
    }

    /// Keep the first [`MAX_LISTED`]; stable, so each resource's problems
    /// stay in the order they were found.
    fn trim(&mut self) {
        self.kept.sort_by_key(|(order, _)| *order);
        self.more += self.kept.len().saturating_sub(MAX_LISTED);
        self.kept.truncate(MAX_LISTED);
    }

    pub(super) fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// The problems in declaration order, and then, if some were not
    /// kept, one saying how many.
    pub(super) fn into_problems(mut self) -> Vec<Problem> {
        self.trim();
        let more = self.more;
        let mut problems: Vec<Problem> = self.kept.into_iter().map(|(_, p)| p).collect();
        if more > 0 {
            problems.push(Problem {
                resource: None,
                field: None,
                message: format!(
                    "and {more} more problem{}, not listed: a refusal lists the first {MAX_LISTED}; fix these and check again",
                    if more == 1 { "" } else { "s" }
                ),
            });
        }
        problems
    }
}

/// Where problems of one resource (or the top level) are written.
pub(super) struct Sink<'a> {
    pub(super) found: &'a mut Found,
    pub(super) order: usize,
    pub(super) resource: Option<String>,
}

impl Sink<'_> {
    pub(super) fn at(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.push(Some(field.into()), message.into());
    }

    pub(super) fn whole(&mut self, message: impl Into<String>) {
        self.push(None, message.into());
    }

    fn push(&mut self, field: Option<String>, message: String) {
        self.found.push(
            self.order,
            Problem {
                resource: self.resource.clone(),
                field,
                message,
            },
        );
    }
}

/// The value of a field that may be left out; a wrong type is reported.
pub(super) fn take<T>(s: &mut Sink, field: &str, value: Field<T>) -> Option<T> {
    match value {
        Field::Absent => None,
        Field::Present(v) => Some(v),
        Field::Invalid { error, .. } => {
            s.at(field, error);
            None
        }
    }
}

/// The value of a field that must be there.
pub(super) fn require<T>(s: &mut Sink, field: &str, value: Field<T>) -> Option<T> {
    if value.is_absent() {
        s.at(field, "missing");
        return None;
    }
    take(s, field, value)
}

/// A value rule's verdict, reported at `field` when it is a refusal.
pub(super) fn check<T, E: Display>(s: &mut Sink, field: &str, result: Result<T, E>) -> Option<T> {
    match result {
        Ok(v) => Some(v),
        Err(e) => {
            s.at(field, e.to_string());
            None
        }
    }
}

/// The readable items of a list, each with its path (`field[i]`).
pub(super) fn take_list<T>(s: &mut Sink, field: &str, value: List<T>) -> Vec<(String, T)> {
    let items = take(s, field, value).unwrap_or_default();
    items
        .into_iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let path = format!("{field}[{i}]");
            take(s, &path, item).map(|v| (path, v))
        })
        .collect()
}

/// `prefix.key`, or `prefix["odd key"]` when the key would not read as one
/// word (or would break the line).
pub(super) fn key_path(prefix: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    // A long key is shown cut: the problem names it, it need not be whole.
    let key = crate::declaration::strict::shown(key);
    match (prefix.is_empty(), plain) {
        (true, true) => key.into_owned(),
        (true, false) => format!("[{key:?}]"),
        (false, true) => format!("{prefix}.{key}"),
        (false, false) => format!("{prefix}[{key:?}]"),
    }
}

/// Each key of `unknown` refused, with the field of `fields` it most
/// likely meant (`did you mean "read-only"?`).
pub(super) fn refuse_unknown(
    s: &mut Sink,
    prefix: &str,
    unknown: BTreeMap<String, Value>,
    fields: Fields,
) {
    for key in unknown.into_keys() {
        let message = crate::declaration::hints::unknown_field(&key, fields);
        s.at(key_path(prefix, &key), message);
    }
}

/// A path the host writes (a file, a directory, a shared folder's
/// entries): a [`non_root_path`], and not where the service cannot write
/// nor one of the host's own paths ([`crate::declaration::sandbox`]).
pub(super) fn written_path(s: &mut Sink, field: &str, text: &str) -> Option<AbsPath> {
    let path = non_root_path(s, field, text)?;
    if let Some(why) = crate::declaration::sandbox::write_refusal(&path) {
        s.at(field, why);
        return None;
    }
    Some(path)
}

/// A path naming a file-like thing the host itself reads or writes:
/// absolute, not `/` itself, and not where the service cannot see it
/// ([`crate::declaration::sandbox`]).
pub(super) fn non_root_path(s: &mut Sink, field: &str, text: &str) -> Option<AbsPath> {
    let path = check(s, field, AbsPath::try_from(text))?;
    if path.is_root() {
        s.at(
            field,
            "\"/\" is the root directory itself: name something inside it",
        );
        return None;
    }
    if let Some(why) = crate::declaration::sandbox::refusal(&path) {
        s.at(field, why);
        return None;
    }
    Some(path)
}

pub(super) fn no_nul(s: &mut Sink, field: &str, text: &str, what: &str) -> bool {
    if text.contains('\0') {
        s.at(field, format!("{what} contains a NUL character"));
        return false;
    }
    true
}

/// Ids of a list, each valid and named once.
pub(super) fn ids(s: &mut Sink, items: Vec<(String, String)>) -> Vec<(String, ResourceId)> {
    let mut seen: HashMap<ResourceId, String> = HashMap::new();
    let mut out = Vec::new();
    for (path, text) in items {
        let Some(id) = check(s, &path, ResourceId::try_from(text)) else {
            continue;
        };
        if let Some(first) = seen.get(&id) {
            s.at(
                &path,
                format!("{:?} is already named at {first}", id.as_str()),
            );
            continue;
        }
        seen.insert(id.clone(), path.clone());
        out.push((path, id));
    }
    out
}

pub(super) fn timeout_seconds(value: &Value) -> Result<Duration, String> {
    let rule = "a whole number of seconds, at least 1";
    match value {
        Value::Number(n) => match n.as_u64() {
            Some(0) => Err(format!("must be {rule}, found 0")),
            Some(secs) if secs > MAX_TIMEOUT_SECS => Err(format!(
                "{secs} seconds is more than the {MAX_TIMEOUT_SECS} (30 days) taken"
            )),
            Some(secs) => Ok(Duration::from_secs(secs)),
            None => Err(format!("must be {rule}, found {n}")),
        },
        other => Err(format!("must be {rule}, found {}", kind_of(other))),
    }
}

/// A non-empty list of arguments (`command`, `entrypoint`): `None` when
/// absent; an empty one is refused, saying that leaving it out keeps the
/// image's own ([`read_entrypoint`] takes an empty one).
pub(super) fn read_args(s: &mut Sink, field: &str, value: List<String>) -> Option<Vec<String>> {
    if let Field::Present(items) = &value {
        if items.is_empty() {
            s.at(
                field,
                "must not be empty: leave it out to keep the image's own",
            );
            return None;
        }
    }
    read_arg_list(s, field, value)
}

/// `entrypoint`: a list of arguments, where an empty one clears the
/// image's entrypoint (as `docker run --entrypoint ""` and compose's
/// `entrypoint: []` do).
pub(super) fn read_entrypoint(s: &mut Sink, value: List<String>) -> Option<Vec<String>> {
    read_arg_list(s, "entrypoint", value)
}

fn read_arg_list(s: &mut Sink, field: &str, value: List<String>) -> Option<Vec<String>> {
    let items = take(s, field, value)?;
    let mut args = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let path = format!("{field}[{i}]");
        if let Some(arg) = take(s, &path, item) {
            if no_nul(s, &path, &arg, "an argument") {
                args.push(arg);
            }
        }
    }
    Some(args)
}

/// A map of strings (`labels`, `driver-opts`): names not empty, no NUL;
/// with `own_refused`, names under mesh-host's own prefixes refused.
pub(super) fn read_string_map(
    s: &mut Sink,
    field: &str,
    raw: Field<BTreeMap<String, Field<String>>>,
    own_refused: bool,
) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for (key, value) in take(s, field, raw).unwrap_or_default() {
        let path = key_path(field, &key);
        let key_ok = if key.is_empty() {
            s.at(&path, "a name must not be empty");
            false
        } else if let Some(prefix) = OWN_LABEL_PREFIXES
            .iter()
            .find(|p| own_refused && key.starts_with(**p))
        {
            s.at(
                &path,
                format!("{key:?}: labels under {prefix:?} are mesh-host's own"),
            );
            false
        } else {
            no_nul(s, &path, &key, "the name")
        };
        if let Some(value) = take(s, &path, value) {
            if no_nul(s, &path, &value, "the value") && key_ok {
                map.insert(key, value);
            }
        }
    }
    map
}
