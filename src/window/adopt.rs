//! The running daemon adopts windows whose owner died: a `mesh-host run
//! --local` killed mid-window, an installer's apply, a fire of its own that
//! panicked, or a close that still owes starts because the container
//! runtime did not answer.
//!
//! It sleeps on the kernel, never on a timer: an inotify watch on the
//! records directory wakes it when a record appears, changes or goes, and a
//! pidfd of each live foreign owner wakes it when that process dies (a
//! pidfd turns readable at its process's exit). Only where a pidfd cannot
//! be had (an old kernel, a seccomp filter) is that owner looked at again
//! every [`OWNER_POLL`]; where inotify cannot be had, the directory is.
//!
//! Each adoption runs on a task of its own ([`Windows::adopt`]): take the
//! record over (rewritten as this daemon's, under the records lock, so no
//! other process closes it too), wait for a step container that still runs
//! (within the window's bound), then close. A record that still owes
//! starts is retried as soon as the runtime answers.

use std::collections::BTreeSet;
use std::os::fd::OwnedFd;
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::budget::CLOSE_BUDGET;
use super::record::WindowRecord;
use super::takeover::Resumed;
use super::windows::Windows;

/// How often an owner without a pidfd, or a directory without inotify, is
/// looked at again.
pub const OWNER_POLL: Duration = Duration::from_secs(5);

/// How long a stopping daemon waits for adoptions in flight: stopping a step
/// (its grace and kill) and one close.
pub const SHUTDOWN_BOUND: Duration = Duration::from_secs(CLOSE_BUDGET.as_secs() + 30);

/// One live foreign owner being watched.
#[derive(Debug)]
struct OwnerWatch {
    step: String,
    pid: u32,
    pidfd: AsyncFd<OwnedFd>,
}

/// See the module documentation.
#[derive(Debug)]
pub struct Adopter {
    windows: Windows,
    owners: Vec<OwnerWatch>,
    /// Steps whose record an adoption task is working on.
    busy: BTreeSet<String>,
    tasks: JoinSet<String>,
    /// Something could only be polled (no pidfd, or no inotify).
    poll: bool,
    /// When the earliest lease of a live foreign owner lapses, if any:
    /// looked at again then (a stopped owner renews nothing, so nothing
    /// else wakes the adopter).
    next_lapse: Option<Duration>,
    /// The step units, whose orphans (a scope kept by the keeper of a
    /// dead owner) are stopped at start and after each adoption.
    units: Option<std::sync::Arc<dyn crate::systemd::units::StepUnits>>,
}

/// The key in `busy` of the task setting unreadable files aside.
const UNREADABLE: &str = "\0unreadable";

impl Adopter {
    /// An adopter over this window engine (the daemon's).
    pub fn new(windows: Windows) -> Self {
        Adopter {
            windows,
            owners: Vec::new(),
            busy: BTreeSet::new(),
            tasks: JoinSet::new(),
            poll: false,
            next_lapse: None,
            units: None,
        }
    }

    /// Stop orphaned step units of `units` too (see
    /// [`crate::systemd::orphans`]).
    pub fn with_units(
        mut self,
        units: std::sync::Arc<dyn crate::systemd::units::StepUnits>,
    ) -> Self {
        self.units = Some(units);
        self
    }

    /// Stop, on a task of its own, the step units no live owner keeps.
    fn stop_orphans(&self) {
        if let Some(units) = self.units.clone() {
            tokio::spawn(async move {
                units.stop_orphans().await;
            });
        }
    }

    /// Run until `shutdown` turns true. Adoptions in flight then stop the
    /// step they wait for and close their window (the engine is told of the
    /// shutdown through [`Windows::stopping_on`]); each is waited for,
    /// within [`SHUTDOWN_BOUND`]. One waiting for the runtime to answer
    /// leaves its record owed, for the next daemon or local command.
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        let dir = self.windows.records().dir().to_path_buf();
        let inotify = match crate::wake::watch_dir(&dir) {
            Ok(fd) => Some(fd),
            Err(e) => {
                tracing::warn!(
                    "cannot watch {} for window records ({e}); looking every {}s",
                    dir.display(),
                    OWNER_POLL.as_secs()
                );
                None
            }
        };
        self.stop_orphans();
        self.scan();
        loop {
            let poll = self.poll || inotify.is_none();
            tokio::select! {
                _ = shutdown.wait_for(|s| *s) => break,
                ready = crate::wake::readable(inotify.as_ref()) => {
                    if let Err(e) = ready {
                        tracing::warn!("window records watch: {e}");
                    }
                    self.scan();
                }
                i = owner_exited(&self.owners) => {
                    let w = self.owners.swap_remove(i);
                    tracing::info!(
                        MESH_STEP = %w.step,
                        "the owner of the window of {} (pid {}) is gone: adopting it",
                        w.step,
                        w.pid
                    );
                    self.scan();
                }
                Some(done) = self.tasks.join_next() => {
                    match done {
                        Ok(step) => {
                            if step != UNREADABLE {
                                self.stop_orphans();
                            }
                            self.busy.remove(&step);
                        }
                        Err(e) => {
                            tracing::error!("a window adoption failed: {e}");
                            // Which step is unknown: look at all again.
                            self.busy.clear();
                        }
                    }
                    self.scan();
                }
                () = tokio::time::sleep(OWNER_POLL), if poll => self.scan(),
                () = tokio::time::sleep(self.next_lapse.unwrap_or_default() + Duration::from_secs(1)),
                    if self.next_lapse.is_some() => self.scan(),
            }
        }
        let deadline = tokio::time::Instant::now() + SHUTDOWN_BOUND;
        while !self.tasks.is_empty() {
            match tokio::time::timeout_at(deadline, self.tasks.join_next()).await {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(_) => {
                    tracing::error!(
                        "window adoptions still running after {}s of stopping: left to the next mesh-host",
                        SHUTDOWN_BOUND.as_secs()
                    );
                    self.tasks.abort_all();
                    break;
                }
            }
        }
    }

    /// Look at every record: watch live foreign owners, adopt the rest
    /// that need it (a dead owner, a lapsed lease, another boot, what this
    /// daemon owes), and have files that are not readable records moved
    /// aside.
    fn scan(&mut self) {
        let scan = match self.windows.records().scan() {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("cannot read window records to adopt: {e}");
                return;
            }
        };
        if !scan.unreadable.is_empty() && self.busy.insert(UNREADABLE.to_string()) {
            let windows = self.windows.clone();
            self.tasks.spawn(async move {
                if let Err(e) = windows.set_aside_unreadable().await {
                    tracing::error!("cannot move unreadable window records aside: {e}");
                    tokio::time::sleep(OWNER_POLL).await;
                }
                UNREADABLE.to_string()
            });
        }
        let records = scan.records;
        // Owners whose record went or changed hands are no longer watched.
        self.owners
            .retain(|w| records.iter().any(|r| r.step == w.step && r.pid == w.pid));
        self.poll = false;
        self.next_lapse = None;
        let at = self.windows.moment();
        for record in records {
            if self.busy.contains(&record.step) {
                continue;
            }
            if self.windows.owner().owns(&record) {
                if record.owed {
                    self.spawn(record.step);
                }
                continue;
            }
            if record.boot_id == self.windows.owner().boot_id && record.owner_alive() {
                match record.lease_left(&at, self.windows.records().beats().last(&record)) {
                    Some(left) if left.is_zero() => {
                        self.spawn(record.step);
                        continue;
                    }
                    Some(left) => {
                        self.next_lapse = Some(self.next_lapse.map_or(left, |n| n.min(left)));
                    }
                    None => {}
                }
                if !self.owners.iter().any(|w| w.step == record.step) {
                    self.watch_owner(&record);
                }
                continue;
            }
            self.spawn(record.step);
        }
    }

    /// Watch a live owner's death through a pidfd; fall back to polling.
    fn watch_owner(&mut self, record: &WindowRecord) {
        match crate::wake::open_pidfd(record.pid) {
            Ok(pidfd) => {
                // The pid may have died and been reused between the look
                // and the open: the record's owner must still be alive now
                // that the descriptor pins the process.
                if record.owner_alive() {
                    self.owners.push(OwnerWatch {
                        step: record.step.clone(),
                        pid: record.pid,
                        pidfd,
                    });
                } else {
                    self.spawn(record.step.clone());
                }
            }
            Err(e) => {
                tracing::debug!(
                    MESH_STEP = %record.step,
                    "no pidfd for the owner of the window of {} (pid {}): {e}; looking every {}s",
                    record.step,
                    record.pid,
                    OWNER_POLL.as_secs()
                );
                self.poll = true;
            }
        }
    }

    fn spawn(&mut self, step: String) {
        self.busy.insert(step.clone());
        let windows = self.windows.clone();
        self.tasks.spawn(async move {
            match windows.adopt(&step).await {
                Ok(Some(resumed)) => log_adopted(&resumed),
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(MESH_STEP = %step, "cannot adopt the window of {step}: {e}; trying again in {}s", OWNER_POLL.as_secs());
                    // Not at once: a failure that lasts (a full disk) must
                    // not become a busy loop.
                    tokio::time::sleep(OWNER_POLL).await;
                }
            }
            step
        });
    }
}

fn log_adopted(resumed: &Resumed) {
    match resumed {
        Resumed::Closed { step, report, .. } | Resumed::Stale { step, report } => {
            if report.owed.is_empty() {
                tracing::info!(MESH_STEP = %step, "adopted the window of {step}: started {:?}", report.started);
            }
        }
        Resumed::OwnerAlive { .. } | Resumed::Failed { .. } => {}
    }
}

/// The index of an owner that exited; never when there is none.
async fn owner_exited(owners: &[OwnerWatch]) -> usize {
    let fds: Vec<&AsyncFd<OwnedFd>> = owners.iter().map(|w| &w.pidfd).collect();
    crate::wake::first_exited(&fds).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wake::{open_pidfd, readable, watch_dir};

    #[tokio::test]
    async fn a_pidfd_turns_readable_when_its_process_exits() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn");
        let pidfd = open_pidfd(child.id()).expect("pidfd");
        let watch = [OwnerWatch {
            step: "s".into(),
            pid: child.id(),
            pidfd,
        }];
        let early = tokio::time::timeout(Duration::from_millis(200), owner_exited(&watch)).await;
        assert!(early.is_err(), "readable while the process lives");
        child.kill().expect("kill");
        let index = tokio::time::timeout(Duration::from_secs(10), owner_exited(&watch))
            .await
            .expect("readable after the exit");
        assert_eq!(index, 0);
        child.wait().expect("reap");
    }

    #[tokio::test]
    async fn the_records_directory_watch_wakes_on_a_new_record() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fd = watch_dir(dir.path()).expect("inotify");
        let quiet = tokio::time::timeout(Duration::from_millis(200), readable(Some(&fd))).await;
        assert!(quiet.is_err(), "nothing happened yet");
        crate::store::write_atomic(&dir.path().join("gc.json"), b"{}", 0o600).expect("write");
        tokio::time::timeout(Duration::from_secs(10), readable(Some(&fd)))
            .await
            .expect("woken")
            .expect("read");
    }
}
