//! One resource as the first pass leaves it for the second: its label,
//! id, module, kind and what it points at.
//!
//! Each kind's reader fills it in as it reads (see the parent module); the
//! second pass ([`super::cross_check`](mod@super::cross_check)) checks across entries what no
//! resource can check alone.

use super::fields::{Found, Sink};
use crate::declaration::identity::AccountName;
use crate::declaration::model::Resource;
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
    pub(super) built: Option<Resource>,
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
