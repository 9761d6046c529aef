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

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
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
}

impl State {
    /// Open the recorded folders and watch them (sweeping each once). A
    /// folder whose entries are being taken away (no access left) is not
    /// watched.
    pub fn load(managed: ManagedFolders) -> Option<State> {
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
            });
        }
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
        let sweeps = &mut self.folders[index].sweeps;
        sweeps.due = None;
        sweeps.last = now;
        let Ok(top) = rustix::io::fcntl_dupfd_cloexec(&self.folders[index].root, 0) else {
            return;
        };
        self.sweep(index, top.as_fd(), None, true, SWEEP_BOUND);
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
        let folder = &self.folders[index];
        let inotify = &self.inotify;
        let dirs = &mut self.dirs;
        let inodes = &mut self.inodes;
        let mut unwatched: Option<Errno> = None;
        // The sweep's index of each directory → its watch.
        let mut wd_of: Vec<Option<i32>> = Vec::new();
        let sweep = walk::sweep(start, Op::Set(&folder.wanted), bound, |visit| {
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
                    None => return,
                },
            };
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
                    dirs.insert(
                        wd,
                        Watched {
                            folder: index,
                            link,
                        },
                    );
                }
                Err(e) => unwatched = Some(e),
            }
        });
        if let Some(e) = unwatched {
            let what = format!("directories beneath {} are not all watched ({e}: raise fs.inotify.max_user_watches); the sweep at each apply keeps them", folder.path);
            let path = folder.path.clone();
            self.note(index, Kind::Unwatched, 1, &path, &what);
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
        }
        self.cache.forget(wd);
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
/// made or moved into it.
const WATCHED: WatchFlags = WatchFlags::ATTRIB
    .union(WatchFlags::CREATE)
    .union(WatchFlags::MOVED_TO)
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
