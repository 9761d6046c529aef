//! The control socket between the command line and the daemon
//! (`/run/mesh-host/control.sock`).
//!
//! One request per connection, as one JSON object (an `apply` or `diff`
//! followed by its declaration's bytes, raw: [`wire`]); one response
//! back, as one JSON object. An `apply` or `run` that asks for `progress` gets,
//! before that response, one line per piece of progress
//! (`{"progress": {...}}` and a newline, see [`crate::progress`]): a
//! request that does not ask gets the response alone, as ever, and a
//! daemon that does not know the field refuses the request, which the
//! client then sends again without it. Only root may talk to it: the peer's credentials are
//! checked before a byte is read. Requests are bounded in size, each
//! connection in time (to send the request, and to take the answer), and
//! connections in number, so no client can stall the daemon; the scheduler and its watchdog run on their own task and are
//! never behind the socket.

pub mod client;
pub mod server;
pub mod wire;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Where the daemon listens by default.
pub const DEFAULT_SOCKET: &str = "/run/mesh-host/control.sock";

/// The largest declaration a request carries: the largest one read
/// (`declaration::input::MAX_BYTES`, 8 MiB; a test in `cli` holds the two
/// equal).
pub const MAX_DECLARATION: usize = 8 * 1024 * 1024;

/// The largest request accepted: a declaration travels after `apply` and
/// `diff` as it is ([`wire`]), or, from a client before that form, inside
/// them as a JSON string, in which each quote, backslash and line break
/// of its text takes two bytes: so twice [`MAX_DECLARATION`] and room for
/// the rest. Any declaration a reader accepts travels whole.
pub const MAX_REQUEST: usize = 2 * MAX_DECLARATION + 64 * 1024;

/// The largest answer a client reads, its progress frames included:
/// `status --json` of 5,000 steps is about 2 MB (docs/benchmarks.md), so
/// this is room for any a daemon makes and a bound on one that never
/// stops writing.
pub const MAX_ANSWER: u64 = 256 * 1024 * 1024;

/// How long a client has to send its whole request.
pub const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long a client has to take its whole answer (a few MiB at most take
/// milliseconds): one that stops reading would otherwise hold its slot for
/// good.
pub const ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How many connections are served at once; more are refused at once.
pub const MAX_CONNECTIONS: usize = 16;

/// What a client asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Request {
    /// Apply this declaration (the file's bytes, as text).
    Apply {
        /// The declaration.
        declaration: String,
        /// `--allow-empty`: a declaration of no resources may remove
        /// everything applied. Sent only when set, so a daemon that does
        /// not know it refuses the request rather than ignoring it.
        #[serde(default, skip_serializing_if = "is_false")]
        allow_empty: bool,
        /// Stream progress frames before the answer (sent only when set).
        #[serde(default, skip_serializing_if = "is_false")]
        progress: bool,
        /// Every resource's line, also when the node is found as the same
        /// request left it (then otherwise counted only). Sent only when
        /// set.
        #[serde(default, skip_serializing_if = "is_false")]
        every_line: bool,
    },
    /// What applying this declaration would do, doing none of it.
    Diff {
        /// The declaration.
        declaration: String,
        /// `--allow-empty`: preview a declaration of no resources over
        /// applied ones (sent only when set).
        #[serde(default, skip_serializing_if = "is_false")]
        allow_empty: bool,
    },
    /// Report status.
    Status {
        /// List only the steps [`crate::step_listing`] picks when there
        /// are many (the client prints text and was not given `--steps`),
        /// and of the last apply's lines those the text prints (what
        /// changed): the answer's `json` holds what its `text` says, not
        /// every step and resource. Sent only when set.
        #[serde(default, skip_serializing_if = "is_false")]
        brief: bool,
        /// The one form the client prints: the other is not made (the
        /// `status --json` of thousands of steps never has its text
        /// written, nor `status` its JSON). Sent only when set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        only: Option<Form>,
    },
    /// Fire a step now and wait for it.
    Run {
        /// The step id.
        step: String,
        /// `--force`: run it even though it is suspended. Sent only when
        /// set (a daemon that does not know it refuses the request).
        #[serde(default, skip_serializing_if = "is_false")]
        force: bool,
        /// Stream progress frames before the answer (sent only when set).
        #[serde(default, skip_serializing_if = "is_false")]
        progress: bool,
    },
    /// Suspend a step: its due times pass unrun until it is resumed.
    Suspend {
        /// The step id.
        step: String,
    },
    /// Lift a step's suspension.
    Resume {
        /// The step id.
        step: String,
    },
    /// Say what a fire of a step would do.
    Plan {
        /// The step id.
        step: String,
    },
    /// The metrics text.
    Metrics,
    /// Apply the node's declaration file again, as SIGHUP does, and answer
    /// once that reload has ended (what the unit's `ExecReload=` runs, so
    /// that `systemctl reload` returns when the reload is done).
    Reload,
}

/// One form of an answer: its text or its JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Form {
    /// The text for people.
    Text,
    /// The `--json` document.
    Json,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Request {
    /// Whether the client asked for progress frames.
    pub fn wants_progress(&self) -> bool {
        matches!(
            self,
            Request::Apply { progress: true, .. } | Request::Run { progress: true, .. }
        )
    }

    /// The same request without the one field `refusal` names as unknown
    /// (serde's ``unknown field `only`, expected ...``), when this request
    /// set it: what a daemon older than that field is asked instead. One
    /// field at a time, so that what it knows is still asked (a plain
    /// `status` keeps `brief` for a daemon that knows `brief` but not
    /// `only`). `None` when the refusal names no field this request set.
    pub fn without_refused(&self, refusal: &str) -> Option<Request> {
        let field = refusal
            .split_once("unknown field `")
            .and_then(|(_, rest)| rest.split_once('`'))
            .map(|(field, _)| field)?;
        let mut less = self.clone();
        let dropped = match (&mut less, field) {
            (Request::Apply { progress, .. } | Request::Run { progress, .. }, "progress") => {
                std::mem::take(progress)
            }
            (Request::Apply { every_line, .. }, "every_line") => std::mem::take(every_line),
            (Request::Status { brief, .. }, "brief") => std::mem::take(brief),
            (Request::Status { only, .. }, "only") => only.take().is_some(),
            _ => false,
        };
        dropped.then_some(less)
    }
}

/// One piece of progress on the wire: a line before the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Frame {
    /// The progress.
    pub progress: crate::progress::Progress,
}

/// What the daemon answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Response {
    /// The exit code the command line should end with (a
    /// [`crate::exit::Exit`]'s number).
    pub exit: u8,
    /// The result for humans; empty when only the JSON was asked for.
    pub text: String,
    /// The same result for `--json`: the document as it was written from
    /// the typed answer, carried and printed as it is, never held as a
    /// tree of values (at thousands of steps, hundreds of thousands of
    /// small blocks); `null` when only the text was asked for.
    pub json: Box<RawValue>,
}

impl Response {
    /// A refusal or failure with only a message.
    pub fn error(exit: crate::exit::Exit, message: impl Into<String>) -> Self {
        let message = message.into();
        Response {
            exit: exit.code(),
            json: document(&serde_json::json!({ "error": message })),
            text: message,
        }
    }

    /// The response as it goes on the socket, in one buffer of about its
    /// size (at thousands of steps the answer is megabytes: a buffer grown
    /// by doubling would hold up to twice that).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.text.len() + self.json.get().len() + 64);
        match serde_json::to_writer(&mut body, self) {
            Ok(()) => body,
            Err(_) => Vec::new(),
        }
    }

    /// The JSON as a tree of values, for a caller that looks inside it
    /// (a test, mostly); `null` if it does not read.
    pub fn json_value(&self) -> serde_json::Value {
        serde_json::from_str(self.json.get()).unwrap_or(serde_json::Value::Null)
    }
}

/// `value` written as a JSON document, or an `{"error": ...}` one saying
/// why it could not be.
pub fn document<T: Serialize + ?Sized>(value: &T) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).unwrap_or_else(|e| {
        let why = serde_json::json!({ "error": format!("cannot encode the answer: {e}") });
        serde_json::value::to_raw_value(&why).unwrap_or_else(|_| null())
    })
}

/// The document `null`: the JSON of an answer asked for as text only.
pub fn null() -> Box<RawValue> {
    RawValue::NULL.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_that_is_not_brief_is_the_request_every_daemon_knows() {
        let plain = Request::Status {
            brief: false,
            only: None,
        };
        assert_eq!(
            serde_json::to_value(&plain).expect("json"),
            serde_json::json!({"command": "status"})
        );
        // A daemon that knows `brief` but not `only` is asked with
        // `brief` still; one that knows neither, plainly.
        let text = Request::Status {
            brief: true,
            only: Some(Form::Text),
        };
        assert_eq!(
            serde_json::to_value(&text).expect("json"),
            serde_json::json!({"command": "status", "brief": true, "only": "text"})
        );
        let refused = |field: &str| {
            format!(
                "malformed request: unknown field `{field}`, expected `brief` at line 1 column 9"
            )
        };
        let brief = text
            .without_refused(&refused("only"))
            .expect("without only");
        assert_eq!(
            brief,
            Request::Status {
                brief: true,
                only: None
            }
        );
        assert_eq!(
            brief.without_refused(&refused("brief")),
            Some(plain.clone())
        );
        assert_eq!(plain.without_refused(&refused("brief")), None);
        assert_eq!(text.without_refused("the daemon is stopping"), None);
        let apply = Request::Apply {
            declaration: "{}".into(),
            allow_empty: false,
            progress: true,
            every_line: true,
        };
        // serde names the first unknown field, then lists the known ones.
        let less = apply
            .without_refused(
                "unknown field `every_line`, expected one of `declaration`, `progress`",
            )
            .expect("without every_line");
        assert!(matches!(
            less,
            Request::Apply {
                progress: true,
                every_line: false,
                ..
            }
        ));
        let read: Request =
            serde_json::from_str(r#"{"command": "status"}"#).expect("an older client's status");
        assert_eq!(read, plain);
    }

    #[test]
    fn a_response_carries_its_document_as_written() {
        let r = Response {
            exit: 0,
            text: "t".into(),
            json: document(&serde_json::json!({"steps": [{"step": "gc"}]})),
        };
        let wire = serde_json::to_string(&r).expect("json");
        assert_eq!(
            wire,
            r#"{"exit":0,"text":"t","json":{"steps":[{"step":"gc"}]}}"#
        );
        let back: Response = serde_json::from_str(&wire).expect("read back");
        assert_eq!(back.json.get(), r#"{"steps":[{"step":"gc"}]}"#);
        assert_eq!(back.json_value()["steps"][0]["step"], "gc");
        assert_eq!(null().get(), "null");
        let e = Response::error(crate::exit::Exit::Refused, "no \"x\"");
        assert_eq!(e.json_value(), serde_json::json!({"error": "no \"x\""}));
    }
}
