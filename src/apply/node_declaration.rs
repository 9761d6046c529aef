//! The node's one declaration: the file `--declaration` names
//! (`/etc/mesh-host/declaration.json` by default).
//!
//! `apply FILE` (through the daemon or `--local`) validates FILE, installs
//! its bytes there and converges to it; the daemon's start, reload and
//! reconcile, `run`, `plan` and `status` all work from that file, so what
//! one `apply` applied stays applied. Installing and reading happen under
//! the apply lock ([`Applier::install_and_apply`](super::Applier::install_and_apply),
//! [`Applier::apply_node_declaration`](super::Applier::apply_node_declaration)):
//! the file on disk is always the declaration the last apply on this
//! machine converged to, whichever process applied it.
//!
//! The file is written atomically (temporary file, fsync, rename, fsync of
//! the directory) with mode 0600, as the packages ship it; a missing
//! `/etc/mesh-host` is made 0755 whatever the process's umask (the service
//! runs with `UMask=0077`).

use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

use crate::declaration::{self, Declaration};

/// Where the node's declaration lives unless `--declaration` says otherwise.
pub const DEFAULT_PATH: &str = "/etc/mesh-host/declaration.json";

/// Mode of the installed declaration (it may carry secrets in `env`).
pub const FILE_MODE: u32 = 0o600;

/// Mode of a directory made to hold it.
pub const DIR_MODE: u32 = 0o755;

/// Why the node's declaration could not be used; nothing was applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeclarationFileError {
    /// The file cannot be read (absent, unreadable).
    #[error("cannot read {path}: {reason}")]
    Unreadable {
        /// The file.
        path: String,
        /// The I/O error.
        reason: String,
    },
    /// The file is not a valid declaration.
    #[error("{path} is refused:\n{refusal}")]
    Refused {
        /// The file.
        path: String,
        /// Every problem, one per line.
        refusal: String,
    },
    /// The file declares nothing, and resources are applied: it would
    /// wipe the node (see [`super::empty`]).
    #[error("{path}: {refused}")]
    Empty {
        /// The file.
        path: String,
        /// Why, with how many resources it would remove.
        refused: super::empty::EmptyRefused,
    },
    /// FILE could not be installed as the node's declaration.
    #[error("cannot install the declaration as {path}: {reason}; nothing was changed")]
    NotInstalled {
        /// The node's declaration file.
        path: String,
        /// The I/O error.
        reason: String,
    },
}

/// Read and validate the node's declaration at `path`.
pub fn read(path: &Path) -> Result<Declaration, DeclarationFileError> {
    let bytes = declaration::input::read(path).map_err(|e| DeclarationFileError::Unreadable {
        path: path.display().to_string(),
        reason: e.reason(),
    })?;
    declaration::parse(&bytes).map_err(|r| DeclarationFileError::Refused {
        path: path.display().to_string(),
        refusal: r.to_string(),
    })
}

/// Install `bytes` (already validated) as the node's declaration at `path`:
/// atomically, mode [`FILE_MODE`], missing parents made with [`DIR_MODE`].
/// A file that already holds exactly these bytes is left as it is.
pub fn install(path: &Path, bytes: &[u8]) -> Result<(), DeclarationFileError> {
    let failed = |e: io::Error| DeclarationFileError::NotInstalled {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    if let Some(parent) = path.parent() {
        make_parents(parent).map_err(failed)?;
    }
    // Read as every declaration is read: a regular file only, bounded (a
    // FIFO put at the path would otherwise hang the apply here).
    if let Ok(current) = crate::declaration::input::read(path) {
        if current == bytes {
            let mode = std::fs::metadata(path)
                .map_err(failed)?
                .permissions()
                .mode()
                & 0o7777;
            if mode != FILE_MODE {
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(FILE_MODE))
                    .map_err(failed)?;
            }
            return Ok(());
        }
    }
    crate::store::write_atomic(path, bytes, FILE_MODE).map_err(failed)
}

/// `mkdir -p -m 0755`: every directory made gets [`DIR_MODE`] exactly (the
/// umask would narrow it); existing ones are left as they are.
fn make_parents(dir: &Path) -> io::Result<()> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        make_parents(parent)?;
    }
    match std::fs::DirBuilder::new().mode(DIR_MODE).create(dir) {
        Ok(()) => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).expect("meta").permissions().mode() & 0o7777
    }

    #[test]
    fn installs_atomically_with_its_modes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("etc/mesh-host/declaration.json");
        // (The umask is the process's: the service's UMask=0077 is proven
        // on the node, tests/daemon_node.rs.)
        install(&path, b"{\"declaration\":1,\"resources\":[]}").expect("installed");
        assert_eq!(mode(&path), FILE_MODE);
        assert_eq!(mode(&dir.path().join("etc/mesh-host")), DIR_MODE);
        assert_eq!(mode(&dir.path().join("etc")), DIR_MODE);
        // Replaced, not appended; no temporary file left.
        install(&path, b"{\"declaration\":1,\"resources\":[ ]}").expect("replaced");
        assert_eq!(
            std::fs::read(&path).expect("read"),
            b"{\"declaration\":1,\"resources\":[ ]}"
        );
        let names: Vec<_> = std::fs::read_dir(path.parent().expect("parent"))
            .expect("readdir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        // The same bytes again: a widened mode is put back.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        install(&path, b"{\"declaration\":1,\"resources\":[ ]}").expect("same");
        assert_eq!(mode(&path), FILE_MODE);
    }

    #[test]
    fn read_names_the_file_and_the_problem() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("d.json");
        let e = read(&path).expect_err("absent");
        assert!(matches!(&e, DeclarationFileError::Unreadable { .. }), "{e}");
        assert!(e.to_string().contains("d.json"), "{e}");
        std::fs::write(&path, b"{\"declaration\":1,\"resources\":[{\"id\":\"x\"}]}")
            .expect("write");
        let e = read(&path).expect_err("refused");
        assert!(matches!(&e, DeclarationFileError::Refused { .. }), "{e}");
        std::fs::write(&path, b"{\"declaration\":1,\"resources\":[]}").expect("write");
        assert!(read(&path).expect("valid").resources.is_empty());
        // The daemon's start and reload read only a regular file: a FIFO
        // there is refused at once (it used to wait for a writer).
        let fifo = dir.path().join("fifo.json");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        let e = read(&fifo).expect_err("a FIFO");
        assert_eq!(
            e.to_string(),
            format!(
                "cannot read {}: is a FIFO, not a regular file: a declaration is read from a regular file (or `-`, standard input)",
                fifo.display()
            )
        );
    }

    #[test]
    fn a_parent_that_is_a_file_fails_naming_the_declaration() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("etc"), b"x").expect("write");
        let e = install(&dir.path().join("etc/declaration.json"), b"{}").expect_err("file parent");
        assert!(
            matches!(&e, DeclarationFileError::NotInstalled { .. }),
            "{e}"
        );
        assert!(e.to_string().contains("nothing was changed"), "{e}");
    }
}
