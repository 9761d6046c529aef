//! Sleeping until a wall-clock time, woken early when the wall clock is
//! set: a `timerfd` on `CLOCK_REALTIME`, armed at an absolute time with
//! `TFD_TIMER_CANCEL_ON_SET`.
//!
//! The kernel moves an absolute real-time timer with the clock, so a step
//! forward past the due time fires it at once and a step backward delays it
//! to the same wall-clock time; and `TFD_TIMER_CANCEL_ON_SET` makes the
//! timer's read fail with `ECANCELED` whenever the clock is *set* (NTP
//! stepping it, `date -s`, an operator), so the scheduler wakes and looks at
//! its table again (a step backward re-arms jobs earlier). Slewing by NTP is
//! not a set, and needs no wake. Nothing here polls: an idle scheduler
//! sleeps in `epoll_wait` until the due time, a set, or another event.
//!
//! Where no timerfd can be made (it always can on Linux ≥ 2.6.27), the
//! sleep falls back to tokio's monotonic timer capped at [`FALLBACK_CAP`],
//! which notices a set within that cap, as the scheduler did before.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use rustix::fd::OwnedFd;
use rustix::io::Errno;
use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags,
    Timespec,
};
use tokio::io::unix::AsyncFd;

/// Longest sleep when no timerfd is available.
pub const FALLBACK_CAP: Duration = Duration::from_secs(1);

/// How far ahead the timer is armed when nothing is due: it must be armed
/// for a clock set to be reported at all.
const NOTHING_DUE: TimeDelta = TimeDelta::days(366);

/// Why [`sleep_until`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woken {
    /// The wall clock reached the due time.
    Due,
    /// The wall clock was set (or went back since `seen`): look again.
    ClockSet,
    /// No timerfd: the fallback cap passed.
    Cap,
}

/// Sleep until the wall clock reads `due` (`None`: until the clock is set),
/// or until the clock is set. `seen` is the wall-clock time the caller
/// decided from: a clock that went back between that read and the arming
/// of the timer is reported at once rather than missed.
pub async fn sleep_until(due: Option<DateTime<Utc>>, seen: DateTime<Utc>) -> Woken {
    let target = due.unwrap_or(seen + NOTHING_DUE);
    let fd = match arm(target) {
        Ok(fd) => fd,
        Err(e) => {
            fallback_warning(e);
            let left = (target - Utc::now()).to_std().unwrap_or(Duration::ZERO);
            tokio::time::sleep(left.min(FALLBACK_CAP)).await;
            return Woken::Cap;
        }
    };
    if Utc::now() < seen {
        return Woken::ClockSet;
    }
    let fd = match async_fd(fd) {
        Ok(fd) => fd,
        Err(e) => {
            fallback_warning(Errno::from_io_error(&e).unwrap_or(Errno::INVAL));
            tokio::time::sleep(FALLBACK_CAP).await;
            return Woken::Cap;
        }
    };
    loop {
        let Ok(mut ready) = fd.readable().await else {
            tokio::time::sleep(FALLBACK_CAP).await;
            return Woken::Cap;
        };
        let mut expirations = [0u8; 8];
        match rustix::io::read(fd.get_ref(), &mut expirations[..]) {
            Ok(_) => return Woken::Due,
            Err(Errno::CANCELED) => return Woken::ClockSet,
            Err(Errno::AGAIN) | Err(Errno::INTR) => ready.clear_ready(),
            Err(_) => return Woken::ClockSet,
        }
    }
}

/// Register a descriptor this process owns with tokio's reactor.
///
/// `AsyncFd::new` is deprecated because a generic `T` may change the
/// descriptor it answers under the reactor's feet; an [`OwnedFd`] cannot: it
/// owns one descriptor, open until dropped with the `AsyncFd` — exactly
/// what `AsyncFd::register` asks of its caller, without `unsafe` (which this
/// crate forbids).
pub(crate) fn async_fd(fd: OwnedFd) -> std::io::Result<AsyncFd<OwnedFd>> {
    #[allow(deprecated)]
    AsyncFd::new(fd)
}

/// A non-blocking real-time timerfd armed at `at`, cancelled on a set.
fn arm(at: DateTime<Utc>) -> Result<OwnedFd, Errno> {
    let fd = timerfd_create(
        TimerfdClockId::Realtime,
        TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
    )?;
    // An it_value of zero would disarm the timer: a due time at or before
    // the epoch is armed one nanosecond after it, and fires at once.
    let (secs, nanos) = (at.timestamp(), i64::from(at.timestamp_subsec_nanos()));
    let value = if secs > 0 || (secs == 0 && nanos > 0) {
        Timespec {
            tv_sec: secs,
            tv_nsec: nanos,
        }
    } else {
        Timespec {
            tv_sec: 0,
            tv_nsec: 1,
        }
    };
    timerfd_settime(
        &fd,
        TimerfdTimerFlags::ABSTIME | TimerfdTimerFlags::CANCEL_ON_SET,
        &Itimerspec {
            it_interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: value,
        },
    )?;
    Ok(fd)
}

fn fallback_warning(e: Errno) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        tracing::warn!(
            "no real-time timerfd ({e}): the scheduler looks at the clock every {}s instead",
            FALLBACK_CAP.as_secs()
        );
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_due_time_in_the_past_wakes_at_once() {
        let now = Utc::now();
        let woken = tokio::time::timeout(
            Duration::from_secs(5),
            sleep_until(Some(now - TimeDelta::seconds(10)), now),
        )
        .await
        .expect("woken");
        assert_eq!(woken, Woken::Due);
    }

    #[tokio::test]
    async fn a_near_due_time_wakes_as_due() {
        let now = Utc::now();
        let woken = tokio::time::timeout(
            Duration::from_secs(5),
            sleep_until(Some(now + TimeDelta::milliseconds(50)), now),
        )
        .await
        .expect("woken");
        assert_eq!(woken, Woken::Due);
        assert!(Utc::now() >= now + TimeDelta::milliseconds(50));
    }

    #[tokio::test]
    async fn a_clock_that_went_back_since_it_was_read_is_reported() {
        let seen = Utc::now() + TimeDelta::hours(1);
        let woken = sleep_until(Some(seen + TimeDelta::hours(1)), seen).await;
        assert_eq!(woken, Woken::ClockSet);
    }

    #[tokio::test]
    async fn nothing_due_sleeps() {
        let now = Utc::now();
        let slept = tokio::time::timeout(Duration::from_millis(200), sleep_until(None, now)).await;
        assert!(slept.is_err(), "woke with nothing due and no clock set");
    }
}
