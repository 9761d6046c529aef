//! What a fire's end says in the journal: `step-finished` or `step-failed`
//! with the fire's figures ([`crate::accounting`]), its duration and what
//! its window held, one field each (docs/journal.md). A figure that was not
//! measured is left out of the entry, never written as 0.

use crate::accounting::Usage;
use crate::events::Event;
use crate::mesh_event;

/// A fire that ran (or could not), as its end event tells it.
#[derive(Debug)]
pub struct Ended<'a> {
    /// The step.
    pub step: &'a str,
    /// The fire's name (`MESH_FIRE`).
    pub fire: &'a str,
    /// The step's module.
    pub module: Option<&'a str>,
    /// The exit status, when the container exited.
    pub exit_status: Option<i64>,
    /// `None` when it succeeded; else its `MESH_REASON` and its words
    /// (an OOM kill's are put here with its peak and its limit).
    pub failure: Option<(&'static str, String)>,
    /// How long the fire took, its window included.
    pub duration_secs: f64,
    /// What it used.
    pub usage: Option<&'a Usage>,
    /// The containers its window held.
    pub held: Vec<&'a str>,
    /// How long they were held.
    pub held_secs: Option<f64>,
}

impl Ended<'_> {
    /// Log the event.
    pub fn log(&self) {
        let u = self.usage.cloned().unwrap_or_default();
        // An OOM kill's words name its peak already.
        let shown = match &self.failure {
            Some(("oom", _)) => Usage {
                memory_peak_bytes: None,
                memory_limit_bytes: None,
                oom_killed: None,
                ..u.clone()
            },
            _ => u.clone(),
        };
        let figures = match shown.summary() {
            s if s.is_empty() => s,
            s => format!(" ({s})"),
        };
        let status = self.exit_status.map(|s| s.to_string()).unwrap_or_default();
        let failure = self.failure.as_ref().map(|(reason, words)| match *reason {
            "oom" => (
                *reason,
                Usage::oom_text(u.memory_peak_bytes, u.memory_limit_bytes),
            ),
            _ => (*reason, words.clone()),
        });
        let held = (!self.held.is_empty()).then(|| self.held.join(","));
        let usec = |secs: f64| (secs * 1e6) as u64;
        match failure {
            None => mesh_event!(
                info,
                Event::StepFinished,
                MESH_STEP = %self.step,
                MESH_FIRE = %self.fire,
                MESH_MODULE = self.module,
                MESH_EXIT_STATUS = %status,
                MESH_DURATION_USEC = usec(self.duration_secs),
                MESH_CPU_USEC = u.cpu_usec,
                MESH_CPU_USER_USEC = u.cpu_user_usec,
                MESH_CPU_SYSTEM_USEC = u.cpu_system_usec,
                MESH_MEMORY_PEAK_BYTES = u.memory_peak_bytes,
                MESH_MEMORY_LIMIT_BYTES = u.memory_limit_bytes,
                MESH_IO_READ_BYTES = u.io_read_bytes,
                MESH_IO_WRITE_BYTES = u.io_write_bytes,
                MESH_OOM_KILLED = u.oom_killed.map(u8::from),
                MESH_HELD = held.as_deref(),
                MESH_HELD_USEC = self.held_secs.map(usec),
                "step {} finished in {:.1}s{figures}",
                self.step,
                self.duration_secs
            ),
            Some((reason, words)) => mesh_event!(
                warn,
                Event::StepFailed,
                MESH_STEP = %self.step,
                MESH_FIRE = %self.fire,
                MESH_MODULE = self.module,
                MESH_EXIT_STATUS = %status,
                MESH_REASON = reason,
                MESH_DURATION_USEC = usec(self.duration_secs),
                MESH_CPU_USEC = u.cpu_usec,
                MESH_CPU_USER_USEC = u.cpu_user_usec,
                MESH_CPU_SYSTEM_USEC = u.cpu_system_usec,
                MESH_MEMORY_PEAK_BYTES = u.memory_peak_bytes,
                MESH_MEMORY_LIMIT_BYTES = u.memory_limit_bytes,
                MESH_IO_READ_BYTES = u.io_read_bytes,
                MESH_IO_WRITE_BYTES = u.io_write_bytes,
                MESH_OOM_KILLED = u.oom_killed.map(u8::from),
                MESH_HELD = held.as_deref(),
                MESH_HELD_USEC = self.held_secs.map(usec),
                "step {} failed after {:.1}s: {words}{figures}",
                self.step,
                self.duration_secs
            ),
        }
    }
}
