//! A service's `security_opt`, `logging` and tmpfs options imported as
//! compose gives them to Docker, and what Docker's daemon would not
//! honour refused by name.
#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};

use super::{import, Source};
use crate::runtime::fake::FakeRuntime;

const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// `compose` imported as project `p` (pinned through the fake runtime,
/// checked as `check` checks): the declaration, or every problem.
async fn imported(compose: &str) -> Result<Value, Vec<String>> {
    let dir = crate::test_dirs::test_dir();
    std::fs::write(dir.path().join("compose.yaml"), compose).unwrap();
    let fake = FakeRuntime::new();
    fake.set_repo_digests(
        "reg.test/busybox:stable",
        &[&format!("reg.test/busybox@{DIGEST}")],
    );
    let src = Source {
        dir: dir.path().to_path_buf(),
        project_name: Some("p".into()),
        ..Source::default()
    };
    let imported = import(&src, Some(&fake)).await?;
    Ok(serde_json::from_slice(&imported.bytes).unwrap())
}

fn web(d: &Value) -> &Value {
    d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "web")
        .unwrap()
}

#[tokio::test]
async fn security_options_logging_and_tmpfs_options_are_imported_as_written() {
    let d = imported(
        "services:\n  web:\n    image: reg.test/busybox:stable\n    security_opt: ['no-new-privileges:true', 'label=disable', 'seccomp:unconfined', 'apparmor:unconfined']\n    logging:\n      driver: local\n      options: {max-size: 1m, max-file: 3}\n    tmpfs: ['/run:exec,uid=1000,gid=1000,mode=1770', '/cache:noexec,size=1m']\n    extra_hosts: ['host.docker.internal:host-gateway']\n",
    )
    .await
    .unwrap();
    let w = web(&d);
    assert_eq!(w["no-new-privileges"], true);
    assert_eq!(
        w["extra-hosts"],
        json!({"host.docker.internal": "host-gateway"})
    );
    assert_eq!(
        w["security-opt"],
        json!(["label=disable", "seccomp:unconfined", "apparmor:unconfined"])
    );
    assert_eq!(
        w["logging"],
        json!({"driver": "local", "options": {"max-file": "3", "max-size": "1m"}})
    );
    assert_eq!(
        w["tmpfs"],
        json!([{"target": "/run", "mode": "1770", "exec": true, "uid": 1000, "gid": 1000},
               {"target": "/cache", "size": 1048576, "exec": false}])
    );
}

#[tokio::test]
async fn what_docker_s_daemon_would_not_honour_is_refused_naming_the_service() {
    let p = imported(
        "services:\n  web:\n    image: reg.test/busybox:stable\n    security_opt: ['seccomp:./profile.json', 'label=bogus']\n    tmpfs: ['/run:uid=root,suid']\n    healthcheck: {test: [CMD, 'true'], start_interval: 1s}\n  once:\n    image: reg.test/busybox:stable\n    logging: {driver: none}\n  after:\n    image: reg.test/busybox:stable\n    depends_on: {once: {condition: service_completed_successfully}}\n",
    )
    .await
    .unwrap_err();
    let has = |words: &str| assert!(p.iter().any(|l| l.contains(words)), "{words}: {p:#?}");
    has("web: security_opt: \"seccomp:./profile.json\": a seccomp profile file");
    has("web: security_opt: \"label=bogus\": not an SELinux label option");
    has("web: tmpfs: \"uid=root\": not a numeric id");
    has("web: tmpfs: \"suid\": size, mode, uid, gid, exec and noexec are supported");
    has("once: logging: another service waits for this one to complete");
    has("web: healthcheck.start_interval: needs Docker 25 or later (API 1.44)");
}
