//! Containers through the Docker client: create (from a [`ContainerSpec`],
//! labelled as managed), start, stop, kill, remove, wait for an exit,
//! inspect and list; and the answers of Podman's compatible API that must
//! be asked for again.

use std::collections::HashMap;
use std::time::Duration;

use bollard::errors::Error as BollardError;
use bollard::models::{
    ContainerCreateBody, ContainerInspectResponse, ContainerStateStatusEnum,
    ContainerSummaryStateEnum, HostConfig, Mount, MountType, NetworkingConfig, PortBinding,
    ResourcesUlimits, RestartPolicy as DockerRestart, RestartPolicyNameEnum,
};
use bollard::query_parameters::{
    KillContainerOptions, ListContainersOptions, RemoveContainerOptions, RenameContainerOptions,
    WaitContainerOptions,
};
use futures_util::StreamExt;

use super::client::{DockerRuntime, LONG_TIMEOUT};
pub(super) use super::create::create_as;
use super::health::health_config;
use super::inspection::{container_info, to_btree};
use super::log_driver::{declared_log_config, log_config};
use crate::runtime::{
    ContainerId, ContainerInfo, ContainerSpec, ContainerSummary, RestartPolicy, RuntimeError,
    LABEL_MANAGED, MANAGED_VALUE,
};

/// Added to a container's own stop grace for the stop request's timeout.
const STOP_MARGIN: Duration = Duration::from_secs(30);
/// Docker's stop grace when the container sets none.
const DEFAULT_STOP_GRACE_SECS: u64 = 10;
/// How long kill/remove wait for the state they asked for.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Poll interval while waiting for a state.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

impl DockerRuntime {
    /// Raw inspect; `None` on 404.
    pub(super) async fn inspect_raw(
        &self,
        name: &str,
    ) -> Result<Option<ContainerInspectResponse>, RuntimeError> {
        match settled(|| self.docker.inspect_container(name, None)).await {
            Ok(info) => Ok(Some(info)),
            Err(BollardError::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(None),
            Err(err) => Err(self.error(
                &format!("inspect container {name}"),
                &format!("container {name}"),
                err,
            )),
        }
    }

    /// Polls until the container is not running (or gone), up to `limit`.
    async fn settle_not_running(&self, name: &str, limit: Duration) -> Result<bool, RuntimeError> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match self.inspect_raw(name).await? {
                None => return Ok(true),
                Some(info) if !is_running(&info) => return Ok(true),
                Some(_) => {}
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(false);
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// Polls until a created container has left the `created` state and
    /// ended, returning its exit code; used next to a `next-exit` wait so a
    /// start-and-exit between our inspect and the wait's registration is
    /// still seen.
    async fn poll_exit_of_created(&self, name: &str) -> Result<i64, RuntimeError> {
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let Some(info) = self.inspect_raw(name).await? else {
                return Err(RuntimeError::NotFound {
                    what: format!("container {name}"),
                });
            };
            let state = info.state.unwrap_or_default();
            let status = state.status.unwrap_or(ContainerStateStatusEnum::EMPTY);
            if matches!(
                status,
                ContainerStateStatusEnum::EXITED | ContainerStateStatusEnum::DEAD
            ) {
                return Ok(state.exit_code.unwrap_or_default());
            }
        }
    }

    /// One `wait` request with the given condition.
    async fn wait_condition(&self, name: &str, condition: &str) -> Result<i64, RuntimeError> {
        let client = self.client_with_timeout(LONG_TIMEOUT);
        let options = WaitContainerOptions {
            condition: condition.into(),
        };
        let mut stream = client.wait_container(name, Some(options));
        let context = format!("wait for container {name}");
        match stream.next().await {
            Some(Ok(response)) => match response.error.and_then(|e| e.message) {
                Some(message) if !message.is_empty() => Err(RuntimeError::Api {
                    context,
                    reason: message,
                }),
                _ => Ok(response.status_code),
            },
            // bollard turns a non-zero exit into an error; it is an answer.
            Some(Err(BollardError::DockerContainerWaitError { code, error })) => {
                if error.is_empty() {
                    Ok(code)
                } else {
                    Err(RuntimeError::Api {
                        context,
                        reason: format!("exit code {code}: {error}"),
                    })
                }
            }
            Some(Err(err)) => Err(self.error(&context, &format!("container {name}"), err)),
            None => Err(RuntimeError::Api {
                context,
                reason: "the runtime closed the wait without an exit code".into(),
            }),
        }
    }
}

/// Creates the container `spec` describes, labelled as managed
/// ([`crate::runtime::ContainerRuntime::create`]).
pub(super) async fn create(
    rt: &DockerRuntime,
    spec: &ContainerSpec,
) -> Result<ContainerId, RuntimeError> {
    let mut body = create_body(spec);
    let podman = rt.is_podman();
    if podman {
        if let Some(reason) = super::podman_lacks::lacking(spec) {
            return Err(RuntimeError::Api {
                context: format!("create container {}", spec.name),
                reason,
            });
        }
        if let Some(host) = body.host_config.as_mut() {
            host.log_config = spec.journal.as_ref().map(|j| log_config(j, true));
        }
        // Podman 4.3's compatible API records a create with no
        // StopTimeout as 0, where Docker applies its 10 s: every stop of
        // such a container would be an immediate SIGKILL (a database
        // never given its shutdown). Docker's grace is sent instead.
        if body.stop_timeout.is_none() {
            body.stop_timeout = Some(DEFAULT_STOP_GRACE_SECS as i64);
        }
        // Podman 4.3 gives a container one name server per network, each
        // answering for its own network alone, listed in no set order: a
        // resolver asking the first would find the names of one network
        // or another from one start to the next. A container on several
        // networks is given its first network's server alone (its
        // gateway), so that the first of `networks` is the one whose
        // names resolve, every time; the server forwards other names.
        if spec.networks.len() > 1 && spec.dns.is_empty() {
            let first = &spec.networks[0].network;
            let gateway = super::networking::network(rt, first)
                .await?
                .and_then(|n| n.gateway)
                .and_then(|g| g.split('/').next().map(str::to_owned));
            if let (Some(gateway), Some(host)) = (gateway, body.host_config.as_mut()) {
                host.dns = Some(vec![gateway]);
            }
        }
        super::image_defaults::fill(rt, spec, &mut body).await;
        body.networking_config = (!spec.networks.is_empty()).then(|| NetworkingConfig {
            endpoints_config: Some(
                spec.networks
                    .iter()
                    .map(|n| (n.network.clone(), super::networking::endpoint(n)))
                    .collect(),
            ),
        });
    }
    let id = create_as(
        rt,
        &spec.name,
        &spec.image,
        spec.process.platform.as_deref(),
        body,
    )
    .await?;
    // Docker 20.10 takes one network at create; the others are joined
    // before the first start. A join that fails leaves no half-made
    // container behind.
    let later = if podman { 0 } else { spec.networks.len() };
    for attach in spec.networks.iter().skip(1).take(later) {
        if let Err(e) = super::networking::connect(rt, &spec.name, attach).await {
            let _ = remove(rt, &spec.name).await;
            return Err(e);
        }
    }
    Ok(id)
}

/// Starts a container ([`crate::runtime::ContainerRuntime::start`]).
pub(super) async fn start(rt: &DockerRuntime, name: &str) -> Result<(), RuntimeError> {
    let what = format!("container {name}");
    let context = format!("start container {name}");
    let before = rt
        .inspect_raw(name)
        .await?
        .ok_or_else(|| RuntimeError::NotFound { what: what.clone() })?;
    if is_running(&before) {
        return Ok(());
    }
    start_request(rt, name).await?;
    let Some(after) = rt.inspect_raw(name).await? else {
        // An auto-remove container that already ran and is gone.
        return Ok(());
    };
    let started_at =
        |info: &ContainerInspectResponse| info.state.as_ref().and_then(|s| s.started_at.clone());
    if is_running(&after) || started_at(&after) != started_at(&before) {
        return Ok(());
    }
    let status = after
        .state
        .and_then(|s| s.status)
        .map(|s| s.to_string())
        .unwrap_or_default();
    Err(RuntimeError::Api {
        context,
        reason: format!("accepted but not running afterwards (status {status})"),
    })
}

/// Starts a container and inspects it once
/// ([`crate::runtime::ContainerRuntime::start_and_inspect`]): one request
/// to start (Docker answers an already running one with 304, a success),
/// one to inspect.
pub(super) async fn start_and_inspect(
    rt: &DockerRuntime,
    name: &str,
) -> Result<Option<ContainerInfo>, RuntimeError> {
    start_request(rt, name).await?;
    inspect(rt, name).await
}

/// The request that starts container `name`, asked once more when runc
/// lost the container's cgroup as it set it up (see
/// [`crate::runtime::error::start_once_more_if_cgroup_lost`]).
async fn start_request(rt: &DockerRuntime, name: &str) -> Result<(), RuntimeError> {
    let what = format!("container {name}");
    let context = format!("start container {name}");
    crate::runtime::error::start_once_more_if_cgroup_lost(name, || async {
        rt.docker
            .start_container(name, None)
            .await
            .map_err(|err| rt.error(&context, &what, err))
    })
    .await
}

/// Stops a container within its own grace ([`crate::runtime::ContainerRuntime::stop`]).
pub(super) async fn stop(rt: &DockerRuntime, name: &str) -> Result<(), RuntimeError> {
    let what = format!("container {name}");
    let context = format!("stop container {name}");
    let info = rt
        .inspect_raw(name)
        .await?
        .ok_or_else(|| RuntimeError::NotFound { what: what.clone() })?;
    if !is_running(&info) {
        return Ok(());
    }
    // Docker applies the container's own StopTimeout when none is sent;
    // the request must outlast it. A negative one means "wait forever".
    let grace = info.config.as_ref().and_then(|c| c.stop_timeout);
    let timeout = match grace {
        Some(secs) if secs < 0 => LONG_TIMEOUT,
        Some(secs) => Duration::from_secs(secs.unsigned_abs()) + STOP_MARGIN,
        None => Duration::from_secs(DEFAULT_STOP_GRACE_SECS) + STOP_MARGIN,
    };
    match rt
        .client_with_timeout(timeout)
        .stop_container(name, None)
        .await
    {
        Ok(()) => {}
        Err(err) => return Err(rt.error(&context, &what, err)),
    }
    if rt.settle_not_running(name, SETTLE_TIMEOUT).await? {
        Ok(())
    } else {
        Err(RuntimeError::Api {
            context,
            reason: "still running after the stop returned".into(),
        })
    }
}

/// Kills a container and waits for it to stop ([`crate::runtime::ContainerRuntime::kill`]).
pub(super) async fn kill(rt: &DockerRuntime, name: &str) -> Result<(), RuntimeError> {
    let what = format!("container {name}");
    let context = format!("kill container {name}");
    let options = KillContainerOptions {
        signal: "SIGKILL".into(),
    };
    match rt.docker.kill_container(name, Some(options)).await {
        Ok(()) => {}
        // 409: "is not running" — the state kill asks for.
        Err(BollardError::DockerResponseServerError {
            status_code: 409, ..
        }) => return Ok(()),
        Err(err) => return Err(rt.error(&context, &what, err)),
    }
    if rt.settle_not_running(name, SETTLE_TIMEOUT).await? {
        Ok(())
    } else {
        Err(RuntimeError::Api {
            context,
            reason: format!("still running {} s after SIGKILL", SETTLE_TIMEOUT.as_secs()),
        })
    }
}

/// Removes a container and waits for it to be gone ([`crate::runtime::ContainerRuntime::remove`]);
/// its volumes stay.
pub(super) async fn remove(rt: &DockerRuntime, name: &str) -> Result<(), RuntimeError> {
    remove_with(rt, name, true).await
}

/// Removes a container unless it runs ([`crate::runtime::ContainerRuntime::remove_stopped`]):
/// without `force`, Docker itself refuses a running one (409), so a start
/// racing this removal is never cut short.
pub(super) async fn remove_stopped(rt: &DockerRuntime, name: &str) -> Result<(), RuntimeError> {
    remove_with(rt, name, false).await
}

/// One removal request; missing is `Ok`. A 409 is, forced, a removal
/// already in progress (e.g. auto-remove), waited for; unforced, Docker's
/// refusal of a running container. Never with `v`: an anonymous volume
/// outlives its container (the next one made in its place carries it,
/// src/runtime/replace.rs), and mesh-host deletes no volume.
pub(super) async fn remove_with(
    rt: &DockerRuntime,
    name: &str,
    force: bool,
) -> Result<(), RuntimeError> {
    let what = format!("container {name}");
    let context = format!("remove container {name}");
    let options = RemoveContainerOptions {
        force,
        v: false,
        link: false,
    };
    match rt.docker.remove_container(name, Some(options)).await {
        Ok(())
        | Err(BollardError::DockerResponseServerError {
            status_code: 404, ..
        }) => Ok(()),
        Err(BollardError::DockerResponseServerError {
            status_code: 409,
            message,
        }) => {
            if force {
                let deadline = tokio::time::Instant::now() + SETTLE_TIMEOUT;
                while tokio::time::Instant::now() < deadline {
                    if rt.inspect_raw(name).await?.is_none() {
                        return Ok(());
                    }
                    tokio::time::sleep(POLL_INTERVAL).await;
                }
            }
            Err(RuntimeError::Conflict {
                what,
                reason: message,
            })
        }
        Err(err) => Err(rt.error(&context, &what, err)),
    }
}

/// Renames a container ([`crate::runtime::ContainerRuntime::rename`]).
pub(super) async fn rename(rt: &DockerRuntime, name: &str, to: &str) -> Result<(), RuntimeError> {
    let options = RenameContainerOptions {
        name: to.to_owned(),
    };
    rt.docker
        .rename_container(name, options)
        .await
        .map_err(|err| {
            rt.error(
                &format!("rename container {name} to {to}"),
                &format!("container {name}"),
                err,
            )
        })
}

/// Waits for a container to exit; its exit code ([`crate::runtime::ContainerRuntime::wait_exit`]).
///
/// Docker's `die` event is raced against its `wait` endpoint: the event
/// comes as soon as the run's processes are gone, the endpoint only once
/// Docker has cleaned the container up (its mounts, its network), which a
/// window's held containers need not wait for. The endpoint still answers
/// for a run that ended before the events were asked for, and for a
/// runtime whose events carry no exit code.
pub(super) async fn wait_exit(rt: &DockerRuntime, name: &str) -> Result<i64, RuntimeError> {
    // Asked for first: the events from this moment on are replayed, so a
    // run that ends after the inspection below is seen.
    let events = super::events::events(rt, &[name.to_string()]).await;
    let info = rt
        .inspect_raw(name)
        .await?
        .ok_or_else(|| RuntimeError::NotFound {
            what: format!("container {name}"),
        })?;
    let status = info
        .state
        .as_ref()
        .and_then(|s| s.status)
        .unwrap_or(ContainerStateStatusEnum::EMPTY);
    let waited = async {
        if status == ContainerStateStatusEnum::CREATED {
            // `not-running` would answer at once with 0 for a container that
            // never ran; `next-exit` waits for the run a start begins. Poll
            // alongside in case that run ends before the wait is registered.
            tokio::select! {
                code = rt.wait_condition(name, "next-exit") => code,
                code = rt.poll_exit_of_created(name) => code,
            }
        } else {
            // Running: waits for the exit; exited: answers with its code.
            rt.wait_condition(name, "not-running").await
        }
    };
    if matches!(
        status,
        ContainerStateStatusEnum::EXITED | ContainerStateStatusEnum::DEAD
    ) {
        // Ended already: its `die` is in the past, the endpoint answers.
        return waited.await;
    }
    tokio::select! {
        code = waited => code,
        code = super::events::first_die(events) => Ok(code),
    }
}

pub(super) async fn inspect(
    rt: &DockerRuntime,
    name: &str,
) -> Result<Option<ContainerInfo>, RuntimeError> {
    Ok(rt.inspect_raw(name).await?.map(container_info))
}

/// Every container labelled as managed ([`crate::runtime::RuntimeView::list_managed`]).
pub(super) async fn list_managed(
    rt: &DockerRuntime,
) -> Result<Vec<ContainerSummary>, RuntimeError> {
    let filters = HashMap::from([(
        "label".to_owned(),
        vec![format!("{LABEL_MANAGED}={MANAGED_VALUE}")],
    )]);
    let options = ListContainersOptions {
        all: true,
        filters: Some(filters),
        ..Default::default()
    };
    let list = settled(|| rt.docker.list_containers(Some(options.clone())))
        .await
        .map_err(|err| rt.error("list managed containers", "containers", err))?;
    Ok(list
        .into_iter()
        .map(|c| ContainerSummary {
            id: c.id.unwrap_or_default(),
            name: c
                .names
                .and_then(|names| names.into_iter().next())
                .unwrap_or_default()
                .trim_start_matches('/')
                .to_owned(),
            running: matches!(
                c.state,
                Some(ContainerSummaryStateEnum::RUNNING | ContainerSummaryStateEnum::RESTARTING)
            ),
            labels: to_btree(c.labels),
            created: c.created.unwrap_or_default(),
            network_mode: c.host_config.and_then(|h| h.network_mode),
        })
        .collect())
}

fn is_running(info: &ContainerInspectResponse) -> bool {
    info.state.as_ref().and_then(|s| s.running).unwrap_or(false)
}

/// A resource limit as Docker takes it: `u64::MAX` (`RLIM_INFINITY`, a
/// declared `-1`) is Docker's `-1`, no limit; other values past i64 are
/// capped.
fn rlimit(n: u64) -> i64 {
    if n == u64::MAX {
        -1
    } else {
        i64::try_from(n).unwrap_or(i64::MAX)
    }
}

pub(super) fn create_body(spec: &ContainerSpec) -> ContainerCreateBody {
    let mut labels: HashMap<String, String> = spec
        .labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    labels.insert(LABEL_MANAGED.into(), MANAGED_VALUE.into());
    // A bind mount goes as `Binds` (`SOURCE:TARGET[:ro]`), as `docker
    // run -v` and compose give it: then Docker makes a missing source
    // directory, which the Mount API refuses, and which compose stacks
    // rely on (a data directory under /root, which this service's unit
    // cannot make itself). A path holding ':' or ',' cannot be written
    // there, and goes through the Mount API.
    let as_bind = |m: &&crate::runtime::MountSpec| {
        m.is_bind() && !m.source.contains([':', ',']) && !m.target.contains([':', ','])
    };
    let binds: Vec<String> = spec
        .mounts
        .iter()
        .filter(as_bind)
        .map(|m| {
            let mode = if m.read_only { ":ro" } else { "" };
            format!("{}:{}{mode}", m.source, m.target)
        })
        .collect();
    let mounts = spec
        .mounts
        .iter()
        .filter(|m| !as_bind(m))
        .map(|m| Mount {
            target: Some(m.target.clone()),
            source: Some(m.source.clone()),
            typ: Some(if m.is_bind() {
                MountType::BIND
            } else {
                MountType::VOLUME
            }),
            read_only: Some(m.read_only),
            ..Default::default()
        })
        .collect();
    let restart = match spec.restart {
        RestartPolicy::No => RestartPolicyNameEnum::NO,
        RestartPolicy::UnlessStopped => RestartPolicyNameEnum::UNLESS_STOPPED,
        RestartPolicy::Always => RestartPolicyNameEnum::ALWAYS,
        RestartPolicy::OnFailure => RestartPolicyNameEnum::ON_FAILURE,
    };
    // One key per container port and protocol, each with its bindings.
    let mut bindings: HashMap<String, Option<Vec<PortBinding>>> = HashMap::new();
    for p in &spec.ports {
        bindings
            .entry(format!("{}/{}", p.container, p.protocol))
            .or_insert_with(|| Some(Vec::new()))
            .get_or_insert_with(Vec::new)
            .push(PortBinding {
                host_ip: p.address.map(|a| a.to_string()),
                host_port: Some(p.host.map(|h| h.to_string()).unwrap_or_default()),
            });
    }
    let exposed: Vec<String> = {
        let mut keys: Vec<String> = bindings.keys().cloned().collect();
        keys.sort();
        keys
    };
    let p = &spec.process;
    // Docker's fields are signed; a declared value past i64 is capped.
    let signed = |n: Option<u64>| n.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
    let host_config = HostConfig {
        mounts: Some(mounts),
        binds: (!binds.is_empty()).then_some(binds),
        port_bindings: (!bindings.is_empty()).then_some(bindings),
        init: p.init.then_some(true),
        cap_add: (!p.cap_add.is_empty()).then(|| p.cap_add.clone()),
        cap_drop: (!p.cap_drop.is_empty()).then(|| p.cap_drop.clone()),
        privileged: p.privileged.then_some(true),
        readonly_rootfs: p.read_only_root.then_some(true),
        security_opt: security_opt(p),
        memory: signed(p.memory),
        memory_reservation: signed(p.memory_reservation),
        nano_cpus: signed(p.nano_cpus),
        pids_limit: signed(p.pids_limit),
        shm_size: signed(p.shm_size),
        tmpfs: (!p.tmpfs.is_empty()).then(|| p.tmpfs.iter().cloned().collect()),
        ulimits: (!p.ulimits.is_empty()).then(|| {
            p.ulimits
                .iter()
                .map(|(name, soft, hard)| ResourcesUlimits {
                    name: Some(name.clone()),
                    soft: Some(rlimit(*soft)),
                    hard: Some(rlimit(*hard)),
                })
                .collect()
        }),
        sysctls: (!p.sysctls.is_empty()).then(|| p.sysctls.iter().cloned().collect()),
        extra_hosts: (!p.extra_hosts.is_empty()).then(|| p.extra_hosts.clone()),
        devices: super::devices::mappings(p),
        device_requests: super::devices::requests(p),
        network_mode: spec
            .network
            .clone()
            .or_else(|| spec.networks.first().map(|n| n.network.clone())),
        dns: Some(spec.dns.iter().map(|ip| ip.to_string()).collect()),
        restart_policy: Some(DockerRestart {
            name: Some(restart),
            maximum_retry_count: None,
        }),
        cgroup_parent: spec.cgroup_parent.clone(),
        auto_remove: Some(spec.auto_remove),
        group_add: (!spec.groups.is_empty()).then(|| spec.groups.clone()),
        // A step's journal (set by its run) or a service's declared driver:
        // the declaration gives a step no driver.
        log_config: spec
            .journal
            .as_ref()
            .map(|j| log_config(j, false))
            .or_else(|| p.logging.as_ref().map(declared_log_config)),
        ..Default::default()
    };
    ContainerCreateBody {
        image: Some(spec.image.clone()),
        cmd: spec.command.clone(),
        env: Some(spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
        user: spec.user.clone(),
        labels: Some(labels),
        host_config: Some(host_config),
        healthcheck: spec.health.as_deref().map(health_config),
        exposed_ports: (!exposed.is_empty()).then_some(exposed),
        // As compose 1.29 sends `volumes: [/data]`: the runtime makes a
        // volume of no name there, as for an image's `VOLUME`.
        volumes: (!spec.anonymous_volumes.is_empty()).then(|| spec.anonymous_volumes.clone()),
        entrypoint: p.entrypoint.clone(),
        working_dir: p.working_dir.clone(),
        hostname: p.hostname.clone(),
        stop_signal: p.stop_signal.clone(),
        stop_timeout: signed(p.stop_grace),
        networking_config: spec.networks.first().map(|first| NetworkingConfig {
            endpoints_config: Some(HashMap::from([(
                first.network.clone(),
                super::networking::endpoint(first),
            )])),
        }),
        ..Default::default()
    }
}

/// `HostConfig.SecurityOpt`: no-new-privileges first, then the declared
/// options as written (as compose sends them).
fn security_opt(p: &crate::runtime::ProcessSpec) -> Option<Vec<String>> {
    let nnp = p
        .no_new_privileges
        .then(|| "no-new-privileges:true".to_owned());
    let all: Vec<String> = nnp.into_iter().chain(p.security_opt.clone()).collect();
    (!all.is_empty()).then_some(all)
}

/// Runs `request` (an inspect or a list of containers) until its answer is
/// not one of Podman's answers for a container caught as its process ends,
/// for at most [`SETTLE_TIMEOUT`].
///
/// Podman's Docker-compatible API (4.x) reports a container whose process
/// has exited but which its conmon has not yet cleaned up as `"stopped"`, a
/// state Docker's API does not have and the client's model refuses, failing
/// the whole answer; and an inspect that reads the process's cgroup the
/// instant it ends fails with a 500 ([`is_podman_vanished_process`]). Both
/// last until the cleanup (tens of milliseconds): such an answer is asked
/// for again.
async fn settled<T, F, Fut>(mut request: F) -> Result<T, BollardError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, BollardError>>,
{
    let deadline = tokio::time::Instant::now() + SETTLE_TIMEOUT;
    loop {
        let answer = request().await;
        let transient = match &answer {
            Err(BollardError::JsonDataError { message, .. }) => is_podman_stopped(message),
            Err(BollardError::DockerResponseServerError {
                status_code: 500,
                message,
            }) => is_podman_vanished_process(message),
            _ => false,
        };
        if !transient || tokio::time::Instant::now() >= deadline {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Podman 4.3's 500 for an inspect that read the container's process the
/// instant it ended: `read /proc/5212/cgroup: no such process`. Asked
/// again, the container has exited.
fn is_podman_vanished_process(message: &str) -> bool {
    message.starts_with("read /proc/") && message.ends_with(": no such process")
}

/// The client's refusal of Podman's transient `stopped` container state.
pub(super) fn is_podman_stopped(message: &str) -> bool {
    message.contains("unknown variant `stopped`")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn server_error(message: &str) -> BollardError {
        BollardError::DockerResponseServerError {
            status_code: 500,
            message: message.to_string(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_inspect_caught_as_the_process_ends_is_asked_again() {
        let asked = AtomicUsize::new(0);
        let answer = settled(|| {
            let n = asked.fetch_add(1, Ordering::SeqCst);
            async move {
                match n {
                    0 | 1 => Err(server_error("read /proc/5212/cgroup: no such process")),
                    _ => Ok("exited"),
                }
            }
        })
        .await;
        assert_eq!(answer.ok(), Some("exited"));
        assert_eq!(asked.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn other_server_errors_are_answered_at_once_and_a_lasting_one_within_the_bound() {
        let asked = AtomicUsize::new(0);
        let answer: Result<(), _> = settled(|| {
            asked.fetch_add(1, Ordering::SeqCst);
            async { Err(server_error("no such container")) }
        })
        .await;
        assert!(answer.is_err());
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        let start = tokio::time::Instant::now();
        let lasting: Result<(), _> =
            settled(|| async { Err(server_error("read /proc/9/cgroup: no such process")) }).await;
        assert!(
            matches!(
                lasting,
                Err(BollardError::DockerResponseServerError {
                    status_code: 500,
                    ..
                })
            ),
            "{lasting:?}"
        );
        assert!(start.elapsed() >= SETTLE_TIMEOUT);
        assert!(start.elapsed() < SETTLE_TIMEOUT + Duration::from_secs(1));
    }

    #[test]
    fn only_podmans_vanished_process_answer_is_transient() {
        assert!(is_podman_vanished_process(
            "read /proc/5212/cgroup: no such process"
        ));
        assert!(!is_podman_vanished_process("no such process"));
        assert!(!is_podman_vanished_process(
            "read /proc/5212/cgroup: permission denied"
        ));
    }
}
