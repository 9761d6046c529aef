//! Files and directories decided: what is at the path now, read without
//! ever following a symbolic link, against what is declared.
//!
//! A file is compared through a descriptor opened `O_NOFOLLOW |
//! O_NONBLOCK` beneath its parent (a FIFO planted there cannot block the
//! read). It is written whole when it is missing, when a link stands at
//! its name (the link is replaced, its target never written), when its
//! content differs, or when its mode or owner differ and it has other hard
//! links (changing the inode would change it under its other names);
//! otherwise a mode or owner change is made in place. A directory is made
//! when missing and its mode or owner fixed in place; a link at its path
//! fails it (replacing it would hide what the link pointed to).
//!
//! What the plan writes is told to the builds
//! ([`Builds::plan`](crate::container_spec::Builds::plan)): a container
//! read from here on is judged by the content the plan writes.

use std::fs;
use std::io::Read;

use rustix::fs::{AtFlags, FileType, Mode as FsMode, OFlags};
use rustix::io::Errno;

use super::super::content_diff::content_diff;
use super::super::nofollow::{self, differences, kind, not_followed, walk_parents};
use super::super::plan::{
    Decision, DirectoryAct, DirectoryWork, FileAct, FileWork, Kind, Slot, Work,
};
use super::super::report::{Action, ReportLine};
use super::context::Context;
use crate::declaration::{Directory, File};

/// What a file or directory needs, in the report's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// It does not exist.
    Created,
    /// It differs; what differs.
    Updated(String),
    /// It is as declared.
    Unchanged,
}

impl Change {
    pub(crate) fn into_action(self) -> (Action, Option<String>) {
        match self {
            Change::Created => (Action::Created, None),
            Change::Updated(why) => (Action::Updated, Some(why)),
            Change::Unchanged => (Action::Unchanged, None),
        }
    }
}

/// What a declared file needs.
#[derive(Debug)]
pub(crate) struct FileFinding {
    pub(crate) change: Change,
    /// How it is made so; `None` when it is as declared.
    pub(crate) act: Option<FileAct>,
    /// Its content now, when it is a regular file.
    pub(crate) before: Option<Vec<u8>>,
}

/// What `file` needs: read only.
pub(crate) fn inspect_file(file: &File) -> Result<FileFinding, String> {
    let path = file.path.as_str();
    let declared = FileAct::Write { owner: file.owner };
    let found = |change, act, before| FileFinding {
        change,
        act,
        before,
    };
    let Some((dir, name)) = walk_parents(&file.path)? else {
        // Its parents are missing: the apply makes them, and it.
        return Ok(found(Change::Created, Some(declared), None));
    };
    let stat = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::NOENT) => return Ok(found(Change::Created, Some(declared), None)),
        Err(e) => return Err(format!("cannot inspect {path}: {e}")),
    };
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::Symlink => {
            let why =
                "was a symbolic link: replaced by the declared file, its target left untouched";
            return Ok(found(Change::Updated(why.into()), Some(declared), None));
        }
        FileType::RegularFile => {}
        other => {
            return Err(format!(
                "{path} exists and is {}, not a regular file",
                kind(other)
            ))
        }
    }
    let fd = match rustix::fs::openat(
        &dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        FsMode::empty(),
    ) {
        Ok(fd) => fd,
        // Turned into a link since the stat: the link is replaced.
        Err(Errno::LOOP) => {
            let why = "was a symbolic link: replaced by the declared file";
            return Ok(found(Change::Updated(why.into()), Some(declared), None));
        }
        Err(e) => return Err(format!("cannot open {path}: {e}")),
    };
    let stat = rustix::fs::fstat(&fd).map_err(|e| format!("cannot inspect {path}: {e}"))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(format!(
            "{path} changed under the host while it was compared"
        ));
    }
    let mut current = Vec::new();
    fs::File::from(fd)
        .read_to_end(&mut current)
        .map_err(|e| format!("cannot read {path}: {e}"))?;
    // An undeclared owner is left as it is: a rewrite keeps the old file's.
    let rewrite = FileAct::Write {
        owner: file.owner.or(Some(crate::declaration::Owner {
            uid: stat.st_uid,
            gid: stat.st_gid,
        })),
    };
    if current != file.content {
        let why = Change::Updated("content changed".into());
        return Ok(found(why, Some(rewrite), Some(current)));
    }
    let mode = file.mode.bits();
    let fixes = differences(stat.st_mode, stat.st_uid, stat.st_gid, mode, file.owner);
    if fixes.is_empty() {
        return Ok(found(Change::Unchanged, None, Some(current)));
    }
    let mut why = fixes.join(", ");
    if stat.st_nlink > 1 {
        // Changing the inode would change it under its other names too.
        why.push_str(" (rewritten: the file had other hard links)");
        return Ok(found(Change::Updated(why), Some(rewrite), Some(current)));
    }
    Ok(found(
        Change::Updated(why),
        Some(FileAct::Fix),
        Some(current),
    ))
}

/// What `dir` needs: read only. `Some` act unless it is as declared.
pub(crate) fn inspect_directory(dir: &Directory) -> Result<(Change, Option<DirectoryAct>), String> {
    let path = dir.path.as_str();
    let Some((parent, name)) = walk_parents(&dir.path)? else {
        return Ok((Change::Created, Some(DirectoryAct::Make)));
    };
    let stat = match rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::NOENT) => return Ok((Change::Created, Some(DirectoryAct::Make))),
        Err(e) => return Err(format!("cannot inspect {path}: {e}")),
    };
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::Directory => {}
        FileType::Symlink => return Err(nofollow::symlink_refused(path)),
        other => {
            return Err(format!(
                "{path} exists and is {}, not a directory",
                kind(other)
            ))
        }
    }
    let fd = nofollow::open_dir(&parent, name).map_err(|e| not_followed(path, e))?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| format!("cannot inspect {path}: {e}"))?;
    let fixes = differences(
        stat.st_mode,
        stat.st_uid,
        stat.st_gid,
        dir.mode.bits(),
        dir.owner,
    );
    if fixes.is_empty() {
        return Ok((Change::Unchanged, None));
    }
    Ok((Change::Updated(fixes.join(", ")), Some(DirectoryAct::Fix)))
}

/// The group a path the plan makes will have: the declared owner's, else
/// the applier's.
fn group_made(owner: Option<crate::declaration::Owner>) -> u32 {
    owner.map_or_else(|| rustix::process::getegid().as_raw(), |o| o.gid)
}

/// A file resource's decision: its line (with the diff of its content,
/// unless it is secret), and what the plan writes told to the builds.
pub(super) fn file(d: &mut Context<'_>, slot: Slot, id: &str, file: &File) -> Decision {
    let finding = match inspect_file(file) {
        Ok(finding) => finding,
        Err(e) => {
            let line = ReportLine::new(id, Action::Failed, Some(e));
            return Decision::new(slot, Kind::File, line, Work::Nothing);
        }
    };
    let Some(act) = finding.act else {
        let line = ReportLine::new(id, Action::Unchanged, None);
        return Decision::new(slot, Kind::File, line, Work::Nothing);
    };
    let path = file.path.as_path();
    // What `restart-on` it reads from here on.
    d.changed_files
        .insert(id.to_string(), file.path.as_str().to_string());
    match act {
        FileAct::Write { owner } => {
            // A new file (or one in place of a link) is made with the
            // declared owner, else the applier's; a rewrite keeps its own.
            let gid = if finding.before.is_none() {
                Some(group_made(owner))
            } else {
                file.owner.map(|o| o.gid)
            };
            d.builds
                .plan(|planned| planned.write_file(path, &file.content, gid));
        }
        FileAct::Fix => {
            if let Some(owner) = file.owner {
                d.builds.plan(|planned| planned.set_group(path, owner.gid));
            }
        }
    }
    let (action, reason) = finding.change.into_action();
    let mut line = ReportLine::new(id, action, reason);
    let shown = content_diff(file, finding.before.as_deref());
    line.diff = shown.diff;
    let work = Work::File(FileWork {
        file: file.clone(),
        act,
    });
    let mut decision = Decision::new(slot, Kind::File, line, work);
    decision.shown = shown.note;
    decision
}

/// A directory resource's decision.
pub(super) fn directory(d: &Context<'_>, slot: Slot, id: &str, dir: &Directory) -> Decision {
    let (change, act) = match inspect_directory(dir) {
        Ok(found) => found,
        Err(e) => {
            let line = ReportLine::new(id, Action::Failed, Some(e));
            return Decision::new(slot, Kind::Directory, line, Work::Nothing);
        }
    };
    let path = dir.path.as_path();
    match act {
        Some(DirectoryAct::Make) => d
            .builds
            .plan(|planned| planned.make_dir(path, Some(group_made(dir.owner)))),
        Some(DirectoryAct::Fix) => {
            if let Some(owner) = dir.owner {
                d.builds.plan(|planned| planned.set_group(path, owner.gid));
            }
        }
        None => {}
    }
    let (action, reason) = change.into_action();
    let line = ReportLine::new(id, action, reason);
    let work = match act {
        Some(act) => Work::Directory(DirectoryWork {
            dir: dir.clone(),
            act,
        }),
        None => Work::Nothing,
    };
    Decision::new(slot, Kind::Directory, line, work)
}
