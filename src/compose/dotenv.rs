//! An env file (`.env`, `--env-file`, a service's `env_file:`) read as
//! compose reads it (compose-go's `dotenv` parser): `KEY=VALUE` or
//! `KEY: VALUE`, `export` allowed, `#` comments; an unquoted value to the
//! end of its line, cut at ` #` and trimmed on the right; single quotes
//! taken as written; double quotes across lines with `\n`, `\t`, `\\`,
//! `\"`, `\$` and `\0NNN` read; a `KEY` alone takes its value from the
//! environment. Unquoted and double-quoted values are interpolated, a
//! variable looked up in the environment first, then among the values
//! given before it (`DATA=${BASE}/data`). Errors name the line, never its
//! text.

use super::interpolate::Interpolator;

use std::collections::HashMap;

/// What interpolates a value, given the values read before it and the
/// line the value begins on.
pub type Expand<'a> =
    &'a mut dyn FnMut(&str, &HashMap<String, String>, usize) -> Result<String, String>;

/// One variable of an env file, and the line it begins on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    pub key: String,
    pub value: String,
    pub line: usize,
}

/// Read `text` into its pairs, in order (a key given again keeps its
/// place and takes the later value). `expand` interpolates a value given
/// the pairs read so far; `inherit` looks a key alone up.
pub fn read(
    text: &str,
    expand: Expand<'_>,
    inherit: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, String> {
    Ok(read_lines(text, expand, inherit)?
        .into_iter()
        .map(|p| (p.key, p.value))
        .collect())
}

/// [`read`], each pair with the line it begins on.
pub fn read_lines(
    text: &str,
    expand: Expand<'_>,
    inherit: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Pair>, String> {
    let mut out: Vec<Pair> = Vec::new();
    // Each key's place in `out`, and its value, for lookups: one pass.
    let mut at: HashMap<String, usize> = HashMap::new();
    let mut values: HashMap<String, String> = HashMap::new();
    fn set(
        out: &mut Vec<Pair>,
        at: &mut HashMap<String, usize>,
        values: &mut HashMap<String, String>,
        pair: Pair,
    ) {
        values.insert(pair.key.clone(), pair.value.clone());
        match at.get(&pair.key) {
            Some(&i) => out[i].value = pair.value,
            None => {
                at.insert(pair.key.clone(), out.len());
                out.push(pair);
            }
        }
    }
    let mut line = 1usize;
    let mut rest = text.strip_prefix('\u{feff}').unwrap_or(text);
    loop {
        // The next statement: blank space and comment lines skipped.
        let start = rest.find(|c: char| !c.is_whitespace());
        let Some(start) = start else { break };
        line += rest[..start].matches('\n').count();
        rest = &rest[start..];
        if rest.starts_with('#') {
            match rest.find('\n') {
                Some(nl) => {
                    rest = &rest[nl..];
                    continue;
                }
                None => break,
            }
        }
        if let Some(after) = rest.strip_prefix("export") {
            if after.starts_with([' ', '\t']) {
                rest = after.trim_start_matches(is_space);
            }
        }
        // The key, to '=', ':' or the end of the line.
        let mut end = rest.len();
        let mut sep = None;
        for (i, c) in rest.char_indices() {
            match c {
                '=' | ':' | '\n' => {
                    end = i;
                    sep = Some(c);
                    break;
                }
                '_' | '.' | '-' | '[' | ']' => {}
                c if is_space(c) || c.is_alphanumeric() => {}
                _ => {
                    return Err(format!(
                        "line {line}: a character that cannot be in a variable name (letters, digits, '_', '.', '-', '[' and ']')"
                    ))
                }
            }
        }
        let key = rest[..end].trim_end_matches(is_space).to_owned();
        if key.contains(is_space) {
            return Err(format!("line {line}: a variable name cannot hold a space"));
        }
        if key.is_empty() {
            return Err(format!("line {line}: a value without a variable name"));
        }
        if matches!(sep, None | Some('\n')) {
            // A name alone: its value from the environment, if it has one.
            if let Some(v) = inherit(&key) {
                set(
                    &mut out,
                    &mut at,
                    &mut values,
                    Pair {
                        key,
                        value: v,
                        line,
                    },
                );
            }
            rest = &rest[end..];
            continue;
        }
        rest = rest[end + 1..].trim_start_matches(is_space);
        let start_line = line;
        let value;
        match rest.chars().next() {
            Some(quote @ ('"' | '\'')) => {
                let (raw, used, lines) = quoted(&rest[1..], quote)
                    .ok_or_else(|| format!("line {line}: a quoted value left open"))?;
                let after = &rest[1 + used..];
                let tail_end = after.find('\n').unwrap_or(after.len());
                let tail = after[..tail_end].trim_matches(is_space);
                if !tail.is_empty() && !tail.starts_with('#') {
                    return Err(format!(
                        "line {}: something after a closing quote that is not a comment",
                        line + lines
                    ));
                }
                value = if quote == '"' {
                    expand(&escapes(&raw), &values, start_line)
                        .map_err(|e| format!("line {line}: {e}"))?
                } else {
                    raw
                };
                line += lines;
                rest = &after[tail_end..];
            }
            _ => {
                let nl = rest.find('\n').unwrap_or(rest.len());
                let raw = &rest[..nl];
                let raw = raw.split(" #").next().unwrap_or_default();
                let raw = raw.trim_end();
                value =
                    expand(raw, &values, start_line).map_err(|e| format!("line {line}: {e}"))?;
                rest = &rest[nl..];
            }
        }
        set(
            &mut out,
            &mut at,
            &mut values,
            Pair {
                key,
                value,
                line: start_line,
            },
        );
    }
    Ok(out)
}

/// Not a line break, but blank (compose-go's `isSpace`).
fn is_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{85}' | '\u{a0}'
    )
}

/// A quoted value up to its closing `quote`: the text inside (a
/// backslash kept but before the quote itself), the bytes used with the
/// closing quote, and the line breaks crossed.
fn quoted(text: &str, quote: char) -> Option<(String, usize, usize)> {
    let mut out = String::new();
    let mut escaped = false;
    let mut lines = 0;
    for (i, c) in text.char_indices() {
        if c == '\n' {
            lines += 1;
        }
        if c != quote {
            if !escaped && c == '\\' {
                escaped = true;
                continue;
            }
            if escaped {
                escaped = false;
                out.push('\\');
            }
            out.push(c);
            continue;
        }
        if escaped {
            escaped = false;
            out.push(c);
            continue;
        }
        return Some((out, i + c.len_utf8(), lines));
    }
    None
}

/// The shell escapes compose reads in a double-quoted value.
fn escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek().copied() {
            Some('a') => out.push('\u{7}'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('v') => out.push('\u{b}'),
            Some('"') => out.push('"'),
            Some('\\') => out.push('\\'),
            // `\$` is a dollar, never a variable: `$$` to the interpolation.
            Some('$') => out.push_str("$$"),
            Some('0') => {
                chars.next();
                let mut n = 0u32;
                let mut digits = 0;
                while digits < 3 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            n = n * 8 + d;
                            digits += 1;
                            chars.next();
                        }
                        None => break,
                    }
                }
                match char::from_u32(n) {
                    Some(ch) if digits > 0 => out.push(ch),
                    _ => out.push_str("\\0"),
                }
                continue;
            }
            _ => {
                out.push('\\');
                continue;
            }
        }
        chars.next();
    }
    out
}

/// An expander for [`read`]: interpolation through `interpolator`'s
/// rules, the `environment` first, then the values read before.
pub fn expander<'a>(
    environment: &'a dyn Fn(&str) -> Option<String>,
    at: &'a str,
    unset: &'a mut Vec<usize>,
) -> impl FnMut(&str, &HashMap<String, String>, usize) -> Result<String, String> + 'a {
    // One budget for the whole file: a fresh one per value let each line
    // of `B=$A$A$A$A` make another 32 MiB.
    let mut left = super::interpolate::MAX_BYTES;
    move |raw: &str, before: &HashMap<String, String>, line: usize| {
        let lookup = |name: &str| environment(name).or_else(|| before.get(name).cloned());
        let mut i = Interpolator::with_left(&lookup, left);
        let value = i.text(raw, at);
        left = i.left();
        if !i.unset.is_empty() {
            unset.push(line);
        }
        match i.problems.into_iter().next() {
            Some(p) => Err(p.strip_prefix(&format!("{at}: ")).unwrap_or(&p).to_owned()),
            None => Ok(value),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/op".into()),
            "FROM_ENV" => Some("env".into()),
            _ => None,
        }
    }

    fn pairs(text: &str) -> Result<Vec<(String, String)>, String> {
        let mut unset = Vec::new();
        let mut expand = expander(&env, ".env", &mut unset);
        read(text, &mut expand, &env)
    }

    fn p(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_file_of_values_that_each_double_a_large_one_is_refused_within_one_budget() {
        // 1 MiB, then lines each making 8 MiB of it: alone each fits the
        // 32 MiB budget, together they would make 800 MiB.
        let mut text = format!("A={}\n", "x".repeat(1 << 20));
        for n in 0..100 {
            text.push_str(&format!("B{n}=$A$A$A$A$A$A$A$A\n"));
        }
        let e = pairs(&text).expect_err("refused");
        assert!(e.contains("more than 32 MiB"), "{}", &e[..e.len().min(200)]);
    }

    #[test]
    fn a_dotenv_file_reads_as_compose_reads_it() {
        let got = pairs(
            "# comment\nA=1\nexport B = two words # note\nC='lit ${X} #'\nD=\"line\\nnext \\\"q\\\"\"\n\nE=\nF: yaml\nFROM_ENV\nUNSET_ALONE\n",
        )
        .unwrap();
        assert_eq!(
            got,
            p(&[
                ("A", "1"),
                ("B", "two words"),
                ("C", "lit ${X} #"),
                ("D", "line\nnext \"q\""),
                ("E", ""),
                ("F", "yaml"),
                ("FROM_ENV", "env"),
            ])
        );
    }

    #[test]
    fn values_use_earlier_ones_and_the_environment() {
        let got = pairs(
            "BASE=/srv\nDATA=${BASE}/data\nQ=\"$HOME/x \\$HOME\"\nS='${BASE}'\nD=${NOPE:-d}\nBASE=/other\nAGAIN=$BASE\n",
        )
        .unwrap();
        assert_eq!(
            got,
            p(&[
                ("BASE", "/other"),
                ("DATA", "/srv/data"),
                ("Q", "/home/op/x $HOME"),
                ("S", "${BASE}"),
                ("D", "d"),
                ("AGAIN", "/other"),
            ])
        );
        let mut unset = Vec::new();
        let mut expand = expander(&env, ".env", &mut unset);
        read("A=${MISSING}\n", &mut expand, &env).unwrap();
        drop(expand);
        assert_eq!(unset, [1]);
    }

    #[test]
    fn a_multi_line_double_quoted_value_reads() {
        let got = pairs("K=\"a\nb\"\nN=2\n").unwrap();
        assert_eq!(got, p(&[("K", "a\nb"), ("N", "2")]));
    }

    #[test]
    fn errors_name_the_line_never_its_text() {
        for (text, want) in [
            ("root!secret\n", "line 1: a character that cannot be"),
            ("A=1\nB='open\n", "line 2: a quoted value left open"),
            (
                "A=1\n\nB C=2\n",
                "line 3: a variable name cannot hold a space",
            ),
            (
                "A=\"x\" trailing\n",
                "line 1: something after a closing quote",
            ),
            ("=1\n", "line 1: a value without a variable name"),
            ("A=${X\n", "line 1: an expression is left open"),
            ("pa$$word=secret\n", "line 1: a character that cannot be"),
        ] {
            let e = pairs(text).unwrap_err();
            assert!(e.starts_with(want), "{text:?}: {e}");
            assert!(!e.contains("secret"), "{e}");
        }
    }
}
