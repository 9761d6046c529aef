//! The command line's side of the control socket.

use std::path::Path;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use super::{Frame, Request, Response, MAX_ANSWER};
use crate::progress::Progress;

/// Send one request and wait for its response (as long as the daemon takes:
/// an apply or a run can take minutes).
pub async fn call(socket: &Path, request: &Request) -> Result<Response, String> {
    call_for(socket, request, Form::Both).await
}

/// Which of a response's two forms the caller reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `text` only: `json` is skipped, not built (the `status` of five
    /// thousand steps is megabytes of it).
    Text,
    /// `json` only: `text` is skipped.
    Json,
    /// Both.
    Both,
}

impl Form {
    /// The one form a request may ask the daemon to make alone.
    pub fn only(self) -> Option<super::Form> {
        match self {
            Form::Text => Some(super::Form::Text),
            Form::Json => Some(super::Form::Json),
            Form::Both => None,
        }
    }
}

/// The most fields a request drops for an older daemon (`apply` sends two
/// it may not know).
const MAX_FIELDS_DROPPED: usize = 3;

/// A response of which only `text` is read.
#[derive(serde::Deserialize)]
struct TextOnly {
    exit: u8,
    text: String,
    #[serde(default)]
    #[allow(dead_code)]
    json: serde::de::IgnoredAny,
}

/// A response of which only `json` is read.
#[derive(serde::Deserialize)]
struct JsonOnly {
    exit: u8,
    json: Box<serde_json::value::RawValue>,
    #[serde(default)]
    #[allow(dead_code)]
    text: serde::de::IgnoredAny,
}

fn parse(answer: &[u8], form: Form) -> serde_json::Result<Response> {
    Ok(match form {
        Form::Both => serde_json::from_slice(answer)?,
        Form::Text => {
            let r: TextOnly = serde_json::from_slice(answer)?;
            Response {
                exit: r.exit,
                text: r.text,
                json: super::null(),
            }
        }
        Form::Json => {
            let r: JsonOnly = serde_json::from_slice(answer)?;
            Response {
                exit: r.exit,
                text: String::new(),
                json: r.json,
            }
        }
    })
}

/// [`call`], reading only the `form` the caller needs.
pub async fn call_for(socket: &Path, request: &Request, form: Form) -> Result<Response, String> {
    call_with_progress(socket, request, form, |_| {}).await
}

/// [`call_for`], giving `each` the progress frames that come before the
/// answer when `request` asks for them. A daemon that does not know
/// progress frames refuses such a request: it is then sent again
/// without asking for them (and so for each field an older daemon does
/// not know, and the declaration sent after the request).
pub async fn call_with_progress(
    socket: &Path,
    request: &Request,
    form: Form,
    mut each: impl FnMut(Progress),
) -> Result<Response, String> {
    // A daemon older than a field this client sends refuses the request
    // naming it (in the form read: its text, or its JSON's `error`, where
    // a backtick is written as it is): asked again without that field,
    // one at a time, so that what it knows is still asked. One older than
    // the attached declaration ([`super::wire`]) refuses the bytes after
    // the request: asked again with the declaration inside it.
    let mut attached = true;
    let mut response = exchange(socket, request, attached, form, &mut each).await?;
    let mut asked = std::borrow::Cow::Borrowed(request);
    for _ in 0..=MAX_FIELDS_DROPPED {
        if response.exit != 2 {
            break;
        }
        let refusal = refusal_of(&response);
        if attached && super::wire::refused_as_attached(refusal) {
            attached = false;
        } else {
            let Some(less) = asked.without_refused(refusal) else {
                break;
            };
            asked = std::borrow::Cow::Owned(less);
        }
        response = exchange(socket, &asked, attached, form, &mut each).await?;
    }
    Ok(response)
}

/// What a refusal says, in the form read: its text, or its JSON's
/// `error`, where a backtick is written as it is.
fn refusal_of(response: &Response) -> &str {
    if response.text.is_empty() {
        response.json.get()
    } else {
        response.text.as_str()
    }
}

/// One request sent and its answer read; `attached`: a declaration after
/// the request, not inside it ([`super::wire`]).
async fn exchange(
    socket: &Path,
    request: &Request,
    attached: bool,
    form: Form,
    each: &mut impl FnMut(Progress),
) -> Result<Response, String> {
    let mut stream = UnixStream::connect(socket).await.map_err(|e| {
        format!(
            "no mesh-host daemon answers on {} ({e}); is mesh-host.service running? Use --local to work without it",
            socket.display()
        )
    })?;
    let body = super::wire::encode(request, attached).map_err(|e| e.to_string())?;
    // The daemon may refuse before reading (not root, too many clients) and
    // close its side: then the write fails, but its answer is still there.
    let sent = stream.write_all(&body).await;
    let _ = stream.shutdown().await;
    let answer = read_answer(stream, MAX_ANSWER, each).await?;
    match (parse(&answer, form), sent) {
        (Ok(response), _) => Ok(response),
        (Err(_), Err(e)) => Err(format!("cannot send the request: {e}")),
        (Err(e), Ok(())) => Err(format!("malformed answer from the daemon: {e}")),
    }
}

/// The answer on `stream`: the progress frames before it are given to
/// `each`, and what comes after them is read whole, up to `limit` bytes
/// in all (a longer one is refused, not read on).
async fn read_answer(
    stream: impl AsyncRead + Unpin,
    limit: u64,
    each: &mut impl FnMut(Progress),
) -> Result<Vec<u8>, String> {
    let mut reader = BufReader::new(stream.take(limit + 1));
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
    if reader.into_inner().limit() == 0 {
        return Err(format!(
            "the daemon's answer is larger than {} MiB; not read",
            limit / (1024 * 1024)
        ));
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::Exit;

    /// The request of `status` as a daemon before `only` reads it.
    #[derive(serde::Deserialize)]
    #[serde(tag = "command", rename_all = "kebab-case", deny_unknown_fields)]
    enum OlderRequest {
        Status {
            #[serde(default)]
            #[allow(dead_code)]
            brief: bool,
        },
    }

    /// A daemon older than `only` on `path`: it refuses an unknown field
    /// by name, as `server::read_request` does, and answers both forms;
    /// the requests it was sent, once it has answered one.
    fn older_daemon(path: &Path) -> tokio::task::JoinHandle<Vec<String>> {
        let listener = tokio::net::UnixListener::bind(path).expect("bind");
        tokio::spawn(async move {
            let mut seen = Vec::new();
            for _ in 0..4 {
                let (mut stream, _) = listener.accept().await.expect("accept");
                let mut request = Vec::new();
                stream.read_to_end(&mut request).await.expect("read");
                let response = match serde_json::from_slice::<OlderRequest>(&request) {
                    Ok(OlderRequest::Status { .. }) => Response {
                        exit: 0,
                        text: "steps: 1".into(),
                        json: super::super::document(&serde_json::json!({"steps": []})),
                    },
                    Err(e) => Response::error(Exit::Refused, format!("malformed request: {e}")),
                };
                seen.push(String::from_utf8_lossy(&request).into_owned());
                stream.write_all(&response.to_bytes()).await.expect("write");
                let _ = stream.shutdown().await;
                if response.exit == 0 {
                    break;
                }
            }
            seen
        })
    }

    #[tokio::test]
    async fn a_daemon_that_does_not_know_only_is_asked_again_without_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("control.sock");
        // `status --json`: the refusal read from the JSON's `error`.
        let daemon = older_daemon(&path);
        let request = Request::Status {
            brief: false,
            only: Some(super::super::Form::Json),
        };
        let r = call_for(&path, &request, Form::Json).await.expect("answer");
        assert_eq!(r.exit, 0);
        assert_eq!(r.json.get(), r#"{"steps":[]}"#);
        let seen = daemon.await.expect("daemon");
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert!(seen[0].contains(r#""only":"json""#), "{seen:?}");
        assert_eq!(seen[1], r#"{"command":"status"}"#);

        // `status`: brief, which that daemon knows, is still asked.
        std::fs::remove_file(&path).expect("rm");
        let daemon = older_daemon(&path);
        let request = Request::Status {
            brief: true,
            only: Some(super::super::Form::Text),
        };
        let r = call_for(&path, &request, Form::Text).await.expect("answer");
        assert_eq!((r.exit, r.text.as_str()), (0, "steps: 1"));
        let seen = daemon.await.expect("daemon");
        assert_eq!(
            seen,
            [
                r#"{"command":"status","brief":true,"only":"text"}"#,
                r#"{"command":"status","brief":true}"#
            ]
        );
    }

    #[derive(serde::Deserialize)]
    #[serde(tag = "command", rename_all = "kebab-case", deny_unknown_fields)]
    enum OlderApply {
        Apply {
            declaration: String,
            #[serde(default)]
            #[allow(dead_code)]
            allow_empty: bool,
        },
    }

    #[tokio::test]
    async fn a_daemon_before_the_attached_declaration_is_sent_it_inside_the_request() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("control.sock");
        let listener = tokio::net::UnixListener::bind(&path).expect("bind");
        // A daemon that reads with `serde_json::from_slice`, knowing
        // neither `every_line` nor the declaration after the request.
        let daemon = tokio::spawn(async move {
            let mut seen = Vec::new();
            loop {
                let (mut stream, _) = listener.accept().await.expect("accept");
                let mut request = Vec::new();
                stream.read_to_end(&mut request).await.expect("read");
                let response = match serde_json::from_slice::<OlderApply>(&request) {
                    Ok(OlderApply::Apply { declaration, .. }) => Response {
                        exit: 0,
                        text: declaration,
                        json: super::super::null(),
                    },
                    Err(e) => Response::error(Exit::Refused, format!("malformed request: {e}")),
                };
                seen.push(String::from_utf8_lossy(&request).into_owned());
                stream.write_all(&response.to_bytes()).await.expect("write");
                let _ = stream.shutdown().await;
                if response.exit == 0 {
                    return seen;
                }
            }
        });
        let request = Request::Apply {
            declaration: "[\"a \\\"b\\\"\"]".into(),
            allow_empty: false,
            progress: false,
            every_line: true,
        };
        let r = call_for(&path, &request, Form::Text).await.expect("answer");
        assert_eq!((r.exit, r.text.as_str()), (0, "[\"a \\\"b\\\"\"]"));
        let seen = daemon.await.expect("daemon");
        assert_eq!(
            seen,
            [
                "{\"command\":\"apply\",\"declaration\":\"\",\"every_line\":true}\n[\"a \\\"b\\\"\"]",
                "{\"command\":\"apply\",\"declaration\":\"\"}\n[\"a \\\"b\\\"\"]",
                r#"{"command":"apply","declaration":"[\"a \\\"b\\\"\"]"}"#,
            ]
        );
    }

    /// A progress frame then an answer, as the daemon writes them.
    fn framed(answer: &[u8]) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(&Frame {
            progress: Progress::Apply { resources: 3 },
        })
        .expect("encodes");
        bytes.push(b'\n');
        bytes.extend_from_slice(answer);
        bytes
    }

    #[tokio::test]
    async fn an_answer_within_the_bound_is_read_whole_after_its_frames() {
        let answer = br#"{"exit":0,"text":"ok","json":null}"#;
        let bytes = framed(answer);
        let mut frames = Vec::new();
        let read = read_answer(&bytes[..], bytes.len() as u64, &mut |p| frames.push(p))
            .await
            .expect("within the bound");
        assert_eq!(read, answer);
        assert_eq!(frames, [Progress::Apply { resources: 3 }]);
    }

    #[tokio::test]
    async fn an_answer_past_the_bound_is_refused_frames_counted() {
        let bytes = framed(br#"{"exit":0,"text":"ok","json":null}"#);
        // One byte over, counted from the first frame's first byte.
        let limit = bytes.len() as u64 - 1;
        let refused = read_answer(&bytes[..], limit, &mut |_| {})
            .await
            .expect_err("over the bound");
        assert!(refused.contains("larger than"), "{refused}");
        // A daemon that never stops writing is refused, not read forever.
        let endless = tokio::io::repeat(b'x');
        let refused = read_answer(endless, 1 << 20, &mut |_| {})
            .await
            .expect_err("endless");
        assert!(refused.contains("larger than 1 MiB"), "{refused}");
    }

    proptest::proptest! {
        /// Whatever the daemon writes, what is read is at most the bound,
        /// and an answer within it is its last line, whole.
        #[test]
        fn any_bytes_are_read_within_the_bound(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512),
            limit in 0u64..600,
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("runtime");
            let read = runtime.block_on(read_answer(&bytes[..], limit, &mut |_| {}));
            match read {
                Ok(answer) => {
                    proptest::prop_assert!(bytes.len() as u64 <= limit);
                    proptest::prop_assert!(bytes.ends_with(&answer));
                }
                Err(e) => {
                    proptest::prop_assert!(bytes.len() as u64 > limit);
                    proptest::prop_assert!(e.contains("larger than"), "{}", e);
                }
            }
        }
    }
}
