//! Cron with Debian cron's semantics, wrapped around the `cron` crate.
//!
//! API (stub; the real engine replaces the bodies):

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

/// A parsed five-field Debian cron expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronSchedule {
    expr: String,
}

/// Why an expression was refused; `Display` names the field and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CronError(pub String);

impl CronSchedule {
    /// Parse an expression as Debian cron reads it.
    pub fn parse(expr: &str) -> Result<Self, CronError> {
        Ok(Self {
            expr: expr.to_string(),
        })
    }

    /// The expression as written.
    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// The first fire strictly after `after`, evaluated in `zone`.
    pub fn next_after(&self, after: DateTime<Utc>, zone: Tz) -> Option<DateTime<Tz>> {
        let _ = (after, zone);
        None
    }
}
