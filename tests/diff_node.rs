//! `mesh-host diff` against the daemon as a real unit of the node, and in
//! process: what an apply would do, and nothing done. Docker's own events,
//! the node's files and its installed declaration are the witnesses.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::accounts::has_entry;
use support::daemon_unit::DaemonUnit;
use support::declare::{self, text};
use support::wait_for;
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

/// A subnet of this test's own, `10.X.Y.0/24` from its names, and another
/// beside it (the node's routes are the machine's: apart from other
/// tests' networks).
fn own_subnets(w: &World) -> (String, String) {
    let n = w
        .prefix
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b.into()));
    let (x, y) = (160 + n % 30, (n / 30) % 250);
    (format!("10.{x}.{y}.0/24"), format!("10.{}.{y}.0/24", x + 1))
}

/// Each line of a `--json` report: id, action with its reason, and its
/// steps (what is done to what, and why where the line does not say). A
/// run-once step's reason is its run's outcome once it ran (its exit
/// status and time): only its action and steps.
fn plan_of(report: &Value) -> Vec<(String, String, Vec<String>)> {
    let text = |v: &Value, key: &str| v[key].as_str().unwrap_or("").to_string();
    report["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|l| {
            let steps: Vec<String> = l["steps"]
                .as_array()
                .map(|s| {
                    s.iter()
                        .map(|s| {
                            format!("{} {} {}", text(s, "act"), text(s, "on"), text(s, "reason"))
                        })
                        .collect()
                })
                .unwrap_or_default();
            let action = if steps.iter().any(|s| s.starts_with("run container ")) {
                text(l, "action")
            } else {
                format!("{}: {}", text(l, "action"), text(l, "reason"))
            };
            (text(l, "id"), action, steps)
        })
        .collect()
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn the_apply_takes_the_plan_diff_showed_and_docker_and_systemd_see_only_that() {
    let hold_id = support::unique_step_id("hold");
    let mut w = World::new("plan");
    let (web, api, old, steady, held, hold) = (
        w.name("web"),
        w.name("api"),
        w.name("old"),
        w.name("steady"),
        w.name("held"),
        w.name("hold"),
    );
    let (once, nightly) = (w.name("once"), w.name("nightly"));
    let net = w.network_name("back");
    let vol = w.volume_name("data");
    let img = w.busybox();
    let env = w.path("web.env");
    let dir = w.path("dir");
    let unit = format!("{}-plan.service", w.prefix);
    let (first_net, second_net) = own_subnets(&w);
    let (olduser, user) = (w.identity("olduser"), w.identity("user"));
    let share = w.shared_path("share");
    // A folder already holding root's data: refused, by the plan and the
    // apply alike.
    let full = w.shared_path("full");
    w.node
        .sh_ok(&format!("mkdir -p '{full}' && echo kept > '{full}/data'"));
    let content = "[Unit]\nDescription=mesh-host diff test\n\n[Service]\nExecStart=/bin/sleep infinity\n\n[Install]\nWantedBy=multi-user.target\n";
    let unit_res = json!({"id": "plan-unit", "type": "unit", "name": unit, "content": content, "enabled": true});
    let mut web_svc = declare::service("web", &web, &img);
    web_svc["env-files"] = json!([env]);
    web_svc["networks"] = json!([{"name": net}]);
    web_svc.as_object_mut().expect("object").remove("network");
    let network =
        |subnet: &str| json!({"id": "back", "type": "network", "name": net, "subnet": subnet});
    let env_file = |content: &str| json!({"id": "env", "type": "file", "path": env, "content": content, "mode": "0644"});
    let directory =
        |mode: &str| json!({"id": "dir", "type": "directory", "path": dir, "mode": mode});
    let held_svc = |level: &str| {
        let mut s = declare::service("held", &held, &img);
        s["env"] = json!({"LEVEL": level});
        s
    };
    // The window of `hold` keeps `held` stopped while the diff and the
    // apply are made.
    let hold_step = declare::step(&hold_id, &hold, &img, "sleep 40", &["held"], 120);
    let applied = json!([
        network(&first_net),
        env_file("A=1\n"),
        directory("0750"),
        web_svc.clone(),
        declare::service("api", &api, &img),
        declare::service("old", &old, &img),
        declare::service("steady", &steady, &img),
        held_svc("1"),
        hold_step.clone(),
        unit_res.clone(),
        olduser.clone(),
        support::accounts::shared_folder("share", &share, &[("olduser", false)]),
    ]);
    let d = DaemonUnit::started_with_args(&w, "--metrics-file=", applied);
    // The unit is enabled for real (a link under the machine's /etc):
    // taken away whatever happens.
    let _unit_gone = d.node.on_drop(format!(
        "systemctl disable {unit}; systemctl stop {unit}; rm -f /run/systemd/system/{unit}; systemctl daemon-reload"
    ));
    assert!(w.running(&web) && w.running(&api) && w.running(&steady) && w.running(&held));
    assert_eq!(
        d.node.sh_ok(&format!("systemctl is-enabled {unit}")).trim(),
        "enabled"
    );
    assert!(has_entry(&w.node, &share, olduser.uid));

    // Behind the host's back: a service stopped, the unit stopped and
    // disabled. The apply on main saw these; its diff did not.
    d.node.docker_ok(&["stop", "-t", "1", &api]);
    d.node.sh_ok(&format!(
        "systemctl stop {unit} && systemctl disable {unit}"
    ));
    // A run-once step runs at every apply: only in the first of the two.
    let once_step = json!({"id": "once", "type": "container", "name": once, "image": img,
        "command": ["true"], "network": "none", "run-once": true, "timeout": 60});
    let nightly_step = declare::step("nightly", &nightly, &img, "true", &[], 60);
    let next_resources = |first: bool| {
        let mut r = vec![
            network(&second_net),
            json!({"id": "data", "type": "volume", "name": vol}),
            env_file("A=2\n"),
            directory("0700"),
        ];
        if first {
            r.push(once_step.clone());
        }
        r.extend([
            web_svc.clone(),
            declare::service("api", &api, &img),
            declare::service("steady", &steady, &img),
            held_svc("2"),
            hold_step.clone(),
            unit_res.clone(),
            serde_json::to_value(&user).expect("identity"),
            support::accounts::shared_folder("share", &share, &[("user", true)]),
            nightly_step.clone(),
        ]);
        if first {
            r.push(support::accounts::shared_folder(
                "full",
                &full,
                &[("user", false)],
            ));
        }
        Value::Array(r)
    };
    let next = w.declaration("plan-next.json", next_resources(true));

    // The window opens: `held` stopped while `hold` runs.
    let mut run = d.cli_spawn(&["run", &hold_id]);
    wait_for("the window of hold", Duration::from_secs(30), || {
        (w.running(&hold) && !w.running(&held)).then_some(())
    });

    let since = stamp();
    let out = d.cli(&["diff", &next, "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let diff: Value = serde_json::from_slice(&out.stdout).expect("diff --json");
    let said = |id: &str| {
        diff["lines"]
            .as_array()
            .expect("lines")
            .iter()
            .find(|l| l["id"] == json!(id))
            .map(|l| {
                format!(
                    "{} {}",
                    l["action"].as_str().unwrap_or(""),
                    l["reason"].as_str().unwrap_or("")
                )
            })
            .unwrap_or_else(|| panic!("no line {id}: {diff}"))
    };
    // The unit stopped and disabled by hand is in the plan.
    assert_eq!(said("plan-unit"), "started started; enabled", "{diff}");
    assert_eq!(said("web"), format!("recreated {env} changed"), "{diff}");
    assert_eq!(said("api"), "started was not running", "{diff}");
    assert!(
        said("back").starts_with("recreated subnet changed; attached again"),
        "{diff}"
    );
    assert_eq!(said("data"), format!("created volume {vol}"), "{diff}");
    assert_eq!(said("dir"), "updated mode 0750 -> 0700", "{diff}");
    assert!(said("user").starts_with("created"), "{diff}");
    assert!(said("olduser").starts_with("removed"), "{diff}");
    assert!(
        said("share").contains(&format!("grant set: uid {} write", user.uid))
            && said("share").contains(&format!("grant taken away: uid {}", olduser.uid)),
        "{diff}"
    );
    assert!(said("full").starts_with("refused holds data"), "{diff}");
    assert!(
        said("held").starts_with(&format!("held-still held by the window of {hold_id}")),
        "{diff}"
    );
    assert!(
        said("old").starts_with(&format!("removed container {old} is no longer declared")),
        "{diff}"
    );
    assert_eq!(said("steady"), "unchanged ", "{diff}");
    assert_eq!(
        said("once"),
        format!("ran {once} runs to completion"),
        "{diff}"
    );
    assert!(said("nightly").starts_with("installed"), "{diff}");
    let events = w.events(&since, &[&web, &api, &old, &steady, &held]);
    assert!(events.is_empty(), "diff touched containers: {events:?}");
    assert_eq!(
        d.node
            .sh(&format!("systemctl is-active {unit}"))
            .status
            .code(),
        Some(3)
    );
    assert!(!w.node.sh(&format!("id -u {}", user.name)).status.success());
    assert!(!w.exists(&once), "diff ran the run-once step");
    assert!(has_entry(&w.node, &share, olduser.uid));
    assert_eq!(d.node.sh_ok(&format!("stat -c %a '{dir}'")).trim(), "750");

    // The apply takes that plan, step by step, each step done; the
    // refusal fails it.
    let since = stamp();
    let out = d.cli(&["apply", &next, "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("apply --json");
    assert_eq!(
        plan_of(&report),
        plan_of(&diff),
        "apply:\n{report:#}\ndiff:\n{diff:#}"
    );
    for line in report["lines"].as_array().expect("lines") {
        for step in line["steps"].as_array().into_iter().flatten() {
            assert_eq!(step["outcome"], json!("done"), "{line}");
        }
    }
    // Docker saw exactly the containers the steps name change, and
    // systemd the unit.
    let stepped: Vec<String> = plan_of(&report)
        .into_iter()
        .flat_map(|(_, _, steps)| steps)
        .filter_map(|s| {
            s.split_once("container ")
                .map(|(_, rest)| rest.split(' ').next().unwrap_or("").to_string())
        })
        .collect();
    let events = w.events(&since, &[&web, &api, &old, &steady, &held]);
    for name in [&web, &api, &old] {
        assert!(stepped.contains(name), "{name} is in no step: {stepped:?}");
        assert!(
            events.iter().any(|(n, _)| n == name),
            "Docker saw nothing of {name}: {events:?}"
        );
    }
    for name in [&steady, &held] {
        assert!(!stepped.contains(name), "{name} is in a step: {stepped:?}");
        assert!(
            !events.iter().any(|(n, _)| n == name),
            "Docker saw a change no step names: {events:?}"
        );
    }
    assert!(w.running(&web) && w.running(&api) && !w.exists(&old));
    assert_eq!(w.inspect(&once, "{{.State.ExitCode}}"), "0", "once ran");
    assert_eq!(
        d.node.sh_ok(&format!("systemctl is-active {unit}")).trim(),
        "active"
    );
    assert_eq!(
        d.node.sh_ok(&format!("systemctl is-enabled {unit}")).trim(),
        "enabled"
    );
    assert_eq!(
        d.node.sh_ok(&format!("id -u {}", user.name)).trim(),
        user.uid.to_string()
    );
    assert!(has_entry(&w.node, &share, user.uid));
    assert!(!has_entry(&w.node, &share, olduser.uid));
    assert!(
        !has_entry(&w.node, &full, user.uid),
        "a refused folder changed"
    );
    assert_eq!(d.node.sh_ok(&format!("stat -c %a '{dir}'")).trim(), "700");

    // Once the window closes and the refused folder and the run-once
    // step are no longer declared, the next apply converges `held`, and
    // then nothing is planned.
    let ran = run.wait().expect("run hold");
    assert!(ran.success(), "run hold: {ran:?}");
    let last = w.declaration("plan-last.json", next_resources(false));
    let out = d.cli(&["diff", &last]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("held recreated"), "{}", text(&out));
    let out = d.cli(&["apply", &last]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = d.cli(&["diff", &last]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}
