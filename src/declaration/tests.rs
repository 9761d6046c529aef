//! Unit tests of parse, validation and lint: each refusal is asserted by the
//! resource and field it names and the words of its message.

#![allow(clippy::unwrap_used)]

use std::net::IpAddr;
use std::time::Duration;

use serde_json::{json, Value};

use super::*;

const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn image() -> String {
    format!("127.0.0.1:5000/tools/app@sha256:{HEX}")
}

/// A valid service container.
pub(super) fn service(id: &str, name: &str) -> Value {
    json!({"id": id, "type": "container", "name": name, "image": image()})
}

/// A valid scheduled step.
fn step(id: &str) -> Value {
    json!({
        "id": id, "type": "container", "name": format!("{id}-step"), "image": image(),
        "schedule": "0 3 * * *", "timeout": 600
    })
}

fn file(id: &str, path: &str) -> Value {
    json!({"id": id, "type": "file", "path": path, "content": "x"})
}

/// `value` with `key` set.
fn with(mut value: Value, key: &str, field: Value) -> Value {
    value[key] = field;
    value
}

fn without(mut value: Value, key: &str) -> Value {
    value.as_object_mut().unwrap().remove(key);
    value
}

fn declaration(resources: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"declaration": 1, "resources": resources})).unwrap()
}

pub(super) fn accept(resources: Value) -> Declaration {
    match parse(&declaration(resources)) {
        Ok(d) => d,
        Err(refusal) => panic!("refused:\n{refusal}"),
    }
}

fn refuse_bytes(bytes: &[u8]) -> Vec<Problem> {
    match parse(bytes) {
        Ok(d) => panic!("accepted: {d:?}"),
        Err(refusal) => refusal.problems,
    }
}

pub(super) fn refuse(resources: Value) -> Vec<Problem> {
    refuse_bytes(&declaration(resources))
}

/// Assert that exactly one problem names this resource and field, and that
/// its message contains `words`.
#[track_caller]
pub(super) fn assert_problem(
    problems: &[Problem],
    resource: Option<&str>,
    field: Option<&str>,
    words: &str,
) {
    let matching: Vec<&Problem> = problems
        .iter()
        .filter(|p| p.resource.as_deref() == resource && p.field.as_deref() == field)
        .collect();
    assert_eq!(
        matching.len(),
        1,
        "expected one problem at {resource:?} {field:?}, got: {problems:#?}"
    );
    assert!(
        matching[0].message.contains(words),
        "message {:?} lacks {words:?}",
        matching[0].message
    );
}

/// The single problem of a refusal.
#[track_caller]
fn only(problems: Vec<Problem>) -> Problem {
    assert_eq!(problems.len(), 1, "{problems:#?}");
    problems.into_iter().next().unwrap()
}

// ---- the envelope ----

#[test]
fn not_json_is_one_line_with_its_position() {
    let p = only(refuse_bytes(b"{\"declaration\": 1,\n  \"resources\": [}"));
    assert_eq!((p.resource, p.field), (None, None));
    assert!(p.message.starts_with("not valid JSON: "), "{}", p.message);
    assert!(p.message.contains("line 2 column 17"), "{}", p.message);

    let p = only(refuse_bytes(b""));
    assert!(p.message.contains("EOF while parsing"), "{}", p.message);

    let p = only(refuse_bytes(
        b"{\"declaration\": 1, \"resources\": []} trailing",
    ));
    assert!(p.message.contains("trailing characters"), "{}", p.message);

    let p = only(refuse_bytes(b"\xff\xfe"));
    assert!(p.message.starts_with("not valid JSON: "), "{}", p.message);
}

#[test]
fn repeated_keys_are_refused_with_their_position() {
    let text = br#"{"declaration": 1, "resources": [{"id": "a", "id": "b"}]}"#;
    let p = only(refuse_bytes(text));
    assert!(
        p.message.contains("duplicate key \"id\" at line 1 column"),
        "{}",
        p.message
    );
}

#[test]
fn not_an_object_is_one_line() {
    for (text, found) in [
        ("[]", "found an array"),
        ("1", "found a number"),
        ("\"x\"", "found a string"),
        ("null", "found null"),
    ] {
        let p = only(refuse_bytes(text.as_bytes()));
        assert!(p.message.starts_with("a declaration is a JSON object"));
        assert!(p.message.ends_with(found), "{}", p.message);
    }
}

#[test]
fn version_missing_or_not_1_is_one_line() {
    // Nothing else is reported: an unknown version's fields mean nothing here.
    let p = only(refuse_bytes(br#"{"resources": 5, "extra": true}"#));
    assert_eq!(p.field.as_deref(), Some("declaration"));
    assert_eq!(
        p.to_string(),
        "declaration: missing: expected \"declaration\": 1"
    );

    for (version, shown) in [
        ("2", "2"),
        ("\"1\"", "\"1\""),
        ("1.0", "1.0"),
        ("0", "0"),
        ("null", "null"),
    ] {
        let text = format!(r#"{{"declaration": {version}, "resources": [], "extra": 1}}"#);
        let p = only(refuse_bytes(text.as_bytes()));
        assert_eq!(
            p.to_string(),
            format!("declaration: this host reads declaration version 1 only, found {shown}")
        );
    }
}

#[test]
fn resources_must_be_an_array() {
    let p = only(refuse_bytes(br#"{"declaration": 1}"#));
    assert_eq!(p.field.as_deref(), Some("resources"));
    assert!(p.message.starts_with("missing"));

    let p = only(refuse_bytes(br#"{"declaration": 1, "resources": {}}"#));
    assert_eq!(
        p.to_string(),
        "resources: expected an array of resources, found an object"
    );
}

#[test]
fn an_empty_declaration_is_accepted() {
    assert_eq!(accept(json!([])).resources, vec![]);
}

// ---- unknown and missing fields, types ----

#[test]
fn unknown_fields_are_refused_everywhere_with_their_path() {
    let app = with(
        service("app", "app"),
        "mounts",
        json!([{"source": "/srv", "target": "/srv", "readonly": true, "read-only": true}]),
    );
    let problems = refuse_bytes(
        &serde_json::to_vec(&json!({
            "declaration": 1,
            "resources": [
                with(app, "imagee", json!("x")),
                with(file("cfg", "/etc/x"), "schedule", json!("* * * * *")),
                with(without(service("x", "xx"), "id"), "mounts", json!([{"source": "/a", "target": "/b", "rw": 1}])),
            ],
            "extra": 1,
            "odd key\n": 2,
        }))
        .unwrap(),
    );
    assert_problem(&problems, None, Some("extra"), "unknown field");
    assert_problem(&problems, None, Some("[\"odd key\\n\"]"), "unknown field");
    assert_problem(&problems, Some("app"), Some("imagee"), "unknown field");
    assert_problem(
        &problems,
        Some("app"),
        Some("mounts[0].readonly"),
        "unknown field",
    );
    assert_problem(&problems, Some("cfg"), Some("schedule"), "unknown field");
    assert_problem(
        &problems,
        Some("resources[2]"),
        Some("mounts[0].rw"),
        "unknown field",
    );
    assert_problem(&problems, Some("resources[2]"), Some("id"), "missing");
    assert_eq!(problems.len(), 7, "{problems:#?}");
    let text = Refusal { problems }.to_string();
    assert!(
        text.contains("app: mounts[0].readonly: unknown field"),
        "{text}"
    );
    assert!(
        text.contains("resources[2]: mounts[0].rw: unknown field"),
        "{text}"
    );
}

#[test]
fn missing_required_fields_are_each_named() {
    let problems = refuse(json!([
        {"id": "c", "type": "container"},
        {"id": "f", "type": "file"},
        {"id": "d", "type": "directory"},
        {"id": "u", "type": "unit"},
        {"id": "m", "type": "container", "name": "mm", "image": image(), "mounts": [{}]},
        {"type": "directory", "path": "/x"},
    ]));
    for (resource, field) in [
        ("c", "name"),
        ("c", "image"),
        ("f", "path"),
        ("d", "path"),
        ("u", "name"),
        ("u", "content"),
        ("m", "mounts[0].source"),
        ("m", "mounts[0].target"),
        ("resources[5]", "id"),
    ] {
        assert_problem(&problems, Some(resource), Some(field), "missing");
    }
    assert_problem(
        &problems,
        Some("f"),
        Some("content"),
        "missing: give content (UTF-8 text) or content-base64",
    );
    assert_eq!(problems.len(), 10, "{problems:#?}");
}

#[test]
fn wrong_json_types_are_named_by_path() {
    let problems = refuse(json!([
        {"id": "a", "type": "container", "name": 5, "image": image(),
         "command": ["run", 7], "mounts": "nope", "env": {"A": 1}, "run-once": "yes",
         "dns": null, "module": ["m"]},
        {"id": "u", "type": "unit", "name": "x.service", "content": "", "enabled": "true"},
    ]));
    assert_problem(
        &problems,
        Some("a"),
        Some("name"),
        "invalid type: integer `5`, expected a string",
    );
    assert_problem(
        &problems,
        Some("a"),
        Some("command[1]"),
        "invalid type: integer `7`, expected a string",
    );
    assert_problem(
        &problems,
        Some("a"),
        Some("mounts"),
        "invalid type: string \"nope\", expected an array",
    );
    assert_problem(&problems, Some("a"), Some("env.A"), "expected a string");
    assert_problem(&problems, Some("a"), Some("run-once"), "expected a boolean");
    assert_problem(
        &problems,
        Some("a"),
        Some("dns"),
        "invalid type: null, expected an array",
    );
    assert_problem(
        &problems,
        Some("a"),
        Some("module"),
        "invalid type: array, expected a string",
    );
    assert_problem(&problems, Some("u"), Some("enabled"), "expected a boolean");
    assert_eq!(problems.len(), 8, "{problems:#?}");
}

#[test]
fn a_mount_that_is_not_an_object_is_named() {
    let problems = refuse(json!([with(
        service("a", "aa"),
        "mounts",
        json!(["/srv:/srv"])
    )]));
    assert_problem(
        &problems,
        Some("a"),
        Some("mounts[0]"),
        "expected a mount object",
    );
}

#[test]
fn unknown_or_missing_type_is_refused() {
    let problems = refuse(json!([
        {"id": "v", "type": "bucket", "name": "data"},
        {"id": "n"},
        {"id": "t", "type": 3},
        "container",
        {"id": "bad id", "type": "queue"},
    ]));
    assert_problem(
        &problems,
        Some("v"),
        Some("type"),
        "unknown type \"bucket\": one of container, file, directory, unit, identity, shared-folder, network, volume",
    );
    assert_problem(
        &problems,
        Some("n"),
        Some("type"),
        "missing: one of container",
    );
    assert_problem(&problems, Some("t"), Some("type"), "expected a string");
    assert_problem(
        &problems,
        Some("resources[3]"),
        None,
        "a resource is an object, found a string",
    );
    assert_problem(&problems, Some("resources[4]"), Some("id"), "may hold only");
    assert_problem(
        &problems,
        Some("resources[4]"),
        Some("type"),
        "unknown type \"queue\"",
    );
    assert_eq!(problems.len(), 6, "{problems:#?}");
}

// ---- ids and uniqueness ----

#[test]
fn ids_must_be_letters_digits_dash_underscore_dot() {
    for (id, words) in [
        (
            "my app",
            "\"my app\" contains ' ': an id may hold only ASCII letters, digits, '-', '_' and '.'",
        ),
        ("a/b", "contains '/'"),
        ("a:b", "contains ':'"),
        ("café", "contains 'é'"),
        ("line\nbreak", "\"line\\nbreak\" contains '\\n'"),
        ("", "an id must not be empty"),
        ("..", "an id must not be \"..\""),
        (&"a".repeat(49), "at most 48"),
    ] {
        let p = only(refuse(json!([file(id, "/etc/x")])));
        assert_eq!(p.resource.as_deref(), Some("resources[0]"), "{id:?}");
        assert_eq!(p.field.as_deref(), Some("id"));
        assert!(p.message.contains(words), "{id:?}: {}", p.message);
    }
    accept(json!([
        file("A.b-c_9", "/etc/x"),
        file(&"a".repeat(48), "/etc/y")
    ]));
}

#[test]
fn modules_follow_the_id_rules() {
    let p = only(refuse(json!([with(
        file("f", "/x"),
        "module",
        json!("my module")
    )])));
    assert_eq!(
        (p.resource.as_deref(), p.field.as_deref()),
        (Some("f"), Some("module"))
    );
    assert!(
        p.message.contains("a module name may hold only"),
        "{}",
        p.message
    );
}

#[test]
fn duplicate_ids_are_refused_on_the_later_resource() {
    let problems = refuse(json!([
        file("a", "/x"),
        service("a", "aa"),
        file("b", "/y"),
        file("a", "/z")
    ]));
    assert_problem(
        &problems,
        Some("resources[1]"),
        Some("id"),
        "\"a\" is already the id of resources[0]",
    );
    assert_problem(
        &problems,
        Some("resources[3]"),
        Some("id"),
        "\"a\" is already the id of resources[0]",
    );
    assert_eq!(problems.len(), 2, "{problems:#?}");
}

#[test]
fn duplicate_container_names_paths_and_units_are_refused() {
    let problems = refuse(json!([
        service("a", "web"),
        service("b", "web"),
        file("f", "/etc/app"),
        {"id": "d", "type": "directory", "path": "/etc//app/"},
        {"id": "u1", "type": "unit", "name": "x.service", "content": ""},
        {"id": "u2", "type": "unit", "name": "x.service", "content": ""},
    ]));
    assert_problem(
        &problems,
        Some("b"),
        Some("name"),
        "\"web\" is already the name of container a",
    );
    assert_problem(
        &problems,
        Some("d"),
        Some("path"),
        "\"/etc/app\" is already declared by f",
    );
    assert_problem(
        &problems,
        Some("u2"),
        Some("name"),
        "\"x.service\" is already the name of unit u1",
    );
    assert_eq!(problems.len(), 3, "{problems:#?}");
}

// ---- images ----

#[test]
fn images_must_be_pinned_by_digest() {
    let refused = [
        ("nginx:1.27", "is not pinned by digest"),
        ("nginx", "is not pinned by digest"),
        ("127.0.0.1:5000/registry", "is not pinned by digest"),
        ("nginx@sha256:abc", "64 lowercase hex"),
        (
            &format!("nginx@sha256:{}", HEX.to_uppercase()),
            "64 lowercase hex",
        ),
        (&format!("nginx@sha512:{HEX}"), "64 lowercase hex"),
        (&format!("nginx@sha256:{HEX}0"), "64 lowercase hex"),
        (
            &format!("Nginx@sha256:{HEX}"),
            "\"Nginx\" is not a valid repository name component",
        ),
        (&format!("@sha256:{HEX}"), "has no repository"),
        (&format!("nginx:@sha256:{HEX}"), "is not a valid tag"),
        (&format!("nginx:-x@sha256:{HEX}"), "is not a valid tag"),
        (
            &format!("bad_host:5000/x/y@sha256:{HEX}"),
            "\"bad_host:5000\" is not a valid registry host",
        ),
        (&format!("host:port/x@sha256:{HEX}"), "has an invalid port"),
        (
            &format!("a//b@sha256:{HEX}"),
            "\"\" is not a valid repository name component",
        ),
        (
            &format!("a-@sha256:{HEX}"),
            "not a valid repository name component",
        ),
        (&format!("a@b@sha256:{HEX}"), "64 lowercase hex"),
    ];
    for (reference, words) in refused {
        let p = only(refuse(json!([with(
            service("a", "aa"),
            "image",
            json!(reference)
        )])));
        assert_eq!(
            (p.resource.as_deref(), p.field.as_deref()),
            (Some("a"), Some("image"))
        );
        assert!(p.message.contains(words), "{reference}: {}", p.message);
    }
    let accepted = [
        (format!("nginx@sha256:{HEX}"), "nginx", None),
        (format!("nginx:1.27@sha256:{HEX}"), "nginx", Some("1.27")),
        (
            format!("127.0.0.1:5000/registry@sha256:{HEX}"),
            "127.0.0.1:5000/registry",
            None,
        ),
        (
            format!("registry.example.com:443/team/my_app__x.y-z:v1.2_3@sha256:{HEX}"),
            "registry.example.com:443/team/my_app__x.y-z",
            Some("v1.2_3"),
        ),
        (format!("localhost/app@sha256:{HEX}"), "localhost/app", None),
    ];
    for (reference, repository, tag) in accepted {
        let d = accept(json!([with(service("a", "aa"), "image", json!(reference))]));
        let image = &d.container("a").unwrap().image;
        assert_eq!(image.as_str(), reference);
        assert_eq!(image.repository(), repository);
        assert_eq!(image.tag(), tag);
        assert_eq!(image.digest(), format!("sha256:{HEX}"));
        assert_eq!(image.pinned(), format!("{repository}@sha256:{HEX}"));
    }
}

// ---- roles, schedules and windows ----

#[test]
fn run_once_and_schedule_are_exclusive() {
    let p = only(refuse(json!([with(step("s"), "run-once", json!(true))])));
    assert_eq!(
        (p.resource.as_deref(), p.field.as_deref()),
        (Some("s"), Some("run-once"))
    );
    assert!(p.message.contains("run-once and schedule are exclusive"));
    // `run-once: false` says "not run-once" and is fine with a schedule.
    accept(json!([with(step("s"), "run-once", json!(false))]));
}

#[test]
fn while_stopped_needs_a_schedule() {
    let held = service("db", "db");
    let problems = refuse(json!([
        held,
        with(service("a", "aa"), "while-stopped", json!(["db"])),
        with(
            with(service("b", "bb"), "run-once", json!(true)),
            "while-stopped",
            json!(["db"])
        ),
        // An empty list asks for nothing.
        with(service("c", "cc"), "while-stopped", json!([])),
    ]));
    assert_problem(
        &problems,
        Some("a"),
        Some("while-stopped"),
        "needs a schedule",
    );
    assert_problem(
        &problems,
        Some("b"),
        Some("while-stopped"),
        "needs a schedule",
    );
    assert_eq!(problems.len(), 2, "{problems:#?}");
}

#[test]
fn while_stopped_may_not_name_the_step_itself() {
    let problems = refuse(json!([
        service("db", "db"),
        with(step("s"), "while-stopped", json!(["db", "s"]))
    ]));
    assert_problem(
        &problems,
        Some("s"),
        Some("while-stopped[1]"),
        "this step itself",
    );
    assert_eq!(problems.len(), 1);
}

#[test]
fn while_stopped_names_containers_of_this_declaration() {
    let problems = refuse(json!([
        file("cfg", "/etc/x"),
        {"id": "dir", "type": "directory", "path": "/srv"},
        with(step("s"), "while-stopped", json!(["nothing", "cfg", "dir", "bad id"])),
    ]));
    assert_problem(
        &problems,
        Some("s"),
        Some("while-stopped[0]"),
        "\"nothing\": no container by that id",
    );
    assert_problem(
        &problems,
        Some("s"),
        Some("while-stopped[1]"),
        "\"cfg\": no container by that id (it is a file)",
    );
    assert_problem(
        &problems,
        Some("s"),
        Some("while-stopped[2]"),
        "no container by that id (it is a directory)",
    );
    assert_problem(
        &problems,
        Some("s"),
        Some("while-stopped[3]"),
        "may hold only",
    );
    assert_eq!(problems.len(), 4, "{problems:#?}");
}

#[test]
fn while_stopped_holds_only_service_containers_named_once() {
    let problems = refuse(json!([
        with(service("mig", "mig"), "run-once", json!(true)),
        step("other"),
        service("db", "db"),
        with(
            step("s"),
            "while-stopped",
            json!(["mig", "other", "db", "db"])
        ),
    ]));
    assert_problem(
        &problems,
        Some("s"),
        Some("while-stopped[0]"),
        "\"mig\" is a run-once step, not a service container",
    );
    assert_problem(
        &problems,
        Some("s"),
        Some("while-stopped[1]"),
        "\"other\" is a scheduled step",
    );
    assert_problem(
        &problems,
        Some("s"),
        Some("while-stopped[3]"),
        "\"db\" is already named at while-stopped[2]",
    );
    assert_eq!(problems.len(), 3, "{problems:#?}");
}

#[test]
fn while_stopped_stays_within_the_module() {
    let problems = refuse(json!([
        with(service("db", "db"), "module", json!("shop")),
        service("loose", "loose"),
        with(
            with(step("s"), "module", json!("registry")),
            "while-stopped",
            json!(["db", "loose"])
        ),
        with(step("t"), "while-stopped", json!(["db"])),
    ]));
    assert_problem(
        &problems,
        Some("s"),
        Some("while-stopped[0]"),
        "\"db\" is in module \"shop\", not in this step's module \"registry\"",
    );
    assert_problem(
        &problems,
        Some("s"),
        Some("while-stopped[1]"),
        "\"loose\" is in no module",
    );
    assert_problem(
        &problems,
        Some("t"),
        Some("while-stopped[0]"),
        "\"db\" is in module \"shop\", and this step is in none",
    );
    assert_eq!(problems.len(), 3, "{problems:#?}");
    // Same module, or no modules at all: fine.
    accept(json!([
        with(service("db", "db"), "module", json!("shop")),
        with(
            with(step("s"), "module", json!("shop")),
            "while-stopped",
            json!(["db"])
        ),
        service("x", "xx"),
        with(step("t"), "while-stopped", json!(["x"])),
    ]));
}

#[test]
fn schedule_zone_needs_a_schedule_and_a_known_zone() {
    let p = only(refuse(json!([with(
        service("a", "aa"),
        "schedule-zone",
        json!("Europe/Berlin")
    )])));
    assert_eq!(
        p.to_string(),
        "a: schedule-zone: schedule-zone needs a schedule"
    );

    for zone in ["Mars/Olympus", "europe/berlin", "", "CEST"] {
        let p = only(refuse(json!([with(
            step("s"),
            "schedule-zone",
            json!(zone)
        )])));
        assert_eq!(p.field.as_deref(), Some("schedule-zone"));
        assert!(
            p.message.contains("is not an IANA time zone name"),
            "{}",
            p.message
        );
    }
    let d = accept(json!([with(
        step("s"),
        "schedule-zone",
        json!("America/New_York")
    )]));
    assert_eq!(
        d.step("s").unwrap().schedule.zone,
        Some(chrono_tz::America::New_York)
    );
}

/// The declaration takes the cron engine's verdict and carries its message.
/// Holds for the stub engine and the real one alike.
#[test]
fn schedule_is_judged_by_the_cron_engine() {
    for expr in [
        "0 3 * * *",
        "61 * * * *",
        "0 0 30 2 *",
        "* * * *",
        "@midnight",
        "0 */5 * * 1-5",
    ] {
        let result = parse(&declaration(json!([with(
            step("s"),
            "schedule",
            json!(expr)
        )])));
        match crate::cron::CronSchedule::parse(expr) {
            Ok(cron) => {
                let d = result.unwrap();
                assert_eq!(d.step("s").unwrap().schedule.cron, cron);
            }
            Err(e) => {
                let p = only(result.unwrap_err().problems);
                assert_eq!(
                    (p.resource.as_deref(), p.field.as_deref()),
                    (Some("s"), Some("schedule"))
                );
                assert_eq!(p.message, format!("{expr:?}: {e}"));
            }
        }
    }
}

/// Needs the real cron engine: on this branch `src/cron.rs` is a stub that
/// accepts anything.
#[test]
fn bad_cron_expressions_are_refused_at_schedule() {
    for expr in [
        "61 * * * *",
        "0 0 30 2 *",
        "* * * *",
        "0 0 * * * *",
        "5-1 * * * *",
        "not cron",
    ] {
        let p = only(refuse(json!([with(step("s"), "schedule", json!(expr))])));
        assert_eq!(
            (p.resource.as_deref(), p.field.as_deref()),
            (Some("s"), Some("schedule"))
        );
        assert!(
            p.message.starts_with(&format!("{expr:?}: ")),
            "{}",
            p.message
        );
    }
}

#[test]
fn timeout_is_a_positive_whole_number_of_seconds_on_a_step() {
    for (timeout, words) in [
        (
            json!(0),
            "must be a whole number of seconds, at least 1, found 0",
        ),
        (json!(-5), "found -5"),
        (json!(1.5), "found 1.5"),
        (json!("60"), "found a string"),
        (json!(2_592_001), "more than the 2592000 (30 days) taken"),
    ] {
        let p = only(refuse(json!([with(step("s"), "timeout", timeout.clone())])));
        assert_eq!(
            (p.resource.as_deref(), p.field.as_deref()),
            (Some("s"), Some("timeout")),
            "{timeout}"
        );
        assert!(p.message.contains(words), "{timeout}: {}", p.message);
    }
    let p = only(refuse(json!([with(
        service("a", "aa"),
        "timeout",
        json!(30)
    )])));
    assert_eq!(
        p.to_string(),
        "a: timeout: timeout needs run-once or a schedule: a service runs until it is stopped"
    );

    let d = accept(json!([with(
        with(service("m", "mm"), "run-once", json!(true)),
        "timeout",
        json!(90)
    )]));
    let m = d.container("m").unwrap();
    assert_eq!(
        (m.role.clone(), m.timeout),
        (Role::RunOnce, Some(Duration::from_secs(90)))
    );
}

#[test]
fn restart_on_names_file_resources_of_a_service() {
    let problems = refuse(json!([
        file("cfg", "/etc/x"),
        service("db", "db"),
        with(
            service("a", "aa"),
            "restart-on",
            json!(["cfg", "db", "gone", "cfg"])
        ),
        with(step("s"), "restart-on", json!(["cfg"])),
    ]));
    assert_problem(
        &problems,
        Some("a"),
        Some("restart-on[1]"),
        "\"db\": no file by that id (it is a container)",
    );
    assert_problem(
        &problems,
        Some("a"),
        Some("restart-on[2]"),
        "\"gone\": no file by that id",
    );
    assert_problem(
        &problems,
        Some("a"),
        Some("restart-on[3]"),
        "already named at restart-on[0]",
    );
    assert_problem(
        &problems,
        Some("s"),
        Some("restart-on"),
        "applies to a service container",
    );
    assert_eq!(problems.len(), 4, "{problems:#?}");
}

// ---- container fields ----

#[test]
fn dns_entries_must_be_ip_addresses() {
    let p = only(refuse(json!([with(
        service("a", "aa"),
        "dns",
        json!(["9.9.9.9", "dns.google", "2001:db8::1"])
    )])));
    assert_eq!(
        p.to_string(),
        "a: dns[1]: \"dns.google\" is not an IP address (names are refused: a resolver is given by its address)"
    );
    let d = accept(json!([with(
        service("a", "aa"),
        "dns",
        json!(["9.9.9.9", "2001:db8::1"])
    )]));
    let expected: Vec<IpAddr> = vec!["9.9.9.9".parse().unwrap(), "2001:db8::1".parse().unwrap()];
    assert_eq!(d.container("a").unwrap().dns, expected);

    let host = with(service("h", "hh"), "network", json!("host"));
    let p = only(refuse(json!([with(host, "dns", json!(["9.9.9.9"]))])));
    assert_eq!(
        p.to_string(),
        "h: dns: dns cannot be set with network \"host\": the container shares the host's resolver"
    );
}

#[test]
fn paths_must_be_absolute_without_dotdot() {
    let problems = refuse(json!([
        file("f", "etc/app.conf"),
        {"id": "d", "type": "directory", "path": "/srv/../etc"},
        {"id": "r", "type": "directory", "path": "/"},
        with(with(service("a", "aa"), "env-files", json!(["/etc/ok.env", "app.env"])), "mounts", json!([
            {"source": "/srv/data", "target": "data"},
            {"source": "./data", "target": "/a"},
            {"source": "data/x", "target": "/b"},
            {"source": "~/x", "target": "/c"},
            {"source": "/srv/../x", "target": "/d"},
            {"source": "/srv", "target": "/"},
        ])),
    ]));
    assert_problem(
        &problems,
        Some("f"),
        Some("path"),
        "\"etc/app.conf\" is a relative path: it must start with '/'",
    );
    assert_problem(&problems, Some("d"), Some("path"), "has a '..' component");
    assert_problem(
        &problems,
        Some("r"),
        Some("path"),
        "the root directory itself",
    );
    assert_problem(
        &problems,
        Some("a"),
        Some("env-files[1]"),
        "is a relative path",
    );
    assert_problem(
        &problems,
        Some("a"),
        Some("mounts[0].target"),
        "is a relative path",
    );
    for i in 1..=3 {
        assert_problem(
            &problems,
            Some("a"),
            Some(&format!("mounts[{i}].source")),
            "is a relative path: a mount source is an absolute path or a volume name",
        );
    }
    assert_problem(
        &problems,
        Some("a"),
        Some("mounts[4].source"),
        "has a '..' component",
    );
    assert_problem(
        &problems,
        Some("a"),
        Some("mounts[5].target"),
        "cannot cover the container's root",
    );
    assert_eq!(problems.len(), 10, "{problems:#?}");
}

#[test]
fn paths_are_kept_in_normal_form() {
    let d = accept(json!([
        file("f", "/etc//app/./x.conf"),
        with(
            service("a", "aa"),
            "mounts",
            json!([{"source": "/srv/data/", "target": "/data//"}])
        ),
    ]));
    let ResourceKind::File(f) = &d.get("f").unwrap().kind else {
        panic!()
    };
    assert_eq!(f.path.as_str(), "/etc/app/x.conf");
    let mount = &d.container("a").unwrap().mounts[0];
    assert_eq!(
        mount.source,
        MountSource::Path(AbsPath::try_from("/srv/data").unwrap())
    );
    assert_eq!(mount.target.as_str(), "/data");
    assert!(!mount.read_only);
}

#[test]
fn mount_targets_are_distinct() {
    let p = only(refuse(json!([with(
        service("a", "aa"),
        "mounts",
        json!([
            {"source": "/x", "target": "/data"},
            {"source": "vol", "target": "/data/"},
        ])
    )])));
    assert_eq!(
        p.to_string(),
        "a: mounts[1].target: /data is already the target of mounts[0]"
    );
}

#[test]
fn volume_and_network_names_are_checked() {
    let problems = refuse(json!([
        with(
            service("a", "aa"),
            "mounts",
            json!([
                {"source": "my volume", "target": "/a"},
                {"source": "-vol", "target": "/b"},
                {"source": "v", "target": "/c"},
            ])
        ),
        with(service("b", "bb"), "network", json!("my net")),
        with(service("c", "cc"), "network", json!("vpn:db")),
    ]));
    assert_problem(
        &problems,
        Some("a"),
        Some("mounts[0].source"),
        "\"my volume\" contains ' ': a volume name must match [a-zA-Z0-9][a-zA-Z0-9_.-]+",
    );
    assert_problem(
        &problems,
        Some("a"),
        Some("mounts[1].source"),
        "starts with '-'",
    );
    assert_problem(&problems, Some("a"), Some("mounts[2].source"), "too short");
    assert_problem(
        &problems,
        Some("b"),
        Some("network"),
        "a network name must match",
    );
    assert_problem(&problems, Some("c"), Some("network"), "contains ':'");
    assert_eq!(problems.len(), 5, "{problems:#?}");

    let d = accept(json!([
        with(
            with(service("a", "aa"), "network", json!("host")),
            "mounts",
            json!([{"source": "data_1.x", "target": "/d", "read-only": true}])
        ),
        with(service("b", "bb"), "network", json!("none")),
        with(service("c", "cc"), "network", json!("shop-net")),
    ]));
    assert_eq!(d.container("a").unwrap().network, Some(Network::Host));
    assert_eq!(d.container("b").unwrap().network, Some(Network::None));
    assert_eq!(
        d.container("c").unwrap().network,
        Some(Network::Named(NetworkName::try_from("shop-net").unwrap()))
    );
    let mount = &d.container("a").unwrap().mounts[0];
    assert_eq!(
        mount.source,
        MountSource::Volume(VolumeName::try_from("data_1.x").unwrap())
    );
    assert!(mount.read_only);
}

#[test]
fn container_names_follow_the_runtime_rule() {
    for (name, words) in [
        ("a", "too short"),
        ("-web", "starts with '-'"),
        ("web app", "contains ' '"),
        ("/web", "starts with '/'"),
    ] {
        let p = only(refuse(json!([service("a", name)])));
        assert_eq!(p.field.as_deref(), Some("name"));
        assert!(p.message.contains(words), "{name}: {}", p.message);
    }
}

#[test]
fn user_is_a_number_or_a_name_with_an_optional_group() {
    for user in [
        "",
        "1000:",
        ":1000",
        "-1",
        "+5",
        "1000:1000:1",
        "4294967295",
        "99999999999",
        "1 000",
        "www data",
        "9lives",
        "a-very-long-user-name-of-33-chars",
    ] {
        let p = only(refuse(json!([with(
            service("a", "aa"),
            "user",
            json!(user)
        )])));
        assert_eq!(p.field.as_deref(), Some("user"), "{user}");
        assert!(
            p.message.contains("is not \"USER\" or \"USER:GROUP\""),
            "{}",
            p.message
        );
    }
    for user in [
        "1000",
        "0:0",
        "65534:100",
        "root",
        "unit:root",
        "www-data:1000",
        "_apt",
    ] {
        let d = accept(json!([with(service("a", "aa"), "user", json!(user))]));
        let got = d.container("a").unwrap().user.clone().expect("a user");
        assert_eq!(got.to_string(), user, "read back as written");
    }
    let d = accept(json!([with(service("a", "aa"), "user", json!("unit:0"))]));
    assert_eq!(
        d.container("a").unwrap().user,
        Some(UserSpec {
            user: crate::declaration::types::Principal::Name("unit".into()),
            group: Some(crate::declaration::types::Principal::Id(0)),
        })
    );
}

#[test]
fn command_and_env_are_checked() {
    let problems = refuse(json!([
        with(service("a", "aa"), "command", json!([])),
        with(
            service("b", "bb"),
            "env",
            json!({"A=B": "1", "": "2", "OK": "x\u{0}y"})
        ),
    ]));
    assert_problem(&problems, Some("a"), Some("command"), "must not be empty");
    assert_problem(
        &problems,
        Some("b"),
        Some("env[\"A=B\"]"),
        "must not contain '='",
    );
    assert_problem(&problems, Some("b"), Some("env[\"\"]"), "must not be empty");
    assert_problem(
        &problems,
        Some("b"),
        Some("env.OK"),
        "the value contains a NUL character",
    );
    assert_eq!(problems.len(), 4, "{problems:#?}");
}

// ---- files, directories, units ----

#[test]
fn content_and_content_base64_are_exclusive() {
    let problems = refuse(json!([
        with(file("both", "/a"), "content-base64", json!("eA==")),
        without(file("neither", "/b"), "content"),
        with(
            without(file("bad", "/c"), "content"),
            "content-base64",
            json!("not base64!")
        ),
    ]));
    assert_problem(
        &problems,
        Some("both"),
        Some("content"),
        "content and content-base64 are exclusive",
    );
    assert_problem(&problems, Some("neither"), Some("content"), "missing");
    assert_problem(&problems, Some("bad"), Some("content-base64"), "not base64");
    assert_eq!(problems.len(), 3, "{problems:#?}");

    let d = accept(json!([
        with(
            without(file("bin", "/a"), "content"),
            "content-base64",
            json!("AP8Q")
        ),
        file("txt", "/b")
    ]));
    let ResourceKind::File(bin) = &d.get("bin").unwrap().kind else {
        panic!()
    };
    assert_eq!(bin.content, vec![0x00, 0xff, 0x10]);
    let ResourceKind::File(txt) = &d.get("txt").unwrap().kind else {
        panic!()
    };
    assert_eq!(txt.content, b"x".to_vec());
}

#[test]
fn mode_is_an_octal_string_of_at_most_07777() {
    for (mode, words) in [
        (json!("0844"), "is not an octal mode such as \"0644\""),
        (json!("17777"), "at most \"07777\""),
        (json!("0o644"), "is not an octal mode"),
        (json!("7"), "is not an octal mode"),
        (json!(""), "is not an octal mode"),
        (
            json!(644),
            "found the number 644 (JSON numbers are decimal)",
        ),
        (json!(true), "found a boolean"),
    ] {
        let p = only(refuse(json!([with(file("f", "/x"), "mode", mode.clone())])));
        assert_eq!(
            (p.resource.as_deref(), p.field.as_deref()),
            (Some("f"), Some("mode"))
        );
        assert!(p.message.contains(words), "{mode}: {}", p.message);
    }
    for (mode, bits) in [
        ("0644", 0o644),
        ("755", 0o755),
        ("07777", 0o7777),
        ("4750", 0o4750),
    ] {
        let d = accept(json!([with(file("f", "/x"), "mode", json!(mode))]));
        let ResourceKind::File(f) = &d.get("f").unwrap().kind else {
            panic!()
        };
        assert_eq!(f.mode.bits(), bits);
    }
    let d = accept(json!([file("f", "/x"), {"id": "d", "type": "directory", "path": "/y"}]));
    let ResourceKind::File(f) = &d.get("f").unwrap().kind else {
        panic!()
    };
    let ResourceKind::Directory(dir) = &d.get("d").unwrap().kind else {
        panic!()
    };
    assert_eq!(
        (f.mode, dir.mode),
        (Mode::FILE_DEFAULT, Mode::DIRECTORY_DEFAULT)
    );
    assert_eq!(
        (f.mode.to_string(), dir.mode.to_string()),
        ("0644".to_owned(), "0755".to_owned())
    );
}

#[test]
fn owner_is_numeric_uid_and_gid() {
    for owner in ["1000", "root:root", "1000:", "0:-1", "4294967295:0"] {
        let p = only(refuse(
            json!([{"id": "d", "type": "directory", "path": "/y", "owner": owner}]),
        ));
        assert_eq!(
            (p.resource.as_deref(), p.field.as_deref()),
            (Some("d"), Some("owner"))
        );
        assert!(
            p.message.contains("is not \"UID:GID\" with numeric ids"),
            "{}",
            p.message
        );
    }
    let d = accept(json!([with(file("f", "/x"), "owner", json!("0:33"))]));
    let ResourceKind::File(f) = &d.get("f").unwrap().kind else {
        panic!()
    };
    assert_eq!(f.owner, Some(Owner { uid: 0, gid: 33 }));
}

#[test]
fn unit_names_and_states_are_checked() {
    let unit = |name: &str| json!({"id": "u", "type": "unit", "name": name, "content": "[Unit]\n"});
    for (name, words) in [
        ("system/x.service", "contains a path separator '/'"),
        (
            "my unit.service",
            "contains ' ': a unit name has no whitespace",
        ),
        ("x.service\n", "contains '\\n'"),
        (
            "backup",
            "has no unit type suffix: it must end in one of .service .socket .timer",
        ),
        ("x.scope", "does not end in a unit type suffix"),
        ("x.conf", "does not end in a unit type suffix"),
        (".service", "has no name before its suffix"),
        ("x$.service", "contains '$', which systemd does not allow"),
        ("foo@.service", "is a template"),
        ("mesh-host.service", "reserved for mesh-host's own units"),
    ] {
        let p = only(refuse(json!([unit(name)])));
        assert_eq!(
            (p.resource.as_deref(), p.field.as_deref()),
            (Some("u"), Some("name")),
            "{name}"
        );
        assert!(p.message.contains(words), "{name:?}: {}", p.message);
    }
    for name in [
        "backup.timer",
        "srv-data.mount",
        "getty@tty2.service",
        "a\\x2db.slice",
    ] {
        let d = accept(json!([unit(name)]));
        let ResourceKind::Unit(u) = &d.get("u").unwrap().kind else {
            panic!()
        };
        assert_eq!(
            (u.name.as_str(), u.state, u.enabled),
            (name, UnitState::Started, None)
        );
    }

    let p = only(refuse(json!([with(
        unit("x.service"),
        "state",
        json!("running")
    )])));
    assert_eq!(
        p.to_string(),
        "u: state: \"running\" is not a unit state: \"started\" or \"stopped\""
    );
    let d = accept(json!([with(
        with(unit("x.service"), "state", json!("stopped")),
        "enabled",
        json!(false)
    )]));
    let ResourceKind::Unit(u) = &d.get("u").unwrap().kind else {
        panic!()
    };
    assert_eq!((u.state, u.enabled), (UnitState::Stopped, Some(false)));
}

// ---- many problems at once; the model ----

#[test]
fn every_problem_of_a_declaration_is_reported() {
    let problems = refuse(json!([
        {"id": "web", "type": "container", "name": "web", "image": "nginx:1.27",
         "dns": ["dns.google"], "timeout": 0, "user": "www data",
         "mounts": [{"source": "rel/path", "target": "/x", "readonly": true}]},
        {"id": "web", "type": "file", "path": "etc/x", "content": "a", "content-base64": "YQ==", "mode": 644},
        {"id": "gc", "type": "container", "name": "web", "image": image(), "run-once": true,
         "schedule": "0 3 * * *", "schedule-zone": "Nowhere/Town", "while-stopped": ["gc", "ghost"]},
        {"id": "t", "type": "unit", "name": "t", "content": "", "state": "on"},
        {"type": "container"},
    ]));
    let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        vec![
            "web: image: \"nginx:1.27\" is not pinned by digest: write REPO@sha256:<64 hex> (a tag alone can change under you)".to_owned(),
            r#"web: mounts[0].readonly: unknown field; did you mean "read-only"?"#.to_owned(),
            "web: mounts[0].source: \"rel/path\" is a relative path: a mount source is an absolute path or a volume name".to_owned(),
            "web: dns[0]: \"dns.google\" is not an IP address (names are refused: a resolver is given by its address)".to_owned(),
            "web: user: \"www data\" is not \"USER\" or \"USER:GROUP\", each a numeric id (0 to 4294967294) or a name (a letter or '_', then letters, digits, '_', '-', '.')".to_owned(),
            "web: timeout: must be a whole number of seconds, at least 1, found 0".to_owned(),
            "web: timeout: timeout needs run-once or a schedule: a service runs until it is stopped".to_owned(),
            "resources[1]: path: \"etc/x\" is a relative path: it must start with '/'".to_owned(),
            "resources[1]: content: content and content-base64 are exclusive: give one of them".to_owned(),
            "resources[1]: mode: must be an octal string such as \"0644\", found the number 644 (JSON numbers are decimal)".to_owned(),
            "resources[1]: id: \"web\" is already the id of resources[0]".to_owned(),
            "gc: run-once: run-once and schedule are exclusive: a container is a run-once step or a scheduled step, not both".to_owned(),
            "gc: schedule-zone: \"Nowhere/Town\" is not an IANA time zone name known to mesh-host (such as \"Europe/Berlin\" or \"UTC\")".to_owned(),
            "gc: name: \"web\" is already the name of container web".to_owned(),
            "gc: while-stopped[0]: \"gc\" is this step itself: a step cannot hold itself still".to_owned(),
            "gc: while-stopped[1]: \"ghost\": no container by that id".to_owned(),
            "t: name: \"t\" has no unit type suffix: it must end in one of .service .socket .timer .path .mount .automount .swap .target .slice".to_owned(),
            "t: state: \"on\" is not a unit state: \"started\" or \"stopped\"".to_owned(),
            "resources[4]: id: missing".to_owned(),
            "resources[4]: name: missing".to_owned(),
            "resources[4]: image: missing".to_owned(),
        ]
    );
}

#[test]
fn refusal_display_and_json() {
    let refusal = parse(&declaration(
        json!([without(service("a", "aa"), "image"), {"type": "x"}]),
    ))
    .unwrap_err();
    assert_eq!(refusal.to_string(), "a: image: missing\nresources[1]: type: unknown type \"x\": one of container, file, directory, unit, identity, shared-folder, network, volume");
    assert_eq!(
        serde_json::to_value(&refusal).unwrap(),
        json!({"problems": [
            {"resource": "a", "field": "image", "message": "missing"},
            {"resource": "resources[1]", "field": "type", "message": "unknown type \"x\": one of container, file, directory, unit, identity, shared-folder, network, volume"},
        ]})
    );
}

#[test]
fn a_full_declaration_builds_the_model() {
    let d = accept(json!([
        {"id": "cfg", "type": "file", "module": "m", "path": "/etc/app.conf", "content": "a=1\n", "mode": "0600", "owner": "0:0"},
        {"id": "db", "type": "container", "module": "m", "name": "db", "image": image(),
         "env": {"B": "2", "A": "1"}, "env-files": ["/etc/db.env"], "mounts": [{"source": "dbdata", "target": "/var/lib/db"}],
         "restart-on": ["cfg"]},
        {"id": "backup", "type": "container", "module": "m", "name": "backup", "image": image(),
         "command": ["backup", "--all"], "mounts": [{"source": "dbdata", "target": "/data", "read-only": true}],
         "schedule": "15 2 * * *", "schedule-zone": "Europe/Amsterdam", "while-stopped": ["db"], "timeout": 1800},
    ]));
    assert_eq!(d.resources.len(), 3);
    assert_eq!(
        d.resources
            .iter()
            .map(|r| r.id.as_str())
            .collect::<Vec<_>>(),
        ["cfg", "db", "backup"]
    );
    assert_eq!(
        d.get("db").unwrap().module.as_ref().map(|m| m.as_str()),
        Some("m")
    );
    assert!(d.get("nope").is_none());
    assert_eq!(
        d.containers()
            .map(|(r, _)| r.id.as_str())
            .collect::<Vec<_>>(),
        ["db", "backup"]
    );

    let db = d.container("db").unwrap();
    assert_eq!(
        db.env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect::<Vec<_>>(),
        [("A", "1"), ("B", "2")]
    );
    assert_eq!(
        db.env_files,
        vec![AbsPath::try_from("/etc/db.env").unwrap()]
    );
    assert_eq!(db.role, Role::Service);
    assert_eq!(db.restart_on, vec![ResourceId::try_from("cfg").unwrap()]);
    assert!(db.schedule().is_none());

    let steps: Vec<Step<'_>> = d.steps().collect();
    assert_eq!(steps.len(), 1);
    let backup = steps[0];
    assert_eq!(backup.resource.id.as_str(), "backup");
    assert_eq!(
        backup.container.command,
        Some(vec!["backup".to_owned(), "--all".to_owned()])
    );
    assert_eq!(backup.schedule.cron.expr(), "15 2 * * *");
    assert_eq!(backup.schedule.zone, Some(chrono_tz::Europe::Amsterdam));
    assert_eq!(
        backup.schedule.while_stopped,
        vec![ResourceId::try_from("db").unwrap()]
    );
    assert_eq!(backup.container.timeout, Some(Duration::from_secs(1800)));
    assert_eq!(d.step("backup"), Some(backup));
    assert!(d.step("db").is_none());
}

#[test]
fn the_canonical_form_parses_back_to_the_same_model() {
    let d = accept(json!([
        with(without(file("bin", "/a"), "content"), "content-base64", json!("AP8Q")),
        with(file("txt", "/b/./c"), "owner", json!("1:2")),
        {"id": "d", "type": "directory", "path": "/srv/x/", "mode": "700"},
        {"id": "u", "type": "unit", "name": "x.timer", "content": "[Timer]\n", "enabled": true},
        with(with(service("db", "db"), "user", json!("5")), "dns", json!(["::1"])),
        with(with(service("m", "mm"), "run-once", json!(true)), "network", json!("none")),
        with(with(step("s"), "while-stopped", json!(["db"])), "schedule-zone", json!("UTC")),
    ]));
    let canonical = serde_json::to_vec(&d).unwrap();
    let again = parse(&canonical).unwrap();
    assert_eq!(again, d);
    assert_eq!(serde_json::to_vec(&again).unwrap(), canonical);
    let value: Value = serde_json::from_slice(&canonical).unwrap();
    assert_eq!(value["declaration"], json!(1));
    assert_eq!(value["resources"][0]["content-base64"], json!("AP8Q"));
    assert_eq!(value["resources"][1]["path"], json!("/b/c"));
    assert_eq!(value["resources"][2]["mode"], json!("0700"));
    assert_eq!(value["resources"][5]["run-once"], json!(true));
    assert_eq!(value["resources"][6]["while-stopped"], json!(["db"]));
    assert_eq!(value["resources"][6]["timeout"], json!(600));
}

// ---- lint ----

fn lints(resources: Value) -> Vec<Warning> {
    lint(&accept(resources))
}

#[test]
fn a_writer_the_window_misses_is_warned_about() {
    let writer = |id: &str, source: &str| {
        with(
            service(id, &format!("{id}-c")),
            "mounts",
            json!([{"source": source, "target": "/data"}]),
        )
    };
    let holding = with(
        with(step("backup"), "while-stopped", json!(["db"])),
        "mounts",
        json!([{"source": "/srv/data", "target": "/data", "read-only": true}, {"source": "vol", "target": "/vol"}]),
    );
    for source in ["/srv/data", "/srv/data/uploads", "/srv", "/", "vol"] {
        let warnings = lints(json!([
            {"id": "vol", "type": "volume", "name": "vol"},
            writer("db", "/srv/data"),
            writer("app", source),
            holding.clone()
        ]));
        assert_eq!(warnings.len(), 1, "{source}: {warnings:#?}");
        let w = &warnings[0];
        assert_eq!(
            (w.lint, w.resource.as_str(), w.step.as_deref().unwrap_or("")),
            (lint::WINDOW_MISSES_WRITER, "app", "backup")
        );
        assert!(
            w.message.contains("a writer the window misses"),
            "{}",
            w.message
        );
        assert!(w.message.contains("step \"backup\""), "{}", w.message);
    }
    // Not a writer (read-only), not overlapping, held, or a run-once step.
    for app in [
        with(
            service("app", "app-c"),
            "mounts",
            json!([{"source": "/srv/data", "target": "/d", "read-only": true}]),
        ),
        writer("app", "/srv/database"),
        writer("app", "other-vol"),
        with(writer("app", "/srv/data"), "run-once", json!(true)),
    ] {
        let volumes = json!([
            {"id": "vol", "type": "volume", "name": "vol"},
            {"id": "other-vol", "type": "volume", "name": "other-vol"}
        ]);
        assert_eq!(
            lints(json!([
                volumes[0],
                volumes[1],
                writer("db", "/srv/data"),
                app,
                holding.clone()
            ])),
            vec![]
        );
    }
    let both_held = with(holding.clone(), "while-stopped", json!(["db", "app"]));
    assert_eq!(
        lints(json!([
            {"id": "vol", "type": "volume", "name": "vol"},
            writer("db", "/srv/data"),
            writer("app", "/srv/data"),
            both_held
        ])),
        vec![]
    );
}

#[test]
fn a_window_without_timeout_is_warned_about() {
    let warnings = lints(json!([
        service("db", "db"),
        with(
            without(step("backup"), "timeout"),
            "while-stopped",
            json!(["db"])
        ),
        without(step("plain"), "timeout"),
    ]));
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    let w = &warnings[0];
    assert_eq!(
        (w.lint, w.resource.as_str(), w.step.as_deref().unwrap_or("")),
        (lint::WINDOW_WITHOUT_TIMEOUT, "backup", "backup")
    );
    assert_eq!(
        w.to_string(),
        "backup: step \"backup\" holds containers still but has no timeout: the window is bounded only by the step ending (window-without-timeout)"
    );
    assert_eq!(
        serde_json::to_value(w).unwrap()["lint"],
        json!("window-without-timeout")
    );
}

// ---- the examples ----

fn examples_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

#[test]
fn every_example_is_accepted_without_warnings() {
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(examples_dir()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".json") || name == "refused.json" {
            continue;
        }
        let d = match parse(&std::fs::read(&path).unwrap()) {
            Ok(d) => d,
            Err(refusal) => panic!("{name} refused:\n{refusal}"),
        };
        assert_eq!(lint(&d), vec![], "{name}");
        assert_eq!(
            parse(&serde_json::to_vec(&d).unwrap()).unwrap(),
            d,
            "{name} round trip"
        );
        seen.push(name);
    }
    seen.sort();
    assert_eq!(seen, ["media.json", "registry.json", "webapp.json"]);
}

#[test]
fn the_registry_example_holds_the_registry_for_garbage_collection() {
    let d = parse(&std::fs::read(examples_dir().join("registry.json")).unwrap()).unwrap();
    let gc = d.step("garbage-collect").unwrap();
    assert_eq!(
        gc.schedule.while_stopped,
        vec![ResourceId::try_from("registry").unwrap()]
    );
    assert_eq!(gc.container.image, d.container("registry").unwrap().image);
    assert!(gc.container.timeout.is_some());
    assert!(d
        .resources
        .iter()
        .all(|r| r.module.as_ref().map(|m| m.as_str()) == Some("registry")));
}

#[test]
fn the_webapp_example_stops_app_then_db() {
    let d = parse(&std::fs::read(examples_dir().join("webapp.json")).unwrap()).unwrap();
    let backup = d.step("nightly-backup").unwrap();
    let held: Vec<&str> = backup
        .schedule
        .while_stopped
        .iter()
        .map(|id| id.as_str())
        .collect();
    assert_eq!(held, ["app", "db"]);
    assert_eq!(d.container("migrate").unwrap().role, Role::RunOnce);
}

#[test]
fn the_refused_example_gives_exactly_the_expected_text() {
    let bytes = std::fs::read(examples_dir().join("refused.json")).unwrap();
    let expected = std::fs::read_to_string(examples_dir().join("refused.expected")).unwrap();
    let refusal = parse(&bytes).unwrap_err();
    assert_eq!(refusal.to_string(), expected.trim_end_matches('\n'));
}

#[test]
fn deep_nesting_neither_overflows_nor_panics() {
    let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let p = only(refuse_bytes(nested(100_000).as_bytes()));
    assert!(
        p.message
            .contains("nested deeper than 64 arrays and objects at line 1"),
        "{}",
        p.message
    );
    // Past the bound in every position a value can take: refused, said where.
    let deep = nested(70);
    for text in [
        format!(r#"{{"declaration": 1, "resources": [], "extra": {deep}}}"#),
        format!(
            r#"{{"declaration": 1, "resources": [{{"id": "a", "type": "container", "health": {deep}}}]}}"#
        ),
    ] {
        let p = only(refuse_bytes(text.as_bytes()));
        assert!(p.message.contains("nested deeper than 64"), "{}", p.message);
    }
    // Just inside it, in every position a value can take: read, never a panic.
    let deep = nested(58);
    for text in [
        format!(r#"{{"declaration": 1, "resources": [], "extra": {deep}}}"#),
        format!(r#"{{"declaration": 1, "resources": [{deep}]}}"#),
        format!(
            r#"{{"declaration": 1, "resources": [{{"id": "a", "type": "container", "command": {deep}, "mounts": [{deep}], "x": {deep}}}]}}"#
        ),
        format!(r#"{{"declaration": 1, "resources": [{{"id": "a", "type": {deep}}}]}}"#),
    ] {
        assert!(!refuse_bytes(text.as_bytes()).is_empty());
    }
}

#[test]
fn a_health_check_is_read_with_its_durations_and_none_disables_the_image_s() {
    let d = accept(json!([with(
        service("web", "web"),
        "health",
        json!({"command": ["wget", "-q", "--spider", "http://127.0.0.1:5000/v2/"],
               "interval": 10, "timeout": 3, "retries": 5, "start-period": 20})
    )]));
    let Some(Health::Check(check)) = &d.container("web").unwrap().health else {
        panic!("a check");
    };
    assert_eq!(check.command.as_ref().unwrap()[0], "wget");
    assert_eq!(check.interval, Some(Duration::from_secs(10)));
    assert_eq!(check.timeout, Some(Duration::from_secs(3)));
    assert_eq!(check.retries, Some(5));
    assert_eq!(check.start_period, Some(Duration::from_secs(20)));
    assert_eq!(
        parse(&serde_json::to_vec(&d).unwrap()).unwrap(),
        d,
        "round trip"
    );
    // Only the command is required: Docker's defaults for the rest.
    let d = accept(json!([with(
        service("web", "web"),
        "health",
        json!({"command": ["true"]})
    )]));
    let Some(Health::Check(check)) = &d.container("web").unwrap().health else {
        panic!("a check");
    };
    assert_eq!((check.interval, check.retries), (None, None));
    let d = accept(json!([with(
        service("web", "web"),
        "health",
        json!("none")
    )]));
    assert_eq!(d.container("web").unwrap().health, Some(Health::Disabled));
    let canonical = serde_json::to_value(&d).unwrap();
    assert_eq!(canonical["resources"][0]["health"], json!("none"));
    // Left out: the image's own, and nothing in the canonical form.
    let d = accept(json!([service("web", "web")]));
    assert_eq!(d.container("web").unwrap().health, None);
    assert!(serde_json::to_value(&d).unwrap()["resources"][0]
        .get("health")
        .is_none());
}

#[test]
fn every_problem_of_a_health_check_is_listed() {
    let problems = refuse(json!([with(
        service("web", "web"),
        "health",
        json!({"command": [], "interval": 0, "timeout": -1, "retries": 0,
               "start-period": "10s", "test": ["CMD"]})
    )]));
    assert_problem(
        &problems,
        Some("web"),
        Some("health.command"),
        "must not be empty",
    );
    assert_problem(
        &problems,
        Some("web"),
        Some("health.interval"),
        "at least 1, found 0",
    );
    assert_problem(&problems, Some("web"), Some("health.timeout"), "found -1");
    assert_problem(
        &problems,
        Some("web"),
        Some("health.retries"),
        "from 1 to 1000, found 0",
    );
    assert_problem(
        &problems,
        Some("web"),
        Some("health.start-period"),
        "found a string",
    );
    assert_problem(&problems, Some("web"), Some("health.test"), "unknown field");
    assert_eq!(problems.len(), 6, "{problems:#?}");
    let problems = refuse(json!([with(
        service("web", "web"),
        "health",
        json!({"command": ["CMD-SHELL", "curl -f localhost"], "retries": 1.5})
    )]));
    assert_problem(
        &problems,
        Some("web"),
        Some("health.command[0]"),
        "exec form",
    );
    assert_problem(&problems, Some("web"), Some("health.retries"), "found 1.5");
    let problems = refuse(json!([with(
        service("web", "web"),
        "health",
        json!({"command": ["", 3]})
    )]));
    assert_problem(
        &problems,
        Some("web"),
        Some("health.command[0]"),
        "must not be empty",
    );
    assert_problem(
        &problems,
        Some("web"),
        Some("health.command[1]"),
        "expected a string",
    );
    let problems = refuse(json!([with(service("web", "web"), "health", json!({}))]));
    assert_problem(&problems, Some("web"), Some("health"), "an empty object");
    for bad in [json!("off"), json!(true), json!(["wget"])] {
        let problems = refuse(json!([with(service("web", "web"), "health", bad)]));
        assert_problem(&problems, Some("web"), Some("health"), "must be \"none\"");
    }
}

#[test]
fn a_randomized_delay_is_whole_seconds_on_a_scheduled_step() {
    let d = accept(json!([with(step("gc"), "randomized-delay", json!(1800))]));
    let gc = d.step("gc").unwrap();
    assert_eq!(
        gc.schedule.randomized_delay,
        Some(Duration::from_secs(1800))
    );
    assert_eq!(
        serde_json::to_value(&d).unwrap()["resources"][0]["randomized-delay"],
        json!(1800)
    );
    assert_eq!(parse(&serde_json::to_vec(&d).unwrap()).unwrap(), d);
    let plain = accept(json!([step("gc")]));
    assert!(serde_json::to_value(&plain).unwrap()["resources"][0]
        .get("randomized-delay")
        .is_none());
    for (bad, words) in [
        (json!(0), "found 0"),
        (json!(-5), "found -5"),
        (json!(2.5), "found 2.5"),
        (json!("30s"), "found a string"),
        (json!(40 * 24 * 3600), "from 1 to 2592000"),
    ] {
        let problems = refuse(json!([with(step("gc"), "randomized-delay", bad)]));
        assert_problem(&problems, Some("gc"), Some("randomized-delay"), words);
    }
    let problems = refuse(json!([with(
        service("web", "web"),
        "randomized-delay",
        json!(30)
    )]));
    assert_problem(
        &problems,
        Some("web"),
        Some("randomized-delay"),
        "needs a schedule",
    );
}

#[test]
fn catch_up_is_a_boolean_of_a_scheduled_step() {
    let d = accept(json!([with(step("gc"), "catch-up", json!(true))]));
    assert!(d.step("gc").unwrap().schedule.catch_up);
    assert_eq!(
        serde_json::to_value(&d).unwrap()["resources"][0]["catch-up"],
        json!(true)
    );
    assert_eq!(parse(&serde_json::to_vec(&d).unwrap()).unwrap(), d);
    let off = accept(json!([with(step("gc"), "catch-up", json!(false))]));
    assert!(!off.step("gc").unwrap().schedule.catch_up);
    assert!(serde_json::to_value(&off).unwrap()["resources"][0]
        .get("catch-up")
        .is_none());
    let problems = refuse(json!([with(step("gc"), "catch-up", json!("yes"))]));
    assert_problem(
        &problems,
        Some("gc"),
        Some("catch-up"),
        "expected a boolean",
    );
    let problems = refuse(json!([with(
        service("web", "web"),
        "catch-up",
        json!(true)
    )]));
    assert_problem(&problems, Some("web"), Some("catch-up"), "needs a schedule");
}

// ---- ports ----

#[test]
fn ports_are_read_with_their_defaults() {
    let d = accept(json!([with(
        service("web", "web"),
        "ports",
        json!([
            {"host": 8080, "container": 80, "address": "127.0.0.1"},
            {"container": 53, "protocol": "udp"},
            {"host": 8443, "container": 443, "protocol": "tcp", "address": "::1"}
        ])
    )]));
    let ports = &d.container("web").unwrap().ports;
    let shown: Vec<String> = ports.iter().map(|p| p.to_string()).collect();
    assert_eq!(
        shown,
        ["127.0.0.1:8080->80/tcp", "*->53/udp", "[::1]:8443->443/tcp"]
    );
}

#[test]
fn bad_ports_are_each_named() {
    let problems = refuse(json!([with(
        service("web", "web"),
        "ports",
        json!([
            {"host": 0, "container": 80},
            {"host": 8080, "container": 65536},
            {"container": "80"},
            {"host": 8081, "container": 81, "protocol": "sctp"},
            {"host": 8082, "container": 82, "address": "localhost"},
            {"host": 8083},
            {"host": 8084, "container": 84, "hostIp": "0.0.0.0"}
        ])
    )]));
    assert_problem(
        &problems,
        Some("web"),
        Some("ports[0].host"),
        "0 is not a port",
    );
    assert_problem(
        &problems,
        Some("web"),
        Some("ports[1].container"),
        "65536 is not a port",
    );
    assert_problem(
        &problems,
        Some("web"),
        Some("ports[2].container"),
        "is not a port",
    );
    assert_problem(
        &problems,
        Some("web"),
        Some("ports[3].protocol"),
        "\"sctp\" is not a protocol",
    );
    assert_problem(
        &problems,
        Some("web"),
        Some("ports[4].address"),
        "not an IP address",
    );
    assert_problem(&problems, Some("web"), Some("ports[5].container"), "");
    assert!(
        problems.iter().any(|p| p
            .field
            .as_deref()
            .is_some_and(|f| f.starts_with("ports[6]"))),
        "an unknown key of a port is refused: {problems:#?}"
    );
}

#[test]
fn a_host_port_is_bound_once_in_a_container_and_across_containers() {
    // The same port on every address and on one address clash; on two
    // addresses, or two protocols, they do not.
    let problems = refuse(json!([
        with(
            service("a", "aa"),
            "ports",
            json!([
                {"host": 8080, "container": 80},
                {"host": 8080, "container": 81, "address": "127.0.0.1"},
                {"host": 8080, "container": 80, "protocol": "udp"}
            ])
        ),
        with(
            service("b", "bb"),
            "ports",
            json!([
                {"host": 8081, "container": 80, "address": "127.0.0.1"},
                {"host": 8081, "container": 80, "address": "127.0.0.2"},
                {"host": 8080, "container": 80, "protocol": "udp", "address": "10.0.0.1"}
            ])
        ),
    ]));
    assert_problem(
        &problems,
        Some("a"),
        Some("ports[1]"),
        "binds what ports[0] binds already",
    );
    assert_problem(
        &problems,
        Some("b"),
        Some("ports[2]"),
        "container aa (a) publishes that host port already",
    );
    assert_eq!(problems.len(), 2, "{problems:#?}");
}

#[test]
fn ports_with_the_host_s_network_or_none_are_refused() {
    for (network, words) in [
        ("host", "already listens on the host's own ports"),
        ("none", "no network"),
    ] {
        let web = with(service("web", "web"), "network", json!(network));
        let p = only(refuse(json!([with(
            web,
            "ports",
            json!([{"host": 8080, "container": 80}])
        )])));
        assert_eq!(p.field.as_deref(), Some("ports"), "{p}");
        assert!(p.message.contains(words), "{p}");
    }
}

// ---- options beyond the image ----

#[test]
fn options_are_read_and_round_trip_through_the_canonical_form() {
    let web = json!({"id": "web", "type": "container", "name": "web", "image": image(),
        "entrypoint": ["/bin/sh", "-c"], "working-dir": "/srv", "hostname": "web-1",
        "labels": {"com.example.team": "ops"}, "stop-signal": "SIGINT", "stop-grace": 30,
        "init": true, "cap-add": ["net_admin", "CAP_SYS_TIME"], "cap-drop": ["ALL"],
        "privileged": false, "read-only-root": true, "no-new-privileges": true,
        "memory": 268435456u64, "memory-reservation": 134217728u64, "cpus": 1.5,
        "pids-limit": 100, "shm-size": 67108864u64});
    let d = accept(json!([web]));
    let o = &d.container("web").unwrap().options;
    assert_eq!(o.cap_add, ["NET_ADMIN", "SYS_TIME"]);
    assert_eq!(o.nano_cpus, Some(1_500_000_000));
    assert_eq!(o.stop_grace, Some(30));
    assert!(o.init && o.read_only_root && o.no_new_privileges && !o.privileged);
    let canonical = serde_json::to_value(&d).unwrap();
    let again = accept(canonical["resources"].clone());
    assert_eq!(again, d, "the canonical form reads back the same");
}

#[test]
fn an_empty_entrypoint_clears_the_image_s_and_health_without_a_command_keeps_its_test() {
    let web = json!({"id": "web", "type": "container", "name": "web", "image": image(),
        "entrypoint": [], "health": {"interval": 5, "retries": 2}});
    let d = accept(json!([web]));
    let c = d.container("web").unwrap();
    assert_eq!(c.options.entrypoint, Some(Vec::new()));
    match &c.health {
        Some(crate::declaration::Health::Check(h)) => {
            assert_eq!(h.command, None);
            assert_eq!(h.interval, Some(std::time::Duration::from_secs(5)));
            assert_eq!(h.retries, Some(2));
        }
        other => panic!("{other:?}"),
    }
    // Both are part of the canonical form, so of the container's identity.
    let canonical = serde_json::to_value(&d).unwrap();
    assert_eq!(canonical["resources"][0]["entrypoint"], json!([]));
    assert_eq!(
        canonical["resources"][0]["health"],
        json!({"interval": 5, "retries": 2})
    );
    assert_eq!(accept(canonical["resources"].clone()), d);
}

#[test]
fn bad_options_are_each_named() {
    let web = json!({"id": "web", "type": "container", "name": "web", "image": image(),
        "working-dir": "srv", "hostname": "-web",
        "labels": {"mesh-host.managed": "false", "mesh.step": "x"}, "stop-signal": "sig int",
        "stop-grace": -1, "cap-add": ["NET_ADMN", "NET_ADMIN", "net_admin"],
        "memory": 1024, "memory-reservation": "1g", "cpus": 0, "pids-limit": 0,
        "shm-size": 1.5});
    let problems = refuse(json!([web]));
    let at = |field: &str, words: &str| assert_problem(&problems, Some("web"), Some(field), words);
    at("working-dir", "not an absolute path");
    at("hostname", "not a host name");
    at("labels[\"mesh-host.managed\"]", "mesh-host's own");
    at("labels[\"mesh.step\"]", "mesh-host's own");
    at("stop-signal", "not a signal");
    at("stop-grace", "not a number of seconds");
    at("cap-add[0]", "not a Linux capability");
    at("cap-add[2]", "NET_ADMIN is named twice");
    at("memory", "less than the 6291456 taken");
    at("memory-reservation", "whole number of bytes");
    at("cpus", "not a number of CPUs");
    at("pids-limit", "not a number of processes");
    at("shm-size", "1.5 is not a whole number of bytes");
    assert_eq!(problems.len(), 13, "{problems:#?}");
}

#[test]
fn a_privileged_container_is_warned_of_and_still_accepted() {
    let d = accept(json!([
        with(service("a", "aa"), "privileged", json!(true)),
        with(service("b", "bb"), "privileged", json!(false)),
    ]));
    let warnings = crate::declaration::lint(&d);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].lint, crate::declaration::lint::PRIVILEGED);
    assert_eq!(warnings[0].resource, "a");
    assert_eq!(warnings[0].step, None);
    assert!(
        warnings[0].to_string().contains("is privileged"),
        "{}",
        warnings[0]
    );
}

#[test]
fn tmpfs_ulimits_sysctls_extra_hosts_and_devices_are_read() {
    let web = json!({"id": "web", "type": "container", "name": "web", "image": image(),
        "tmpfs": [{"target": "/run", "size": 65536, "mode": "1777"}, {"target": "/tmp"}],
        "ulimits": {"nofile": {"soft": 1024, "hard": 4096}, "memlock": {"soft": -1, "hard": -1}},
        "sysctls": {"net.core.somaxconn": "1024", "kernel.shmmax": "68719476736"},
        "extra-hosts": {"db.internal": "10.0.0.5", "v6": "2001:db8::5"},
        "devices": [{"path": "/dev/fuse"}, {"path": "/dev/sda", "target": "/dev/xvda", "permissions": "r"}]});
    let d = accept(json!([web]));
    let o = &d.container("web").unwrap().options;
    assert_eq!(o.tmpfs.len(), 2);
    assert_eq!(o.tmpfs[1].size, None);
    assert_eq!(o.ulimits["nofile"].hard, 4096);
    assert_eq!(o.ulimits["memlock"].soft, u64::MAX, "-1: no limit");
    assert_eq!(o.sysctls.len(), 2);
    assert_eq!(o.extra_hosts["v6"].to_string(), "2001:db8::5");
    assert_eq!(
        o.devices[0].target, "/dev/fuse",
        "the host's path by default"
    );
    assert_eq!(o.devices[0].permissions, "rwm");
    assert_eq!(o.devices[1].permissions, "r");
    let canonical = serde_json::to_value(&d).unwrap();
    assert_eq!(
        canonical["resources"][0]["ulimits"]["memlock"],
        json!({"soft": -1, "hard": -1})
    );
    assert_eq!(accept(canonical["resources"].clone()), d);
}

#[test]
fn bad_tmpfs_ulimits_sysctls_extra_hosts_and_devices_are_each_named() {
    let web = json!({"id": "web", "type": "container", "name": "web", "image": image(),
        "tmpfs": [{"target": "run"}, {"target": "/x", "mode": "999"}, {"target": "/x"}, {"target": "/y", "sizee": 1}],
        "ulimits": {"nofiles": {"soft": 1, "hard": 2}, "nproc": {"soft": 5, "hard": 2}, "stack": {"soft": 1}, "core": {"soft": -2, "hard": -1}},
        "sysctls": {"kernel.panic": "1"},
        "extra-hosts": {"db": "not-an-ip"},
        "devices": [{"path": "dev/fuse"}, {"path": "/dev/fuse", "permissions": "rwx"}]});
    let problems = refuse(json!([web]));
    let at = |field: &str, words: &str| assert_problem(&problems, Some("web"), Some(field), words);
    at("tmpfs[0].target", "not an absolute path");
    at("tmpfs[1].mode", "not an octal mode");
    at("tmpfs[2].target", "/x is already a tmpfs target");
    at("ulimits.nofiles", "not a resource limit");
    at("ulimits.nproc", "soft 5 is above hard 2");
    at("ulimits.stack.hard", "missing");
    at(
        "ulimits.core.soft",
        "-2 is not a whole number, at least 0, or -1",
    );
    at(
        "sysctls[\"kernel.panic\"]",
        "not a kernel parameter of the container's own namespaces",
    );
    at("extra-hosts.db", "not an IP address");
    at("devices[0].path", "not an absolute path");
    at("devices[1].permissions", "not cgroup device permissions");
    assert!(
        problems.iter().any(|p| p
            .field
            .as_deref()
            .is_some_and(|f| f.starts_with("tmpfs[3]"))),
        "an unknown key of a tmpfs is refused: {problems:#?}"
    );
    assert_eq!(problems.len(), 12, "{problems:#?}");
}

/// A resource is the same whatever the order of its keys: with `type`
/// last (the keys before it held as their JSON text), spelt with an
/// escape, or after a field of the wrong type, it reads and refuses as
/// with `type` first.
#[test]
fn a_resource_reads_the_same_with_its_type_last() {
    let first = br#"{"declaration": 1, "resources": [
        {"id": "web", "type": "container", "name": "web-c", "image": "IMG",
         "ports": [{"host": 8080, "container": 80}], "env": {"A": "1"}}]}"#;
    let last = br#"{"declaration": 1, "resources": [
        {"id": "web", "name": "web-c", "image": "IMG",
         "ports": [{"host": 8080, "container": 80}], "env": {"A": "1"},
         "type": "cont\u0061iner"}]}"#;
    let read = |bytes: &[u8]| {
        let text = String::from_utf8(bytes.to_vec())
            .unwrap()
            .replace("IMG", &image());
        parse(text.as_bytes()).unwrap()
    };
    assert_eq!(read(first), read(last));
    let problems = refuse_bytes(
        format!(
            r#"{{"declaration": 1, "resources": [
                {{"id": "web", "name": "web-c", "image": "{}", "ports": "80",
                  "type": "container"}},
                {{"id": "odd", "name": {{"a": [1, 2]}}, "type": "bucket"}}]}}"#,
            image()
        )
        .as_bytes(),
    );
    assert_problem(&problems, Some("web"), Some("ports"), "expected");
    assert_problem(
        &problems,
        Some("odd"),
        Some("type"),
        "unknown type \"bucket\"",
    );
    assert_eq!(problems.len(), 2, "{problems:#?}");
}

#[test]
fn rollback_after_is_seconds_on_a_service_and_not_part_of_the_identity() {
    let d = accept(json!([with(
        service("web", "aa"),
        "rollback-after",
        json!(30)
    )]));
    let (res, web) = d.containers().next().expect("web");
    assert_eq!(web.rollback_after(), std::time::Duration::from_secs(30));
    assert_eq!(
        serde_json::to_value(&d).unwrap()["resources"][0]["rollback-after"],
        json!(30)
    );
    let plain = accept(json!([service("web", "aa")]));
    let (plain_res, plain_web) = plain.containers().next().expect("web");
    assert_eq!(
        plain_web.rollback_after(),
        crate::declaration::model::DEFAULT_ROLLBACK_AFTER
    );
    assert_eq!(
        crate::container_spec::build(&d, res, web)
            .expect("build")
            .identity,
        crate::container_spec::build(&plain, plain_res, plain_web)
            .expect("build")
            .identity,
        "changing rollback-after replaces nothing"
    );
    for bad in [json!(0), json!("90"), json!(-1)] {
        let problems = refuse(json!([with(service("web", "aa"), "rollback-after", bad)]));
        assert_problem(&problems, Some("web"), Some("rollback-after"), "must be");
    }
    let problems = refuse(json!([with(step("gc"), "rollback-after", json!(30))]));
    assert_problem(
        &problems,
        Some("gc"),
        Some("rollback-after"),
        "applies to a service",
    );
}

#[test]
fn a_service_whose_check_is_disabled_is_warned_it_cannot_be_rolled_back() {
    let d = accept(json!([
        with(service("a", "aa"), "health", json!("none")),
        service("b", "bb"),
        with(step("gc"), "health", json!("none")),
    ]));
    let warnings = crate::declaration::lint(&d);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].lint, crate::declaration::lint::CANNOT_ROLL_BACK);
    assert_eq!(warnings[0].resource, "a");
    // One that declares none may have its image's: noted, not warned of.
    let notes = crate::declaration::notes(&d, 10);
    assert_eq!(
        notes
            .iter()
            .map(|n| n.resource.as_str())
            .collect::<Vec<_>>(),
        ["b"]
    );
    assert!(
        notes[0].message.contains("cannot be rolled back"),
        "{}",
        notes[0]
    );
    // No room left by the warnings: only how many.
    let counted = crate::declaration::notes(&d, 0);
    assert_eq!(counted.len(), 1);
    assert_eq!(
        counted[0].to_string(),
        "1 more services declare no health check"
    );
}
