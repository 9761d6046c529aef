//! The daemon's side of the control socket.

use crate::exit::Exit;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot, watch, Semaphore};

use super::{
    Frame, Request, Response, ANSWER_TIMEOUT, MAX_CONNECTIONS, MAX_REQUEST, REQUEST_TIMEOUT,
};
use crate::progress::{Progress, Reporter};

/// A request with the channel its answer goes back on.
#[derive(Debug)]
pub struct Incoming {
    /// The request.
    pub request: Request,
    /// Where to send the response.
    pub reply: oneshot::Sender<Response>,
    /// Where progress goes: to the client when it asked for it
    /// ([`Request::wants_progress`]), else nowhere.
    pub progress: Reporter,
}

/// Bind the socket (replacing a stale one), root-only (0600).
pub fn bind(path: &Path) -> std::io::Result<UnixListener> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let listener = UnixListener::bind(path)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Serve connections until `shutdown` turns true, passing requests to `to_daemon`.
pub async fn serve(
    listener: UnixListener,
    path: PathBuf,
    to_daemon: mpsc::Sender<Incoming>,
    mut shutdown: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.wait_for(|s| *s) => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!("control socket accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            tokio::spawn(refuse(stream, "too many connections; try again"));
            continue;
        };
        let to_daemon = to_daemon.clone();
        tokio::spawn(connection(stream, to_daemon, permit));
    }
    let _ = std::fs::remove_file(&path);
}

async fn refuse(mut stream: UnixStream, why: &str) {
    let body = serde_json::to_vec(&Response::error(Exit::Refused, why)).unwrap_or_default();
    let _ = tokio::time::timeout(REQUEST_TIMEOUT, async {
        stream.write_all(&body).await?;
        stream.shutdown().await?;
        // Closing with the peer's bytes unread would reset the connection
        // and lose the answer: discard (never parse) them first, bounded.
        let mut sink = tokio::io::sink();
        tokio::io::copy(&mut (&mut stream).take(MAX_REQUEST as u64), &mut sink).await?;
        Ok::<(), std::io::Error>(())
    })
    .await;
}

/// How long a dropped client is given to take its answer.
const DROP_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Tell a client that sent no whole request in time why it is dropped, in
/// at most [`DROP_GRACE`], and close: nothing more is read from it.
async fn drop_silent(mut stream: UnixStream, why: &str) {
    let body = serde_json::to_vec(&Response::error(Exit::Refused, why)).unwrap_or_default();
    let _ = tokio::time::timeout(DROP_GRACE, async {
        stream.write_all(&body).await?;
        stream.shutdown().await
    })
    .await;
}

/// One client, holding one of the socket's slots (`slot`) until its
/// answer is written.
async fn connection(
    mut stream: UnixStream,
    to_daemon: mpsc::Sender<Incoming>,
    slot: tokio::sync::OwnedSemaphorePermit,
) {
    // Credentials first: nothing from a non-root peer is ever parsed.
    match stream.peer_cred() {
        Ok(cred) if cred.uid() == 0 => {}
        Ok(cred) => {
            tracing::warn!("control socket: refused uid {}", cred.uid());
            refuse(stream, "refused: only root may control mesh-host").await;
            return;
        }
        Err(e) => {
            tracing::warn!("control socket: cannot read peer credentials: {e}");
            return;
        }
    }
    let request = match tokio::time::timeout(REQUEST_TIMEOUT, read_request(&mut stream)).await {
        Ok(Ok(r)) => r,
        Ok(Err(why)) => {
            refuse(stream, &why).await;
            return;
        }
        Err(_) => {
            // A client silent for the whole timeout is dropped at once and
            // its slot freed: waiting for it to close its side (as `refuse`
            // does) would let idle clients hold every slot for good.
            drop_silent(stream, "request not received in time").await;
            return;
        }
    };
    let (reply, answer) = oneshot::channel();
    let (progress, frames) = if request.wants_progress() {
        let (progress, frames) = Reporter::channel();
        (progress, Some(frames))
    } else {
        (Reporter::none(), None)
    };
    let incoming = Incoming {
        request,
        reply,
        progress,
    };
    if to_daemon.send(incoming).await.is_err() {
        refuse(stream, "the daemon is stopping").await;
        return;
    }
    let response = match frames {
        Some(frames) => stream_progress(&mut stream, frames, answer).await,
        None => answer.await,
    }
    .unwrap_or_else(|_| Response::error(Exit::Failed, "the daemon stopped before answering"));
    let body = response.to_bytes();
    let written = tokio::time::timeout(ANSWER_TIMEOUT, async {
        stream.write_all(&body).await?;
        // The slot is given back before the close the client waits for:
        // a client that has its whole answer and asks again (a script
        // calling `status` in a loop) never finds its own last connection
        // still holding a slot.
        drop(slot);
        stream.shutdown().await
    })
    .await;
    if written.is_err() {
        tracing::warn!(
            "control socket: answer not taken within {}s; connection dropped",
            ANSWER_TIMEOUT.as_secs()
        );
    }
}

/// Write each piece of progress to the client as a line until the answer
/// comes, then what was sent before it, and return the answer. A client
/// that does not take a frame within [`ANSWER_TIMEOUT`] gets no more of
/// them: the request goes on, and its answer is still written.
async fn stream_progress(
    stream: &mut UnixStream,
    mut frames: tokio::sync::mpsc::UnboundedReceiver<Progress>,
    mut answer: oneshot::Receiver<Response>,
) -> Result<Response, oneshot::error::RecvError> {
    let mut streaming = true;
    loop {
        tokio::select! {
            biased;
            response = &mut answer => {
                while let (true, Ok(progress)) = (streaming, frames.try_recv()) {
                    streaming = write_frame(stream, progress).await;
                }
                return response;
            }
            Some(progress) = frames.recv(), if streaming => {
                streaming = write_frame(stream, progress).await;
                if !streaming {
                    frames.close();
                }
            }
        }
    }
}

/// Write one progress frame; `false` when the client did not take it.
async fn write_frame(stream: &mut UnixStream, progress: Progress) -> bool {
    let Ok(mut line) = serde_json::to_vec(&Frame { progress }) else {
        return true;
    };
    line.push(b'\n');
    matches!(
        tokio::time::timeout(ANSWER_TIMEOUT, stream.write_all(&line)).await,
        Ok(Ok(()))
    )
}

/// Read until the client shuts its side, at most [`MAX_REQUEST`] bytes.
async fn read_request(stream: &mut UnixStream) -> Result<Request, String> {
    let mut buf = Vec::new();
    let mut limited = stream.take(MAX_REQUEST as u64 + 1);
    limited
        .read_to_end(&mut buf)
        .await
        .map_err(|e| format!("cannot read the request: {e}"))?;
    if buf.len() > MAX_REQUEST {
        return Err(format!("request larger than {MAX_REQUEST} bytes"));
    }
    super::wire::decode(buf)
}
