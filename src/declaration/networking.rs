//! Networks and volumes: the resource types `network` and `volume`, a
//! container's `networks` (several, each with aliases and a fixed address)
//! and its `restart` policy (CONTRACT "Compose").

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Serialize, Serializer};

use super::types::{NetworkName, VolumeName};

/// The networks every runtime has of its own: a container may join them
/// without a declaration, and no `network` resource may take their names.
pub const RUNTIME_NETWORKS: &[&str] = &["host", "none", "bridge", "podman"];

/// `type: "network"`: a network the runtime makes before any container
/// joins it, and makes again when a setting changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct NetworkResource {
    pub name: NetworkName,
    /// `bridge` by default.
    pub driver: String,
    /// The address range; the runtime picks one when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnet: Option<Subnet>,
    /// The gateway's address, inside `subnet`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
    /// No route out of the network.
    pub internal: bool,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// IPv6 beside IPv4 (Docker's `EnableIPv6`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub enable_ipv6: bool,
    /// The IPv6 address range (a second IPAM config, as compose gives it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv6_subnet: Option<Subnet>,
    /// The IPv6 gateway's address, inside `ipv6_subnet`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv6_gateway: Option<Ipv6Addr>,
    /// The driver's options (`com.docker.network.bridge.name`, an MTU).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub driver_opts: BTreeMap<String, String>,
}

/// `type: "volume"`: a named volume made before use and never removed by
/// mesh-host; one that exists otherwise than declared is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct VolumeResource {
    pub name: VolumeName,
    /// `local` by default.
    pub driver: String,
    /// The driver's options (`type`, `device`, `o` for an NFS share).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub driver_opts: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// A network a container joins (an entry of its `networks`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct NetworkJoin {
    pub name: NetworkName,
    /// Further names the container answers to on this network.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// A fixed address (the network needs a declared subnet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv4_address: Option<Ipv4Addr>,
    /// A fixed IPv6 address (the network needs IPv6 and a declared
    /// `ipv6-subnet`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv6_address: Option<Ipv6Addr>,
}

/// An address range, `ADDRESS/PREFIX`, its address the range's first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Subnet {
    pub address: IpAddr,
    pub prefix: u8,
}

impl Subnet {
    /// Whether `ip` lies in the range.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.address, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl std::str::FromStr for Subnet {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let wrong = || format!("{text:?} is not a subnet (ADDRESS/PREFIX, like \"10.20.0.0/24\")");
        let (address, prefix) = text.split_once('/').ok_or_else(wrong)?;
        let address: IpAddr = address.parse().map_err(|_| wrong())?;
        let prefix: u8 = prefix.parse().map_err(|_| wrong())?;
        let bits = if address.is_ipv4() { 32 } else { 128 };
        if prefix > bits {
            return Err(format!("{text:?}: a prefix is at most {bits}"));
        }
        let subnet = Subnet { address, prefix };
        let first = match address {
            IpAddr::V4(a) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask))
            }
            IpAddr::V6(a) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
                IpAddr::V6((u128::from(a) & mask).into())
            }
        };
        if first != address {
            return Err(format!(
                "{text:?} has host bits set: the range is written from its first address, {first}/{prefix}"
            ));
        }
        Ok(subnet)
    }
}

impl std::fmt::Display for Subnet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix)
    }
}

impl Serialize for Subnet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A service's `restart` policy: what the runtime does when it exits, and
/// whether the daemon's reconcile starts it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Restart {
    /// Started again unless stopped on purpose (the default).
    #[default]
    UnlessStopped,
    /// Started again whenever it stops, and when the runtime starts.
    Always,
    /// Started again by the runtime only after a non-zero exit.
    OnFailure,
    /// Started by the apply, never again once it exits on its own.
    No,
}

impl Restart {
    pub fn as_str(self) -> &'static str {
        match self {
            Restart::UnlessStopped => "unless-stopped",
            Restart::Always => "always",
            Restart::OnFailure => "on-failure",
            Restart::No => "no",
        }
    }

    /// The policy named `word`.
    pub fn parse(word: &str) -> Option<Restart> {
        [
            Restart::UnlessStopped,
            Restart::Always,
            Restart::OnFailure,
            Restart::No,
        ]
        .into_iter()
        .find(|r| r.as_str() == word)
    }

    /// Whether an exit of the service's own is final: the reconcile leaves
    /// it exited (the runtime restarts an `on-failure` service that failed).
    pub fn exit_is_final(self) -> bool {
        matches!(self, Restart::No | Restart::OnFailure)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_subnet_is_read_from_its_first_address_and_holds_its_range() {
        let s: Subnet = "10.20.0.0/24".parse().unwrap();
        assert!(s.contains("10.20.0.7".parse().unwrap()));
        assert!(!s.contains("10.20.1.7".parse().unwrap()));
        assert!(!s.contains("::1".parse().unwrap()));
        assert_eq!(s.to_string(), "10.20.0.0/24");
        let v6: Subnet = "fd00:1::/64".parse().unwrap();
        assert!(v6.contains("fd00:1::5".parse().unwrap()));
        assert!("10.20.0.1/24"
            .parse::<Subnet>()
            .unwrap_err()
            .contains("10.20.0.0/24"));
        assert!("10.20.0.0/33".parse::<Subnet>().is_err());
        assert!("10.20.0.0".parse::<Subnet>().is_err());
        assert!("0.0.0.0/0"
            .parse::<Subnet>()
            .unwrap()
            .contains("1.2.3.4".parse().unwrap()));
    }

    #[test]
    fn restart_words_read_back() {
        for r in [
            Restart::UnlessStopped,
            Restart::Always,
            Restart::OnFailure,
            Restart::No,
        ] {
            assert_eq!(Restart::parse(r.as_str()), Some(r));
        }
        assert_eq!(Restart::parse("never"), None);
    }
}
