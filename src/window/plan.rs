//! What a window will hold: the plan a fire opens a window over.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::runtime::ContainerSpec;

/// How each held container is declared, by runtime name.
pub type Specs = BTreeMap<String, Arc<ContainerSpec>>;

/// What a window will hold, in stop order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowPlan {
    /// The step's resource id.
    pub step: String,
    /// The step's module.
    pub module: Option<String>,
    /// The due time being fired.
    pub fire_time: DateTime<Utc>,
    /// The runtime name of the step's container.
    pub step_container: String,
    /// The step's timeout, recorded so a resumed window still enforces it.
    pub step_timeout: Option<Duration>,
    /// `(resource id, runtime name)` of each container to hold, in order.
    pub holds: Vec<(String, String)>,
    /// How each held container is created (by runtime name): one removed
    /// during the window is created again from it at the close.
    pub hold_specs: Specs,
}
