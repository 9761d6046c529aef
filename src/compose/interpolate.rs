//! Compose's interpolation of `${VAR}` in a project's values: `$VAR`,
//! `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?message}`,
//! `${VAR?message}`, `${VAR:+other}`, `${VAR+other}` and `$$` for a
//! dollar. Defaults may themselves hold `${...}`. Every problem is
//! collected (each unset required variable, each expression left open),
//! not only the first.

use serde_json::Value;

/// Where variables come from: the process environment over the project's
/// `.env` (or `--env-file`), as compose orders them.
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `text` with every expression replaced; problems, each naming `at`, are
/// pushed to `problems`.
pub fn interpolate(text: &str, lookup: Lookup, at: &str, problems: &mut Vec<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        rest = &rest[i + 1..];
        if let Some(after) = rest.strip_prefix('$') {
            out.push('$');
            rest = after;
        } else if let Some(inner) = rest.strip_prefix('{') {
            let Some(end) = closing(inner) else {
                problems.push(format!(
                    "{at}: \"${{{inner}\" is left open: an expression ends with '}}'"
                ));
                return out;
            };
            out.push_str(&expression(&inner[..end], lookup, at, problems));
            rest = &inner[end + 1..];
        } else if rest.starts_with(is_name_start) {
            let end = rest.find(|c| !is_name(c)).unwrap_or(rest.len());
            out.push_str(&lookup(&rest[..end]).unwrap_or_default());
            rest = &rest[end..];
        } else {
            // A lone '$' (before a space, at the end): kept, as compose keeps it.
            out.push('$');
        }
    }
    out.push_str(rest);
    out
}

/// The index of the `}` closing an expression that starts at `text[0]`,
/// nested `${...}` skipped.
fn closing(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'$' if bytes.get(i + 1) == Some(&b'{') => {
                depth += 1;
                i += 1;
            }
            b'}' if depth == 0 => return Some(i),
            b'}' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    None
}

/// One `${...}` body.
fn expression(body: &str, lookup: Lookup, at: &str, problems: &mut Vec<String>) -> String {
    let end = body.find(|c| !is_name(c)).unwrap_or(body.len());
    let (name, op) = body.split_at(end);
    if name.is_empty() || !name.starts_with(is_name_start) {
        problems.push(format!("{at}: \"${{{body}}}\" does not name a variable"));
        return String::new();
    }
    let value = lookup(name);
    let set = value.is_some();
    let non_empty = value.as_deref().is_some_and(|v| !v.is_empty());
    if op.is_empty() {
        return value.unwrap_or_default();
    }
    for (prefix, needs_value) in [(":-", true), ("-", false)] {
        if let Some(default) = op.strip_prefix(prefix) {
            let ok = if needs_value { non_empty } else { set };
            return if ok {
                value.unwrap_or_default()
            } else {
                interpolate(default, lookup, at, problems)
            };
        }
    }
    for (prefix, needs_value) in [(":?", true), ("?", false)] {
        if let Some(message) = op.strip_prefix(prefix) {
            let ok = if needs_value { non_empty } else { set };
            if !ok {
                let message = interpolate(message, lookup, at, problems);
                let why = if set { "empty" } else { "unset" };
                problems.push(if message.is_empty() {
                    format!("{at}: required variable {name} is {why}")
                } else {
                    format!("{at}: required variable {name} is {why}: {message}")
                });
            }
            return value.unwrap_or_default();
        }
    }
    for (prefix, needs_value) in [(":+", true), ("+", false)] {
        if let Some(other) = op.strip_prefix(prefix) {
            let ok = if needs_value { non_empty } else { set };
            return if ok {
                interpolate(other, lookup, at, problems)
            } else {
                String::new()
            };
        }
    }
    problems.push(format!(
        "{at}: \"${{{body}}}\": {op:?} is not one of :- - :? ? :+ +"
    ));
    String::new()
}

/// Interpolate every string of `value` (keys are left as written, as
/// compose leaves them); `at` names where each lies.
pub fn interpolate_tree(value: &mut Value, lookup: Lookup, at: &str, problems: &mut Vec<String>) {
    match value {
        Value::String(s) => *s = interpolate(s, lookup, at, problems),
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                interpolate_tree(item, lookup, &format!("{at}[{i}]"), problems);
            }
        }
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                let path = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                interpolate_tree(v, lookup, &path, problems);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(text: &str) -> (String, Vec<String>) {
        let env = |name: &str| match name {
            "SET" => Some("value".to_string()),
            "EMPTY" => Some(String::new()),
            "NESTED" => Some("n".to_string()),
            _ => None,
        };
        let mut problems = Vec::new();
        let out = interpolate(text, &env, "services.web.image", &mut problems);
        (out, problems)
    }

    fn ok(text: &str) -> String {
        let (out, problems) = with(text);
        assert!(problems.is_empty(), "{text}: {problems:?}");
        out
    }

    #[test]
    fn each_form_reads_as_compose_reads_it() {
        assert_eq!(ok("${SET}"), "value");
        assert_eq!(ok("$SET/x"), "value/x");
        assert_eq!(ok("a${UNSET}b"), "ab");
        assert_eq!(ok("${UNSET:-d}"), "d");
        assert_eq!(ok("${EMPTY:-d}"), "d");
        assert_eq!(ok("${EMPTY-d}"), "");
        assert_eq!(ok("${UNSET-d}"), "d");
        assert_eq!(ok("${SET:-d}"), "value");
        assert_eq!(ok("${SET:?must}"), "value");
        assert_eq!(ok("${EMPTY?must}"), "");
        assert_eq!(ok("${SET:+other}"), "other");
        assert_eq!(ok("${EMPTY:+other}"), "");
        assert_eq!(ok("${EMPTY+other}"), "other");
        assert_eq!(ok("$$SET and $$"), "$SET and $");
        assert_eq!(ok("${UNSET:-${NESTED}-x}"), "n-x");
        assert_eq!(ok("cost: 5 $"), "cost: 5 $");
    }

    #[test]
    fn every_unset_required_variable_is_listed() {
        let (_, problems) = with("${A:?give A} ${B?} ${EMPTY:?not empty} ${SET:?fine}");
        assert_eq!(
            problems,
            [
                "services.web.image: required variable A is unset: give A",
                "services.web.image: required variable B is unset",
                "services.web.image: required variable EMPTY is empty: not empty",
            ]
        );
    }

    #[test]
    fn an_expression_left_open_or_malformed_is_named() {
        let (_, problems) = with("x ${SET");
        assert_eq!(problems.len(), 1);
        assert!(problems[0].contains("left open"), "{problems:?}");
        let (_, problems) = with("${1X} ${SET%x}");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("does not name a variable"));
        assert!(problems[1].contains("is not one of"));
    }

    #[test]
    fn a_tree_is_interpolated_in_its_values_with_paths() {
        let env = |name: &str| (name == "TAG").then(|| "1.2".to_string());
        let mut v = serde_json::json!({"services": {"web": {"image": "x:${TAG}",
            "environment": ["A=${MISSING:?set it}"], "${KEY}": "kept"}}});
        let mut problems = Vec::new();
        interpolate_tree(&mut v, &env, "", &mut problems);
        assert_eq!(v["services"]["web"]["image"], "x:1.2");
        assert_eq!(v["services"]["web"]["${KEY}"], "kept");
        assert_eq!(
            problems,
            ["services.web.environment[0]: required variable MISSING is unset: set it"]
        );
    }
}
