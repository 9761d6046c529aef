//! Compose's interpolation of `${VAR}` in a project's values: `$VAR`,
//! `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?message}`,
//! `${VAR?message}`, `${VAR:+other}`, `${VAR+other}` and `$$` for a
//! dollar. Defaults may themselves hold `${...}`, nested at most
//! [`MAX_NESTING`] deep (compose's own recursion has no bound; a project
//! nested 20,000 deep ends here with a message, not a stack overflow).
//! What interpolation writes is bounded in bytes ([`MAX_BYTES`]), however
//! often a large variable is used. Every problem is collected (each unset
//! required variable, each expression left open), and each variable used
//! unset is remembered, as compose warns of it. No message quotes a value.

use std::collections::BTreeMap;

use serde_json::Value;

/// Where variables come from: the process environment over the project's
/// `.env` (or `--env-file`), as compose orders them.
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// `${...}` inside a default inside a default ..., at most.
pub const MAX_NESTING: usize = 32;
/// Bytes all interpolated values of one import may hold.
pub const MAX_BYTES: usize = 32 << 20;

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// One import's interpolation: the lookup, and what it met.
pub struct Interpolator<'a> {
    lookup: Lookup<'a>,
    /// Problems, each naming where.
    pub problems: Vec<String>,
    /// Variables used unset (not through a default), with where.
    pub unset: BTreeMap<String, Vec<String>>,
    left: usize,
    over: bool,
}

impl std::fmt::Debug for Interpolator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interpolator")
            .field("problems", &self.problems)
            .field("unset", &self.unset)
            .finish_non_exhaustive()
    }
}

impl<'a> Interpolator<'a> {
    pub fn new(lookup: Lookup<'a>) -> Self {
        Self::with_left(lookup, MAX_BYTES)
    }

    /// An interpolation that may make at most `left` bytes more: what an
    /// earlier one of the same input left (a `.env` read value by value).
    pub fn with_left(lookup: Lookup<'a>, left: usize) -> Self {
        Interpolator {
            lookup,
            problems: Vec::new(),
            unset: BTreeMap::new(),
            left,
            over: false,
        }
    }

    /// What is left of the bytes this interpolation may make.
    pub fn left(&self) -> usize {
        self.left
    }

    /// The notes compose's warnings become: one per variable used unset.
    pub fn unset_notes(&self) -> Vec<String> {
        self.unset
            .iter()
            .map(|(name, at)| {
                format!(
                    "{}: the variable {name} is not set: an empty string is used, as compose uses it",
                    at.join(", ")
                )
            })
            .collect()
    }

    fn spend(&mut self, at: &str, bytes: usize) -> bool {
        if self.over {
            return false;
        }
        match self.left.checked_sub(bytes) {
            Some(left) => {
                self.left = left;
                true
            }
            None => {
                self.over = true;
                self.problems.push(format!(
                    "{at}: interpolation makes more than {} MiB of text in this project: a variable too large, or used too often",
                    MAX_BYTES >> 20
                ));
                false
            }
        }
    }

    fn note_unset(&mut self, name: &str, at: &str) {
        let places = self.unset.entry(name.to_owned()).or_default();
        // A variable used in a thousand places is named once, with a few.
        if places.len() < 3 && !places.iter().any(|p| p == at) {
            places.push(at.to_owned());
        }
    }

    /// `text` with every expression replaced.
    pub fn text(&mut self, text: &str, at: &str) -> String {
        let out = self.nested(text, at, 0);
        if self.spend(at, out.len()) {
            out
        } else {
            String::new()
        }
    }

    fn nested(&mut self, text: &str, at: &str, depth: usize) -> String {
        if depth > MAX_NESTING {
            self.problems.push(format!(
                "{at}: ${{...}} nested more than {MAX_NESTING} deep: write it more plainly"
            ));
            return String::new();
        }
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
                    self.problems.push(format!(
                        "{at}: an expression is left open: a \"${{\" without its '}}'"
                    ));
                    return out;
                };
                let value = self.expression(&inner[..end], at, depth);
                out.push_str(&value);
                rest = &inner[end + 1..];
            } else if rest.starts_with(is_name_start) {
                let end = rest.find(|c| !is_name(c)).unwrap_or(rest.len());
                let name = &rest[..end];
                match (self.lookup)(name) {
                    Some(v) => out.push_str(&v),
                    None => self.note_unset(name, at),
                }
                rest = &rest[end..];
            } else {
                // A lone '$' (before a space, at the end): kept, as compose
                // keeps it.
                out.push('$');
            }
            if out.len() > self.left {
                self.spend(at, out.len());
                return String::new();
            }
        }
        out.push_str(rest);
        out
    }

    /// One `${...}` body.
    fn expression(&mut self, body: &str, at: &str, depth: usize) -> String {
        let end = body.find(|c| !is_name(c)).unwrap_or(body.len());
        let (name, op) = body.split_at(end);
        if name.is_empty() || !name.starts_with(is_name_start) {
            self.problems.push(format!(
                "{at}: an expression that does not name a variable (a name is letters, digits and '_', not starting with a digit)"
            ));
            return String::new();
        }
        let value = (self.lookup)(name);
        let set = value.is_some();
        let non_empty = value.as_deref().is_some_and(|v| !v.is_empty());
        if op.is_empty() {
            if !set {
                self.note_unset(name, at);
            }
            return value.unwrap_or_default();
        }
        for (prefix, needs_value) in [(":-", true), ("-", false)] {
            if let Some(default) = op.strip_prefix(prefix) {
                let ok = if needs_value { non_empty } else { set };
                return if ok {
                    value.unwrap_or_default()
                } else {
                    self.nested(default, at, depth + 1)
                };
            }
        }
        for (prefix, needs_value) in [(":?", true), ("?", false)] {
            if let Some(message) = op.strip_prefix(prefix) {
                let ok = if needs_value { non_empty } else { set };
                if !ok {
                    let message = self.nested(message, at, depth + 1);
                    let why = if set { "empty" } else { "unset" };
                    self.problems.push(if message.is_empty() {
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
                    self.nested(other, at, depth + 1)
                } else {
                    String::new()
                };
            }
        }
        self.problems.push(format!(
            "{at}: the expression on {name} is not one of :- - :? ? :+ +"
        ));
        String::new()
    }

    /// Interpolate every string of `value` (keys are left as written, as
    /// compose leaves them); `at` names where each lies. The tree is no
    /// deeper than the YAML reader allows.
    pub fn tree(&mut self, value: &mut Value, at: &str) {
        match value {
            Value::String(s) => *s = self.text(s, at),
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    self.tree(item, &format!("{at}[{i}]"));
                }
            }
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    let path = if at.is_empty() {
                        k.clone()
                    } else {
                        format!("{at}.{k}")
                    };
                    self.tree(v, &path);
                }
            }
            _ => {}
        }
    }
}

/// The index of the `}` closing an expression that starts at `text[0]`,
/// nested `${...}` skipped; linear, whatever the nesting.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "SET" => Some("value".to_string()),
            "EMPTY" => Some(String::new()),
            "NESTED" => Some("n".to_string()),
            _ => None,
        }
    }

    fn with(text: &str) -> (String, Vec<String>, Vec<String>) {
        let mut i = Interpolator::new(&env);
        let out = i.text(text, "services.web.image");
        (out, i.problems, i.unset.keys().cloned().collect())
    }

    fn ok(text: &str) -> String {
        let (out, problems, _) = with(text);
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
    fn a_variable_used_unset_is_remembered_as_compose_warns_of_it() {
        let (out, problems, unset) = with("${A}-$B-${C:-c}-${D-d}-${E:+e}");
        assert_eq!(out, "--c-d-");
        assert!(problems.is_empty());
        assert_eq!(unset, ["A", "B"]);
        let mut i = Interpolator::new(&env);
        i.text("${A}", "services.web.image");
        i.text("${A}", "services.db.image");
        assert_eq!(
            i.unset_notes(),
            ["services.web.image, services.db.image: the variable A is not set: an empty string is used, as compose uses it"]
        );
    }

    #[test]
    fn every_unset_required_variable_is_listed() {
        let (_, problems, _) = with("${A:?give A} ${B?} ${EMPTY:?not empty} ${SET:?fine}");
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
    fn an_expression_left_open_or_malformed_is_named_without_its_text() {
        let (_, problems, _) = with("x ${SECRETWORD");
        assert_eq!(problems.len(), 1);
        assert!(problems[0].contains("left open"), "{problems:?}");
        assert!(!problems[0].contains("SECRETWORD"), "{problems:?}");
        let (_, problems, _) = with("${1X} ${SET%x}");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("does not name a variable"));
        assert!(problems[1].contains("is not one of"));
    }

    #[test]
    fn nesting_is_bounded_without_recursing_on_the_input() {
        let deep = "${A:-".repeat(20_000) + &"}".repeat(20_000);
        let (out, problems, _) = with(&deep);
        assert_eq!(out, "");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("nested more than 32 deep"));
        let fine = "${A:-".repeat(30) + "x" + &"}".repeat(30);
        assert_eq!(ok(&fine), "x");
    }

    #[test]
    fn what_interpolation_writes_is_bounded_in_bytes() {
        let big = "x".repeat(1 << 20);
        let lookup = |name: &str| (name == "BIG").then(|| big.clone());
        let mut i = Interpolator::new(&lookup);
        let text = "${BIG}".repeat(40);
        let out = i.text(&text, "services.web.command");
        assert_eq!(out, "");
        assert_eq!(i.problems.len(), 1, "{:?}", i.problems);
        assert!(i.problems[0].contains("more than 32 MiB"));
        // Further values are refused quietly: the one problem says it.
        assert_eq!(i.text("${BIG}", "x"), "");
        assert_eq!(i.problems.len(), 1);
    }

    #[test]
    fn a_tree_is_interpolated_in_its_values_with_paths() {
        let lookup = |name: &str| (name == "TAG").then(|| "1.2".to_string());
        let mut v = serde_json::json!({"services": {"web": {"image": "x:${TAG}",
            "environment": ["A=${MISSING:?set it}"], "${KEY}": "kept"}}});
        let mut i = Interpolator::new(&lookup);
        i.tree(&mut v, "");
        assert_eq!(v["services"]["web"]["image"], "x:1.2");
        assert_eq!(v["services"]["web"]["${KEY}"], "kept");
        assert_eq!(
            i.problems,
            ["services.web.environment[0]: required variable MISSING is unset: set it"]
        );
    }
}
