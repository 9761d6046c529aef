//! `mesh-host logs STEP --json`: one JSON object per line of a step's
//! output. `logs` reads the journal in the command's own process, with or
//! without a daemon (the runtime wrote the lines there), so it has no
//! daemon side; its lines are typed here all the same, beside the other
//! answers, and held by `schema/logs-line.json`.

use serde::Serialize;

/// One line of a step's output, as `logs --json` prints it (one object a
/// line, newline-delimited).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutputLine<'a> {
    /// The fire's unit name (`MESH_FIRE`).
    pub fire: &'a str,
    /// When the journal received it, RFC 3339 with microseconds; absent
    /// when the journal does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// `stdout` or `stderr`.
    pub stream: &'a str,
    /// Its text, without the newline.
    pub message: &'a str,
}
