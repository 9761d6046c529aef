//! The systemd watchdog as the scheduler's loop feeds it: from the loop
//! itself and nowhere else, so a wedged loop stops feeding it.

use std::time::Duration;

use tokio::time::Instant;

/// The watchdog as the scheduler's loop feeds it: `feed` is called every
/// `every` (and once at start), from the loop itself.
pub struct Watchdog {
    /// Time between two feeds (the daemon uses half of `WatchdogSec`).
    pub every: Duration,
    /// Sends the keep-alive.
    pub feed: Box<dyn FnMut() + Send>,
}

impl std::fmt::Debug for Watchdog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watchdog")
            .field("every", &self.every)
            .finish_non_exhaustive()
    }
}

impl Watchdog {
    /// Feed it if its time has come (or is a few milliseconds away: the
    /// loop wakes for it on the wall clock's timer, which may end a hair
    /// before the monotonic one); when the next feed is due.
    pub(super) fn feed_if_due(&mut self, next: Instant) -> Instant {
        let now = Instant::now();
        if now + Duration::from_millis(50) >= next {
            (self.feed)();
            now + self.every
        } else {
            next
        }
    }
}
