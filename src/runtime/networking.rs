//! Networks and volumes as the runtime makes and reports them: what a
//! declared `network` or `volume` is created from, what an inspection
//! answers, and how a container joins a network.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

/// A network to create.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkSpec {
    pub name: String,
    pub driver: String,
    /// `ADDRESS/PREFIX`; the runtime picks one when absent.
    pub subnet: Option<String>,
    pub gateway: Option<String>,
    pub internal: bool,
    /// Labels; [`super::LABEL_MANAGED`] is added by the runtime.
    pub labels: BTreeMap<String, String>,
    /// IPv6 beside IPv4.
    pub enable_ipv6: bool,
    /// The IPv6 range, a second address range, and its gateway.
    pub ipv6_subnet: Option<String>,
    pub ipv6_gateway: Option<String>,
    /// The driver's options.
    pub driver_opts: BTreeMap<String, String>,
}

/// A network as the runtime reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkInfo {
    pub name: String,
    pub driver: String,
    /// Its first IPv4 address range, when it has one.
    pub subnet: Option<String>,
    pub gateway: Option<String>,
    pub internal: bool,
    pub labels: BTreeMap<String, String>,
    pub enable_ipv6: bool,
    /// Its first IPv6 address range, when it has one.
    pub ipv6_subnet: Option<String>,
    pub ipv6_gateway: Option<String>,
    /// The driver's options it was made with.
    pub driver_opts: BTreeMap<String, String>,
    /// The names of the containers attached to it.
    pub containers: Vec<String>,
}

/// A container's place on one network: its aliases and fixed address.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NetworkAttach {
    pub network: String,
    pub aliases: Vec<String>,
    pub ipv4_address: Option<Ipv4Addr>,
    pub ipv6_address: Option<Ipv6Addr>,
}

/// A named volume to create.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VolumeSpec {
    pub name: String,
    pub driver: String,
    pub driver_opts: BTreeMap<String, String>,
    pub labels: BTreeMap<String, String>,
}

/// A named volume as the runtime reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VolumeInfo {
    pub name: String,
    pub driver: String,
    /// The options it was created with.
    pub driver_opts: BTreeMap<String, String>,
    pub labels: BTreeMap<String, String>,
}
