//! The scripted runtime's logs of its containers' output, for the output
//! a fire forwards to the journal where the runtime does not
//! ([`crate::runtime::ContainerRuntime::journals_output`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::runtime::{OutputChunk, OutputChunks, OutputStream};

/// What each container wrote, by name, and who waits for more.
#[derive(Debug, Default, Clone)]
pub(super) struct Outputs {
    written: Arc<Mutex<HashMap<String, Vec<OutputChunk>>>>,
    more: Arc<Notify>,
}

impl Outputs {
    /// `name` writes `text` on `stream`.
    pub(super) fn write(&self, name: &str, stream: OutputStream, text: &str) {
        self.written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(name.to_owned())
            .or_default()
            .push(OutputChunk {
                stream,
                bytes: text.as_bytes().to_vec(),
            });
        self.more.notify_waiters();
    }

    /// Something changed that may end a follow (a container's exit).
    pub(super) fn wake(&self) {
        self.more.notify_waiters();
    }

    /// What `name` wrote, from the first chunk; with `follow`, what comes
    /// too while `running` says it runs.
    pub(super) fn read(
        &self,
        name: &str,
        follow: bool,
        running: Arc<dyn Fn() -> bool + Send + Sync>,
    ) -> OutputChunks {
        let (this, name) = (self.clone(), name.to_owned());
        Box::pin(futures_util::stream::unfold(0usize, move |seen| {
            let (this, name, running) = (this.clone(), name.clone(), running.clone());
            async move {
                loop {
                    let notified = this.more.notified();
                    tokio::pin!(notified);
                    notified.as_mut().enable();
                    let next = this
                        .written
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get(&name)
                        .and_then(|w| w.get(seen).cloned());
                    if let Some(chunk) = next {
                        return Some((Ok(chunk), seen + 1));
                    }
                    if !follow || !running() {
                        return None;
                    }
                    notified.await;
                }
            }
        }))
    }
}
