//! What a container runtime's calls fail with, and what callers make of it.

/// Errors of a [`ContainerRuntime`](super::ContainerRuntime); variants are what callers branch on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
    /// The runtime's API did not answer (socket missing, connection refused,
    /// timeout).
    #[error("container runtime at {endpoint} is unreachable: {reason}")]
    Unreachable {
        /// The endpoint tried (socket path or URL).
        endpoint: String,
        /// Why.
        reason: String,
    },
    /// A container or image does not exist.
    #[error("{what} not found")]
    NotFound {
        /// What was missing, e.g. `container web`.
        what: String,
    },
    /// The request conflicts with the current state (e.g. a name in use).
    #[error("conflict on {what}: {reason}")]
    Conflict {
        /// What the conflict is about, e.g. `container web`.
        what: String,
        /// The runtime's message.
        reason: String,
    },
    /// The registry answered a pull with a refusal (404, 401, 403, ...):
    /// retrying will not help.
    #[error("pull of {reference} refused by the registry (status {status}): {reason}")]
    Registry {
        /// The image reference pulled.
        reference: String,
        /// The HTTP status that best describes the refusal.
        status: u16,
        /// The runtime's message.
        reason: String,
    },
    /// The registry did not answer a pull (connection refused, timeout, 5xx):
    /// the caller may retry.
    #[error("registry for {reference} unavailable: {reason}")]
    RegistryUnavailable {
        /// The image reference pulled.
        reference: String,
        /// The runtime's message.
        reason: String,
    },
    /// Any other failure reported by the runtime.
    #[error("{context}: {reason}")]
    Api {
        /// The operation, e.g. `start container web`.
        context: String,
        /// The runtime's message.
        reason: String,
    },
}

/// What to do about a runtime that does not answer, for a person: said
/// after a connection error by the command line and the daemon's start.
pub const UNREACHABLE_HINT: &str = "is the container runtime running? Docker: \
     `systemctl start docker.service`; Podman: `systemctl start podman.socket` and \
     --docker-host unix:///run/podman/podman.sock; another endpoint: --docker-host URL \
     (or DOCKER_HOST)";

/// `e`, with [`UNREACHABLE_HINT`] when the runtime did not answer.
pub fn explain(e: &RuntimeError) -> String {
    match e {
        RuntimeError::Unreachable { .. } => format!("{e}; {UNREACHABLE_HINT}"),
        _ => e.to_string(),
    }
}

impl RuntimeError {
    /// Whether retrying the same call later may succeed (runtime or registry
    /// did not answer).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            RuntimeError::Unreachable { .. } | RuntimeError::RegistryUnavailable { .. }
        )
    }

    /// Whether a start failed because the container's cgroup was gone when
    /// runc mounted it, before the container's process ran.
    ///
    /// runc's systemd cgroup driver on cgroup v1 starts the container's
    /// scope before it gives systemd the scope's device rules. Should
    /// systemd realize the scope in between (a sibling unit started or
    /// changed, a `daemon-reload`), it moves the container's first process
    /// out of the scope's `devices` group, which it does not know the scope
    /// needs yet, and may remove the group it moved it to: runc then fails
    /// with `error mounting "cgroup" ... no such file or directory`. Nothing
    /// ran, so the start may be asked again.
    pub fn is_cgroup_lost_at_start(&self) -> bool {
        match self {
            RuntimeError::Api { reason, .. } => {
                reason.contains("error mounting \"cgroup\"")
                    && reason.contains("no such file or directory")
            }
            _ => false,
        }
    }
}

/// A start request, `call`, asked once more when runc lost the container's
/// cgroup as it set it up ([`RuntimeError::is_cgroup_lost_at_start`]):
/// nothing ran, so a start (a step's fire above all, which nothing else
/// retries) does not fail on a race between runc and systemd.
pub(crate) async fn start_once_more_if_cgroup_lost<F, Fut>(
    container: &str,
    mut call: F,
) -> Result<(), RuntimeError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), RuntimeError>>,
{
    match call().await {
        Err(e) if e.is_cgroup_lost_at_start() => {
            tracing::warn!(
                MESH_CONTAINER = %container,
                "starting {container}: {e}; its process never ran: the start is asked once more"
            );
            call().await
        }
        answer => answer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What runc said when systemd moved a fire's first process out of its
    /// scope's `devices` group as runc set the scope up (a node with the
    /// systemd cgroup driver on cgroup v1).
    const RUNC_LOST_ITS_CGROUP: &str = "failed to create shim task: OCI runtime create failed: \
        runc create failed: unable to start container process: error during container init: \
        error mounting \"cgroup\" to rootfs at \"/sys/fs/cgroup\": stat \
        /sys/fs/cgroup/devices/mesh.slice/mesh-host.slice: no such file or directory: unknown";

    /// Starts answered in turn by `answers` (then success); how many were asked.
    async fn start_answered(answers: Vec<&str>) -> (Result<(), RuntimeError>, usize) {
        let asked = std::cell::Cell::new(0);
        let answer = start_once_more_if_cgroup_lost("gc", || {
            let n = asked.get();
            asked.set(n + 1);
            let reason = answers.get(n).map(|r| r.to_string());
            async move {
                match reason {
                    Some(reason) => Err(RuntimeError::Api {
                        context: "start container gc".into(),
                        reason,
                    }),
                    None => Ok(()),
                }
            }
        })
        .await;
        (answer, asked.get())
    }

    #[tokio::test]
    async fn a_start_whose_cgroup_was_lost_is_asked_once_more_and_only_once() {
        assert_eq!(
            start_answered(vec![RUNC_LOST_ITS_CGROUP]).await,
            (Ok(()), 2)
        );
        let (twice, asked) = start_answered(vec![RUNC_LOST_ITS_CGROUP; 2]).await;
        assert!(twice.is_err_and(|e| e.is_cgroup_lost_at_start()));
        assert_eq!(asked, 2, "asked once more, not again");
    }

    #[tokio::test]
    async fn a_start_refused_otherwise_is_asked_once() {
        // Also runc's, and also "no such file or directory": but not a cgroup.
        let refused = "OCI runtime create failed: runc create failed: unable to start \
            container process: exec: \"gc\": stat gc: no such file or directory: unknown";
        let (answer, asked) = start_answered(vec![refused]).await;
        assert!(answer.is_err_and(|e| e.to_string().contains("exec: \"gc\"")));
        assert_eq!(asked, 1);
        assert_eq!(start_answered(vec![]).await, (Ok(()), 1));
    }

    #[test]
    fn only_runcs_lost_cgroup_is_a_start_to_ask_again() {
        let api = |reason: &str| RuntimeError::Api {
            context: "start container gc".into(),
            reason: reason.into(),
        };
        let lost = "OCI runtime create failed: runc create failed: unable to start container \
            process: error during container init: error mounting \"cgroup\" to rootfs at \
            \"/sys/fs/cgroup\": stat /sys/fs/cgroup/devices/a.slice: no such file or directory";
        assert!(api(lost).is_cgroup_lost_at_start());
        // The same mount refused otherwise, and a missing file elsewhere.
        assert!(
            !api(&lost.replace("no such file or directory", "permission denied"))
                .is_cgroup_lost_at_start()
        );
        assert!(!api("exec: \"gc\": stat gc: no such file or directory").is_cgroup_lost_at_start());
        let unreachable = RuntimeError::Unreachable {
            endpoint: "/run/docker.sock".into(),
            reason: lost.into(),
        };
        assert!(!unreachable.is_cgroup_lost_at_start());
    }

    #[test]
    fn an_unreachable_runtime_is_explained_with_what_to_start() {
        let e = RuntimeError::Unreachable {
            endpoint: "/run/docker.sock".into(),
            reason: "connection refused".into(),
        };
        let text = explain(&e);
        for needed in [
            "/run/docker.sock",
            "docker.service",
            "podman.socket",
            "--docker-host",
        ] {
            assert!(text.contains(needed), "{needed}: {text}");
        }
        let other = RuntimeError::NotFound {
            what: "container web".into(),
        };
        assert_eq!(explain(&other), other.to_string());
    }

    #[test]
    fn only_unanswered_calls_are_transient() {
        let unavailable = RuntimeError::RegistryUnavailable {
            reference: "r@sha256:00".into(),
            reason: "connection refused".into(),
        };
        let refused = RuntimeError::Registry {
            reference: "r@sha256:00".into(),
            status: 404,
            reason: "manifest unknown".into(),
        };
        assert!(unavailable.is_transient());
        assert!(!refused.is_transient());
        assert_eq!(
            refused.to_string(),
            "pull of r@sha256:00 refused by the registry (status 404): manifest unknown"
        );
    }
}
