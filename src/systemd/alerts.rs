//! Instances of the operator's alert template (`--on-alert`), started over
//! systemd's D-Bus API.

use zbus::proxy::CacheProperties;
use zbus_systemd::systemd1::{ManagerProxy, UnitProxy};

/// systemd's answer when no unit of that name is loaded.
const NO_SUCH_UNIT: &str = "org.freedesktop.systemd1.NoSuchUnit";

/// Starts alert units; a trait so that the pager's rules are tested without
/// systemd.
#[async_trait::async_trait]
pub trait AlertUnits: Send + Sync + std::fmt::Debug {
    /// Whether `unit` is running (active, activating, deactivating,
    /// reloading): a page for it is still being sent.
    async fn busy(&self, unit: &str) -> Result<bool, String>;

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
    async fn busy(&self, unit: &str) -> Result<bool, String> {
        let path = match self.manager().await?.get_unit(unit.to_string()).await {
            Ok(path) => path,
            // Not loaded: certainly not running.
            Err(zbus::Error::MethodError(error, _, _)) if error.as_str() == NO_SUCH_UNIT => {
                return Ok(false)
            }
            Err(e) => return Err(format!("GetUnit {unit}: {e}")),
        };
        let proxy = UnitProxy::builder(&self.conn)
            .path(path)
            .cache_properties(CacheProperties::No)
            .build()
            .await
            .map_err(|e| format!("{unit}: {e}"))?;
        let state = proxy
            .active_state()
            .await
            .map_err(|e| format!("{unit} ActiveState: {e}"))?;
        Ok(!matches!(state.as_str(), "inactive" | "failed"))
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
