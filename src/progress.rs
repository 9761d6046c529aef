//! Progress of a long command as the engine lives it: the resources an
//! apply decides and what it waits on, the phases of a fire.
//!
//! The applier ([`crate::apply::Applier::with_progress`]) and the firer
//! ([`crate::schedule::fire::Firer::fire_reporting`]) send [`Progress`] to
//! a [`Reporter`] as they act, never guessed after the fact. Nobody
//! listens by default (the daemon's own applies and fires): sending then
//! costs nothing. The command line listens on a terminal, in this process
//! (`--local`) or over the control socket, where the daemon streams each
//! one as a frame before the answer (`crate::control`).

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

/// One thing a command in progress did or began to wait on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Progress {
    /// An apply began, over this many declared resources.
    Apply {
        /// How many resources the declaration declares.
        resources: usize,
    },
    /// A resource was decided: the line it gets in the report.
    Decided {
        /// The resource id.
        id: String,
        /// The report's action (`created`, `unchanged`, ...).
        action: String,
        /// The report's reason, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The command waits on something: a pull, a step's run, a window.
    Waiting {
        /// The resource it waits for, when one is concerned.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// What it waits on, for humans.
        on: String,
    },
    /// A fire began: its name, the `MESH_FIRE` of its output and events.
    Fire {
        /// The step id.
        step: String,
        /// The fire's name.
        fire: String,
    },
    /// A fire entered a phase.
    Phase {
        /// The step id.
        step: String,
        /// The phase.
        phase: Phase,
        /// What it acts on (the containers held, the step's container).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
}

/// The phases of a fire, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Its unit and container are being made ready.
    Preparing,
    /// Its window opens: the held containers are stopped.
    Holding,
    /// The step's container runs.
    Running,
    /// Its window closes: the held containers start again and their
    /// health checks are waited for.
    Releasing,
    /// The fire ended (its report follows).
    Done,
}

impl Phase {
    /// The phase as a word.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Preparing => "preparing",
            Phase::Holding => "stopping held containers",
            Phase::Running => "running",
            Phase::Releasing => "starting held containers again",
            Phase::Done => "done",
        }
    }
}

/// Where [`Progress`] goes: nowhere by default. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Reporter(Option<mpsc::UnboundedSender<Progress>>);

impl Reporter {
    /// A reporter nobody listens to.
    pub fn none() -> Self {
        Reporter(None)
    }

    /// A reporter and what it sends.
    pub fn channel() -> (Reporter, mpsc::UnboundedReceiver<Progress>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Reporter(Some(tx)), rx)
    }

    /// Send one piece of progress; a listener gone is no error.
    pub fn send(&self, progress: Progress) {
        if let Some(tx) = &self.0 {
            let _ = tx.send(progress);
        }
    }

    /// Whether anyone listens (to spare building what nobody reads).
    pub fn listening(&self) -> bool {
        self.0.as_ref().is_some_and(|tx| !tx.is_closed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_travels_as_tagged_json() {
        let p = Progress::Decided {
            id: "web".into(),
            action: "created".into(),
            reason: None,
        };
        let text = serde_json::to_string(&p).expect("encodes");
        assert_eq!(text, r#"{"kind":"decided","id":"web","action":"created"}"#);
        assert_eq!(serde_json::from_str::<Progress>(&text).expect("decodes"), p);
        let phase = Progress::Phase {
            step: "gc".into(),
            phase: Phase::Releasing,
            detail: Some("web".into()),
        };
        let text = serde_json::to_string(&phase).expect("encodes");
        assert!(text.contains(r#""phase":"releasing""#), "{text}");
    }

    #[test]
    fn a_reporter_nobody_listens_to_drops_everything() {
        let r = Reporter::none();
        assert!(!r.listening());
        r.send(Progress::Apply { resources: 1 });
        let (r, mut rx) = Reporter::channel();
        assert!(r.listening());
        r.send(Progress::Apply { resources: 2 });
        assert_eq!(rx.try_recv().ok(), Some(Progress::Apply { resources: 2 }));
        drop(rx);
        assert!(!r.listening());
        r.send(Progress::Apply { resources: 3 });
    }
}
