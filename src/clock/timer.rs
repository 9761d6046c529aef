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
//! A timer made for one sleep only hears of a set while it is armed: one
//! that lands between two sleeps (the loop busy with a command, a fire
//! ending, the watchdog) would be lost. So a long-lived sleeper keeps a
//! [`SetWatch`]: one timerfd armed once, at the end of time, with
//! `TFD_TIMER_CANCEL_ON_SET`, for its whole life (as systemd's manager
//! does). The kernel marks it on every set, whether or not anyone is
//! sleeping on it at that moment, and the next sleep sees it at once.
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
///
/// Without a `watch`, only a set while this sleep's own timer is armed is
/// heard; with one, every set since the watch was made or last reported.
pub async fn sleep_until(
    due: Option<DateTime<Utc>>,
    seen: DateTime<Utc>,
    watch: Option<&SetWatch>,
) -> Woken {
    let target = due.unwrap_or(seen + NOTHING_DUE);
    // With a watch, the watch reports sets: the sleep's own timer must not
    // report the same set a second time.
    let fd = match arm(target, watch.is_none()) {
        Ok(fd) => fd,
        Err(e) => {
            fallback_warning(e);
            let left = (target - Utc::now()).to_std().unwrap_or(Duration::ZERO);
            tokio::time::sleep(left.min(FALLBACK_CAP)).await;
            return Woken::Cap;
        }
    };
    if Utc::now() < seen {
        if let Some(w) = watch {
            w.clear();
        }
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
    match watch {
        None => wait(&fd).await,
        Some(w) => tokio::select! {
            woken = wait(&fd) => woken,
            () = w.wait() => Woken::ClockSet,
        },
    }
}

/// Wait for an armed timer: due, cancelled by a set, or (on an error of
/// the reactor) the fallback cap.
async fn wait(fd: &AsyncFd<OwnedFd>) -> Woken {
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

/// A real-time timerfd armed once at the end of time with
/// `TFD_TIMER_CANCEL_ON_SET`: it never expires, and turns readable on every
/// set of the wall clock until it is read. See the module documentation.
#[derive(Debug)]
pub struct SetWatch {
    fd: AsyncFd<OwnedFd>,
}

impl SetWatch {
    /// Arm the watch; from here on no set goes unreported. Needs a tokio
    /// reactor.
    pub fn new() -> std::io::Result<SetWatch> {
        let fd = timerfd_create(
            TimerfdClockId::Realtime,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        settime(&fd, END_OF_TIME, true)?;
        Ok(SetWatch { fd: async_fd(fd)? })
    }

    /// Resolve once the clock has been set since the watch was made or
    /// last resolved (or cleared).
    pub async fn wait(&self) {
        loop {
            let Ok(mut ready) = self.fd.readable().await else {
                // The reactor is gone: no set will be heard from here.
                std::future::pending::<()>().await;
                return;
            };
            if self.read_set() {
                return;
            }
            ready.clear_ready();
        }
    }

    /// Forget a set already reported another way.
    pub fn clear(&self) {
        self.read_set();
    }

    /// Read the timer: true when the clock was set since the last read.
    fn read_set(&self) -> bool {
        let mut expirations = [0u8; 8];
        match rustix::io::read(self.fd.get_ref(), &mut expirations[..]) {
            Err(Errno::CANCELED) => true,
            Err(_) => false,
            // It expired: the clock was set past the end of time, which
            // is a set too. Armed again so that the next one is heard.
            Ok(_) => {
                let _ = settime(self.fd.get_ref(), END_OF_TIME, true);
                true
            }
        }
    }
}

/// The watch's expiry: `time_t`'s largest value, as systemd arms its own;
/// the kernel clamps it to the largest time it can hold.
const END_OF_TIME: Timespec = Timespec {
    tv_sec: i64::MAX,
    tv_nsec: 0,
};

/// Register a descriptor this process owns with tokio's reactor.
///
/// `AsyncFd::new` is deprecated because a generic `T` may change the
/// descriptor it answers under the reactor's feet; an [`OwnedFd`] cannot: it
/// owns one descriptor, open until dropped with the `AsyncFd` — exactly
/// what `AsyncFd::register` asks of its caller, without `unsafe` (which this
/// crate denies).
pub(crate) fn async_fd(fd: OwnedFd) -> std::io::Result<AsyncFd<OwnedFd>> {
    #[allow(deprecated)]
    AsyncFd::new(fd)
}

/// A non-blocking real-time timerfd armed at `at`, cancelled on a set when
/// `cancel_on_set`.
fn arm(at: DateTime<Utc>, cancel_on_set: bool) -> Result<OwnedFd, Errno> {
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
    settime(&fd, value, cancel_on_set)?;
    Ok(fd)
}

/// Arm `fd` once, at the absolute real time `value`.
fn settime(fd: &OwnedFd, value: Timespec, cancel_on_set: bool) -> Result<(), Errno> {
    let mut flags = TimerfdTimerFlags::ABSTIME;
    if cancel_on_set {
        flags |= TimerfdTimerFlags::CANCEL_ON_SET;
    }
    timerfd_settime(
        fd,
        flags,
        &Itimerspec {
            it_interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: value,
        },
    )?;
    Ok(())
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
            sleep_until(Some(now - TimeDelta::seconds(10)), now, None),
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
            sleep_until(Some(now + TimeDelta::milliseconds(50)), now, None),
        )
        .await
        .expect("woken");
        assert_eq!(woken, Woken::Due);
        assert!(Utc::now() >= now + TimeDelta::milliseconds(50));
    }

    #[tokio::test]
    async fn a_clock_that_went_back_since_it_was_read_is_reported() {
        let seen = Utc::now() + TimeDelta::hours(1);
        let woken = sleep_until(Some(seen + TimeDelta::hours(1)), seen, None).await;
        assert_eq!(woken, Woken::ClockSet);
    }

    #[tokio::test]
    async fn a_set_watch_is_quiet_while_the_clock_is_not_set() {
        let watch = SetWatch::new().expect("timerfd");
        let woke = tokio::time::timeout(Duration::from_millis(200), watch.wait()).await;
        assert!(woke.is_err(), "the watch woke with no set");
        let now = Utc::now();
        let slept = tokio::time::timeout(
            Duration::from_millis(200),
            sleep_until(None, now, Some(&watch)),
        )
        .await;
        assert!(slept.is_err(), "a sleep with the watch woke with no set");
    }

    #[tokio::test]
    async fn a_sleep_with_a_watch_still_wakes_when_due() {
        let watch = SetWatch::new().expect("timerfd");
        let now = Utc::now();
        let woken = tokio::time::timeout(
            Duration::from_secs(5),
            sleep_until(Some(now + TimeDelta::milliseconds(50)), now, Some(&watch)),
        )
        .await
        .expect("woken");
        assert_eq!(woken, Woken::Due);
    }

    #[tokio::test]
    async fn nothing_due_sleeps() {
        let now = Utc::now();
        let slept =
            tokio::time::timeout(Duration::from_millis(200), sleep_until(None, now, None)).await;
        assert!(slept.is_err(), "woke with nothing due and no clock set");
    }
}
