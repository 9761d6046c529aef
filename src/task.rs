//! A spawned task tied to the life of what owns it, large values freed
//! off the path of an answer, a long computation kept out of the other
//! tasks' way, and how much freed memory the allocator may keep (its
//! arenas, given back once settled).

/// Aborts its task when dropped, so that the task cannot act on after its
/// owner is gone (returned, failed, or unwound by a panic); a no-op once
/// the task has ended.
#[derive(Debug)]
pub struct AbortOnDrop(tokio::task::AbortHandle);

impl AbortOnDrop {
    /// Tie the task of `handle` to the returned value.
    pub fn new<T>(handle: &tokio::task::JoinHandle<T>) -> Self {
        Self(handle.abort_handle())
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Run `work`, a long computation on a task (a metrics text of 20,000
/// steps takes 100 ms), without holding up the tasks queued on the same
/// worker: on the daemon's runtime of several workers they are handed to
/// another first (`block_in_place`). A task woken from this worker (an
/// apply's answer, the scheduler's reply) would otherwise wait out the
/// whole computation, whatever the other worker is doing. On a runtime of
/// one thread (a test's) it simply runs.
pub fn long_computation<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

/// Free `value` on the process's freeing thread: what an apply of
/// thousands of resources built (its builds, the records it compared)
/// takes tens of milliseconds to free, time its answer need not wait for.
/// Once that thread has had nothing to free for [`SETTLED`], it hands the
/// freed memory back to the system (`give_back`): the allocator would
/// keep it, and a daemon that applied a large declaration once would stay
/// that large. Not after each value: applies in a row would then fault
/// the same memory in again each time (30,000 page faults an apply of
/// 1,000 services and 5,000 steps, measured).
pub fn drop_later<T: Send + 'static>(value: T) {
    static FREEING: std::sync::OnceLock<Option<std::sync::Mutex<Freeing>>> =
        std::sync::OnceLock::new();
    let freeing = FREEING.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Box<dyn Send>>();
        std::thread::Builder::new()
            .name("mesh-host-free".into())
            .spawn(move || {
                while let Ok(value) = rx.recv() {
                    drop(value);
                    loop {
                        match rx.recv_timeout(SETTLED) {
                            Ok(more) => drop(more),
                            Err(RecvTimeoutError::Timeout) => break give_back(),
                            Err(RecvTimeoutError::Disconnected) => return,
                        }
                    }
                }
            })
            .ok()
            .map(|_| std::sync::Mutex::new(tx))
    });
    let value: Box<dyn Send> = Box::new(value);
    let refused = match freeing {
        Some(tx) => tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(value)
            .err()
            .map(|e| e.0),
        None => Some(value),
    };
    drop(refused);
}

/// Return the allocator's free memory to the system (glibc keeps what is
/// freed in its arenas for reuse; elsewhere this does nothing).
#[allow(unsafe_code)]
fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointer and only releases free memory.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The allocator set for a long-lived daemon, before its threads start
/// (docs/benchmarks.md has the figures). Elsewhere than glibc this does
/// nothing.
///
/// - One malloc arena for the whole process. glibc gives a thread that
///   meets a locked arena one of its own, up to eight per core, and each
///   keeps what was freed in it: the daemon's threads take turns far more
///   than they contend, and its resident memory after large applies was
///   mostly arenas' free lists (a live heap of 40 MB in 133 MiB resident
///   at 1,000 services and 5,000 steps). A second arena still held about
///   44 MiB resident for 7 MB in use at 20,000 steps: the free pieces of
///   one arena cannot serve the threads of the other. One arena costs no
///   measurable apply time (small blocks come from each thread's cache
///   without the arena's lock).
/// - Blocks of 64 KiB and more mapped on their own and unmapped when
///   freed, always. glibc's threshold otherwise rises to the largest
///   block freed (up to 32 MiB), so after an apply's first large buffer
///   (a request of megabytes, a listing, a report) the next ones are cut
///   from the heap, and the few bytes kept live among their remains hold
///   whole pages resident after the apply.
#[allow(unsafe_code)]
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt takes two integers and only sets allocator limits.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, ARENAS);
        libc::mallopt(libc::M_MMAP_THRESHOLD, MAPPED_FROM);
    }
}

/// See [`tune_allocator`].
const ARENAS: i32 = 1;

/// See [`tune_allocator`]: the size from which a block is mapped.
const MAPPED_FROM: i32 = 64 * 1024;

use std::sync::mpsc::{RecvTimeoutError, Sender};

/// Where values to free are sent.
type Freeing = Sender<Box<dyn Send>>;

/// How long the freeing thread waits for more to free before it gives
/// memory back (see [`drop_later`]).
pub const SETTLED: std::time::Duration = std::time::Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_task_ends_when_its_guard_is_dropped() {
        let task = tokio::spawn(std::future::pending::<()>());
        drop(AbortOnDrop::new(&task));
        let ended = tokio::time::timeout(std::time::Duration::from_secs(5), task)
            .await
            .expect("ended");
        assert!(ended.is_err_and(|e| e.is_cancelled()));
    }

    struct Flag(std::sync::mpsc::Sender<std::thread::ThreadId>);
    impl Drop for Flag {
        fn drop(&mut self) {
            let _ = self.0.send(std::thread::current().id());
        }
    }

    #[test]
    fn drop_later_frees_on_the_freeing_thread_in_order() {
        let (tx, rx) = std::sync::mpsc::channel();
        drop_later(Flag(tx.clone()));
        drop_later(Flag(tx));
        for _ in 0..2 {
            let on = rx
                .recv_timeout(std::time::Duration::from_secs(5))
                .expect("dropped");
            assert_ne!(on, std::thread::current().id());
        }
    }

    #[tokio::test]
    async fn a_finished_task_keeps_its_result() {
        let task = tokio::spawn(async { 7 });
        let guard = AbortOnDrop::new(&task);
        assert_eq!(task.await.expect("ran"), 7);
        drop(guard);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_long_computation_runs_on_a_runtime_of_one_thread() {
        // block_in_place would panic here.
        assert_eq!(long_computation(|| 6 * 7), 42);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_long_computation_hands_its_worker_s_tasks_on() {
        // A task spawned from the computing worker lands in that worker's
        // own slot, which no other worker takes: it still runs while the
        // computation waits for it (it would wait forever if the worker
        // were not handed on).
        let (tx, rx) = std::sync::mpsc::channel();
        let done = tokio::spawn(async move {
            long_computation(|| {
                let _woken = tokio::spawn(async move {
                    let _ = tx.send(());
                });
                rx.recv_timeout(std::time::Duration::from_secs(10)).is_ok()
            })
        });
        assert!(
            done.await.expect("ran"),
            "the task spawned inside ran meanwhile"
        );
    }
}
