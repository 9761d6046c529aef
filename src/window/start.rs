//! Starting one held container again at a window's close: one request to
//! start and one to confirm it running; a refusal retried briefly, a
//! runtime that does not answer retried with backoff until the deadline;
//! one removed during the window created again from its declaration; and,
//! with a health check, `healthy` waited for before the next start.

use std::sync::Arc;
use std::time::Duration;

use crate::events::Event;
use crate::mesh_event;
use crate::runtime::{ContainerInfo, ContainerRuntime, ContainerSpec, RuntimeError};

use super::alerts::Alerter;
use super::budget::close_budget;
use super::record::WindowRecord;

/// Attempts to start one held container, when the runtime answers with a
/// refusal, before it is declared lost.
const START_ATTEMPTS: u32 = 3;

/// Pause between two start attempts of the same container.
const START_RETRY_PAUSE: Duration = Duration::from_secs(2);

/// How often a held container's health is looked at while it is `starting`.
const HEALTH_POLL: Duration = Duration::from_secs(1);

/// What a held container's health check said after its start.
enum Healthy {
    /// It has none.
    NoCheck,
    /// `healthy`.
    Yes,
    /// `unhealthy`, or still `starting` at the deadline.
    No { status: String, output: String },
}

/// The one try a container gets when the closing budget is already spent.
const LAST_TRY: Duration = Duration::from_secs(10);

/// The longest pause between two attempts while the runtime does not answer.
const UNREACHABLE_BACKOFF_MAX: Duration = Duration::from_secs(15);

/// Why a held container did not start.
pub(super) struct StartFailure {
    pub(super) reason: String,
    /// The runtime did not answer (rather than refusing).
    pub(super) unanswered: bool,
    /// The container no longer exists.
    gone: bool,
}

/// What was told of a held container started again.
#[derive(Debug, Default)]
pub(super) struct Started {
    /// It was removed during the window and created again.
    pub(super) recreated: bool,
    /// Its health check reported `healthy`.
    pub(super) healthy: bool,
    /// Its health check did not report `healthy` in time
    /// (`held-unhealthy`, alerted): the last output.
    pub(super) unhealthy: Option<String>,
}

/// The starts of one window's close: the runtime, where alerts go, the
/// window, and when the close's budget runs out.
pub(super) struct HeldStart<'a> {
    runtime: &'a dyn ContainerRuntime,
    alerts: &'a Alerter,
    record: &'a WindowRecord,
    deadline: tokio::time::Instant,
}

impl<'a> HeldStart<'a> {
    /// Starts for the close of `record`, until `deadline`.
    pub(super) fn new(
        runtime: &'a dyn ContainerRuntime,
        alerts: &'a Alerter,
        record: &'a WindowRecord,
        deadline: tokio::time::Instant,
    ) -> Self {
        HeldStart {
            runtime,
            alerts,
            record,
            deadline,
        }
    }

    /// Start one held container again, confirmed running (created again
    /// from `spec` when it was removed during the window), and, when it
    /// has a health check, wait for it to be `healthy` before the next
    /// start: what is told of it is returned.
    pub(super) async fn start(
        &self,
        name: &str,
        spec: Option<Arc<ContainerSpec>>,
    ) -> Result<Started, StartFailure> {
        let mut said = Started::default();
        let record = self.record;
        // Past the budget (the runtime was away for it), each container
        // left still gets one short try, so what is owed is told apart
        // from what was refused.
        let until = self.deadline.max(tokio::time::Instant::now() + LAST_TRY);
        let mut started = self.start_confirmed(name, until).await;
        if let Err(failure) = &started {
            let spec = if failure.gone { spec } else { None };
            if let Some(spec) = spec {
                started = self.recreate(record, &spec, until).await;
                said.recreated = started.is_ok();
            }
        }
        let running = started?;
        match self.wait_healthy(name, running, until).await {
            Healthy::NoCheck => {}
            Healthy::Yes => said.healthy = true,
            Healthy::No { status, output } => {
                mesh_event!(
                    error,
                    Event::HeldUnhealthy,
                    MESH_STEP = %record.step,
                    MESH_CONTAINER = %name,
                    MESH_MODULE = %record.module.as_deref().unwrap_or(""),
                    "container {name} started again after the window of {} but is {status}: last health check said: {output}",
                    record.step
                );
                self.alerts.record(
                    Event::HeldUnhealthy,
                    &record.step,
                    name,
                    format!(
                        "container {name} started again after the window of {} but is {status}",
                        record.step
                    ),
                );
                said.unhealthy = Some(output);
            }
        }
        Ok(said)
    }

    /// Start one container, confirmed running: the inspection that
    /// confirmed it. A refusal is retried briefly; a runtime that does not
    /// answer is retried with backoff until `deadline`.
    async fn start_confirmed(
        &self,
        name: &str,
        deadline: tokio::time::Instant,
    ) -> Result<ContainerInfo, StartFailure> {
        let mut last = String::from("closing budget exhausted before the first attempt");
        let mut unanswered = false;
        let mut refusals = 0;
        let mut backoff = Duration::from_secs(1);
        loop {
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Err(StartFailure {
                    reason: format!(
                        "closing budget of {}s exhausted: {last}",
                        close_budget().as_secs()
                    ),
                    unanswered,
                    gone: false,
                });
            }
            let gone = || StartFailure {
                reason: "the container no longer exists".to_string(),
                unanswered: false,
                gone: true,
            };
            // One request to start and one to confirm: nothing else lies
            // between this start and the next container's.
            match tokio::time::timeout(deadline - now, self.runtime.start_and_inspect(name)).await {
                Ok(Ok(Some(info))) if info.running => return Ok(info),
                Ok(Ok(Some(info))) => {
                    last = format!("it exited at once (status {})", info.status);
                    unanswered = false;
                    refusals += 1;
                }
                Ok(Ok(None)) => return Err(gone()),
                Ok(Err(RuntimeError::NotFound { .. })) => return Err(gone()),
                Ok(Err(e)) => {
                    unanswered = e.is_transient();
                    refusals += u32::from(!unanswered);
                    last = e.to_string();
                }
                Err(_) => {
                    last = "the start did not answer in time".to_string();
                    unanswered = true;
                }
            }
            if !unanswered && refusals >= START_ATTEMPTS {
                return Err(StartFailure {
                    reason: last,
                    unanswered: false,
                    gone: false,
                });
            }
            let pause = if unanswered {
                let p = backoff;
                backoff = (backoff * 2).min(UNREACHABLE_BACKOFF_MAX);
                p
            } else {
                START_RETRY_PAUSE
            };
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            tokio::time::sleep(pause.min(left)).await;
        }
    }

    /// Wait, within `deadline`, for a container with a health check to
    /// report `healthy`: started again means serving again. `running` is
    /// the inspection that confirmed its start: one without a health check
    /// costs no further look.
    ///
    /// Docker itself says `unhealthy` once the check's own timing has run
    /// out; the wait also ends then if Docker has not decided (a check that
    /// hangs), and never outlasts `deadline`, the closing budget.
    async fn wait_healthy(
        &self,
        name: &str,
        running: ContainerInfo,
        deadline: tokio::time::Instant,
    ) -> Healthy {
        let started = tokio::time::Instant::now();
        let mut deadline = deadline;
        let mut own_timing = None;
        let mut last = None;
        let mut looked = Some(running);
        loop {
            let look = match looked.take() {
                Some(info) => Ok(Some(info)),
                None => self.runtime.inspect(name).await,
            };
            match look {
                Ok(Some(info)) => match info.health {
                    None => return Healthy::NoCheck,
                    Some(h) if h.status == "healthy" => return Healthy::Yes,
                    Some(h) if h.status == "unhealthy" => {
                        return Healthy::No {
                            status: h.status,
                            output: h.last_output,
                        }
                    }
                    Some(h) => {
                        if let Some(within) = h.decides_within {
                            if own_timing.is_none() && started + within < deadline {
                                deadline = started + within;
                                own_timing = Some(within);
                            }
                        }
                        last = Some(h);
                    }
                },
                Ok(None) => return Healthy::NoCheck,
                Err(e) => {
                    tracing::warn!(MESH_CONTAINER = %name, "cannot read the health of {name}: {e}")
                }
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                let (status, output) = last
                    .map(|h| (h.status, h.last_output))
                    .unwrap_or_else(|| ("unknown".into(), String::new()));
                let status = match own_timing {
                    Some(within) => format!(
                        "still {status} after {}s, the time its health check takes to decide",
                        within.as_secs()
                    ),
                    None => format!("still {status} when the closing budget ran out"),
                };
                return Healthy::No { status, output };
            }
            tokio::time::sleep(HEALTH_POLL.min(deadline - now)).await;
        }
    }

    /// Create a held container that was removed during the window again,
    /// from its declaration, and start it.
    async fn recreate(
        &self,
        record: &WindowRecord,
        spec: &ContainerSpec,
        deadline: tokio::time::Instant,
    ) -> Result<ContainerInfo, StartFailure> {
        let name = &spec.name;
        if let Err(e) = self.runtime.create(spec).await {
            return Err(StartFailure {
                reason: format!(
                    "it was removed during the window and cannot be created again: {e}"
                ),
                unanswered: e.is_transient(),
                gone: true,
            });
        }
        tracing::warn!(
            MESH_STEP = %record.step,
            MESH_CONTAINER = %name,
            "{name} was removed during the window of {}: created again from its declaration",
            record.step
        );
        self.start_confirmed(name, deadline).await
    }
}
