//! The context one service is read in: the project, its top level, the
//! problems collected, and what the project counts across its services
//! (directories to declare, ports published). Each part of a service
//! (process, mounts, networks, limits, health) is read by a function of
//! its own file given this context.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::project::Project;
use super::top::TopLevel;
use super::{cast, problems::Problems};

/// The context one service is read in.
pub struct Service<'a> {
    pub project: &'a Project,
    pub top: &'a TopLevel,
    pub name: &'a str,
    pub p: &'a mut Problems,
    /// Directories to declare (bind sources compose would make).
    pub dirs: &'a mut BTreeSet<String>,
    /// Services that must have run to completion first (become run-once).
    pub completed: &'a BTreeSet<String>,
    /// Ports published so far by the project.
    pub ports: &'a mut usize,
    /// The project's containers, for `network_mode`.
    pub peers: &'a Peers,
}

/// The project's containers as `network_mode` names them: by service
/// (`service:X`) or by container name (`container:NAME`).
#[derive(Debug, Default)]
pub struct Peers {
    /// The services of the project (enabled by its profiles).
    pub services: BTreeSet<String>,
    /// The service each container name of the project is first given
    /// to: a `container_name`, or compose's `PROJECT-SERVICE-1`.
    pub by_container: BTreeMap<String, String>,
    /// The container names of each service read so far (one, or one a
    /// replica).
    pub read: BTreeMap<String, Vec<String>>,
}

impl std::fmt::Debug for Service<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Service<'_> {
    pub(super) fn at(&self, field: &str) -> String {
        format!("{}: {field}", self.name)
    }

    pub(super) fn refuse(&mut self, field: &str, why: impl Into<String>) {
        let at = self.at(field);
        self.p.refuse(at, why);
    }

    pub(super) fn note(&mut self, field: &str, what: impl Into<String>) {
        let at = self.at(field);
        self.p.note(at, what);
    }

    pub(super) fn boolean(&mut self, field: &str, v: &Value) -> Option<bool> {
        let at = self.at(field);
        cast::boolean(self.p, &at, v)
    }

    pub(super) fn integer(&mut self, field: &str, v: &Value) -> Option<i64> {
        let at = self.at(field);
        cast::integer(self.p, &at, v)
    }

    pub(super) fn size(&mut self, field: &str, v: &Value) -> Option<u64> {
        let at = self.at(field);
        cast::size(self.p, &at, v)
    }
}
