//! Warnings: what is legal but likely not what the sender meant.
//!
//! A declaration with warnings is still applied (`check` exits 0); each
//! warning names the resource it is about and the step concerned.

use std::fmt;

use serde::Serialize;

use super::model::{Declaration, Role, Step};

/// Lint name: a container writes data a holding step reads, yet the step does
/// not hold it.
pub const WINDOW_MISSES_WRITER: &str = "window-misses-writer";

/// Lint name: a step holds containers still but has no timeout.
pub const WINDOW_WITHOUT_TIMEOUT: &str = "window-without-timeout";

/// Lint name: a container is privileged (every capability and device of
/// the host).
pub const PRIVILEGED: &str = "privileged";

/// Lint name: a container joins a network that is neither declared nor
/// the runtime's own: someone must make it by hand first.
pub const UNDECLARED_NETWORK: &str = "undeclared-network";

/// Lint name: a container mounts a volume that is not declared: the
/// runtime makes it with its defaults at first use.
pub const UNDECLARED_VOLUME: &str = "undeclared-volume";

/// Something legal but dangerous in a declaration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// Which check found it ([`WINDOW_MISSES_WRITER`], ...).
    pub lint: &'static str,
    /// The resource it is about.
    pub resource: String,
    /// The scheduled step concerned, if the warning is about one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// What is dangerous, in one line.
    pub message: String,
}

impl fmt::Display for Warning {
    /// `resource: message (lint)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({})", self.resource, self.message, self.lint)
    }
}

/// Every warning for a valid declaration, in declaration order of the steps.
pub fn lint(decl: &Declaration) -> Vec<Warning> {
    let mut warnings = Vec::new();
    for step in decl.steps() {
        if step.schedule.while_stopped.is_empty() {
            continue;
        }
        let step_id = step.resource.id.as_str();
        if step.container.timeout.is_none() {
            warnings.push(Warning {
                lint: WINDOW_WITHOUT_TIMEOUT,
                resource: step_id.to_owned(),
                step: Some(step_id.to_owned()),
                message: format!(
                    "step {step_id:?} holds containers still but has no timeout: the window is bounded only by the step ending"
                ),
            });
        }
        missed_writers(decl, step, &mut warnings);
    }
    for (resource, container) in decl.containers() {
        undeclared_uses(decl, resource.id.as_str(), container, &mut warnings);
        if container.options.privileged {
            warnings.push(Warning {
                lint: PRIVILEGED,
                resource: resource.id.to_string(),
                step: None,
                message: "is privileged: it gets every capability and device of the host, and root in it is root on the node; cap-add what it needs instead".to_string(),
            });
        }
    }
    warnings
}

/// The networks and volumes `container` uses that are neither declared
/// nor the runtime's own.
fn undeclared_uses(
    decl: &Declaration,
    id: &str,
    container: &super::model::Container,
    warnings: &mut Vec<Warning>,
) {
    let mut networks: Vec<&str> = container.networks.iter().map(|n| n.name.as_str()).collect();
    if let Some(super::model::Network::Named(n)) = &container.network {
        networks.push(n.as_str());
    }
    for network in networks {
        if super::networking::RUNTIME_NETWORKS.contains(&network)
            || decl.networks().any(|(_, n)| n.name.as_str() == network)
        {
            continue;
        }
        warnings.push(Warning {
            lint: UNDECLARED_NETWORK,
            resource: id.to_owned(),
            step: None,
            message: format!(
                "joins network {network:?}, which is not declared: the apply fails unless it is made by hand first; declare it (type \"network\")"
            ),
        });
    }
    for mount in &container.mounts {
        let super::model::MountSource::Volume(volume) = &mount.source else {
            continue;
        };
        if decl.volumes().any(|(_, v)| &v.name == volume) {
            continue;
        }
        warnings.push(Warning {
            lint: UNDECLARED_VOLUME,
            resource: id.to_owned(),
            step: None,
            message: format!(
                "mounts volume {:?}, which is not declared: the runtime makes it with its defaults; declare it (type \"volume\") to give its driver and options",
                volume.as_str()
            ),
        });
    }
}

/// Containers that mount read-write what the step mounts, and that the
/// step's window does not hold: they write while the step works.
fn missed_writers(decl: &Declaration, step: Step<'_>, warnings: &mut Vec<Warning>) {
    let step_id = step.resource.id.as_str();
    for (resource, container) in decl.containers() {
        if resource.id == step.resource.id
            || step.schedule.while_stopped.contains(&resource.id)
            // A run-once step runs only inside an apply, and no window opens
            // while an apply is in flight.
            || container.role == Role::RunOnce
        {
            continue;
        }
        let overlap = container
            .mounts
            .iter()
            .filter(|m| !m.read_only)
            .find_map(|m| {
                step.container
                    .mounts
                    .iter()
                    .find(|s| s.source.overlaps(&m.source))
                    .map(|s| (m, s))
            });
        if let Some((mine, theirs)) = overlap {
            warnings.push(Warning {
                lint: WINDOW_MISSES_WRITER,
                resource: resource.id.to_string(),
                step: Some(step_id.to_owned()),
                message: format!(
                    "mounts {} read-write, and step {step_id:?} mounts {}, but the step's while-stopped does not hold {:?}: a writer the window misses",
                    mine.source,
                    theirs.source,
                    resource.id.as_str()
                ),
            });
        }
    }
}
