//! While a window is open, a watcher stops again any held container
//! someone else starts (`hold-violated`): the step never runs beside it.
//!
//! The watcher is told to quit before the close starts the held containers
//! and is waited for: a stop of it in flight is never cut off. Cut off, the
//! runtime would go on with it (the process was signalled), the close's
//! start would find the container still running, and the stop would land
//! after it: the window closed, its service stopped, no alert.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::Notify;

use crate::events::Event;
use crate::mesh_event;
use crate::runtime::ContainerEventKind;

use super::engine::Engine;
use super::fence::Fence;
use super::record::WindowRecord;
use super::watch_task::WatchTask;

/// The watcher of one open window's holds.
pub(super) struct HoldWatcher;

impl HoldWatcher {
    /// Watch the held containers of `record` (a window `windows`'s
    /// process holds) and stop again any that someone starts, on a task of
    /// its own; `None` when nothing is held or the runtime has no events.
    pub(super) async fn spawn(windows: &Engine, record: &WindowRecord) -> Option<WatchTask> {
        let names: Vec<String> = record.held_names().map(str::to_string).collect();
        if names.is_empty() {
            return None;
        }
        let runtime = windows.runtime.clone();
        let step = record.step.clone();
        let records = windows.records.clone();
        let restorer = windows.restorer.clone();
        let held = record.clone();
        let mut stream = match runtime.events(&names).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(MESH_STEP = %step, "cannot watch held containers for starts: {e}");
                return None;
            }
        };
        let quit = Arc::new(Notify::new());
        let told = quit.clone();
        let task = tokio::spawn(async move {
            loop {
                // Told to quit between events only: an event being acted
                // on (a stop in flight) is finished first.
                let next = tokio::select! {
                    biased;
                    () = told.notified() => return,
                    next = stream.next() => next,
                };
                match next {
                    Some(Ok(ev))
                        if ev.kind == ContainerEventKind::Start && names.contains(&ev.name) =>
                    {
                        // Started by whoever took the window over: this
                        // process has lost it and stops watching.
                        if records
                            .fence(&held, &format!("stopping {} again", ev.name))
                            .await
                            == Fence::Lost
                        {
                            return;
                        }
                        mesh_event!(
                            warn,
                            Event::HoldViolated,
                            MESH_STEP = %step,
                            MESH_CONTAINER = %ev.name,
                            "{} was started during the window of {}; stopping it again",
                            ev.name,
                            step
                        );
                        match runtime.stop(&ev.name).await {
                            Ok(()) => {
                                if restorer.after_stop(&held, &ev.name).await == Fence::Lost {
                                    return;
                                }
                            }
                            Err(e) => {
                                tracing::error!(MESH_STEP = %step, MESH_CONTAINER = %ev.name, "cannot stop {} again: {e}", ev.name);
                            }
                        }
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => {
                        tracing::warn!(MESH_STEP = %step, "event stream error: {e}; watching again");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        match runtime.events(&names).await {
                            Ok(s) => stream = s,
                            Err(e) => tracing::warn!(MESH_STEP = %step, "cannot watch again: {e}"),
                        }
                    }
                    None => {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        if let Ok(s) = runtime.events(&names).await {
                            stream = s;
                        }
                    }
                }
            }
        });
        Some(WatchTask::new(task, quit))
    }
}
