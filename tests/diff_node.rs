//! `mesh-host diff` against the daemon as a real unit of the node, and in
//! process: what an apply would do, and nothing done. Docker's own events,
//! the node's files and its installed declaration are the witnesses.

mod support;

use serde_json::{json, Value};
use support::daemon_unit::DaemonUnit;
use support::declare::{self, text};
use support::world::{stamp, World};

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn diff_shows_what_apply_would_do_and_does_none_of_it() {
    let mut w = World::new("diff");
    let web = w.name("web");
    let old = w.name("old");
    let img = w.busybox();
    let conf = w.path("app.conf");
    let secret = w.path("app.env");
    let file = |id: &str, path: &str, content: &str, mode: &str| json!({"id": id, "type": "file", "path": path, "content": content, "mode": mode});
    let service = |env: &str| {
        let mut s = declare::service("web", &web, &img);
        s["env"] = json!({"A": env});
        s
    };
    let applied = json!([
        file("conf", &conf, "a=1\nb=2\n", "0644"),
        file("secret", &secret, "TOKEN=old\n", "0600"),
        service("1"),
        declare::service("old", &old, &img),
    ]);
    let d = DaemonUnit::started_with_args(&w, "--metrics-file=", applied.clone());
    assert!(w.running(&web) && w.running(&old));
    let installed = w.path("declaration.json");
    let installed_before = std::fs::read(&installed).expect("the node's declaration");
    let same = w.declaration("same.json", applied);
    let mut next_resources: Vec<Value> = vec![
        file("conf", &conf, "a=1\nb=3\n", "0644"),
        file("secret", &secret, "TOKEN=new!\n", "0600"),
        service("2"),
    ];
    let next = w.declaration("next.json", Value::Array(next_resources.clone()));
    let since = stamp();

    // Through the daemon and in process alike.
    let run = |args: &[&str]| {
        if args.contains(&"--local") {
            w.mesh(args)
        } else {
            d.cli(args)
        }
    };
    for local in [false, true] {
        fn argv(file: &str, json: bool, local: bool) -> Vec<&str> {
            let mut args = vec!["diff", file];
            if json {
                args.push("--json");
            }
            if local {
                args.push("--local");
            }
            args
        }
        // The applied declaration: nothing would change, exit 0.
        let args = argv(&same, false, local);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains("nothing would change"),
            "{args:?}: {}",
            text(&out)
        );

        // A changed declaration: exit 1, each change with the apply's reason.
        let args = argv(&next, false, local);
        let out = run(&args);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {said}");
        for expected in [
            "web recreated: env changed",
            "conf updated: content changed",
            "old removed: container",
            &format!("--- a{conf}\n+++ b{conf}\n"),
            "-b=2\n+b=3\n",
            "secret updated: content changed; content not shown",
        ] {
            assert!(
                said.contains(expected),
                "{args:?} lacks {expected:?}:\n{said}"
            );
        }
        assert!(
            !said.contains("TOKEN"),
            "a secret file's content shown: {said}"
        );

        // --json: the apply report's shape, with `changed` and the diff.
        let args = argv(&next, true, local);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
        let report: Value = serde_json::from_slice(&out.stdout).expect("diff --json");
        assert_eq!(report["changed"], json!(true), "{report}");
        let line = |id: &str| {
            report["lines"]
                .as_array()
                .expect("lines")
                .iter()
                .find(|l| l["id"] == json!(id))
                .cloned()
                .unwrap_or_else(|| panic!("no line {id}: {report}"))
        };
        assert_eq!(line("web")["action"], json!("recreated"));
        assert!(line("conf")["diff"].as_str().unwrap_or("").contains("+b=3"));
        assert!(line("secret").get("diff").is_none(), "{report}");
    }

    // Nothing was done: Docker saw no event of either container, the
    // files and the node's declaration are as they were.
    let events = w.events(&since, &[&web, &old]);
    assert!(events.is_empty(), "diff touched containers: {events:?}");
    assert_eq!(std::fs::read_to_string(&conf).expect("conf"), "a=1\nb=2\n");
    assert_eq!(
        std::fs::read_to_string(&secret).expect("secret"),
        "TOKEN=old\n"
    );
    assert_eq!(
        std::fs::read(&installed).expect("read"),
        installed_before,
        "the node's declaration was replaced"
    );

    // The apply after it does what diff said, and a diff then exits 0.
    let out = d.cli(&["apply", &next, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("apply --json");
    assert_eq!(report["changed"], json!(true), "{report}");
    let web_line = report["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .find(|l| l["id"] == json!("web"))
        .cloned()
        .expect("web's line");
    assert_eq!(web_line["action"], json!("recreated"), "{report}");
    assert_eq!(web_line["reason"], json!("env changed"), "{report}");
    let out = d.cli(&["diff", &next]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    // An empty declaration: diff says apply would refuse it (exit 2);
    // with --allow-empty it lists every removal (exit 1), removing none.
    next_resources.clear();
    let empty = w.declaration("empty.json", Value::Array(next_resources));
    let out = d.cli(&["diff", &empty]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--allow-empty"), "{}", text(&out));
    let out = d.cli(&["diff", &empty, "--allow-empty"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("web removed"), "{}", text(&out));
    assert!(w.running(&web), "diff --allow-empty removed nothing");

    // A refused file: exit 2, every problem listed, nothing done.
    let bad = w.path("bad.json");
    std::fs::write(&bad, br#"{"declaration": 1, "resources": [{"id": "x"}]}"#).expect("write");
    let out = d.cli(&["diff", &bad]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}
