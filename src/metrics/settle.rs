//! When the metrics text is written after a change: once the changes have
//! settled a moment, with every change that came meanwhile, and never later
//! than that moment after the first change not yet written, however steady
//! the changes.
//!
//! The text is rendered from every step's status; written at each change,
//! a fire's start (`step-started`, a window opened) would render it while
//! the fire's container starts, on the same cores (docs/benchmarks.md).

use std::time::Duration;

use tokio::time::Instant;

/// The write pending, if any.
#[derive(Debug, Clone, Copy)]
pub struct Settle {
    after: Duration,
    due: Option<Instant>,
}

impl Settle {
    /// Nothing pending; a change is written `after` it.
    pub fn new(after: Duration) -> Settle {
        Settle { after, due: None }
    }

    /// Something the text shows changed at `now`. A write already pending
    /// keeps its time: a later change rides with it.
    pub fn changed(&mut self, now: Instant) {
        if self.due.is_none() {
            self.due = Some(now + self.after);
        }
    }

    /// When the pending write is due; `None` when nothing is pending.
    pub fn due(&self) -> Option<Instant> {
        self.due
    }

    /// The text is being written now: nothing is pending any more. Whether
    /// something was (at shutdown, a pending change is written then).
    pub fn take(&mut self) -> bool {
        self.due.take().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AFTER: Duration = Duration::from_millis(500);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn nothing_is_pending_until_something_changes() {
        let mut s = Settle::new(AFTER);
        assert_eq!(s.due(), None);
        assert!(!s.take());
    }

    #[test]
    fn a_change_is_written_the_settling_time_after_it() {
        let t0 = Instant::now();
        let mut s = Settle::new(AFTER);
        s.changed(t0);
        assert_eq!(s.due(), Some(t0 + AFTER));
    }

    #[test]
    fn changes_meanwhile_ride_with_the_first_and_never_push_it_back() {
        let t0 = Instant::now();
        let mut s = Settle::new(AFTER);
        // A change every 100 ms, steadier than the settling time: the
        // write stays due 500 ms after the first.
        for i in 0..20 {
            s.changed(t0 + ms(100 * i));
            assert_eq!(
                s.due(),
                Some(t0 + AFTER),
                "after the change at {} ms",
                100 * i
            );
        }
    }

    #[test]
    fn after_a_write_the_next_change_starts_a_new_wait() {
        let t0 = Instant::now();
        let mut s = Settle::new(AFTER);
        s.changed(t0);
        assert!(s.take());
        assert_eq!(s.due(), None);
        assert!(!s.take(), "a write takes what is pending once");
        s.changed(t0 + ms(600));
        assert_eq!(s.due(), Some(t0 + ms(1100)));
    }

    #[test]
    fn a_burst_is_written_once() {
        let t0 = Instant::now();
        let mut s = Settle::new(AFTER);
        let mut writes = 0;
        // 50 changes within 50 ms (a fire beside many steps: its start,
        // its window, its report), then the writer's time comes.
        for i in 0..50 {
            s.changed(t0 + ms(i));
        }
        let mut now = t0 + ms(50);
        while now < t0 + ms(2000) {
            if s.due().is_some_and(|d| d <= now) && s.take() {
                writes += 1;
            }
            now += ms(10);
        }
        assert_eq!(writes, 1);
    }
}
