//! The connection to the Docker daemon: the endpoint, the API version
//! every request is pinned to, and how the client's errors read as
//! [`RuntimeError`]s. The other parts of the runtime send their requests
//! through it.
//!
//! Requests are pinned to the API version negotiated at connect time
//! (bollard would otherwise send them unversioned, and the daemon would
//! answer in whatever its newest version is). Docker 20.10 (API 1.41) is the
//! oldest version this is tested against.

use std::time::Duration;

use bollard::errors::Error as BollardError;
use bollard::models::SystemInfoCgroupDriverEnum;
use bollard::Docker;

pub(super) use super::error_text::error_chain;
use crate::runtime::{CgroupDriver, RuntimeError};

/// Socket used when neither an endpoint nor `$DOCKER_HOST` is given.
pub const DEFAULT_SOCKET: &str = "/var/run/docker.sock";

/// Timeout of ordinary requests (inspect, create, start, list, ...).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Timeout of the ping (and version request) made at connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Requests that legitimately stay open (wait, events): the timeout only
/// covers the daemon's first answer, which Docker sends at once, but other
/// Engine API implementations may answer late.
pub(super) const LONG_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);

/// The Docker Engine API client behind [`crate::runtime::ContainerRuntime`].
#[derive(Debug, Clone)]
pub struct DockerRuntime {
    pub(super) docker: Docker,
    pub(super) endpoint: String,
    api_version: String,
    /// Podman's Docker-compatible API answers, not Docker.
    podman: bool,
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

        // One ping: the API version every request is pinned to (the
        // daemon's when older than the client's, as bollard's negotiation
        // does), and who answers. An implementation whose ping names no
        // version is asked `/version`, as bollard would.
        let pinged = super::ping::ping(&endpoint, CONNECT_TIMEOUT)
            .await
            .map_err(unreachable)?;
        let (server_version, podman) = match pinged.api_version {
            Some(v) => (Some(v), pinged.podman),
            None => {
                let answer = docker
                    .clone()
                    .with_timeout(CONNECT_TIMEOUT)
                    .version()
                    .await
                    .map_err(|err| match err {
                        BollardError::RequestTimeoutError => unreachable(format!(
                            "no answer to a version request within {} s",
                            CONNECT_TIMEOUT.as_secs()
                        )),
                        other => unreachable(error_chain(&other)),
                    })?;
                let podman = pinged.podman
                    || answer
                        .components
                        .unwrap_or_default()
                        .iter()
                        .any(|c| c.name.starts_with("Podman"));
                (answer.api_version, podman)
            }
        };
        let api_version = pinned_version(server_version.as_deref()).ok_or_else(|| {
            unreachable(format!(
                "the daemon names no API version of the form 1.N: {server_version:?}"
            ))
        })?;
        let prefix = format!("/v{api_version}");
        let docker = docker.with_request_modifier(move |request| pin_version(request, &prefix));
        Ok(DockerRuntime {
            docker,
            endpoint,
            api_version,
            podman,
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

    /// Whether Podman's Docker-compatible API answers rather than Docker.
    pub fn is_podman(&self) -> bool {
        self.podman
    }

    /// A client whose request timeout is `timeout` (clones share the
    /// connection settings and the version pin).
    pub(super) fn client_with_timeout(&self, timeout: Duration) -> Docker {
        self.docker.clone().with_timeout(timeout)
    }

    /// Maps a bollard error; `what` names the object for NotFound/Conflict
    /// (`container web`), `context` the operation.
    pub(super) fn error(&self, context: &str, what: &str, err: BollardError) -> RuntimeError {
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
                reason: format!(
                    "status {status_code}: {message}{}",
                    missing_device_driver(&message)
                ),
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
}

/// The cgroup driver the daemon uses ([`crate::runtime::RuntimeView::cgroup_driver`]).
pub(super) async fn cgroup_driver(rt: &DockerRuntime) -> Result<CgroupDriver, RuntimeError> {
    let info = rt
        .docker
        .info()
        .await
        .map_err(|err| rt.error("read runtime info", "runtime info", err))?;
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

/// The API version requests are pinned to: the daemon's `1.N` when older
/// than the client's, else the client's; `None` when the daemon names none.
pub(super) fn pinned_version(server: Option<&str>) -> Option<String> {
    let minor = |v: &str| v.strip_prefix("1.")?.parse::<usize>().ok();
    let server = minor(server?)?;
    let client = bollard::API_DEFAULT_VERSION;
    Some(format!("1.{}", server.min(client.minor_version)))
}

/// Prefixes the request path with the negotiated API version.
pub(super) fn pin_version(
    mut request: bollard::BollardRequest,
    prefix: &str,
) -> bollard::BollardRequest {
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

/// What Docker's "could not select device driver" means, said: the
/// container's `device-requests` ask for a driver this node lacks (as
/// under compose, whose start fails the same way).
fn missing_device_driver(message: &str) -> &'static str {
    if message.contains("could not select device driver") {
        " (the device driver its device-requests ask for is missing on this node: install the GPU's driver and its container toolkit, or run it on a node that has them)"
    } else {
        ""
    }
}
