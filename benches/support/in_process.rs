//! The daemon's apply and scheduler in one process, over the scripted
//! runtime (no Docker): what the memory benches (`memory.rs`, `held.rs`)
//! measure mesh-host's own heap with. Included by `#[path]`, beside the
//! timing harness of `mod.rs`, which these benches do not use.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mesh_host::apply::Applier;
use mesh_host::clock::SystemClock;
use mesh_host::runtime::fake::FakeRuntime;
use mesh_host::runtime::ContainerRuntime;
use mesh_host::schedule::fire::Firer;
use mesh_host::schedule::scheduler::{Scheduler, SchedulerHandle};
use mesh_host::store::Store;
use mesh_host::systemd::units::NoUnits;
use mesh_host::window::{Owner, Windows};

/// The scripted runtime with `image` present, the
/// applier and the running scheduler.
pub struct InProcess {
    pub fake: FakeRuntime,
    pub applier: Applier,
    pub handle: SchedulerHandle,
    /// Set to stop the scheduler; `running` then ends.
    pub shutdown: tokio::sync::watch::Sender<bool>,
    pub running: tokio::task::JoinHandle<()>,
}

impl InProcess {
    /// All of it over the state directory `state`; must be called inside
    /// a tokio runtime (the scheduler is spawned).
    pub fn new(state: &Path, image: &str) -> InProcess {
        let store = Store::open(state).expect("store");
        let fake = FakeRuntime::new();
        fake.add_image(image);
        let runtime: Arc<dyn ContainerRuntime> = Arc::new(fake.clone());
        let clock = Arc::new(SystemClock::new());
        let windows = Windows::new(
            store.clone(),
            runtime.clone(),
            clock.clone(),
            Owner::current().expect("owner"),
        );
        let (shutdown, rx) = tokio::sync::watch::channel(false);
        let firer = Firer::new(
            runtime.clone(),
            windows.clone(),
            Arc::new(NoUnits),
            rx.clone(),
        );
        let (scheduler, handle) = Scheduler::new(firer, clock, store.clone(), None);
        let running = tokio::spawn(scheduler.run(rx));
        let applier = Applier::new(store.clone(), runtime, windows);
        InProcess {
            fake,
            applier,
            handle,
            shutdown,
            running,
        }
    }
}

/// Where a bench's declared files may be: cargo's scratch directory,
/// unless `check` would refuse a path there (a checkout under /tmp, /home
/// or /root: docs/declaration.md), then /var/lib/mesh-host-tests.
pub fn declarable_base() -> PathBuf {
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let declarable = mesh_host::declaration::AbsPath::try_from(scratch.to_string_lossy().as_ref())
        .is_ok_and(|p| {
            mesh_host::declaration::sandbox::refusal(&p).is_none()
                && mesh_host::declaration::sandbox::write_refusal(&p).is_none()
        });
    if declarable {
        return scratch;
    }
    let fallback = PathBuf::from("/var/lib/mesh-host-tests");
    std::fs::create_dir_all(&fallback).expect("a directory for the bench's declared files");
    fallback
}
