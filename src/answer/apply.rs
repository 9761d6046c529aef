//! The answers of `apply` and `diff`: one declaration applied, or its
//! plan shown, or refused; the same types from the daemon and `--local`.

use serde::Serialize;

use super::Answer;
use crate::apply::{ApplyReport, EmptyRefused, InstallRefused, PreviewText};
use crate::declaration::{Problem, Refusal};
use crate::exit::Exit;

/// A declaration refused before anything was done: every problem in it.
#[derive(Debug, Clone, Serialize)]
pub struct Invalid {
    /// Always `false`.
    pub accepted: bool,
    /// The problems, in declaration order.
    pub problems: Vec<Problem>,
}

impl From<Refusal> for Invalid {
    fn from(refusal: Refusal) -> Self {
        Invalid {
            accepted: false,
            problems: refusal.problems,
        }
    }
}

impl Invalid {
    fn text(&self) -> String {
        let mut text = format!(
            "refused, nothing changed; {} problem(s):",
            self.problems.len()
        );
        for p in &self.problems {
            text.push_str(&format!("\n  {p}"));
        }
        text
    }
}

/// A declaration of nothing refused over a node where resources are
/// applied (docs/apply.md).
#[derive(Debug, Clone, Serialize)]
pub struct Empty {
    /// Always `false`.
    pub accepted: bool,
    /// Why, in words.
    pub error: String,
    /// Why, as data.
    pub empty: EmptyRefused,
}

impl From<EmptyRefused> for Empty {
    fn from(refused: EmptyRefused) -> Self {
        Empty {
            accepted: false,
            error: refused.to_string(),
            empty: refused,
        }
    }
}

/// `apply`'s answer.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Applied {
    /// Applied: what was done to each resource.
    Done(ApplyReport),
    /// Refused: not a valid declaration.
    Invalid(Invalid),
    /// Refused: a declaration of nothing.
    Empty(Empty),
}

impl From<Result<ApplyReport, InstallRefused>> for Applied {
    fn from(applied: Result<ApplyReport, InstallRefused>) -> Self {
        match applied {
            Ok(report) => Applied::Done(report),
            Err(InstallRefused::Invalid(refusal)) => Applied::Invalid(refusal.into()),
            Err(InstallRefused::Empty(refused)) => Applied::Empty(refused.into()),
        }
    }
}

impl Answer for Applied {
    fn exit(&self) -> Exit {
        match self {
            Applied::Done(report) => Exit::ok_or_failed(report.ok),
            Applied::Invalid(_) | Applied::Empty(_) => Exit::Refused,
        }
    }

    fn text(&self) -> String {
        match self {
            Applied::Done(report) => report.to_string(),
            Applied::Invalid(invalid) => invalid.text(),
            Applied::Empty(empty) => empty.error.clone(),
        }
    }
}

/// `diff`'s answer: the plan the apply would carry out, or why it would
/// refuse. Exits as `diff(1)`: 0 nothing would change, 1 something would,
/// 2 refused or an error.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Previewed {
    /// What `apply` would do to each resource.
    Done(ApplyReport),
    /// Refused: not a valid declaration.
    Invalid(Invalid),
    /// `apply` would refuse it: a declaration of nothing.
    Empty(Empty),
}

impl From<Result<ApplyReport, InstallRefused>> for Previewed {
    fn from(previewed: Result<ApplyReport, InstallRefused>) -> Self {
        match previewed {
            Ok(report) => Previewed::Done(report),
            Err(InstallRefused::Invalid(refusal)) => Previewed::Invalid(refusal.into()),
            Err(InstallRefused::Empty(refused)) => Previewed::Empty(refused.into()),
        }
    }
}

impl Answer for Previewed {
    fn exit(&self) -> Exit {
        match self {
            Previewed::Done(report) => report.diff_exit(),
            Previewed::Invalid(_) | Previewed::Empty(_) => Exit::Refused,
        }
    }

    fn text(&self) -> String {
        match self {
            Previewed::Done(report) => PreviewText(report).to_string(),
            Previewed::Invalid(invalid) => invalid.text(),
            Previewed::Empty(empty) => format!("apply would refuse it: {}", empty.error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal() -> Refusal {
        Refusal {
            problems: vec![Problem {
                resource: Some("web".into()),
                field: Some("image".into()),
                message: "is required".into(),
            }],
        }
    }

    #[test]
    fn a_refused_declaration_is_the_same_document_for_apply_and_diff() {
        let applied = Applied::from(Err(InstallRefused::Invalid(refusal()))).response();
        let previewed = Previewed::from(Err(InstallRefused::Invalid(refusal()))).response();
        assert_eq!(applied.exit, Exit::Refused.code());
        assert_eq!(applied.json.get(), previewed.json.get());
        let json = applied.json_value();
        assert_eq!(json["accepted"], false);
        assert_eq!(json["problems"][0]["message"], "is required");
        assert!(
            applied
                .text
                .starts_with("refused, nothing changed; 1 problem(s):\n  "),
            "{}",
            applied.text
        );
    }

    #[test]
    fn an_empty_declaration_refused_says_what_it_would_remove() {
        let refused = || InstallRefused::Empty(EmptyRefused::WouldRemove { applied: 3 });
        let applied = Applied::from(Err(refused())).response();
        assert_eq!(applied.exit, Exit::Refused.code());
        let json = applied.json_value();
        assert_eq!(json["accepted"], false);
        assert_eq!(json["empty"]["applied"], 3);
        let previewed = Previewed::from(Err(refused())).response();
        assert!(previewed.text.starts_with("apply would refuse it: "));
        assert_eq!(previewed.json.get(), applied.json.get());
    }
}
