//! The D-Bus side: jobs on units (awaited through `JobRemoved`), enabling,
//! reloading, and reading a unit's state.

use super::file::suffix;
use super::judge::{judge_start, Observed, ServiceState, StateStep};
use super::*;
use crate::systemd::jobs::JobEnds;

/// The D-Bus interface holding the type-specific properties (`Result`) of a
/// unit type; targets and slices have no `Result`.
pub(super) fn type_interface(name: &str) -> Option<&'static str> {
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

pub(super) fn is_no_such_unit(e: &zbus::Error) -> bool {
    matches!(e, zbus::Error::MethodError(name, ..) if name.as_str() == NO_SUCH_UNIT)
}

/// Which job to run on a unit.
#[derive(Debug, Clone, Copy)]
pub(super) enum JobKind {
    Start,
    Restart,
    Stop,
}

impl JobKind {
    pub(super) fn method(self) -> &'static str {
        match self {
            JobKind::Start => "StartUnit",
            JobKind::Restart => "RestartUnit",
            JobKind::Stop => "StopUnit",
        }
    }
}

impl UnitFiles {
    /// `Manager.Reload`, which answers once the reload is complete.
    pub(super) async fn reload(&self) -> Result<(), String> {
        self.manager
            .reload()
            .await
            .map_err(|e| format!("systemd Reload: {e}"))
    }

    /// Makes the unit's enablement `want`; what changed.
    pub(super) async fn set_enabled(
        &self,
        name: &str,
        want: bool,
    ) -> Result<Option<&'static str>, String> {
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

    pub(super) async fn unit_file_state(&self, name: &str) -> Result<String, String> {
        self.manager
            .get_unit_file_state(name.to_string())
            .await
            .map_err(|e| format!("GetUnitFileState {name}: {e}"))
    }

    /// Brings the unit to `want`, knowing what happened to its file.
    pub(super) async fn set_state(
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

    pub(super) async fn start(
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

    pub(super) async fn start_held(
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
    pub(super) async fn stop_if_running(&self, name: &str) -> Result<bool, String> {
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
    pub(super) async fn job(&self, kind: JobKind, name: &str) -> Result<String, String> {
        let method = kind.method();
        // The subscription is the connection's; the stream is opened before
        // the call so the job's JobRemoved cannot go by unseen.
        let mut ends = JobEnds::listen(&self.manager).await?;
        let (unit, mode) = (name.to_string(), "replace".to_string());
        let job = match kind {
            JobKind::Start => ends.queue(self.manager.start_unit(unit, mode)).await,
            JobKind::Restart => ends.queue(self.manager.restart_unit(unit, mode)).await,
            JobKind::Stop => ends.queue(self.manager.stop_unit(unit, mode)).await,
        }
        .map_err(|e| format!("{method} {name}: {e}"))?;
        let wait = async {
            ends.result(&job)
                .await
                .ok_or_else(|| format!("lost systemd's signals while waiting for {method} {name}"))
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
    pub(super) async fn observe(
        &self,
        name: &str,
        path: &OwnedObjectPath,
    ) -> Result<Observed, String> {
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

pub(super) fn string(v: OwnedVariant, name: &str) -> Result<String, String> {
    typed(v, name)
}

pub(super) fn typed<T>(v: OwnedVariant, name: &str) -> Result<T, String>
where
    T: TryFrom<OwnedVariant>,
    T::Error: fmt::Display,
{
    T::try_from(v).map_err(|e| format!("{name}: unexpected property type: {e}"))
}
