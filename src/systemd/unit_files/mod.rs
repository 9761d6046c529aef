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
use std::path::{Path, PathBuf};
use std::time::Duration;

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

const SYSTEMD: &str = "org.freedesktop.systemd1";
const UNIT_INTERFACE: &str = "org.freedesktop.systemd1.Unit";
const SERVICE_INTERFACE: &str = "org.freedesktop.systemd1.Service";
const NO_SUCH_UNIT: &str = "org.freedesktop.systemd1.NoSuchUnit";
const ALREADY_SUBSCRIBED: &str = "org.freedesktop.systemd1.AlreadySubscribed";

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
mod dbus;
mod file;
mod judge;

pub use file::FileChange;
pub use judge::UnitReport;

use file::{blocking, check_name, delete_unit_file, restarts_on_change, write_unit_file};
use judge::{summarize, StateStep, Steps};
#[cfg(test)]
mod tests;

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
}
