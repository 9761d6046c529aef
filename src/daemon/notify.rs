//! sd_notify: readiness, `STATUS=`, reload and stop, and the watchdog.
//!
//! Everything is a no-op when the daemon does not run under systemd
//! (`NOTIFY_SOCKET` unset), so the same binary runs by hand.

use std::time::Duration;

use sd_notify::NotifyState;

use crate::schedule::scheduler::Watchdog;

/// How much time one `EXTEND_TIMEOUT_USEC` asks for (while resuming a
/// window whose step is still running, or while an apply runs at start or
/// reload).
pub const EXTEND_BY: Duration = Duration::from_secs(90);

/// Sends notifications to systemd.
#[derive(Debug, Clone)]
pub struct Notifier {
    enabled: bool,
}

impl Notifier {
    /// A notifier for this process: active when systemd gave a socket.
    pub fn from_env() -> Self {
        Notifier {
            enabled: std::env::var_os("NOTIFY_SOCKET").is_some(),
        }
    }

    fn send(&self, states: &[NotifyState<'_>]) {
        if self.enabled {
            if let Err(e) = sd_notify::notify(states) {
                tracing::warn!("sd_notify failed: {e}");
            }
        }
    }

    /// `STATUS=`.
    pub fn status(&self, line: &str) {
        self.send(&[NotifyState::Status(line)]);
    }

    /// `READY=1` with a status line.
    pub fn ready(&self, line: &str) {
        self.send(&[NotifyState::Ready, NotifyState::Status(line)]);
    }

    /// `RELOADING=1` (with the monotonic time systemd 253+ wants).
    pub fn reloading(&self) {
        match NotifyState::monotonic_usec_now() {
            Ok(now) => self.send(&[
                NotifyState::Reloading,
                now,
                NotifyState::Status("reloading"),
            ]),
            Err(_) => self.send(&[NotifyState::Reloading, NotifyState::Status("reloading")]),
        }
    }

    /// `STOPPING=1` with a status line.
    pub fn stopping(&self, line: &str) {
        self.send(&[NotifyState::Stopping, NotifyState::Status(line)]);
    }

    /// Ask for more time in the current state (start-up, reload or stop):
    /// systemd's timeout for it is pushed to [`EXTEND_BY`] from now.
    pub fn extend_timeout(&self) {
        let usec = u32::try_from(EXTEND_BY.as_micros()).unwrap_or(u32::MAX);
        self.send(&[NotifyState::ExtendTimeoutUsec(usec)]);
    }

    /// The watchdog for the scheduler's loop to feed: `WATCHDOG=1` every
    /// half of the interval systemd asked for (`WatchdogSec`), or `None`
    /// without a watchdog. The loop wakes for it and for nothing else
    /// while idle.
    pub fn watchdog(&self) -> Option<Watchdog> {
        if !self.enabled {
            return None;
        }
        let interval = sd_notify::watchdog_enabled()?;
        let every = interval / 2;
        tracing::info!("watchdog: fed every {every:?} from the scheduler's loop");
        Some(Watchdog {
            every,
            feed: Box::new(|| {
                if let Err(e) = sd_notify::notify(&[NotifyState::Watchdog]) {
                    tracing::warn!("watchdog ping failed: {e}");
                }
            }),
        })
    }
}
