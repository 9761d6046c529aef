//! What the store keeps about shared folders: the folders the host keeps
//! entries on (for the watch, and for removal), and the operator's consents
//! to take over a folder that held data (`mesh-host take ID`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Store document of the folders the host keeps entries on.
pub const SHARED_FOLDERS: &str = "shared-folders";
/// Store document of the consents `mesh-host take` recorded.
pub const CONSENTS: &str = "shared-folder-consents";

/// The folders the host keeps entries on, by resource id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagedFolders {
    /// Resource id → folder.
    pub folders: BTreeMap<String, ManagedFolder>,
}

/// One folder the host took.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagedFolder {
    /// Its absolute path.
    pub path: String,
    /// The entries it keeps: uid and whether it may write.
    pub access: Vec<FolderAccess>,
    /// The resource's module, for the journal (`MESH_MODULE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// Uids whose entries are still to be taken away (a sweep could not
    /// finish): swept again at each apply until it does. A folder no
    /// longer declared keeps its record, with no `access`, until then.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub narrowing: Vec<u32>,
}

/// One entry of a managed folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FolderAccess {
    /// The identity's uid.
    pub uid: u32,
    /// Read-write (`true`) or read-only.
    pub write: bool,
}

impl ManagedFolder {
    /// The `(uid, write)` pairs.
    pub fn pairs(&self) -> Vec<(u32, bool)> {
        self.access.iter().map(|a| (a.uid, a.write)).collect()
    }
}

/// Consents to take over folders that held data, by resource id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Consents {
    /// Resource id → the path consented to (a consent does not follow the
    /// resource to another path).
    pub taken: BTreeMap<String, String>,
}
