//! Images through the Docker client: whether one is present, and pulling
//! one, with a registry's refusals told from its outages.

use std::time::Duration;

use bollard::errors::Error as BollardError;
use bollard::query_parameters::CreateImageOptions;
use futures_util::StreamExt;

use super::client::DockerRuntime;
use crate::runtime::RuntimeError;

/// Time for the daemon to answer a pull; it only answers once the registry
/// has (Docker's own registry timeouts are shorter than this).
const PULL_ANSWER_TIMEOUT: Duration = Duration::from_secs(180);
/// A pull that reports no progress for this long is given up as unavailable.
const PULL_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Whether `image` is present ([`crate::runtime::RuntimeView::image_present`]).
pub(super) async fn image_present(rt: &DockerRuntime, image: &str) -> Result<bool, RuntimeError> {
    match rt.docker.inspect_image(image).await {
        Ok(_) => Ok(true),
        Err(BollardError::DockerResponseServerError {
            status_code: 404, ..
        }) => Ok(false),
        Err(err) => Err(rt.error(
            &format!("inspect image {image}"),
            &format!("image {image}"),
            err,
        )),
    }
}

/// The repository digests of the local image `reference`; `None`: absent.
pub(super) async fn repo_digests(
    rt: &DockerRuntime,
    reference: &str,
) -> Result<Option<Vec<String>>, RuntimeError> {
    match rt.docker.inspect_image(reference).await {
        Ok(image) => Ok(Some(image.repo_digests.unwrap_or_default())),
        Err(BollardError::DockerResponseServerError {
            status_code: 404, ..
        }) => Ok(None),
        Err(err) => Err(rt.error(
            &format!("inspect image {reference}"),
            &format!("image {reference}"),
            err,
        )),
    }
}

/// The digests the registry's `reference` (`REPO:TAG`) is known by now
/// ([`crate::runtime::RuntimeView::registry_digests`]).
pub(super) async fn registry_digests(
    rt: &DockerRuntime,
    reference: &str,
) -> Result<Vec<String>, RuntimeError> {
    if rt.is_podman() {
        return pulled_digests(rt, reference).await;
    }
    match rt.docker.inspect_registry_image(reference, None).await {
        Ok(answer) => answer
            .descriptor
            .digest
            .map(|d| vec![d])
            .ok_or_else(|| RuntimeError::Api {
                context: format!("inspect {reference} in its registry"),
                reason: "the answer carries no digest".into(),
            }),
        Err(err) => Err(rt.error(
            &format!("inspect {reference} in its registry"),
            &format!("image {reference}"),
            err,
        )),
    }
}

/// Podman: pull `reference` and read the digests, in its repository, of
/// the image the tag now names. Podman 4.3 answers its Docker-compatible
/// distribution inspection with 404, and its remote manifest inspection
/// carries no digest.
async fn pulled_digests(rt: &DockerRuntime, reference: &str) -> Result<Vec<String>, RuntimeError> {
    pull(rt, reference).await?;
    let repo = repository_of(reference);
    let found = repo_digests(rt, reference).await?.unwrap_or_default();
    let digests: Vec<String> = found
        .iter()
        .filter_map(|d| d.split_once('@'))
        .filter(|(r, _)| *r == repo)
        .map(|(_, digest)| digest.to_string())
        .collect();
    if digests.is_empty() {
        return Err(RuntimeError::Api {
            context: format!("read the digest of {reference} once pulled"),
            reason: format!("the image carries no digest in {repo}"),
        });
    }
    Ok(digests)
}

/// `REPO` of `REPO:TAG` (a registry's port is not a tag: a tag has no `/`).
fn repository_of(reference: &str) -> &str {
    match reference.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => repo,
        _ => reference,
    }
}

/// Pulls `image` ([`crate::runtime::ContainerRuntime::pull`]).
pub(super) async fn pull(rt: &DockerRuntime, image: &str) -> Result<(), RuntimeError> {
    let options = CreateImageOptions {
        from_image: Some(image.into()),
        ..Default::default()
    };
    let client = rt.client_with_timeout(PULL_ANSWER_TIMEOUT);
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
                return Err(rt.error(&format!("pull {image}"), &format!("image {image}"), err))
            }
        }
    }
}

/// Classifies a pull failure reported with an HTTP status (`None` when it
/// came mid-stream) and the daemon's message.
pub(super) fn pull_error(reference: &str, status: Option<u16>, message: String) -> RuntimeError {
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

#[cfg(test)]
mod tests {
    use super::repository_of;

    #[test]
    fn the_repository_of_a_tagged_reference_keeps_a_registry_port() {
        assert_eq!(
            repository_of("127.0.0.1:5000/app:1.2"),
            "127.0.0.1:5000/app"
        );
        assert_eq!(repository_of("127.0.0.1:5000/app"), "127.0.0.1:5000/app");
        assert_eq!(repository_of("app:latest"), "app");
    }
}
