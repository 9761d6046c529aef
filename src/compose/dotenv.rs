//! An env file (`.env`, `--env-file`, a service's `env_file:`) read as
//! compose reads it: the reader is [`crate::container_spec::dotenv`]
//! (shared with the apply, which reads a container's env-files in
//! compose's format when it is told to); here, the interpolation of its
//! values through compose's rules.

use super::interpolate::Interpolator;

use std::collections::HashMap;

pub use crate::container_spec::dotenv::{read, read_lines};

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
