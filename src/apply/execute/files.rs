//! Files and directories written as decided, never through a symbolic
//! link ([`super::super::nofollow`]): a file written whole through a
//! temporary file renamed over its name (which replaces a link planted at
//! the name, never its target), or its mode and owner set on a descriptor
//! opened `O_NOFOLLOW`; a directory made private (0700) until its owner
//! and mode are set on its descriptor.

use rustix::fs::{FileType, Mode as FsMode, OFlags};
use rustix::io::Errno;

use super::super::nofollow::{self, not_followed, open_parent, set_owner_and_mode, write_new};
use super::super::plan::{Decision, DirectoryAct, DirectoryWork, FileAct, FileWork};
use super::outcome::Outcome;

/// What a decision came to when carried out as decided.
fn as_decided(decision: &Decision) -> Outcome {
    Outcome::new(decision.line.action.clone(), decision.line.reason.clone())
}

/// Write (or fix) a declared file as decided.
pub(super) fn file(work: &FileWork, decision: &Decision) -> Outcome {
    match write(work) {
        Ok(()) => as_decided(decision),
        Err(e) => Outcome::failed_at(0, e),
    }
}

fn write(work: &FileWork) -> Result<(), String> {
    let file = &work.file;
    let path = file.path.as_str();
    let mode = file.mode.bits();
    let (dir, name) = open_parent(&file.path)?;
    match work.act {
        FileAct::Write { owner } => write_new(&dir, path, name, &file.content, mode, owner),
        FileAct::Fix => {
            let fd = match rustix::fs::openat(
                &dir,
                name,
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
                FsMode::empty(),
            ) {
                Ok(fd) => fd,
                // A link planted since it was decided: replaced by the
                // declared file, as a link found is.
                Err(Errno::LOOP) => {
                    return write_new(&dir, path, name, &file.content, mode, file.owner)
                }
                Err(e) => return Err(format!("cannot open {path}: {e}")),
            };
            let stat = rustix::fs::fstat(&fd).map_err(|e| format!("cannot inspect {path}: {e}"))?;
            if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
                return Err(format!(
                    "{path} changed under the host since it was decided"
                ));
            }
            set_owner_and_mode(std::os::fd::AsFd::as_fd(&fd), path, mode, file.owner)
        }
    }
}

/// Make (or fix) a declared directory as decided.
pub(super) fn directory(work: &DirectoryWork, decision: &Decision) -> Outcome {
    match make(work) {
        Ok(()) => as_decided(decision),
        Err(e) => Outcome::failed_at(0, e),
    }
}

fn make(work: &DirectoryWork) -> Result<(), String> {
    let dir = &work.dir;
    let path = dir.path.as_str();
    let mode = dir.mode.bits();
    let (parent, name) = open_parent(&dir.path)?;
    if work.act == DirectoryAct::Make {
        // Private until its owner and mode are set.
        match rustix::fs::mkdirat(&parent, name, FsMode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(format!("cannot create {path}: {e}")),
        }
    }
    let fd = nofollow::open_dir(&parent, name).map_err(|e| not_followed(path, e))?;
    set_owner_and_mode(std::os::fd::AsFd::as_fd(&fd), path, mode, dir.owner)?;
    if work.act == DirectoryAct::Make {
        rustix::fs::fsync(&parent).map_err(|e| format!("cannot sync the parent of {path}: {e}"))?;
    }
    Ok(())
}
