//! The task of a window's watcher (`watcher.rs`) as its window holds it:
//! told to quit between events, and waited for, so that a stop it has in
//! flight lands before anything starts the held containers again.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::budget::Deadline;

/// A watcher's task and the signal telling it to quit.
#[derive(Debug)]
pub(super) struct WatchTask {
    task: JoinHandle<()>,
    quit: Arc<Notify>,
}

impl WatchTask {
    /// `task`, which quits between two events once `quit` is notified.
    pub(super) fn new(task: JoinHandle<()>, quit: Arc<Notify>) -> Self {
        WatchTask { task, quit }
    }

    /// Tell it to quit and wait, at most `bound`, for what it is doing
    /// (a stop in flight) to end. `false`: it did not end within `bound`
    /// and was cut off.
    pub(super) async fn quit(mut self, bound: Duration) -> bool {
        self.quit.notify_one();
        match tokio::time::timeout(bound, &mut self.task).await {
            Ok(_) => true,
            Err(_) => {
                self.task.abort();
                false
            }
        }
    }

    /// Tell it to quit without waiting (a window dropped unclosed): it is
    /// then kept in `left` for whoever closes that window, which waits
    /// for it first ([`Quitting::wait_for`]).
    pub(super) fn leave(self, step: &str, left: &Quitting) {
        self.quit.notify_one();
        left.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((step.to_string(), self));
    }
}

/// The watchers of windows dropped unclosed (their fire panicked), told to
/// quit and maybe finishing a stop: the close of such a window, by the
/// adopter, waits for them before it starts anything. Shared by the
/// clones of one process's engine.
#[derive(Debug, Clone, Default)]
pub(super) struct Quitting(Arc<Mutex<Vec<(String, WatchTask)>>>);

impl Quitting {
    /// Wait, within `deadline`, for the watchers left by windows of
    /// `step` to end.
    pub(super) async fn wait_for(&self, step: &str, deadline: &Deadline) {
        let left: Vec<WatchTask> = {
            let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
            let (of_step, others): (Vec<_>, Vec<_>) = std::mem::take(&mut *all)
                .into_iter()
                .partition(|(s, _)| s == step);
            *all = others;
            of_step.into_iter().map(|(_, w)| w).collect()
        };
        for watcher in left {
            if !watcher.quit(deadline.left()).await {
                tracing::warn!(
                    MESH_STEP = %step,
                    "the watch on the held containers of a window dropped unclosed did not end in time (a stop of one in flight): cut off"
                );
            }
        }
    }
}
