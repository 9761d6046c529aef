//! Warnings: what is legal but likely not what the sender meant.
//!
//! A declaration with warnings is still applied (`check` exits 0); each
//! warning names the resource it is about and the step concerned.

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::Serialize;

use super::model::{Container, Declaration, MountSource, Resource, Role, Step};
use super::overlaps::PathIndex;
use super::types::{ResourceId, VolumeName};

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

/// Lint name: a service whose health check is disabled (`"health":
/// "none"`): its replacement is not gated, so never rolled back.
pub const CANNOT_ROLL_BACK: &str = "cannot-roll-back";

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
    /// `resource: message (lint)`; `message (lint)` for the count of
    /// warnings not listed, which is about no resource.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.resource.is_empty() {
            write!(f, "{}: ", self.resource)?;
        }
        write!(f, "{} ({})", self.message, self.lint)
    }
}

/// How many warnings are listed; past them, one more says how many were
/// not (a declaration can be made to warn of every pair of its steps and
/// containers).
pub const MAX_WARNINGS: usize = 1000;

/// Lint name of the warning that says how many were not listed.
pub const MORE: &str = "more-warnings";

/// Every warning for a valid declaration, in declaration order of the steps.
///
/// Linear in the declaration: what a step's mounts overlap is found in an
/// index of the writers' mounts, and declared networks and volumes in sets.
pub fn lint(decl: &Declaration) -> Vec<Warning> {
    let mut warnings = Warnings::default();
    let writers = Writers::of(decl);
    for step in decl.steps() {
        if step.schedule.while_stopped.is_empty() {
            continue;
        }
        let step_id = step.resource.id.as_str();
        if step.container.timeout.is_none() {
            warnings.push(|| Warning {
                lint: WINDOW_WITHOUT_TIMEOUT,
                resource: step_id.to_owned(),
                step: Some(step_id.to_owned()),
                message: format!(
                    "step {step_id:?} holds containers still but has no timeout: the window is bounded only by the step ending"
                ),
            });
        }
        missed_writers(&writers, step, &mut warnings);
    }
    let declared = Declared::of(decl);
    for (resource, container) in decl.containers() {
        undeclared_uses(&declared, resource.id.as_str(), container, &mut warnings);
        if container.options.privileged {
            warnings.push(|| Warning {
                lint: PRIVILEGED,
                resource: resource.id.to_string(),
                step: None,
                message: "is privileged: it gets every capability and device of the host, and root in it is root on the node; cap-add what it needs instead".to_string(),
            });
        }
        if matches!(container.role, Role::Service)
            && matches!(container.health, Some(super::model::Health::Disabled))
        {
            warnings.push(|| Warning {
                lint: CANNOT_ROLL_BACK,
                resource: resource.id.to_string(),
                step: None,
                message: "has its health check disabled: a replacement of it cannot be judged on its health, so a broken new version is never rolled back".to_string(),
            });
        }
    }
    warnings.done()
}

/// Something worth knowing about a valid declaration that is not a
/// danger: `check` prints it after the warnings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Note {
    /// The resource it is about.
    pub resource: String,
    /// What to know, in one line.
    pub message: String,
}

impl fmt::Display for Note {
    /// `resource: message`; `message` for the count of notes not listed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.resource.is_empty() {
            write!(f, "{}: ", self.resource)?;
        }
        f.write_str(&self.message)
    }
}

/// Every note: a service that declares no health check, whose
/// replacement is gated only if its image has a check of its own, which
/// a declaration cannot say (`check` reads no image): without one it is
/// replaced ungated and never rolled back. At most `room` are listed
/// (what the warnings leave of [`MAX_WARNINGS`]), then one more says how
/// many were not, about no resource.
pub fn notes(decl: &Declaration, room: usize) -> Vec<Note> {
    let bare = decl
        .containers()
        .filter(|(_, c)| matches!(c.role, Role::Service) && c.health.is_none());
    let mut notes = Vec::new();
    let mut more = 0usize;
    for (resource, _) in bare {
        if notes.len() >= room {
            more += 1;
            continue;
        }
        notes.push(Note {
            resource: resource.id.to_string(),
            message: "declares no health check: a replacement of it is judged on its image's own \
                      check (HEALTHCHECK) if it has one; without one it is replaced ungated and \
                      cannot be rolled back (declare `health` to gate it)"
                .to_string(),
        });
    }
    if more > 0 {
        notes.push(Note {
            resource: String::new(),
            message: format!("{more} more services declare no health check"),
        });
    }
    notes
}

/// The warnings listed so far, and how many more were found.
#[derive(Debug, Default)]
struct Warnings {
    listed: Vec<Warning>,
    more: usize,
}

impl Warnings {
    /// Whether no more are listed: a check that only adds to the count
    /// may stop looking.
    fn full(&self) -> bool {
        self.listed.len() >= MAX_WARNINGS
    }

    /// One more warning, made only if it is listed.
    fn push(&mut self, warning: impl FnOnce() -> Warning) {
        if self.full() {
            self.more += 1;
        } else {
            self.listed.push(warning());
        }
    }

    fn done(mut self) -> Vec<Warning> {
        if self.more > 0 {
            self.listed.push(Warning {
                lint: MORE,
                resource: String::new(),
                step: None,
                message: format!(
                    "and {} more warning{}, not listed: a check lists the first {MAX_WARNINGS}",
                    self.more,
                    if self.more == 1 { "" } else { "s" }
                ),
            });
        }
        self.listed
    }
}

/// The names of the declared networks and volumes.
struct Declared<'d> {
    networks: HashSet<&'d str>,
    volumes: HashSet<&'d VolumeName>,
}

impl<'d> Declared<'d> {
    fn of(decl: &'d Declaration) -> Self {
        Declared {
            networks: decl.networks().map(|(_, n)| n.name.as_str()).collect(),
            volumes: decl.volumes().map(|(_, v)| &v.name).collect(),
        }
    }
}

/// The networks and volumes `container` uses that are neither declared
/// nor the runtime's own.
fn undeclared_uses(
    declared: &Declared<'_>,
    id: &str,
    container: &super::model::Container,
    warnings: &mut Warnings,
) {
    let mut networks: Vec<&str> = container.networks.iter().map(|n| n.name.as_str()).collect();
    if let Some(super::model::Network::Named(n)) = &container.network {
        networks.push(n.as_str());
    }
    for network in networks {
        if super::networking::RUNTIME_NETWORKS.contains(&network)
            || declared.networks.contains(network)
        {
            continue;
        }
        warnings.push(|| Warning {
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
        if declared.volumes.contains(volume) {
            continue;
        }
        warnings.push(|| Warning {
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

/// Every container that may write while a window is open (any but a
/// run-once step, which runs only inside an apply, and no window opens
/// while an apply is in flight), by what it mounts read-write; values
/// are their positions among the declaration's containers.
struct Writers<'d> {
    containers: Vec<(&'d Resource, &'d Container)>,
    paths: PathIndex<usize>,
    volumes: HashMap<&'d VolumeName, Vec<usize>>,
}

impl<'d> Writers<'d> {
    fn of(decl: &'d Declaration) -> Self {
        let containers: Vec<(&Resource, &Container)> = decl.containers().collect();
        let mut paths = PathIndex::new();
        let mut volumes: HashMap<&VolumeName, Vec<usize>> = HashMap::new();
        for (i, (_, container)) in containers.iter().enumerate() {
            if container.role == Role::RunOnce {
                continue;
            }
            for mount in container.mounts.iter().filter(|m| !m.read_only) {
                match &mount.source {
                    MountSource::Path(p) => paths.insert(p, i),
                    MountSource::Volume(v) => volumes.entry(v).or_default().push(i),
                }
            }
        }
        Writers {
            containers,
            paths,
            volumes,
        }
    }

    /// The positions of the containers that write what `source` mounts.
    fn of_source(&self, source: &MountSource, into: &mut HashSet<usize>) {
        match source {
            MountSource::Path(p) => into.extend(self.paths.overlapping(p)),
            MountSource::Volume(v) => {
                into.extend(self.volumes.get(v).into_iter().flatten().copied())
            }
        }
    }
}

/// Containers that mount read-write what the step mounts, and that the
/// step's window does not hold: they write while the step works.
fn missed_writers(writers: &Writers<'_>, step: Step<'_>, warnings: &mut Warnings) {
    let step_id = step.resource.id.as_str();
    let mut found: HashSet<usize> = HashSet::new();
    for mount in &step.container.mounts {
        writers.of_source(&mount.source, &mut found);
    }
    let held: HashSet<&ResourceId> = step.schedule.while_stopped.iter().collect();
    let mut found: Vec<usize> = found.into_iter().collect();
    found.sort_unstable();
    for i in found {
        let Some((resource, container)) = writers.containers.get(i) else {
            continue;
        };
        if resource.id == step.resource.id || held.contains(&resource.id) {
            continue;
        }
        if warnings.full() {
            // Counted, not described: the rest is not listed anyway.
            warnings.more += 1;
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
            warnings.push(|| Warning {
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
