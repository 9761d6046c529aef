//! Splay: a step's `randomized-delay`, the same on every fire of one step
//! on one node and spread across nodes and steps, as systemd's
//! `FixedRandomDelay=` does it.
//!
//! The delay is derived, never drawn: SHA-256 of the node's machine id, a
//! NUL, and the step id; its first eight bytes, as a big-endian `u64`,
//! modulo the bound in milliseconds. So a restart, a reboot or a re-apply
//! keeps each step's fire time, `cron`, `plan` and `status` can show it
//! without asking the daemon, and a thousand nodes declaring `30 3 * * *`
//! reach their shared backends spread over the bound instead of in the same
//! second.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use sha2::{Digest, Sha256};

use crate::cron::CronSchedule;
use crate::declaration::Declaration;

/// Where the node's machine id is read (machine-id(5)).
pub const MACHINE_ID_FILE: &str = "/etc/machine-id";

/// The node's machine id, trimmed. Unreadable or empty, it is logged and
/// the empty id is used: every step is still delayed stably, only no
/// longer spread across such nodes.
pub fn machine_id() -> String {
    match std::fs::read_to_string(MACHINE_ID_FILE) {
        Ok(text) if !text.trim().is_empty() => text.trim().to_string(),
        Ok(_) => {
            tracing::warn!(
                "{MACHINE_ID_FILE} is empty: randomized delays are not spread across nodes"
            );
            String::new()
        }
        Err(e) => {
            tracing::warn!(
                "cannot read {MACHINE_ID_FILE} ({e}): randomized delays are not spread across nodes"
            );
            String::new()
        }
    }
}

/// The delay of step `step` on the node `machine_id`, in `[0, bound)`, to the
/// millisecond; zero when `bound` is under a millisecond.
pub fn delay(machine_id: &str, step: &str, bound: Duration) -> Duration {
    let bound_ms = u64::try_from(bound.as_millis()).unwrap_or(u64::MAX);
    if bound_ms == 0 {
        return Duration::ZERO;
    }
    let digest = Sha256::new()
        .chain_update(machine_id.as_bytes())
        .chain_update([0u8])
        .chain_update(step.as_bytes())
        .finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    Duration::from_millis(u64::from_be_bytes(first) % bound_ms)
}

/// The first fire strictly after `t` of a cadence delayed by `delay`: the
/// cron time after `t - delay`, plus the delay. The whole cadence is
/// shifted, so each fire keeps its place however often it is asked.
pub fn next_fire(
    cron: &CronSchedule,
    zone: Tz,
    delay: Duration,
    t: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let delay = chrono::TimeDelta::from_std(delay).unwrap_or_default();
    cron.next_after(t - delay, zone).map(|c| c.to_utc() + delay)
}

/// The delay of each declared step with a `randomized-delay`, by step id,
/// on this node.
pub fn delays(decl: &Declaration) -> BTreeMap<String, Duration> {
    let machine_id = machine_id();
    decl.steps()
        .filter_map(|s| {
            let bound = s.schedule.randomized_delay?;
            let id = s.resource.id.to_string();
            Some((id.clone(), delay(&machine_id, &id, bound)))
        })
        .collect()
}

/// A delay as `status` and `plan` write it: `17.408 s`.
pub fn describe(delay: Duration) -> String {
    format!("{}.{:03} s", delay.as_secs(), delay.subsec_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE_A: &str = "5c2f3e0a9b1d4c6e8f7a0b1c2d3e4f50";
    const NODE_B: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";

    #[test]
    fn the_delay_is_stable_and_within_its_bound() {
        let bound = Duration::from_secs(30);
        let first = delay(NODE_A, "garbage-collect", bound);
        for _ in 0..3 {
            assert_eq!(delay(NODE_A, "garbage-collect", bound), first);
        }
        for i in 0..2000 {
            let d = delay(NODE_A, &format!("step-{i}"), bound);
            assert!(d < bound, "{d:?} for step-{i}");
        }
        assert!(delay(NODE_A, "x", Duration::from_secs(1)) < Duration::from_secs(1));
        assert_eq!(delay(NODE_A, "x", Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn the_delay_differs_by_step_and_by_node_and_spreads_over_the_bound() {
        let bound = Duration::from_secs(3600);
        assert_ne!(delay(NODE_A, "backup", bound), delay(NODE_A, "gc", bound));
        assert_ne!(
            delay(NODE_A, "backup", bound),
            delay(NODE_B, "backup", bound)
        );
        // The separator keeps ("ab", "c") and ("a", "bc") apart.
        assert_ne!(delay("ab", "c", bound), delay("a", "bc", bound));
        // A fleet of 1000 nodes: every tenth of the hour gets some of them.
        let mut tenths = [0u32; 10];
        for n in 0..1000 {
            let d = delay(&format!("{n:032x}"), "backup", bound);
            tenths[(d.as_secs() / 360) as usize] += 1;
        }
        assert!(tenths.iter().all(|&c| c > 50), "{tenths:?}");
    }

    #[test]
    fn the_derivation_is_sha256_of_machine_id_nul_step() {
        // Pinned so that a change of derivation (which would move every
        // node's fire times) is a deliberate one.
        let digest = Sha256::digest(b"m\0s");
        let n = u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"));
        assert_eq!(
            delay("m", "s", Duration::from_secs(30)),
            Duration::from_millis(n % 30_000)
        );
        assert_eq!(describe(Duration::from_millis(17_408)), "17.408 s");
    }

    #[test]
    fn a_delayed_cadence_is_shifted_whole_and_each_fire_found_once() {
        let t = |s: &str| DateTime::parse_from_rfc3339(s).expect("time").to_utc();
        let cron = CronSchedule::parse("30 3 * * *").expect("cron");
        let d = Duration::from_millis(17_408);
        let first = next_fire(&cron, chrono_tz::UTC, d, t("2026-01-01T00:00:00Z"));
        assert_eq!(first, Some(t("2026-01-01T03:30:17.408Z")));
        // Between the cron time and the delayed fire, the fire is still ahead.
        assert_eq!(
            next_fire(&cron, chrono_tz::UTC, d, t("2026-01-01T03:30:05Z")),
            first
        );
        // At the fire itself, the next is the next day's.
        assert_eq!(
            next_fire(&cron, chrono_tz::UTC, d, t("2026-01-01T03:30:17.408Z")),
            Some(t("2026-01-02T03:30:17.408Z"))
        );
        assert_eq!(
            next_fire(
                &cron,
                chrono_tz::UTC,
                Duration::ZERO,
                t("2026-01-01T00:00:00Z")
            ),
            Some(t("2026-01-01T03:30:00Z"))
        );
    }
}
