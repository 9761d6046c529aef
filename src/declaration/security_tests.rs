//! A container's `security-opt`, `logging` and tmpfs `exec`/`uid`/`gid`:
//! read into the model, part of its canonical form, and every bad value
//! named at once.
#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::tests::{accept, assert_problem, refuse, service};

fn with(fields: serde_json::Value) -> serde_json::Value {
    let mut web = service("web", "web");
    for (k, v) in fields.as_object().unwrap() {
        web[k] = v.clone();
    }
    web
}

#[test]
fn security_options_a_log_driver_and_tmpfs_owners_are_read_and_kept() {
    let web = with(json!({
        "no-new-privileges": true,
        "security-opt": ["label=disable", "seccomp:unconfined", "apparmor=unconfined"],
        "logging": {"driver": "local", "options": {"max-size": "1m", "max-file": "2"}},
        "extra-hosts": {"gw": "host-gateway", "db": "10.0.0.5"},
        "tmpfs": [{"target": "/run", "exec": true, "uid": 1000, "gid": 1001},
                  {"target": "/scratch", "size": 65536, "exec": false}]
    }));
    let d = accept(json!([web]));
    let o = &d.container("web").unwrap().options;
    assert_eq!(
        o.security_opt,
        ["label=disable", "seccomp:unconfined", "apparmor=unconfined"]
    );
    let logging = o.logging.as_ref().unwrap();
    assert_eq!(logging.driver.as_deref(), Some("local"));
    assert_eq!(logging.options["max-file"], "2");
    assert_eq!(o.tmpfs[0].docker_options(), "exec,uid=1000,gid=1001");
    assert_eq!(o.tmpfs[1].docker_options(), "size=65536,noexec");
    assert_eq!(o.extra_hosts["gw"].to_string(), "host-gateway");
    // The canonical form reads back as the same declaration.
    let canonical = serde_json::to_value(&d).unwrap();
    assert_eq!(accept(canonical["resources"].clone()), d);
    // Options alone: the runtime's default driver.
    let d = accept(json!([with(
        json!({"logging": {"options": {"max-size": "1m"}}})
    )]));
    let logging = d.container("web").unwrap().options.logging.clone().unwrap();
    assert_eq!(logging.driver, None);
}

#[test]
fn bad_security_options_log_drivers_and_tmpfs_owners_are_each_named() {
    let web = with(json!({
        "security-opt": ["seccomp=/etc/docker/seccomp.json", "no-new-privileges:true",
                         "label=disabled", "umask=0", "label=disable", "label=disable"],
        "logging": {"driver": "json file", "option": {}},
        "tmpfs": [{"target": "/run", "uid": -1, "gid": "root", "exec": "yes"}],
        "extra-hosts": {"gw": "host_gateway"}
    }));
    let problems = refuse(json!([web]));
    let at = |field: &str, words: &str| assert_problem(&problems, Some("web"), Some(field), words);
    at(
        "security-opt[0]",
        "seccomp profile file is read by Docker's command line",
    );
    at("security-opt[1]", "declared by the no-new-privileges field");
    at("security-opt[2]", "not an SELinux label option");
    at("security-opt[3]", "a security option is label=disable");
    at("security-opt[5]", "named twice");
    at("logging.driver", "not a log driver name");
    at("logging.option", "unknown field; did you mean \"options\"?");
    at("tmpfs[0].uid", "not a numeric id");
    at("tmpfs[0].gid", "not a numeric id");
    at("tmpfs[0].exec", "");
    at("extra-hosts.gw", "not an IP address, nor \"host-gateway\"");
}

#[test]
fn a_step_s_output_stays_in_the_journal_so_its_logging_is_refused() {
    let mut step = with(json!({"logging": {"driver": "none"}, "run-once": true}));
    step["id"] = json!("migrate");
    let problems = refuse(json!([step]));
    assert_problem(
        &problems,
        Some("migrate"),
        Some("logging"),
        "a step's output goes to the journal",
    );
}
