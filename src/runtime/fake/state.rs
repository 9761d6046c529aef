//! The fake's world: its containers and their runs, with Docker's rules
//! (a name is unique, a run starts and ends, a removal keeps the
//! volumes), and the scripts armed for them. Networks and volumes are
//! kept beside it, each in a type of its own ([`super::networks`],
//! [`super::volumes`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::Duration;

use tokio::sync::mpsc;

use super::super::{CgroupDriver, ContainerEvent, ContainerEventKind, ContainerSpec, RuntimeError};
use super::calls::Call;
use super::container::{not_found, Container, Status};
use super::networks::Networks;
use super::volumes::Volumes;

/// Endpoint named in the fake's [`RuntimeError::Unreachable`].
pub const FAKE_ENDPOINT: &str = "fake://runtime";

#[derive(Debug)]
pub(super) struct PullFailure {
    pub(super) error: RuntimeError,
    /// `None`: every pull fails; `Some(n)`: the next n pulls fail.
    pub(super) remaining: Option<usize>,
}

#[derive(Debug)]
pub(super) struct Subscriber {
    pub(super) names: Vec<String>,
    pub(super) sender: mpsc::UnboundedSender<ContainerEvent>,
}

#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) containers: BTreeMap<String, Container>,
    pub(super) images: BTreeSet<String>,
    pub(super) calls: Vec<Call>,
    /// Every exit code per name, in order; outlives removal so a waiter on
    /// an auto-remove container still gets its code.
    pub(super) exits: HashMap<String, Vec<i64>>,
    pub(super) exit_scripts: HashMap<String, (i64, Duration)>,
    /// Containers whose runs the OOM killer ends.
    pub(super) oom_kills: BTreeSet<String>,
    pub(super) stop_delays: HashMap<String, Duration>,
    pub(super) stop_cleanups: HashMap<String, Duration>,
    pub(super) start_delays: HashMap<String, Duration>,
    /// Answers of inspects of these names arrive this long after they
    /// were read (a runtime slow to answer).
    pub(super) inspect_delays: HashMap<String, Duration>,
    pub(super) stop_exit_codes: HashMap<String, i64>,
    pub(super) fail_start: HashSet<String>,
    pub(super) fail_stop: HashSet<String>,
    pub(super) fail_create: HashMap<String, RuntimeError>,
    pub(super) fail_pull: HashMap<String, PullFailure>,
    pub(super) unreachable: bool,
    /// Waits on these names fail (the runtime lost track of the run).
    pub(super) lost_track: HashSet<String>,
    /// Inspects of these names panic.
    pub(super) panic_on_inspect: HashSet<String>,
    /// Scripted health: `(status, output)` reported while running, and
    /// after how long a start it turns to that status (`starting` before).
    pub(super) health: HashMap<String, (String, String, Duration)>,
    pub(super) driver: Option<CgroupDriver>,
    pub(super) subscribers: Vec<Subscriber>,
    pub(super) next_id: u64,
    /// Repository digests by local tag (`set_repo_digests`).
    pub(super) repo_digests: HashMap<String, Vec<String>>,
    /// Every network, by name.
    pub(super) networks: Networks,
    /// Every volume, and the ones images declare.
    pub(super) volumes: Volumes,
    /// What a run of these names does to the world when it starts (a
    /// run-once step writing a file).
    pub(super) on_start: HashMap<String, OnStart>,
    /// Containers' output goes to the runtime's own logs, not the journal:
    /// mesh-host forwards it (Podman's case).
    pub(super) forwarded_output: bool,
}

/// What a run does when it starts ([`State::on_start`]).
#[derive(Clone)]
pub(super) struct OnStart(pub(super) std::sync::Arc<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for OnStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnStart(..)")
    }
}

impl State {
    pub(super) fn emit(&mut self, name: &str, kind: ContainerEventKind) {
        self.subscribers.retain(|s| {
            if !s.names.iter().any(|n| n == name) {
                return !s.sender.is_closed();
            }
            s.sender
                .send(ContainerEvent {
                    name: name.to_owned(),
                    kind,
                })
                .is_ok()
        });
    }

    pub(super) fn begin_run(&mut self, name: &str) -> Option<u64> {
        self.next_id += 1;
        let pid = u32::try_from(10_000 + self.next_id).unwrap_or(u32::MAX);
        let container = self.containers.get_mut(name)?;
        container.status = Status::Running;
        container.exit_code = None;
        container.run += 1;
        container.started_at = Some(now());
        container.finished_at = None;
        container.oom_killed = false;
        container.pid = Some(pid);
        container.started_instant = Some(tokio::time::Instant::now());
        let run = container.run;
        self.emit(name, ContainerEventKind::Start);
        Some(run)
    }

    /// Ends the current run of a running container; the caller notifies
    /// waiters after releasing the lock.
    pub(super) fn end_run(&mut self, name: &str, code: i64) {
        let oom = self.oom_kills.contains(name);
        let Some(container) = self.containers.get_mut(name) else {
            return;
        };
        container.oom_killed = oom;
        if container.status != Status::Running {
            return;
        }
        container.status = Status::Exited;
        container.exit_code = Some(code);
        container.finished_at = Some(now());
        container.pid = None;
        container.started_instant = None;
        let auto_remove = container.spec.auto_remove;
        self.exits.entry(name.to_owned()).or_default().push(code);
        self.emit(
            name,
            ContainerEventKind::Die {
                exit_code: Some(code),
            },
        );
        if auto_remove {
            self.containers.remove(name);
        }
    }

    /// Adds a created container; returns its id.
    pub(super) fn insert(&mut self, spec: ContainerSpec) -> String {
        let volumes = self.volumes.mount(&spec, &mut self.next_id);
        self.next_id += 1;
        let id = format!("{:064x}", self.next_id);
        self.containers.insert(
            spec.name.clone(),
            Container {
                id: id.clone(),
                spec,
                status: Status::Created,
                exit_code: None,
                run: 0,
                started_at: None,
                finished_at: None,
                pid: None,
                oom_killed: false,
                started_instant: None,
                created: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as i64),
                volumes,
            },
        );
        id
    }

    /// The id of the container with this name or id.
    pub(super) fn id_of(&self, name_or_id: &str) -> Option<String> {
        match self.containers.get(name_or_id) {
            Some(c) => Some(c.id.clone()),
            None => self
                .containers
                .values()
                .find(|c| c.id == name_or_id)
                .map(|c| c.id.clone()),
        }
    }

    /// Docker's rule at start: a container sharing another's network
    /// namespace (`container:<id>`) starts only while that one runs.
    pub(super) fn peer_running(&self, name: &str) -> Result<(), RuntimeError> {
        let Some(peer) = self
            .containers
            .get(name)
            .and_then(|c| c.spec.network.as_deref())
            .and_then(|n| n.strip_prefix("container:"))
        else {
            return Ok(());
        };
        match self.containers.values().find(|c| c.id == peer) {
            Some(c) if c.status == Status::Running => Ok(()),
            Some(_) => Err(RuntimeError::Api {
                context: format!("start container {name}"),
                reason: format!("cannot join network of a non running container: {peer}"),
            }),
            None => Err(RuntimeError::Api {
                context: format!("start container {name}"),
                reason: format!(
                    "joining network namespace of container: No such container: {peer}"
                ),
            }),
        }
    }

    /// Docker's rename: the container keeps everything but its name.
    pub(super) fn rename(&mut self, name: &str, to: &str) -> Result<(), RuntimeError> {
        if self.containers.contains_key(to) {
            return Err(RuntimeError::Conflict {
                what: format!("container {name}"),
                reason: format!("the name {to} is already in use"),
            });
        }
        let mut container = self
            .containers
            .remove(name)
            .ok_or_else(|| not_found(name))?;
        container.spec.name = to.to_owned();
        self.containers.insert(to.to_owned(), container);
        Ok(())
    }

    pub(super) fn check_reachable(&self) -> Result<(), RuntimeError> {
        if self.unreachable {
            Err(RuntimeError::Unreachable {
                endpoint: FAKE_ENDPOINT.into(),
                reason: "scripted: unreachable".into(),
            })
        } else {
            Ok(())
        }
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
}
