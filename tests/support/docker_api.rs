//! The node's container engine asked directly over its API socket, for the
//! probes tests repeat many times a second while they wait (is it running,
//! does it exist). The socket is reached through the node's root
//! (`/proc/PID/root`), so a probe starts no process: through `nsenter` and
//! the `docker` CLI each cost about 30 ms of CPU, thousands of times a run,
//! on a machine whose two cores every test shares.
//!
//! What is asked is what `docker container inspect` asks (`GET
//! /containers/NAME/json`); Podman's compatible socket answers the same.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use serde_json::Value;

use super::Node;

/// How long an answer may take before the probe fails the test: the CLI
/// would wait for good; a test that waits on a paused engine should fail
/// saying so, not hang the suite.
const ANSWER: Duration = Duration::from_secs(60);

/// The most of an answer read: an inspect document is kilobytes (a
/// container with a 1 MiB health check carries it three times).
const MAX_ANSWER: u64 = 16 << 20;

/// What the engine says of a container.
#[derive(Debug)]
pub enum Inspected {
    /// Its inspect document.
    Found(Value),
    /// No such container.
    Missing,
    /// The engine does not answer on its socket (stopped): as the CLI,
    /// which fails then, nothing is known of the container.
    NoEngine,
}

impl Node {
    /// The engine's socket as this process reaches it.
    fn api_socket(&self) -> String {
        let inside = self
            .docker_host()
            .and_then(|h| h.strip_prefix("unix://"))
            .unwrap_or("/run/docker.sock")
            .to_string();
        format!("/proc/{}/root{inside}", self.pid())
    }

    /// `GET /containers/NAME/json` on the node's engine.
    ///
    /// # Panics
    ///
    /// When `name` is not a container name, or the engine accepts the
    /// connection and does not answer within a minute.
    pub fn inspect_container(&self, name: &str) -> Inspected {
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)),
            "not a container name: {name:?}"
        );
        let Ok(mut stream) = UnixStream::connect(self.api_socket()) else {
            return Inspected::NoEngine;
        };
        stream.set_read_timeout(Some(ANSWER)).expect("read timeout");
        stream
            .set_write_timeout(Some(ANSWER))
            .expect("write timeout");
        // HTTP/1.0: the engine closes after its answer, which is then read
        // to its end, with no chunked encoding to undo.
        let request = format!("GET /containers/{name}/json HTTP/1.0\r\nHost: engine\r\n\r\n");
        if stream.write_all(request.as_bytes()).is_err() {
            return Inspected::NoEngine;
        }
        let mut answer = Vec::new();
        if let Err(e) = (&mut stream).take(MAX_ANSWER + 1).read_to_end(&mut answer) {
            assert!(
                !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
                "the engine did not answer GET /containers/{name}/json within {ANSWER:?}"
            );
            return Inspected::NoEngine;
        }
        assert!(
            answer.len() as u64 <= MAX_ANSWER,
            "the engine's answer to GET /containers/{name}/json is over {MAX_ANSWER} bytes"
        );
        let text = String::from_utf8_lossy(&answer);
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            return Inspected::NoEngine;
        };
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse::<u16>().ok());
        match status {
            Some(200) => Inspected::Found(serde_json::from_str(body).unwrap_or_else(|e| {
                panic!("the engine's inspect of {name} is not JSON ({e}): {body}")
            })),
            Some(404) => Inspected::Missing,
            // An engine starting or stopping may answer with an error: as
            // the CLI, which fails then, nothing is known.
            _ => Inspected::NoEngine,
        }
    }
}
