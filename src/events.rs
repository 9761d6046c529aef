//! Journal events: their names, fixed `MESSAGE_ID`s, and the logging setup.
//!
//! Every significant thing the host does is one [`Event`] kind, logged with
//! `MESH_EVENT=<name>`, a fixed `MESSAGE_ID` (explained by the catalog in
//! `units/mesh-host.catalog`) and, where they apply, `MESH_STEP`,
//! `MESH_CONTAINER`, `MESH_MODULE`, `MESH_EXIT_STATUS`. Log them with the
//! [`mesh_event!`](crate::mesh_event) macro; the alert kinds,
//! `will-not-start-again` through [`mesh_alert!`](crate::mesh_alert) and
//! `record-unreadable` through [`mesh_alert_of!`](crate::mesh_alert_of),
//! are stored by journald at priority 1 (`alert`).

use std::io::IsTerminal;

use tracing_subscriber::filter::{filter_fn, EnvFilter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// The target of alert-priority events; only they are mapped to priority 1.
pub const ALERT_TARGET: &str = "mesh_host::alert";

/// The target of the paging path's own entries (the hand-off an
/// `--on-alert` instance reads back, and why a page was not sent): stored
/// at priority 2 (`crit`), whatever their level. journald rate-limits each
/// unit per priority group (emerg–crit, err, warning, notice–info, debug):
/// crit shares its group only with the alerts that page, and no message a
/// writer in a shared folder can cause (warning, notice) is in it, so a
/// flood of those never suppresses a page.
pub const PAGE_TARGET: &str = "mesh_host::page";

/// One kind of event the host logs. The names and ids are part of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    /// An apply ended (successfully or not).
    ApplyFinished,
    /// A container was removed and created again because what it is changed.
    ContainerRecreated,
    /// A scheduled step's fire began.
    StepStarted,
    /// A step's run ended with exit status 0.
    StepFinished,
    /// A step's run failed: non-zero exit, timeout, stopped, or could not start.
    StepFailed,
    /// A fire was not run because the previous run was still in flight.
    StepSkipped,
    /// Fires that fell due while the host could not run them.
    StepMissed,
    /// A step has had no successful run in twice its period.
    StepStale,
    /// A maintenance window opened: its record is written, holds begin.
    WindowOpened,
    /// A maintenance window closed: held containers were started again.
    WindowClosed,
    /// A window left open by a daemon that died was taken over.
    WindowResumed,
    /// A held container was started by someone else during a window.
    HoldViolated,
    /// A held container could not be started again after its window.
    WillNotStartAgain,
    /// A held container started again but its health check did not report
    /// `healthy` within the closing budget.
    HeldUnhealthy,
    /// A shared folder's entries, removed or narrowed, were put back.
    AclRestored,
    /// A fire missed while the daemon was down was run once at start
    /// (`catch-up`).
    StepCaughtUp,
    /// A file in the window records' directory could not be read as a
    /// record: moved to `windows/unreadable/` (an alert).
    RecordUnreadable,
    /// A window was taken over from its owner: the owner died, or its lease
    /// lapsed (stopped, hung, frozen).
    WindowTakenOver,
    /// The node's declaration file declares no resources while resources
    /// are applied: the daemon refused it and kept everything.
    DeclarationEmptyRefused,
    /// A suspended step's due time passed: it was not run (and never is).
    StepSuspended,
    /// A service's replacement was not healthy within its bound: the new
    /// container was removed and the old one put back (an alert).
    RolloutRolledBack,
}

impl Event {
    /// Every kind, in the order the contract lists them.
    pub const ALL: [Event; 21] = [
        Event::ApplyFinished,
        Event::ContainerRecreated,
        Event::StepStarted,
        Event::StepFinished,
        Event::StepFailed,
        Event::StepSkipped,
        Event::StepMissed,
        Event::StepStale,
        Event::WindowOpened,
        Event::WindowClosed,
        Event::WindowResumed,
        Event::HoldViolated,
        Event::WillNotStartAgain,
        Event::HeldUnhealthy,
        Event::AclRestored,
        Event::StepCaughtUp,
        Event::RecordUnreadable,
        Event::WindowTakenOver,
        Event::DeclarationEmptyRefused,
        Event::StepSuspended,
        Event::RolloutRolledBack,
    ];

    /// The `MESH_EVENT` value.
    pub const fn name(self) -> &'static str {
        match self {
            Event::ApplyFinished => "apply-finished",
            Event::ContainerRecreated => "container-recreated",
            Event::StepStarted => "step-started",
            Event::StepFinished => "step-finished",
            Event::StepFailed => "step-failed",
            Event::StepSkipped => "step-skipped",
            Event::StepMissed => "step-missed",
            Event::StepStale => "step-stale",
            Event::WindowOpened => "window-opened",
            Event::WindowClosed => "window-closed",
            Event::WindowResumed => "window-resumed",
            Event::HoldViolated => "hold-violated",
            Event::WillNotStartAgain => "will-not-start-again",
            Event::HeldUnhealthy => "held-unhealthy",
            Event::AclRestored => "acl-restored",
            Event::StepCaughtUp => "step-caught-up",
            Event::RecordUnreadable => "record-unreadable",
            Event::WindowTakenOver => "window-taken-over",
            Event::DeclarationEmptyRefused => "declaration-empty-refused",
            Event::StepSuspended => "step-suspended",
            Event::RolloutRolledBack => "rollout-rolled-back",
        }
    }

    /// The fixed `MESSAGE_ID` (32 lowercase hex digits, the catalog's form).
    pub const fn message_id(self) -> &'static str {
        match self {
            Event::ApplyFinished => "4b4a01f5f137418b8fc8de509e75fd06",
            Event::ContainerRecreated => "82aa3ee541d2415093b929279c50205c",
            Event::StepStarted => "3be78fd74d7c41d39110f83f245ce612",
            Event::StepFinished => "412fd06eb4a3408991db7bce105809a1",
            Event::StepFailed => "faf2cba8df5a418bae9d8960f3c437aa",
            Event::StepSkipped => "7509940986c64d6295a99539bf86671a",
            Event::StepMissed => "14ac1802a2d846b688e0ecefac922cff",
            Event::StepStale => "7633cbdf46cf4195b116dd59e53191d2",
            Event::WindowOpened => "12718482aaaf48408edb95cd2e5079e0",
            Event::WindowClosed => "b86b1ecf2a6c49a2aad489b45673027a",
            Event::WindowResumed => "7f1c6aeaa5ac441f8e1afb6dd476a779",
            Event::HoldViolated => "1b65895ccb3b410fb02e6cf4e2499a67",
            Event::WillNotStartAgain => "ab50638306cd43f4884b6fefbd280992",
            Event::HeldUnhealthy => "4c0baca3055f4c2c8e7c582487e5b01b",
            Event::AclRestored => "d2890cb406fd4d2d9414284c1bd8d0e9",
            Event::StepCaughtUp => "6c5340fafe25456ca2a1372102683f52",
            Event::RecordUnreadable => "5e0f3c9a8b2d4e6f91a7c4d8e2b6f013",
            Event::WindowTakenOver => "c37a1d95e4f84b0a8d26f1e9b05c7a42",
            Event::DeclarationEmptyRefused => "5f0980ab7bc6467ebde440999d004df0",
            Event::StepSuspended => "73bd00f2d4314e4385fd612818c9320e",
            Event::RolloutRolledBack => "9a41c3e07d5b4f2e8c16b0d5e7a2f348",
        }
    }
}

/// Log one event: `mesh_event!(LEVEL, Event::Kind, FIELD = value, ..., "message {}", args)`.
///
/// LEVEL is a tracing level macro name (`info`, `warn`, `error`). Field
/// values should be `%`-formatted (Debug values are stored with quotes).
#[macro_export]
macro_rules! mesh_event {
    ($level:ident, $kind:expr, $($rest:tt)+) => {
        ::tracing::$level!(
            MESH_EVENT = $kind.name(),
            MESSAGE_ID = $kind.message_id(),
            $($rest)+
        )
    };
}

/// Log the `will-not-start-again` alert at journal priority 1:
/// `mesh_alert!(MESH_CONTAINER = %name, ..., "message")`.
#[macro_export]
macro_rules! mesh_alert {
    ($($rest:tt)+) => {
        ::tracing::error!(
            target: "mesh_host::alert",
            MESH_EVENT = $crate::events::Event::WillNotStartAgain.name(),
            MESSAGE_ID = $crate::events::Event::WillNotStartAgain.message_id(),
            $($rest)+
        )
    };
}

/// Log an event of `kind` at journal priority 1 (`alert`), like
/// [`mesh_alert!`](crate::mesh_alert) for other alerting kinds:
/// `mesh_alert_of!(Event::RecordUnreadable, FIELD = value, ..., "message")`.
#[macro_export]
macro_rules! mesh_alert_of {
    ($kind:expr, $($rest:tt)+) => {
        ::tracing::error!(
            target: "mesh_host::alert",
            MESH_EVENT = $kind.name(),
            MESSAGE_ID = $kind.message_id(),
            $($rest)+
        )
    };
}

/// Where log output goes for this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogSink {
    /// journald with structured fields (stderr is the journal, or no terminal).
    Journal,
    /// journald for the record, plus readable lines on stderr for the operator.
    JournalAndStderr,
    /// No journal here: readable lines on stderr only.
    Stderr,
}

/// The installed logger: where it writes, and what flushes its stderr
/// copy when dropped (keep it until the process ends).
pub struct Logging {
    pub sink: LogSink,
    _stderr_copy: Option<tracing_appender::non_blocking::WorkerGuard>,
}

impl std::fmt::Debug for Logging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logging").field("sink", &self.sink).finish()
    }
}

/// Install the global logger. Events always reach journald when there is
/// one (an alert from a command run by hand must be findable too); a
/// readable copy goes to stderr unless stderr already is the journal.
///
/// That copy is written by a thread of its own: a command stopped with
/// its stderr a pipe nobody reads (`| less`, stopped) must not block in a
/// log line while it holds a lock of the state directory. Lines queue
/// (up to 128,000; past that they are dropped, the journal has them).
pub fn init_logging(verbose: bool) -> Logging {
    let default = if verbose { "debug" } else { "info" };
    let env_filter =
        || EnvFilter::try_from_env("MESH_HOST_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let stderr_is_journal = std::env::var_os("JOURNAL_STREAM").is_some();
    let journal = journal_layers();
    let sink = match (&journal, stderr_is_journal) {
        (Some(_), true) => LogSink::Journal,
        (Some(_), false) => LogSink::JournalAndStderr,
        (None, _) => LogSink::Stderr,
    };
    let mut layers: Vec<BoxedLayer> = Vec::new();
    let mut stderr_copy = None;
    let terminal = std::io::stderr().is_terminal();
    if sink == LogSink::JournalAndStderr {
        // An operator reads sentences; the journal keeps the fields (and
        // every line, should this copy drop some).
        let (writer, guard) = tracing_appender::non_blocking(std::io::stderr());
        stderr_copy = Some(guard);
        layers.push(
            tracing_subscriber::fmt::layer()
                .with_writer(writer)
                .event_format(crate::plain_log::PlainLines {
                    alert_target: ALERT_TARGET,
                })
                .with_filter(env_filter())
                .boxed(),
        );
    } else if sink == LogSink::Stderr && terminal {
        layers.push(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .event_format(crate::plain_log::PlainLines {
                    alert_target: ALERT_TARGET,
                })
                .with_filter(env_filter())
                .boxed(),
        );
    } else if sink == LogSink::Stderr {
        // No journal and no terminal: stderr is the only record, fields kept.
        layers.push(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(false)
                .with_target(false)
                .without_time()
                .with_filter(env_filter())
                .boxed(),
        );
    }
    layers.push(crate::tap::layer());
    if let Some((normal, alert, page)) = journal {
        layers.push(normal.with_filter(env_filter()).boxed());
        layers.push(alert);
        layers.push(page);
    }
    // A second init (tests) keeps the first logger; that is fine.
    let _ = tracing_subscriber::registry().with(layers).try_init();
    Logging {
        sink,
        _stderr_copy: stderr_copy,
    }
}

type BoxedLayer = Box<dyn Layer<tracing_subscriber::Registry> + Send + Sync>;

/// Three journald layers: one for everything but alerts and pages with
/// the default priority mapping, one for the alert target that maps ERROR
/// to `alert`, one for the paging target that maps every level to `crit`.
fn journal_layers() -> Option<(BoxedLayer, BoxedLayer, BoxedLayer)> {
    let make = || {
        tracing_journald::layer().ok().map(|l| {
            l.with_field_prefix(None)
                .with_syslog_identifier("mesh-host".to_string())
        })
    };
    let normal = make()?
        .with_filter(filter_fn(|m| {
            m.target() != ALERT_TARGET && m.target() != PAGE_TARGET
        }))
        .boxed();
    let mut alert_prio = tracing_journald::PriorityMappings::new();
    alert_prio.error = tracing_journald::Priority::Alert;
    let alert = make()?
        .with_priority_mappings(alert_prio)
        .with_filter(filter_fn(|m| m.target() == ALERT_TARGET))
        .boxed();
    let crit = tracing_journald::Priority::Critical;
    let mut page_prio = tracing_journald::PriorityMappings::new();
    (page_prio.error, page_prio.warn, page_prio.info) = (crit, crit, crit);
    (page_prio.debug, page_prio.trace) = (crit, crit);
    let page = make()?
        .with_priority_mappings(page_prio)
        .with_filter(filter_fn(|m| m.target() == PAGE_TARGET))
        .boxed();
    Some((normal, alert, page))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_and_ids_are_unique_and_well_formed() {
        let names: HashSet<_> = Event::ALL.iter().map(|e| e.name()).collect();
        let ids: HashSet<_> = Event::ALL.iter().map(|e| e.message_id()).collect();
        assert_eq!(names.len(), Event::ALL.len());
        assert_eq!(ids.len(), Event::ALL.len());
        for id in ids {
            assert_eq!(id.len(), 32, "{id}");
            assert!(id
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)));
        }
    }

    #[test]
    fn every_event_is_in_the_readmes_list_and_the_journal_page() {
        // The README's list: the backticked names of its "Events carry
        // `MESH_EVENT` (...)" sentence, in the code's order.
        let readme = include_str!("../README.md");
        let from = readme
            .find("Events carry `MESH_EVENT` (")
            .expect("the README lists the events");
        let list = &readme[from..][..readme[from..].find(')').expect("the list ends")];
        let listed: Vec<&str> = list.split('`').skip(3).step_by(2).collect();
        let names: Vec<&str> = Event::ALL.iter().map(|e| e.name()).collect();
        assert_eq!(
            listed, names,
            "README.md's list of events against the code's"
        );
        let page = include_str!("../docs/journal.md");
        for e in Event::ALL {
            let row = format!("| `{}` | `{}` |", e.name(), e.message_id());
            assert!(
                page.contains(&row),
                "docs/journal.md lacks the row of {}",
                e.name()
            );
        }
        // The events' table: rows whose second cell is a MESSAGE_ID.
        let rows = page
            .lines()
            .filter(|l| {
                let id = l.split('|').nth(2).unwrap_or("").trim().trim_matches('`');
                id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())
            })
            .count();
        assert_eq!(
            rows,
            Event::ALL.len(),
            "docs/journal.md lists an event the code lacks"
        );
    }

    #[test]
    fn catalog_explains_every_event() {
        let catalog = include_str!("../units/mesh-host.catalog");
        for e in Event::ALL {
            let header = format!("-- {}\n", e.message_id());
            let at = catalog
                .find(&header)
                .unwrap_or_else(|| panic!("catalog has no entry for {}", e.name()));
            let entry = &catalog[at..];
            let subject = entry.lines().nth(1).unwrap_or_default();
            assert!(subject.starts_with("Subject: "), "{}: {subject}", e.name());
            assert!(
                entry.contains(&format!("MESH_EVENT={}", e.name())),
                "catalog entry of {} must name its MESH_EVENT",
                e.name()
            );
        }
    }
}
