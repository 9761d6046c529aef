//! Keeping shared folders' entries between applies: an inotify watch on
//! every directory of each folder the host took (`IN_ATTRIB`, `IN_CREATE`,
//! `IN_MOVED_TO`). A changed object is set again at once; one whose entries
//! had been removed or narrowed (say by `chmod 700`) is logged as
//! `acl-restored`. A lost event queue (`IN_Q_OVERFLOW`) owes every folder
//! a sweep. Watches are added through the descriptors of the walk
//! (`/proc/self/fd/N`), so a link is never followed to add one. What the
//! watch holds and what an event does, its work and its messages bounded
//! per folder whatever a writer does, is `acl::watched`.
//!
//! The watch runs on a thread of its own (it only makes system calls) and
//! reloads its folders from the store document [`SHARED_FOLDERS`] when told
//! to, after each apply. It sleeps in `poll` on its inotify descriptor and
//! an eventfd the daemon signals, with no timeout unless a counted message
//! or an owed sweep is due: an idle node never wakes it. Each directory
//! costs one inotify watch, within a budget the folders share; a folder
//! past its share (or the kernel's `fs.inotify.max_user_watches`) is kept
//! by periodic sweeps, which `status` shows ([`Watcher::folders`]).
//!
//! An apply of the same process changes a folder's entries only while it
//! holds the watch ([`Watcher::hold`]): the watch acts on no object
//! meanwhile, and the apply waits for what the watch was doing to end
//! before its first change. Each hold's end is a new generation, and the
//! watch reads its folders again before acting on anything after one. So
//! an event raised by taking an identity's entries away is never handled
//! with the list that still granted them: without this, the watch put
//! back every entry the apply took (and the default entries new objects
//! inherit), for good.

use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use rustix::event::{EventfdFlags, PollFd, PollFlags};
use rustix::fs::inotify::{self, ReadFlags};
use rustix::io::Errno;

use super::folders::{ManagedFolders, SHARED_FOLDERS};
use super::watched::State;
use crate::store::Store;

pub use super::notes::log_restored;
pub use super::watched::{absolute, FolderWatch};

/// What wakes the watch thread: an eventfd, and whether it is to end;
/// and the gate between it and the applies.
#[derive(Debug)]
struct Wake {
    fd: OwnedFd,
    stop: AtomicBool,
    gate: Mutex<Gate>,
    /// Signalled when a hold or the watch's acting ends, and at stop.
    turned: Condvar,
    /// What the watch keeps of each folder, for `status`.
    shown: Arc<Mutex<Vec<FolderWatch>>>,
}

/// Who may touch the folders' entries: the watch acts only while no apply
/// holds it, and a hold is granted only once the watch is not acting.
#[derive(Debug, Default)]
struct Gate {
    /// Applies holding the watch still.
    holds: usize,
    /// Whether the watch thread is acting on the tree.
    acting: bool,
    /// Holds ended so far: after each, the folders may have changed.
    generation: u64,
}

impl Wake {
    fn new(fd: OwnedFd) -> Wake {
        Wake {
            fd,
            stop: AtomicBool::new(false),
            gate: Mutex::new(Gate::default()),
            turned: Condvar::new(),
            shown: Arc::default(),
        }
    }

    fn signal(&self) {
        let _ = rustix::io::write(&self.fd, &1u64.to_ne_bytes());
    }

    /// Reset the eventfd after a wake.
    fn drain(&self) {
        let mut count = [0u8; 8];
        let _ = rustix::io::read(&self.fd, &mut count);
    }

    /// The gate; a panic elsewhere while it was locked left nothing half
    /// done in it (each change is one assignment).
    fn gate(&self) -> MutexGuard<'_, Gate> {
        self.gate.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, gate: MutexGuard<'a, Gate>) -> MutexGuard<'a, Gate> {
        self.turned
            .wait(gate)
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Wait until no apply holds the watch, and mark it acting until the
    /// guard is dropped. Also says whether a hold ended since generation
    /// `seen` (which it updates): the folders are to be read again before
    /// anything is acted on. `None` when the watch is to end.
    fn enter(&self, seen: &mut u64) -> Option<(Acting<'_>, bool)> {
        let mut gate = self.gate();
        while gate.holds > 0 && !self.stop.load(Ordering::SeqCst) {
            gate = self.wait(gate);
        }
        if self.stop.load(Ordering::SeqCst) {
            return None;
        }
        gate.acting = true;
        let fresh = gate.generation != *seen;
        *seen = gate.generation;
        Some((Acting(self), fresh))
    }

    /// Whether an apply waits to hold the watch.
    fn wanted(&self) -> bool {
        self.gate().holds > 0
    }
}

/// The watch thread acting on the tree; dropped when it is done.
struct Acting<'a>(&'a Wake);

impl Drop for Acting<'_> {
    fn drop(&mut self) {
        self.0.gate().acting = false;
        self.0.turned.notify_all();
    }
}

/// An apply's hold on the watch (see [`Watcher::hold`]): released, with a
/// new generation, when dropped.
#[derive(Debug)]
#[must_use = "the watch is held only while the hold lives"]
pub struct Hold(Option<Arc<Wake>>);

impl Drop for Hold {
    fn drop(&mut self) {
        if let Some(wake) = &self.0 {
            let mut gate = wake.gate();
            gate.holds -= 1;
            gate.generation += 1;
            drop(gate);
            wake.turned.notify_all();
        }
    }
}

/// The daemon's end of the watch; the thread ends when the last clone of
/// the [`Watcher`] holding it is dropped.
#[derive(Debug)]
struct Handle(Arc<Wake>);

impl Drop for Handle {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::SeqCst);
        self.0.signal();
        // Taken so that a watch waiting on the gate cannot miss it.
        drop(self.0.gate());
        self.0.turned.notify_all();
    }
}

/// The handle the daemon keeps: tells the watch thread to reload. Without
/// a thread (it could not be started, which was logged) it does nothing.
#[derive(Debug, Clone)]
pub struct Watcher {
    handle: Option<Arc<Handle>>,
}

impl Watcher {
    /// Start the watch thread over the folders recorded in `store`.
    /// It ends when every handle is dropped.
    pub fn start(store: Store) -> Watcher {
        let watcher = Watcher {
            handle: spawn(store).map(|wake| Arc::new(Handle(wake))),
        };
        watcher.reload();
        watcher
    }

    /// Read the folders again (after an apply).
    pub fn reload(&self) {
        if let Some(handle) = &self.handle {
            handle.0.signal();
        }
    }

    /// What the watch keeps of each folder: directories watched, and
    /// those past the folder's share of watches, kept by periodic sweeps.
    pub fn folders(&self) -> Vec<FolderWatch> {
        match &self.handle {
            Some(handle) => handle
                .0
                .shown
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            None => Vec::new(),
        }
    }

    /// Hold the watch still while an apply changes folders' entries:
    /// returns once the watch acts on nothing, and it acts on nothing
    /// until the hold is dropped; then it reads its folders again before
    /// acting. Blocks for what the watch was doing: one event (a new
    /// directory is one bounded sweep), a sweep of one whole folder (owed
    /// after lost events, or periodic past its share of watches), or a
    /// sweep of every folder after a reload; call it off the async
    /// runtime's workers. The apply must have recorded the folders' new
    /// entries before it drops the hold.
    pub fn hold(&self) -> Hold {
        let Some(handle) = &self.handle else {
            return Hold(None);
        };
        let wake = handle.0.clone();
        let mut gate = wake.gate();
        // Counted first: the watch starts nothing new while it waits.
        gate.holds += 1;
        while gate.acting {
            gate = wake.wait(gate);
        }
        drop(gate);
        Hold(Some(wake))
    }
}

/// The watch thread over `store`'s folders, and what wakes it.
fn spawn(store: Store) -> Option<Arc<Wake>> {
    let why = "shared folders are not watched between applies";
    let fd = rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
        .map_err(|e| tracing::error!("{why}: eventfd: {e}"))
        .ok()?;
    let wake = Arc::new(Wake::new(fd));
    let theirs = wake.clone();
    std::thread::Builder::new()
        .name("acl-watch".into())
        .spawn(move || run(store, &theirs))
        .map_err(|e| tracing::error!("{why}: cannot start the watch: {e}"))
        .ok()?;
    Some(wake)
}

/// One inotify event: watch, flags, name.
type Raw = (i32, ReadFlags, Option<Vec<u8>>);

fn run(store: Store, wake: &Wake) {
    let mut state: Option<State> = None;
    let mut buf = vec![MaybeUninit::<u8>::uninit(); 64 * 1024];
    // Events read and not yet acted on: an apply asked to hold the watch.
    let mut pending: VecDeque<Raw> = VecDeque::new();
    let mut seen = 0;
    loop {
        // Asleep until the daemon signals, a watched directory changes,
        // counted messages are due to be logged or an owed sweep to run.
        let due = match pending.is_empty() {
            true => state.as_ref().and_then(State::next_due),
            false => Some(Instant::now()),
        };
        let (woken, changed) = {
            let mut fds = vec![PollFd::new(&wake.fd, PollFlags::IN)];
            if let Some(st) = &state {
                fds.push(PollFd::new(st.inotify(), PollFlags::IN));
            }
            let timeout = due.map(|due| {
                let left = due.saturating_duration_since(Instant::now());
                rustix::time::Timespec {
                    tv_sec: left.as_secs() as i64,
                    tv_nsec: i64::from(left.subsec_nanos()),
                }
            });
            match rustix::event::poll(&mut fds, timeout.as_ref()) {
                Ok(_) => (
                    !fds[0].revents().is_empty(),
                    fds.get(1).is_some_and(|f| !f.revents().is_empty()),
                ),
                Err(Errno::INTR) => continue,
                Err(e) => {
                    tracing::error!("the shared-folder watch failed ({e}); the sweep at each apply still keeps them");
                    return;
                }
            }
        };
        // Nothing is acted on while an apply holds the watch, and after a
        // hold the folders are read again before anything is.
        let Some((_acting, fresh)) = wake.enter(&mut seen) else {
            if let Some(st) = state.as_mut() {
                st.flush(true);
            }
            return;
        };
        if woken {
            wake.drain();
            if wake.stop.load(Ordering::SeqCst) {
                if let Some(st) = state.as_mut() {
                    st.flush(true);
                }
                return;
            }
        }
        if woken || fresh {
            // Reloads signalled meanwhile are one: an apply that changed no
            // folder leaves the watches as they are (the apply's own sweep
            // already set what was new).
            match read(&store) {
                Some(managed) if state.as_ref().is_some_and(|s| s.current(&managed)) => {}
                Some(managed) => {
                    if let Some(st) = state.as_mut() {
                        st.flush(true);
                    }
                    // The new watches sweep everything: events of the old
                    // ones are moot.
                    pending.clear();
                    state = State::load(managed, wake.shown.clone());
                }
                None => {
                    pending.clear();
                    state = None;
                    wake.shown
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .clear();
                }
            }
        }
        let Some(st) = state.as_mut() else {
            continue;
        };
        // With the folders as they are now: owed sweeps that are due, and
        // counted messages.
        st.tick();
        // Read only once the last read is acted on: what waits is one
        // buffer at most (the kernel's queue holds the rest, and says when
        // it lost some).
        if changed && pending.is_empty() {
            let mut reader = inotify::Reader::new(st.inotify(), &mut buf);
            loop {
                match reader.next() {
                    Ok(ev) => pending.push_back((
                        ev.wd(),
                        ev.events(),
                        ev.file_name().map(|n| n.to_bytes().to_vec()),
                    )),
                    Err(Errno::AGAIN | Errno::INTR) => break,
                    Err(e) => {
                        tracing::warn!("reading the shared-folder watch: {e}");
                        break;
                    }
                }
            }
        }
        while let Some((wd, flags, name)) = pending.pop_front() {
            st.handle(wd, flags, name);
            if wake.wanted() {
                break;
            }
        }
        st.publish();
    }
}

/// The recorded folders; `None` when there are none or they cannot be read.
fn read(store: &Store) -> Option<ManagedFolders> {
    match store.load::<ManagedFolders>(SHARED_FOLDERS) {
        Ok(m) => m.filter(|m| !m.folders.is_empty()),
        Err(e) => {
            tracing::error!("the shared-folder watch cannot read its folders: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Voluntary context switches of this process's `acl-watch` threads
    /// (one sleep each after a wake); `None` when there is no such thread.
    fn watch_switches() -> Option<u64> {
        let mut found = None;
        for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim() != "acl-watch" {
                continue;
            }
            let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
            let n: u64 = status
                .lines()
                .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            found = Some(found.unwrap_or(0) + n);
        }
        found
    }

    fn until(what: &str, mut done: impl FnMut() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(start.elapsed() < Duration::from_secs(10), "{what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_hold_waits_for_the_watch_to_finish_acting_and_stops_it_until_dropped() {
        use std::sync::mpsc;
        let fd = rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
            .expect("eventfd");
        let wake = Arc::new(Wake::new(fd));
        let watcher = Watcher {
            handle: Some(Arc::new(Handle(wake.clone()))),
        };
        let mut seen = 0;
        let (acting, fresh) = wake.enter(&mut seen).expect("not stopped");
        assert!(!fresh, "no hold ended yet");
        // An apply asks for a hold while the watch acts: it waits.
        let (held_tx, held) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let holder = watcher.clone();
        let apply = std::thread::spawn(move || {
            let hold = holder.hold();
            held_tx.send(()).expect("send");
            let _ = released.recv();
            drop(hold);
        });
        until("the apply to ask", || wake.wanted());
        assert!(
            held.recv_timeout(Duration::from_millis(300)).is_err(),
            "held while the watch acts"
        );
        drop(acting);
        held.recv_timeout(Duration::from_secs(10))
            .expect("held once the watch is done");
        // While it holds, the watch acts on nothing.
        let (entered_tx, entered) = mpsc::channel();
        let theirs = wake.clone();
        let watch = std::thread::spawn(move || {
            let mut seen = seen;
            let (acting, fresh) = theirs.enter(&mut seen).expect("not stopped");
            drop(acting);
            entered_tx.send(fresh).expect("send");
        });
        assert!(
            entered.recv_timeout(Duration::from_millis(300)).is_err(),
            "the watch acted during a hold"
        );
        // The hold ends: the watch acts again, told to read its folders
        // first.
        release.send(()).expect("release");
        let fresh = entered
            .recv_timeout(Duration::from_secs(10))
            .expect("the watch acts after the hold");
        assert!(fresh, "a hold ended: the folders are read again");
        apply.join().expect("apply");
        watch.join().expect("watch");
        // A stopped watch waiting on a hold ends.
        let hold = watcher.hold();
        let theirs = wake.clone();
        let waiting = std::thread::spawn(move || theirs.enter(&mut 0).is_none());
        drop(watcher);
        assert!(waiting.join().expect("join"), "stopped while held");
        drop(hold);
    }

    #[test]
    fn an_idle_watch_sleeps_until_told_and_ends_with_its_last_handle() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().join("state")).expect("store");
        let watcher = Watcher::start(store);
        until("the watch thread to start", || watch_switches().is_some());
        // Its first reload (no folders) done, it sleeps.
        std::thread::sleep(Duration::from_millis(300));
        let settled = watch_switches();
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(watch_switches(), settled, "an idle watch woke");
        // Told to reload, it wakes (and sleeps again).
        watcher.reload();
        until("the watch to wake for a reload", || {
            watch_switches() > settled
        });
        // A clone keeps it; the last handle ends it.
        let other = watcher.clone();
        drop(watcher);
        std::thread::sleep(Duration::from_millis(200));
        assert!(watch_switches().is_some(), "a handle is left");
        drop(other);
        until("the watch thread to end", || watch_switches().is_none());
    }
}
