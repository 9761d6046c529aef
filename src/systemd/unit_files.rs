//! `type: "unit"` resources: unit files this host writes, and the units they
//! define brought to their declared state through systemd's D-Bus API.
//!
//! An apply calls [`UnitFiles::prepare`] once with every declared unit (files
//! written, one `Reload` if any changed), then [`UnitFiles::converge`] per
//! unit in declaration order, and [`UnitFiles::remove`] for the units an
//! earlier apply wrote and this one no longer declares. `docs/units.md` is the
//! user's side of this.
//!
//! Decisions worth knowing:
//!
//! - A started unit whose file changed is **restarted** (`RestartUnit`, which
//!   also starts it when it was not running), so a service runs its new
//!   definition. `TryRestartUnit` is not used: it does nothing to a unit that
//!   is not running, which would then need a second call. Only services,
//!   sockets, timers and path units are restarted; restarting a mount, swap,
//!   automount, target or slice would unmount, swap off or stop whatever
//!   runs in it, so those are only started (their new settings take effect
//!   at reload or at their next start).
//! - A oneshot service without `RemainAfterExit` is never "active": it runs
//!   and goes back to `inactive (dead)`. After our start job ended `done`
//!   with `Result=success` it is **satisfied**. systemd forgets such a unit
//!   as soon as it is unreferenced, so "it already ran" cannot be read back
//!   from it: the host records the digest of the unit file each such run
//!   succeeded under ([`super::oneshot_runs`], given by
//!   [`UnitFiles::with_oneshot_record`]) and does not start it again while
//!   the file is unchanged (`unchanged`); a changed file, a failed last run
//!   or a unit in `failed` state runs it again. `RemainAfterExit=yes` makes
//!   it active (exited) instead, and run once per boot.
//! - While a unit is started and judged, the host holds a reference on it
//!   (`Unit.Ref`): without one, systemd may unload an inactive unit between
//!   the end of the job and the reading of its `Result`, and a fresh copy
//!   loaded from disk says nothing about the run.
//! - Every job is awaited through `JobRemoved` (subscribe first, then open
//!   the signal stream, then act: no signal can be missed), bounded by
//!   [`JOB_TIMEOUT`]; method calls are bounded by [`CALL_TIMEOUT`].
//! - Enabling uses `EnableUnitFiles(runtime=false, force=true)` and, like
//!   `systemctl enable`, reloads systemd afterwards so the new dependencies
//!   are in effect at once.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::StreamExt;
use serde::Serialize;
use zbus::fdo::PropertiesProxy;
use zbus::names::InterfaceName;
use zbus::proxy::CacheProperties;
use zbus::{OwnedObjectPath, OwnedVariant};
use zbus_systemd::systemd1::{ManagerProxy, UnitProxy};

use super::oneshot_runs::{self, OneshotRuns};
use crate::declaration::{Unit, UnitState};

/// Where unit files go unless told otherwise: the administrator's unit
/// directory, which takes precedence over units shipped by packages.
pub const DEFAULT_DIR: &str = "/etc/systemd/system";

/// How long one job (start, stop, restart) may take before the host stops
/// waiting for it. Longer than systemd's default start and stop timeouts
/// (90 s), so that systemd's own verdict on a slow unit normally arrives
/// first; a oneshot has no start timeout by default, and this bounds it.
pub const JOB_TIMEOUT: Duration = Duration::from_secs(120);

/// How long one D-Bus method call may take (a `Reload` of a large system is
/// the slowest).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(90);

/// Permission bits of every unit file written.
const UNIT_FILE_MODE: u32 = 0o644;

const SYSTEMD: &str = "org.freedesktop.systemd1";
const UNIT_INTERFACE: &str = "org.freedesktop.systemd1.Unit";
const SERVICE_INTERFACE: &str = "org.freedesktop.systemd1.Service";
const NO_SUCH_UNIT: &str = "org.freedesktop.systemd1.NoSuchUnit";
const ALREADY_SUBSCRIBED: &str = "org.freedesktop.systemd1.AlreadySubscribed";

/// What [`UnitFiles::prepare`] did to one unit's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileChange {
    /// There was no file: it was written.
    Created,
    /// The file had other content: it was replaced.
    Updated,
    /// The file already had the declared content.
    Unchanged,
}

impl FileChange {
    /// The report word: `created`, `updated` or `unchanged`.
    pub fn as_str(self) -> &'static str {
        match self {
            FileChange::Created => "created",
            FileChange::Updated => "updated",
            FileChange::Unchanged => "unchanged",
        }
    }
}

impl fmt::Display for FileChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One line of the apply report for a unit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnitReport {
    /// The resource id (for [`UnitFiles::remove`], the unit's name).
    pub id: String,
    /// `created`, `updated`, `unchanged`, `started`, `stopped`, `satisfied`,
    /// `removed` or `failed`.
    pub action: String,
    /// Everything that was done, `; `-separated, or what went wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Whether the unit is as declared.
    pub ok: bool,
}

/// Unit files in one directory, and the systemd that loads them.
#[derive(Debug, Clone)]
pub struct UnitFiles {
    conn: zbus::Connection,
    manager: ManagerProxy<'static>,
    dir: PathBuf,
    job_timeout: Duration,
    /// Oneshot runs remembered across applies (none: every apply runs them).
    runs: Option<OneshotRuns>,
}

/// Refuses a name that could leave the unit directory or confuse a log line.
/// The declaration checks names fully; this is the last line of defence
/// before a name becomes a path.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "." || name == ".." {
        return Err(format!("{name:?} is not a unit name"));
    }
    if name.contains('/') {
        return Err(format!("unit name {name:?} contains '/'"));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(format!(
            "unit name {name:?} contains the control character {c:?}"
        ));
    }
    Ok(())
}

/// The unit type of a name (`service`, `timer`, ...).
fn suffix(name: &str) -> &str {
    name.rsplit_once('.').map_or("", |(_, s)| s)
}

/// The D-Bus interface holding the type-specific properties (`Result`) of a
/// unit type; targets and slices have no `Result`.
fn type_interface(name: &str) -> Option<&'static str> {
    Some(match suffix(name) {
        "service" => SERVICE_INTERFACE,
        "socket" => "org.freedesktop.systemd1.Socket",
        "timer" => "org.freedesktop.systemd1.Timer",
        "path" => "org.freedesktop.systemd1.Path",
        "mount" => "org.freedesktop.systemd1.Mount",
        "automount" => "org.freedesktop.systemd1.Automount",
        "swap" => "org.freedesktop.systemd1.Swap",
        _ => return None,
    })
}

/// Whether a changed file restarts a running unit of this type (see the
/// module documentation for why the others are only started).
fn restarts_on_change(name: &str) -> bool {
    matches!(suffix(name), "service" | "socket" | "timer" | "path")
}

/// Compares the file as it is with the declared content.
fn file_change(existing: Option<&[u8]>, wanted: &[u8]) -> FileChange {
    match existing {
        None => FileChange::Created,
        Some(old) if old == wanted => FileChange::Unchanged,
        Some(_) => FileChange::Updated,
    }
}

/// Writes `dir/name` with `content` unless it already holds exactly that,
/// and corrects its permission bits if someone changed them.
fn write_unit_file(dir: &Path, name: &str, content: &[u8]) -> Result<FileChange, String> {
    check_name(name)?;
    let path = dir.join(name);
    let existing = match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let change = file_change(existing.as_deref(), content);
    if change == FileChange::Unchanged {
        let meta = std::fs::metadata(&path)
            .map_err(|e| format!("cannot inspect {}: {e}", path.display()))?;
        if meta.permissions().mode() & 0o7777 != UNIT_FILE_MODE {
            // Content is what systemd loads; the mode only needs fixing.
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(UNIT_FILE_MODE))
                .map_err(|e| format!("cannot set the mode of {}: {e}", path.display()))?;
        }
        return Ok(change);
    }
    crate::store::write_atomic(&path, content, UNIT_FILE_MODE)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(change)
}

/// Deletes `dir/name`; whether there was a file.
fn delete_unit_file(dir: &Path, name: &str) -> Result<bool, String> {
    check_name(name)?;
    let path = dir.join(name);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("cannot delete {}: {e}", path.display())),
    }
}

/// Runs blocking filesystem work off the async runtime's threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| format!("unit file work did not finish: {e}"))
}

fn is_no_such_unit(e: &zbus::Error) -> bool {
    matches!(e, zbus::Error::MethodError(name, ..) if name.as_str() == NO_SUCH_UNIT)
}

/// A unit's state as systemd reports it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Observed {
    /// `loaded`, `not-found`, `bad-setting`, `error`, `masked`.
    load_state: String,
    /// `active`, `reloading`, `inactive`, `failed`, `activating`, `deactivating`.
    active_state: String,
    sub_state: String,
    /// False when a `Condition*=` kept the last start from running anything.
    condition_result: bool,
    /// The type's `Result` (`success`, `exit-code`, ...); none for targets
    /// and slices.
    result: Option<String>,
    /// Service-only properties.
    service: Option<ServiceState>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct ServiceState {
    /// `Type=`: `simple`, `oneshot`, ...
    kind: String,
    remain_after_exit: bool,
    /// Exit status or signal of the main process (per `ExecMainCode`).
    exec_main_status: i32,
}

impl Observed {
    /// Neither running nor on its way.
    fn is_down(&self) -> bool {
        matches!(self.active_state.as_str(), "inactive" | "failed")
    }

    fn is_active(&self) -> bool {
        matches!(self.active_state.as_str(), "active" | "reloading")
    }

    fn oneshot_without_remain(&self) -> bool {
        self.service
            .as_ref()
            .is_some_and(|s| s.kind == "oneshot" && !s.remain_after_exit)
    }

    fn result_success(&self) -> bool {
        self.result.as_deref().is_none_or(|r| r == "success")
    }
}

/// What bringing the unit to its declared state came to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum StateStep {
    /// Already as declared: nothing done.
    AsDeclared,
    /// Started now and active.
    Started,
    /// Running before, restarted on its changed file, active.
    Restarted,
    /// Stopped now.
    Stopped,
    /// A oneshot (without `RemainAfterExit`) that ran successfully.
    Satisfied,
    /// A oneshot that ran successfully under this very unit file before
    /// (then): not run again.
    AlreadyRan(chrono::DateTime<chrono::Utc>),
    /// Started, but a `Condition*=` did not hold, so nothing ran.
    ConditionUnmet,
    /// Not as declared.
    Failed(String),
}

/// Judges a unit after our start (or restart) job ended with `job_result`.
fn judge_start(name: &str, job_result: &str, o: &Observed, restarted: bool) -> StateStep {
    if o.is_active() {
        return if restarted {
            StateStep::Restarted
        } else {
            StateStep::Started
        };
    }
    let done = job_result == "done";
    if done && o.active_state == "inactive" && !o.condition_result {
        return StateStep::ConditionUnmet;
    }
    if done && o.active_state == "inactive" && o.result_success() && o.oneshot_without_remain() {
        return StateStep::Satisfied;
    }
    StateStep::Failed(describe_failure(name, job_result, o))
}

/// Names systemd's verdict: its `Result`, the exit status, or the job's end.
fn describe_failure(name: &str, job_result: &str, o: &Observed) -> String {
    let journal = format!("see journalctl -u {name}");
    if let Some(result) = o.result.as_deref().filter(|r| *r != "success") {
        let detail = match (result, o.service.as_ref()) {
            ("exit-code", Some(s)) => format!(" (exit status {})", s.exec_main_status),
            ("signal" | "core-dump", Some(s)) => format!(" (signal {})", s.exec_main_status),
            _ => String::new(),
        };
        return format!("failed: {result}{detail}; {journal}");
    }
    match job_result {
        "done" => {
            let hint = if o.service.is_some() && o.active_state == "inactive" {
                ": it exited at once; a service meant to run once and exit should be \
                 Type=oneshot"
            } else {
                ""
            };
            format!(
                "not running after start: {} ({}){hint}; {journal}",
                o.active_state, o.sub_state
            )
        }
        "dependency" => format!("failed: a unit it depends on failed to start; {journal}"),
        "timeout" => format!("failed: systemd's start job timed out; {journal}"),
        "canceled" => format!("failed: the start job was canceled; {journal}"),
        other => format!("failed: the start job ended {other}; {journal}"),
    }
}

/// Everything [`UnitFiles::converge`] did to one unit.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Steps {
    file: FileChange,
    /// `Ok(Some("enabled"|"disabled"))` when changed, `Ok(None)` when as
    /// declared (or not declared), `Err` when it could not be made so.
    enablement: Result<Option<&'static str>, String>,
    state: StateStep,
}

/// The report line: the most telling action, and every step as the reason.
fn summarize(id: &str, steps: &Steps) -> UnitReport {
    let mut parts: Vec<String> = Vec::new();
    let mut ok = true;
    if steps.file != FileChange::Unchanged {
        parts.push(format!("file {}", steps.file));
    }
    let state_action = match &steps.state {
        StateStep::AsDeclared => None,
        StateStep::Started => {
            parts.push("started".into());
            Some("started")
        }
        StateStep::Restarted => {
            parts.push("restarted".into());
            // The file is what changed; the restart is its consequence.
            Some("updated")
        }
        StateStep::Stopped => {
            parts.push("stopped".into());
            Some("stopped")
        }
        StateStep::Satisfied => {
            parts.push("ran and exited successfully".into());
            Some("satisfied")
        }
        StateStep::AlreadyRan(at) => {
            parts.push(format!(
                "ran successfully under this unit file at {}: not run again until the file changes",
                at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ));
            None
        }
        StateStep::ConditionUnmet => {
            parts.push("start condition not met (ConditionResult=no): nothing ran".into());
            None
        }
        StateStep::Failed(why) => {
            ok = false;
            parts.push(why.clone());
            None
        }
    };
    match &steps.enablement {
        Ok(Some(word)) => parts.push((*word).to_string()),
        Ok(None) => {}
        Err(why) => {
            ok = false;
            parts.push(why.clone());
        }
    }
    let action = if !ok {
        "failed"
    } else {
        state_action.unwrap_or(steps.file.as_str())
    };
    UnitReport {
        id: id.to_string(),
        action: action.to_string(),
        reason: (!parts.is_empty()).then(|| parts.join("; ")),
        ok,
    }
}

/// Which job to run on a unit.
#[derive(Debug, Clone, Copy)]
enum JobKind {
    Start,
    Restart,
    Stop,
}

impl JobKind {
    fn method(self) -> &'static str {
        match self {
            JobKind::Start => "StartUnit",
            JobKind::Restart => "RestartUnit",
            JobKind::Stop => "StopUnit",
        }
    }
}

impl UnitFiles {
    /// Connect to the system bus; unit files are written into `dir`
    /// ([`DEFAULT_DIR`] on a real host).
    pub async fn connect(dir: PathBuf) -> Result<UnitFiles, String> {
        let conn = zbus::connection::Builder::system()
            .method_timeout(CALL_TIMEOUT)
            .build()
            .await
            .map_err(|e| format!("cannot reach systemd on the system bus: {e}"))?;
        UnitFiles::with_connection(conn, dir).await
    }

    /// Connect to the bus at a D-Bus `address` (`unix:path=...`), for a
    /// systemd other than this machine's own (a test node's).
    pub async fn connect_to(address: &str, dir: PathBuf) -> Result<UnitFiles, String> {
        let conn = zbus::connection::Builder::address(address)
            .method_timeout(CALL_TIMEOUT)
            .build()
            .await
            .map_err(|e| format!("cannot reach the D-Bus bus at {address}: {e}"))?;
        UnitFiles::with_connection(conn, dir).await
    }

    async fn with_connection(conn: zbus::Connection, dir: PathBuf) -> Result<UnitFiles, String> {
        let manager = ManagerProxy::new(&conn)
            .await
            .map_err(|e| format!("systemd manager: {e}"))?;
        // Without a subscription systemd sends no JobRemoved; subscribe once
        // per connection (a second Subscribe is refused).
        match manager.subscribe().await {
            Ok(()) => {}
            Err(zbus::Error::MethodError(name, ..)) if name.as_str() == ALREADY_SUBSCRIBED => {}
            Err(e) => return Err(format!("systemd Subscribe: {e}")),
        }
        Ok(UnitFiles {
            conn,
            manager,
            dir,
            job_timeout: JOB_TIMEOUT,
            runs: None,
        })
    }

    /// The same, waiting at most `timeout` for each job instead of
    /// [`JOB_TIMEOUT`].
    pub fn with_job_timeout(mut self, timeout: Duration) -> UnitFiles {
        self.job_timeout = timeout;
        self
    }

    /// The same, remembering in `store` which oneshot units (without
    /// `RemainAfterExit`) ran successfully under which unit file, so that
    /// one is not run again until its file changes (module documentation).
    pub fn with_oneshot_record(mut self, store: crate::store::Store) -> UnitFiles {
        self.runs = Some(OneshotRuns::new(store));
        self
    }

    /// The directory unit files are written into.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Write every declared unit's file (atomically, mode 0644) and reload
    /// systemd once if any file changed. Per resource id, whether its file
    /// was created, updated or left unchanged.
    ///
    /// A file that cannot be written fails the whole call, naming it; the
    /// files written before it are still loaded (systemd is reloaded).
    pub async fn prepare(
        &self,
        units: &[(String, Unit)],
    ) -> Result<BTreeMap<String, FileChange>, String> {
        let mut seen = BTreeSet::new();
        for (id, unit) in units {
            let name = unit.name.as_str();
            check_name(name).map_err(|e| format!("unit {id}: {e}"))?;
            if !seen.insert(name) {
                return Err(format!("unit {id}: {name} is declared twice"));
            }
        }
        let dir = self.dir.clone();
        let work: Vec<(String, String, String)> = units
            .iter()
            .map(|(id, u)| (id.clone(), u.name.as_str().to_string(), u.content.clone()))
            .collect();
        let (changes, failure) = blocking(move || {
            let mut changes = BTreeMap::new();
            for (id, name, content) in work {
                match write_unit_file(&dir, &name, content.as_bytes()) {
                    Ok(change) => {
                        changes.insert(id, change);
                    }
                    Err(e) => return (changes, Some(format!("unit {id}: {e}"))),
                }
            }
            (changes, None)
        })
        .await?;
        let reload_error = if changes.values().any(|c| *c != FileChange::Unchanged) {
            self.reload().await.err()
        } else {
            None
        };
        match (failure, reload_error) {
            (None, None) => Ok(changes),
            (failure, reload_error) => Err(failure
                .into_iter()
                .chain(reload_error)
                .collect::<Vec<_>>()
                .join("; ")),
        }
    }

    /// Bring one unit to its declared state and enablement; `file` is what
    /// [`UnitFiles::prepare`] did to its file. Never fails: a problem is a
    /// report line with `ok: false`.
    pub async fn converge(&self, id: &str, unit: &Unit, file: FileChange) -> UnitReport {
        let name = unit.name.as_str();
        if let Err(e) = check_name(name) {
            return UnitReport {
                id: id.to_string(),
                action: "failed".into(),
                reason: Some(e),
                ok: false,
            };
        }
        let enablement = match unit.enabled {
            Some(want) => self.set_enabled(name, want).await,
            None => Ok(None),
        };
        let state = match self.set_state(name, unit.state, file, &unit.content).await {
            Ok(step) => step,
            Err(e) => StateStep::Failed(e),
        };
        let report = summarize(
            id,
            &Steps {
                file,
                enablement,
                state,
            },
        );
        if report.ok {
            tracing::info!(unit = %name, action = %report.action, "unit {name}: {}", report.action);
        } else {
            tracing::warn!(unit = %name, "unit {name}: {}", report.reason.as_deref().unwrap_or(""));
        }
        report
    }

    /// Units the host wrote earlier and no longer declared: stopped,
    /// disabled, their files deleted, systemd reloaded once. Each report's
    /// id is the unit's name; action `removed`, or `failed` with the reason.
    pub async fn remove(&self, unit_names: &[String]) -> Vec<UnitReport> {
        let mut reports = Vec::with_capacity(unit_names.len());
        let mut reload_needed = false;
        for name in unit_names {
            let (parts, changed, error) = self.remove_one(name).await;
            reload_needed |= changed;
            reports.push((name, parts, error));
        }
        let reload_error = if reload_needed {
            self.reload().await.err()
        } else {
            None
        };
        let mut out = Vec::with_capacity(reports.len());
        for (name, mut parts, mut error) in reports {
            if let Some(e) = &reload_error {
                error.get_or_insert_with(|| e.clone());
            } else if check_name(name).is_ok() {
                // A failed unit whose file is gone would linger as
                // "not-found failed"; a unit that never failed answers
                // with an error here, which means nothing.
                let _ = self.manager.reset_failed_unit(name.clone()).await;
            }
            if let Some(e) = &error {
                parts.push(e.clone());
            }
            out.push(UnitReport {
                id: name.clone(),
                action: if error.is_some() { "failed" } else { "removed" }.into(),
                reason: (!parts.is_empty()).then(|| parts.join("; ")),
                ok: error.is_none(),
            });
        }
        out
    }

    /// Stop, disable and delete one unit; what was done, whether systemd
    /// must reload, and the first error.
    async fn remove_one(&self, name: &str) -> (Vec<String>, bool, Option<String>) {
        let mut parts = Vec::new();
        if let Err(e) = check_name(name) {
            return (parts, false, Some(e));
        }
        let mut changed = false;
        match self.stop_if_running(name).await {
            Ok(true) => parts.push("stopped".to_string()),
            Ok(false) => {}
            Err(e) => return (parts, changed, Some(e)),
        }
        match self.set_enabled(name, false).await {
            Ok(Some(word)) => {
                parts.push(word.to_string());
                changed = true;
            }
            Ok(None) => {}
            // A unit systemd never heard of has nothing to disable.
            Err(e) if e.contains(NO_SUCH_UNIT) || e.contains("No such file") => {}
            Err(e) => return (parts, changed, Some(e)),
        }
        let dir = self.dir.clone();
        let owned = name.to_string();
        match blocking(move || delete_unit_file(&dir, &owned)).await {
            Ok(Ok(true)) => {
                parts.push("file deleted".to_string());
                changed = true;
                if let Some(runs) = &self.runs {
                    if let Err(e) = runs.forget(name) {
                        tracing::warn!(unit = %name, "{name}: cannot drop its oneshot record: {e}");
                    }
                }
            }
            Ok(Ok(false)) => parts.push("no file left".to_string()),
            Ok(Err(e)) | Err(e) => return (parts, changed, Some(e)),
        }
        (parts, changed, None)
    }

    /// `Manager.Reload`, which answers once the reload is complete.
    async fn reload(&self) -> Result<(), String> {
        self.manager
            .reload()
            .await
            .map_err(|e| format!("systemd Reload: {e}"))
    }

    /// Makes the unit's enablement `want`; what changed.
    async fn set_enabled(&self, name: &str, want: bool) -> Result<Option<&'static str>, String> {
        let state = self.unit_file_state(name).await?;
        if want {
            if state == "enabled" {
                return Ok(None);
            }
            let (_, changes) = self
                .manager
                .enable_unit_files(vec![name.to_string()], false, true)
                .await
                .map_err(|e| format!("EnableUnitFiles {name}: {e}"))?;
            let after = self.unit_file_state(name).await?;
            if !changes.is_empty() {
                self.reload().await?;
            }
            if after != "enabled" {
                let hint = match after.as_str() {
                    "static" => ": it has no [Install] section to enable it by",
                    "masked" | "masked-runtime" => ": it is masked",
                    _ => "",
                };
                return Err(format!(
                    "cannot enable {name}: systemd says it is {after}{hint}"
                ));
            }
            return Ok(Some("enabled"));
        }
        if !matches!(state.as_str(), "enabled" | "enabled-runtime") {
            return Ok(None);
        }
        // Runtime enablement lives in /run and is undone separately.
        for runtime in [true, false] {
            self.manager
                .disable_unit_files(vec![name.to_string()], runtime)
                .await
                .map_err(|e| format!("DisableUnitFiles {name}: {e}"))?;
        }
        self.reload().await?;
        let after = self.unit_file_state(name).await?;
        if matches!(after.as_str(), "enabled" | "enabled-runtime") {
            return Err(format!(
                "cannot disable {name}: systemd says it is still {after}"
            ));
        }
        Ok(Some("disabled"))
    }

    async fn unit_file_state(&self, name: &str) -> Result<String, String> {
        self.manager
            .get_unit_file_state(name.to_string())
            .await
            .map_err(|e| format!("GetUnitFileState {name}: {e}"))
    }

    /// Brings the unit to `want`, knowing what happened to its file.
    async fn set_state(
        &self,
        name: &str,
        want: UnitState,
        file: FileChange,
        content: &str,
    ) -> Result<StateStep, String> {
        match want {
            UnitState::Stopped => Ok(if self.stop_if_running(name).await? {
                StateStep::Stopped
            } else {
                StateStep::AsDeclared
            }),
            UnitState::Started => self.start(name, file, content).await,
        }
    }

    async fn start(
        &self,
        name: &str,
        file: FileChange,
        content: &str,
    ) -> Result<StateStep, String> {
        // LoadUnit is safe here: the file exists, so this is no stub.
        let path = self
            .manager
            .load_unit(name.to_string())
            .await
            .map_err(|e| format!("LoadUnit {name}: {e}"))?;
        // Held until judged, so that systemd cannot unload it in between
        // (see the module documentation).
        let unit = UnitProxy::builder(&self.conn)
            .path(path.clone())
            .cache_properties(CacheProperties::No)
            .build()
            .await
            .map_err(|e| format!("{name}: {e}"))?;
        unit.reference()
            .await
            .map_err(|e| format!("{name} Ref: {e}"))?;
        let step = self.start_held(name, file, &path, content).await;
        // Best effort: the reference also ends with this connection.
        let _ = unit.unref().await;
        step
    }

    async fn start_held(
        &self,
        name: &str,
        file: FileChange,
        path: &OwnedObjectPath,
        content: &str,
    ) -> Result<StateStep, String> {
        let before = self.observe(name, path).await?;
        match before.load_state.as_str() {
            "loaded" => {}
            "not-found" => {
                return Err(format!(
                    "systemd does not find {name}: is {} in its unit search path?",
                    self.dir.display()
                ))
            }
            "masked" => return Err(format!("{name} is masked: it cannot be started")),
            other => {
                return Err(format!(
                    "systemd cannot load {name} ({other}): see journalctl -b -u {name} \
                     or systemd-analyze verify"
                ))
            }
        }
        let changed = file != FileChange::Unchanged;
        let restart = changed && !before.is_down() && restarts_on_change(name);
        if !changed && before.is_active() {
            return Ok(StateStep::AsDeclared);
        }
        let digest = oneshot_runs::digest(content);
        if let Some(runs) = &self.runs {
            if !changed && before.active_state == "inactive" && before.oneshot_without_remain() {
                match runs.ran_with(name, &digest) {
                    Ok(Some(at)) => return Ok(StateStep::AlreadyRan(at)),
                    Ok(None) => {}
                    Err(e) => tracing::warn!(
                        unit = %name,
                        "{name}: the record of oneshot runs cannot be read ({e}); running it"
                    ),
                }
            }
        }
        let kind = if restart {
            JobKind::Restart
        } else {
            JobKind::Start
        };
        let job_result = self.job(kind, name).await?;
        let after = self.observe(name, path).await?;
        let step = judge_start(name, &job_result, &after, restart);
        if let Some(runs) = &self.runs {
            let recorded = match &step {
                StateStep::Satisfied => runs.remember(name, &digest),
                StateStep::Failed(_) => runs.forget(name),
                _ => Ok(()),
            };
            if let Err(e) = recorded {
                tracing::warn!(unit = %name, "{name}: cannot record its run ({e}): it runs again at the next apply");
            }
        }
        Ok(step)
    }

    /// Stops the unit if it is running or on its way; whether it did.
    async fn stop_if_running(&self, name: &str) -> Result<bool, String> {
        let path = match self.manager.get_unit(name.to_string()).await {
            Ok(path) => path,
            // Not loaded: nothing of it runs.
            Err(e) if is_no_such_unit(&e) => return Ok(false),
            Err(e) => return Err(format!("GetUnit {name}: {e}")),
        };
        let before = self.observe(name, &path).await?;
        if before.is_down() {
            return Ok(false);
        }
        let job_result = self.job(JobKind::Stop, name).await?;
        let after = self.observe(name, &path).await?;
        if !after.is_down() {
            return Err(format!(
                "{name} still {} ({}) after its stop job ended {job_result}; \
                 see journalctl -u {name}",
                after.active_state, after.sub_state
            ));
        }
        Ok(true)
    }

    /// Runs one job and waits for systemd to finish it; the job's result
    /// (`done`, `failed`, `dependency`, `timeout`, `canceled`, `skipped`).
    async fn job(&self, kind: JobKind, name: &str) -> Result<String, String> {
        let method = kind.method();
        // The subscription is the connection's; the stream is opened before
        // the call so the job's JobRemoved cannot go by unseen.
        let mut removed = self
            .manager
            .receive_job_removed()
            .await
            .map_err(|e| format!("systemd JobRemoved: {e}"))?;
        let (unit, mode) = (name.to_string(), "replace".to_string());
        let job = match kind {
            JobKind::Start => self.manager.start_unit(unit, mode).await,
            JobKind::Restart => self.manager.restart_unit(unit, mode).await,
            JobKind::Stop => self.manager.stop_unit(unit, mode).await,
        }
        .map_err(|e| format!("{method} {name}: {e}"))?;
        let wait = async {
            while let Some(signal) = removed.next().await {
                let Ok(args) = signal.args() else { continue };
                if args.job.as_str() == job.as_str() {
                    return Ok(args.result.to_string());
                }
            }
            Err(format!(
                "lost systemd's signals while waiting for {method} {name}"
            ))
        };
        tokio::time::timeout(self.job_timeout, wait)
            .await
            .map_err(|_| {
                format!(
                    "{method} {name}: systemd did not finish the job within {:?} \
                     (it may still be running: systemctl list-jobs)",
                    self.job_timeout
                )
            })?
    }

    /// Reads the properties the judgement needs, uncached: each read is
    /// systemd's answer now.
    async fn observe(&self, name: &str, path: &OwnedObjectPath) -> Result<Observed, String> {
        let props = PropertiesProxy::builder(&self.conn)
            .destination(SYSTEMD)
            .path(path.clone())
            .cache_properties(CacheProperties::No)
            .build()
            .await
            .map_err(|e| format!("{name}: {e}"))?;
        let get = |iface: &'static str, prop: &'static str| {
            let props = &props;
            async move {
                let iface = InterfaceName::try_from(iface).map_err(|e| e.to_string())?;
                props
                    .get(iface, prop)
                    .await
                    .map_err(|e| format!("{name} {prop}: {e}"))
            }
        };
        let mut o = Observed {
            load_state: string(get(UNIT_INTERFACE, "LoadState").await?, name)?,
            active_state: string(get(UNIT_INTERFACE, "ActiveState").await?, name)?,
            sub_state: string(get(UNIT_INTERFACE, "SubState").await?, name)?,
            condition_result: typed(get(UNIT_INTERFACE, "ConditionResult").await?, name)?,
            result: None,
            service: None,
        };
        if let Some(iface) = type_interface(name) {
            o.result = Some(string(get(iface, "Result").await?, name)?);
        }
        if suffix(name) == "service" {
            o.service = Some(ServiceState {
                kind: string(get(SERVICE_INTERFACE, "Type").await?, name)?,
                remain_after_exit: typed(get(SERVICE_INTERFACE, "RemainAfterExit").await?, name)?,
                exec_main_status: typed(get(SERVICE_INTERFACE, "ExecMainStatus").await?, name)?,
            });
        }
        Ok(o)
    }
}

fn string(v: OwnedVariant, name: &str) -> Result<String, String> {
    typed(v, name)
}

fn typed<T>(v: OwnedVariant, name: &str) -> Result<T, String>
where
    T: TryFrom<OwnedVariant>,
    T::Error: fmt::Display,
{
    T::try_from(v).map_err(|e| format!("{name}: unexpected property type: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(kind: &str, remain: bool, status: i32) -> Option<ServiceState> {
        Some(ServiceState {
            kind: kind.into(),
            remain_after_exit: remain,
            exec_main_status: status,
        })
    }

    fn observed(active: &str, sub: &str, result: &str, svc: Option<ServiceState>) -> Observed {
        Observed {
            load_state: "loaded".into(),
            active_state: active.into(),
            sub_state: sub.into(),
            condition_result: true,
            result: Some(result.into()),
            service: svc,
        }
    }

    #[test]
    fn file_change_compares_bytes() {
        assert_eq!(file_change(None, b"x"), FileChange::Created);
        assert_eq!(file_change(Some(b"x"), b"x"), FileChange::Unchanged);
        assert_eq!(file_change(Some(b"x"), b"x\n"), FileChange::Updated);
        assert_eq!(file_change(Some(b""), b""), FileChange::Unchanged);
    }

    #[test]
    fn unit_files_are_written_once_and_replaced_on_change() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        assert_eq!(
            write_unit_file(d, "a.service", b"[Service]\n"),
            Ok(FileChange::Created)
        );
        let path = d.join("a.service");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o7777;
        assert_eq!(mode, 0o644);
        assert_eq!(
            write_unit_file(d, "a.service", b"[Service]\n"),
            Ok(FileChange::Unchanged)
        );
        assert_eq!(
            write_unit_file(d, "a.service", b"[Service]\nType=oneshot\n"),
            Ok(FileChange::Updated)
        );
        assert_eq!(
            std::fs::read(&path).expect("read"),
            b"[Service]\nType=oneshot\n"
        );
        // A widened mode is put back without counting as a change.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        assert_eq!(
            write_unit_file(d, "a.service", b"[Service]\nType=oneshot\n"),
            Ok(FileChange::Unchanged)
        );
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o7777;
        assert_eq!(mode, 0o644);
        // No temporary file is left next to it.
        let names: Vec<_> = std::fs::read_dir(d)
            .expect("readdir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.service")]);
    }

    #[test]
    fn deleting_reports_whether_a_file_was_there() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_unit_file(dir.path(), "b.timer", b"[Timer]\n").expect("write");
        assert_eq!(delete_unit_file(dir.path(), "b.timer"), Ok(true));
        assert!(!dir.path().join("b.timer").exists());
        assert_eq!(delete_unit_file(dir.path(), "b.timer"), Ok(false));
    }

    #[test]
    fn names_that_escape_the_directory_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        for bad in [
            "",
            ".",
            "..",
            "../x.service",
            "a/b.service",
            "a\nb.service",
            "a\0.service",
        ] {
            let err = write_unit_file(dir.path(), bad, b"x").expect_err(bad);
            assert!(
                err.contains("unit name") || err.contains("not a unit name"),
                "{err}"
            );
            assert!(delete_unit_file(dir.path(), bad).is_err(), "{bad:?}");
        }
        assert!(check_name("getty@tty1.service").is_ok());
        assert!(check_name("a\\x2db.mount").is_ok());
    }

    #[test]
    fn restart_only_for_types_where_it_is_harmless() {
        for name in ["a.service", "a.socket", "a.timer", "a.path"] {
            assert!(restarts_on_change(name), "{name}");
        }
        for name in ["a.mount", "a.automount", "a.swap", "a.target", "a.slice"] {
            assert!(!restarts_on_change(name), "{name}");
        }
        assert_eq!(type_interface("x.target"), None);
        assert_eq!(type_interface("x.slice"), None);
        assert_eq!(type_interface("x.service"), Some(SERVICE_INTERFACE));
    }

    #[test]
    fn an_active_unit_is_started_or_restarted() {
        let o = observed("active", "running", "success", service("simple", false, 0));
        assert_eq!(
            judge_start("a.service", "done", &o, false),
            StateStep::Started
        );
        assert_eq!(
            judge_start("a.service", "done", &o, true),
            StateStep::Restarted
        );
        let timer = observed("active", "waiting", "success", None);
        assert_eq!(
            judge_start("a.timer", "done", &timer, false),
            StateStep::Started
        );
    }

    #[test]
    fn a_oneshot_that_exited_zero_is_satisfied() {
        let o = observed("inactive", "dead", "success", service("oneshot", false, 0));
        assert_eq!(
            judge_start("a.service", "done", &o, false),
            StateStep::Satisfied
        );
        // With RemainAfterExit it would be active; inactive means it is not.
        let remain = observed("inactive", "dead", "success", service("oneshot", true, 0));
        assert!(matches!(
            judge_start("a.service", "done", &remain, false),
            StateStep::Failed(_)
        ));
    }

    #[test]
    fn a_simple_service_that_exits_at_once_is_not_started() {
        let o = observed("inactive", "dead", "success", service("simple", false, 0));
        let StateStep::Failed(why) = judge_start("a.service", "done", &o, false) else {
            panic!("a service that is not running is not started");
        };
        assert!(why.contains("inactive (dead)"), "{why}");
        assert!(why.contains("Type=oneshot"), "{why}");
    }

    #[test]
    fn a_failure_names_the_result_and_exit_status() {
        let o = observed(
            "failed",
            "failed",
            "exit-code",
            service("oneshot", false, 1),
        );
        let StateStep::Failed(why) = judge_start("b.service", "failed", &o, false) else {
            panic!("exit 1 is a failure");
        };
        assert!(
            why.starts_with("failed: exit-code (exit status 1)"),
            "{why}"
        );
        assert!(why.contains("journalctl -u b.service"), "{why}");

        let killed = observed("failed", "failed", "signal", service("simple", false, 9));
        let StateStep::Failed(why) = judge_start("b.service", "failed", &killed, false) else {
            panic!("a signal is a failure");
        };
        assert!(why.starts_with("failed: signal (signal 9)"), "{why}");

        let dep = observed("inactive", "dead", "success", service("simple", false, 0));
        let StateStep::Failed(why) = judge_start("b.service", "dependency", &dep, false) else {
            panic!("a failed dependency is a failure");
        };
        assert!(why.contains("depends on"), "{why}");
    }

    #[test]
    fn an_unmet_condition_is_not_a_failure() {
        let mut o = observed("inactive", "dead", "success", service("simple", false, 0));
        o.condition_result = false;
        assert_eq!(
            judge_start("a.service", "done", &o, false),
            StateStep::ConditionUnmet
        );
    }

    fn steps(file: FileChange, state: StateStep) -> Steps {
        Steps {
            file,
            enablement: Ok(None),
            state,
        }
    }

    #[test]
    fn the_action_is_the_most_telling_step() {
        let r = summarize("web", &steps(FileChange::Unchanged, StateStep::AsDeclared));
        assert_eq!(
            (r.action.as_str(), r.reason.as_deref(), r.ok),
            ("unchanged", None, true)
        );

        let r = summarize("web", &steps(FileChange::Created, StateStep::AsDeclared));
        assert_eq!(
            (r.action.as_str(), r.reason.as_deref()),
            ("created", Some("file created"))
        );

        let mut s = steps(FileChange::Created, StateStep::Started);
        s.enablement = Ok(Some("enabled"));
        let r = summarize("web", &s);
        assert_eq!(
            (r.action.as_str(), r.reason.as_deref(), r.ok),
            ("started", Some("file created; started; enabled"), true)
        );

        let r = summarize("web", &steps(FileChange::Updated, StateStep::Restarted));
        assert_eq!(
            (r.action.as_str(), r.reason.as_deref()),
            ("updated", Some("file updated; restarted"))
        );

        let r = summarize("web", &steps(FileChange::Unchanged, StateStep::Stopped));
        assert_eq!(
            (r.action.as_str(), r.reason.as_deref()),
            ("stopped", Some("stopped"))
        );

        let r = summarize("job", &steps(FileChange::Unchanged, StateStep::Satisfied));
        assert_eq!(
            (r.action.as_str(), r.reason.as_deref(), r.ok),
            ("satisfied", Some("ran and exited successfully"), true)
        );

        let r = summarize(
            "job",
            &steps(FileChange::Created, StateStep::ConditionUnmet),
        );
        assert_eq!(r.action, "created");
        assert!(r.ok);

        let mut s = steps(FileChange::Unchanged, StateStep::AsDeclared);
        s.enablement = Ok(Some("disabled"));
        let r = summarize("web", &s);
        assert_eq!(
            (r.action.as_str(), r.reason.as_deref()),
            ("unchanged", Some("disabled"))
        );
    }

    #[test]
    fn any_failure_fails_the_line() {
        let r = summarize(
            "job",
            &steps(
                FileChange::Created,
                StateStep::Failed("failed: exit-code (exit status 1)".into()),
            ),
        );
        assert_eq!(
            (r.action.as_str(), r.reason.as_deref(), r.ok),
            (
                "failed",
                Some("file created; failed: exit-code (exit status 1)"),
                false
            )
        );

        let mut s = steps(FileChange::Unchanged, StateStep::Started);
        s.enablement = Err("cannot enable a.service: systemd says it is static".into());
        let r = summarize("a", &s);
        assert_eq!(r.action, "failed");
        assert!(!r.ok);
        assert_eq!(
            r.reason.as_deref(),
            Some("started; cannot enable a.service: systemd says it is static")
        );
    }

    #[test]
    fn file_change_serializes_as_its_report_word() {
        assert_eq!(
            serde_json::to_string(&FileChange::Unchanged).expect("json"),
            "\"unchanged\""
        );
        assert_eq!(FileChange::Created.to_string(), "created");
    }
}
