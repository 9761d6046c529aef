//! A step's output in the journal: each line its container writes, stdout
//! and stderr, is an entry with `MESH_STEP=<id>` and `MESH_FIRE=<the
//! fire's name>`, the fields that fire's `step-*` events carry too.
//!
//! The runtime writes it (Docker's `journald` log driver), not mesh-host:
//! the output is kept whatever happens to the process that started the
//! step (SIGKILLed mid-step, handing over at an upgrade, a local run that
//! dies), and `docker logs` still reads the latest fire's container back.
//! Docker turns the container's labels [`LABEL_STEP`] and [`LABEL_FIRE`]
//! into those fields; Podman 4.3's driver carries no label, only its tag,
//! so there the tag is the fire's name (`CONTAINER_TAG`), which names its
//! step too (see docs/step-output.md).

use chrono::{DateTime, Utc};

use crate::runtime::{ContainerSpec, JournalLog};
use crate::systemd::units::{escape, scope_name};

/// Label naming the step a container runs (the journal field `MESH_STEP`).
pub const LABEL_STEP: &str = "mesh.step";

/// Label naming the fire a container runs for (the journal field
/// `MESH_FIRE`).
pub const LABEL_FIRE: &str = "mesh.fire";

/// `SYSLOG_IDENTIFIER` of every line of step output (Docker): one name for
/// all of it, beside mesh-host's own `mesh-host`.
pub const IDENTIFIER: &str = "mesh-host-step";

/// The name of the fire of `step` due at `due` (`MESH_FIRE`): the name of
/// its transient scope, `mesh-host-step-<id>-<time>.scope`. With the
/// systemd cgroup driver the fire's unit is the step's slice, the same for
/// every fire, so the fire is still named after the scope it would have:
/// one name per fire whatever the driver.
pub fn fire_name(step: &str, due: DateTime<Utc>) -> String {
    scope_name(step, due)
}

/// The name of one run of a run-once step started at `at` (`MESH_FIRE`):
/// `mesh-host-run-once-<id>-<time>`. It has no unit of its own.
pub fn run_once_name(step: &str, at: DateTime<Utc>) -> String {
    format!(
        "mesh-host-run-once-{}-{}",
        escape(step),
        at.format("%Y%m%dT%H%M%SZ")
    )
}

/// Whether `name` is the name of a fire or a run of `step` ([`fire_name`],
/// [`run_once_name`]). The id is escaped, dashes included, so the dash
/// after it ends it: `gc` never claims a fire of `gc-2`.
pub fn is_fire_of(step: &str, name: &str) -> bool {
    let id = escape(step);
    [
        format!("mesh-host-step-{id}-"),
        format!("mesh-host-run-once-{id}-"),
    ]
    .iter()
    .any(|prefix| {
        name.strip_prefix(prefix.as_str())
            .is_some_and(|time| time.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// Make `spec` write its output to the journal as the output of `fire` of
/// `step`: the labels that become its fields, and the tag.
pub fn to_journal(spec: &mut ContainerSpec, step: &str, fire: &str) {
    spec.labels.set(LABEL_STEP, step.to_string());
    spec.labels.set(LABEL_FIRE, fire.to_string());
    spec.journal = Some(Box::new(JournalLog {
        labels: vec![LABEL_STEP.to_string(), LABEL_FIRE.to_string()],
        tag: IDENTIFIER.to_string(),
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("time").to_utc()
    }

    #[test]
    fn names_of_fires_and_runs_tell_their_step() {
        let due = t("2026-12-03T03:00:00Z");
        let fire = fire_name("gc", due);
        assert_eq!(fire, "mesh-host-step-gc-20261203T030000Z.scope");
        let run = run_once_name("db-init", due);
        assert_eq!(run, "mesh-host-run-once-db\\x2dinit-20261203T030000Z");
        assert!(is_fire_of("gc", &fire));
        assert!(is_fire_of("db-init", &run));
        // Another step's, whose id begins the same.
        assert!(!is_fire_of("gc", &fire_name("gc-2", due)));
        assert!(!is_fire_of("gc-2", &fire));
        assert!(!is_fire_of("gc", "mesh-host-step"));
        assert!(!is_fire_of("gc", ""));
    }

    #[test]
    fn a_spec_sent_to_the_journal_carries_its_step_and_fire() {
        let mut spec = ContainerSpec::default();
        to_journal(&mut spec, "gc", "F");
        assert_eq!(spec.labels.get(LABEL_STEP), Some("gc"));
        assert_eq!(spec.labels.get(LABEL_FIRE), Some("F"));
        let journal = spec.journal.expect("journal");
        assert_eq!(journal.labels, ["mesh.step", "mesh.fire"]);
        assert_eq!(journal.tag, "mesh-host-step");
    }
}
