//! Making images present: the pull policy of CONTRACT "Apply".
//!
//! - A registry **answer** such as 404 or 401 ([`RuntimeError::Registry`])
//!   fails at once, naming the reference: retrying cannot help.
//! - A registry that does **not answer** ([`RuntimeError::RegistryUnavailable`])
//!   while a window is open on this machine is waited for: the registry may
//!   well be the container that window holds. The apply polls the window
//!   records until none is open (at most as long as those windows may last:
//!   their step's timeout plus the five minutes closing may take), then
//!   tries again. Since the apply holds the apply lock, no new window opens
//!   meanwhile.
//! - Otherwise it retries with exponential backoff, within **one** budget for
//!   the whole apply ([`PullPolicy::budget`]), so ten images behind a dead
//!   registry cost one budget, not ten.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::declaration::Declaration;
use crate::progress::{Progress, Reporter};
use crate::runtime::{ContainerRuntime, RuntimeError};
use crate::window::Windows;

/// How pulls are retried and windows waited for. Fields are public so tests
/// (with paused tokio time) and callers can tune them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullPolicy {
    /// Time all retries of one apply may take together (time spent waiting
    /// for windows to close is not counted).
    pub budget: Duration,
    /// Pause before the first retry; doubled after each.
    pub first_backoff: Duration,
    /// Longest pause between two retries.
    pub max_backoff: Duration,
    /// How often window records are read while waiting for them to close.
    pub window_poll: Duration,
}

impl Default for PullPolicy {
    fn default() -> Self {
        PullPolicy {
            budget: Duration::from_secs(90),
            first_backoff: Duration::from_secs(2),
            max_backoff: Duration::from_secs(20),
            window_poll: Duration::from_secs(2),
        }
    }
}

/// What [`Puller::ensure`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ensured {
    /// The image was already there.
    Present,
    /// It was pulled.
    Pulled,
}

/// Pulls for one apply: holds the apply's retry budget.
#[derive(Debug)]
pub struct Puller {
    runtime: Arc<dyn ContainerRuntime>,
    windows: Windows,
    policy: PullPolicy,
    /// How long each step's window may last, by step id.
    bounds: BTreeMap<String, Duration>,
    /// Retry time spent so far in this apply.
    spent: Duration,
    /// Images known present in this apply.
    present: BTreeSet<String>,
    /// Told of each pull and each wait for a window.
    progress: Reporter,
}

impl Puller {
    /// A puller with a fresh budget. `bounds` gives, per step id, how long
    /// that step's window may stay open (unknown steps: six hours, after
    /// which a record holds nothing).
    pub fn new(
        runtime: Arc<dyn ContainerRuntime>,
        windows: Windows,
        policy: PullPolicy,
        bounds: BTreeMap<String, Duration>,
        progress: Reporter,
    ) -> Self {
        Puller {
            progress,
            runtime,
            windows,
            policy,
            bounds,
            spent: Duration::ZERO,
            present: BTreeSet::new(),
        }
    }

    /// Make `image` present, pulling it if absent.
    pub async fn ensure(&mut self, image: &str) -> Result<Ensured, String> {
        if self.present.contains(image) {
            return Ok(Ensured::Present);
        }
        match self.runtime.image_present(image).await {
            Ok(true) => {
                self.present.insert(image.to_string());
                return Ok(Ensured::Present);
            }
            Ok(false) => {}
            Err(e) => return Err(format!("cannot tell whether {image} is present: {e}")),
        }
        self.pull(image).await?;
        self.present.insert(image.to_string());
        Ok(Ensured::Pulled)
    }

    async fn pull(&mut self, image: &str) -> Result<(), String> {
        let mut backoff = self.policy.first_backoff;
        let mut waited_for_windows = false;
        loop {
            let began = Instant::now();
            self.progress.send(Progress::Waiting {
                id: None,
                on: format!("pulling {image}"),
            });
            let error = match self.runtime.pull(image).await {
                Ok(()) => return Ok(()),
                Err(e @ RuntimeError::RegistryUnavailable { .. }) => e,
                Err(e) => return Err(e.to_string()),
            };
            if !waited_for_windows {
                if let Some(deadline) = self.window_deadline() {
                    tracing::info!(
                        "{error}; a maintenance window is open on this machine: waiting for it to close before trying again"
                    );
                    self.progress.send(Progress::Waiting {
                        id: None,
                        on: format!(
                            "the registry of {image} does not answer: waiting for the open window to close"
                        ),
                    });
                    self.wait_for_windows(deadline).await;
                    // Windows cannot open again while the apply holds the
                    // lock: from here on, only the budget applies.
                    waited_for_windows = true;
                    continue;
                }
            }
            self.spent += began.elapsed();
            if self.spent + backoff > self.policy.budget {
                return Err(format!(
                    "{error} (gave up: the retries of this apply may take {}s in all)",
                    self.policy.budget.as_secs()
                ));
            }
            tracing::info!("{error}; trying again in {}s", backoff.as_secs_f64());
            self.progress.send(Progress::Waiting {
                id: None,
                on: format!(
                    "the registry of {image} does not answer: trying again in {}s",
                    backoff.as_secs_f64()
                ),
            });
            tokio::time::sleep(backoff).await;
            self.spent += backoff;
            backoff = (backoff * 2).min(self.policy.max_backoff);
        }
    }

    /// When the windows open now will have closed at the latest; `None`
    /// when none is open (or the records cannot be read: then only the
    /// budget applies).
    fn window_deadline(&self) -> Option<Instant> {
        let live = match self.windows.live_records() {
            Ok(live) => live,
            Err(e) => {
                tracing::warn!("cannot read window records while a pull waits: {e}");
                return None;
            }
        };
        live.iter()
            .map(|r| {
                self.bounds
                    .get(&r.step)
                    .copied()
                    .unwrap_or(crate::window::WINDOW_MAX_AGE)
            })
            .max()
            .map(|bound| Instant::now() + bound)
    }

    async fn wait_for_windows(&self, deadline: Instant) {
        loop {
            match self.windows.live_records() {
                Ok(live) if live.is_empty() => return,
                Ok(_) => {}
                Err(_) => return,
            }
            let now = Instant::now();
            if now >= deadline {
                tracing::warn!("windows still open at their bound; pulling again anyway");
                return;
            }
            tokio::time::sleep(self.policy.window_poll.min(deadline - now)).await;
        }
    }
}

/// How long each step's window may stay open, by step id: its timeout plus
/// the five minutes closing may take; a step without a timeout is bounded
/// only by the six hours after which a record holds nothing.
pub(super) fn window_bounds(decl: &Declaration) -> BTreeMap<String, Duration> {
    decl.steps()
        .map(|s| {
            let run = s.container.timeout.unwrap_or(crate::window::WINDOW_MAX_AGE);
            (
                s.resource.id.to_string(),
                (run + crate::window::CLOSE_BUDGET).min(crate::window::WINDOW_MAX_AGE),
            )
        })
        .collect()
}
