//! What an import refuses and what it notes, gathered as it reads: every
//! problem of a project is listed at once, each naming its place.

/// What an import refuses and notes, each line naming the service and
/// field.
#[derive(Debug, Default)]
pub struct Problems {
    pub refused: Vec<String>,
    pub notes: Vec<String>,
}

impl Problems {
    pub(super) fn refuse(&mut self, at: impl Into<String>, why: impl Into<String>) {
        self.refused.push(format!("{}: {}", at.into(), why.into()));
    }

    pub(super) fn note(&mut self, at: impl Into<String>, what: impl Into<String>) {
        self.notes.push(format!("{}: {}", at.into(), what.into()));
    }
}
