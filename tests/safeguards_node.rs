//! Operators' safeguards against the daemon as a real unit of the node:
//! an empty declaration never wipes a node by accident (`apply`, `--local`,
//! `systemctl reload`, the daemon's start), and a suspended step does not fire across a
//! restart until it is resumed. Every check goes through systemd, Docker,
//! journald or the command line themselves.

mod support;

use std::time::Duration;

use serde_json::json;
use support::daemon_unit::DaemonUnit;
use support::declare::{self, text};
use support::world::{stamp, World};
use support::{quote, wait_for};

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn an_empty_declaration_removes_nothing_unless_allowed() {
    let mut w = World::new("empty");
    let a = w.name("a");
    let img = w.busybox();
    let d = DaemonUnit::started_with_args(
        &w,
        "--metrics-file=",
        json!([declare::service("a", &a, &img)]),
    );
    assert!(w.running(&a));
    let installed = w.path("declaration.json");
    let before = std::fs::read(&installed).expect("the node's declaration");
    let empty = w.declaration("empty.json", json!([]));
    let since = stamp();

    // `apply FILE` of it, through the daemon and in-process: refused (2),
    // saying how many it would remove and how to mean it.
    for args in [
        vec!["apply", empty.as_str()],
        vec!["apply", &empty, "--local"],
    ] {
        let out = if args.len() == 3 {
            w.mesh(&args)
        } else {
            d.cli(&args)
        };
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(
            said.contains("1 resource(s)") && said.contains("--allow-empty"),
            "{args:?}: {said}"
        );
        assert_eq!(
            std::fs::read(&installed).expect("read"),
            before,
            "{args:?}: the node's declaration file is not replaced"
        );
    }

    // The same file written as the node's declaration, then a reload: the
    // daemon keeps everything, stays active and says why at priority err.
    let journal_since = w.journal_now();
    std::fs::copy(&empty, &installed).expect("copy");
    d.reload_and_wait();
    assert!(d.active(), "the daemon stays active");
    assert!(w.running(&a), "nothing removed");
    assert!(
        w.events(&since, &[&a]).is_empty(),
        "the container was not touched: {:?}",
        w.events(&since, &[&a])
    );
    let refused = d.journal(
        &journal_since,
        &["MESH_EVENT=declaration-empty-refused", "PRIORITY=3"],
    );
    assert!(
        refused.contains(&installed) && refused.contains("1 resource(s)"),
        "journal: {refused}"
    );
    let by_id = d.journal(
        &journal_since,
        &["MESSAGE_ID=5f0980ab7bc6467ebde440999d004df0"],
    );
    assert!(by_id.contains(&installed), "by MESSAGE_ID: {by_id}");
    let status_text = d.prop("StatusText");
    assert!(
        status_text.contains("EMPTY DECLARATION REFUSED"),
        "STATUS=: {status_text}"
    );
    let status = d.cli(&["status"]);
    assert_eq!(status.status.code(), Some(3), "{}", text(&status));
    assert!(
        text(&status).contains("ATTENTION: EMPTY DECLARATION REFUSED"),
        "{}",
        text(&status)
    );
    let local = d.cli_with_state(&["status", "--local"]);
    assert_eq!(local.status.code(), Some(3), "{}", text(&local));
    assert!(
        text(&local).contains("declares no resources"),
        "{}",
        text(&local)
    );

    // Meant: --allow-empty removes it all, and the node is well again.
    let out = d.cli(&["apply", "--allow-empty", &empty]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("removed"), "{}", text(&out));
    wait_for(
        "the container to be removed",
        Duration::from_secs(30),
        || {
            let gone = d
                .node
                .sh(&format!("docker inspect {} >/dev/null 2>&1", quote(&a)));
            (!gone.status.success()).then_some(())
        },
    );
    let status = d.cli(&["status"]);
    assert_eq!(status.status.code(), Some(0), "{}", text(&status));
    assert!(
        !text(&status).contains("EMPTY DECLARATION REFUSED"),
        "{}",
        text(&status)
    );
}

// The daemon started over an empty declaration (a provisioning slip
// written while it was stopped) applies nothing: it stays active, keeps
// the service, says so at priority err, and counts only what an apply
// would remove: the service, not the file, the directory and the volume
// declared beside it, which no apply ever removes.
#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn an_empty_declaration_found_at_the_daemons_start_removes_nothing() {
    let mut w = World::new("emptystart");
    let a = w.name("a");
    let img = w.busybox();
    let volume = w.volume_name("kept");
    let file = w.path("kept.conf");
    let directory = w.path("kept.d");
    let d = DaemonUnit::started_with_args(
        &w,
        "--metrics-file=",
        json!([
            declare::service("a", &a, &img),
            {"id": "conf", "type": "file", "path": file, "content": "kept\n"},
            {"id": "confd", "type": "directory", "path": directory},
            {"id": "vol", "type": "volume", "name": volume},
        ]),
    );
    assert!(w.running(&a));
    let volume_kept = || {
        w.node
            .docker(&["volume", "inspect", &volume])
            .status
            .success()
    };
    assert!(volume_kept(), "the volume is made");
    d.node.sh_ok(&format!("systemctl stop {}", quote(&d.unit)));
    w.write_declaration(json!([]));
    let since = stamp();
    let journal_since = w.journal_now();
    d.start();
    assert!(d.active(), "the daemon starts and stays active");
    assert!(w.running(&a), "nothing removed");
    assert!(
        w.events(&since, &[&a]).is_empty(),
        "the container was not touched: {:?}",
        w.events(&since, &[&a])
    );
    assert_eq!(
        std::fs::read_to_string(&file).expect("the file is kept"),
        "kept\n"
    );
    assert!(
        std::path::Path::new(&directory).is_dir(),
        "the directory is kept"
    );
    assert!(volume_kept(), "the volume is kept");
    let refused = d.journal(
        &journal_since,
        &["MESH_EVENT=declaration-empty-refused", "PRIORITY=3"],
    );
    assert!(
        refused.contains("1 resource(s)"),
        "only the service counts, not what no apply removes: {refused}"
    );
    let status = d.cli(&["status"]);
    assert_eq!(status.status.code(), Some(3), "{}", text(&status));
    assert!(
        text(&status).contains("ATTENTION: EMPTY DECLARATION REFUSED"),
        "{}",
        text(&status)
    );
    let status_text = d.prop("StatusText");
    assert!(
        status_text.contains("EMPTY DECLARATION REFUSED"),
        "STATUS=: {status_text}"
    );
}

/// A step of `w` that fires every minute, echoing a line.
fn every_minute(w: &mut World, id: &str) -> serde_json::Value {
    let name = w.name(id);
    let mut step = declare::step(id, &name, &w.busybox(), "echo fired", &[], 60);
    step["schedule"] = json!("* * * * *");
    step
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_suspended_step_does_not_fire_across_a_restart_until_resumed() {
    let mut w = World::new("suspend");
    let step = every_minute(&mut w, "sustick");
    let d = DaemonUnit::started_with_args(&w, "--metrics-file=", json!([step]));

    let unknown = d.cli(&["suspend", "nope"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
    let out = d.cli(&["suspend", "sustick"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("suspended since"), "{}", text(&out));
    // With a daemon running, --local would go unseen by its scheduler.
    let local = d.cli_with_state(&["suspend", "sustick", "--local"]);
    assert_eq!(local.status.code(), Some(2), "{}", text(&local));

    // Kept across a restart of the daemon. Counted from the suspension to
    // the microsecond: a fire due at the minute's turn just before it (the
    // daemon started a moment before the turn) is logged within the same
    // second, and is no fire of a suspended step.
    let since = w
        .node
        .sh_ok("date '+%Y-%m-%d %H:%M:%S.%6N'")
        .trim()
        .to_string();
    d.restart();
    let status = d.cli(&["status"]);
    assert!(
        text(&status).contains("SUSPENDED since"),
        "{}",
        text(&status)
    );
    let plan = d.cli(&["plan", "sustick"]);
    assert!(text(&plan).contains("SUSPENDED since"), "{}", text(&plan));
    // The daemon's plan is of the step as armed: one it has not armed is
    // refused, named.
    let none = d.cli(&["plan", "nosuchstep"]);
    assert_eq!(none.status.code(), Some(2), "{}", text(&none));
    assert!(
        text(&none).contains("no scheduled step nosuchstep is armed"),
        "{}",
        text(&none)
    );
    let metrics = d.cli(&["metrics"]);
    assert!(
        text(&metrics).contains("mesh_host_step_suspended{step=\"sustick\",module=\"m\"} 1"),
        "{}",
        text(&metrics)
    );
    let status_line = d.prop("StatusText");
    assert!(
        status_line.contains("SUSPENDED: sustick since"),
        "{status_line}"
    );
    for args in [vec!["run", "sustick"], vec!["run", "sustick", "--local"]] {
        let out = d.cli_with_state(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains("--force"), "{args:?}: {}", text(&out));
    }

    // The minute turns: its due time is logged at notice, nothing fires.
    // (A restart straddling a minute would log that passed time too, as
    // one entry of its own: only the scheduled due times are counted.)
    let due_lines = |j: &str| -> Vec<String> {
        j.lines()
            .filter(|l| l.contains(":00+00:00 is not run"))
            .map(str::to_string)
            .collect()
    };
    let passed = wait_for(
        "a due time to pass suspended",
        Duration::from_secs(75),
        || {
            let j = d.journal(
                &since,
                &[
                    "MESH_EVENT=step-suspended",
                    "MESH_STEP=sustick",
                    "PRIORITY=5",
                ],
            );
            let lines = due_lines(&j);
            (!lines.is_empty()).then_some(lines)
        },
    );
    assert_eq!(passed.len(), 1, "once per due time: {passed:?}");
    let started = d.journal(&since, &["MESH_EVENT=step-started", "MESH_STEP=sustick"]);
    assert!(
        started.trim().is_empty(),
        "a suspended step fired: {started}"
    );

    // --force runs it once; it stays suspended.
    let forced = d.cli(&["run", "sustick", "--force"]);
    assert_eq!(forced.status.code(), Some(0), "{}", text(&forced));
    let status = d.cli(&["status"]);
    assert!(
        text(&status).contains("SUSPENDED since"),
        "{}",
        text(&status)
    );

    // Resumed: it fires again on its schedule (a start beside the forced
    // one, logged since the restart).
    let starts = || {
        d.journal(&since, &["MESH_EVENT=step-started", "MESH_STEP=sustick"])
            .lines()
            .count()
    };
    assert_eq!(starts(), 1, "only the forced run");
    // What was logged suspended before the resume: a restart straddling a
    // minute adds an entry of its own (above), never one after.
    let suspended_lines = || {
        d.journal(&since, &["MESH_EVENT=step-suspended", "MESH_STEP=sustick"])
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let before_resume = suspended_lines();
    assert!(!before_resume.is_empty());
    let out = d.cli(&["resume", "sustick"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let status = d.cli(&["status"]);
    assert_eq!(status.status.code(), Some(0), "{}", text(&status));
    assert!(!text(&status).contains("SUSPENDED"), "{}", text(&status));
    wait_for("the resumed step to fire", Duration::from_secs(75), || {
        (starts() >= 2).then_some(())
    });
    let after = suspended_lines();
    assert_eq!(after, before_resume, "none after resume");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_step_suspended_with_no_daemon_is_read_by_the_next_daemon() {
    let mut w = World::new("suslocal");
    let step = every_minute(&mut w, "suslocal");
    let applied = w.apply_local(json!([step]));
    assert_eq!(applied.status.code(), Some(0), "{}", text(&applied));
    let unknown = w.mesh(&["suspend", "nope", "--local"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
    let out = w.mesh(&["suspend", "suslocal", "--local"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let status = w.mesh(&["status", "--local"]);
    assert!(
        text(&status).contains("SUSPENDED since"),
        "{}",
        text(&status)
    );
    let metrics = w.mesh(&["metrics", "--local"]);
    assert!(
        text(&metrics).contains("mesh_host_step_suspended{step=\"suslocal\",module=\"m\"} 1"),
        "{}",
        text(&metrics)
    );
    // The next daemon starts with it suspended.
    let d = DaemonUnit::install_with_args(&w, "", "--metrics-file=");
    d.start();
    let status = d.cli(&["status"]);
    assert!(
        text(&status).contains("SUSPENDED since"),
        "{}",
        text(&status)
    );
    assert!(d.prop("StatusText").contains("SUSPENDED: suslocal"));
    let run = d.cli(&["run", "suslocal"]);
    assert_eq!(run.status.code(), Some(2), "{}", text(&run));
}
