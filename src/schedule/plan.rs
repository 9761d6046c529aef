//! `plan STEP`: what a fire of a step would do, doing nothing.

use serde::Serialize;

use crate::runtime::ContainerRuntime;
use crate::schedule::ready::{is_made_ready_from, LABEL_READY};
use crate::schedule::step::ScheduledStep;
use crate::window::Windows;

/// One container a fire would hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct PlannedHold {
    /// Its resource id.
    pub id: String,
    /// Its runtime name.
    pub name: String,
    /// `running`, `exited`, `missing`, ...: its state now.
    pub state: String,
    /// Whether the fire would stop (and later start) it: only running ones are held.
    pub would_hold: bool,
    /// Another open window keeps it stopped: the fire would hold it too,
    /// without stopping it again, and the last window to close starts it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
}

/// What a fire would do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Plan {
    /// The step.
    pub step: String,
    /// Its container and image.
    pub container: String,
    /// Where that container stands: made ready ahead of the fire, the
    /// last run's, missing.
    pub container_state: String,
    /// Its image.
    pub image: String,
    /// Its timeout in seconds.
    pub timeout_secs: Option<u64>,
    /// The containers named in `while-stopped`, in stop order.
    pub holds: Vec<PlannedHold>,
    /// Stop order (running ones only).
    pub stop_order: Vec<String>,
    /// Start order after the run (the reverse).
    pub start_order: Vec<String>,
    /// Why a fire now would be skipped, if it would.
    pub conflicts: Vec<String>,
    /// When it fires next, its splay included.
    pub next_fire: Option<chrono::DateTime<chrono::Utc>>,
    /// Its splay (`randomized-delay`), in milliseconds, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// Since when an operator suspended it, if so: a due fire would not
    /// run (the caller fills it in from the state directory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspended_since: Option<chrono::DateTime<chrono::Utc>>,
}

/// Work out the plan of `step` from the runtime and the window records.
pub async fn plan(
    step: &ScheduledStep,
    runtime: &dyn ContainerRuntime,
    windows: &Windows,
) -> Result<Plan, String> {
    let def = &step.def;
    let live = windows.live_records().map_err(|e| e.to_string())?;
    let mut holds = Vec::new();
    for (id, name) in &def.holds {
        // Holds are counted: one another window keeps stopped is shared,
        // held by this fire too, never stopped twice.
        if let Some(other) = live
            .iter()
            .find(|r| r.step != def.id && r.keeps_stopped(name))
        {
            holds.push(PlannedHold {
                id: id.clone(),
                name: name.clone(),
                state: format!("held by the window of {}", other.step),
                would_hold: true,
                shared: true,
            });
            continue;
        }
        if let Some(other) = live.iter().find(|r| r.is_starting(name)) {
            holds.push(PlannedHold {
                id: id.clone(),
                name: name.clone(),
                state: format!(
                    "being started again by the window of {}: a fire waits for that start, then stops it",
                    other.step
                ),
                would_hold: true,
                shared: false,
            });
            continue;
        }
        let info = runtime.inspect(name).await.map_err(|e| e.to_string())?;
        let (state, running) = match info {
            Some(i) => (i.status.clone(), i.running),
            None => ("missing".to_string(), false),
        };
        holds.push(PlannedHold {
            id: id.clone(),
            name: name.clone(),
            state,
            would_hold: running,
            shared: false,
        });
    }
    let stop_order: Vec<String> = holds
        .iter()
        .filter(|h| h.would_hold && !h.shared)
        .map(|h| h.name.clone())
        .collect();
    let start_order = stop_order.iter().rev().cloned().collect();
    let mut conflicts = Vec::new();
    for record in live {
        if record.step == def.id {
            conflicts.push(format!(
                "a window of {} is open since {}",
                def.id,
                record.opened_at.to_rfc3339()
            ));
            continue;
        }
    }
    let step_container = runtime
        .inspect(&def.spec.name)
        .await
        .map_err(|e| e.to_string())?;
    if step_container.as_ref().is_some_and(|i| i.running) {
        conflicts.push(format!("its container {} is still running", def.spec.name));
    }
    let container_state = match &step_container {
        None => "missing: created at the fire".to_string(),
        Some(i) if i.running => "running".to_string(),
        Some(i) if is_made_ready_from(i, def) => format!(
            "ready: created ahead for the unit {}",
            i.labels.get(LABEL_READY).map_or("", String::as_str)
        ),
        Some(i) if i.status == "created" => {
            "created from another declaration: made again before its fire".to_string()
        }
        Some(i) => format!(
            "{} (the last run's): made again before the next fire",
            i.status
        ),
    };
    Ok(Plan {
        step: def.id.clone(),
        container: def.spec.name.clone(),
        container_state,
        image: def.spec.image.clone(),
        timeout_secs: def.timeout.map(|t| t.as_secs()),
        holds,
        stop_order,
        start_order,
        conflicts,
        next_fire: step.timing.next_after(chrono::Utc::now()),
        delay_ms: (!step.timing.delay.is_zero())
            .then(|| u64::try_from(step.timing.delay.as_millis()).unwrap_or(u64::MAX)),
        suspended_since: None,
    })
}

impl Plan {
    /// The plan for humans.
    pub fn render(&self) -> String {
        let mut out = format!(
            "step {} runs {} ({})",
            self.step, self.container, self.image
        );
        if let Some(t) = self.timeout_secs {
            out.push_str(&format!(", timeout {t}s"));
        }
        out.push('\n');
        let next = self.next_fire.map_or("never".to_string(), |t| {
            t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
        });
        let delay = self.delay_ms.map_or(String::new(), |ms| {
            format!(
                " (randomized delay {})",
                crate::schedule::splay::describe(std::time::Duration::from_millis(ms))
            )
        });
        out.push_str(&format!("  next fire: {next}{delay}\n"));
        if let Some(since) = self.suspended_since {
            out.push_str(&format!(
                "  SUSPENDED since {}: a due fire is not run (mesh-host resume {} lifts it; run --force runs it once)\n",
                since.format("%Y-%m-%d %H:%M:%S UTC"),
                self.step
            ));
        }
        out.push_str(&format!("  its container: {}\n", self.container_state));
        for h in &self.holds {
            out.push_str(&format!(
                "  holds {} ({}): {}{}\n",
                h.id,
                h.name,
                h.state,
                if h.shared {
                    " - shared: not stopped again, started by the last window to close"
                } else if h.would_hold {
                    ""
                } else {
                    " - not running, left as it is"
                }
            ));
        }
        if !self.stop_order.is_empty() {
            out.push_str(&format!("  stop order: {}\n", self.stop_order.join(", ")));
            out.push_str(&format!(
                "  start order after the run: {}\n",
                self.start_order.join(", ")
            ));
        }
        if self.conflicts.is_empty() {
            out.push_str("  a fire now would run\n");
        } else {
            for c in &self.conflicts {
                out.push_str(&format!("  a fire now would be skipped: {c}\n"));
            }
        }
        out
    }
}
