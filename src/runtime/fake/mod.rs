//! A scripted in-memory [`ContainerRuntime`] for unit tests of other modules.
//!
//! It keeps containers and images with Docker's rules where callers depend
//! on them (create does not pull, a name is unique, stop of a stopped
//! container is `Ok`, remove of a missing one is `Ok`), records every trait
//! call in order ([`FakeRuntime::calls`]), and can be scripted: failures,
//! step containers that exit with a code after a delay (tokio time, so tests
//! with paused time run instantly), slow stops, and changes made behind the
//! host's back (an operator starting a held container).
//!
//! Clones share state: keep one handle for scripting and assertions and hand
//! another out as `Arc<dyn ContainerRuntime>`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{mpsc, Notify};

use super::{
    CgroupDriver, ContainerEventKind, ContainerId, ContainerInfo, ContainerRuntime, ContainerSpec,
    ContainerSummary, EventStream, NetworkAttach, NetworkInfo, NetworkSpec, OutputChunks,
    RuntimeError, RuntimeView, VolumeInfo, VolumeSpec, LABEL_MANAGED, MANAGED_VALUE,
};

/// Exit code of a container ended by SIGKILL (128 + 9), as Docker reports it.
pub const KILLED_EXIT_CODE: i64 = 137;

mod calls;
mod container;
mod networks;
mod output;
mod scripting;
mod state;
mod volumes;

pub use calls::Call;
use container::{not_found, Container, Status};
pub use state::FAKE_ENDPOINT;
use state::{OnStart, State, Subscriber};

/// The in-memory runtime. See the module documentation.
#[derive(Debug, Clone, Default)]
pub struct FakeRuntime {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    /// Woken on every exit and removal, for `wait_exit`.
    changed: Notify,
    /// What containers wrote ([`FakeRuntime::write_output`]).
    outputs: output::Outputs,
}

impl FakeRuntime {
    /// Inspect's answer as read now.
    fn inspect_now(&self, name: &str) -> Result<Option<ContainerInfo>, RuntimeError> {
        let name = &self.resolve(name);
        let state = self.enter(Call::Inspect(name.to_owned()))?;
        if state.panic_on_inspect.contains(name) {
            drop(state);
            panic!("scripted: inspect of {name} panics");
        }
        let health = |c: &Container| {
            let (status, output, after) = state.health.get(name)?;
            let started = c.started_instant?;
            Some(if started.elapsed() >= *after {
                super::Health {
                    status: status.clone(),
                    last_output: output.clone(),
                    decides_within: None,
                    start_period: std::time::Duration::ZERO,
                }
            } else {
                super::Health {
                    status: "starting".into(),
                    last_output: String::new(),
                    decides_within: None,
                    start_period: std::time::Duration::ZERO,
                }
            })
        };
        Ok(state.containers.get(name).map(|c| ContainerInfo {
            id: c.id.clone(),
            name: c.spec.name.clone(),
            image: c.spec.image.clone(),
            running: c.status == Status::Running,
            status: c.status.as_str().to_owned(),
            exit_code: c.exit_code,
            started_at: c.started_at.clone(),
            finished_at: c.finished_at.clone(),
            labels: c.spec.labels.clone().into_iter().collect(),
            pid: c.pid,
            oom_killed: c.oom_killed,
            health: health(c),
            volumes: c.volumes.clone(),
        }))
    }

    /// An empty runtime: no containers, no images, cgroupfs driver.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A test that panicked while holding the lock has failed already;
        // keep serving the others.
        self.shared
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The name of the container `name_or_id` refers to, as Docker takes
    /// either: an ID of a container here is turned into its name.
    fn resolve(&self, name_or_id: &str) -> String {
        let state = self.state();
        state
            .containers
            .iter()
            .find(|(_, c)| c.id == name_or_id)
            .map_or_else(|| name_or_id.to_owned(), |(name, _)| name.clone())
    }

    /// Locks, records `call`, and fails when scripted unreachable.
    fn enter(&self, call: Call) -> Result<MutexGuard<'_, State>, RuntimeError> {
        let mut state = self.state();
        state.calls.push(call);
        state.check_reachable()?;
        Ok(state)
    }

    // ---- inspection of what happened ----

    /// Every trait call so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.state().calls.clone()
    }

    /// Forgets the recorded calls (state and scripts stay).
    pub fn clear_calls(&self) {
        self.state().calls.clear();
    }

    /// Forgets the exit codes recorded for waiters (one per run or stop of
    /// a container), so that a long run does not count them as the
    /// host's memory. Only while nothing waits for an exit.
    pub fn forget_exits(&self) {
        self.state().exits.clear();
    }

    /// The recorded calls other than read-only ones (inspect, list, image
    /// checks, waits, events): what changed the runtime, in order.
    pub fn mutations(&self) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| {
                matches!(
                    c,
                    Call::Create(_)
                        | Call::Start(_)
                        | Call::Stop(_)
                        | Call::Kill(_)
                        | Call::Remove(_)
                        | Call::RemoveStopped(_)
                        | Call::Rename(_, _)
                        | Call::Pull(_)
                )
            })
            .collect()
    }

    /// The spec a container was created with (with [`LABEL_MANAGED`] as
    /// create added it), if it exists.
    pub fn spec_of(&self, name: &str) -> Option<ContainerSpec> {
        self.state().containers.get(name).map(|c| c.spec.clone())
    }

    /// Whether the container exists and runs.
    pub fn is_running(&self, name: &str) -> bool {
        self.state()
            .containers
            .get(name)
            .is_some_and(|c| c.status == Status::Running)
    }

    /// Names of all containers, managed or not.
    pub fn container_names(&self) -> Vec<String> {
        self.state().containers.keys().cloned().collect()
    }

    /// Every network, by name.
    pub fn networks(&self) -> BTreeMap<String, NetworkInfo> {
        let state = self.state();
        state
            .networks
            .names()
            .into_iter()
            .map(|name| {
                let info = state.networks.info(&name, &state.containers);
                (name, info.unwrap_or_default())
            })
            .collect()
    }

    /// The networks `container` is attached to, with its place on each.
    pub fn attachments_of(&self, container: &str) -> Vec<NetworkAttach> {
        let state = self.state();
        let Some(c) = state.containers.get(container) else {
            return Vec::new();
        };
        let mut all = c.spec.networks.clone();
        if let Some(n) = c.spec.network.as_ref().filter(|n| state.networks.has(n)) {
            all.push(NetworkAttach {
                network: n.clone(),
                ..Default::default()
            });
        }
        all
    }

    /// Every volume that exists, by name.
    pub fn volumes(&self) -> Vec<String> {
        self.state().volumes.all.iter().cloned().collect()
    }

    /// The volumes mounted in `name` (empty when there is no such
    /// container).
    pub fn volumes_of(&self, name: &str) -> Vec<super::VolumeMount> {
        self.state()
            .containers
            .get(name)
            .map(|c| c.volumes.clone())
            .unwrap_or_default()
    }
}

#[async_trait::async_trait]
impl RuntimeView for FakeRuntime {
    async fn inspect(&self, name: &str) -> Result<Option<ContainerInfo>, RuntimeError> {
        let answer = self.inspect_now(name);
        let resolved = self.resolve(name);
        let delay = self.state().inspect_delays.get(&resolved).copied();
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        answer
    }

    async fn list_managed(&self) -> Result<Vec<ContainerSummary>, RuntimeError> {
        let state = self.enter(Call::ListManaged)?;
        Ok(state
            .containers
            .values()
            .filter(|c| c.spec.labels.get(LABEL_MANAGED) == Some(MANAGED_VALUE))
            .map(|c| ContainerSummary {
                id: c.id.clone(),
                name: c.spec.name.clone(),
                running: c.status == Status::Running,
                labels: c.spec.labels.clone().into_iter().collect(),
                created: c.created,
                network_mode: c.spec.network.clone(),
            })
            .collect())
    }

    async fn image_present(&self, image: &str) -> Result<bool, RuntimeError> {
        let state = self.enter(Call::ImagePresent(image.to_owned()))?;
        Ok(state.images.contains(image))
    }

    async fn cgroup_driver(&self) -> Result<CgroupDriver, RuntimeError> {
        let state = self.enter(Call::CgroupDriver)?;
        Ok(state.driver.unwrap_or(CgroupDriver::Cgroupfs))
    }

    async fn events(&self, names: &[String]) -> Result<EventStream, RuntimeError> {
        let mut state = self.enter(Call::Events(names.to_vec()))?;
        let (sender, receiver) = mpsc::unbounded_channel();
        state.subscribers.push(Subscriber {
            names: names.to_vec(),
            sender,
        });
        Ok(Box::pin(futures_util::stream::unfold(
            receiver,
            |mut receiver| async move { receiver.recv().await.map(|event| (Ok(event), receiver)) },
        )))
    }

    fn journals_output(&self) -> bool {
        !self.state().forwarded_output
    }

    async fn output(&self, name: &str, follow: bool) -> Result<OutputChunks, RuntimeError> {
        // Asked by id or by name, as Docker is.
        let name = {
            let state = self.enter(Call::Output(name.to_owned()))?;
            state
                .containers
                .iter()
                .find(|(_, c)| c.id == name)
                .map_or(name.to_owned(), |(n, _)| n.clone())
        };
        let name = name.as_str();
        let this = self.clone();
        let who = name.to_owned();
        let running = Arc::new(move || {
            this.state()
                .containers
                .get(&who)
                .is_some_and(|c| c.status == Status::Running)
        });
        Ok(self.shared.outputs.read(name, follow, running))
    }

    async fn repo_digests(&self, reference: &str) -> Result<Option<Vec<String>>, RuntimeError> {
        let state = self.enter(Call::ImagePresent(reference.to_owned()))?;
        if let Some(digests) = state.repo_digests.get(reference) {
            return Ok(Some(digests.clone()));
        }
        Ok(state.images.contains(reference).then(Vec::new))
    }

    async fn registry_digests(&self, reference: &str) -> Result<Vec<String>, RuntimeError> {
        let state = self.enter(Call::ImagePresent(reference.to_owned()))?;
        let digests: Vec<String> = state
            .repo_digests
            .get(reference)
            .into_iter()
            .flatten()
            .filter_map(|d| d.split_once('@'))
            .map(|(_, digest)| digest.to_string())
            .collect();
        if digests.is_empty() {
            return Err(RuntimeError::Registry {
                reference: reference.to_owned(),
                status: 404,
                reason: "manifest unknown".into(),
            });
        }
        Ok(digests)
    }

    async fn network(&self, name: &str) -> Result<Option<NetworkInfo>, RuntimeError> {
        let state = self.enter(Call::Network(name.to_owned()))?;
        Ok(state.networks.info(name, &state.containers))
    }

    async fn volume(&self, name: &str) -> Result<Option<VolumeInfo>, RuntimeError> {
        let state = self.enter(Call::Volume(name.to_owned()))?;
        Ok(state.volumes.get(name))
    }
}

#[async_trait::async_trait]
impl ContainerRuntime for FakeRuntime {
    async fn create(&self, spec: &ContainerSpec) -> Result<ContainerId, RuntimeError> {
        let mut state = self.enter(Call::Create(spec.name.clone()))?;
        if let Some(error) = state.fail_create.remove(&spec.name) {
            return Err(error);
        }
        if state.containers.contains_key(&spec.name) {
            return Err(RuntimeError::Conflict {
                what: format!("container {}", spec.name),
                reason: "name already in use".into(),
            });
        }
        if !state.images.contains(&spec.image) {
            return Err(RuntimeError::NotFound {
                what: format!("image {} (for container {})", spec.image, spec.name),
            });
        }
        let mut spec = spec.clone();
        spec.labels
            .insert(LABEL_MANAGED.into(), MANAGED_VALUE.into());
        // As Docker: a peer named in `container:NAME` must exist, and
        // the follower keeps the peer's id, not its name.
        if let Some(peer) = spec
            .network
            .as_deref()
            .and_then(|n| n.strip_prefix("container:"))
        {
            let id = state.id_of(peer).ok_or_else(|| RuntimeError::NotFound {
                what: format!("container {peer} (the network peer of {})", spec.name),
            })?;
            spec.network = Some(format!("container:{id}"));
        }
        Ok(ContainerId(state.insert(spec)))
    }

    async fn start(&self, name: &str) -> Result<(), RuntimeError> {
        let name = &self.resolve(name);
        let delay = {
            let state = self.enter(Call::Start(name.to_owned()))?;
            state.start_delays.get(name).copied()
        };
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        let run = {
            let mut state = self.state();
            state.check_reachable()?;
            let Some(container) = state.containers.get(name) else {
                return Err(not_found(name));
            };
            if container.status == Status::Running {
                return Ok(());
            }
            if state.fail_start.contains(name) {
                return Err(RuntimeError::Api {
                    context: format!("start container {name}"),
                    reason: "scripted start failure".into(),
                });
            }
            state.peer_running(name)?;
            state.begin_run(name)
        };
        if let Some(run) = run {
            let started = self.state().on_start.get(name).cloned();
            if let Some(OnStart(act)) = started {
                act();
            }
            self.arm_scripted_exit(name, run);
        }
        Ok(())
    }

    async fn stop(&self, name: &str) -> Result<(), RuntimeError> {
        let delay = {
            let state = self.enter(Call::Stop(name.to_owned()))?;
            let Some(container) = state.containers.get(name) else {
                return Err(not_found(name));
            };
            if container.status != Status::Running {
                return Ok(());
            }
            if state.fail_stop.contains(name) {
                return Err(RuntimeError::Api {
                    context: format!("stop container {name}"),
                    reason: "scripted stop failure".into(),
                });
            }
            state.stop_delays.get(name).copied()
        };
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        let (was_running, cleanup) = {
            let mut state = self.state();
            let code = state.stop_exit_codes.get(name).copied().unwrap_or(0);
            let was_running = state
                .containers
                .get(name)
                .is_some_and(|c| c.status == Status::Running);
            state.end_run(name, code);
            (was_running, state.stop_cleanups.get(name).copied())
        };
        self.shared.changed.notify_waiters();
        self.shared.outputs.wake();
        if let Some(cleanup) = cleanup {
            tokio::time::sleep(cleanup).await;
        }
        if was_running {
            self.state().emit(name, ContainerEventKind::Stop);
        }
        Ok(())
    }

    async fn kill(&self, name: &str) -> Result<(), RuntimeError> {
        {
            let mut state = self.enter(Call::Kill(name.to_owned()))?;
            if !state.containers.contains_key(name) {
                return Err(not_found(name));
            }
            state.end_run(name, KILLED_EXIT_CODE);
        }
        self.shared.changed.notify_waiters();
        self.shared.outputs.wake();
        Ok(())
    }

    async fn remove(&self, name: &str) -> Result<(), RuntimeError> {
        {
            let mut state = self.enter(Call::Remove(name.to_owned()))?;
            state.end_run(name, KILLED_EXIT_CODE);
            state.containers.remove(name);
        }
        self.shared.changed.notify_waiters();
        self.shared.outputs.wake();
        Ok(())
    }

    async fn remove_stopped(&self, name: &str) -> Result<(), RuntimeError> {
        {
            let mut state = self.enter(Call::RemoveStopped(name.to_owned()))?;
            if state
                .containers
                .get(name)
                .is_some_and(|c| c.status == Status::Running)
            {
                return Err(RuntimeError::Conflict {
                    what: format!("container {name}"),
                    reason: "cannot remove a running container".into(),
                });
            }
            state.containers.remove(name);
        }
        self.shared.changed.notify_waiters();
        self.shared.outputs.wake();
        Ok(())
    }

    async fn rename(&self, name: &str, to: &str) -> Result<(), RuntimeError> {
        let name = &self.resolve(name);
        let mut state = self.enter(Call::Rename(name.to_owned(), to.to_owned()))?;
        state.rename(name, to)
    }

    async fn wait_exit(&self, name: &str) -> Result<i64, RuntimeError> {
        let seen = {
            let state = self.enter(Call::WaitExit(name.to_owned()))?;
            let Some(container) = state.containers.get(name) else {
                return Err(not_found(name));
            };
            if container.status == Status::Exited {
                return Ok(container.exit_code.unwrap_or_default());
            }
            state.exits.get(name).map_or(0, Vec::len)
        };
        loop {
            let notified = self.shared.changed.notified();
            tokio::pin!(notified);
            // Registered before looking, so an exit between the look and the
            // await still wakes us.
            notified.as_mut().enable();
            {
                let state = self.state();
                if let Some(code) = state.exits.get(name).and_then(|e| e.get(seen)) {
                    return Ok(*code);
                }
                if state.lost_track.contains(name) {
                    return Err(RuntimeError::Api {
                        context: format!("wait for container {name}"),
                        reason: "scripted: lost track".into(),
                    });
                }
                if !state.containers.contains_key(name) {
                    return Err(not_found(name));
                }
            }
            notified.await;
        }
    }

    async fn pull(&self, image: &str) -> Result<(), RuntimeError> {
        let mut state = self.enter(Call::Pull(image.to_owned()))?;
        if let Some(failure) = state.fail_pull.get_mut(image) {
            let error = failure.error.clone();
            let exhausted = match &mut failure.remaining {
                None => false,
                Some(n) => {
                    *n = n.saturating_sub(1);
                    *n == 0
                }
            };
            if exhausted {
                state.fail_pull.remove(image);
            }
            return Err(error);
        }
        state.images.insert(image.to_owned());
        Ok(())
    }

    async fn create_network(&self, spec: &NetworkSpec) -> Result<(), RuntimeError> {
        let mut state = self.enter(Call::CreateNetwork(spec.name.clone()))?;
        state.networks.create(spec)
    }

    async fn remove_network(&self, name: &str) -> Result<(), RuntimeError> {
        let mut state = self.enter(Call::RemoveNetwork(name.to_owned()))?;
        let State {
            networks,
            containers,
            ..
        } = &mut *state;
        networks.remove(name, containers)
    }

    async fn connect(&self, container: &str, attach: &NetworkAttach) -> Result<(), RuntimeError> {
        let mut state = self.enter(Call::Connect(container.to_owned(), attach.network.clone()))?;
        let State {
            networks,
            containers,
            ..
        } = &mut *state;
        networks.connect(containers, container, attach)
    }

    async fn disconnect(&self, container: &str, network: &str) -> Result<(), RuntimeError> {
        let mut state = self.enter(Call::Disconnect(container.to_owned(), network.to_owned()))?;
        networks::Networks::disconnect(&mut state.containers, container, network);
        Ok(())
    }

    async fn create_volume(&self, spec: &VolumeSpec) -> Result<(), RuntimeError> {
        let mut state = self.enter(Call::CreateVolume(spec.name.clone()))?;
        state.volumes.create(spec);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::ContainerEvent;
    use futures_util::StreamExt;
    use std::time::Duration;

    const IMAGE: &str = "registry.test/app@sha256:0000";

    fn spec(name: &str) -> ContainerSpec {
        ContainerSpec {
            name: name.into(),
            image: IMAGE.into(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn lifecycle_follows_docker_rules_and_is_recorded_in_order() {
        let fake = FakeRuntime::new();
        let missing = fake.create(&spec("web")).await.expect_err("no image yet");
        assert!(
            matches!(missing, RuntimeError::NotFound { .. }),
            "{missing:?}"
        );
        fake.pull(IMAGE).await.expect("pull");
        fake.create(&spec("web")).await.expect("create");
        let conflict = fake.create(&spec("web")).await.expect_err("name taken");
        assert!(
            matches!(conflict, RuntimeError::Conflict { .. }),
            "{conflict:?}"
        );
        fake.start("web").await.expect("start");
        fake.start("web").await.expect("already running is ok");
        assert!(fake.is_running("web"));
        fake.stop("web").await.expect("stop");
        fake.stop("web").await.expect("already stopped is ok");
        let info = fake.inspect("web").await.expect("inspect").expect("exists");
        assert_eq!(
            (info.running, info.status.as_str(), info.exit_code),
            (false, "exited", Some(0))
        );
        assert_eq!(
            info.labels.get(LABEL_MANAGED).map(String::as_str),
            Some("true")
        );
        fake.remove("web").await.expect("remove");
        fake.remove("web").await.expect("missing is ok");
        assert_eq!(fake.inspect("web").await.expect("inspect"), None);
        assert_eq!(
            fake.mutations(),
            vec![
                Call::Create("web".into()),
                Call::Pull(IMAGE.into()),
                Call::Create("web".into()),
                Call::Create("web".into()),
                Call::Start("web".into()),
                Call::Start("web".into()),
                Call::Stop("web".into()),
                Call::Stop("web".into()),
                Call::Remove("web".into()),
                Call::Remove("web".into()),
            ]
        );
    }

    #[tokio::test]
    async fn scripted_exit_reaches_a_waiter_before_and_after_the_exit() {
        let fake = FakeRuntime::new();
        fake.add_image(IMAGE);
        fake.create(&spec("step")).await.expect("create");
        fake.exit_with("step", 3, Duration::from_millis(20));
        // Waiting on a created container waits for the run a start begins.
        let waiter = {
            let fake = fake.clone();
            tokio::spawn(async move { fake.wait_exit("step").await })
        };
        tokio::task::yield_now().await;
        fake.start("step").await.expect("start");
        let code = waiter.await.expect("join").expect("wait");
        assert_eq!(code, 3);
        // An exit that already happened is returned at once.
        assert_eq!(fake.wait_exit("step").await.expect("wait"), 3);
        assert!(!fake.is_running("step"));
    }

    #[tokio::test]
    async fn scripted_failures_and_unmanaged_containers() {
        let fake = FakeRuntime::new();
        fake.add_image(IMAGE);
        fake.add_container(spec("theirs"), true);
        fake.create(&spec("held")).await.expect("create");
        fake.fail_start("held");
        let err = fake.start("held").await.expect_err("scripted");
        assert!(matches!(err, RuntimeError::Api { .. }), "{err:?}");
        fake.heal_start("held");
        fake.start("held").await.expect("healed");

        let unavailable = RuntimeError::RegistryUnavailable {
            reference: "r@sha256:1".into(),
            reason: "connection refused".into(),
        };
        fake.fail_pull_times("r@sha256:1", unavailable.clone(), 2);
        assert_eq!(fake.pull("r@sha256:1").await, Err(unavailable.clone()));
        assert_eq!(fake.pull("r@sha256:1").await, Err(unavailable));
        fake.pull("r@sha256:1").await.expect("third pull works");
        assert!(fake.image_present("r@sha256:1").await.expect("present"));

        let managed: Vec<String> = fake
            .list_managed()
            .await
            .expect("list")
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(managed, vec!["held".to_owned()]);

        fake.set_unreachable(true);
        let err = fake.inspect("held").await.expect_err("unreachable");
        assert!(err.is_transient(), "{err:?}");
    }

    #[tokio::test]
    async fn events_report_starts_and_exits_of_the_named_containers_only() {
        let fake = FakeRuntime::new();
        fake.add_image(IMAGE);
        fake.create(&spec("held")).await.expect("create");
        fake.create(&spec("other")).await.expect("create");
        let mut events = fake.events(&["held".to_owned()]).await.expect("events");
        fake.start("other").await.expect("start other");
        assert!(fake.external_start("held"));
        fake.kill("held").await.expect("kill");
        let first = events.next().await.expect("an event").expect("ok");
        let second = events.next().await.expect("an event").expect("ok");
        assert_eq!(
            (first, second),
            (
                ContainerEvent {
                    name: "held".into(),
                    kind: ContainerEventKind::Start
                },
                ContainerEvent {
                    name: "held".into(),
                    kind: ContainerEventKind::Die {
                        exit_code: Some(KILLED_EXIT_CODE)
                    }
                }
            )
        );
        // external_start is not a call; kill is.
        assert!(!fake.calls().contains(&Call::Start("held".into())));
        assert!(fake.calls().contains(&Call::Kill("held".into())));
    }
}
