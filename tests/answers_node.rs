//! Every `--json` answer is one document, whoever computes it: `status`,
//! `run`, `suspend` and `resume` through the daemon and with `--local`
//! (and `take` and `logs`, which only ever run in the command's own
//! process) are each validated by their JSON Schema (src/answer/schema/,
//! with python3-jsonschema: tests/schema/answer.py), and the daemon's and
//! `--local`'s documents of one command have the same shape: the same
//! keys everywhere, the same type at each (`null` standing for a value
//! not there now, such as a step's `ready` that only the daemon makes).
//! Exit codes are compared as well.

mod support;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use support::daemon_unit::DaemonUnit;
use support::declare::{self, text};
use support::world::World;

/// The schema of `command`'s `--json` document.
fn schema(command: &str) -> String {
    format!(
        "{}/src/answer/schema/{command}.json",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Validate `out`'s standard output against the schema of `command`
/// (`lines`: one document a line); panics naming every error.
fn validate(what: &str, command: &str, out: &Output, lines: bool) {
    let mut child = Command::new("/usr/bin/python3")
        .arg(format!(
            "{}/tests/schema/answer.py",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg(schema(command))
        .args(lines.then_some("--lines"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python3 (apt-get install python3-jsonschema)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&out.stdout)
        .expect("write the document");
    let checked = child.wait_with_output().expect("python3");
    assert!(
        checked.status.success(),
        "{what}: not a document of {command}.json:\n{}{}\n--- the document\n{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
}

/// `out`'s standard output as JSON.
fn json_of(what: &str, out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {}", text(out)))
}

/// The shape of a document: every key path (array items share their
/// array's path, `[]`) with the JSON types seen there, `null` left out.
fn shape(v: &Value) -> BTreeMap<String, Vec<&'static str>> {
    fn walk(v: &Value, path: String, out: &mut BTreeMap<String, Vec<&'static str>>) {
        let kind = match v {
            Value::Null => None,
            Value::Bool(_) => Some("boolean"),
            Value::Number(_) => Some("number"),
            Value::String(_) => Some("string"),
            Value::Array(_) => Some("array"),
            Value::Object(_) => Some("object"),
        };
        let kinds = out.entry(path.clone()).or_default();
        if let Some(k) = kind {
            if !kinds.contains(&k) {
                kinds.push(k);
                kinds.sort();
            }
        }
        match v {
            Value::Array(items) => {
                for item in items {
                    walk(item, format!("{path}[]"), out);
                }
            }
            Value::Object(map) => {
                for (k, item) in map {
                    walk(item, format!("{path}.{k}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    walk(v, String::new(), &mut out);
    out
}

/// The paths of `a` and `b` that differ: a key in one only, or a type
/// seen in both but different. A null beside a value is no difference,
/// nor is what lies beneath it, nor the items of an array empty on one
/// side (no item, no keys), nor a fire's figure (a key of a `usage`
/// object) present on one side only: each is there when its counter could
/// be read for that fire (the schemas have them optional), and one fire's
/// unit may lack a counter the next one's has (a run's `io.stat`, seen
/// on the node).
fn shape_differences(a: &Value, b: &Value) -> Vec<String> {
    let (sa, sb) = (shape(a), shape(b));
    // `path` lies beneath a null of `s`, or in an array with no item.
    let in_empty_array = |s: &BTreeMap<String, Vec<&'static str>>, path: &str| {
        let null = path
            .match_indices(['.', '['])
            .any(|(i, _)| s.get(&path[..i]).is_some_and(Vec::is_empty));
        null || path
            .match_indices("[]")
            .any(|(i, _)| !s.contains_key(&path[..i + 2]))
    };
    let figure = |path: &str| {
        path.rsplit_once('.')
            .is_some_and(|(parent, _)| parent.ends_with("usage"))
    };
    let mut diffs = Vec::new();
    for path in sa.keys().chain(sb.keys()) {
        match (sa.get(path), sb.get(path)) {
            (Some(x), Some(y)) if x.is_empty() || y.is_empty() || x == y => {}
            (None, Some(_)) | (Some(_), None) if figure(path) => {}
            (None, _) if in_empty_array(&sa, path) => {}
            (_, None) if in_empty_array(&sb, path) => {}
            (x, y) => diffs.push(format!("{path}: {x:?} against {y:?}")),
        }
    }
    diffs.sort();
    diffs.dedup();
    diffs
}

/// One command through the daemon and with `--local`: both exit `code`,
/// both are documents of `command`'s schema, and of the same shape.
fn same_answer(what: &str, command: &str, daemon: &Output, local: &Output, code: i32) {
    assert_eq!(
        daemon.status.code(),
        Some(code),
        "{what}, daemon: {}",
        text(daemon)
    );
    assert_eq!(
        local.status.code(),
        Some(code),
        "{what}, --local: {}",
        text(local)
    );
    validate(&format!("{what}, daemon"), command, daemon, false);
    validate(&format!("{what}, --local"), command, local, false);
    let (d, l) = (json_of(what, daemon), json_of(what, local));
    let diffs = shape_differences(&d, &l);
    assert!(
        diffs.is_empty(),
        "{what}: the daemon's and --local's shapes differ:\n{}\n--- daemon\n{d:#}\n--- --local\n{l:#}",
        diffs.join("\n")
    );
}

#[test]
fn a_shape_is_keys_and_types_and_a_null_or_an_empty_array_is_no_difference() {
    // A fire's figure read on one side only is no difference; of another
    // type it is.
    let read = json!({"usage": {"cpu-usec": 1, "io-read-bytes": 0}});
    let unread = json!({"usage": {"cpu-usec": 2}});
    assert!(shape_differences(&read, &unread).is_empty());
    let other = json!({"usage": {"cpu-usec": "1"}});
    assert_eq!(
        shape_differences(&read, &other),
        vec![".usage.cpu-usec: Some([\"number\"]) against Some([\"string\"])".to_string()]
    );
    let a = json!({"steps": [{"step": "gc", "ready": null, "n": 1}], "x": "s"});
    let b = json!({"steps": [{"step": "gc", "ready": {"state": "ready"}, "n": 2}], "x": "t"});
    assert!(
        shape_differences(&a, &b).is_empty(),
        "a null beside a value, and what lies beneath it"
    );
    let c = json!({"steps": [{"step": "gc", "ready": null, "n": "1"}], "x": "s"});
    assert_eq!(
        shape_differences(&a, &c),
        vec![".steps[].n: Some([\"number\"]) against Some([\"string\"])".to_string()]
    );
    let d = json!({"steps": [], "x": "s", "y": null});
    assert_eq!(
        shape_differences(&a, &d),
        vec![".y: None against Some([])".to_string()]
    );
    let e = json!({"steps": [{"step": "gc", "ready": null, "n": 1, "extra": true}], "x": "s"});
    assert_eq!(
        shape_differences(&a, &e),
        vec![".steps[].extra: None against Some([\"boolean\"])".to_string()]
    );
    assert!(shape_differences(&a, &a).is_empty());
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn every_answer_is_one_document_from_the_daemon_and_from_local() {
    let gc_id = support::unique_step_id("gc");
    let mut w = World::new("answers");
    let web = w.name("web");
    let gc = w.name("gc");
    let img = w.busybox();
    let resources = json!([
        declare::service("web", &web, &img),
        declare::step(
            &gc_id,
            &gc,
            &img,
            "echo collected; echo warned >&2",
            &["web"],
            60
        ),
    ]);

    // No daemon: every command in this process.
    let applied = w.apply_local(resources.clone());
    assert_eq!(applied.status.code(), Some(0), "{}", text(&applied));
    let local = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--json", "--local"]);
        w.mesh(&all)
    };
    let alone = [
        local(&["run", &gc_id]),
        local(&["status"]),
        local(&["suspend", &gc_id]),
        local(&["status"]),
        local(&["run", &gc_id]),
        local(&["resume", &gc_id]),
        local(&["resume", &gc_id]),
        local(&["suspend", "nope"]),
    ];
    // `logs` reads the journal in this process, daemon or not: each line
    // of the run's output is a document.
    // The journal takes the run's lines asynchronously: read until both are
    // there.
    let logs = support::wait_for(
        "both lines of the run in logs",
        Duration::from_secs(30),
        || {
            let out = w.mesh(&["logs", &gc_id, "--json"]);
            let said = String::from_utf8_lossy(&out.stdout);
            (said.contains("\"collected\"") && said.contains("\"warned\"")).then_some(out)
        },
    );
    assert_eq!(logs.status.code(), Some(0), "{}", text(&logs));
    validate("logs", "logs-line", &logs, true);
    // `history` reads the fires' end events from the journal, in this
    // process too: this world's run, once the journal has it.
    let history = support::wait_for("this run in history", Duration::from_secs(30), || {
        let out = w.mesh(&["history", &gc_id, "--json"]);
        let fires: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        fires
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f["held"] == json!([web])))
            .then_some(out)
    });
    assert_eq!(history.status.code(), Some(0), "{}", text(&history));
    validate("history", "history", &history, false);
    let fires = json_of("history", &history);
    assert!(
        fires
            .as_array()
            .is_some_and(|f| f.iter().all(|f| f["step"] == json!(gc_id))),
        "{fires:#}"
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&logs.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a line of logs --json"))
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l["message"] == "collected" && l["stream"] == "stdout")
            && lines
                .iter()
                .any(|l| l["message"] == "warned" && l["stream"] == "stderr"),
        "{lines:?}"
    );

    // The same commands through the daemon, over the same state; each
    // status of the daemon beside one from the state directory taken at
    // once (a step's figures are keys only once a fire recorded them,
    // which only the daemon's fires do).
    let d = DaemonUnit::started_with_args(&w, "--metrics-file=", resources);
    let daemon = |args: &[&str]| {
        let mut all = args.to_vec();
        all.push("--json");
        d.cli(&all)
    };
    let run = daemon(&["run", &gc_id]);
    let status = (daemon(&["status"]), local(&["status"]));
    let suspend = daemon(&["suspend", &gc_id]);
    let suspended = (daemon(&["status"]), local(&["status"]));
    let daemons = [
        run,
        status.0,
        suspend,
        suspended.0,
        daemon(&["run", &gc_id]),
        daemon(&["resume", &gc_id]),
        daemon(&["resume", &gc_id]),
        daemon(&["suspend", "nope"]),
    ];
    let locals = [
        &alone[0],
        &status.1,
        &alone[2],
        &suspended.1,
        &alone[4],
        &alone[5],
        &alone[6],
        &alone[7],
    ];
    let expected = [
        ("run", "run", 0),
        ("status", "status", 0),
        ("suspend", "suspend", 0),
        ("status of a suspended step", "status", 3),
        ("run of a suspended step", "error", 2),
        ("resume", "suspend", 0),
        ("resume again", "suspend", 0),
        ("suspend of no step", "error", 2),
    ];
    for ((daemon, local), (what, command, code)) in daemons.iter().zip(locals).zip(expected) {
        same_answer(what, command, daemon, local, code);
    }
    // And the statuses with no daemon at all.
    for (what, out, code) in [
        ("status alone", &alone[1], 0),
        ("status of a suspended step alone", &alone[3], 3),
    ] {
        assert_eq!(out.status.code(), Some(code), "{what}: {}", text(out));
        validate(what, "status", out, false);
    }

    // What each says, beyond its shape.
    let status = json_of("status", &daemons[1]);
    let local_status = json_of("status", locals[1]);
    assert_eq!(status["last-apply"]["ok"], true, "{status:#}");
    assert_eq!(status["steps"][0]["step"], json!(gc_id), "{status:#}");
    assert_eq!(status["steps-scheduled"], 1, "{status:#}");
    assert_eq!(status["daemon-listening"], true, "{status:#}");
    assert_eq!(local_status["daemon-listening"], true, "{local_status:#}");
    let alone_status = json_of("status alone", &alone[1]);
    assert_eq!(alone_status["daemon-listening"], false, "{alone_status:#}");
    let ids = |s: &Value| -> Vec<Value> {
        s["last-apply"]["lines"]
            .as_array()
            .map(|l| l.iter().map(|l| l["id"].clone()).collect())
            .unwrap_or_default()
    };
    assert_eq!(ids(&local_status), vec![json!("web"), json!(&gc_id)]);
    assert_eq!(ids(&status), ids(&local_status), "each resource's line");
    for (what, out) in [("--local", locals[3]), ("daemon", &daemons[3])] {
        let s = json_of(what, out);
        assert!(
            s["steps"][0]["suspended-since"].is_string()
                && s["attention"][0]["what"] == "step-suspended",
            "{what}: {s:#}"
        );
    }
    for (what, out) in [("--local", locals[0]), ("daemon", &daemons[0])] {
        let r = json_of(what, out);
        assert_eq!(r["outcome"]["result"], "succeeded", "{what}: {r:#}");
        assert_eq!(r["started-again"], json!([web]), "{what}: {r:#}");
    }
    for (what, out) in [("--local", locals[6]), ("daemon", &daemons[6])] {
        assert_eq!(
            json_of(what, out),
            json!({"step": gc_id, "suspended": false, "was-suspended-since": null}),
            "{what}"
        );
    }
    for (what, out) in [("--local", locals[7]), ("daemon", &daemons[7])] {
        let e = json_of(what, out);
        assert!(
            e["error"].as_str().is_some_and(|m| m.contains("nope")),
            "{what}: {e:#}"
        );
    }
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn take_answers_by_its_schema_and_says_why_it_refuses() {
    let w = World::new("answers-take");
    let folder = w.path("srv/data");
    // Declared, not applied: take reads the declaration file and records
    // the consent; no account or entry is made.
    w.write_declaration(json!([
        {"id": "ia", "type": "identity", "name": "mh-answers-take", "uid": 2_100_000_999_u32, "gid": 2_100_000_999_u32},
        {"id": "data", "type": "shared-folder", "path": folder, "access": [{"identity": "ia", "write": true}]}
    ]));
    let taken = w.mesh(&["take", "data", "--json"]);
    assert_eq!(taken.status.code(), Some(0), "{}", text(&taken));
    validate("take", "take", &taken, false);
    assert_eq!(
        json_of("take", &taken),
        json!({"id": "data", "path": folder})
    );
    for id in ["nope", "ia"] {
        let refused = w.mesh(&["take", id, "--json"]);
        assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
        validate("take refused", "error", &refused, false);
    }
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn apply_diff_and_plan_answer_one_document_from_the_daemon_and_from_local() {
    let mut w = World::new("answersapply");
    let web = w.name("web");
    let gc = w.name("gc");
    let img = w.busybox();
    let resources = json!([
        declare::service("web", &web, &img),
        declare::step("gc", &gc, &img, "echo collected", &["web"], 60),
    ]);
    let applied = w.apply_local(resources.clone());
    assert_eq!(applied.status.code(), Some(0), "{}", text(&applied));
    // The same declaration (nothing would change), one with a label more
    // on web (it would be recreated), one refused, one of nothing.
    let same = w.declaration("same.json", resources.clone());
    let mut labelled = declare::service("web", &web, &img);
    labelled["labels"] = json!({"tier": "front"});
    let changed = w.declaration(
        "changed.json",
        json!([
            labelled,
            declare::step("gc", &gc, &img, "echo collected", &["web"], 60)
        ]),
    );
    let refused = w.declaration("refused.json", json!([{"type": "container", "id": "x"}]));
    let empty = w.declaration("empty.json", json!([]));
    let commands: [(&str, &str, Vec<&str>, i32); 7] = [
        ("diff of the same", "apply", vec!["diff", &same], 0),
        ("diff of a change", "apply", vec!["diff", &changed], 1),
        ("diff of a refused file", "apply", vec!["diff", &refused], 2),
        ("diff of nothing", "apply", vec!["diff", &empty], 2),
        (
            "apply of a refused file",
            "apply",
            vec!["apply", &refused],
            2,
        ),
        ("apply of the same", "apply", vec!["apply", &same], 0),
        ("plan", "plan", vec!["plan", "gc"], 0),
    ];
    let local = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--json", "--local"]);
        w.mesh(&all)
    };
    let alone: Vec<Output> = commands.iter().map(|(_, _, args, _)| local(args)).collect();
    let d = DaemonUnit::started_with_args(&w, "--metrics-file=", resources);
    let through: Vec<Output> = commands
        .iter()
        .map(|(_, _, args, _)| {
            let mut all = args.clone();
            all.push("--json");
            d.cli(&all)
        })
        .collect();
    for (((what, command, _, code), daemon), local) in commands.iter().zip(&through).zip(&alone) {
        same_answer(what, command, daemon, local, *code);
    }
    // What each says, beyond its shape.
    for (what, out) in [("--local", &alone[1]), ("daemon", &through[1])] {
        let r = json_of(what, out);
        assert_eq!(r["changed"], true, "{what}: {r:#}");
        assert!(
            r["lines"].as_array().is_some_and(|l| l
                .iter()
                .any(|l| l["id"] == "web" && l["action"] != "unchanged")),
            "{what}: {r:#}"
        );
    }
    for (what, out) in [("--local", &alone[2]), ("daemon", &through[2])] {
        let r = json_of(what, out);
        assert_eq!(r["accepted"], false, "{what}: {r:#}");
        assert!(
            r["problems"].as_array().is_some_and(|p| !p.is_empty()),
            "{what}: {r:#}"
        );
    }
    for (what, out) in [("--local", &alone[3]), ("daemon", &through[3])] {
        let r = json_of(what, out);
        assert_eq!(r["empty"]["applied"], 2, "{what}: {r:#}");
    }
    for (what, out) in [("--local", &alone[6]), ("daemon", &through[6])] {
        let r = json_of(what, out);
        assert_eq!(r["step"], "gc", "{what}: {r:#}");
        assert_eq!(r["stop-order"], json!([web]), "{what}: {r:#}");
    }
    // A refusal said for people names the file, on standard error, from
    // either side.
    for out in [
        w.mesh(&["apply", &refused, "--local"]),
        d.cli(&["apply", &refused]),
    ] {
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("{refused}: refused, nothing changed; ")),
            "{err}"
        );
    }
}
