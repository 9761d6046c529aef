//! The events this process logs, seen from inside it.
//!
//! Every event is logged once, with `MESH_EVENT` and its fields (see
//! [`crate::events`]). The daemon's metrics and its pager need to know of
//! some of them — a `will-not-start-again` from whichever path closed a
//! window, a `window-closed`, a `step-failed` — without each of those paths
//! calling them. This tracing layer hands every event carrying `MESH_EVENT`
//! to whoever [`subscribe`]d in this process, as an [`Observed`] value, on an
//! unbounded channel: logging never waits for a reader.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use tokio::sync::mpsc;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::Layer;

/// One event as logged, with the fields the host's consumers read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observed {
    /// `MESH_EVENT`.
    pub event: String,
    /// `MESH_STEP`, when given.
    pub step: Option<String>,
    /// `MESH_CONTAINER`, when given.
    pub container: Option<String>,
    /// `MESH_MODULE`, when given.
    pub module: Option<String>,
    /// `MESH_EXIT_STATUS`, when given.
    pub exit_status: Option<String>,
    /// The message.
    pub message: String,
}

/// Whether anyone subscribed: until then the layer does nothing.
static ANYONE: AtomicBool = AtomicBool::new(false);

/// The subscribers' senders.
static SUBSCRIBERS: Mutex<Vec<mpsc::UnboundedSender<Observed>>> = Mutex::new(Vec::new());

/// Receive every event logged in this process from now on.
pub fn subscribe() -> mpsc::UnboundedReceiver<Observed> {
    let (tx, rx) = mpsc::unbounded_channel();
    SUBSCRIBERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(tx);
    ANYONE.store(true, Ordering::Release);
    rx
}

/// Hand `observed` to every subscriber still listening.
pub fn publish(observed: Observed) {
    let mut subs = SUBSCRIBERS.lock().unwrap_or_else(|e| e.into_inner());
    subs.retain(|tx| tx.send(observed.clone()).is_ok());
}

/// The layer [`crate::events::init_logging`] installs.
pub fn layer() -> Box<dyn Layer<tracing_subscriber::Registry> + Send + Sync> {
    Box::new(Tap)
}

/// The tracing layer behind [`subscribe`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Tap;

impl<S: Subscriber> Layer<S> for Tap {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if !ANYONE.load(Ordering::Acquire) {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        if fields.0.event.is_empty() {
            return;
        }
        publish(fields.0);
    }
}

#[derive(Default)]
struct Fields(Observed);

impl Fields {
    fn set(&mut self, name: &str, value: String) {
        let o = &mut self.0;
        match name {
            "MESH_EVENT" => o.event = value,
            "MESH_STEP" => o.step = Some(value),
            "MESH_CONTAINER" => o.container = Some(value),
            "MESH_MODULE" => o.module = Some(value),
            "MESH_EXIT_STATUS" => o.exit_status = Some(value),
            "message" => o.message = value,
            _ => {}
        }
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.set(field.name(), value.to_string());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.set(field.name(), value.to_string());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.set(field.name(), value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.set(field.name(), format!("{value:?}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn events_with_a_mesh_event_reach_subscribers_with_their_fields() {
        let mut rx = subscribe();
        let subscriber = tracing_subscriber::registry().with(Tap);
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("not an event of the host's");
            crate::mesh_event!(
                warn,
                crate::events::Event::StepFailed,
                MESH_STEP = %"tap-test-step",
                MESH_EXIT_STATUS = 3,
                "step tap-test-step exited with status 3"
            );
        });
        // Other tests of this process may log too: find ours.
        let mut found = None;
        while let Ok(o) = rx.try_recv() {
            assert!(!o.event.is_empty(), "{o:?}");
            if o.step.as_deref() == Some("tap-test-step") {
                found = Some(o);
            }
        }
        let o = found.expect("the event was observed");
        assert_eq!(o.event, "step-failed");
        assert_eq!(o.exit_status.as_deref(), Some("3"));
        assert_eq!(o.message, "step tap-test-step exited with status 3");
    }
}
