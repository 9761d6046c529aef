//! `mesh-host suspend STEP` and `resume STEP` through the daemon: the
//! scheduler writes the suspension to the state directory and acts on it
//! at once; the metrics follow.

use super::{refusal_exit, Daemon};
use crate::control::Response;

impl Daemon {
    /// Suspend `step`.
    pub(super) async fn suspend(&self, step: &str) -> Response {
        match self.scheduler.suspend(step).await {
            Ok(since) => {
                self.metrics.changed();
                Response {
                    exit: 0,
                    text: format!(
                        "step {step} suspended since {}: its due times are logged step-suspended, not run and never caught up; mesh-host resume {step} lifts it",
                        crate::render::time(since)
                    ),
                    json: serde_json::json!({"step": step, "suspended": true, "since": since}),
                }
            }
            Err(e) => Response::error(refusal_exit(&e), e),
        }
    }

    /// Lift `step`'s suspension.
    pub(super) async fn resume(&self, step: &str) -> Response {
        match self.scheduler.resume(step).await {
            Ok(was) => {
                self.metrics.changed();
                Response {
                    exit: 0,
                    text: match was {
                        Some(since) => format!(
                            "step {step} resumed (suspended since {}): it fires again from its next due time",
                            crate::render::time(since)
                        ),
                        None => format!("step {step} was not suspended"),
                    },
                    json: serde_json::json!({"step": step, "suspended": false, "was-suspended-since": was}),
                }
            }
            Err(e) => Response::error(refusal_exit(&e), e),
        }
    }
}
