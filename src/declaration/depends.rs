//! A service's `depends-on`: the containers declared before it that it
//! starts after, and for `healthy` ones, only once they are healthy
//! (compose's `depends_on` with `condition: service_healthy`).

use serde::Serialize;

use super::types::ResourceId;

/// One entry of `depends-on`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Dependency {
    /// A container declared before this one.
    pub id: ResourceId,
    /// `started` (the order alone) unless written.
    #[serde(skip_serializing_if = "Condition::is_started")]
    pub condition: Condition,
}

/// What a dependency must be before its dependent starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Condition {
    /// Made and started first: declaration order.
    #[default]
    Started,
    /// Healthy by its health check, when the dependent is made or started.
    Healthy,
}

impl Condition {
    fn is_started(&self) -> bool {
        *self == Condition::Started
    }
}
