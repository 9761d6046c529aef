//! The closing budget: how long closing a window may take, all of it.
//!
//! The budget is **one deadline for the whole close** ([`Deadline`]):
//! every wait for a lock, every request to the container runtime and every
//! alert of that close counts against it. Nothing is bounded per wait
//! alone, so a close of many held containers cannot add its waits up past
//! the budget. When it runs out, what is not started yet is alerted
//! (`WILL NOT START AGAIN`), and the alert says which part ran out
//! ([`Spent`]: "closing budget of 300 s ran out waiting for windows.lock
//! held by pid 4242 (flock, state T: stopped)").
//!
//! A lock whose holder does not let go within one wait ([`Deadline::lock`])
//! is not waited for again by the same close: its holder is stopped or
//! hung, and the close goes on without it, trying it once at each later
//! need. So a stranger holding `windows.lock` costs a close one wait, not
//! one per held container.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::store::StoreError;

/// How long closing a window may take, all starts included (the closing
/// budget). A window's bound is its step's timeout plus this.
pub const CLOSE_BUDGET: Duration = Duration::from_secs(5 * 60);

/// The budget every close spends (and a fire confirming its step stopped):
/// [`CLOSE_BUDGET`], shortened only by a node test in a debug build
/// ([`crate::fault::close_budget`]).
pub fn close_budget() -> Duration {
    crate::fault::close_budget(CLOSE_BUDGET)
}

/// The longest pause between two looks at a lock that is held.
const LOCK_POLL_MAX: Duration = Duration::from_millis(100);

/// One deadline for a whole act (a close, a restore), and the locks it
/// found held by a holder that did not let go. Clones share both.
#[derive(Debug, Clone)]
pub struct Deadline {
    at: Instant,
    budget: Duration,
    /// What the act is, for what is said when it runs out ("closing").
    act: &'static str,
    /// Locks (by name) given up once: tried, never waited for, again.
    stuck: Arc<Mutex<BTreeSet<String>>>,
    /// What it first ran out waiting for: what later acts cut short are
    /// told (they were not begun because of it).
    ran_out: Arc<Mutex<Option<Spent>>>,
}

/// The deadline ran out while waiting for something.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{act} budget of {} s ran out waiting for {waiting_for}", budget.as_secs())]
pub struct Spent {
    act: &'static str,
    budget: Duration,
    /// What was being waited for: "windows.lock held by pid 4242 (...)",
    /// "the container runtime to start web".
    pub waiting_for: String,
}

impl LockWait {
    /// Whether this was said already by the same act: a lock given up
    /// before, tried once again.
    pub fn said_before(&self) -> bool {
        matches!(self, LockWait::GivenUp { again: true, .. })
    }
}

/// Why a lock was not had.
#[derive(Debug, thiserror::Error)]
pub enum LockWait {
    /// The deadline ran out waiting for it.
    #[error("{0}")]
    Spent(Spent),
    /// Its holder kept it past one wait (or past an earlier one of this
    /// act, and still has it): this act goes on without it.
    #[error("{lock} is held by {holder}: given up, going on without it")]
    GivenUp {
        /// The lock.
        lock: String,
        /// Who holds it.
        holder: String,
        /// It had been given up before by the same act (tried once now):
        /// said already.
        again: bool,
    },
    /// It could not be tried at all.
    #[error("{0}")]
    Error(#[from] StoreError),
}

impl Deadline {
    /// A close's deadline: `budget` from now.
    pub fn closing(budget: Duration) -> Self {
        Deadline::of("closing", budget)
    }

    /// The deadline of `act`, `budget` from now.
    pub fn of(act: &'static str, budget: Duration) -> Self {
        Deadline {
            at: Instant::now() + budget,
            budget,
            act,
            stuck: Arc::default(),
            ran_out: Arc::default(),
        }
    }

    /// When it runs out.
    pub fn instant(&self) -> Instant {
        self.at
    }

    /// The whole budget.
    pub fn budget(&self) -> Duration {
        self.budget
    }

    /// What is left of it (zero once spent).
    pub fn left(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// Whether it has run out.
    pub fn is_spent(&self) -> bool {
        Instant::now() >= self.at
    }

    /// That it ran out waiting for `waiting_for` (remembered, when it is
    /// the first thing it ran out on: [`Deadline::ran_out`]).
    pub fn spent(&self, waiting_for: impl Into<String>) -> Spent {
        let spent = Spent {
            act: self.act,
            budget: self.budget,
            waiting_for: waiting_for.into(),
        };
        self.ran_out
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(|| spent.clone());
        spent
    }

    /// What it first ran out waiting for; once spent without having been
    /// waited on (time passed between two acts), `otherwise`.
    pub fn ran_out(&self, otherwise: impl FnOnce() -> String) -> Spent {
        let first = self
            .ran_out
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        first.unwrap_or_else(|| self.spent(otherwise()))
    }

    /// `work` within what is left (not begun at all once spent); when it
    /// runs out first, what it was `waiting_for`.
    pub async fn bound<T>(
        &self,
        waiting_for: impl FnOnce() -> String,
        work: impl Future<Output = T>,
    ) -> Result<T, Spent> {
        if self.is_spent() {
            return Err(self.spent(waiting_for()));
        }
        tokio::time::timeout_at(self.at, work)
            .await
            .map_err(|_| self.spent(waiting_for()))
    }

    /// Take the lock `name` through `try_take` (polled), waiting at most
    /// `per_wait` and never past the deadline. A lock given up once by
    /// this act (its holder did not let go) is tried once, not waited for
    /// again. `holder` says who holds it, for what is said.
    pub async fn lock<L>(
        &self,
        name: &str,
        per_wait: Duration,
        mut try_take: impl FnMut() -> Result<Option<L>, StoreError>,
        holder: impl Fn() -> String,
    ) -> Result<L, LockWait> {
        let stuck = self
            .stuck
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(name);
        let until = if stuck {
            Instant::now()
        } else {
            (Instant::now() + per_wait).min(self.at)
        };
        let mut pause = Duration::from_millis(2);
        loop {
            if let Some(lock) = try_take()? {
                if stuck {
                    self.stuck
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(name);
                }
                return Ok(lock);
            }
            let now = Instant::now();
            if now >= until {
                let holder = holder();
                if !stuck && now >= self.at {
                    return Err(LockWait::Spent(
                        self.spent(format!("{name} held by {holder}")),
                    ));
                }
                self.stuck
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(name.to_string());
                return Err(LockWait::GivenUp {
                    lock: name.to_string(),
                    holder,
                    again: stuck,
                });
            }
            tokio::time::sleep(pause.min(until - now)).await;
            pause = (pause * 2).min(LOCK_POLL_MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lock that frees itself at a given moment (`None` never).
    fn held_until(free_at: Option<Instant>) -> impl FnMut() -> Result<Option<()>, StoreError> {
        move || Ok(free_at.filter(|at| Instant::now() >= *at).map(|_| ()))
    }

    #[tokio::test(start_paused = true)]
    async fn one_deadline_bounds_every_wait_and_says_what_ran_out() {
        let d = Deadline::closing(Duration::from_secs(60));
        assert_eq!(d.left(), Duration::from_secs(60));
        tokio::time::sleep(Duration::from_secs(45)).await;
        assert_eq!(d.left(), Duration::from_secs(15));
        // A request that would take 30 s more runs into the deadline.
        let started = Instant::now();
        let spent = d
            .bound(
                || "the container runtime to start web".into(),
                tokio::time::sleep(Duration::from_secs(30)),
            )
            .await
            .expect_err("past the deadline");
        assert_eq!(started.elapsed(), Duration::from_secs(15));
        assert!(d.is_spent());
        assert_eq!(
            spent.to_string(),
            "closing budget of 60 s ran out waiting for the container runtime to start web"
        );
        // Anything after is out at once, and what ran out first is kept.
        let later = d.bound(|| "x".into(), async {}).await.expect_err("spent");
        assert_eq!(later.waiting_for, "x");
        assert_eq!(d.left(), Duration::ZERO);
        assert_eq!(
            d.ran_out(|| "y".into()).waiting_for,
            "the container runtime to start web"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_lock_freed_in_time_is_had_and_a_held_one_is_waited_for_once() {
        let d = Deadline::closing(Duration::from_secs(300));
        let per_wait = Duration::from_secs(20);
        // Freed after 3 s: had after 3 s.
        let start = Instant::now();
        let freed = held_until(Some(start + Duration::from_secs(3)));
        d.lock("windows.lock", per_wait, freed, || "pid 1".into())
            .await
            .expect("had");
        assert!(start.elapsed() >= Duration::from_secs(3));
        assert!(start.elapsed() < Duration::from_secs(4));
        // Never freed: given up after one wait of 20 s, naming the holder.
        let start = Instant::now();
        let err = d
            .lock("windows.lock", per_wait, held_until(None), || {
                "pid 4242 (flock, state T: stopped)".into()
            })
            .await
            .expect_err("held");
        assert_eq!(start.elapsed(), per_wait);
        assert!(
            err.to_string()
                .contains("windows.lock is held by pid 4242 (flock, state T: stopped)"),
            "{err}"
        );
        // Twelve more needs of it cost nothing: tried once each.
        let start = Instant::now();
        for _ in 0..12 {
            let err = d
                .lock("windows.lock", per_wait, held_until(None), || {
                    "pid 4242".into()
                })
                .await
                .expect_err("still held");
            assert!(matches!(err, LockWait::GivenUp { .. }), "{err}");
        }
        assert_eq!(start.elapsed(), Duration::ZERO);
        // Another lock is waited for on its own.
        let start = Instant::now();
        let _ = d
            .lock("alerts.lock", per_wait, held_until(None), || "pid 7".into())
            .await;
        assert_eq!(start.elapsed(), per_wait);
        // Freed since: had again, and waited for again later.
        d.lock(
            "windows.lock",
            per_wait,
            held_until(Some(Instant::now())),
            || "nobody".into(),
        )
        .await
        .expect("freed");
        let start = Instant::now();
        let _ = d
            .lock("windows.lock", per_wait, held_until(None), || {
                "pid 9".into()
            })
            .await;
        assert_eq!(start.elapsed(), per_wait);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lock_wait_never_outlasts_the_deadline() {
        let d = Deadline::closing(Duration::from_secs(30));
        tokio::time::sleep(Duration::from_secs(25)).await;
        let start = Instant::now();
        let err = d
            .lock(
                "windows.lock",
                Duration::from_secs(20),
                held_until(None),
                || "pid 4242 (flock, state T: stopped)".into(),
            )
            .await
            .expect_err("held");
        assert_eq!(start.elapsed(), Duration::from_secs(5), "what was left");
        assert_eq!(
            err.to_string(),
            "closing budget of 30 s ran out waiting for windows.lock held by pid 4242 (flock, state T: stopped)"
        );
    }
}
