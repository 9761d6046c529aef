//! Closing a window: start the held containers again in reverse order,
//! each confirmed running (and healthy, when it has a health check) before
//! the next, within the closing budget; create again one removed during the
//! window; keep what the runtime could not be asked to start owed; erase
//! the record only if it is still this window's own.
//!
//! The held services are down until their start, so nothing but Docker's
//! own work lies between two starts: the next start follows the
//! inspection that confirms the previous one running (which also says
//! whether it has a health check to wait for), after a look at the record
//! under `windows.lock` (the fence, no write); the record's rewrite for
//! the next container is made beside the previous start.

use std::time::Duration;

use crate::events::Event;
use crate::mesh_event;
use crate::runtime::{ContainerInfo, RuntimeError};
use crate::store::WindowRecord;

use super::fence::Fence;
use super::shared::{AtClose, Bookkept};
use super::{close_budget, CloseReport, Windows};

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
struct StartFailure {
    reason: String,
    /// The runtime did not answer (rather than refusing).
    unanswered: bool,
    /// The container no longer exists.
    gone: bool,
}

impl Windows {
    /// Start the held containers of `record` again (reverse order) and erase
    /// the record, or keep it for what is owed.
    pub(super) async fn close_record(
        &self,
        record: &WindowRecord,
        budget: Duration,
    ) -> CloseReport {
        self.close_record_with(record, budget, &Default::default())
            .await
    }

    /// [`Self::close_record`], creating again from `specs` a held container
    /// that was removed during the window.
    pub(super) async fn close_record_with(
        &self,
        record: &WindowRecord,
        budget: Duration,
        specs: &std::collections::BTreeMap<String, std::sync::Arc<crate::runtime::ContainerSpec>>,
    ) -> CloseReport {
        let deadline = tokio::time::Instant::now() + budget;
        let mut report = CloseReport::default();
        // Holds are counted across the records of a boot: each container is
        // decided on under `windows.lock`, one at a time (see `shared`).
        // The window is down while this runs, so the record's bookkeeping
        // is kept off the path between two starts: the decision on the
        // next container, and taking the last one started off the record,
        // are one locked rewrite made while Docker starts the current one.
        // The record on disk, when it is still this window: a container
        // handed to it since it opened (a lost owner's late stop, see
        // `after_stop`) is held by it and started by this close.
        let mut current = match self.store.window(&record.step) {
            Ok(Some(now)) if now.same_window_and_owner(record) => now,
            _ => record.clone(),
        };
        let mut held: Vec<String> = current.held_names().map(str::to_string).collect();
        held.reverse();
        // The first decision precedes every start.
        let mut next = {
            let first = held.first().cloned();
            self.bookkeep_spawned(&current, None, first).await
        };
        // The last container started: taken off the record by the next
        // rewrite (kept when owed: the record owes its start).
        let mut done: Option<String> = None;
        // Whether the decision at hand was made just now (the fence of the
        // start it precedes), or beside an earlier start.
        let mut fresh = true;
        for (i, name) in held.iter().enumerate() {
            let name = name.as_str();
            let after = held.get(i + 1).cloned();
            let decided = match next {
                Ok(Ok(book)) => {
                    current = book.record;
                    book.next
                }
                Ok(Err(e)) => {
                    // The records cannot be read: a held container must
                    // run again, so this window starts it.
                    tracing::warn!(
                        MESH_STEP = %record.step,
                        "cannot count the holds of {name} while closing the window of {}: {e}; starting it",
                        record.step
                    );
                    None
                }
                Err(e) => {
                    tracing::warn!(
                        MESH_STEP = %record.step,
                        "cannot count the holds of {name} while closing the window of {}: {e}; starting it",
                        record.step
                    );
                    None
                }
            };
            match decided {
                Some(AtClose::HandedOver { other }) => {
                    tracing::info!(
                        MESH_STEP = %record.step,
                        MESH_CONTAINER = %name,
                        "{name} stays stopped: the window of {other} still holds it and starts it when it closes",
                    );
                    report.still_held.push(name.to_string());
                    next = self.bookkeep_spawned(&current, done.take(), after).await;
                    fresh = true;
                    continue;
                }
                Some(AtClose::Lost) => {
                    report.lost_window = true;
                    return report;
                }
                Some(AtClose::Start) | None => {}
            }
            // A decision made beside the previous start is checked again,
            // under `windows.lock`, right before this start (no write).
            if !fresh && self.fence(&current, &format!("starting {name}")).await == Fence::Lost {
                report.lost_window = true;
                return report;
            }
            crate::fault::pause("pause-before-start", name).await;
            // Beside this start: the next decision, and the previous
            // container taken off the record.
            let book = self.bookkeep_spawned(&current, done.take(), after);
            let started = self
                .start_held(record, name, specs, deadline, &mut report)
                .await;
            next = book.await;
            fresh = false;
            if !matches!(&started, Err(f) if f.unanswered) {
                done = Some(name.to_string());
            }
            match started {
                Ok(()) => {
                    if record.owed {
                        tracing::warn!(
                            MESH_STEP = %record.step,
                            MESH_CONTAINER = %name,
                            "{name}, owed a start since the window of {} could not close, started: the container runtime answers again",
                            record.step
                        );
                    }
                    report.started.push(name.to_string())
                }
                Err(failure) => {
                    // An owed container was alerted when it became owed.
                    if !(record.owed && failure.unanswered) {
                        self.alert_lost(record, name, &failure.reason);
                    }
                    if failure.unanswered {
                        report.owed.push(name.to_string());
                    }
                    report.lost.push((name.to_string(), failure.reason));
                }
            }
        }
        // The last rewrite's verdict on this window (it decided nothing).
        if let Ok(Ok(Bookkept { record: now, .. })) = next {
            current = now;
        }
        if !report.owed.is_empty() {
            // Keep what is owed: the record, narrowed to those containers.
            let owed = WindowRecord {
                owed: true,
                held: current
                    .held
                    .iter()
                    .filter(|c| c.was_running && report.owed.contains(&c.name))
                    .cloned()
                    .collect(),
                ..current.clone()
            };
            match self.rewrite_if_own(&current, &owed).await {
                Ok(Fence::Lost) => report.lost_window = true,
                Ok(Fence::Own) => tracing::warn!(
                    MESH_STEP = %record.step,
                    "window of {} not closed: the container runtime does not answer; {} owed a start, made as soon as it answers",
                    record.step,
                    report.owed.join(", ")
                ),
                Err(e) => tracing::error!(
                    MESH_STEP = %record.step,
                    "cannot keep the window of {} owed: {e}",
                    record.step
                ),
            }
            return report;
        }
        match self.erase_if_own(&current).await {
            Ok(Fence::Own) => {}
            Ok(Fence::Lost) => {
                report.lost_window = true;
                return report;
            }
            Err(e) => {
                tracing::error!(MESH_STEP = %record.step, "cannot erase the window record of {}: {e}", record.step)
            }
        }
        mesh_event!(
            info,
            Event::WindowClosed,
            MESH_STEP = %record.step,
            MESH_FIRE = %crate::schedule::output::fire_name(&record.step, record.fire_time),
            MESH_MODULE = %record.module.as_deref().unwrap_or(""),
            "window of {} closed: started {}{}",
            record.step,
            if report.started.is_empty() { "nothing".to_string() } else { report.started.join(", ") },
            if report.lost.is_empty() { String::new() } else {
                format!("; NOT started: {}", report.lost.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", "))
            }
        );
        report
    }

    /// Start one held container again, confirmed running (created again
    /// from `specs` when it was removed during the window), and, when it
    /// has a health check, wait for it to be `healthy` before the next
    /// start: what is told of it goes into `report`.
    async fn start_held(
        &self,
        record: &WindowRecord,
        name: &str,
        specs: &std::collections::BTreeMap<String, std::sync::Arc<crate::runtime::ContainerSpec>>,
        deadline: tokio::time::Instant,
        report: &mut CloseReport,
    ) -> Result<(), StartFailure> {
        // Past the budget (the runtime was away for it), each container
        // left still gets one short try, so what is owed is told apart
        // from what was refused.
        let until = deadline.max(tokio::time::Instant::now() + LAST_TRY);
        let mut started = self.start_confirmed(name, until).await;
        if let Err(failure) = &started {
            let spec = if failure.gone {
                self.held_spec(name, specs)
            } else {
                None
            };
            if let Some(spec) = spec {
                started = self.recreate(record, &spec, until).await;
                if started.is_ok() {
                    report.recreated.push(name.to_string());
                }
            }
        }
        let running = started?;
        match self.wait_healthy(name, running, until).await {
            Healthy::NoCheck => {}
            Healthy::Yes => report.healthy.push(name.to_string()),
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
                self.record_alert(
                    Event::HeldUnhealthy,
                    &record.step,
                    name,
                    format!(
                        "container {name} started again after the window of {} but is {status}",
                        record.step
                    ),
                );
                report.unhealthy.push((name.to_string(), output));
            }
        }
        Ok(())
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
        spec: &crate::runtime::ContainerSpec,
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
