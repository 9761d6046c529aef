//! The running daemon's shared parts, the types its main loop, the
//! reload worker and the `status` answer all hold: [`Daemon`], the last
//! apply, what made the daemon apply its declaration file, and how the daemon is set up ([`DaemonConfig`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{watch, Mutex};

use super::notify::Notifier;
use super::reload_tickets::Reloads;
use crate::apply::Applier;
use crate::metrics::service::MetricsHandle;
use crate::runtime::ContainerRuntime;
use crate::schedule::scheduler::SchedulerHandle;
use crate::store::Store;
use crate::window::Windows;

/// How the daemon is set up.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// The state directory.
    pub state_dir: PathBuf,
    /// The runtime endpoint.
    pub docker_host: Option<String>,
    /// The declaration file applied at start and on reload.
    pub declaration: PathBuf,
    /// The control socket.
    pub control_socket: PathBuf,
    /// Where unit resources' files are written.
    pub unit_dir: PathBuf,
    /// Time between two reconciliations.
    pub reconcile_interval: Duration,
    /// The metrics textfile, if one is written.
    pub metrics_file: Option<PathBuf>,
    /// The alert template started for alerting events, if any.
    pub on_alert: Option<crate::page::Template>,
}

/// The last apply, for `STATUS=` and `status`.
#[derive(Debug, Clone)]
pub(super) struct LastApply {
    pub(super) at: DateTime<Utc>,
    pub(super) ok: bool,
    pub(super) summary: String,
    /// Where its lines are.
    pub(super) lines: LastLines,
}

/// Where the lines of the daemon's last apply are, for `status`.
#[derive(Debug, Clone)]
pub(super) enum LastLines {
    /// In `applied.json`: the apply wrote them there (it rewrites the
    /// record whenever its lines differ), or applied nothing (a refused
    /// declaration file), so the record's are what the node is.
    Recorded,
    /// Every resource `unchanged`: an apply that found the node as the
    /// same request left it. It writes no lines, so the record's actions
    /// are an earlier apply's (`5000 installed` under this one's `6000
    /// unchanged`, measured) and are not shown for it; its resources are
    /// the record's (the request it found applied, `apply::converged`).
    Unchanged,
}

/// The running daemon's shared parts.
pub(super) struct Daemon {
    pub(super) cfg: DaemonConfig,
    pub(super) runtime: Arc<dyn ContainerRuntime>,
    pub(super) windows: Windows,
    pub(super) applier: Applier,
    /// The state directory (for the armed declaration).
    pub(super) store: Store,
    pub(super) scheduler: SchedulerHandle,
    /// The daemon's own applies are serialised here (the flock also
    /// serialises it against applies of other processes).
    pub(super) applying: Mutex<()>,
    /// What is kept of the declaration the schedules are armed from, once
    /// they are (`daemon::armed`).
    pub(super) armed: Mutex<Option<super::armed::Armed>>,
    /// What the last `apply FILE` converged the node to, while it is the
    /// last apply (`apply::converged`): the next apply of the same bytes
    /// is checked against the machine, not decided from the start.
    pub(super) converged: std::sync::Mutex<Option<Arc<crate::apply::Converged>>>,
    pub(super) last_apply: std::sync::Mutex<Option<LastApply>>,
    /// The empty declaration file refused, until a declaration is applied.
    pub(super) empty_refused: std::sync::Mutex<Option<crate::answer::status::EmptyRefusal>>,
    /// Signalled when the last apply changes (for `STATUS=`).
    pub(super) applied: tokio::sync::Notify,
    /// What `status` needs of `applied.json`, read again only when the
    /// file changed.
    pub(super) applied_for_status: crate::store::Cached<crate::apply::AppliedState>,
    pub(super) notifier: Notifier,
    pub(super) metrics: MetricsHandle,
    /// Keeps shared folders' entries between applies.
    pub(super) folders: crate::acl::watch::Watcher,
    /// `systemctl reload`s asked for and done.
    pub(super) reloads: Reloads,
    /// Set when the daemon stops.
    pub(super) stopping: watch::Receiver<bool>,
}

/// What made the daemon read its declaration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trigger {
    /// Its start.
    Start,
    /// `systemctl reload` (SIGHUP).
    Reload,
    /// The reconcile interval.
    Reconcile,
}
