//! Device reservations (`gpus`, `deploy.resources.reservations.devices`)
//! and anonymous volumes imported as compose gives them to Docker; what
//! cannot be told apart refused with the fix.
#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};

use super::{import, Source};
use crate::runtime::fake::FakeRuntime;

const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

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
async fn device_reservations_and_gpus_become_device_requests() {
    let d = imported(
        "services:\n  web:\n    image: reg.test/busybox:stable\n    deploy:\n      resources:\n        reservations:\n          devices:\n            - {driver: nvidia, count: 1, capabilities: [gpu, utility], options: {a: b}}\n            - {driver: nvidia, device_ids: ['0', GPU-abc], capabilities: [gpu]}\n            - {count: all, capabilities: [compute]}\n    gpus: all\n",
    )
    .await
    .unwrap();
    assert_eq!(
        web(&d)["device-requests"],
        json!([
            {"driver": "nvidia", "count": 1, "capabilities": ["gpu", "utility"], "options": {"a": "b"}},
            {"driver": "nvidia", "device-ids": ["0", "GPU-abc"], "capabilities": ["gpu"]},
            {"count": "all", "capabilities": ["compute"]},
            {"count": "all", "capabilities": ["gpu"]}
        ])
    );
    // `gpus` entries gain the gpu capability, as compose adds it.
    let d = imported(
        "services:\n  web:\n    image: reg.test/busybox:stable\n    gpus: [{count: 2, capabilities: [utility]}]\n",
    )
    .await
    .unwrap();
    assert_eq!(
        web(&d)["device-requests"],
        json!([{"count": 2, "capabilities": ["utility", "gpu"]}])
    );
}

#[tokio::test]
async fn a_reservation_of_no_count_and_no_ids_is_refused_with_the_fix() {
    let p = imported(
        "services:\n  web:\n    image: reg.test/busybox:stable\n    deploy: {resources: {reservations: {devices: [{driver: nvidia, capabilities: [gpu]}]}}}\n    gpus: [{driver: nvidia}]\n",
    )
    .await
    .unwrap_err();
    let has = |words: &str| assert!(p.iter().any(|l| l.contains(words)), "{words}: {p:#?}");
    has("web: deploy.resources.reservations.devices: neither count nor device_ids: compose 1.29 asks for no device, later versions for every one; write count: all");
    has("web: gpus: neither count nor device_ids");
}

#[tokio::test]
async fn anonymous_volumes_are_imported_in_both_forms() {
    let d = imported(
        "services:\n  web:\n    image: reg.test/busybox:stable\n    volumes:\n      - /data\n      - {type: volume, target: /cache}\n",
    )
    .await
    .unwrap();
    assert_eq!(web(&d)["anonymous-volumes"], json!(["/data", "/cache"]));
    assert_eq!(web(&d).get("mounts"), None);
    let p = imported(
        "services:\n  web:\n    image: reg.test/busybox:stable\n    volumes: [{type: volume, target: /cache, read_only: true}]\n",
    )
    .await
    .unwrap_err();
    assert!(
        p.iter()
            .any(|l| l.contains("an anonymous volume is made empty")),
        "{p:#?}"
    );
}
