//! A fire's figures and the OOM killer's verdict, against the scripted
//! runtime (no unit, so no cgroup: the runtime's word alone). The figures
//! read from a real unit's cgroup are tested on the node
//! (`tests/accounting_node.rs`).

use std::time::Duration;

use crate::schedule::fire::RunOutcome;
use crate::schedule::tests::{rig, step, t0};

#[tokio::test(start_paused = true)]
async fn a_run_the_oom_killer_ended_fails_as_such_and_its_window_closes() {
    let r = rig(&[("registry", true)]);
    r.fake.oom_kill_runs("gc-run");
    r.fake.exit_with("gc-run", 137, Duration::from_secs(3));
    let mut def = step("gc", &["registry"], None);
    std::sync::Arc::make_mut(&mut def.spec).process.memory = Some(256 << 20);
    let report = r.firer.fire(&def, t0()).await;
    assert_eq!(report.outcome, RunOutcome::OomKilled { status: 137 });
    assert_eq!(report.outcome.reason(), "oom");
    assert_eq!(report.outcome.exit_status(), Some(137));
    let usage = report.usage.expect("figures of a run");
    assert_eq!(usage.oom_killed, Some(true));
    assert_eq!(usage.memory_limit_bytes, Some(256 << 20));
    // No unit, no cgroup: nothing measured is made up.
    assert_eq!(usage.cpu_usec, None);
    assert_eq!(usage.memory_peak_bytes, None);
    assert!(r.fake.is_running("registry"), "held service running again");
    assert_eq!(report.started_again, vec!["registry"]);
    assert!(
        report.held_secs.is_some_and(|s| s >= 3.0),
        "{:?}",
        report.held_secs
    );
    assert!(r.records.all().expect("records").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_run_that_exits_zero_after_an_oom_kill_inside_succeeds_and_says_so() {
    let r = rig(&[]);
    r.fake.oom_kill_runs("gc-run");
    r.fake.exit_with("gc-run", 0, Duration::from_secs(1));
    let report = r.firer.fire(&step("gc", &[], None), t0()).await;
    assert_eq!(report.outcome, RunOutcome::Succeeded);
    assert_eq!(report.usage.and_then(|u| u.oom_killed), Some(true));
    assert_eq!(report.held_secs, None, "no window");
}

#[tokio::test(start_paused = true)]
async fn a_failure_that_is_not_the_oom_killers_keeps_its_reason() {
    let r = rig(&[]);
    r.fake.exit_with("gc-run", 137, Duration::from_secs(1));
    let report = r.firer.fire(&step("gc", &[], None), t0()).await;
    assert_eq!(report.outcome, RunOutcome::Exited { status: 137 });
    assert_eq!(report.outcome.reason(), "exited");
    assert_eq!(report.usage.and_then(|u| u.oom_killed), Some(false));
}
