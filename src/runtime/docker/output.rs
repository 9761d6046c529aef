//! A container's output read back through the Engine API (`logs`), as
//! its log driver keeps it: what mesh-host forwards to the journal where
//! the driver carries no label (Podman 4.3: src/schedule/forward.rs).

use bollard::container::LogOutput;
use bollard::query_parameters::LogsOptionsBuilder;
use futures_util::StreamExt;

use super::client::{error_chain, DockerRuntime, LONG_TIMEOUT};
use crate::runtime::{OutputChunk, OutputChunks, OutputStream, RuntimeError};

/// See [`crate::runtime::ContainerRuntime::output`].
pub(super) fn output(rt: &DockerRuntime, name: &str, follow: bool) -> OutputChunks {
    let options = LogsOptionsBuilder::new()
        .follow(follow)
        .stdout(true)
        .stderr(true)
        .tail("all")
        .build();
    let endpoint = rt.endpoint.clone();
    let what = name.to_string();
    let stream = rt
        .client_with_timeout(LONG_TIMEOUT)
        .logs(name, Some(options))
        .filter_map(move |item| {
            let chunk = match item {
                Ok(LogOutput::StdOut { message }) | Ok(LogOutput::Console { message }) => {
                    Some(Ok(OutputChunk {
                        stream: OutputStream::Stdout,
                        bytes: message.to_vec(),
                    }))
                }
                Ok(LogOutput::StdErr { message }) => Some(Ok(OutputChunk {
                    stream: OutputStream::Stderr,
                    bytes: message.to_vec(),
                })),
                Ok(LogOutput::StdIn { .. }) => None,
                Err(bollard::errors::Error::DockerResponseServerError {
                    status_code: 404, ..
                }) => Some(Err(RuntimeError::NotFound {
                    what: format!("container {what}"),
                })),
                Err(err) => Some(Err(RuntimeError::Unreachable {
                    endpoint: endpoint.clone(),
                    reason: format!("output of {what}: {}", error_chain(&err)),
                })),
            };
            std::future::ready(chunk)
        });
    Box::pin(stream)
}
