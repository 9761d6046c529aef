//! Instances of the operator's alert template (`--on-alert`), started over
//! systemd's D-Bus API.

use zbus_systemd::systemd1::ManagerProxy;

/// Starts alert units; a trait so that the pager's rules are tested without
/// systemd.
#[async_trait::async_trait]
pub trait AlertUnits: Send + Sync + std::fmt::Debug {
    /// The units matching `pattern` (a glob, as `ListUnitsByPatterns`
    /// reads it) that are running (active, activating, deactivating,
    /// reloading): pages still being sent.
    async fn running(&self, pattern: &str) -> Result<Vec<String>, String>;

    /// Ask systemd to start `unit` (not waiting for it to finish).
    async fn start(&self, unit: &str) -> Result<(), String>;
}

/// Alert units through systemd on the system bus.
#[derive(Debug, Clone)]
pub struct SystemdAlertUnits {
    conn: zbus::Connection,
}

impl SystemdAlertUnits {
    /// Connect to the system bus.
    pub async fn connect() -> Result<Self, String> {
        let conn = zbus::Connection::system()
            .await
            .map_err(|e| format!("cannot reach systemd on the system bus: {e}"))?;
        Ok(SystemdAlertUnits { conn })
    }

    async fn manager(&self) -> Result<ManagerProxy<'static>, String> {
        ManagerProxy::new(&self.conn)
            .await
            .map_err(|e| format!("systemd manager: {e}"))
    }
}

#[async_trait::async_trait]
impl AlertUnits for SystemdAlertUnits {
    async fn running(&self, pattern: &str) -> Result<Vec<String>, String> {
        let states = ["active", "activating", "deactivating", "reloading"]
            .map(String::from)
            .to_vec();
        let units = self
            .manager()
            .await?
            .list_units_by_patterns(states, vec![pattern.to_string()])
            .await
            .map_err(|e| format!("ListUnitsByPatterns {pattern}: {e}"))?;
        Ok(units.into_iter().map(|u| u.0).collect())
    }

    async fn start(&self, unit: &str) -> Result<(), String> {
        self.manager()
            .await?
            .start_unit(unit.to_string(), "replace".to_string())
            .await
            .map(|_job| ())
            .map_err(|e| format!("StartUnit {unit}: {e}"))
    }
}
