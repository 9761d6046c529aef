//! An error told whole: its message and each cause's, as one line.

/// An error and its sources on one line (bollard's top-level messages alone,
/// e.g. "client error (Connect)", say little).
pub(super) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
