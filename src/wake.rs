//! Sleeping on the kernel rather than on a timer: a directory's inotify
//! descriptor, readable when a file in it appears, changes or goes, and a
//! process's pidfd, readable once it exits (a zombie not yet reaped
//! counts as gone). What the window adopter and the output keeper wait on.

use std::os::fd::OwnedFd;

use tokio::io::unix::AsyncFd;

/// An inotify descriptor watching `dir` for files appearing, being
/// replaced or going.
pub fn watch_dir(dir: &std::path::Path) -> std::io::Result<AsyncFd<OwnedFd>> {
    use rustix::fs::inotify;
    let fd = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)?;
    inotify::add_watch(
        &fd,
        dir,
        inotify::WatchFlags::CREATE
            | inotify::WatchFlags::MOVED_TO
            | inotify::WatchFlags::CLOSE_WRITE
            | inotify::WatchFlags::DELETE
            | inotify::WatchFlags::MOVED_FROM,
    )?;
    register(fd)
}

/// Resolves when the inotify descriptor has events (drained here); never
/// without one.
pub async fn readable(fd: Option<&AsyncFd<OwnedFd>>) -> std::io::Result<()> {
    let Some(fd) = fd else {
        return std::future::pending().await;
    };
    let mut guard = fd.readable().await?;
    let mut buf = [0u8; 4096];
    loop {
        match rustix::io::read(fd.get_ref(), &mut buf) {
            Ok(0) => break,
            Ok(_) => continue,
            Err(rustix::io::Errno::AGAIN) => {
                guard.clear_ready();
                break;
            }
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// A pidfd of `pid`, readable once it exits.
pub fn open_pidfd(pid: u32) -> std::io::Result<AsyncFd<OwnedFd>> {
    let raw = i32::try_from(pid).map_err(|_| std::io::Error::other("pid out of range"))?;
    let pid = rustix::process::Pid::from_raw(raw)
        .ok_or_else(|| std::io::Error::other("pid 0 is nobody"))?;
    let fd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())?;
    register(fd)
}

/// Registers a descriptor with tokio's reactor. `AsyncFd::new` is deprecated
/// for types that do not own their descriptor (its replacement, `register`,
/// is `unsafe`, which this crate denies); an `OwnedFd` owns it and is
/// closed only when the `AsyncFd` is dropped, after deregistration.
#[allow(deprecated)]
fn register(fd: OwnedFd) -> std::io::Result<AsyncFd<OwnedFd>> {
    AsyncFd::new(fd)
}

/// The index of the first of `pidfds` whose process exited; never when
/// there is none.
pub async fn first_exited(pidfds: &[&AsyncFd<OwnedFd>]) -> usize {
    if pidfds.is_empty() {
        return std::future::pending().await;
    }
    let waits = pidfds.iter().map(|fd| Box::pin(fd.readable()));
    let (_, index, _) = futures_util::future::select_all(waits).await;
    index
}
