//! An env file (`.env`, `--env-file`, a service's `env_file:`) read as
//! compose reads it (compose-go's `dotenv` parser): `KEY=VALUE` or
//! `KEY: VALUE`, `export` allowed, `#` comments; an unquoted value to the
//! end of its line, cut at ` #` and trimmed on the right; single quotes
//! taken as written; double quotes across lines with `\n`, `\t`, `\\`,
//! `\"`, `\$` and `\0NNN` read; a `KEY` alone takes its value from the
//! environment. Unquoted and double-quoted values are interpolated, a
//! variable looked up in the environment first, then among the values
//! given before it (`DATA=${BASE}/data`), by the expander the caller
//! gives (`import`'s interpolation; at creation, none). Errors name the
//! line, never its text. Used by `import` and, for a container whose
//! `env-files-format` is `compose`, at creation.

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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::compose_env_file;
    use proptest::prelude::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn at_creation_a_file_reads_as_compose_reads_it_without_variables() {
        let got = compose_env_file(
            "# a comment\nexport A=plain # note\nB='single $X \\n'\nC=\"two\\nlines \\\"q\\\" \\$HOME\"\nD=\"across\nlines\"\nE=cost$$\nALONE\n",
        )
        .unwrap();
        assert_eq!(
            got,
            pairs(&[
                ("A", "plain"),
                ("B", "single $X \\n"),
                ("C", "two\nlines \"q\" $HOME"),
                ("D", "across\nlines"),
                ("E", "cost$"),
            ])
        );
    }

    /// A value as compose writes it between double quotes.
    fn double_quoted(v: &str) -> String {
        let mut out = String::from("\"");
        for c in v.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '$' => out.push_str("\\$"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Whatever the text, the reader ends, and an error names a line,
        /// never the text.
        #[test]
        fn any_text_reads_or_is_refused_by_line(text in "[ -~\n\t'\"#=\\\\$]{0,200}") {
            if let Err(e) = compose_env_file(&text) {
                prop_assert!(e.starts_with("line "), "{}", e);
            }
        }

        /// A value written in either quoting reads back as it was.
        #[test]
        fn quoted_values_read_back(
            entries in proptest::collection::vec(
                ("[A-Z_][A-Z0-9_]{0,8}", "[ -~\n\t]{0,40}", any::<bool>()), 1..8)
        ) {
            let mut text = String::new();
            let mut want: Vec<(String, String)> = Vec::new();
            for (k, v, single) in &entries {
                // A backslash before a quote keeps it open, between single
                // quotes too (compose-go's terminator rule).
                let single = *single && !v.contains(['\'', '\n', '\\']);
                let written = if single { format!("'{v}'") } else { double_quoted(v) };
                text.push_str(&format!("{k}={written}\n"));
                match want.iter_mut().find(|(wk, _)| wk == k) {
                    Some(slot) => slot.1 = v.clone(),
                    None => want.push((k.clone(), v.clone())),
                }
            }
            prop_assert_eq!(compose_env_file(&text).unwrap(), want);
        }
    }
}
