//! Taking over a dead owner's window against the scripted runtime: what it
//! left in flight is settled and its step looked at within one closing
//! budget, so a runtime that stops answering leaves the window owed and
//! alerted rather than waited on without end.

use std::time::Duration;

use super::alerts;
use super::record::{HeldContainer, WindowRecord};
use super::{close_budget, Resumed};
use crate::clock::Clock;
use crate::schedule::tests::{rig, t0};

#[tokio::test(start_paused = true)]
async fn a_dead_owners_window_is_owed_and_alerted_within_one_budget_when_the_runtime_hangs() {
    let r = rig(&[("registry", false)]);
    let mut child = std::process::Command::new("true").spawn().expect("spawn");
    let pid = child.id();
    child.wait().expect("wait");
    let boot = crate::store::boot_id().expect("boot id");
    let now = r.clock.since_boot().expect("since boot").as_secs();
    r.records
        .write(&WindowRecord {
            step: "gc".into(),
            module: None,
            fire_time: t0(),
            opened_at: t0(),
            boot_id: boot,
            pid,
            pid_start_time: 1,
            step_container: "gc-run".into(),
            step_timeout_secs: Some(3600),
            opened_since_boot_secs: Some(now - 60),
            lease_since_boot_secs: Some(now - 5),
            owed: false,
            held: vec![HeldContainer {
                id: "registry".into(),
                name: "registry".into(),
                was_running: true,
                starting: false,
            }],
        })
        .expect("write");
    // Docker stops answering about the step container.
    r.fake
        .inspect_delay("gc-run", Duration::from_secs(6 * 3600));
    let began = tokio::time::Instant::now();
    let resumed = r.firer.windows().adopt("gc").await.expect("adopt");
    let took = began.elapsed();
    assert!(
        took <= close_budget() + Duration::from_secs(1),
        "one closing budget, not the runtime's silence: {took:?}"
    );
    match resumed {
        Some(Resumed::Closed { report, .. }) => {
            assert_eq!(report.owed, vec!["registry"], "{report:?}")
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        !r.fake.is_running("registry"),
        "never started beside a step"
    );
    let records = r.records.all().expect("records");
    assert!(records.len() == 1 && records[0].owed, "{records:?}");
    let alerts = alerts::since(&r.store, None).expect("alerts");
    assert!(
        alerts
            .iter()
            .any(|a| a.container.as_deref() == Some("registry")
                && a.message.contains("WILL NOT START AGAIN")),
        "{alerts:?}"
    );
}
