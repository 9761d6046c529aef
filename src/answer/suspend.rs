//! `mesh-host suspend STEP` and `resume STEP`: one answer whether the
//! daemon's scheduler wrote the suspension (and acts on it at once) or the
//! command did in its own process (`--local`, no daemon running).

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::Answer;
use crate::exit::Exit;

/// A step suspended, or its suspension lifted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Suspension {
    /// `suspend STEP`: `{"step", "suspended": true, "since"}`.
    Suspended {
        /// The step's id.
        step: String,
        /// Always `true`.
        suspended: bool,
        /// Since when (an earlier suspension stands: its time).
        since: DateTime<Utc>,
    },
    /// `resume STEP`: `{"step", "suspended": false, "was-suspended-since"}`.
    Resumed {
        /// The step's id.
        step: String,
        /// Always `false`.
        suspended: bool,
        /// Since when it was suspended; `null`: it was not.
        #[serde(rename = "was-suspended-since")]
        was_suspended_since: Option<DateTime<Utc>>,
    },
}

impl Suspension {
    /// `step` suspended since `since`.
    pub fn suspended(step: &str, since: DateTime<Utc>) -> Self {
        Suspension::Suspended {
            step: step.to_string(),
            suspended: true,
            since,
        }
    }

    /// `step` resumed; `was`: since when it was suspended, if it was.
    pub fn resumed(step: &str, was: Option<DateTime<Utc>>) -> Self {
        Suspension::Resumed {
            step: step.to_string(),
            suspended: false,
            was_suspended_since: was,
        }
    }
}

impl Answer for Suspension {
    fn exit(&self) -> Exit {
        Exit::Ok
    }

    fn text(&self) -> String {
        let time = crate::render::time;
        match self {
            Suspension::Suspended { step, since, .. } => format!(
                "step {step} suspended since {}: its due times are logged step-suspended, not run and never caught up; mesh-host resume {step} lifts it\n",
                time(*since)
            ),
            Suspension::Resumed {
                step,
                was_suspended_since: Some(since),
                ..
            } => format!(
                "step {step} resumed (suspended since {}): it fires again from its next due time\n",
                time(*since)
            ),
            Suspension::Resumed { step, .. } => format!("step {step} was not suspended\n"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_say_the_step_and_since_when() {
        let since = DateTime::parse_from_rfc3339("2026-12-01T10:00:00Z")
            .expect("time")
            .to_utc();
        let r = Suspension::suspended("gc", since).response();
        assert_eq!(
            r.json_value(),
            serde_json::json!({"step": "gc", "suspended": true, "since": "2026-12-01T10:00:00Z"})
        );
        assert!(r
            .text
            .starts_with("step gc suspended since 2026-12-01 10:00:00 UTC"));
        let r = Suspension::resumed("gc", None).response();
        assert_eq!(
            r.json_value(),
            serde_json::json!({"step": "gc", "suspended": false, "was-suspended-since": null})
        );
        assert_eq!(r.text, "step gc was not suspended\n");
    }
}
