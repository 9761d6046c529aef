//! The one error of the cron room, shared by the parser, the engine and
//! [`super::CronSchedule`].

/// Why an expression was refused; `Display` names the field and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CronError(pub String);
