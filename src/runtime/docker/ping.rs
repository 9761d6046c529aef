//! Who answers at the endpoint, asked once at connect: `GET /_ping`,
//! whose headers name the Engine API version (`Api-Version`) and, from
//! Podman, its own (`Libpod-Api-Version`).
//!
//! `GET /version` says the same in its body, but Podman answers it by
//! asking the package manager about conmon and the OCI runtime each time
//! (a `dpkg-query` or `rpm` per component): about a third of a second of
//! its CPU for every `mesh-host` command that connects, against a few
//! milliseconds for the ping. bollard's `ping` gives the body alone, so
//! the request is made here with hyper, bollard's own HTTP client.

use std::time::Duration;

use http_body_util::Empty;
use hyper::body::Bytes;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};

/// What the ping's headers say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pinged {
    /// `Api-Version`: the daemon's newest Engine API version, when named.
    pub api_version: Option<String>,
    /// `Libpod-Api-Version` was sent: Podman's compatible API answers.
    pub podman: bool,
}

/// `GET /_ping` at `endpoint` (a socket path, `unix://PATH`,
/// `tcp://HOST:PORT` or `http://HOST:PORT`), within `timeout`.
pub(super) async fn ping(endpoint: &str, timeout: Duration) -> Result<Pinged, String> {
    let asked = async {
        if let Some(path) = endpoint
            .strip_prefix("unix://")
            .or_else(|| endpoint.starts_with('/').then_some(endpoint))
        {
            let stream = tokio::net::UnixStream::connect(path)
                .await
                .map_err(|e| format!("cannot connect to {path}: {e}"))?;
            ask(stream).await
        } else {
            let address = endpoint
                .strip_prefix("tcp://")
                .or_else(|| endpoint.strip_prefix("http://"))
                .unwrap_or(endpoint)
                .trim_end_matches('/');
            let stream = tokio::net::TcpStream::connect(address)
                .await
                .map_err(|e| format!("cannot connect to {address}: {e}"))?;
            ask(stream).await
        }
    };
    tokio::time::timeout(timeout, asked)
        .await
        .map_err(|_| format!("no answer to a ping within {} s", timeout.as_secs()))?
}

/// The ping over one connection; the body (`OK`) is not read.
async fn ask<S>(stream: S) -> Result<Pinged, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("ping: {}", super::error_text::error_chain(&e)))?;
    let request = hyper::Request::get("/_ping")
        .header(hyper::header::HOST, "docker")
        .body(Empty::<Bytes>::new())
        .map_err(|e| format!("ping: {e}"))?;
    // The connection is driven here, beside the answer, until the answer
    // comes: a daemon may close it right after answering, the answer
    // then already handed over.
    let answer = sender.send_request(request);
    tokio::pin!(answer, connection);
    let response = tokio::select! {
        biased;
        response = &mut answer => response,
        ended = &mut connection => match ended {
            Ok(()) => answer.await,
            Err(e) => return Err(format!("ping: {}", super::error_text::error_chain(&e))),
        },
    }
    .map_err(|e| format!("ping: {}", super::error_text::error_chain(&e)))?;
    if !response.status().is_success() {
        return Err(format!("ping: status {}", response.status()));
    }
    let headers = response.headers();
    Ok(Pinged {
        api_version: headers
            .get("api-version")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        podman: headers.contains_key("libpod-api-version"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A one-answer server on a socket of its own: answers every request
    /// it reads with `answer`, and hands back the request lines it saw.
    async fn serve_once(
        answer: &'static str,
    ) -> (tempfile::TempDir, tokio::task::JoinHandle<String>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let listener = tokio::net::UnixListener::bind(dir.path().join("s")).expect("bind");
        let seen = tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.expect("accept");
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.ends_with(b"\r\n\r\n") {
                let n = conn.read(&mut buf).await.expect("read");
                if n == 0 {
                    break;
                }
                request.extend_from_slice(&buf[..n]);
            }
            conn.write_all(answer.as_bytes()).await.expect("write");
            String::from_utf8_lossy(&request).into_owned()
        });
        (dir, seen)
    }

    #[tokio::test]
    async fn docker_names_its_api_version_and_is_not_podman() {
        let (dir, seen) =
            serve_once("HTTP/1.1 200 OK\r\nApi-Version: 1.41\r\nContent-Length: 2\r\n\r\nOK").await;
        let socket = format!("unix://{}", dir.path().join("s").display());
        let pinged = ping(&socket, Duration::from_secs(5)).await.expect("ping");
        assert_eq!(
            pinged,
            Pinged {
                api_version: Some("1.41".into()),
                podman: false
            }
        );
        let request = seen.await.expect("server");
        assert!(
            request.starts_with("GET /_ping HTTP/1.1\r\n"),
            "{request:?}"
        );
    }

    #[tokio::test]
    async fn podman_is_told_by_its_libpod_header() {
        let (dir, _seen) = serve_once(
            "HTTP/1.1 200 OK\r\nApi-Version: 1.41\r\nLibpod-Api-Version: 4.3.1\r\nContent-Length: 2\r\n\r\nOK",
        )
        .await;
        let socket = dir.path().join("s").display().to_string();
        let pinged = ping(&socket, Duration::from_secs(5)).await.expect("ping");
        assert!(pinged.podman, "{pinged:?}");
        assert_eq!(pinged.api_version.as_deref(), Some("1.41"));
    }

    #[tokio::test]
    async fn an_answer_without_a_version_says_none_and_an_error_status_fails() {
        let (dir, _seen) = serve_once("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK").await;
        let socket = dir.path().join("s").display().to_string();
        let pinged = ping(&socket, Duration::from_secs(5)).await.expect("ping");
        assert_eq!(pinged.api_version, None);

        let (dir, _seen) =
            serve_once("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n").await;
        let socket = dir.path().join("s").display().to_string();
        let err = ping(&socket, Duration::from_secs(5))
            .await
            .expect_err("500");
        assert!(err.contains("500"), "{err}");
    }

    #[tokio::test]
    async fn a_missing_socket_and_a_silent_one_are_errors_naming_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("none").display().to_string();
        let err = ping(&missing, Duration::from_secs(5))
            .await
            .expect_err("missing");
        assert!(err.contains(&missing), "{err}");

        // Accepts and never answers: the timeout ends the wait.
        let path = dir.path().join("silent");
        let listener = tokio::net::UnixListener::bind(&path).expect("bind");
        let _held = tokio::spawn(async move {
            let (conn, _) = listener.accept().await.expect("accept");
            tokio::time::sleep(Duration::from_secs(60)).await;
            drop(conn);
        });
        let err = ping(&path.display().to_string(), Duration::from_millis(200))
            .await
            .expect_err("silent");
        assert!(err.contains("no answer"), "{err}");
    }
}
