//! [`ContainerRuntime`] over the Docker Engine API (bollard).
//!
//! Requests are pinned to the API version negotiated at connect time
//! (bollard would otherwise send them unversioned, and the daemon would
//! answer in whatever its newest version is). Docker 20.10 (API 1.41) is the
//! oldest version this is tested against.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bollard::errors::Error as BollardError;
use bollard::models::{
    ContainerCreateBody, ContainerInspectResponse, ContainerStateStatusEnum,
    ContainerSummaryStateEnum, HealthConfig, HostConfig, Mount, MountType,
    RestartPolicy as DockerRestart, RestartPolicyNameEnum, SystemInfoCgroupDriverEnum,
};
use bollard::query_parameters::{
    CreateContainerOptions, CreateImageOptions, EventsOptions, KillContainerOptions,
    ListContainersOptions, RemoveContainerOptions, WaitContainerOptions,
};
use bollard::Docker;
use futures_util::StreamExt;

use super::{
    CgroupDriver, ContainerEvent, ContainerEventKind, ContainerId, ContainerInfo, ContainerRuntime,
    ContainerSpec, ContainerSummary, EventStream, HealthSpec, RestartPolicy, RuntimeError,
    LABEL_MANAGED, MANAGED_VALUE,
};

/// Socket used when neither an endpoint nor `$DOCKER_HOST` is given.
pub const DEFAULT_SOCKET: &str = "/var/run/docker.sock";

/// Timeout of ordinary requests (inspect, create, start, list, ...).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Timeout of the version request made at connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Added to a container's own stop grace for the stop request's timeout.
const STOP_MARGIN: Duration = Duration::from_secs(30);
/// Docker's stop grace when the container sets none.
const DEFAULT_STOP_GRACE_SECS: u64 = 10;
/// Time for the daemon to answer a pull; it only answers once the registry
/// has (Docker's own registry timeouts are shorter than this).
const PULL_ANSWER_TIMEOUT: Duration = Duration::from_secs(180);
/// A pull that reports no progress for this long is given up as unavailable.
const PULL_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Requests that legitimately stay open (wait, events): the timeout only
/// covers the daemon's first answer, which Docker sends at once, but other
/// Engine API implementations may answer late.
const LONG_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);
/// How long kill/remove wait for the state they asked for.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Poll interval while waiting for a state.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// The Docker Engine API client behind [`ContainerRuntime`].
#[derive(Debug, Clone)]
pub struct DockerRuntime {
    docker: Docker,
    endpoint: String,
    api_version: String,
}

impl DockerRuntime {
    /// Connects to the Docker daemon at `docker_host`: a socket path,
    /// `unix://PATH`, or `tcp://HOST:PORT` / `http://HOST:PORT` (no TLS);
    /// `None` means `$DOCKER_HOST`, else [`DEFAULT_SOCKET`]. The daemon is
    /// asked for its API version at once, so an endpoint that does not answer
    /// is [`RuntimeError::Unreachable`] here rather than at first use.
    pub async fn connect(docker_host: Option<&str>) -> Result<Self, RuntimeError> {
        let endpoint = match docker_host {
            Some(host) => host.to_owned(),
            None => std::env::var("DOCKER_HOST")
                .ok()
                .filter(|host| !host.is_empty())
                .unwrap_or_else(|| DEFAULT_SOCKET.to_owned()),
        };
        let unreachable = |reason: String| RuntimeError::Unreachable {
            endpoint: endpoint.clone(),
            reason,
        };
        let timeout = REQUEST_TIMEOUT.as_secs();
        let version = bollard::API_DEFAULT_VERSION;
        let docker = if let Some(path) = endpoint.strip_prefix("unix://") {
            Docker::connect_with_unix(path, timeout, version)
        } else if endpoint.starts_with('/') {
            Docker::connect_with_unix(&endpoint, timeout, version)
        } else if endpoint.starts_with("tcp://") || endpoint.starts_with("http://") {
            Docker::connect_with_http(&endpoint, timeout, version)
        } else {
            return Err(unreachable(
                "unsupported endpoint: expected a socket path, unix://PATH, tcp://HOST:PORT or \
                 http://HOST:PORT"
                    .into(),
            ));
        }
        .map_err(|err| unreachable(error_chain(&err)))?;

        // negotiate_version lowers the shared client version to the daemon's
        // when that is older; clones share it.
        let negotiated = docker
            .clone()
            .with_timeout(CONNECT_TIMEOUT)
            .negotiate_version()
            .await
            .map_err(|err| match err {
                BollardError::RequestTimeoutError => unreachable(format!(
                    "no answer to a version request within {} s",
                    CONNECT_TIMEOUT.as_secs()
                )),
                other => unreachable(error_chain(&other)),
            })?;
        let api_version = negotiated.client_version().to_string();
        let prefix = format!("/v{api_version}");
        let docker = docker.with_request_modifier(move |request| pin_version(request, &prefix));
        Ok(DockerRuntime {
            docker,
            endpoint,
            api_version,
        })
    }

    /// The endpoint connected to, as given or defaulted.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The Engine API version requests are pinned to (e.g. `1.41`).
    pub fn api_version(&self) -> &str {
        &self.api_version
    }

    /// A client whose request timeout is `timeout` (clones share the
    /// connection settings and the version pin).
    fn client_with_timeout(&self, timeout: Duration) -> Docker {
        self.docker.clone().with_timeout(timeout)
    }

    /// Maps a bollard error; `what` names the object for NotFound/Conflict
    /// (`container web`), `context` the operation.
    fn error(&self, context: &str, what: &str, err: BollardError) -> RuntimeError {
        match err {
            // Only "No such container/image" means the object itself is
            // missing; a 404 naming something else (a network on start) is a
            // failure of the operation.
            BollardError::DockerResponseServerError {
                status_code: 404,
                message,
            } if message.is_empty() || message.to_ascii_lowercase().contains("no such") => {
                RuntimeError::NotFound { what: what.into() }
            }
            BollardError::DockerResponseServerError {
                status_code: 409,
                message,
            } => RuntimeError::Conflict {
                what: what.into(),
                reason: message,
            },
            BollardError::DockerResponseServerError {
                status_code,
                message,
            } => RuntimeError::Api {
                context: context.into(),
                reason: format!("status {status_code}: {message}"),
            },
            BollardError::RequestTimeoutError => RuntimeError::Unreachable {
                endpoint: self.endpoint.clone(),
                reason: format!("{context}: no answer in time"),
            },
            err @ (BollardError::HyperLegacyError { .. }
            | BollardError::HyperResponseError { .. }
            | BollardError::IOError { .. }
            | BollardError::SocketNotFoundError(_)) => RuntimeError::Unreachable {
                endpoint: self.endpoint.clone(),
                reason: format!("{context}: {}", error_chain(&err)),
            },
            other => RuntimeError::Api {
                context: context.into(),
                reason: error_chain(&other),
            },
        }
    }

    /// Raw inspect; `None` on 404.
    async fn inspect_raw(
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

/// Prefixes the request path with the negotiated API version.
fn pin_version(mut request: bollard::BollardRequest, prefix: &str) -> bollard::BollardRequest {
    let uri = request.uri();
    let path = uri.path();
    if path.starts_with("/v1.") {
        return request;
    }
    let scheme = uri.scheme_str().unwrap_or("http");
    let authority = uri.authority().map(|a| a.as_str()).unwrap_or("");
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    let rewritten = format!("{scheme}://{authority}{prefix}{path}{query}");
    // A URI that was valid stays valid with a plain path prefix; should that
    // ever fail, sending the request unpinned is still correct.
    if let Ok(new_uri) = rewritten.parse() {
        *request.uri_mut() = new_uri;
    }
    request
}

/// An error and its sources on one line (bollard's top-level messages alone,
/// e.g. "client error (Connect)", say little).
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

fn is_running(info: &ContainerInspectResponse) -> bool {
    info.state.as_ref().and_then(|s| s.running).unwrap_or(false)
}

fn to_btree(labels: Option<HashMap<String, String>>) -> BTreeMap<String, String> {
    labels.unwrap_or_default().into_iter().collect()
}

fn container_info(raw: ContainerInspectResponse) -> ContainerInfo {
    let state = raw.state.unwrap_or_default();
    let status = state.status.unwrap_or(ContainerStateStatusEnum::EMPTY);
    let config = raw.config.unwrap_or_default();
    let exited = matches!(
        status,
        ContainerStateStatusEnum::EXITED | ContainerStateStatusEnum::DEAD
    );
    // Docker reports the zero time for a run that never started or ended.
    let real_time = |t: Option<String>| t.filter(|t| !t.starts_with("0001-01-01"));
    let decides_within = health_decides_within(config.healthcheck.as_ref());
    ContainerInfo {
        id: raw.id.unwrap_or_default(),
        name: raw
            .name
            .unwrap_or_default()
            .trim_start_matches('/')
            .to_owned(),
        image: config.image.or(raw.image).unwrap_or_default(),
        running: state.running.unwrap_or(false),
        status: status.to_string(),
        exit_code: if exited { state.exit_code } else { None },
        started_at: real_time(state.started_at),
        finished_at: real_time(state.finished_at),
        labels: to_btree(config.labels),
        pid: state
            .pid
            .filter(|pid| *pid > 0)
            .and_then(|pid| u32::try_from(pid).ok()),
        health: state.health.and_then(|h| {
            let status = h.status?.to_string();
            // "none" (no check) and "" are no health check at all.
            if status.is_empty() || status == "none" {
                return None;
            }
            let last_output = h
                .log
                .and_then(|log| log.into_iter().last())
                .and_then(|r| r.output)
                .unwrap_or_default()
                .trim()
                .to_string();
            Some(super::Health {
                status,
                last_output,
                decides_within,
            })
        }),
    }
}

/// How long a health check takes at most to decide after a start (see
/// [`super::Health::decides_within`]), from its configuration in
/// nanoseconds; Docker's defaults (30 s interval and timeout, 3 retries,
/// no start period) stand in for what is unset or zero.
fn health_decides_within(config: Option<&HealthConfig>) -> Option<Duration> {
    let config = config?;
    let nanos = |v: Option<i64>, default: Duration| {
        v.and_then(|v| u64::try_from(v).ok())
            .filter(|v| *v > 0)
            .map_or(default, Duration::from_nanos)
    };
    let interval = nanos(config.interval, Duration::from_secs(30));
    let timeout = nanos(config.timeout, Duration::from_secs(30));
    let start_period = nanos(config.start_period, Duration::ZERO);
    let retries = config
        .retries
        .and_then(|r| u32::try_from(r).ok())
        .filter(|r| *r > 0)
        .unwrap_or(3);
    Some(start_period + (interval + timeout).saturating_mul(retries.saturating_add(1)))
}

/// Docker's form of a declared health check: `Test` with its form word,
/// durations in nanoseconds (0, Docker's "unset", where none is given).
fn health_config(health: &HealthSpec) -> HealthConfig {
    let nanos = |d: &Option<Duration>| d.map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    match health {
        HealthSpec::Disabled => HealthConfig {
            test: Some(vec!["NONE".to_string()]),
            ..Default::default()
        },
        HealthSpec::Check {
            command,
            interval,
            timeout,
            retries,
            start_period,
        } => HealthConfig {
            test: Some(
                std::iter::once("CMD".to_string())
                    .chain(command.iter().cloned())
                    .collect(),
            ),
            interval: nanos(interval),
            timeout: nanos(timeout),
            retries: retries.map(i64::from),
            start_period: nanos(start_period),
            ..Default::default()
        },
    }
}

fn create_body(spec: &ContainerSpec) -> ContainerCreateBody {
    let mut labels: HashMap<String, String> = spec
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    labels.insert(LABEL_MANAGED.into(), MANAGED_VALUE.into());
    let mounts = spec
        .mounts
        .iter()
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
    };
    let host_config = HostConfig {
        mounts: Some(mounts),
        network_mode: spec.network.clone(),
        dns: Some(spec.dns.iter().map(|ip| ip.to_string()).collect()),
        restart_policy: Some(DockerRestart {
            name: Some(restart),
            maximum_retry_count: None,
        }),
        cgroup_parent: spec.cgroup_parent.clone(),
        auto_remove: Some(spec.auto_remove),
        group_add: (!spec.groups.is_empty()).then(|| spec.groups.clone()),
        ..Default::default()
    };
    ContainerCreateBody {
        image: Some(spec.image.clone()),
        cmd: spec.command.clone(),
        env: Some(spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
        user: spec.user.clone(),
        labels: Some(labels),
        host_config: Some(host_config),
        healthcheck: spec.health.as_ref().map(health_config),
        ..Default::default()
    }
}

/// Classifies a pull failure reported with an HTTP status (`None` when it
/// came mid-stream) and the daemon's message.
fn pull_error(reference: &str, status: Option<u16>, message: String) -> RuntimeError {
    let lower = message.to_ascii_lowercase();
    let refused = |status: u16, reason: String| RuntimeError::Registry {
        reference: reference.into(),
        status,
        reason,
    };
    // Docker forwards some refusals as 500 with the registry's words in the
    // message; those are answers, not outages.
    let from_message =
        if lower.contains("unauthorized") || lower.contains("authentication required") {
            Some(401)
        } else if lower.contains("denied") {
            Some(403)
        } else if lower.contains("manifest unknown")
            || lower.contains("not found")
            || lower.contains("does not exist")
        {
            Some(404)
        } else {
            None
        };
    match status {
        Some(status @ (400..=499)) => refused(status, message),
        _ => match from_message {
            Some(status) => refused(status, message),
            None => RuntimeError::RegistryUnavailable {
                reference: reference.into(),
                reason: message,
            },
        },
    }
}

#[async_trait::async_trait]
impl ContainerRuntime for DockerRuntime {
    async fn create(&self, spec: &ContainerSpec) -> Result<ContainerId, RuntimeError> {
        let options = CreateContainerOptions {
            name: Some(spec.name.clone()),
            ..Default::default()
        };
        let name = &spec.name;
        match self
            .docker
            .create_container(Some(options), create_body(spec))
            .await
        {
            Ok(created) => Ok(ContainerId(created.id)),
            Err(BollardError::DockerResponseServerError {
                status_code: 404,
                message,
            }) if message.to_ascii_lowercase().contains("no such image") => {
                Err(RuntimeError::NotFound {
                    what: format!("image {} (for container {name})", spec.image),
                })
            }
            Err(err) => Err(self.error(
                &format!("create container {name}"),
                &format!("container {name}"),
                err,
            )),
        }
    }

    async fn start(&self, name: &str) -> Result<(), RuntimeError> {
        let what = format!("container {name}");
        let context = format!("start container {name}");
        let before = self
            .inspect_raw(name)
            .await?
            .ok_or_else(|| RuntimeError::NotFound { what: what.clone() })?;
        if is_running(&before) {
            return Ok(());
        }
        self.docker
            .start_container(name, None)
            .await
            .map_err(|err| self.error(&context, &what, err))?;
        let Some(after) = self.inspect_raw(name).await? else {
            // An auto-remove container that already ran and is gone.
            return Ok(());
        };
        let started_at = |info: &ContainerInspectResponse| {
            info.state.as_ref().and_then(|s| s.started_at.clone())
        };
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

    async fn stop(&self, name: &str) -> Result<(), RuntimeError> {
        let what = format!("container {name}");
        let context = format!("stop container {name}");
        let info = self
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
        match self
            .client_with_timeout(timeout)
            .stop_container(name, None)
            .await
        {
            Ok(()) => {}
            Err(err) => return Err(self.error(&context, &what, err)),
        }
        if self.settle_not_running(name, SETTLE_TIMEOUT).await? {
            Ok(())
        } else {
            Err(RuntimeError::Api {
                context,
                reason: "still running after the stop returned".into(),
            })
        }
    }

    async fn kill(&self, name: &str) -> Result<(), RuntimeError> {
        let what = format!("container {name}");
        let context = format!("kill container {name}");
        let options = KillContainerOptions {
            signal: "SIGKILL".into(),
        };
        match self.docker.kill_container(name, Some(options)).await {
            Ok(()) => {}
            // 409: "is not running" — the state kill asks for.
            Err(BollardError::DockerResponseServerError {
                status_code: 409, ..
            }) => return Ok(()),
            Err(err) => return Err(self.error(&context, &what, err)),
        }
        if self.settle_not_running(name, SETTLE_TIMEOUT).await? {
            Ok(())
        } else {
            Err(RuntimeError::Api {
                context,
                reason: format!("still running {} s after SIGKILL", SETTLE_TIMEOUT.as_secs()),
            })
        }
    }

    async fn remove(&self, name: &str) -> Result<(), RuntimeError> {
        let what = format!("container {name}");
        let context = format!("remove container {name}");
        let options = RemoveContainerOptions {
            force: true,
            v: true,
            link: false,
        };
        match self.docker.remove_container(name, Some(options)).await {
            Ok(())
            | Err(BollardError::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(()),
            // 409 "removal already in progress" (e.g. auto-remove): wait for it.
            Err(BollardError::DockerResponseServerError {
                status_code: 409,
                message,
            }) => {
                let deadline = tokio::time::Instant::now() + SETTLE_TIMEOUT;
                while tokio::time::Instant::now() < deadline {
                    if self.inspect_raw(name).await?.is_none() {
                        return Ok(());
                    }
                    tokio::time::sleep(POLL_INTERVAL).await;
                }
                Err(RuntimeError::Conflict {
                    what,
                    reason: message,
                })
            }
            Err(err) => Err(self.error(&context, &what, err)),
        }
    }

    async fn wait_exit(&self, name: &str) -> Result<i64, RuntimeError> {
        let info = self
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
        if status == ContainerStateStatusEnum::CREATED {
            // `not-running` would answer at once with 0 for a container that
            // never ran; `next-exit` waits for the run a start begins. Poll
            // alongside in case that run ends before the wait is registered.
            tokio::select! {
                code = self.wait_condition(name, "next-exit") => code,
                code = self.poll_exit_of_created(name) => code,
            }
        } else {
            // Running: waits for the exit; exited: answers with its code.
            self.wait_condition(name, "not-running").await
        }
    }

    async fn inspect(&self, name: &str) -> Result<Option<ContainerInfo>, RuntimeError> {
        Ok(self.inspect_raw(name).await?.map(container_info))
    }

    async fn list_managed(&self) -> Result<Vec<ContainerSummary>, RuntimeError> {
        let filters = HashMap::from([(
            "label".to_owned(),
            vec![format!("{LABEL_MANAGED}={MANAGED_VALUE}")],
        )]);
        let options = ListContainersOptions {
            all: true,
            filters: Some(filters),
            ..Default::default()
        };
        let list = settled(|| self.docker.list_containers(Some(options.clone())))
            .await
            .map_err(|err| self.error("list managed containers", "containers", err))?;
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
                    Some(
                        ContainerSummaryStateEnum::RUNNING | ContainerSummaryStateEnum::RESTARTING
                    )
                ),
                labels: to_btree(c.labels),
            })
            .collect())
    }

    async fn image_present(&self, image: &str) -> Result<bool, RuntimeError> {
        match self.docker.inspect_image(image).await {
            Ok(_) => Ok(true),
            Err(BollardError::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(false),
            Err(err) => Err(self.error(
                &format!("inspect image {image}"),
                &format!("image {image}"),
                err,
            )),
        }
    }

    async fn pull(&self, image: &str) -> Result<(), RuntimeError> {
        let options = CreateImageOptions {
            from_image: Some(image.into()),
            ..Default::default()
        };
        let client = self.client_with_timeout(PULL_ANSWER_TIMEOUT);
        let mut progress = client.create_image(Some(options), None, None);
        loop {
            let item = match tokio::time::timeout(PULL_IDLE_TIMEOUT, progress.next()).await {
                Ok(item) => item,
                Err(_) => {
                    return Err(RuntimeError::RegistryUnavailable {
                        reference: image.into(),
                        reason: format!("no progress for {} s", PULL_IDLE_TIMEOUT.as_secs()),
                    })
                }
            };
            match item {
                None => return Ok(()),
                Some(Ok(_)) => {}
                Some(Err(BollardError::DockerResponseServerError {
                    status_code,
                    message,
                })) => return Err(pull_error(image, Some(status_code), message)),
                Some(Err(BollardError::DockerStreamError { error })) => {
                    return Err(pull_error(image, None, error))
                }
                // The daemon took too long to hear back from the registry.
                Some(Err(BollardError::RequestTimeoutError)) => {
                    return Err(RuntimeError::RegistryUnavailable {
                        reference: image.into(),
                        reason: format!(
                            "the runtime got no answer from the registry within {} s",
                            PULL_ANSWER_TIMEOUT.as_secs()
                        ),
                    })
                }
                Some(Err(err)) => {
                    return Err(self.error(
                        &format!("pull {image}"),
                        &format!("image {image}"),
                        err,
                    ))
                }
            }
        }
    }

    async fn cgroup_driver(&self) -> Result<CgroupDriver, RuntimeError> {
        let info = self
            .docker
            .info()
            .await
            .map_err(|err| self.error("read runtime info", "runtime info", err))?;
        match info.cgroup_driver {
            Some(SystemInfoCgroupDriverEnum::CGROUPFS) => Ok(CgroupDriver::Cgroupfs),
            Some(SystemInfoCgroupDriverEnum::SYSTEMD) => Ok(CgroupDriver::Systemd),
            other => Err(RuntimeError::Api {
                context: "read runtime info".into(),
                reason: format!(
                    "unsupported cgroup driver {:?} (need cgroupfs or systemd)",
                    other.map(|d| d.to_string()).unwrap_or_default()
                ),
            }),
        }
    }

    async fn events(&self, names: &[String]) -> Result<EventStream, RuntimeError> {
        if names.is_empty() {
            return Ok(Box::pin(futures_util::stream::pending()));
        }
        // `since` = now: the daemon replays what happened between this call
        // and the subscription reaching it, so nothing in between is lost.
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let since = format!("{}.{:09}", now.as_secs(), now.subsec_nanos());
        let filters = HashMap::from([
            ("type".to_owned(), vec!["container".to_owned()]),
            (
                "event".to_owned(),
                vec!["start".to_owned(), "die".to_owned(), "stop".to_owned()],
            ),
            ("container".to_owned(), names.to_vec()),
        ]);
        let options = EventsOptions {
            since: Some(since),
            until: None,
            filters: Some(filters),
        };
        let wanted: Vec<String> = names.to_vec();
        let endpoint = self.endpoint.clone();
        let stream = self
            .client_with_timeout(LONG_TIMEOUT)
            .events(Some(options))
            .filter_map(move |item| {
                let result = match item {
                    Err(err) => Some(Err(RuntimeError::Unreachable {
                        endpoint: endpoint.clone(),
                        reason: format!("event stream: {}", error_chain(&err)),
                    })),
                    Ok(message) => {
                        let attributes =
                            message.actor.and_then(|a| a.attributes).unwrap_or_default();
                        let name = attributes.get("name").cloned().unwrap_or_default();
                        let kind = match message.action.as_deref() {
                            Some("start") => Some(ContainerEventKind::Start),
                            Some("stop") => Some(ContainerEventKind::Stop),
                            Some("die") => Some(ContainerEventKind::Die {
                                exit_code: attributes.get("exitCode").and_then(|c| c.parse().ok()),
                            }),
                            _ => None,
                        };
                        // The daemon's container filter also matches ids;
                        // keep exactly the names asked for.
                        match kind {
                            Some(kind) if wanted.contains(&name) => {
                                Some(Ok(ContainerEvent { name, kind }))
                            }
                            _ => None,
                        }
                    }
                };
                std::future::ready(result)
            });
        Ok(Box::pin(stream))
    }
}

/// Runs `request` (an inspect or a list of containers) until its answer is
/// not refused for Podman's transient `stopped` state, for at most
/// [`SETTLE_TIMEOUT`].
///
/// Podman's Docker-compatible API (4.x) reports a container whose process
/// has exited but which its conmon has not yet cleaned up as `"stopped"`, a
/// state Docker's API does not have and the client's model refuses, failing
/// the whole answer. The state lasts until the cleanup (tens of
/// milliseconds): such an answer is asked for again.
async fn settled<T, F, Fut>(mut request: F) -> Result<T, BollardError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, BollardError>>,
{
    let deadline = tokio::time::Instant::now() + SETTLE_TIMEOUT;
    loop {
        match request().await {
            Err(BollardError::JsonDataError { ref message, .. })
                if is_podman_stopped(message) && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            other => return other,
        }
    }
}

/// The client's refusal of Podman's transient `stopped` container state.
fn is_podman_stopped(message: &str) -> bool {
    message.contains("unknown variant `stopped`")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::MountSpec;

    #[test]
    fn podmans_transient_stopped_state_is_told_from_other_refusals() {
        // The State of Podman 4.3's inspect answer for a container between
        // its exit and its cleanup, as the client's model reads it.
        let podman = r#"{"Status": "stopped", "Running": false, "ExitCode": 0}"#;
        let err = serde_json::from_str::<bollard::models::ContainerState>(podman)
            .expect_err("Docker's API has no stopped state");
        assert!(is_podman_stopped(&err.to_string()), "{err}");
        let exited = r#"{"Status": "exited", "Running": false, "ExitCode": 0}"#;
        assert!(serde_json::from_str::<bollard::models::ContainerState>(exited).is_ok());
        let other =
            serde_json::from_str::<bollard::models::ContainerState>(r#"{"Status": "frozen"}"#)
                .expect_err("no such state");
        assert!(!is_podman_stopped(&other.to_string()), "{other}");
    }

    #[test]
    fn a_health_check_decides_within_its_start_period_and_retries() {
        let second = 1_000_000_000;
        let declared = HealthConfig {
            interval: Some(2 * second),
            timeout: Some(second),
            retries: Some(4),
            start_period: Some(10 * second),
            ..Default::default()
        };
        // 10 s of start period, then 5 checks of 2 + 1 s.
        assert_eq!(
            health_decides_within(Some(&declared)),
            Some(Duration::from_secs(25))
        );
        // Unset or zero: Docker's 30 s, 30 s, 3 retries, no start period.
        let unset = HealthConfig {
            interval: Some(0),
            ..Default::default()
        };
        assert_eq!(
            health_decides_within(Some(&unset)),
            Some(Duration::from_secs(240))
        );
        assert_eq!(health_decides_within(None), None);
    }

    #[test]
    fn pull_refusals_fail_at_once_and_outages_are_retryable() {
        let r = "127.0.0.1:5000/x@sha256:00";
        let status = |err: RuntimeError| match err {
            RuntimeError::Registry { status, .. } => Some(status),
            RuntimeError::RegistryUnavailable { .. } => None,
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(
            status(pull_error(r, Some(404), "manifest unknown".into())),
            Some(404)
        );
        assert_eq!(status(pull_error(r, Some(403), "denied".into())), Some(403));
        assert_eq!(
            status(pull_error(
                r,
                Some(500),
                "unauthorized: authentication required".into()
            )),
            Some(401)
        );
        assert_eq!(
            status(pull_error(
                r,
                Some(500),
                "Get \"http://127.0.0.1:5999/v2/\": dial tcp 127.0.0.1:5999: connect: connection refused"
                    .into()
            )),
            None
        );
        assert_eq!(
            status(pull_error(
                r,
                None,
                "received unexpected HTTP status: 503".into()
            )),
            None
        );
    }

    #[test]
    fn create_body_carries_the_spec_and_the_managed_label() {
        let spec = ContainerSpec {
            name: "web".into(),
            image: "r/web@sha256:00".into(),
            command: Some(vec!["serve".into()]),
            env: vec![("A".into(), "1".into()), ("B".into(), "x=y".into())],
            mounts: vec![
                MountSpec {
                    source: "/srv/web".into(),
                    target: "/data".into(),
                    read_only: true,
                },
                MountSpec {
                    source: "cache".into(),
                    target: "/cache".into(),
                    read_only: false,
                },
            ],
            network: Some("host".into()),
            dns: vec!["10.0.0.53".parse().expect("literal address")],
            user: Some("1000:1000".into()),
            labels: BTreeMap::from([("mesh-host.resource".into(), "web".into())]),
            restart: RestartPolicy::UnlessStopped,
            cgroup_parent: None,
            auto_remove: false,
            groups: Vec::new(),
            health: None,
        };
        let body = create_body(&spec);
        assert_eq!(body.env, Some(vec!["A=1".to_owned(), "B=x=y".to_owned()]));
        let labels = body.labels.expect("labels set");
        assert_eq!(labels.get(LABEL_MANAGED).map(String::as_str), Some("true"));
        assert_eq!(
            labels.get("mesh-host.resource").map(String::as_str),
            Some("web")
        );
        let host = body.host_config.expect("host config set");
        let mounts = host.mounts.expect("mounts set");
        assert_eq!(mounts[0].typ, Some(MountType::BIND));
        assert_eq!(mounts[0].read_only, Some(true));
        assert_eq!(mounts[1].typ, Some(MountType::VOLUME));
        assert_eq!(host.network_mode.as_deref(), Some("host"));
        assert_eq!(host.dns, Some(vec!["10.0.0.53".to_owned()]));
        assert_eq!(
            host.restart_policy.and_then(|p| p.name),
            Some(RestartPolicyNameEnum::UNLESS_STOPPED)
        );
        assert_eq!(body.healthcheck, None, "the image's check is kept");
    }

    #[test]
    fn a_declared_health_check_is_docker_s_exec_form_in_nanoseconds() {
        let check = HealthSpec::Check {
            command: vec!["wget".into(), "-q".into(), "--spider".into()],
            interval: Some(Duration::from_secs(2)),
            timeout: None,
            retries: Some(5),
            start_period: Some(Duration::from_secs(10)),
        };
        let config = health_config(&check);
        assert_eq!(
            config.test,
            Some(vec![
                "CMD".to_string(),
                "wget".into(),
                "-q".into(),
                "--spider".into()
            ])
        );
        assert_eq!(config.interval, Some(2_000_000_000));
        assert_eq!(config.timeout, None);
        assert_eq!(config.retries, Some(5));
        assert_eq!(config.start_period, Some(10_000_000_000));
        assert_eq!(
            health_decides_within(Some(&config)),
            Some(Duration::from_secs(10 + (2 + 30) * 6))
        );
        let none = health_config(&HealthSpec::Disabled);
        assert_eq!(none.test, Some(vec!["NONE".to_string()]));
        assert_eq!(none.interval, None);
    }

    #[test]
    fn requests_are_pinned_to_the_negotiated_version() {
        let mut request = bollard::BollardRequest::new(bollard::body_full(Default::default()));
        *request.uri_mut() = "unix://2f72756e:0/containers/json?all=true"
            .parse()
            .expect("literal uri");
        let pinned = pin_version(request, "/v1.41");
        assert_eq!(
            pinned.uri().to_string(),
            "unix://2f72756e:0/v1.41/containers/json?all=true"
        );
        let again = pin_version(pinned, "/v1.41");
        assert_eq!(again.uri().path(), "/v1.41/containers/json");
    }

    #[tokio::test]
    async fn a_missing_socket_is_unreachable_naming_it() {
        let err = DockerRuntime::connect(Some("/nonexistent/docker.sock"))
            .await
            .expect_err("no socket there");
        match err {
            RuntimeError::Unreachable { endpoint, .. } => {
                assert_eq!(endpoint, "/nonexistent/docker.sock")
            }
            other => panic!("expected Unreachable, got {other:?}"),
        }
        let err = DockerRuntime::connect(Some("ftp://example"))
            .await
            .expect_err("unsupported scheme");
        assert!(matches!(err, RuntimeError::Unreachable { .. }), "{err:?}");
    }
}
