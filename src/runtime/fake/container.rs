//! One container of the fake: what it was created from, and its runs.

use super::super::{ContainerSpec, RuntimeError, VolumeMount};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    Created,
    Running,
    Exited,
}

impl Status {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Status::Created => "created",
            Status::Running => "running",
            Status::Exited => "exited",
        }
    }
}

#[derive(Debug)]
pub(super) struct Container {
    pub(super) id: String,
    pub(super) spec: ContainerSpec,
    pub(super) status: Status,
    pub(super) exit_code: Option<i64>,
    /// Counts starts, so a scripted exit only ends the run it was armed for.
    pub(super) run: u64,
    pub(super) started_at: Option<String>,
    pub(super) finished_at: Option<String>,
    pub(super) pid: Option<u32>,
    /// Its last run was ended by the OOM killer ([`FakeRuntime::oom_kill_runs`](super::FakeRuntime::oom_kill_runs)).
    pub(super) oom_killed: bool,
    /// When the current run started (tokio time), while it runs.
    pub(super) started_instant: Option<tokio::time::Instant>,
    /// When it was created, in Unix seconds (the wall clock's).
    pub(super) created: i64,
    /// Its volumes: named ones it mounts, anonymous ones its image declares.
    pub(super) volumes: Vec<VolumeMount>,
}

pub(super) fn not_found(name: &str) -> RuntimeError {
    RuntimeError::NotFound {
        what: format!("container {name}"),
    }
}
