//! Starting one held container again at a window's close: one request to
//! start and one to confirm it running; a refusal retried briefly, a
//! runtime that does not answer retried with backoff until the deadline;
//! one removed during the window created again from its declaration; and,
//! with a health check, `healthy` waited for before the next start. Every
//! request and every wait is bounded by the close's one deadline
//! ([`Deadline`]); past it nothing is begun, and what ran out is said.

use std::sync::Arc;
use std::time::Duration;

use crate::events::Event;
use crate::mesh_event;
use crate::runtime::{ContainerInfo, ContainerRuntime, ContainerSpec, RuntimeError};

use super::alerts::Alerter;
use super::budget::{Deadline, Spent};
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

/// The longest pause between two attempts while the runtime does not answer.
const UNREACHABLE_BACKOFF_MAX: Duration = Duration::from_secs(15);

/// Why a held container did not start.
#[derive(Debug)]
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
    deadline: &'a Deadline,
}

impl StartFailure {
    /// Not started because the close's deadline ran out (on `spent`): owed
    /// a start, as one the runtime did not answer.
    pub(super) fn spent(spent: Spent) -> Self {
        StartFailure {
            reason: spent.to_string(),
            unanswered: true,
            gone: false,
        }
    }
}

impl<'a> HeldStart<'a> {
    /// Starts for the close of `record`, until `deadline`.
    pub(super) fn new(
        runtime: &'a dyn ContainerRuntime,
        alerts: &'a Alerter,
        record: &'a WindowRecord,
        deadline: &'a Deadline,
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
        let mut started = self.start_confirmed(name).await;
        if let Err(failure) = &started {
            let spec = if failure.gone { spec } else { None };
            if let Some(spec) = spec {
                started = self.recreate(record, &spec).await;
                said.recreated = started.is_ok();
            }
        }
        let running = started?;
        match self.wait_healthy(name, running).await {
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
                self.alerts
                    .record(
                        Event::HeldUnhealthy,
                        &record.step,
                        name,
                        format!(
                            "container {name} started again after the window of {} but is {status}",
                            record.step
                        ),
                        self.deadline,
                    )
                    .await;
                said.unhealthy = Some(output);
            }
        }
        Ok(said)
    }

    /// Start one container, confirmed running: the inspection that
    /// confirmed it. A refusal is retried briefly; a runtime that does not
    /// answer is retried with backoff until the deadline.
    async fn start_confirmed(&self, name: &str) -> Result<ContainerInfo, StartFailure> {
        let mut last: Option<String> = None;
        let mut unanswered: bool;
        let mut refusals = 0;
        let mut backoff = Duration::from_secs(1);
        let waiting = || format!("the container runtime to start {name}");
        let cut = |spent: Spent, last: &Option<String>, unanswered: bool| StartFailure {
            reason: match last {
                Some(last) => format!("{spent} (last: {last})"),
                None => spent.to_string(),
            },
            unanswered,
            gone: false,
        };
        loop {
            let gone = || StartFailure {
                reason: "the container no longer exists".to_string(),
                unanswered: false,
                gone: true,
            };
            // One request to start and one to confirm: nothing else lies
            // between this start and the next container's.
            let answer = match self
                .deadline
                .bound(waiting, self.runtime.start_and_inspect(name))
                .await
            {
                Ok(answer) => answer,
                Err(spent) => return Err(cut(spent, &last, true)),
            };
            match answer {
                Ok(Some(info)) if info.running => return Ok(info),
                Ok(Some(info)) => {
                    last = Some(format!("it exited at once (status {})", info.status));
                    unanswered = false;
                    refusals += 1;
                }
                Ok(None) => return Err(gone()),
                Err(RuntimeError::NotFound { .. }) => return Err(gone()),
                Err(e) => {
                    unanswered = e.is_transient();
                    refusals += u32::from(!unanswered);
                    last = Some(e.to_string());
                }
            }
            if !unanswered && refusals >= START_ATTEMPTS {
                return Err(StartFailure {
                    reason: last.unwrap_or_default(),
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
            if let Err(spent) = self
                .deadline
                .bound(waiting, tokio::time::sleep(pause))
                .await
            {
                return Err(cut(spent, &last, unanswered));
            }
        }
    }

    /// Wait, within `deadline`, for a container with a health check to
    /// report `healthy`: started again means serving again. `running` is
    /// the inspection that confirmed its start: one without a health check
    /// costs no further look.
    ///
    /// Docker itself says `unhealthy` once the check's own timing has run
    /// out; the wait also ends then if Docker has not decided (a check that
    /// hangs), and never outlasts the close's deadline.
    async fn wait_healthy(&self, name: &str, running: ContainerInfo) -> Healthy {
        let started = tokio::time::Instant::now();
        let mut deadline = self.deadline.instant();
        let mut own_timing = None;
        let mut last = None;
        let mut looked = Some(running);
        loop {
            let look = match looked.take() {
                Some(info) => Ok(Some(info)),
                None => match tokio::time::timeout_at(deadline, self.runtime.inspect(name)).await {
                    Ok(look) => look,
                    Err(_) => Err(RuntimeError::Api {
                        context: format!("inspect {name}"),
                        reason: "no answer before the deadline".into(),
                    }),
                },
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
                    None => {
                        self.deadline.spent(format!("{name} to be healthy"));
                        format!("still {status} when the closing budget ran out")
                    }
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
    ) -> Result<ContainerInfo, StartFailure> {
        let name = &spec.name;
        let created = self
            .deadline
            .bound(
                || format!("the container runtime to create {name} again"),
                self.runtime.create(spec),
            )
            .await;
        let failed = match created {
            Ok(Ok(_)) => None,
            Ok(Err(e)) => Some((e.to_string(), e.is_transient())),
            Err(spent) => Some((spent.to_string(), true)),
        };
        if let Some((e, unanswered)) = failed {
            return Err(StartFailure {
                reason: format!(
                    "it was removed during the window and cannot be created again: {e}"
                ),
                unanswered,
                gone: true,
            });
        }
        tracing::warn!(
            MESH_STEP = %record.step,
            MESH_CONTAINER = %name,
            "{name} was removed during the window of {}: created again from its declaration",
            record.step
        );
        self.start_confirmed(name).await
    }
}
