//! The judging and file handling of unit resources, without systemd; the
//! D-Bus side is tested on the node (tests/unit_files_node.rs).

use super::dbus::type_interface;
use super::file::*;
use super::judge::*;
use super::*;
use std::os::unix::fs::PermissionsExt;

fn service(kind: &str, remain: bool, status: i32) -> Option<ServiceState> {
    Some(ServiceState {
        kind: kind.into(),
        remain_after_exit: remain,
        exec_main_status: status,
    })
}

fn observed(active: &str, sub: &str, result: &str, svc: Option<ServiceState>) -> Observed {
    Observed {
        load_state: "loaded".into(),
        active_state: active.into(),
        sub_state: sub.into(),
        condition_result: true,
        result: Some(result.into()),
        service: svc,
    }
}

#[test]
fn file_change_compares_bytes() {
    assert_eq!(file_change(None, b"x"), FileChange::Created);
    assert_eq!(file_change(Some(b"x"), b"x"), FileChange::Unchanged);
    assert_eq!(file_change(Some(b"x"), b"x\n"), FileChange::Updated);
    assert_eq!(file_change(Some(b""), b""), FileChange::Unchanged);
}

#[test]
fn unit_files_are_written_once_and_replaced_on_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    assert_eq!(
        write_unit_file(d, "a.service", b"[Service]\n"),
        Ok(FileChange::Created)
    );
    let path = d.join("a.service");
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o7777;
    assert_eq!(mode, 0o644);
    assert_eq!(
        write_unit_file(d, "a.service", b"[Service]\n"),
        Ok(FileChange::Unchanged)
    );
    assert_eq!(
        write_unit_file(d, "a.service", b"[Service]\nType=oneshot\n"),
        Ok(FileChange::Updated)
    );
    assert_eq!(
        std::fs::read(&path).expect("read"),
        b"[Service]\nType=oneshot\n"
    );
    // A widened mode is put back without counting as a change.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    assert_eq!(
        write_unit_file(d, "a.service", b"[Service]\nType=oneshot\n"),
        Ok(FileChange::Unchanged)
    );
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o7777;
    assert_eq!(mode, 0o644);
    // No temporary file is left next to it.
    let names: Vec<_> = std::fs::read_dir(d)
        .expect("readdir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("a.service")]);
}

#[test]
fn deleting_reports_whether_a_file_was_there() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_unit_file(dir.path(), "b.timer", b"[Timer]\n").expect("write");
    assert_eq!(delete_unit_file(dir.path(), "b.timer"), Ok(true));
    assert!(!dir.path().join("b.timer").exists());
    assert_eq!(delete_unit_file(dir.path(), "b.timer"), Ok(false));
}

#[test]
fn names_that_escape_the_directory_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    for bad in [
        "",
        ".",
        "..",
        "../x.service",
        "a/b.service",
        "a\nb.service",
        "a\0.service",
    ] {
        let err = write_unit_file(dir.path(), bad, b"x").expect_err(bad);
        assert!(
            err.contains("unit name") || err.contains("not a unit name"),
            "{err}"
        );
        assert!(delete_unit_file(dir.path(), bad).is_err(), "{bad:?}");
    }
    assert!(check_name("getty@tty1.service").is_ok());
    assert!(check_name("a\\x2db.mount").is_ok());
}

#[test]
fn restart_only_for_types_where_it_is_harmless() {
    for name in ["a.service", "a.socket", "a.timer", "a.path"] {
        assert!(restarts_on_change(name), "{name}");
    }
    for name in ["a.mount", "a.automount", "a.swap", "a.target", "a.slice"] {
        assert!(!restarts_on_change(name), "{name}");
    }
    assert_eq!(type_interface("x.target"), None);
    assert_eq!(type_interface("x.slice"), None);
    assert_eq!(type_interface("x.service"), Some(SERVICE_INTERFACE));
}

#[test]
fn an_active_unit_is_started_or_restarted() {
    let o = observed("active", "running", "success", service("simple", false, 0));
    assert_eq!(
        judge_start("a.service", "done", &o, false),
        StateStep::Started
    );
    assert_eq!(
        judge_start("a.service", "done", &o, true),
        StateStep::Restarted
    );
    let timer = observed("active", "waiting", "success", None);
    assert_eq!(
        judge_start("a.timer", "done", &timer, false),
        StateStep::Started
    );
}

#[test]
fn a_oneshot_that_exited_zero_is_satisfied() {
    let o = observed("inactive", "dead", "success", service("oneshot", false, 0));
    assert_eq!(
        judge_start("a.service", "done", &o, false),
        StateStep::Satisfied
    );
    // With RemainAfterExit it would be active; inactive means it is not.
    let remain = observed("inactive", "dead", "success", service("oneshot", true, 0));
    assert!(matches!(
        judge_start("a.service", "done", &remain, false),
        StateStep::Failed(_)
    ));
}

#[test]
fn a_simple_service_that_exits_at_once_is_not_started() {
    let o = observed("inactive", "dead", "success", service("simple", false, 0));
    let StateStep::Failed(why) = judge_start("a.service", "done", &o, false) else {
        panic!("a service that is not running is not started");
    };
    assert!(why.contains("inactive (dead)"), "{why}");
    assert!(why.contains("Type=oneshot"), "{why}");
}

#[test]
fn a_failure_names_the_result_and_exit_status() {
    let o = observed(
        "failed",
        "failed",
        "exit-code",
        service("oneshot", false, 1),
    );
    let StateStep::Failed(why) = judge_start("b.service", "failed", &o, false) else {
        panic!("exit 1 is a failure");
    };
    assert!(
        why.starts_with("failed: exit-code (exit status 1)"),
        "{why}"
    );
    assert!(why.contains("journalctl -u b.service"), "{why}");

    let killed = observed("failed", "failed", "signal", service("simple", false, 9));
    let StateStep::Failed(why) = judge_start("b.service", "failed", &killed, false) else {
        panic!("a signal is a failure");
    };
    assert!(why.starts_with("failed: signal (signal 9)"), "{why}");

    let dep = observed("inactive", "dead", "success", service("simple", false, 0));
    let StateStep::Failed(why) = judge_start("b.service", "dependency", &dep, false) else {
        panic!("a failed dependency is a failure");
    };
    assert!(why.contains("depends on"), "{why}");
}

#[test]
fn an_unmet_condition_is_not_a_failure() {
    let mut o = observed("inactive", "dead", "success", service("simple", false, 0));
    o.condition_result = false;
    assert_eq!(
        judge_start("a.service", "done", &o, false),
        StateStep::ConditionUnmet
    );
}

fn steps(file: FileChange, state: StateStep) -> Steps {
    Steps {
        file,
        enablement: Ok(None),
        state,
    }
}

#[test]
fn the_action_is_the_most_telling_step() {
    let r = summarize("web", &steps(FileChange::Unchanged, StateStep::AsDeclared));
    assert_eq!(
        (r.action.as_str(), r.reason.as_deref(), r.ok),
        ("unchanged", None, true)
    );

    let r = summarize("web", &steps(FileChange::Created, StateStep::AsDeclared));
    assert_eq!(
        (r.action.as_str(), r.reason.as_deref()),
        ("created", Some("file created"))
    );

    let mut s = steps(FileChange::Created, StateStep::Started);
    s.enablement = Ok(Some("enabled"));
    let r = summarize("web", &s);
    assert_eq!(
        (r.action.as_str(), r.reason.as_deref(), r.ok),
        ("started", Some("file created; started; enabled"), true)
    );

    let r = summarize("web", &steps(FileChange::Updated, StateStep::Restarted));
    assert_eq!(
        (r.action.as_str(), r.reason.as_deref()),
        ("updated", Some("file updated; restarted"))
    );

    let r = summarize("web", &steps(FileChange::Unchanged, StateStep::Stopped));
    assert_eq!(
        (r.action.as_str(), r.reason.as_deref()),
        ("stopped", Some("stopped"))
    );

    let r = summarize("job", &steps(FileChange::Unchanged, StateStep::Satisfied));
    assert_eq!(
        (r.action.as_str(), r.reason.as_deref(), r.ok),
        ("satisfied", Some("ran and exited successfully"), true)
    );

    let r = summarize(
        "job",
        &steps(FileChange::Created, StateStep::ConditionUnmet),
    );
    assert_eq!(r.action, "created");
    assert!(r.ok);

    let mut s = steps(FileChange::Unchanged, StateStep::AsDeclared);
    s.enablement = Ok(Some("disabled"));
    let r = summarize("web", &s);
    assert_eq!(
        (r.action.as_str(), r.reason.as_deref()),
        ("unchanged", Some("disabled"))
    );
}

#[test]
fn any_failure_fails_the_line() {
    let r = summarize(
        "job",
        &steps(
            FileChange::Created,
            StateStep::Failed("failed: exit-code (exit status 1)".into()),
        ),
    );
    assert_eq!(
        (r.action.as_str(), r.reason.as_deref(), r.ok),
        (
            "failed",
            Some("file created; failed: exit-code (exit status 1)"),
            false
        )
    );

    let mut s = steps(FileChange::Unchanged, StateStep::Started);
    s.enablement = Err("cannot enable a.service: systemd says it is static".into());
    let r = summarize("a", &s);
    assert_eq!(r.action, "failed");
    assert!(!r.ok);
    assert_eq!(
        r.reason.as_deref(),
        Some("started; cannot enable a.service: systemd says it is static")
    );
}

#[test]
fn file_change_serializes_as_its_report_word() {
    assert_eq!(
        serde_json::to_string(&FileChange::Unchanged).expect("json"),
        "\"unchanged\""
    );
    assert_eq!(FileChange::Created.to_string(), "created");
}
