//! The seam between apply and systemd unit files.
//!
//! `type: "unit"` resources are decided from what the unit manager reads
//! ([`UnitReads`]: the unit file as it is, and what systemd says of the
//! unit: its enablement, whether it runs), and carried out through what
//! it changes ([`UnitManager`]): every file the plan writes at once when
//! the first unit is reached (so systemd is reloaded once), then each
//! unit's enablement and job at its place in the declaration, and the
//! removal of units whose files the host wrote and no longer declares
//! (the [`AppliedState::units`](super::AppliedState::units) list) after
//! the declared resources. The decider holds only the reads.
//!
//! Without a manager (no reachable systemd bus) every unit resource fails
//! with the reason given to [`Applier::without_units`](super::Applier::without_units).
//!
//! Both sides of the seam are here: the traits systemd implements (and a
//! scripted manager for unit tests).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::declaration::Unit;
use crate::systemd::unit_files::{StateStep, UnitFileSeen, UnitFiles, UnitJob, UnitSeen};

pub use crate::systemd::unit_files::{FileChange, UnitReport};

/// What the unit manager reads: all an apply decides a unit from.
#[async_trait::async_trait]
pub trait UnitReads: Send + Sync + std::fmt::Debug {
    /// The file of unit `name` as it is now.
    async fn read_file(&self, name: &str) -> Result<UnitFileSeen, String>;

    /// What systemd says of `unit` now.
    async fn observe(&self, unit: &Unit) -> Result<UnitSeen, String>;

    /// Where the file of unit `name` is written.
    fn file_of(&self, name: &str) -> PathBuf;
}

/// Converges systemd units: what an apply's executor calls.
#[async_trait::async_trait]
pub trait UnitManager: UnitReads {
    /// Write these units' files (atomically) and reload systemd once if
    /// any changed. `units` are `(resource id, unit)`; the answer says,
    /// per resource id, what happened to its file. `Err`: the files could
    /// not all be written (the units whose file was to be written fail).
    async fn prepare(
        &self,
        units: &[(String, Unit)],
    ) -> Result<BTreeMap<String, FileChange>, String>;

    /// Enable (`want`) or disable unit `name`; what changed.
    async fn set_enabled(&self, name: &str, want: bool) -> Result<Option<&'static str>, String>;

    /// Run `job` on unit `name` (content `content`) and judge it.
    async fn run_job(&self, name: &str, job: UnitJob, content: &str) -> Result<StateStep, String>;

    /// Stop, disable and delete the files of units the host wrote and no
    /// longer declares; one report per unit name.
    async fn remove(&self, unit_names: &[String]) -> Vec<UnitReport>;
}

#[async_trait::async_trait]
impl UnitReads for UnitFiles {
    async fn read_file(&self, name: &str) -> Result<UnitFileSeen, String> {
        UnitFiles::read_file(self, name).await
    }

    async fn observe(&self, unit: &Unit) -> Result<UnitSeen, String> {
        UnitFiles::observe(self, unit).await
    }

    fn file_of(&self, name: &str) -> PathBuf {
        self.dir().join(name)
    }
}

#[async_trait::async_trait]
impl UnitManager for UnitFiles {
    async fn prepare(
        &self,
        units: &[(String, Unit)],
    ) -> Result<BTreeMap<String, FileChange>, String> {
        UnitFiles::prepare(self, units).await
    }

    async fn set_enabled(&self, name: &str, want: bool) -> Result<Option<&'static str>, String> {
        UnitFiles::set_enabled(self, name, want).await
    }

    async fn run_job(&self, name: &str, job: UnitJob, content: &str) -> Result<StateStep, String> {
        UnitFiles::run_job(self, name, job, content).await
    }

    async fn remove(&self, unit_names: &[String]) -> Vec<UnitReport> {
        UnitFiles::remove(self, unit_names).await
    }
}

/// Where the host writes unit files.
pub const UNIT_DIR: &str = "/etc/systemd/system";

/// A scripted unit manager for unit tests: files, enablement and state
/// kept in memory, every call recorded.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct FakeUnits {
    state: std::sync::Mutex<FakeUnitState>,
    pub(crate) fail_prepare: Option<String>,
}

#[cfg(test)]
#[derive(Debug, Default)]
struct FakeUnitState {
    calls: Vec<String>,
    files: BTreeMap<String, String>,
    /// Unit name → `enabled` or `disabled`.
    enabled: BTreeMap<String, String>,
    /// Units that run.
    active: std::collections::BTreeSet<String>,
}

#[cfg(test)]
impl FakeUnits {
    fn state(&self) -> std::sync::MutexGuard<'_, FakeUnitState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every call that changed something, in order (`prepare a,b`,
    /// `enable a.service`, `start a.service`, `remove b.service`, …).
    pub(crate) fn calls(&self) -> Vec<String> {
        self.state().calls.clone()
    }

    /// Stop `name` behind the host's back (an operator's `systemctl stop`).
    pub(crate) fn stop_by_hand(&self, name: &str) {
        self.state().active.remove(name);
    }

    /// Disable `name` behind the host's back.
    pub(crate) fn disable_by_hand(&self, name: &str) {
        self.state().enabled.insert(name.into(), "disabled".into());
    }

    /// Whether `name` runs.
    pub(crate) fn is_active(&self, name: &str) -> bool {
        self.state().active.contains(name)
    }
}

#[cfg(test)]
#[async_trait::async_trait]
impl UnitReads for FakeUnits {
    async fn read_file(&self, name: &str) -> Result<UnitFileSeen, String> {
        Ok(match self.state().files.get(name) {
            Some(content) => UnitFileSeen {
                content: Some(content.clone().into_bytes()),
                mode: Some(0o644),
            },
            None => UnitFileSeen::default(),
        })
    }

    async fn observe(&self, unit: &Unit) -> Result<UnitSeen, String> {
        let state = self.state();
        let name = unit.name.as_str();
        Ok(UnitSeen {
            enablement: state.enabled.get(name).cloned().unwrap_or_default(),
            active_state: if state.active.contains(name) {
                "active".into()
            } else {
                "inactive".into()
            },
            oneshot_without_remain: false,
            ran_with_this_file: None,
        })
    }

    fn file_of(&self, name: &str) -> PathBuf {
        std::path::Path::new("/nonexistent/fake-units").join(name)
    }
}

#[cfg(test)]
#[async_trait::async_trait]
impl UnitManager for FakeUnits {
    async fn prepare(
        &self,
        units: &[(String, Unit)],
    ) -> Result<BTreeMap<String, FileChange>, String> {
        let mut state = self.state();
        let ids: Vec<&str> = units.iter().map(|(id, _)| id.as_str()).collect();
        state.calls.push(format!("prepare {}", ids.join(",")));
        if let Some(e) = &self.fail_prepare {
            return Err(e.clone());
        }
        let mut out = BTreeMap::new();
        for (id, unit) in units {
            let change = match state
                .files
                .insert(unit.name.to_string(), unit.content.clone())
            {
                None => FileChange::Created,
                Some(old) if old == unit.content => FileChange::Unchanged,
                Some(_) => FileChange::Updated,
            };
            out.insert(id.clone(), change);
        }
        Ok(out)
    }

    async fn set_enabled(&self, name: &str, want: bool) -> Result<Option<&'static str>, String> {
        let mut state = self.state();
        let word = if want { "enabled" } else { "disabled" };
        state
            .calls
            .push(format!("{} {name}", &word[..word.len() - 1]));
        let before = state.enabled.insert(name.into(), word.into());
        Ok((before.as_deref() != Some(word)).then_some(word))
    }

    async fn run_job(&self, name: &str, job: UnitJob, _content: &str) -> Result<StateStep, String> {
        let mut state = self.state();
        state.calls.push(format!("{} {name}", job.as_str()));
        Ok(match job {
            UnitJob::Start => {
                state.active.insert(name.into());
                StateStep::Started
            }
            UnitJob::Restart => {
                state.active.insert(name.into());
                StateStep::Restarted
            }
            UnitJob::Stop => {
                if state.active.remove(name) {
                    StateStep::Stopped
                } else {
                    StateStep::AsDeclared
                }
            }
        })
    }

    async fn remove(&self, unit_names: &[String]) -> Vec<UnitReport> {
        let mut state = self.state();
        state.calls.push(format!("remove {}", unit_names.join(",")));
        unit_names
            .iter()
            .map(|name| {
                state.files.remove(name);
                state.active.remove(name);
                state.enabled.remove(name);
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
