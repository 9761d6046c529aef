//! Shared folders carried out as decided: made when missing (0700,
//! root's, until the entries give the identities their access), the
//! entries of identities no longer given access taken away, the entries
//! set where missing, the record of the folder kept
//! ([`SHARED_FOLDERS`]); and folders no longer declared let go, their
//! data left.
//!
//! From the first change until the new entries are recorded, the daemon's
//! watch acts on nothing here ([`Watcher::hold`](crate::acl::watch::Watcher::hold)):
//! it must never put back what an apply takes away. What a sweep could
//! not finish is recorded and taken again at the next apply.

use std::os::fd::OwnedFd;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::super::decide::{describe, refusal, said, sweep, taken_away, unfinished, OwnedOp};
use super::super::nofollow::open_parent;
use super::super::plan::{Decision, FolderWork};
use super::super::report::Action;
use super::outcome::Outcome;
use super::tools::Tools;
use crate::acl::folders::{Consents, ManagedFolder, ManagedFolders, CONSENTS, SHARED_FOLDERS};
use crate::acl::walk;
use crate::acl::watch;
use crate::declaration::AbsPath;

/// Hold the daemon's watch (if this process has one) until the hold is
/// dropped. Waited for off the runtime's workers.
async fn hold_watch(tools: &Tools) -> Option<watch::Hold> {
    let watcher = tools.folder_watch.clone()?;
    let theirs = watcher.clone();
    match tokio::task::spawn_blocking(move || theirs.hold()).await {
        Ok(hold) => Some(hold),
        // Never applied without it.
        Err(_) => Some(watcher.hold()),
    }
}

/// Make a missing folder (and its parents, as `mkdir -p`), private to root
/// until the entries give the identities their access. Returns it opened,
/// and whether it was made here (`false`: it appeared meanwhile).
pub(crate) fn make(at: &AbsPath) -> Result<(OwnedFd, bool), String> {
    let path = at.as_str();
    let (parent, name) = open_parent(at)?;
    let made = match rustix::fs::mkdirat(&parent, name, Mode::from_raw_mode(0o700)) {
        Ok(()) => true,
        Err(Errno::EXIST) => false,
        Err(e) => return Err(format!("cannot create {path}: {e}")),
    };
    let fd = rustix::fs::openat(
        &parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::LOOP | Errno::NOTDIR => format!("{path} is a symbolic link or not a directory: a shared folder is never reached through a link"),
        e => format!("cannot open {path}: {e}"),
    })?;
    rustix::fs::fsync(&parent).map_err(|e| format!("cannot sync the parent of {path}: {e}"))?;
    Ok((fd, made))
}

fn docs(tools: &Tools) -> Result<(ManagedFolders, Consents), String> {
    let store = &tools.store;
    match (store.load(SHARED_FOLDERS), store.load(CONSENTS)) {
        (Ok(m), Ok(c)) => Ok((m.unwrap_or_default(), c.unwrap_or_default())),
        (Err(e), _) | (_, Err(e)) => Err(e.to_string()),
    }
}

/// Carry out a shared folder's work.
pub(super) async fn folder(tools: &Tools, work: &FolderWork, decision: &Decision) -> Outcome {
    let id = work.id.as_str();
    let path = work.path.as_str();
    let (mut managed, consents) = match docs(tools) {
        Ok(docs) => docs,
        Err(e) => return Outcome::failed(e),
    };
    let Ok(at) = AbsPath::try_from(path) else {
        return Outcome::failed(format!("{path} is not an absolute path"));
    };
    let mut step = 0;
    let root = if work.make {
        step += 1;
        match make(&at) {
            Ok((fd, true)) => fd,
            // Made by someone else since it was decided: what is there is
            // checked like any folder found.
            Ok((fd, false)) => match refusal(&fd, id, path, &consents) {
                Ok(None) => fd,
                Ok(Some(reason)) => {
                    let mut refused = Outcome::new(Action::Other("refused".into()), Some(reason));
                    refused.failed_step = Some(0);
                    return refused;
                }
                Err(e) => return Outcome::failed_at(0, e),
            },
            Err(e) => return Outcome::failed_at(0, e),
        }
    } else {
        match walk::open_path(path) {
            Ok(fd) => fd,
            Err(e) => return Outcome::failed(format!("cannot open {path}: {e}")),
        }
    };
    // From the first change until the new entries are recorded, the
    // watch acts on nothing here.
    let _hold = hold_watch(tools).await;
    let mut notes = Vec::new();
    let mut narrowing = Vec::new();
    if !work.take_away.is_empty() {
        let dropped = work.take_away.clone();
        let swept = sweep(&root, OwnedOp::Unset(dropped.clone())).await;
        match taken_away(&dropped, &swept) {
            Ok(note) => notes.push(note),
            Err(note) => {
                notes.push(note);
                narrowing = dropped;
            }
        }
        step += 1;
    }
    let changed;
    if let Some(wanted) = &work.set {
        let swept = sweep(&root, OwnedOp::Set(wanted.clone())).await;
        changed = swept.changed;
        if work.kept && swept.changed > 0 {
            // A folder the host keeps: what the sweep changed had been
            // removed or narrowed since (by an application, or by the
            // creation mode of something new while no watch ran). One
            // event with the count.
            let last = watch::absolute(path, swept.last_changed.as_deref().unwrap_or("."));
            watch::log_restored(id, work.module.as_deref(), &last, swept.changed as u64);
        }
        // One object the host cannot set (a write lease, a full inode) is
        // reported here; the rest is done and the apply goes on.
        notes.extend(describe(&swept));
    } else {
        // Nothing to set: what the decision counted is what it says.
        notes.extend(work.counted.iter().cloned());
        return finish(tools, work, &mut managed, narrowing, decision, notes, step);
    }
    let action = if work.make {
        Action::Created
    } else if changed == 0 {
        Action::Unchanged
    } else {
        Action::Updated
    };
    managed.folders.insert(
        id.to_string(),
        ManagedFolder {
            path: path.to_string(),
            access: work.access.clone(),
            module: work.module.clone(),
            narrowing,
        },
    );
    if let Err(e) = tools.store.save(SHARED_FOLDERS, &managed) {
        notes.push(format!("cannot record the folder: {e}"));
        return Outcome::failed_at(
            step,
            said(work.grants.as_deref(), &notes).unwrap_or_default(),
        );
    }
    Outcome::new(action, said(work.grants.as_deref(), &notes))
}

/// The folder needed no entries set: its record kept, its line as
/// decided (with what taking entries away said).
fn finish(
    tools: &Tools,
    work: &FolderWork,
    managed: &mut ManagedFolders,
    narrowing: Vec<u32>,
    decision: &Decision,
    notes: Vec<String>,
    step: usize,
) -> Outcome {
    let entry = ManagedFolder {
        path: work.path.clone(),
        access: work.access.clone(),
        module: work.module.clone(),
        narrowing,
    };
    if managed.folders.get(&work.id) != Some(&entry) {
        managed.folders.insert(work.id.clone(), entry);
        if let Err(e) = tools.store.save(SHARED_FOLDERS, managed) {
            return Outcome::failed_at(step, format!("cannot record the folder: {e}"));
        }
    }
    Outcome::new(
        decision.line.action.clone(),
        said(work.grants.as_deref(), &notes),
    )
}

/// Take the host's entries away from a folder no longer declared (or
/// declared at another path); its data stays. A folder whose entries
/// could not all be taken away stays recorded (with no access, so the
/// watch lets it go) and is swept again at the next apply.
pub(super) async fn remove(tools: &Tools, id: &str, m: &ManagedFolder) -> Outcome {
    let (mut managed, _) = match docs(tools) {
        Ok(docs) => docs,
        Err(e) => return Outcome::failed(e),
    };
    // Until the folder's removal is recorded, the watch acts on nothing
    // (it still watches it).
    let _hold = hold_watch(tools).await;
    let mut uids: Vec<u32> = m.access.iter().map(|a| a.uid).collect();
    uids.extend(&m.narrowing);
    uids.sort_unstable();
    uids.dedup();
    let outcome = match walk::open_path(&m.path) {
        Ok(root) => {
            let swept = sweep(&root, OwnedOp::Unset(uids.clone())).await;
            match unfinished(&swept) {
                Some(left) => Err(format!(
                    "entries not all taken away from {}: {left}; kept on record and taken again at the next apply",
                    m.path
                )),
                None => Ok(format!(
                    "entries taken away from {} object(s) of {}, data left",
                    swept.changed, m.path
                )),
            }
        }
        Err(Errno::NOENT) => Ok(format!("{} is gone", m.path)),
        Err(e) => Err(format!(
            "cannot open {} to take the entries away: {e}; kept on record and taken again at the next apply",
            m.path
        )),
    };
    let outcome = match outcome {
        Ok(reason) => {
            managed.folders.remove(id);
            Outcome::new(Action::Removed, Some(reason))
        }
        Err(reason) => {
            let entry = managed.folders.entry(id.to_string()).or_insert(m.clone());
            entry.access.clear();
            entry.narrowing = uids;
            Outcome::failed_at(0, reason)
        }
    };
    if let Err(e) = tools.store.save(SHARED_FOLDERS, &managed) {
        let mut outcome = outcome;
        outcome
            .records
            .push(super::outcome::Record::Warning(format!(
                "cannot record the shared folders: {e}"
            )));
        return outcome;
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::make;
    use crate::declaration::AbsPath;

    #[test]
    fn a_folder_that_appears_before_it_is_made_is_not_taken_as_made() {
        // The race itself (another process's mkdir between the host's
        // open and its own) needs the scheduler's help; what the host does
        // when it loses it is this: the folder found is reported as not
        // made here, so the holds-data and root-owned checks apply to it.
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("share");
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::write(dir.join("data"), "x").expect("data");
        let at = AbsPath::try_from(dir.to_str().expect("utf-8")).expect("path");
        let (_, made) = make(&at).expect("open");
        assert!(!made);
        let fresh =
            AbsPath::try_from(tmp.path().join("new").to_str().expect("utf-8")).expect("path");
        let (_, made) = make(&fresh).expect("make");
        assert!(made);
        // A link at the name is never followed.
        std::os::unix::fs::symlink(&dir, tmp.path().join("link")).expect("symlink");
        let link =
            AbsPath::try_from(tmp.path().join("link").to_str().expect("utf-8")).expect("path");
        assert!(make(&link).expect_err("a link").contains("symbolic link"));
    }
}
