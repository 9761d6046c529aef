//! `mesh-host take ID`: the operator's consent to take over a shared folder
//! that already holds data, recorded (resource id and path) in the state
//! directory under the apply lock; the next apply sets the entries.
//! Objects owned by root beneath the folder are never taken. It needs no
//! daemon: the consent is read by whichever apply comes next.

use std::path::Path;

use serde::Serialize;

use super::{Answer, Failure};
use crate::acl::folders::{Consents, CONSENTS};
use crate::declaration::{Declaration, ResourceKind};
use crate::exit::Exit;
use crate::store::Store;

/// The consent recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Taken {
    /// The shared folder's resource id.
    pub id: String,
    /// Its path.
    pub path: String,
}

impl Answer for Taken {
    fn exit(&self) -> Exit {
        Exit::Ok
    }

    fn text(&self) -> String {
        format!(
            "{}: consent recorded: the next apply takes {} over (objects owned by root beneath it are never taken); `systemctl reload mesh-host` applies now\n",
            self.id, self.path
        )
    }
}

/// Record the consent to take over the shared folder `id` of `decl` (read
/// from `file`) in the state directory `state_dir`.
pub fn take(state_dir: &Path, decl: &Declaration, file: &Path, id: &str) -> Result<Taken, Failure> {
    let path = match decl.get(id).map(|r| &r.kind) {
        Some(ResourceKind::SharedFolder(f)) => f.path.to_string(),
        Some(_) => {
            return Err(Failure::refused(format!(
                "{id} is not a shared folder in {}",
                file.display()
            )))
        }
        None => {
            return Err(Failure::refused(format!(
                "no shared folder {id} in {}",
                file.display()
            )))
        }
    };
    Store::open(state_dir)
        .map_err(|e| e.to_string())
        .and_then(|store| {
            // Not while an apply reads the consents.
            let _lock = store.lock().map_err(|e| e.to_string())?;
            let mut consents: Consents = store
                .load(CONSENTS)
                .map_err(|e| e.to_string())?
                .unwrap_or_default();
            consents.taken.insert(id.to_string(), path.clone());
            store.save(CONSENTS, &consents).map_err(|e| e.to_string())
        })
        .map_err(|e| Failure::failed(format!("cannot record the consent: {e}")))?;
    Ok(Taken {
        id: id.to_string(),
        path,
    })
}
