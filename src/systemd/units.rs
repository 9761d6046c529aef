//! Transient units that hold a step's container processes.
//!
//! Each fire gets a unit of its own so that `systemctl status` shows the
//! step's processes and `systemctl stop` ends the run. The unit is made
//! before the container is created, and its cgroup becomes the container's
//! cgroup parent.
//!
//! With Docker's cgroupfs driver that unit is a scope of ours. With the
//! systemd driver Docker makes its own `docker-<id>.scope` for the container
//! inside the slice named as cgroup parent, so the step gets a slice of its
//! own, and stopping that slice stops Docker's scope. Docker's scope keeps
//! systemd's default stop timeout (90 s) and cannot be changed once made, so
//! a watch on the slice kills what it still holds after the same grace our
//! scope has.
//!
//! Each unit outlives its container until the fire ends it, so that the
//! fire's figures are read from its cgroup ([`crate::accounting`]): a scope
//! keeps its keeper process until then, and a step's slice is started new
//! for each fire when nothing holds it ([`crate::systemd::fresh_slice`]).
//!
//! With both drivers a stop of the unit is also watched for
//! (`stop_watch.rs`: never missed, whenever it comes) and handed to the
//! fire ([`StepUnit::stop_requested`]): before the container starts, the
//! step does not run; once it runs, the fire stops it through the runtime
//! itself (SIGTERM, SIGKILL after 10 s, as `docker stop`) and reports the
//! run `stopped`: the run ends within the grace even when the container's
//! PID 1 ignores SIGTERM, and never passes for a success.

use chrono::{DateTime, Utc};

use crate::systemd::fresh_slice::{self, Slices};
use crate::systemd::jobs::JobEnds;
use crate::systemd::orphans::{stop_orphaned_scopes, KEEPER};
use crate::systemd::stop_watch::{self, StopWatch};

/// A transient unit made for one fire.
#[derive(Debug)]
pub struct StepUnit {
    /// The unit to inspect or stop: `mesh-host-step-<id>-<time>.scope`
    /// (cgroupfs driver) or the step's slice (systemd driver).
    pub name: String,
    /// What the container's cgroup parent must be for its processes to land
    /// in the unit: a cgroup path (cgroupfs driver) or a slice (systemd driver).
    pub cgroup_parent: String,
    /// The unit's cgroup (`ControlGroup`), whose counters are the fire's
    /// figures; `None` when it is not known.
    pub control_group: Option<String>,
    /// A process in that group that lives until the run ends (a scope's
    /// keeper): the fire's figures are kept with it past the container's
    /// end (`accounting::Meter`).
    pub holder_pid: Option<u32>,
    /// Whatever the implementation keeps for the fire until the run ends:
    /// a process holding a scope, a hold on the step's slice.
    pub keeper: Option<Box<dyn std::any::Any + Send>>,
    /// Turns true when someone stops the unit (`systemctl stop`): the fire
    /// then stops its container itself (SIGTERM, SIGKILL after its grace)
    /// and reports the run stopped, whatever the container's PID 1 does
    /// with SIGTERM. `None` where stops are not watched.
    pub stop_requested: Option<tokio::sync::watch::Receiver<bool>>,
    /// The task watching for that stop, ended with the run.
    pub stop_watch: Option<Box<dyn std::any::Any + Send>>,
}

impl StepUnit {
    /// The fire is about to start its container: from now on the unit's
    /// end (a scope emptied by a run that ended at once) is the run's own,
    /// and only a stop job is a stop.
    pub fn starting(&self) {
        if let Some(watch) = self
            .stop_watch
            .as_ref()
            .and_then(|w| w.downcast_ref::<StopWatch>())
        {
            watch.running();
        }
    }

    /// What to ask systemd of this unit ([`StepUnits::stopped_since_begin`]).
    pub fn look(&self) -> UnitLook {
        UnitLook {
            name: self.name.clone(),
            baseline: self
                .stop_watch
                .as_ref()
                .and_then(|w| w.downcast_ref::<StopWatch>())
                .and_then(StopWatch::baseline),
        }
    }
}

/// A fire's unit as systemd is asked about it: its name, and its
/// `InactiveEnterTimestampMonotonic` when the fire made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitLook {
    /// The unit's name.
    pub name: String,
    /// The baseline, when one was read.
    pub baseline: Option<u64>,
}

/// Makes the transient unit of each fire.
#[async_trait::async_trait]
pub trait StepUnits: Send + Sync + std::fmt::Debug {
    /// Make the unit for a fire of `step`; `None` when this host places
    /// steps in no unit.
    async fn begin(
        &self,
        step: &str,
        module: Option<&str>,
        fire_time: DateTime<Utc>,
    ) -> Result<Option<StepUnit>, String>;

    /// The cgroup parent that the unit of a fire of `step` at `fire_time`
    /// will give its container, worked out without making the unit: what a
    /// container made ready ahead of its fire is created with. The fire
    /// compares it with its unit's own and makes the container again on any
    /// difference, so a wrong guess costs time, never placement.
    async fn cgroup_parent_for(
        &self,
        _step: &str,
        _fire_time: DateTime<Utc>,
    ) -> Result<Option<String>, String> {
        Ok(None)
    }

    /// The container is running inside the unit.
    async fn started(&self, unit: &mut Option<StepUnit>);

    /// The run is over (or never started).
    async fn end(&self, unit: Option<StepUnit>);

    /// Whether `unit` was stopped (or ended) since it was made for its
    /// fire, asked of systemd itself rather than of a signal: what the fire
    /// looks at right after its container's start. `false` where units are
    /// not watched.
    async fn stopped_since_begin(&self, _unit: &UnitLook) -> bool {
        false
    }

    /// Stop every step unit that holds nothing but a keeper process whose
    /// owner is gone (see [`crate::systemd::orphans`]); the names stopped.
    async fn stop_orphans(&self) -> Vec<String> {
        Vec::new()
    }
}

/// No transient units: the step container runs where the runtime puts it.
/// For nodes without systemd, and unit tests.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoUnits;

#[async_trait::async_trait]
impl StepUnits for NoUnits {
    async fn begin(
        &self,
        _step: &str,
        _module: Option<&str>,
        _fire_time: DateTime<Utc>,
    ) -> Result<Option<StepUnit>, String> {
        Ok(None)
    }

    async fn started(&self, _unit: &mut Option<StepUnit>) {}

    async fn end(&self, _unit: Option<StepUnit>) {}
}

/// The step units for this host: transient units through systemd when its
/// bus answers, none otherwise (said once in the log).
pub async fn for_runtime(
    runtime: &dyn crate::runtime::ContainerRuntime,
) -> std::sync::Arc<dyn StepUnits> {
    let driver = match runtime.cgroup_driver().await {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(
                "cannot read the runtime's cgroup driver ({e}); steps run without a transient unit"
            );
            return std::sync::Arc::new(NoUnits);
        }
    };
    match SystemdUnits::connect(driver).await {
        Ok(units) => std::sync::Arc::new(units),
        Err(e) => {
            tracing::warn!("{e}; steps run without a transient unit");
            std::sync::Arc::new(NoUnits)
        }
    }
}

/// The slice every step unit is placed in.
pub const STEPS_SLICE: &str = "mesh-host.slice";

/// Grace between SIGTERM and SIGKILL when a step's unit is stopped
/// (Docker's default stop timeout).
const STOP_GRACE_USEC: u64 = 10_000_000;

/// How long after a stop of a step's slice whatever it still holds is
/// killed: the same grace and 5 s more, so that the runtime's own stop of
/// the container (its SIGKILL at that grace) lands first. On Podman the
/// slice also holds `conmon`, which records the container's exit: killed
/// beside the container, the run's exit status was lost.
const SLICE_KILL_AFTER: std::time::Duration =
    std::time::Duration::from_micros(STOP_GRACE_USEC + 5_000_000);

/// systemd's answer when a unit of that name is already loaded.
const UNIT_EXISTS: &str = "org.freedesktop.systemd1.UnitExists";

/// How long systemd may take to start a transient unit.
const START_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// Escape a string as `systemd-escape` does for a unit name component:
/// ASCII letters, digits, `:`, `_` and `.` (not leading) are kept, `/`
/// becomes `-`, everything else `\xNN`.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, b) in s.bytes().enumerate() {
        match b {
            b'/' => out.push('-'),
            b'.' if i == 0 => out.push_str("\\x2e"),
            b if b.is_ascii_alphanumeric() || matches!(b, b':' | b'_' | b'.') => {
                out.push(b as char)
            }
            b => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

/// The scope of one fire (cgroupfs driver):
/// `mesh-host-step-<escaped id>-<UTC time>.scope`.
pub fn scope_name(step: &str, fire_time: DateTime<Utc>) -> String {
    format!(
        "mesh-host-step-{}-{}.scope",
        escape(step),
        fire_time.format("%Y%m%dT%H%M%SZ")
    )
}

/// The slice of a step (systemd driver), directly under `mesh-host.slice`:
/// a dash in a slice name is a level of hierarchy, so the id is escaped.
pub fn step_slice_name(step: &str) -> String {
    format!("mesh-host-{}.slice", escape(&format!("step-{step}")))
}

/// The cgroup systemd gives a slice: `a-b.slice` is `/a.slice/a-b.slice`.
fn slice_cgroup(slice: &str) -> String {
    let stem = slice.strip_suffix(".slice").unwrap_or(slice);
    let mut path = String::new();
    for (i, _) in stem.match_indices('-') {
        path.push_str(&format!("/{}.slice", &stem[..i]));
    }
    path.push_str(&format!("/{stem}.slice"));
    path
}

/// Why a transient unit was not started.
#[derive(Debug)]
enum StartError {
    /// A unit of that name (given) is already loaded.
    Exists(String),
    /// Anything else, said in full.
    Failed(String),
}

impl From<String> for StartError {
    fn from(e: String) -> Self {
        StartError::Failed(e)
    }
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Exists(name) => write!(f, "a unit {name} already exists"),
            StartError::Failed(e) => f.write_str(e),
        }
    }
}

/// Transient units made through systemd's D-Bus API.
#[derive(Debug, Clone)]
pub struct SystemdUnits {
    conn: zbus::Connection,
    driver: crate::runtime::CgroupDriver,
    /// The step slices this process has units in (systemd driver).
    slices: Slices,
    /// The node's cgroups are one v2 tree: see [`accounting`].
    unified: bool,
}

impl SystemdUnits {
    /// Connect to the system bus; `driver` is the container runtime's cgroup
    /// driver, which decides whether a fire gets a scope or a slice.
    pub async fn connect(driver: crate::runtime::CgroupDriver) -> Result<Self, String> {
        let conn = zbus::Connection::system()
            .await
            .map_err(|e| format!("cannot reach systemd on the system bus: {e}"))?;
        let units = SystemdUnits {
            conn,
            driver,
            slices: Slices::default(),
            unified: unified_hierarchy(),
        };
        // Once per connection: a second Subscribe is refused (AlreadySubscribed).
        units
            .manager()
            .await?
            .subscribe()
            .await
            .map_err(|e| format!("systemd Subscribe: {e}"))?;
        Ok(units)
    }

    async fn manager(&self) -> Result<zbus_systemd::systemd1::ManagerProxy<'static>, String> {
        zbus_systemd::systemd1::ManagerProxy::new(&self.conn)
            .await
            .map_err(|e| format!("systemd manager: {e}"))
    }

    /// Start a transient unit and wait until its start job is done.
    async fn start_transient(
        &self,
        name: &str,
        props: Vec<(String, zbus::OwnedVariant)>,
    ) -> Result<(), StartError> {
        let manager = self.manager().await?;
        // Subscribed at connect; listen, then start: no JobRemoved is missed.
        let mut ends = JobEnds::listen(&manager).await?;
        let job = match ends
            .queue(manager.start_transient_unit(
                name.to_string(),
                "fail".to_string(),
                props,
                Vec::new(),
            ))
            .await
        {
            Ok(job) => job,
            Err(zbus::Error::MethodError(error, _, _)) if error.as_str() == UNIT_EXISTS => {
                return Err(StartError::Exists(name.to_string()))
            }
            Err(e) => {
                return Err(StartError::Failed(format!(
                    "StartTransientUnit {name}: {e}"
                )))
            }
        };
        let wait = async {
            match ends.result(&job).await.as_deref() {
                Some("done") => Ok(()),
                Some(result) => Err(format!(
                    "starting {name} ended with {result} (see journalctl -u {name})"
                )),
                None => Err(format!("lost systemd's signals while starting {name}")),
            }
        };
        tokio::time::timeout(START_TIMEOUT, wait)
            .await
            .map_err(|_| format!("systemd did not start {name} in {START_TIMEOUT:?}"))?
            .map_err(StartError::Failed)
    }

    /// The step's slice, started for this fire or, when an earlier fire's is
    /// still loaded (slices outlive what ran in them), reused with its
    /// description brought up to date.
    async fn ensure_slice(&self, name: &str, description: String) -> Result<(), String> {
        let mut props = vec![("Description".to_string(), variant(description.clone())?)];
        props.extend(accounting(self.unified)?);
        match self.start_transient(name, props).await {
            Ok(()) => Ok(()),
            Err(StartError::Exists(_)) => {
                let props = vec![("Description".to_string(), variant(description)?)];
                // Only a label: the slice serves as it is whatever this says.
                if let Err(e) = self
                    .manager()
                    .await?
                    .set_unit_properties(name.to_string(), true, props)
                    .await
                {
                    tracing::warn!("cannot update the description of {name}: {e}");
                }
                Ok(())
            }
            Err(StartError::Failed(e)) => Err(e),
        }
    }

    /// The cgroup of [`STEPS_SLICE`]: as systemd reports it while the slice
    /// is active, else as systemd will make it (each dash a level, below
    /// systemd's own root).
    async fn steps_slice_cgroup(&self) -> String {
        let reported = async {
            let path = self
                .manager()
                .await?
                .get_unit(STEPS_SLICE.to_string())
                .await
                .map_err(|e| e.to_string())?;
            zbus_systemd::systemd1::SliceProxy::builder(&self.conn)
                .path(path)
                .build()
                .await
                .map_err(|e| e.to_string())?
                .control_group()
                .await
                .map_err(|e| e.to_string())
        };
        if let Ok(cgroup) = reported.await {
            if !cgroup.is_empty() {
                return cgroup;
            }
        }
        // Not active yet: below systemd's own root (not `/` when systemd
        // runs in a cgroup of a container or a node of its own).
        let root = match self.manager().await {
            Ok(m) => m.control_group().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        format!(
            "{}{}",
            root.trim_end_matches('/'),
            slice_cgroup(STEPS_SLICE)
        )
    }

    async fn control_group(&self, name: &str) -> Result<String, String> {
        let manager = self.manager().await?;
        let path = manager
            .get_unit(name.to_string())
            .await
            .map_err(|e| format!("GetUnit {name}: {e}"))?;
        let scope = zbus_systemd::systemd1::ScopeProxy::builder(&self.conn)
            .path(path)
            .build()
            .await
            .map_err(|e| format!("{name}: {e}"))?;
        scope
            .control_group()
            .await
            .map_err(|e| format!("{name} ControlGroup: {e}"))
    }
}

fn variant<'a, T: Into<zbus::Variant<'a>>>(value: T) -> Result<zbus::OwnedVariant, String> {
    zbus::OwnedVariant::try_from(value.into()).map_err(|e| format!("D-Bus value: {e}"))
}

/// The accounting asked of systemd for a fire's unit.
///
/// On cgroup v2 (`unified`), accounting on: systemd keeps the unit's
/// cgroup in the CPU, memory and I/O controllers for its whole life,
/// whatever ran in it (a fire's figures are read there once its container
/// has gone).
///
/// On a v1 or hybrid layout nothing is asked. There, systemd turning a v1
/// controller on for one unit turns it on up to the root slice, and moves
/// every process of the tree that is in no unit of its own (each container
/// Docker's cgroupfs driver places itself) to that controller's root, then
/// removes their emptied groups: one fire's `IOAccounting` took every
/// running service of the node out of its `blkio` group, and a `docker
/// exec` into them (a health check) then failed. The runtime makes the
/// unit's group in each v1 hierarchy anyway, as the container's cgroup
/// parent, and the kernel's counters there (and in the unified tree of a
/// hybrid layout) are the fire's figures (`accounting::cgroup`); what
/// systemd realizes for a unit by its own defaults it keeps as before.
fn accounting(unified: bool) -> Result<Vec<(String, zbus::OwnedVariant)>, String> {
    if !unified {
        return Ok(Vec::new());
    }
    ["CPUAccounting", "MemoryAccounting", "IOAccounting"]
        .iter()
        .map(|p| Ok((p.to_string(), variant(true)?)))
        .collect()
}

/// The node's cgroup file systems are one unified (v2) tree.
fn unified_hierarchy() -> bool {
    std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").is_file()
}

fn description(step: &str, module: Option<&str>) -> String {
    match module {
        Some(m) => format!("mesh-host step {step} of module {m}"),
        None => format!("mesh-host step {step}"),
    }
}

#[async_trait::async_trait]
impl StepUnits for SystemdUnits {
    async fn begin(
        &self,
        step: &str,
        module: Option<&str>,
        fire_time: DateTime<Utc>,
    ) -> Result<Option<StepUnit>, String> {
        match self.driver {
            crate::runtime::CgroupDriver::Cgroupfs => {
                // A scope needs a process at birth: a keeper holds it until
                // the fire ends, past its container's end (its figures).
                // The keeper reads a pipe whose write end only this process
                // holds: should this process die before it drops the
                // keeper (SIGKILL), the kernel closes that end, the keeper
                // reads end-of-file and exits, and the scope, holding
                // nothing, ends.
                let mut keeper = tokio::process::Command::new(KEEPER[0]);
                keeper
                    .args(&KEEPER[1..])
                    .env_remove("NOTIFY_SOCKET")
                    .env_remove("WATCHDOG_PID")
                    .env_remove("WATCHDOG_USEC")
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::null())
                    .kill_on_drop(true);
                let child = keeper
                    .spawn()
                    .map_err(|e| format!("cannot start the scope's keeper process: {e}"))?;
                let pid = child
                    .id()
                    .ok_or_else(|| "the scope's keeper exited at once".to_string())?;
                let name = scope_name(step, fire_time);
                let (watch, stop_requested) = stop_watch::watch(&self.conn, &name, None).await?;
                let props = vec![
                    (
                        "Description".to_string(),
                        variant(description(step, module))?,
                    ),
                    ("Slice".to_string(), variant(STEPS_SLICE)?),
                    ("Delegate".to_string(), variant(true)?),
                    ("CollectMode".to_string(), variant("inactive-or-failed")?),
                    // `systemctl stop` ends the run like `docker stop`:
                    // SIGTERM, then SIGKILL after the same grace.
                    ("TimeoutStopUSec".to_string(), variant(STOP_GRACE_USEC)?),
                    ("PIDs".to_string(), variant(vec![pid])?),
                ]
                .into_iter()
                .chain(accounting(self.unified)?)
                .collect();
                self.start_transient(&name, props)
                    .await
                    .map_err(|e| e.to_string())?;
                watch.set_baseline(stop_watch::inactive_enter(&self.conn, &name).await);
                let cgroup = self.control_group(&name).await?;
                Ok(Some(StepUnit {
                    name,
                    control_group: Some(cgroup.clone()),
                    holder_pid: Some(pid),
                    cgroup_parent: cgroup,
                    keeper: Some(Box::new(child)),
                    stop_requested: Some(stop_requested),
                    stop_watch: Some(Box::new(watch)),
                }))
            }
            crate::runtime::CgroupDriver::Systemd => {
                // Docker makes its own scope per container inside the
                // slice named as cgroup parent; the slice is the step's.
                let name = step_slice_name(step);
                let (lease, alone) = self.slices.lease(&name);
                if alone {
                    // New for this fire, its peak is the fire's.
                    if let Err(e) = fresh_slice::stop_if_idle(&self.manager().await?, &name).await {
                        tracing::warn!("{e}; the fire runs in the slice as it is");
                    }
                }
                let (watch, stop_requested) =
                    stop_watch::watch(&self.conn, &name, Some(SLICE_KILL_AFTER)).await?;
                self.ensure_slice(&name, description(step, module)).await?;
                watch.set_baseline(stop_watch::inactive_enter(&self.conn, &name).await);
                let control_group = fresh_slice::control_group(&self.conn, &name)
                    .await
                    .map_err(|e| tracing::warn!("{e}: the fire's figures are not read"))
                    .ok();
                Ok(Some(StepUnit {
                    name: name.clone(),
                    control_group,
                    holder_pid: None,
                    cgroup_parent: name,
                    keeper: Some(Box::new(lease)),
                    stop_requested: Some(stop_requested),
                    stop_watch: Some(Box::new(watch)),
                }))
            }
        }
    }

    async fn cgroup_parent_for(
        &self,
        step: &str,
        fire_time: DateTime<Utc>,
    ) -> Result<Option<String>, String> {
        Ok(Some(match self.driver {
            crate::runtime::CgroupDriver::Cgroupfs => format!(
                "{}/{}",
                self.steps_slice_cgroup().await,
                scope_name(step, fire_time)
            ),
            crate::runtime::CgroupDriver::Systemd => step_slice_name(step),
        }))
    }

    async fn started(&self, _unit: &mut Option<StepUnit>) {
        // The keeper stays until the run ends: the scope outlives the
        // container until the fire has read its figures. Should this
        // process die, the keeper ends with it (see KEEPER).
    }

    async fn stopped_since_begin(&self, unit: &UnitLook) -> bool {
        stop_watch::unit_left(&self.conn, &unit.name, unit.baseline).await
    }

    async fn stop_orphans(&self) -> Vec<String> {
        match self.manager().await {
            Ok(manager) => stop_orphaned_scopes(&manager).await,
            Err(e) => {
                tracing::warn!("cannot look for orphaned step units: {e}");
                Vec::new()
            }
        }
    }

    async fn end(&self, unit: Option<StepUnit>) {
        if let Some(mut unit) = unit {
            // The watch first (aborted when dropped): the unit's end that
            // follows the keeper's is the fire's own, no stop.
            unit.stop_watch.take();
            drop_keeper(&mut unit).await;
        }
    }
}

/// Ends what the unit keeps: kills a keeper process, aborts a watch.
async fn drop_keeper(unit: &mut StepUnit) {
    if let Some(keeper) = unit.keeper.take() {
        if let Ok(mut child) = keeper.downcast::<tokio::process::Child>() {
            let _ = child.kill().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_systemd_escape() {
        assert_eq!(escape("garbage-collect"), "garbage\\x2dcollect");
        assert_eq!(escape("a_b.c"), "a_b.c");
        assert_eq!(escape(".hidden"), "\\x2ehidden");
        assert_eq!(escape("a b/c"), "a\\x20b-c");
    }

    #[test]
    fn unit_names() {
        let t = DateTime::parse_from_rfc3339("2026-06-01T03:00:00Z")
            .expect("time")
            .to_utc();
        assert_eq!(
            scope_name("garbage-collect", t),
            "mesh-host-step-garbage\\x2dcollect-20260601T030000Z.scope"
        );
        assert_eq!(step_slice_name("gc"), "mesh-host-step\\x2dgc.slice");
        assert_eq!(
            slice_cgroup("mesh-host.slice"),
            "/mesh.slice/mesh-host.slice"
        );
        assert_eq!(slice_cgroup("system.slice"), "/system.slice");
    }
}
