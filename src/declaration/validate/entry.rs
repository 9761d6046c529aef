//! One resource as the first pass leaves it for the second: its label,
//! id, module, kind and what it points at.
//!
//! Each kind's reader fills it in as it reads (see the parent module); the
//! second pass ([`super::cross_check`](mod@super::cross_check)) checks across entries what no
//! resource can check alone.

use super::fields::{Found, Sink};
use crate::declaration::depends::Dependency;
use crate::declaration::identity::AccountName;
use crate::declaration::model::{Port, Resource};
use crate::declaration::networking::{NetworkJoin, Subnet};
use crate::declaration::types::{
    AbsPath, ContainerName, ModuleName, NetworkName, ResourceId, UnitName, VolumeName,
};

/// What a container is for, as far as other resources care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RoleKind {
    Service,
    RunOnce,
    Scheduled,
}

/// What pass two needs to know of a resource.
#[derive(Debug)]
pub(super) enum Kind {
    Container {
        role: RoleKind,
        name: Option<ContainerName>,
    },
    File(Option<AbsPath>),
    Directory(Option<AbsPath>),
    Unit(Option<UnitName>),
    Identity {
        name: Option<AccountName>,
        uid: Option<u32>,
        gid: Option<u32>,
    },
    SharedFolder(Option<AbsPath>),
    Network(Option<NetworkName>),
    Volume(Option<VolumeName>),
    /// Not readable as any type.
    Unknown,
}

impl Kind {
    pub(super) fn noun(&self) -> &'static str {
        match self {
            Kind::Container { .. } => "a container",
            Kind::File(_) => "a file",
            Kind::Directory(_) => "a directory",
            Kind::Unit(_) => "a unit",
            Kind::Identity { .. } => "an identity",
            Kind::SharedFolder(_) => "a shared folder",
            Kind::Network(_) => "a network",
            Kind::Volume(_) => "a volume",
            Kind::Unknown => "a resource of unknown type",
        }
    }
}

/// One resource after pass one.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) order: usize,
    pub(super) label: String,
    pub(super) id: Option<ResourceId>,
    /// `None` when the module field could not be read.
    pub(super) module: Option<Option<ModuleName>>,
    pub(super) kind: Kind,
    pub(super) holds: Vec<(String, ResourceId)>,
    pub(super) restart_on: Vec<(String, ResourceId)>,
    /// Identity ids it names (a container's `identity`, a shared folder's
    /// `access`), with their fields.
    pub(super) identities: Vec<(String, ResourceId)>,
    /// What pass two checks across resources, as far as pass one could
    /// read it even when the resource has other problems: so a refusal
    /// lists a clash between two resources beside each one's own problems.
    pub(super) spans: Spans,
    /// The model of the resource when pass one found no problem in it,
    /// boxed: a resource is a kilobyte, and an entry whose resource did
    /// not read (a hostile list of a million `{}`) should cost little.
    pub(super) built: Option<Box<Resource>>,
}

/// The parts of a resource pass two looks at, each with its field.
#[derive(Debug, Default)]
pub(super) struct Spans {
    /// A container's ports that read well.
    pub(super) ports: Vec<(String, Port)>,
    /// A container's network joins that read well.
    pub(super) joins: Vec<(String, NetworkJoin)>,
    /// A container's dependencies that read well.
    pub(super) depends_on: Vec<(String, Dependency)>,
    /// A container's network peer (`network: "container:NAME"`).
    pub(super) peer: Option<ContainerName>,
    /// A container whose health check is `"none"`.
    pub(super) health_disabled: bool,
    /// A network's subnet: `None` when it did not read, `Some(None)` when
    /// it has none.
    pub(super) subnet: Option<Option<Subnet>>,
    /// A network's `enable-ipv6` and `ipv6-subnet`: `None` when they did
    /// not read.
    pub(super) ipv6: Option<(bool, Option<Subnet>)>,
}

impl Entry {
    pub(super) fn sink<'a>(&self, found: &'a mut Found) -> Sink<'a> {
        Sink {
            found,
            order: self.order,
            resource: Some(self.label.clone()),
        }
    }
}
