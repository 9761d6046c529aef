//! Operators' safeguards against the daemon as a real unit of the node:
//! an empty declaration never wipes a node by accident (`apply`, `--local`,
//! `systemctl reload`), and a suspended step does not fire across a
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
    assert!(
        text(&status).contains("EMPTY DECLARATION REFUSED"),
        "{}",
        text(&status)
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
    assert!(
        !text(&status).contains("EMPTY DECLARATION REFUSED"),
        "{}",
        text(&status)
    );
}
