//! The wall clock the scheduler reads and sleeps on, and the time since
//! boot windows are measured on: the system clock in production, a fake in
//! tests.
//!
//! The scheduler sleeps until its next due time *on the wall clock*, and is
//! woken early when the clock is set ([`Clock::sleep_until`]): the system
//! clock does it with a real-time timerfd (`timer.rs`), the fake
//! one when a test steps it. So a wall-clock step (NTP, an operator) is
//! noticed at once, and an idle scheduler does not wake at all.

pub mod timer;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use chrono::{DateTime, Utc};

use timer::Woken;

/// Time since boot, counting suspend (`CLOCK_BOOTTIME`, through
/// `sysinfo(2)`), to the second: a wall-clock step does not move it.
pub fn since_boot() -> Duration {
    let secs = rustix::system::sysinfo().uptime;
    Duration::from_secs(u64::try_from(secs).unwrap_or(0))
}

/// A future the clock resolves when it is time to look again, saying why.
pub type Wake<'a> = Pin<Box<dyn Future<Output = Woken> + Send + 'a>>;

/// A source of wall-clock time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current wall-clock time.
    fn now(&self) -> DateTime<Utc>;

    /// Time since boot (`CLOCK_BOOTTIME`), which no wall-clock step moves:
    /// what a window's age is measured on. `None` where it cannot be read.
    fn since_boot(&self) -> Option<std::time::Duration> {
        Some(since_boot())
    }

    /// Resolve when this clock reads `due` (never, for `None`) or when it is
    /// set (stepped) after it read `seen`, whichever comes first. The
    /// default sleeps on tokio's monotonic timer, at most a second at a
    /// time, so a clock without its own wake-up is still looked at often.
    fn sleep_until(&self, due: Option<DateTime<Utc>>, seen: DateTime<Utc>) -> Wake<'_> {
        let left = due
            .and_then(|d| (d - seen).to_std().ok())
            .unwrap_or(timer::FALLBACK_CAP);
        Box::pin(async move {
            tokio::time::sleep(left.min(timer::FALLBACK_CAP)).await;
            Woken::Cap
        })
    }
}

/// The system's real-time clock. It hears of a clock set through one
/// [`timer::SetWatch`] made at its first sleep and kept for its life, so a
/// set that lands between two sleeps still wakes the next one.
#[derive(Debug, Default)]
pub struct SystemClock {
    set_watch: std::sync::OnceLock<Option<timer::SetWatch>>,
}

impl SystemClock {
    /// The clock, its set watch not yet made.
    pub fn new() -> Self {
        Self::default()
    }

    /// Make the set watch now, rather than at the first sleep: from here on
    /// no set of the clock goes unheard. Needs a tokio reactor.
    pub fn watch_sets(&self) {
        self.set_watch();
    }

    fn set_watch(&self) -> Option<&timer::SetWatch> {
        self.set_watch
            .get_or_init(|| match timer::SetWatch::new() {
                Ok(w) => Some(w),
                Err(e) => {
                    tracing::warn!("no watch on wall-clock sets ({e}): a set is heard only while a sleep's timer is armed");
                    None
                }
            })
            .as_ref()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    /// A real-time timerfd armed at `due`; woken early by the clock's set
    /// watch.
    fn sleep_until(&self, due: Option<DateTime<Utc>>, seen: DateTime<Utc>) -> Wake<'_> {
        Box::pin(timer::sleep_until(due, seen, self.set_watch()))
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
    /// Bumped by every [`FakeClock::jump`], waking sleepers.
    jumps: tokio::sync::watch::Sender<u64>,
}

impl FakeClock {
    /// A clock reading `base` now.
    pub fn new(base: DateTime<Utc>) -> Self {
        Self {
            base,
            start: tokio::time::Instant::now(),
            offset: std::sync::Mutex::new(chrono::TimeDelta::zero()),
            jumps: tokio::sync::watch::Sender::new(0),
        }
    }

    /// Step the wall clock by `delta` (negative: backwards), as NTP would.
    pub fn jump(&self, delta: chrono::TimeDelta) {
        let mut offset = self.offset.lock().unwrap_or_else(|e| e.into_inner());
        *offset += delta;
        drop(offset);
        self.jumps.send_modify(|n| *n += 1);
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

    /// Sleeps on tokio's (pausable) timer until `due`, woken by a jump.
    fn sleep_until(&self, due: Option<DateTime<Utc>>, seen: DateTime<Utc>) -> Wake<'_> {
        let mut jumped = self.jumps.subscribe();
        let now = self.now();
        let left: Option<Duration> = due.map(|d| (d - now).to_std().unwrap_or(Duration::ZERO));
        Box::pin(async move {
            if now < seen {
                return Woken::ClockSet;
            }
            let sleep = async {
                match left {
                    Some(left) => tokio::time::sleep(left).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = sleep => Woken::Due,
                _ = jumped.changed() => Woken::ClockSet,
            }
        })
    }
}
