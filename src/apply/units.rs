//! The seam between apply and systemd unit files.
//!
//! `type: "unit"` resources are converged by a unit manager (the systemd
//! implementation writes unit files under `/etc/systemd/system`, reloads
//! systemd once, and sets each unit's state and enablement over D-Bus).
//! Apply calls it in three places: [`UnitManager::prepare`] when the first
//! unit resource is reached (every declared unit's file at once, so systemd
//! is reloaded once), [`UnitManager::converge`] at each unit's place in the
//! declaration, and [`UnitManager::remove`] after the declared resources, for
//! units whose files the host wrote and no longer declares (the
//! [`AppliedState::units`](super::AppliedState::units) list).
//!
//! Without a manager (no reachable systemd bus) every unit resource fails
//! with the reason given to [`Applier::without_units`](super::Applier::without_units).
//!
//! Both sides of the seam are here: the trait systemd implements, and the
//! apply's side of it (the unit resources of one apply, and their removal).

use std::collections::{BTreeMap, BTreeSet};

use super::report::{Action, ReportLine};
use super::Run;
use crate::declaration::{ResourceKind, Unit};

pub use crate::systemd::unit_files::{FileChange, UnitReport};

/// Converges systemd units. See the module documentation for when apply
/// calls each method.
#[async_trait::async_trait]
pub trait UnitManager: Send + Sync + std::fmt::Debug {
    /// Write every declared unit's file (atomically) and reload systemd once
    /// if any changed. `units` are `(resource id, unit)`; the answer says,
    /// per resource id, what happened to its file. `Err`: nothing could be
    /// written (every unit resource fails with it).
    async fn prepare(
        &self,
        units: &[(String, Unit)],
    ) -> Result<BTreeMap<String, FileChange>, String>;

    /// Bring unit `id` to its declared state and enablement.
    async fn converge(&self, id: &str, unit: &Unit, file: FileChange) -> UnitReport;

    /// Stop, disable and delete the files of units the host wrote and no
    /// longer declares; one report per unit name.
    async fn remove(&self, unit_names: &[String]) -> Vec<UnitReport>;

    /// Where `prepare` writes the file of unit `name` (a preview reads it).
    fn file_of(&self, name: &str) -> std::path::PathBuf;
}

#[async_trait::async_trait]
impl UnitManager for crate::systemd::unit_files::UnitFiles {
    async fn prepare(
        &self,
        units: &[(String, Unit)],
    ) -> Result<BTreeMap<String, FileChange>, String> {
        crate::systemd::unit_files::UnitFiles::prepare(self, units).await
    }

    async fn converge(&self, id: &str, unit: &Unit, file: FileChange) -> UnitReport {
        crate::systemd::unit_files::UnitFiles::converge(self, id, unit, file).await
    }

    async fn remove(&self, unit_names: &[String]) -> Vec<UnitReport> {
        crate::systemd::unit_files::UnitFiles::remove(self, unit_names).await
    }

    fn file_of(&self, name: &str) -> std::path::PathBuf {
        self.dir().join(name)
    }
}

/// Where the host writes unit files.
pub const UNIT_DIR: &str = "/etc/systemd/system";

/// Give `applier` the systemd unit manager, or say why unit resources
/// cannot be applied by this process (no system bus).
pub async fn with_systemd(applier: super::Applier, unit_dir: &std::path::Path) -> super::Applier {
    match crate::systemd::unit_files::UnitFiles::connect(unit_dir.to_path_buf()).await {
        Ok(units) => {
            // Oneshot runs are remembered in this applier's state directory.
            let units = units.with_oneshot_record(applier.store.clone());
            applier.with_units(std::sync::Arc::new(units))
        }
        Err(e) => applier.without_units(format!("no systemd unit manager: {e}")),
    }
}

impl Run<'_> {
    /// A unit resource, through the unit manager; its files are all
    /// written (and systemd reloaded once) when the first unit is reached.
    pub(super) async fn unit(&mut self, id: &str, unit: &Unit) {
        let Some(manager) = self.applier.units.clone() else {
            let reason = self.applier.units_missing.clone();
            self.push(id, Action::Failed, Some(reason));
            return;
        };
        if self.preview {
            return self.preview_unit(id, unit, &*manager);
        }
        if self.prepared.is_none() {
            let declared: Vec<(String, Unit)> = self
                .decl
                .resources
                .iter()
                .filter_map(|r| match &r.kind {
                    ResourceKind::Unit(u) => Some((r.id.to_string(), u.clone())),
                    _ => None,
                })
                .collect();
            let prepared = manager.prepare(&declared).await;
            if let Ok(written) = &prepared {
                for (rid, u) in &declared {
                    if written.contains_key(rid) {
                        self.written_units.insert(u.name.to_string());
                    }
                }
            }
            self.prepared = Some(prepared);
        }
        let change = match &self.prepared {
            Some(Ok(map)) => map.get(id).copied(),
            Some(Err(e)) => {
                let reason = format!("unit files not written: {e}");
                self.push(id, Action::Failed, Some(reason));
                return;
            }
            None => None,
        };
        let Some(change) = change else {
            self.push(
                id,
                Action::Failed,
                Some("the unit manager did not write its file".to_string()),
            );
            return;
        };
        let report = manager.converge(id, unit, change).await;
        self.unit_line(report);
    }

    /// A preview of a unit: its file as `prepare` would write it. Its
    /// state and enablement are converged by the apply and not previewed.
    fn preview_unit(&mut self, id: &str, unit: &Unit, manager: &dyn UnitManager) {
        let path = manager.file_of(unit.name.as_str());
        let before = match std::fs::read(&path) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                let reason = format!("cannot read {}: {e}", path.display());
                return self.push(id, Action::Failed, Some(reason));
            }
        };
        let declared = unit.content.as_bytes();
        let (action, reason) = match &before {
            None => (
                Action::Created,
                Some(format!("unit file {}", path.display())),
            ),
            Some(b) if b.as_slice() == declared => (Action::Unchanged, None),
            Some(_) => (
                Action::Updated,
                Some(format!("unit file {} changed", path.display())),
            ),
        };
        let changed = action != Action::Unchanged;
        self.push(id, action, reason);
        if changed {
            let shown = super::preview::unit_diff(&path, declared, before.as_deref());
            if let Some(line) = self.lines.last_mut() {
                line.diff = shown;
            }
        }
    }

    fn unit_line(&mut self, report: UnitReport) {
        if !report.ok {
            self.ok = false;
        }
        self.lines.push(ReportLine::new(
            report.id,
            Action::parse(&report.action),
            report.reason,
        ));
    }

    /// Stop, disable and delete the unit files the host wrote and no
    /// longer declares.
    pub(super) async fn remove_units(&mut self) {
        let declared: BTreeSet<String> = self
            .decl
            .resources
            .iter()
            .filter_map(|r| match &r.kind {
                ResourceKind::Unit(u) => Some(u.name.to_string()),
                _ => None,
            })
            .collect();
        let gone: Vec<String> = self
            .written_units
            .iter()
            .filter(|n| !declared.contains(*n))
            .cloned()
            .collect();
        if gone.is_empty() {
            return;
        }
        if self.preview {
            for name in gone {
                self.push(
                    &name,
                    Action::Removed,
                    Some("no longer declared: stopped, disabled, its file deleted".to_string()),
                );
            }
            return;
        }
        let Some(manager) = self.applier.units.clone() else {
            let reason = format!(
                "no longer declared, but cannot be removed: {}",
                self.applier.units_missing
            );
            for name in gone {
                self.push(&name, Action::Failed, Some(reason.clone()));
            }
            return;
        };
        for report in manager.remove(&gone).await {
            if report.ok {
                self.written_units.remove(&report.id);
            }
            self.unit_line(report);
        }
    }
}

/// A scripted unit manager for unit tests: every call is recorded; files
/// are "written" in memory.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct FakeUnits {
    pub(crate) calls: std::sync::Mutex<Vec<String>>,
    pub(crate) files: std::sync::Mutex<BTreeMap<String, String>>,
    pub(crate) fail_prepare: Option<String>,
}

#[cfg(test)]
impl FakeUnits {
    fn record(&self, call: String) {
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(call);
    }

    pub(crate) fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[cfg(test)]
#[async_trait::async_trait]
impl UnitManager for FakeUnits {
    fn file_of(&self, name: &str) -> std::path::PathBuf {
        std::path::Path::new("/nonexistent/fake-units").join(name)
    }

    async fn prepare(
        &self,
        units: &[(String, Unit)],
    ) -> Result<BTreeMap<String, FileChange>, String> {
        let ids: Vec<&str> = units.iter().map(|(id, _)| id.as_str()).collect();
        self.record(format!("prepare {}", ids.join(",")));
        if let Some(e) = &self.fail_prepare {
            return Err(e.clone());
        }
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = BTreeMap::new();
        for (id, unit) in units {
            let change = match files.insert(unit.name.to_string(), unit.content.clone()) {
                None => FileChange::Created,
                Some(old) if old == unit.content => FileChange::Unchanged,
                Some(_) => FileChange::Updated,
            };
            out.insert(id.clone(), change);
        }
        Ok(out)
    }

    async fn converge(&self, id: &str, _unit: &Unit, file: FileChange) -> UnitReport {
        self.record(format!("converge {id}"));
        let action = match file {
            FileChange::Created => "created",
            FileChange::Updated => "updated",
            FileChange::Unchanged => "unchanged",
        };
        UnitReport {
            id: id.to_string(),
            action: action.to_string(),
            reason: None,
            ok: true,
        }
    }

    async fn remove(&self, unit_names: &[String]) -> Vec<UnitReport> {
        self.record(format!("remove {}", unit_names.join(",")));
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        unit_names
            .iter()
            .map(|name| {
                files.remove(name);
                UnitReport {
                    id: name.clone(),
                    action: "removed".to_string(),
                    reason: None,
                    ok: true,
                }
            })
            .collect()
    }
}
