//! Waking when a directory's entries change: inotify on the window records'
//! directory, so `STATUS=` shows a window the moment its record is written
//! or erased — by this daemon or by any other process (`run --local`, an
//! installer) — without looking at the directory on a timer.

use std::path::Path;

use rustix::fd::OwnedFd;
use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
use rustix::io::Errno;
use tokio::io::unix::AsyncFd;

/// An inotify watch on one directory.
#[derive(Debug)]
pub struct DirWatch {
    fd: AsyncFd<OwnedFd>,
}

impl DirWatch {
    /// Watch `dir` for entries created, removed, renamed in or out, or
    /// written (atomic writes rename a temporary file into place).
    pub fn new(dir: &Path) -> std::io::Result<DirWatch> {
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)?;
        inotify::add_watch(
            &fd,
            dir,
            WatchFlags::CREATE
                | WatchFlags::DELETE
                | WatchFlags::MOVED_FROM
                | WatchFlags::MOVED_TO
                | WatchFlags::CLOSE_WRITE
                | WatchFlags::DELETE_SELF
                | WatchFlags::MOVE_SELF,
        )?;
        Ok(DirWatch {
            fd: crate::clock::timer::async_fd(fd)?,
        })
    }

    /// Wait for the next change(s), draining every event queued.
    pub async fn changed(&self) -> std::io::Result<()> {
        loop {
            let mut ready = self.fd.readable().await?;
            let mut buf = [0u8; 4096];
            let mut drained = false;
            loop {
                match rustix::io::read(self.fd.get_ref(), &mut buf[..]) {
                    Ok(0) => break,
                    Ok(_) => drained = true,
                    Err(Errno::AGAIN) => break,
                    Err(Errno::INTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            ready.clear_ready();
            if drained {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_file_renamed_into_the_directory_wakes_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let watch = DirWatch::new(dir.path()).expect("watch");
        let idle = tokio::time::timeout(Duration::from_millis(100), watch.changed()).await;
        assert!(idle.is_err(), "woke with nothing changed");
        let tmp = dir.path().join(".x.tmp");
        std::fs::write(&tmp, b"{}").expect("write");
        std::fs::rename(&tmp, dir.path().join("x.json")).expect("rename");
        tokio::time::timeout(Duration::from_secs(5), watch.changed())
            .await
            .expect("woken")
            .expect("read");
    }
}
