//! Which steps `status` lists when there are many: a node of thousands of
//! scheduled steps would print thousands of lines (and the daemon build
//! megabytes for them) for an operator who wants to know what is wrong and
//! what comes next. Above [`LISTED_IN_FULL`] steps, `status` lists those
//! that need to be seen (running, suspended, whose last run failed, whose
//! container could not be made ready) and the [`NEXT_DUE`] due first, and
//! says how many it left out; `status --steps` and `status --json` list
//! every one.

use chrono::{DateTime, Utc};

/// Up to this many steps, `status` lists every one.
pub const LISTED_IN_FULL: usize = 20;

/// Above [`LISTED_IN_FULL`], how many of the steps due first are listed.
pub const NEXT_DUE: usize = 10;

/// What the listing needs to know of one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepFacts {
    /// Its next due time.
    pub next_fire: Option<DateTime<Utc>>,
    /// Running, suspended, failed last, or not made ready: always listed.
    pub to_be_seen: bool,
}

impl StepFacts {
    /// Whether a step's last run failed: it ran, and has not succeeded
    /// since (or ever).
    pub fn failed_last(
        last_run: Option<DateTime<Utc>>,
        last_success: Option<DateTime<Utc>>,
    ) -> bool {
        match (last_run, last_success) {
            (Some(run), Some(ok)) => ok < run,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }
}

/// The indices of the steps to list, in their order; `None` when every
/// step is listed.
pub fn listed(steps: &[StepFacts]) -> Option<Vec<usize>> {
    if steps.len() <= LISTED_IN_FULL {
        return None;
    }
    let mut by_due: Vec<usize> = (0..steps.len())
        .filter(|&i| steps[i].next_fire.is_some())
        .collect();
    // The NEXT_DUE due first, in no order: a selection, not a sort of
    // thousands.
    let key = |&i: &usize| (steps[i].next_fire, i);
    if by_due.len() > NEXT_DUE {
        by_due.select_nth_unstable_by_key(NEXT_DUE, key);
    }
    let mut keep = vec![false; steps.len()];
    for &i in by_due.iter().take(NEXT_DUE) {
        keep[i] = true;
    }
    for (i, s) in steps.iter().enumerate() {
        keep[i] |= s.to_be_seen;
    }
    Some((0..steps.len()).filter(|&i| keep[i]).collect())
}

/// The steps of `steps` to list, in their order (every one when there
/// are few): what [`listed`] picks by the `facts` of each.
pub fn pick<T>(steps: &[T], facts: impl Fn(&T) -> StepFacts) -> Vec<&T> {
    let all: Vec<StepFacts> = steps.iter().map(facts).collect();
    match listed(&all) {
        Some(places) => places.into_iter().map(|i| &steps[i]).collect(),
        None => steps.iter().collect(),
    }
}

/// The line that says what was left out.
pub fn left_out_line(total: usize, listed: usize) -> String {
    format!(
        "steps: {total} scheduled, {listed} listed (the {NEXT_DUE} due first and any running, suspended, failed last or not ready); mesh-host status --steps lists every one"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minute: u32) -> Option<DateTime<Utc>> {
        Some(
            DateTime::parse_from_rfc3339(&format!("2026-12-04T10:{minute:02}:00Z"))
                .expect("time")
                .to_utc(),
        )
    }

    #[test]
    fn a_few_steps_are_all_listed() {
        let steps = vec![
            StepFacts {
                next_fire: at(1),
                to_be_seen: false
            };
            LISTED_IN_FULL
        ];
        assert_eq!(listed(&steps), None);
    }

    #[test]
    fn many_list_the_next_due_and_those_to_be_seen_in_their_order() {
        // 100 steps due in reverse order of their place; 3 need seeing.
        let mut steps: Vec<StepFacts> = (0..100)
            .map(|i| StepFacts {
                next_fire: at(59 - (i % 60) as u32),
                to_be_seen: false,
            })
            .collect();
        steps[5].to_be_seen = true;
        steps[50].to_be_seen = true;
        steps[70].next_fire = None;
        steps[70].to_be_seen = true;
        let shown = listed(&steps).expect("a listing");
        // Places 0..60 are due at minutes 59..0, places 60..100 at 59..20:
        // the ten due first are places 50..=59.
        let mut want = vec![5, 70];
        want.extend(50..60);
        want.sort();
        assert_eq!(shown, want);
    }

    #[test]
    fn pick_gives_the_listed_steps_themselves_or_every_one() {
        let few = [1, 2, 3];
        let facts = |_: &u32| StepFacts {
            next_fire: at(1),
            to_be_seen: false,
        };
        assert_eq!(pick(&few, facts), vec![&1, &2, &3]);
        let many: Vec<u32> = (0..30).collect();
        let shown = pick(&many, |&i| StepFacts {
            next_fire: at(59 - i),
            to_be_seen: i == 0,
        });
        let mut want: Vec<u32> = (20..30).collect();
        want.insert(0, 0);
        assert_eq!(shown, want.iter().collect::<Vec<_>>());
    }

    #[test]
    fn a_run_newer_than_the_last_success_failed() {
        assert!(StepFacts::failed_last(at(5), at(4)));
        assert!(StepFacts::failed_last(at(5), None));
        assert!(!StepFacts::failed_last(at(5), at(5)));
        assert!(!StepFacts::failed_last(None, None));
    }
}
