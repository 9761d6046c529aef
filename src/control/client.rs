//! The command line's side of the control socket.

use std::path::Path;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use super::{Frame, Request, Response};
use crate::progress::Progress;

/// Send one request and wait for its response (as long as the daemon takes:
/// an apply or a run can take minutes).
pub async fn call(socket: &Path, request: &Request) -> Result<Response, String> {
    call_with_progress(socket, request, |_| {}).await
}

/// [`call`], giving `each` the progress frames that come before the
/// answer when `request` asks for them. A daemon that does not know
/// progress frames refuses such a request: it is then sent again
/// without asking for them.
pub async fn call_with_progress(
    socket: &Path,
    request: &Request,
    mut each: impl FnMut(Progress),
) -> Result<Response, String> {
    let response = exchange(socket, request, &mut each).await?;
    if request.wants_progress() && response.exit == 2 && response.text.contains("`progress`") {
        return exchange(socket, &request.without_progress(), &mut each).await;
    }
    Ok(response)
}

async fn exchange(
    socket: &Path,
    request: &Request,
    each: &mut impl FnMut(Progress),
) -> Result<Response, String> {
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
    let mut reader = BufReader::new(stream);
    let mut answer = Vec::new();
    loop {
        answer.clear();
        let read = reader
            .read_until(b'\n', &mut answer)
            .await
            .map_err(|e| format!("cannot read the daemon's answer: {e}"))?;
        if read == 0 || !answer.ends_with(b"\n") {
            break;
        }
        // A line before the answer is a progress frame; the answer itself
        // is the last line, with no newline after it.
        match serde_json::from_slice::<Frame>(&answer) {
            Ok(frame) => each(frame.progress),
            Err(_) => {
                reader
                    .read_to_end(&mut answer)
                    .await
                    .map_err(|e| format!("cannot read the daemon's answer: {e}"))?;
                break;
            }
        }
    }
    match (serde_json::from_slice(&answer), sent) {
        (Ok(response), _) => Ok(response),
        (Err(_), Err(e)) => Err(format!("cannot send the request: {e}")),
        (Err(e), Ok(())) => Err(format!("malformed answer from the daemon: {e}")),
    }
}
