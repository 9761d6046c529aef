//! The records an apply keeps of what it made besides the declaration's
//! own state ([`super::state`]): the accounts it added, the networks it
//! made, the volumes declared, and the network remakes under way. Each
//! is a store document; each is what lets a later apply remove only what
//! this state made, or finish what a killed apply began.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Store document of the accounts the host made.
pub const ACCOUNTS: &str = "accounts";
/// Store document: the networks this state directory made, name → id.
pub const NETWORKS: &str = "networks";
/// Store document: the volumes declared, name → id.
pub const VOLUMES: &str = "volumes";
/// Store document: networks being made again, name → the containers to
/// attach again. Written before the first container is detached and
/// removed once every one is attached again, so that an apply killed in
/// between (or a power cut) leaves the next apply the list to finish.
pub const REMAKES: &str = "network-remakes";

/// One account (and/or group) the host made, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MadeAccount {
    /// The resource it was made for.
    pub id: String,
    /// Its uid.
    pub uid: u32,
    /// Its gid.
    pub gid: u32,
    /// The host added the account.
    pub user: bool,
    /// The host added the group.
    pub group: bool,
}

/// [`ACCOUNTS`]: account name → what the host made of it.
pub type Accounts = BTreeMap<String, MadeAccount>;

/// [`NETWORKS`] and [`VOLUMES`]: name → the resource id.
pub type Names = BTreeMap<String, String>;

/// [`REMAKES`]: network name → the containers to attach again.
pub type Remakes = BTreeMap<String, Vec<String>>;
