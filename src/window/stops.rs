//! Stopping a window's held containers as it opens, in the order named:
//! each stop is sent once the container before it has died (Docker's
//! `die`: its processes are gone), not once Docker has answered the
//! previous stop, which comes only after Docker has cleaned that container
//! up. Every stop sent has returned before the step may run, and before a
//! failed stop closes the window again.

use futures_util::StreamExt;
use tokio::task::JoinHandle;

use crate::runtime::{ContainerEventKind, RuntimeError};

use super::budget::close_budget;
use super::close::{CloseReport, Closing};
use super::engine::Engine;
use super::fence::Fence;
use super::handle::OpenWindow;
use super::record::WindowRecord;
use super::shared;

/// How the stops of an opening window ended, when not all went well.
pub(super) enum StopsEnded {
    /// This process lost the window meanwhile: the taker closes it.
    Lost,
    /// A held container would not stop; the window was closed again.
    Failed {
        /// The container's runtime name.
        container: String,
        /// The runtime's error.
        source: RuntimeError,
        /// How closing the aborted window went.
        closed: Box<CloseReport>,
    },
}

/// The stops of one window as it opens.
pub(super) struct Stops<'a> {
    windows: &'a Engine,
    window: &'a mut OpenWindow,
}

impl<'a> Stops<'a> {
    /// The stops of `window`, opened by `windows`'s process.
    pub(super) fn new(windows: &'a Engine, window: &'a mut OpenWindow) -> Self {
        Stops { windows, window }
    }

    /// Stop `held` (in order); those in `shared` another window stops (or
    /// has stopped): they are waited for. A failed stop closes the window
    /// again before it is returned.
    pub(super) async fn stop(self, held: Vec<String>, shared: &[String]) -> Result<(), StopsEnded> {
        let Stops { windows, window } = self;
        // Each stop follows the previous container's death: Docker's `die`
        // (its processes are gone) rather than the return of its `stop`,
        // which comes only once Docker has cleaned it up. The stops that
        // returned are settled, in order, before the step may run.
        let own: Vec<String> = held
            .iter()
            .filter(|n| !shared.contains(n))
            .cloned()
            .collect();
        let mut deaths = match windows.runtime.events(&own).await {
            Ok(stream) => Some(stream),
            Err(e) => {
                tracing::debug!(MESH_STEP = %window.record.step, "no event stream for the stops ({e}): each stop waits for the last to return");
                None
            }
        };
        let mut stopping: Vec<Stopping> = Vec::with_capacity(held.len());
        for name in held {
            if shared.contains(&name) {
                // Another window stops it (or has): wait for that.
                let result = wait_shared_stopped(windows, &window.record, &name).await;
                stopping.push(Stopping::Over { name, result });
            } else {
                if windows
                    .records
                    .fence(&window.record, &format!("stopping {name}"))
                    .await
                    == Fence::Lost
                {
                    stopping.push(Stopping::Over {
                        name,
                        result: Ok(Fence::Lost),
                    });
                    break;
                }
                crate::fault::pause("pause-before-stop", &window.record.step).await;
                let (this, record, stop_name) =
                    (windows.clone(), window.record.clone(), name.clone());
                let mut task = tokio::spawn(async move {
                    match this.runtime.stop(&stop_name).await {
                        // The stop may have landed after the window was
                        // taken over and closed: look again (see `after_stop`).
                        Ok(()) => {
                            crate::fault::pause("pause-after-stop", &record.step).await;
                            Ok(this.restorer.after_stop(&record, &stop_name).await)
                        }
                        Err(e) => Err(e),
                    }
                });
                stopping.push(tokio::select! {
                    joined = &mut task => Stopping::joined(name, joined),
                    () = next_death(&mut deaths, &name) => Stopping::Sent { name, task },
                });
            }
            // One that failed or lost the window ends the stops here.
            if stopping.last().is_some_and(Stopping::ended_badly) {
                break;
            }
        }
        // Every stop sent has returned before any outcome is acted on: a
        // close must not race a stop still in flight.
        let mut settled = Vec::with_capacity(stopping.len());
        for stop in stopping {
            settled.push(stop.settle().await);
        }
        for (name, result) in settled {
            match result {
                Ok(Fence::Own) => {}
                // Taken over while opening (this process was stopped past
                // its lease): the taker closes the window.
                Ok(Fence::Lost) => return Err(StopsEnded::Lost),
                Err(source) => {
                    let closed = Box::new(Closing::open_window(windows, window).await);
                    return Err(StopsEnded::Failed {
                        container: name,
                        source,
                        closed,
                    });
                }
            }
        }
        Ok(())
    }
}

/// A held container's stop, sent while the window opens.
enum Stopping {
    /// Its outcome is known.
    Over {
        name: String,
        result: Result<Fence, RuntimeError>,
    },
    /// Sent; the container died, and the stop has yet to return.
    Sent {
        name: String,
        task: JoinHandle<Result<Fence, RuntimeError>>,
    },
}

impl Stopping {
    /// A stop task that ended (or panicked).
    fn joined(name: String, joined: Joined) -> Self {
        let result = stop_outcome(&name, joined);
        Stopping::Over { name, result }
    }

    /// Whether it has already ended in a failure or a lost window.
    fn ended_badly(&self) -> bool {
        matches!(self, Stopping::Over { result, .. } if !matches!(result, Ok(Fence::Own)))
    }

    /// Its name and outcome, once the stop has returned.
    async fn settle(self) -> (String, Result<Fence, RuntimeError>) {
        match self {
            Stopping::Over { name, result } => (name, result),
            Stopping::Sent { name, task } => {
                let result = stop_outcome(&name, task.await);
                (name, result)
            }
        }
    }
}

/// How a stop task ended.
type Joined = Result<Result<Fence, RuntimeError>, tokio::task::JoinError>;

/// The outcome of the stop task of `name`; a panic is a failed stop.
fn stop_outcome(name: &str, joined: Joined) -> Result<Fence, RuntimeError> {
    joined.unwrap_or_else(|e| {
        Err(RuntimeError::Api {
            context: format!("stop container {name}"),
            reason: format!("the stop panicked: {e}"),
        })
    })
}

/// Resolves on the death (`die`) of `name` in `deaths`; never when there
/// is no stream or it ends first (the caller also waits for the stop).
async fn next_death(deaths: &mut Option<crate::runtime::EventStream>, name: &str) {
    if let Some(stream) = deaths {
        while let Some(event) = stream.next().await {
            match event {
                Ok(ev) if ev.name == name && matches!(ev.kind, ContainerEventKind::Die { .. }) => {
                    return
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        *deaths = None;
    }
    std::future::pending().await
}

/// A container this window shares with another: wait until it is
/// stopped (the other window may still be stopping it) before the step
/// runs. Should no other window keep it stopped any more (its opener
/// could not stop it, or closed at once), or the closing budget pass,
/// this window stops it itself.
async fn wait_shared_stopped(
    windows: &Engine,
    record: &WindowRecord,
    name: &str,
) -> Result<Fence, crate::runtime::RuntimeError> {
    let deadline = tokio::time::Instant::now() + close_budget();
    loop {
        match windows.runtime.inspect(name).await {
            Ok(Some(info)) if !info.running => return Ok(Fence::Own),
            // Removed: the last close creates it again.
            Ok(None) => return Ok(Fence::Own),
            Ok(Some(_)) | Err(_) => {}
        }
        let alone = !shared::others_keep_stopped(&windows.records, record, name).await;
        if alone || tokio::time::Instant::now() >= deadline {
            if windows
                .records
                .fence(record, &format!("stopping {name}"))
                .await
                == Fence::Lost
            {
                return Ok(Fence::Lost);
            }
            tracing::info!(
                MESH_STEP = %record.step,
                MESH_CONTAINER = %name,
                "{name} is shared but still runs and no other window is stopping it: the window of {} stops it",
                record.step
            );
            windows.runtime.stop(name).await?;
            return Ok(windows.restorer.after_stop(record, name).await);
        }
        shared::pause_shared().await;
    }
}
