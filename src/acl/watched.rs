//! What the shared-folder watch holds and does: the folders, one inotify
//! watch per directory (kept as its parent's watch, its name, its device
//! and inode: never its path), and what an event does to them.
//!
//! A writer chooses how many events it raises and how much work each
//! asks for, so the work is bounded per folder, not per event:
//!
//! - a directory moved within the folder is already watched (its inode is
//!   known): only its link is changed, its tree is not swept again;
//! - a new directory (made, or moved in from elsewhere) is swept at once
//!   while the folder's sweeps have visited fewer than [`PROMPT_BUDGET`]
//!   entries in the current [`RESWEEP_INTERVAL`]; past that, or when the
//!   kernel lost events, a sweep of the whole folder is owed, and owed
//!   sweeps are one, run at most once per [`RESWEEP_INTERVAL`];
//! - what it says is rate-limited per folder and kind ([`super::notes`]).
//!
//! Watches are root's, counted against `fs.inotify.max_user_watches` with
//! PID 1's and every root service's: the watch holds at most
//! [`WATCH_BUDGET`] in all, an equal share per folder. Directories past a
//! folder's share are not watched, and the folder is then kept by a sweep
//! of the whole of it every [`PERIODIC_MIN`] or more (never more than 5%
//! of the time); a folder within its share is never swept on a timer. A
//! directory moved out of its folder loses its watch, and so does all
//! beneath it: at its `IN_MOVE_SELF`, and at each whole sweep, which drops
//! the watches it did not meet.

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;

use super::folders::ManagedFolders;
use super::notes::{Kind, Notes, Who};
use super::tree::{self, FdCache, Link, CACHED_FDS};
use super::walk::{self, Child, Op, Wanted, SWEEP_BOUND};

/// Owed sweeps of a folder run at most once in this time.
pub const RESWEEP_INTERVAL: Duration = super::notes::INTERVAL;

/// Entries the sweeps of new directories of one folder visit at once in a
/// [`RESWEEP_INTERVAL`]; past it, what is new waits for the owed sweep.
pub const PROMPT_BUDGET: usize = 20_000;

/// inotify watches the shared folders hold in all (the daemon's other
/// watch, its window records' directory, is one more).
pub const WATCH_BUDGET: usize = 8_000;

/// A folder not all watched is swept whole at most this often, and then
/// never more than 5% of the time (20 times its last sweep's length).
pub const PERIODIC_MIN: Duration = Duration::from_secs(30);

/// What the watch keeps of one folder, for `status`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct FolderWatch {
    /// The resource id.
    pub id: String,
    /// Its path.
    pub path: String,
    /// Directories watched.
    pub watched: usize,
    /// Its share of `WATCH_BUDGET`.
    pub share: usize,
    /// Directories the last whole sweep met that are not watched.
    pub unwatched: usize,
    /// When some are not: seconds between sweeps of the whole folder.
    pub sweep_every_secs: Option<u64>,
}

/// One watched folder.
struct Folder {
    id: String,
    path: String,
    root: OwnedFd,
    /// The folder's filesystem: the watch never leaves it.
    dev: u64,
    module: Option<String>,
    wanted: Wanted,
    notes: Notes,
    sweeps: Sweeps,
    /// Watches it holds, and directories met that are not watched (since
    /// the last whole sweep began).
    watched: usize,
    unwatched: usize,
    /// Why the last directory was not watched.
    why: String,
    /// Time between whole sweeps while some are not watched.
    every: Option<Duration>,
}

/// The sweeps of one folder the watch runs, and the one it owes.
#[derive(Debug)]
struct Sweeps {
    /// When the current interval of prompt sweeps began, and the entries
    /// they visited in it.
    window: Instant,
    spent: usize,
    /// A sweep of the whole folder is owed, due then.
    due: Option<Instant>,
    /// When the last sweep of the whole folder ran.
    last: Instant,
}

impl Sweeps {
    fn new(now: Instant) -> Sweeps {
        Sweeps {
            window: now,
            spent: 0,
            due: None,
            last: now,
        }
    }

    /// Entries a prompt sweep may still visit now.
    fn left(&mut self, now: Instant) -> usize {
        if now.duration_since(self.window) >= RESWEEP_INTERVAL {
            self.window = now;
            self.spent = 0;
        }
        PROMPT_BUDGET.saturating_sub(self.spent)
    }

    /// Owe a sweep of the whole folder: one, at most once per interval.
    fn owe(&mut self, now: Instant) {
        let at = now.max(self.last + RESWEEP_INTERVAL);
        self.due = Some(self.due.map_or(at, |due| due.min(at)));
    }
}

/// One watched directory: its folder and how to reach it again (its
/// parent's watch, its name, its device and inode; never its path).
struct Watched {
    folder: usize,
    link: Link<i32>,
    /// The last whole sweep of its folder that met it.
    seen: u64,
}

/// The watch state: the inotify descriptor and what each watch is.
pub struct State {
    inotify: OwnedFd,
    folders: Vec<Folder>,
    /// Watch descriptor → directory.
    dirs: HashMap<i32, Watched>,
    /// Device and inode → watch descriptor.
    inodes: HashMap<(u64, u64), i32>,
    /// A few directories' descriptors, by watch descriptor.
    cache: FdCache<i32>,
    /// The document it was built from.
    source: ManagedFolders,
    /// Whole sweeps begun so far.
    passes: u64,
    /// Each folder's share of [`WATCH_BUDGET`].
    share: usize,
    /// Where `status` reads what is kept; `dirty` when it is to be told.
    shown: Arc<Mutex<Vec<FolderWatch>>>,
    dirty: bool,
}

impl State {
    /// Open the recorded folders and watch them (sweeping each once). A
    /// folder whose entries are being taken away (no access left) is not
    /// watched.
    pub fn load(managed: ManagedFolders, shown: Arc<Mutex<Vec<FolderWatch>>>) -> Option<State> {
        let inotify = match inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC) {
            Ok(fd) => fd,
            Err(e) => {
                tracing::error!("shared folders are not watched between applies: inotify: {e}");
                return None;
            }
        };
        let mut st = State {
            inotify,
            folders: Vec::new(),
            dirs: HashMap::new(),
            inodes: HashMap::new(),
            cache: FdCache::new(CACHED_FDS),
            source: managed.clone(),
            passes: 0,
            share: WATCH_BUDGET,
            shown,
            dirty: true,
        };
        let now = Instant::now();
        for (id, folder) in managed.folders {
            if folder.access.is_empty() {
                continue;
            }
            let opened = walk::open_path(&folder.path)
                .and_then(|root| rustix::fs::fstat(&root).map(|stat| (root, stat.st_dev)));
            let (root, dev) = match opened {
                Ok(found) => found,
                Err(e) => {
                    tracing::warn!("shared folder {id}: not watched: {e}");
                    continue;
                }
            };
            st.folders.push(Folder {
                id,
                path: folder.path.clone(),
                root,
                dev,
                module: folder.module.clone(),
                wanted: Wanted::of(&folder.pairs()),
                notes: Notes::default(),
                sweeps: Sweeps::new(now),
                watched: 0,
                unwatched: 0,
                why: String::new(),
                every: None,
            });
        }
        st.share = WATCH_BUDGET / st.folders.len().max(1);
        for index in 0..st.folders.len() {
            st.sweep_folder(index);
        }
        Some(st)
    }

    /// The inotify descriptor, to wait on.
    pub fn inotify(&self) -> &OwnedFd {
        &self.inotify
    }

    /// Whether it still watches what `managed` records: the same folders,
    /// each still the directory found at its path (not one removed and
    /// made again, which would leave the watches on the old one).
    pub fn current(&self, managed: &ManagedFolders) -> bool {
        self.source == *managed
            && self.folders.iter().all(|f| {
                let (Ok(now), Ok(held)) = (
                    walk::open_path(&f.path).and_then(|fd| rustix::fs::fstat(&fd)),
                    rustix::fs::fstat(&f.root),
                ) else {
                    return false;
                };
                now.st_dev == held.st_dev && now.st_ino == held.st_ino
            })
    }

    /// When the watch next has something to do without an event: counted
    /// messages to log, or an owed sweep. `None`: nothing (it sleeps).
    pub fn next_due(&self) -> Option<Instant> {
        self.folders
            .iter()
            .flat_map(|f| [f.notes.next_due(), f.sweeps.due])
            .flatten()
            .min()
    }

    /// Run the sweeps that are due and log the messages that are.
    pub fn tick(&mut self) {
        let now = Instant::now();
        for index in 0..self.folders.len() {
            if self.folders[index].sweeps.due.is_some_and(|due| due <= now) {
                self.sweep_folder(index);
            }
        }
        self.flush(false);
        self.publish();
    }

    /// Tell `status` what is kept, when that changed.
    pub fn publish(&mut self) {
        if self.dirty {
            self.dirty = false;
            let shown: Vec<FolderWatch> = self
                .folders
                .iter()
                .map(|f| FolderWatch {
                    id: f.id.clone(),
                    path: f.path.clone(),
                    watched: f.watched,
                    share: self.share,
                    unwatched: f.unwatched,
                    sweep_every_secs: f.every.map(|e| e.as_secs()),
                })
                .collect();
            *self.shown.lock().unwrap_or_else(PoisonError::into_inner) = shown;
        }
    }

    /// Log what is counted (everything, when `all`).
    pub fn flush(&mut self, all: bool) {
        for folder in &mut self.folders {
            let who = Who {
                id: &folder.id,
                module: folder.module.as_deref(),
            };
            folder.notes.flush(who, all);
        }
    }

    /// The path of watched directory `wd` (and `name` beneath it) to show.
    fn shown(&self, wd: Option<i32>, name: Option<&[u8]>, folder: usize) -> String {
        let rel = tree::shown(wd, name, |k| self.dirs.get(&k).map(|w| &w.link));
        absolute(&self.folders[folder].path, &rel)
    }

    /// Count `kind` on folder `index` (the last case at `path`).
    fn note(&mut self, index: usize, kind: Kind, n: u64, path: &str, what: &str) {
        let folder = &mut self.folders[index];
        let who = Who {
            id: &folder.id,
            module: folder.module.as_deref(),
        };
        folder.notes.note(who, kind, n, path, what);
    }

    /// Sweep folder `index` from its top, whole (owed sweeps are this).
    fn sweep_folder(&mut self, index: usize) {
        let now = Instant::now();
        self.passes += 1;
        self.dirty = true;
        let folder = &mut self.folders[index];
        folder.sweeps.due = None;
        folder.sweeps.last = now;
        folder.unwatched = 0;
        let Ok(top) = rustix::io::fcntl_dupfd_cloexec(&folder.root, 0) else {
            return;
        };
        let (_, truncated) = self.sweep(index, top.as_fd(), None, true, SWEEP_BOUND);
        if !truncated {
            // What it did not meet is not in the folder any more.
            let pass = self.passes;
            let gone: Vec<i32> = self
                .dirs
                .iter()
                .filter(|(_, w)| w.folder == index && w.seen != pass)
                .map(|(wd, _)| *wd)
                .collect();
            for wd in gone {
                self.unwatch(wd);
            }
        }
        let took = now.elapsed();
        let folder = &mut self.folders[index];
        if folder.unwatched == 0 {
            folder.every = None;
            return;
        }
        let every = PERIODIC_MIN.max(took * 20);
        folder.every = Some(every);
        folder.sweeps.due = Some(now + every);
    }

    /// Set the directory open at `start` and beneath it, visiting at most
    /// `bound` entries, watching each directory; `parent` is the watch of
    /// its parent and its name there (`None`: it is the folder itself).
    /// Changes are counted as restorations when `restored`. Returns the
    /// entries visited and whether the bound stopped it.
    fn sweep(
        &mut self,
        index: usize,
        start: BorrowedFd<'_>,
        parent: Option<(i32, &[u8])>,
        restored: bool,
        bound: usize,
    ) -> (usize, bool) {
        let share = self.share;
        let pass = self.passes;
        let folder = &mut self.folders[index];
        let inotify = &self.inotify;
        let dirs = &mut self.dirs;
        let inodes = &mut self.inodes;
        let wanted = folder.wanted.clone();
        let mut refused: Option<Errno> = None;
        let (mut watched, mut unwatched) = (folder.watched, 0usize);
        // The sweep's index of each directory → its watch.
        let mut wd_of: Vec<Option<i32>> = Vec::new();
        let sweep = walk::sweep(start, Op::Set(&wanted), bound, |visit| {
            let i = visit.index as usize;
            if wd_of.len() <= i {
                wd_of.resize(i + 1, None);
            }
            let (parent_wd, name) = match (visit.link.parent, parent) {
                (None, None) => (None, Box::default()),
                (None, Some((wd, name))) => (Some(wd), Box::from(name)),
                (Some(p), _) => match wd_of.get(p as usize).copied().flatten() {
                    Some(wd) => (Some(wd), visit.link.name.clone()),
                    // Its parent is not watched: neither is it (sweeps
                    // keep it).
                    None => {
                        unwatched += 1;
                        return;
                    }
                },
            };
            let known = inodes.contains_key(&(visit.link.dev, visit.link.ino));
            if !known && watched >= share {
                unwatched += 1;
                return;
            }
            match inotify::add_watch(inotify, walk::fd_path(visit.fd), WATCHED) {
                Ok(wd) => {
                    wd_of[i] = Some(wd);
                    let link = Link {
                        parent: parent_wd,
                        name,
                        dev: visit.link.dev,
                        ino: visit.link.ino,
                    };
                    // Watched already (the same inode): this is where it
                    // is now.
                    inodes.insert((link.dev, link.ino), wd);
                    let w = Watched {
                        folder: index,
                        link,
                        seen: pass,
                    };
                    if dirs.insert(wd, w).is_none() {
                        watched += 1;
                    }
                }
                Err(e) => {
                    refused = Some(e);
                    unwatched += 1;
                }
            }
        });
        folder.watched = watched;
        folder.unwatched += unwatched;
        self.dirty = true;
        if unwatched > 0 {
            folder.why = match refused {
                Some(e) => format!(
                    "the kernel refused more watches: {e}; raise fs.inotify.max_user_watches"
                ),
                None => format!("past the folder's share of {share} inotify watches"),
            };
            // Kept by sweeps of the whole folder from now on.
            if folder.every.is_none() {
                folder.every = Some(PERIODIC_MIN);
                let what = format!(
                    "directories are not watched ({}); a sweep of the whole folder every {} s or more keeps them",
                    folder.why,
                    PERIODIC_MIN.as_secs()
                );
                let path = folder.path.clone();
                if folder.sweeps.due.is_none() {
                    folder.sweeps.due = Some(Instant::now() + PERIODIC_MIN);
                }
                self.note(index, Kind::Unwatched, unwatched as u64, &path, &what);
            }
        }
        let shown = match parent {
            Some((wd, name)) => self.shown(Some(wd), Some(name), index),
            None => self.folders[index].path.clone(),
        };
        if sweep.failed > 0 {
            let what = sweep.errors.join("; ");
            self.note(index, Kind::Unset, sweep.failed as u64, &shown, &what);
        }
        if restored && sweep.changed > 0 {
            let last = absolute(
                &self.folders[index].path,
                sweep.last_changed.as_deref().unwrap_or("."),
            );
            let last = match parent {
                Some(_) => shown,
                None => last,
            };
            self.note(index, Kind::Restored, sweep.changed as u64, &last, "");
        }
        (sweep.visited, sweep.truncated)
    }

    /// The directory watched as `wd`, opened again: the very one recorded.
    fn open_watched(&mut self, wd: i32) -> Result<(usize, OwnedFd), Errno> {
        let folder = self.dirs.get(&wd).ok_or(Errno::STALE)?.folder;
        let dirs = &self.dirs;
        let fd = tree::reopen(
            self.folders[folder].root.as_fd(),
            &mut self.cache,
            wd,
            |k| dirs.get(&k).map(|w| &w.link),
            dirs.len(),
        )?;
        Ok((folder, fd))
    }

    /// Forget watch `wd` (the kernel dropped it).
    fn forget(&mut self, wd: i32) {
        if let Some(w) = self.dirs.remove(&wd) {
            if self.inodes.get(&(w.link.dev, w.link.ino)) == Some(&wd) {
                self.inodes.remove(&(w.link.dev, w.link.ino));
            }
            let folder = &mut self.folders[w.folder];
            folder.watched = folder.watched.saturating_sub(1);
            self.dirty = true;
        }
        self.cache.forget(wd);
    }

    /// Stop watching `wd` (its directory left the folder).
    fn unwatch(&mut self, wd: i32) {
        let _ = inotify::remove_watch(&self.inotify, wd);
        self.forget(wd);
    }

    /// Watch `wd` fired `IN_MOVE_SELF`: a directory moved within its
    /// folder was relinked at its `IN_MOVED_TO`, before this; one that
    /// cannot be reached at its link left the folder (or went beneath a
    /// directory not watched): it and all beneath it are not watched any
    /// more.
    fn moved(&mut self, wd: i32) {
        // Its cached descriptor still reaches it wherever it went: it is
        // looked for from its parent, by name, again.
        self.cache.forget(wd);
        if self.open_watched(wd).is_ok() || !self.dirs.contains_key(&wd) {
            return;
        }
        // Every watch whose chain of parents reaches `wd`, each chain
        // walked once.
        let mut below: HashMap<i32, bool> = HashMap::from([(wd, true)]);
        let keys: Vec<i32> = self.dirs.keys().copied().collect();
        for start in keys {
            let mut chain = Vec::new();
            let mut k = Some(start);
            let verdict = loop {
                let Some(at) = k else { break false };
                if let Some(&v) = below.get(&at) {
                    break v;
                }
                if chain.len() > self.dirs.len() {
                    break false;
                }
                chain.push(at);
                k = self.dirs.get(&at).and_then(|w| w.link.parent);
            };
            for at in chain {
                below.insert(at, verdict);
            }
        }
        for (at, gone) in below {
            if gone {
                self.unwatch(at);
            }
        }
    }

    /// Act on one inotify event.
    pub fn handle(&mut self, wd: i32, flags: ReadFlags, name: Option<Vec<u8>>) {
        if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
            // Every folder is owed one sweep, whatever the overflows.
            let now = Instant::now();
            for index in 0..self.folders.len() {
                self.folders[index].sweeps.owe(now);
                let path = self.folders[index].path.clone();
                self.note(index, Kind::Lost, 1, &path, "");
            }
            return;
        }
        if flags.contains(ReadFlags::IGNORED) {
            self.forget(wd);
            return;
        }
        if flags.contains(ReadFlags::MOVE_SELF) {
            self.moved(wd);
            return;
        }
        let (index, dir_fd) = match self.open_watched(wd) {
            Ok(found) => found,
            // Moved away, replaced, or gone: where it went is watched (or
            // is not the folder's any more); nothing here is acted on.
            Err(_) => return,
        };
        let Some(name) = name else {
            // The watched directory itself changed: act on the descriptor
            // just checked to be it, unless it is root's now.
            if rustix::fs::fstat(&dir_fd).is_ok_and(|stat| stat.st_uid != 0) {
                self.converge(index, dir_fd.as_fd(), true, false, (wd, None));
            }
            return;
        };
        let Ok(cname) = std::ffi::CString::new(name.clone()) else {
            return;
        };
        // A new object only gets its entries (its mode may have narrowed
        // what it inherited); a changed one had them taken away.
        let new = flags.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO);
        let dev = self.folders[index].dev;
        match walk::open_child(dir_fd.as_fd(), &cname, dev, false) {
            Ok(Child::Open {
                fd,
                is_dir: true,
                uid,
                ino,
            }) if uid != 0 && new => self.new_directory(index, fd, (wd, &name), ino),
            Ok(Child::Open {
                fd, is_dir, uid, ..
            }) if uid != 0 => self.converge(index, fd.as_fd(), is_dir, new, (wd, Some(&name))),
            Ok(_) => {}
            Err(e) => {
                let path = self.shown(Some(wd), Some(&name), index);
                self.note(index, Kind::Unset, 1, &path, &e.to_string());
            }
        }
    }

    /// Set one object's entries, through `fd`; `at` is its parent's watch
    /// and its name (`None`: the watched directory itself).
    fn converge(
        &mut self,
        index: usize,
        fd: BorrowedFd<'_>,
        is_dir: bool,
        new: bool,
        at: (i32, Option<&[u8]>),
    ) {
        let result = walk::converge_fd(fd, is_dir, Op::Set(&self.folders[index].wanted));
        match result {
            Ok(true) if !new => {
                let path = self.shown(Some(at.0), at.1, index);
                self.note(index, Kind::Restored, 1, &path, "");
            }
            Ok(_) => {}
            Err(e) => {
                let path = self.shown(Some(at.0), at.1, index);
                self.note(index, Kind::Unset, 1, &path, &e.to_string());
            }
        }
    }

    /// A directory made in, or moved to, `at` (its parent's watch and its
    /// name), open at `fd`.
    fn new_directory(&mut self, index: usize, fd: OwnedFd, at: (i32, &[u8]), ino: u64) {
        let dev = self.folders[index].dev;
        if let Some(&known) = self.inodes.get(&(dev, ino)) {
            if self.dirs.get(&known).is_some_and(|w| w.folder == index) {
                // Moved within the folder: watched already, and so is
                // everything beneath it. Only where it is changes.
                if let Some(w) = self.dirs.get_mut(&known) {
                    w.link.parent = Some(at.0);
                    w.link.name = at.1.into();
                }
                self.converge(index, fd.as_fd(), true, true, (at.0, Some(at.1)));
                return;
            }
        }
        let now = Instant::now();
        let left = self.folders[index].sweeps.left(now);
        if left == 0 {
            self.folders[index].sweeps.owe(now);
            return;
        }
        let (visited, truncated) = self.sweep(index, fd.as_fd(), Some(at), false, left);
        let sweeps = &mut self.folders[index].sweeps;
        sweeps.spent += visited;
        if truncated {
            sweeps.owe(now);
        }
    }
}

/// What each directory's watch reports: its entries' changes, what is
/// made or moved into it, its own move.
const WATCHED: WatchFlags = WatchFlags::ATTRIB
    .union(WatchFlags::CREATE)
    .union(WatchFlags::MOVED_TO)
    .union(WatchFlags::MOVE_SELF)
    .union(WatchFlags::ONLYDIR)
    .union(WatchFlags::EXCL_UNLINK);

/// `rel` (relative to folder `path`, `.` for itself) as an absolute path,
/// bounded for a message or a journal field.
pub fn absolute(path: &str, rel: &str) -> String {
    let full = if rel == "." {
        path.to_string()
    } else {
        format!("{path}/{rel}")
    };
    tree::bounded(&full, tree::PATH_SHOWN + path.len().min(tree::PATH_SHOWN))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owed_sweeps_are_one_and_run_at_most_once_per_interval() {
        let start = Instant::now();
        let mut s = Sweeps::new(start);
        // The budget of prompt sweeps: spent, then back after an interval.
        assert_eq!(s.left(start), PROMPT_BUDGET);
        s.spent = PROMPT_BUDGET + 5;
        assert_eq!(s.left(start + Duration::from_secs(1)), 0);
        assert_eq!(s.left(start + RESWEEP_INTERVAL), PROMPT_BUDGET);
        // Owed many times: one sweep, not before an interval after the last.
        for i in 0..1000 {
            s.owe(start + Duration::from_millis(i));
        }
        assert_eq!(s.due, Some(start + RESWEEP_INTERVAL));
        // Long after the last sweep, an owed one is due at once.
        let later = start + 5 * RESWEEP_INTERVAL;
        s.last = start;
        s.due = None;
        s.owe(later);
        assert_eq!(s.due, Some(later));
    }
}
