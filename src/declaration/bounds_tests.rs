//! Every problem at once, and the bounds on what a declaration may cost:
//! a clash between resources is listed beside each one's own problems,
//! and a refusal or a lint of a declaration made to have millions of
//! problems lists a bounded number and says how many more.

#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};

use super::tests::{assert_problem, refuse, service};
use super::*;

fn with(mut value: Value, key: &str, field: Value) -> Value {
    value[key] = field;
    value
}

#[test]
fn a_clash_between_resources_is_listed_beside_their_own_problems() {
    let problems = refuse(json!([
        // Its own problem (an image without a digest) and a port...
        with(
            with(service("a", "app-a"), "image", json!("nginx:latest")),
            "ports",
            json!([{"host": 8080, "container": 80}])
        ),
        // ...that another container, with a problem of its own, publishes too.
        with(
            with(service("b", "app-b"), "privileged", json!("yes")),
            "ports",
            json!([{"host": 9090, "container": 90}, {"host": 8080, "container": 80}])
        ),
        // A network with a bad label, and its subnet.
        {"id": "net", "type": "network", "name": "backend", "subnet": "172.20.0.0/16",
         "labels": {"x": 1}},
        // A fixed address outside it, and a dependency on a container
        // declared later, from a container whose own problem (its image)
        // leaves it unbuilt.
        with(
            with(
                with(service("c", "app-c"), "networks",
                     json!([{"name": "backend", "ipv4-address": "10.0.0.2"}])),
                "depends-on",
                json!([{"id": "d"}])
            ),
            "image",
            json!("nginx")
        ),
        with(service("d", "app-d"), "init", json!(2)),
    ]));
    // Each resource's own problem...
    assert_problem(&problems, Some("a"), Some("image"), "");
    assert_problem(&problems, Some("b"), Some("privileged"), "");
    assert_problem(&problems, Some("net"), Some("labels.x"), "");
    assert_problem(&problems, Some("c"), Some("image"), "");
    assert_problem(&problems, Some("d"), Some("init"), "");
    // ...and every clash between them, in the same refusal.
    assert_problem(
        &problems,
        Some("b"),
        Some("ports[1]"),
        "container app-a (a) publishes that host port already",
    );
    assert_problem(
        &problems,
        Some("c"),
        Some("networks[0].ipv4-address"),
        "10.0.0.2 is not in subnet 172.20.0.0/16 of network backend",
    );
    assert_problem(
        &problems,
        Some("c"),
        Some("depends-on[0].id"),
        "is declared after this container",
    );
}

#[test]
fn a_clash_with_a_container_whose_name_did_not_read_names_its_label() {
    let problems = refuse(json!([
        with(
            with(service("a", "x"), "name", json!("-bad")),
            "ports",
            json!([{"host": 8080, "container": 80}])
        ),
        with(
            service("b", "app-b"),
            "ports",
            json!([{"host": 8080, "container": 80}])
        ),
    ]));
    assert_problem(&problems, Some("a"), Some("name"), "");
    assert_problem(
        &problems,
        Some("b"),
        Some("ports[0]"),
        "container a (a) publishes that host port already",
    );
}

#[test]
fn a_refusal_lists_the_first_thousand_problems_and_counts_the_rest() {
    let resources: Vec<Value> = (0..3000).map(|i| json!({"id": format!("r{i}")})).collect();
    let problems = refuse(json!(resources));
    assert_eq!(problems.len(), 1001);
    // The first ones, in declaration order.
    assert_eq!(problems[0].resource.as_deref(), Some("r0"));
    assert_eq!(problems[999].resource.as_deref(), Some("r999"));
    let last = &problems[1000];
    assert_eq!((&last.resource, &last.field), (&None, &None));
    assert_eq!(
        last.message,
        "and 2000 more problems, not listed: a refusal lists the first 1000; fix these and check again"
    );
}

#[test]
fn clashes_found_after_many_problems_keep_declaration_order() {
    // 1,500 resources with a problem each, then two that clash: the clash
    // is past the thousand listed, and counted.
    let mut resources: Vec<Value> = (0..1500)
        .map(|i| {
            with(
                service(&format!("s{i}"), &format!("app-{i}")),
                "init",
                json!(1),
            )
        })
        .collect();
    resources.insert(
        0,
        with(
            service("first", "app-first"),
            "ports",
            json!([{"host": 81, "container": 80}]),
        ),
    );
    resources.push(with(
        service("last", "app-last"),
        "ports",
        json!([{"host": 81, "container": 80}]),
    ));
    let problems = refuse(json!(resources));
    assert_eq!(problems.len(), 1001);
    assert_eq!(problems[0].resource.as_deref(), Some("s0"));
    assert!(
        problems[1000].message.starts_with("and 501 more problems"),
        "{}",
        problems[1000].message
    );
}

#[test]
fn a_lint_lists_the_first_thousand_warnings_and_counts_the_rest() {
    // Every container privileged: one warning each.
    let resources: Vec<Value> = (0..1500)
        .map(|i| {
            with(
                service(&format!("s{i}"), &format!("app-{i}")),
                "privileged",
                json!(true),
            )
        })
        .collect();
    let decl =
        parse(&serde_json::to_vec(&json!({"declaration": 1, "resources": resources})).unwrap())
            .unwrap();
    let warnings = lint(&decl);
    assert_eq!(warnings.len(), 1001);
    assert_eq!(warnings[0].resource, "s0");
    assert_eq!(warnings[1000].lint, lint::MORE);
    assert_eq!(
        warnings[1000].to_string(),
        "and 500 more warnings, not listed: a check lists the first 1000 (more-warnings)"
    );
}
