//! The command line's side of the control socket.

use std::path::Path;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use super::{Request, Response};

/// Send one request and wait for its response (as long as the daemon takes:
/// an apply or a run can take minutes).
pub async fn call(socket: &Path, request: &Request) -> Result<Response, String> {
    let mut stream = UnixStream::connect(socket).await.map_err(|e| {
        format!(
            "no mesh-host daemon answers on {} ({e}); is mesh-host.service running? Use --local to work without it",
            socket.display()
        )
    })?;
    let body = serde_json::to_vec(request).map_err(|e| e.to_string())?;
    // The daemon may refuse before reading (not root, too many clients) and
    // close its side: then the write fails, but its answer is still there.
    let sent = stream.write_all(&body).await;
    let _ = stream.shutdown().await;
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .await
        .map_err(|e| format!("cannot read the daemon's answer: {e}"))?;
    match (serde_json::from_slice(&answer), sent) {
        (Ok(response), _) => Ok(response),
        (Err(_), Err(e)) => Err(format!("cannot send the request: {e}")),
        (Err(e), Ok(())) => Err(format!("malformed answer from the daemon: {e}")),
    }
}
