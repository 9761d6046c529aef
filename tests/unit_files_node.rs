//! `UnitFiles` against the real systemd 252 of the sandbox node.
//!
//! The tests talk to the node's own system bus from outside
//! (`/proc/<node pid>/root/run/dbus/system_bus_socket`) and write unit files
//! into the node's runtime unit directory `/run/systemd/system`, its own
//! tmpfs, so no unit file lands in this machine's /etc. Enabling still puts
//! a symlink under /etc/systemd/system/<target>.wants (the real /etc, shared
//! with the node): every test disables what it enabled in a drop guard.
//! Results are checked through systemd itself (`systemctl` inside the node).

mod support;

use std::time::Duration;

use mesh_host::declaration::UnitState;
use mesh_host::systemd::unit_files::FileChange;
use support::unit_files::{unit, NodeUnits, NODE_UNIT_DIR};

/// A long-running service that writes `version` to its output file.
fn long_running(name: &str, version: &str) -> String {
    format!(
        "[Unit]\nDescription=mesh-host test {name}\n\n[Service]\n\
         ExecStart=/bin/sh -c 'echo {version} > /run/{name}.out; exec sleep infinity'\n\n\
         [Install]\nWantedBy=multi-user.target\n"
    )
}

/// A oneshot without RemainAfterExit that appends a line and exits `code`.
fn oneshot(name: &str, code: u8) -> String {
    format!(
        "[Service]\nType=oneshot\n\
         ExecStart=/bin/sh -c 'echo ran >> /run/{name}.out; exit {code}'\n"
    )
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn a_service_is_created_started_kept_and_restarted_on_change() {
    let f = NodeUnits::connect().await;
    let (name, _guard) = f.service("svc");
    let id = "web".to_string();

    let v1 = unit(&name, &long_running(&name, "v1"), UnitState::Started, None);
    let changes = f.write(&id, &v1).await;
    assert_eq!(changes.get(&id), Some(&FileChange::Created));
    let mode = f.node.sh_ok(&format!("stat -c %a {NODE_UNIT_DIR}/{name}"));
    assert_eq!(mode.trim(), "644");

    let report = f.units.converge(&id, &v1, FileChange::Created).await;
    assert!(report.ok, "{report:?}");
    assert_eq!(report.action, "started");
    assert_eq!(report.reason.as_deref(), Some("file created; started"));
    assert_eq!(f.answer("is-active", &name), "active");
    let first_pid = f.node.unit_property(&name, "MainPID");
    assert_ne!(first_pid, "0");
    support::wait_for("the v1 output", Duration::from_secs(60), || {
        (f.output(&name).trim() == "v1").then_some(())
    });

    // The same declaration again: nothing to write, nothing to do.
    let changes = f.write(&id, &v1).await;
    assert_eq!(changes.get(&id), Some(&FileChange::Unchanged));
    let report = f.units.converge(&id, &v1, FileChange::Unchanged).await;
    assert_eq!(
        (report.action.as_str(), report.reason.as_deref(), report.ok),
        ("unchanged", None, true)
    );
    assert_eq!(f.node.unit_property(&name, "MainPID"), first_pid);

    // A changed definition is restarted and runs the new ExecStart.
    let v2 = unit(&name, &long_running(&name, "v2"), UnitState::Started, None);
    let changes = f.write(&id, &v2).await;
    assert_eq!(changes.get(&id), Some(&FileChange::Updated));
    assert_eq!(f.node.unit_property(&name, "NeedDaemonReload"), "no");
    let report = f.units.converge(&id, &v2, FileChange::Updated).await;
    assert!(report.ok, "{report:?}");
    assert_eq!(report.action, "updated");
    assert_eq!(report.reason.as_deref(), Some("file updated; restarted"));
    assert_eq!(f.answer("is-active", &name), "active");
    let second_pid = f.node.unit_property(&name, "MainPID");
    assert_ne!(second_pid, first_pid, "a restart gives a new main process");
    assert_ne!(second_pid, "0");
    support::wait_for("the v2 output", Duration::from_secs(60), || {
        (f.output(&name).trim() == "v2").then_some(())
    });
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn a_oneshot_that_exits_zero_is_satisfied() {
    let f = NodeUnits::connect().await;
    let (name, _guard) = f.service("once");
    let id = "migrate".to_string();

    let u = unit(&name, &oneshot(&name, 0), UnitState::Started, None);
    f.write(&id, &u).await;
    let report = f.units.converge(&id, &u, FileChange::Created).await;
    assert_eq!(
        (report.action.as_str(), report.reason.as_deref(), report.ok),
        (
            "satisfied",
            Some("file created; ran and exited successfully"),
            true
        )
    );
    assert_eq!(f.node.unit_property(&name, "ActiveState"), "inactive");
    assert_eq!(f.node.unit_property(&name, "Result"), "success");
    assert_eq!(f.output(&name), "ran\n");

    // Without a record of its runs (no state directory), an unchanged
    // apply cannot know it ran: it runs again.
    let report = f.units.converge(&id, &u, FileChange::Unchanged).await;
    assert_eq!(
        (report.action.as_str(), report.reason.as_deref(), report.ok),
        ("satisfied", Some("ran and exited successfully"), true)
    );
    assert_eq!(f.output(&name), "ran\nran\n");
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn a_oneshot_that_ran_for_its_file_runs_again_only_when_the_file_changes() {
    let mut f = NodeUnits::connect().await;
    let state = tempfile::tempdir().expect("state dir");
    let store = mesh_host::store::Store::open(state.path()).expect("store");
    f.units = f.units.clone().with_oneshot_record(store);
    let (name, _guard) = f.service("once-rec");
    let id = "migrate".to_string();

    let u = unit(&name, &oneshot(&name, 0), UnitState::Started, None);
    let changes = f.write(&id, &u).await;
    let report = f.units.converge(&id, &u, changes[&id]).await;
    assert_eq!((report.action.as_str(), report.ok), ("satisfied", true));
    assert_eq!(f.output(&name), "ran\n");
    assert!(
        state.path().join("oneshot-runs.json").exists(),
        "remembered in the state directory"
    );

    // Two more applies with the same file: systemd has forgotten the run,
    // the host has not.
    for _ in 0..2 {
        let changes = f.write(&id, &u).await;
        assert_eq!(changes[&id], FileChange::Unchanged);
        let report = f.units.converge(&id, &u, changes[&id]).await;
        assert_eq!((report.action.as_str(), report.ok), ("unchanged", true));
        let reason = report.reason.unwrap_or_default();
        assert!(
            reason.contains("ran successfully under this unit file at")
                && reason.contains("not run again until the file changes"),
            "{reason}"
        );
    }
    assert_eq!(f.output(&name), "ran\n", "it ran once");
    let invocations = f
        .node
        .journal(&["-u", &name, "-o", "cat", "--grep", "Finished|Starting"]);
    assert_eq!(
        invocations
            .lines()
            .filter(|l| l.starts_with("Starting"))
            .count(),
        1,
        "{invocations}"
    );

    // The file changes: it runs again, once.
    let v2 = unit(
        &name,
        &format!("# v2\n{}", oneshot(&name, 0)),
        UnitState::Started,
        None,
    );
    let changes = f.write(&id, &v2).await;
    assert_eq!(changes[&id], FileChange::Updated);
    let report = f.units.converge(&id, &v2, changes[&id]).await;
    assert_eq!((report.action.as_str(), report.ok), ("satisfied", true));
    assert_eq!(f.output(&name), "ran\nran\n");
    let report = f.units.converge(&id, &v2, FileChange::Unchanged).await;
    assert_eq!(report.action, "unchanged");
    assert_eq!(f.output(&name), "ran\nran\n");
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn a_oneshot_with_remain_after_exit_runs_once() {
    let f = NodeUnits::connect().await;
    let (name, _guard) = f.service("remain");
    let id = "init".to_string();

    let content =
        oneshot(&name, 0).replace("Type=oneshot\n", "Type=oneshot\nRemainAfterExit=yes\n");
    let u = unit(&name, &content, UnitState::Started, None);
    f.write(&id, &u).await;
    let report = f.units.converge(&id, &u, FileChange::Created).await;
    assert_eq!(
        (report.action.as_str(), report.reason.as_deref(), report.ok),
        ("started", Some("file created; started"), true)
    );
    assert_eq!(f.node.unit_property(&name, "SubState"), "exited");
    let invocation = f.node.unit_property(&name, "InvocationID");

    // Re-applied unchanged, after another unit's change reloaded systemd:
    // active (exited) is as declared, and it does not run again.
    let (other, _other_guard) = f.service("other");
    let o = unit(&other, &oneshot(&other, 0), UnitState::Stopped, None);
    let changes = f
        .units
        .prepare(&[(id.clone(), u.clone()), ("other".into(), o)])
        .await
        .expect("prepare again");
    assert_eq!(changes.get(&id), Some(&FileChange::Unchanged));
    assert_eq!(changes.get("other"), Some(&FileChange::Created));
    let report = f.units.converge(&id, &u, FileChange::Unchanged).await;
    assert_eq!(
        (report.action.as_str(), report.reason.as_deref(), report.ok),
        ("unchanged", None, true)
    );
    assert_eq!(f.output(&name), "ran\n");
    assert_eq!(f.node.unit_property(&name, "InvocationID"), invocation);

    // A changed definition runs again.
    let changed = unit(
        &name,
        &format!("{content}# changed\n"),
        UnitState::Started,
        None,
    );
    let changes = f.write(&id, &changed).await;
    assert_eq!(changes.get(&id), Some(&FileChange::Updated));
    let report = f.units.converge(&id, &changed, FileChange::Updated).await;
    assert_eq!(
        (report.action.as_str(), report.reason.as_deref(), report.ok),
        ("updated", Some("file updated; restarted"), true)
    );
    assert_eq!(f.output(&name), "ran\nran\n");
    assert_ne!(f.node.unit_property(&name, "InvocationID"), invocation);
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn a_oneshot_that_exits_one_fails_naming_its_result() {
    let f = NodeUnits::connect().await;
    let (name, _guard) = f.service("fails");
    let id = "broken".to_string();

    let u = unit(&name, &oneshot(&name, 1), UnitState::Started, None);
    f.write(&id, &u).await;
    let report = f.units.converge(&id, &u, FileChange::Created).await;
    assert!(!report.ok, "{report:?}");
    assert_eq!(report.action, "failed");
    let reason = report.reason.unwrap_or_default();
    assert!(
        reason.contains("failed: exit-code (exit status 1)"),
        "{reason}"
    );
    assert!(
        reason.contains(&format!("journalctl -u {name}")),
        "{reason}"
    );
    assert_eq!(f.node.unit_property(&name, "ActiveState"), "failed");
    assert_eq!(f.node.unit_property(&name, "Result"), "exit-code");
    assert_eq!(f.output(&name), "ran\n");
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn state_stopped_stops_an_active_unit() {
    let f = NodeUnits::connect().await;
    let (name, _guard) = f.service("stop");
    let id = "web".to_string();

    let started = unit(&name, &long_running(&name, "v1"), UnitState::Started, None);
    f.write(&id, &started).await;
    let report = f.units.converge(&id, &started, FileChange::Created).await;
    assert_eq!(report.action, "started", "{report:?}");
    assert_eq!(f.answer("is-active", &name), "active");

    let stopped = unit(&name, &long_running(&name, "v1"), UnitState::Stopped, None);
    let report = f.units.converge(&id, &stopped, FileChange::Unchanged).await;
    assert_eq!(
        (report.action.as_str(), report.reason.as_deref(), report.ok),
        ("stopped", Some("stopped"), true)
    );
    assert_eq!(f.answer("is-active", &name), "inactive");

    // Already stopped: nothing to do.
    let report = f.units.converge(&id, &stopped, FileChange::Unchanged).await;
    assert_eq!(
        (report.action.as_str(), report.reason.as_deref(), report.ok),
        ("unchanged", None, true)
    );
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn enabled_true_and_false_follow_the_declaration() {
    let f = NodeUnits::connect().await;
    let (name, _guard) = f.service("enable");
    let id = "web".to_string();

    let enabled = unit(
        &name,
        &long_running(&name, "v1"),
        UnitState::Stopped,
        Some(true),
    );
    f.write(&id, &enabled).await;
    assert_eq!(f.answer("is-enabled", &name), "disabled");
    let report = f.units.converge(&id, &enabled, FileChange::Created).await;
    assert_eq!(
        (report.action.as_str(), report.reason.as_deref(), report.ok),
        ("created", Some("file created; enabled"), true)
    );
    assert_eq!(f.answer("is-enabled", &name), "enabled");
    assert_eq!(f.node.unit_property(&name, "UnitFileState"), "enabled");
    // Enabled at boot does not mean started now: the state said stopped.
    assert_eq!(f.answer("is-active", &name), "inactive");

    // Already enabled: nothing to do.
    let report = f.units.converge(&id, &enabled, FileChange::Unchanged).await;
    assert_eq!(
        (report.action.as_str(), report.reason.as_deref()),
        ("unchanged", None)
    );

    let disabled = unit(
        &name,
        &long_running(&name, "v1"),
        UnitState::Stopped,
        Some(false),
    );
    let report = f
        .units
        .converge(&id, &disabled, FileChange::Unchanged)
        .await;
    assert_eq!(
        (report.action.as_str(), report.reason.as_deref(), report.ok),
        ("unchanged", Some("disabled"), true)
    );
    assert_eq!(f.answer("is-enabled", &name), "disabled");
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn enabling_a_unit_without_an_install_section_fails() {
    let f = NodeUnits::connect().await;
    let (name, _guard) = f.service("static");
    let id = "static".to_string();

    let u = unit(&name, &oneshot(&name, 0), UnitState::Stopped, Some(true));
    f.write(&id, &u).await;
    let report = f.units.converge(&id, &u, FileChange::Created).await;
    assert!(!report.ok, "{report:?}");
    assert_eq!(report.action, "failed");
    let reason = report.reason.unwrap_or_default();
    assert!(reason.contains("no [Install] section"), "{reason}");
    assert_eq!(f.answer("is-enabled", &name), "static");
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn a_unit_systemd_cannot_load_fails_with_a_pointer() {
    let f = NodeUnits::connect().await;
    let (name, _guard) = f.service("bad");
    let id = "bad".to_string();

    // A service with nothing to run is refused at load: bad-setting.
    let u = unit(&name, "[Service]\nType=simple\n", UnitState::Started, None);
    f.write(&id, &u).await;
    let report = f.units.converge(&id, &u, FileChange::Created).await;
    assert!(!report.ok, "{report:?}");
    let reason = report.reason.unwrap_or_default();
    assert!(reason.contains("systemd cannot load"), "{reason}");
    assert!(reason.contains("bad-setting"), "{reason}");
    assert_eq!(f.node.unit_property(&name, "LoadState"), "bad-setting");
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn a_job_that_outlasts_the_bound_is_reported_not_awaited() {
    let mut f = NodeUnits::connect().await;
    f.units = f.units.clone().with_job_timeout(Duration::from_secs(1));
    let (name, _guard) = f.service("slow");
    let id = "slow".to_string();

    let u = unit(
        &name,
        "[Service]\nType=oneshot\nExecStart=/bin/sleep 30\n",
        UnitState::Started,
        None,
    );
    f.write(&id, &u).await;
    let started = std::time::Instant::now();
    let report = f.units.converge(&id, &u, FileChange::Created).await;
    // Not waited for to its end (30 s), however loaded the machine.
    assert!(started.elapsed() < Duration::from_secs(25));
    assert!(!report.ok, "{report:?}");
    let reason = report.reason.unwrap_or_default();
    assert!(
        reason.contains("did not finish the job within 1s"),
        "{reason}"
    );
    assert_eq!(f.node.unit_property(&name, "ActiveState"), "activating");
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn remove_stops_disables_and_deletes() {
    let f = NodeUnits::connect().await;
    let (name, _guard) = f.service("gone");
    let id = "web".to_string();

    let u = unit(
        &name,
        &long_running(&name, "v1"),
        UnitState::Started,
        Some(true),
    );
    f.write(&id, &u).await;
    let report = f.units.converge(&id, &u, FileChange::Created).await;
    assert!(report.ok, "{report:?}");
    assert_eq!(f.answer("is-active", &name), "active");
    assert_eq!(f.answer("is-enabled", &name), "enabled");

    let reports = f.units.remove(std::slice::from_ref(&name)).await;
    assert_eq!(reports.len(), 1);
    let r = &reports[0];
    assert_eq!(
        (r.id.as_str(), r.action.as_str(), r.reason.as_deref(), r.ok),
        (
            name.as_str(),
            "removed",
            Some("stopped; disabled; file deleted"),
            true
        )
    );
    assert_eq!(f.answer("is-active", &name), "inactive");
    assert!(
        !f.units.dir().join(&name).exists(),
        "the unit file is deleted"
    );
    assert_eq!(f.node.unit_property(&name, "LoadState"), "not-found");
    let wants = f
        .node
        .sh_ok("ls /etc/systemd/system/multi-user.target.wants/");
    assert!(!wants.contains(&name), "{wants}");

    // Removing it again finds nothing left and says so.
    let reports = f.units.remove(std::slice::from_ref(&name)).await;
    assert_eq!(
        (reports[0].action.as_str(), reports[0].reason.as_deref()),
        ("removed", Some("no file left"))
    );
}

#[tokio::test]
#[ignore = "needs the sandbox node: run tests/run"]
async fn remove_refuses_a_name_that_is_a_path() {
    let f = NodeUnits::connect().await;
    let reports = f.units.remove(&["../../etc/passwd".to_string()]).await;
    assert_eq!(reports.len(), 1);
    assert!(!reports[0].ok);
    assert_eq!(reports[0].action, "failed");
    assert!(
        reports[0].reason.as_deref().unwrap_or("").contains("'/'"),
        "{:?}",
        reports[0]
    );
}
