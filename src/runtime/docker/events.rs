//! Container events through the Docker client: the starts, stops and
//! deaths of named containers as a stream, from the moment it is asked
//! for.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use bollard::query_parameters::EventsOptions;
use futures_util::StreamExt;

use super::client::{error_chain, DockerRuntime, LONG_TIMEOUT};
use crate::runtime::{ContainerEvent, ContainerEventKind, EventStream, RuntimeError};

/// The starts, stops and deaths of the containers `names` from now on
/// ([`crate::runtime::RuntimeView::events`]).
pub(super) async fn events(
    rt: &DockerRuntime,
    names: &[String],
) -> Result<EventStream, RuntimeError> {
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
    let endpoint = rt.endpoint.clone();
    let stream = rt
        .client_with_timeout(LONG_TIMEOUT)
        .events(Some(options))
        .filter_map(move |item| {
            let result = match item {
                Err(err) => Some(Err(RuntimeError::Unreachable {
                    endpoint: endpoint.clone(),
                    reason: format!("event stream: {}", error_chain(&err)),
                })),
                Ok(message) => {
                    let attributes = message.actor.and_then(|a| a.attributes).unwrap_or_default();
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

/// The exit code of the first `die` in `stream` (the events of one
/// container, from [`events`]): Docker sends it as soon as the run's
/// processes are gone, before it has cleaned the container up and before
/// its `wait` endpoint answers. Never resolves when the stream could not
/// be had, ends, or the event carries no exit code (Podman's may not):
/// the caller races it against that endpoint, which always answers.
pub(super) async fn first_die(stream: Result<EventStream, RuntimeError>) -> i64 {
    if let Ok(mut stream) = stream {
        while let Some(Ok(event)) = stream.next().await {
            if let ContainerEventKind::Die {
                exit_code: Some(code),
            } = event.kind
            {
                return code;
            }
        }
    }
    std::future::pending().await
}
