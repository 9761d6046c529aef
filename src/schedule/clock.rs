//! The wall clock the scheduler reads: the system clock in production, a
//! fake in tests.
//!
//! Sleeping is always done on tokio's monotonic timer, capped short by the
//! scheduler, so that a wall-clock step (NTP, an operator) is noticed within
//! one cap instead of after a long monotonic sleep.

use chrono::{DateTime, Utc};

/// A source of wall-clock time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current wall-clock time.
    fn now(&self) -> DateTime<Utc>;

    /// Time since boot (`CLOCK_BOOTTIME`), which no wall-clock step moves:
    /// what a window's age is measured on. `None` where it cannot be read.
    fn since_boot(&self) -> Option<std::time::Duration> {
        Some(crate::store::since_boot())
    }
}

/// The system's real-time clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A wall clock that advances with tokio's (pausable) monotonic time and can
/// be stepped, for tests: `now = base + elapsed(tokio) + jumps`. Its time
/// since boot starts at one hour and advances with tokio's time only: a
/// jump does not move it.
#[derive(Debug)]
pub struct FakeClock {
    base: DateTime<Utc>,
    start: tokio::time::Instant,
    offset: std::sync::Mutex<chrono::TimeDelta>,
}

impl FakeClock {
    /// A clock reading `base` now.
    pub fn new(base: DateTime<Utc>) -> Self {
        Self {
            base,
            start: tokio::time::Instant::now(),
            offset: std::sync::Mutex::new(chrono::TimeDelta::zero()),
        }
    }

    /// Step the wall clock by `delta` (negative: backwards), as NTP would.
    pub fn jump(&self, delta: chrono::TimeDelta) {
        let mut offset = self.offset.lock().unwrap_or_else(|e| e.into_inner());
        *offset += delta;
    }
}

impl Clock for FakeClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed =
            chrono::TimeDelta::from_std(self.start.elapsed()).unwrap_or(chrono::TimeDelta::MAX);
        let offset = *self.offset.lock().unwrap_or_else(|e| e.into_inner());
        self.base + elapsed + offset
    }

    fn since_boot(&self) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_secs(3600) + self.start.elapsed())
    }
}
