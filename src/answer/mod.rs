//! The answer of each command that the daemon and `--local` both give
//! (`status`, `apply`, `diff`, `plan`, `run`, `suspend`, `resume`) and of
//! those that only ever run in the command's own process (`take`,
//! `logs`), as typed values.
//!
//! Whoever computes an answer (the daemon's control-socket handler, or
//! the command line with `--local`) builds the same type here and turns it
//! into a [`Response`] through [`Answer::response`]: its text from
//! [`Answer::text`], its JSON from its `Serialize`, its exit from
//! [`Answer::exit`]. The command line prints every response the same way
//! (`cli::output`), so `status --json` is the same document from either
//! side. Each `--json` document has a JSON Schema in `schema/`
//! ([`SCHEMAS`]), tested against both paths on the node
//! (`tests/answers_node.rs`).

pub mod apply;
pub mod logs;
pub mod plan;
pub mod run;
pub mod status;
pub mod status_local;
mod status_text;
pub mod suspend;
pub mod take;
pub mod update;

use serde::Serialize;

use crate::control::{self, Form, Response};
use crate::exit::Exit;

/// A command's answer: what it prints for people, as JSON, and how it
/// exits.
pub trait Answer: Serialize {
    /// How the command exits with this answer.
    fn exit(&self) -> Exit;

    /// The answer for people (the command line ends it with a newline
    /// when it does not).
    fn text(&self) -> String;

    /// The answer in both forms, as the control socket carries it and as
    /// the command line prints it.
    fn response(&self) -> Response {
        self.response_in(None)
    }

    /// The answer in the one form asked for (`None`: both); the other is
    /// left empty (`""`, `null`), never made. The JSON is written straight
    /// from the typed answer, with no tree of values between.
    fn response_in(&self, only: Option<Form>) -> Response {
        Response {
            exit: self.exit().code(),
            text: match only {
                Some(Form::Json) => String::new(),
                _ => self.text(),
            },
            json: match only {
                Some(Form::Text) => control::null(),
                _ => control::document(self),
            },
        }
    }
}

/// A command that could not answer: a refusal or a failure, said in one
/// message (`{"error": MESSAGE}` as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// Why.
    pub error: String,
    /// How the command exits.
    #[serde(skip)]
    pub exit: Exit,
}

impl Failure {
    /// The input was refused or the command misused.
    pub fn refused(error: impl Into<String>) -> Self {
        Failure {
            error: error.into(),
            exit: Exit::Refused,
        }
    }

    /// The command ran and failed.
    pub fn failed(error: impl Into<String>) -> Self {
        Failure {
            error: error.into(),
            exit: Exit::Failed,
        }
    }
}

impl Answer for Failure {
    fn exit(&self) -> Exit {
        self.exit
    }

    /// The message alone, as [`Response::error`] gives it.
    fn text(&self) -> String {
        self.error.clone()
    }
}

/// An answer or why there is none. Its JSON is the one or the other's
/// own document, never Rust's `{"Ok": ...}`.
impl<A: Answer> Answer for Result<A, Failure> {
    fn response_in(&self, only: Option<Form>) -> Response {
        match self {
            Ok(a) => a.response_in(only),
            // A failure is short: both its forms, whatever was asked.
            Err(f) => f.response(),
        }
    }

    fn exit(&self) -> Exit {
        match self {
            Ok(a) => a.exit(),
            Err(f) => f.exit(),
        }
    }

    fn text(&self) -> String {
        match self {
            Ok(a) => a.text(),
            Err(f) => f.text(),
        }
    }
}

/// The JSON Schema of each `--json` document, by command (draft 2020-12),
/// kept beside the code that builds the documents.
pub const SCHEMAS: [(&str, &str); 12] = [
    ("status", include_str!("schema/status.json")),
    ("apply", include_str!("schema/apply.json")),
    ("plan", include_str!("schema/plan.json")),
    ("run", include_str!("schema/run.json")),
    ("suspend", include_str!("schema/suspend.json")),
    ("take", include_str!("schema/take.json")),
    ("update", include_str!("schema/update.json")),
    ("logs", include_str!("schema/logs-line.json")),
    ("history", include_str!("schema/history.json")),
    ("check", include_str!("schema/check.json")),
    ("cron", include_str!("schema/cron.json")),
    ("error", include_str!("schema/error.json")),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_says_its_message_as_text_and_as_json() {
        let r = Failure::refused("no scheduled step gc").response();
        assert_eq!(r.exit, Exit::Refused.code());
        assert_eq!(r.text, "no scheduled step gc");
        assert_eq!(
            r.json_value(),
            serde_json::json!({"error": "no scheduled step gc"})
        );
    }

    #[test]
    fn an_answer_asked_in_one_form_has_only_that_one_made() {
        let taken = crate::answer::take::Taken {
            id: "data".into(),
            path: "/srv/data".into(),
        };
        let json = taken.response_in(Some(Form::Json));
        assert_eq!(json.text, "");
        assert_eq!(json.json.get(), r#"{"id":"data","path":"/srv/data"}"#);
        let text = taken.response_in(Some(Form::Text));
        assert_eq!(text.text, taken.text());
        assert_eq!(text.json.get(), "null");
        // A failure says both, whatever was asked: the client reads the
        // one it prints, and knows an older daemon's refusal by either.
        let failed: Result<crate::answer::take::Taken, Failure> = Err(Failure::refused("no"));
        let r = failed.response_in(Some(Form::Json));
        assert_eq!((r.text.as_str(), r.json.get()), ("no", r#"{"error":"no"}"#));
    }

    #[test]
    fn an_answer_or_a_failure_is_the_document_of_the_one_it_holds() {
        let taken: Result<crate::answer::take::Taken, Failure> = Ok(crate::answer::take::Taken {
            id: "data".into(),
            path: "/srv/data".into(),
        });
        let r = taken.response();
        assert_eq!(r.exit, Exit::Ok.code());
        assert_eq!(
            r.json_value(),
            serde_json::json!({"id": "data", "path": "/srv/data"})
        );
        let refused: Result<crate::answer::take::Taken, Failure> =
            Err(Failure::refused("no shared folder x"));
        let r = refused.response();
        assert_eq!(r.exit, Exit::Refused.code());
        assert_eq!(
            r.json_value(),
            serde_json::json!({"error": "no shared folder x"})
        );
    }

    #[test]
    fn every_schema_is_json_with_its_draft() {
        for (command, schema) in SCHEMAS {
            let v: serde_json::Value = serde_json::from_str(schema)
                .unwrap_or_else(|e| panic!("the schema of {command}: {e}"));
            assert_eq!(
                v["$schema"], "https://json-schema.org/draft/2020-12/schema",
                "{command}"
            );
        }
    }
}
