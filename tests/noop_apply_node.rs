//! `apply FILE` of the request the daemon applied last, on the sandbox
//! node: found as that apply left the node, it is answered without
//! validating or deciding anything (the daemon's journal says so);
//! whatever changed behind it (a container removed or stopped by hand, an
//! env-file or a mounted file written, a step declared otherwise) is
//! decided in full and converged, as by any apply (docs/apply.md, "An
//! unchanged request").

mod support;

use serde_json::json;
use support::daemon_unit::DaemonUnit;
use support::declare::{self, text};
use support::world::World;

/// What the daemon says when it answers an apply from what it kept.
const KEPT: &str = "the node is as the same request left it";

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn an_unchanged_request_still_converges_what_changed_behind_it() {
    let mut w = World::new("noop");
    let a = w.name("a");
    let b = w.name("b");
    let gc = w.name("gc");
    let img = w.busybox();
    let env = w.path("a.env");
    let conf = w.path("a.conf");
    std::fs::write(&env, "MODE=one\n").expect("env-file");
    std::fs::write(&conf, "v = 1\n").expect("mounted file");
    // Read by an apply a second or more after they were written: a file
    // changed within the second before is not taken as settled.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let mut service_a = declare::service("a", &a, &img);
    service_a["env-files"] = json!([env]);
    service_a["mounts"] = json!([{"source": conf, "target": "/etc/app.conf", "read-only": true}]);
    let step = |schedule: &str| {
        let mut s = declare::step("gc", &gc, &img, "true", &["a"], 300);
        s["schedule"] = json!(schedule);
        s
    };
    let declared = |schedule: &str| {
        json!([
            service_a.clone(),
            declare::service("b", &b, &img),
            step(schedule)
        ])
    };
    let d = DaemonUnit::started_with_args(&w, "--metrics-file=", declared("0 3 * * *"));
    let file = w.declaration("file.json", declared("0 3 * * *"));
    let kept = || {
        let journal = d.unit_journal(&["-o", "cat"]);
        journal.lines().filter(|l| l.contains(KEPT)).count()
    };
    let apply = |what: &str| {
        let out = d.cli(&["apply", &file]);
        assert_eq!(out.status.code(), Some(0), "{what}: {}", text(&out));
        text(&out)
    };

    // The first apply of FILE is decided in full; the same bytes again
    // are answered from what it left, every resource unchanged.
    apply("first");
    assert_eq!(kept(), 0, "nothing kept before an apply of FILE");
    let out = apply("the same");
    // Why the daemon decided in full, should it have: its own words.
    let why = || {
        let journal = d.unit_journal(&["-o", "cat"]);
        journal
            .lines()
            .filter(|l| l.contains("decided in full") || l.contains("not remembered"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        out.trim(),
        "apply ok: 3 unchanged",
        "counted, not listed; the daemon said:\n{}",
        why()
    );
    assert_eq!(kept(), 1, "answered from what the apply left");
    // Every line when asked for.
    let out = d.cli(&["apply", "--verbose", &file]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    for id in ["a", "b", "gc"] {
        assert!(
            text(&out).contains(&format!("\n{id} unchanged\n"))
                || text(&out).starts_with(&format!("{id} unchanged\n")),
            "{}",
            text(&out)
        );
    }
    let out = d.cli(&["apply", "--json", &file]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        report["lines"].as_array().map(Vec::len),
        Some(3),
        "{report}"
    );
    assert_eq!(kept(), 3);
    let out = d.cli(&["diff", &file]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("nothing would change"),
        "{}",
        text(&out)
    );

    // A container removed by hand is made again.
    w.node.docker_ok(&["rm", "-f", &b]);
    let out = apply("b removed");
    assert!(out.contains("b created"), "{out}");
    assert!(w.running(&b));
    // ... and the apply after is answered from what that one left.
    let out = apply("the same, again");
    assert_eq!(out.trim(), "apply ok: 3 unchanged", "{out}");
    assert_eq!(kept(), 4, "what the full apply left is kept");
    // What `status` says of that apply is its own (nothing changed), not
    // the lines of the apply before it, which the record still holds.
    let status = d.cli(&["status"]);
    assert!(
        matches!(status.status.code(), Some(0 | 3)),
        "{}",
        text(&status)
    );
    assert!(
        text(&status).contains("ok: 3 unchanged") && !text(&status).contains("b created"),
        "{}",
        text(&status)
    );
    let status = d.cli(&["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).expect("JSON");
    let lines = &status["last-apply"]["lines"];
    let actions: Vec<_> = lines
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| {
            format!(
                "{} {}",
                l["id"].as_str().unwrap_or("?"),
                l["action"].as_str().unwrap_or("?")
            )
        })
        .collect();
    assert_eq!(
        actions,
        ["a unchanged", "b unchanged", "gc unchanged"],
        "{status}"
    );

    // A container stopped by hand is started.
    w.node.docker_ok(&["stop", "-t", "1", &a]);
    let out = apply("a stopped");
    assert!(out.contains("a started"), "{out}");
    assert!(w.running(&a));

    // An env-file written (the same size) recreates its reader.
    std::fs::write(&env, "MODE=two\n").expect("env-file");
    let out = apply("env-file changed");
    assert!(out.contains("a recreated"), "{out}");
    let seen = w
        .node
        .docker_ok(&["inspect", "-f", "{{json .Config.Env}}", &a]);
    assert!(seen.contains("MODE=two"), "{seen}");

    // A mounted file written recreates its reader.
    std::fs::write(&conf, "v = 2\n").expect("mounted file");
    let out = apply("mounted file changed");
    assert!(out.contains("a recreated"), "{out}");
    let read = w.node.docker_ok(&["exec", &a, "cat", "/etc/app.conf"]);
    assert_eq!(read.trim(), "v = 2");

    // A step declared otherwise is armed anew, and back again.
    let armed_at = |hour: &str| {
        let out = d.cli(&["status"]);
        text(&out)
            .lines()
            .any(|l| l.starts_with(&format!("step gc (0 {hour} * * *")))
    };
    assert!(armed_at("3"));
    let other = w.declaration("other.json", declared("0 4 * * *"));
    let out = d.cli(&["apply", &other]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(armed_at("4"), "re-armed by the other request");
    apply("back");
    assert!(armed_at("3"), "re-armed by FILE again");
    assert_eq!(kept(), 4, "none of these was answered from what was kept");
}
