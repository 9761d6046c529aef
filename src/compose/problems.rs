//! What an import refuses and what it notes, gathered as it reads: every
//! problem of a project is listed at once, each naming its place.
//!
//! A line names the place and quotes what is wrong there, which may be a
//! project's own text (a service name, a port written wrong): each part is
//! cut to a bound, so that a refusal never prints more of a file than it
//! needs to name the fault. The bounds leave room for the longest fix a
//! refusal gives after a path.

/// The most characters of a place (`SERVICE: FIELD`) a line shows.
const MAX_AT: usize = 128;

/// The most characters of a reason a line shows: room for a path, a
/// quoted value and the fix, which comes last.
const MAX_WHY: usize = 512;

/// What an import refuses and notes, each line naming the service and
/// field.
#[derive(Debug, Default)]
pub struct Problems {
    pub refused: Vec<String>,
    pub notes: Vec<String>,
}

impl Problems {
    pub(super) fn refuse(&mut self, at: impl Into<String>, why: impl Into<String>) {
        self.refused.push(line(at.into(), why.into()));
    }

    pub(super) fn note(&mut self, at: impl Into<String>, what: impl Into<String>) {
        self.notes.push(line(at.into(), what.into()));
    }
}

/// `AT: WHY`, each cut to its bound.
fn line(at: String, why: String) -> String {
    format!("{}: {}", cut(at, MAX_AT), cut(why, MAX_WHY))
}

/// `text`, or its first `max` characters and a mark that more was cut.
fn cut(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text,
        Some((at, _)) => format!("{}… (cut)", &text[..at]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_long_value_is_cut_and_a_short_one_kept_whole() {
        let mut p = Problems::default();
        p.refuse(
            "web: ports[0]",
            format!("{:?} is not a port", "9".repeat(10_000)),
        );
        p.note("web", "kept");
        assert!(
            p.refused[0].chars().count() <= MAX_AT + MAX_WHY + 20,
            "{}",
            p.refused[0]
        );
        assert!(p.refused[0].starts_with("web: ports[0]: \"999"));
        assert!(p.refused[0].ends_with("… (cut)"));
        assert_eq!(p.notes, vec!["web: kept"]);
    }

    proptest! {
        #[test]
        fn every_line_is_bounded_whatever_it_quotes(at in ".{0,400}", why in ".{0,2000}") {
            let mut p = Problems::default();
            p.refuse(at.clone(), why.clone());
            let shown = &p.refused[0];
            prop_assert!(shown.chars().count() <= MAX_AT + MAX_WHY + 2 * "… (cut)".chars().count() + 2);
            if at.chars().count() <= MAX_AT && why.chars().count() <= MAX_WHY {
                prop_assert_eq!(shown, &format!("{at}: {why}"));
            }
        }
    }
}
