//! Why a declaration was refused: [`Refusal`], every [`Problem`] found in
//! it, which the parser and the validator both give.

use std::fmt;

use serde::Serialize;

/// Why a declaration was refused: every problem found in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// The problems, in declaration order: top-level ones first, then each
    /// resource's in the order of the resources.
    pub problems: Vec<Problem>,
}

impl Refusal {
    pub(super) fn single(field: Option<&str>, message: String) -> Self {
        Refusal {
            problems: vec![Problem {
                resource: None,
                field: field.map(str::to_owned),
                message,
            }],
        }
    }
}

impl fmt::Display for Refusal {
    /// One line per problem, no trailing newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Refusal {}

/// One problem in a declaration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The resource: its id, or `resources[N]` when it has no valid id (or
    /// shares it with an earlier resource); `None` for the top level.
    pub resource: Option<String>,
    /// The field, as a path inside the resource (`mounts[0].readonly`,
    /// `while-stopped[1]`), or inside the top level when `resource` is `None`.
    pub field: Option<String>,
    /// What is wrong, in one line.
    pub message: String,
}

impl fmt::Display for Problem {
    /// `resource: field: message`, leaving out what is not known. Ids cannot
    /// contain `:`, so the line splits unambiguously.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(resource) = &self.resource {
            write!(f, "{resource}: ")?;
        }
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        f.write_str(&self.message)
    }
}
