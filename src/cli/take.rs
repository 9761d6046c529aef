//! `mesh-host take ID`: the operator's consent to take over a shared folder
//! that already holds data. It records the consent (resource id and path)
//! in the state directory under the apply lock; the next apply sets the
//! entries. Objects owned by root beneath the folder are never taken.

use serde::Serialize;

use super::output::print_json;
use super::{Cli, EXIT_FAILED, EXIT_OK, EXIT_REFUSED};
use crate::acl::folders::{Consents, CONSENTS};
use crate::declaration::{self, ResourceKind};
use crate::store::Store;

#[derive(Debug, Serialize)]
struct Taken<'a> {
    id: &'a str,
    path: &'a str,
}

/// Run the command.
pub fn run(cli: &Cli, id: &str, json: bool) -> u8 {
    let file = &cli.declaration;
    let bytes = match super::check::read_or_refuse(file) {
        Ok(b) => b,
        Err(code) => return code,
    };
    let decl = match declaration::parse(&bytes) {
        Ok(d) => d,
        Err(refusal) => {
            crate::errln!("mesh-host: {} is refused:\n{refusal}", file.display());
            return EXIT_REFUSED;
        }
    };
    let path = match decl.get(id).map(|r| &r.kind) {
        Some(ResourceKind::SharedFolder(f)) => f.path.to_string(),
        Some(_) => {
            crate::errln!(
                "mesh-host: {id} is not a shared folder in {}",
                file.display()
            );
            return EXIT_REFUSED;
        }
        None => {
            crate::errln!("mesh-host: no shared folder {id} in {}", file.display());
            return EXIT_REFUSED;
        }
    };
    let recorded = Store::open(&cli.state_dir)
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
        });
    if let Err(e) = recorded {
        crate::errln!("mesh-host: cannot record the consent: {e}");
        return EXIT_FAILED;
    }
    if json {
        print_json(&Taken { id, path: &path });
    } else {
        crate::outln!("{id}: consent recorded: the next apply takes {path} over (objects owned by root beneath it are never taken); `systemctl reload mesh-host` applies now");
    }
    EXIT_OK
}
