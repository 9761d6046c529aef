//! The real stacks of tests/fixtures/compose/stacks/ imported, pinned
//! through the fake runtime, and checked as `check` checks a declaration;
//! with what each keeps that an earlier import refused or mistranslated.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use serde_json::{json, Value};

use super::{import, Source};
use crate::runtime::fake::FakeRuntime;

const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// The stack `name` copied where its relative binds may be declared
/// (outside /tmp), imported and checked: the declaration and the notes.
async fn stack(name: &str) -> (Value, Vec<String>) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/compose/stacks")
        .join(name);
    let dir = crate::test_dirs::test_dir();
    let project = dir.path().join(name);
    std::fs::create_dir_all(&project).unwrap();
    for entry in std::fs::read_dir(&from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), project.join(entry.file_name())).unwrap();
    }
    let fake = FakeRuntime::new();
    fake.set_repo_digests(
        "reg.test/busybox:stable",
        &[&format!("reg.test/busybox@{DIGEST}")],
    );
    let src = Source {
        dir: project.clone(),
        environment: [("HOME", "/root")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Source::default()
    };
    let imported = import(&src, Some(&fake))
        .await
        .unwrap_or_else(|p| panic!("{name}: {p:#?}"));
    // What `check` says: no problem, whatever it warns of.
    crate::declaration::parse(&imported.bytes).unwrap_or_else(|r| panic!("{name}: {r}"));
    (
        serde_json::from_slice(&imported.bytes).unwrap(),
        imported.notes,
    )
}

fn resource<'a>(d: &'a Value, id: &str) -> &'a Value {
    d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {d:#}"))
}

fn noted(notes: &[String], words: &str) {
    assert!(
        notes.iter().any(|n| n.contains(words)),
        "no {words:?} in {notes:#?}"
    );
}

#[tokio::test]
async fn immich_keeps_the_image_s_health_checks() {
    let (d, _) = stack("immich").await;
    let server = resource(&d, "immich-server");
    assert_eq!(server["name"], "immich_server");
    assert_eq!(server.get("health"), None, "the image's check kept");
    assert_eq!(resource(&d, "immich-machine-learning").get("health"), None);
    assert_eq!(
        resource(&d, "database")["health"],
        json!({"interval": 300, "start-period": 300})
    );
    assert_eq!(
        resource(&d, "redis")["health"]["command"],
        json!(["/bin/sh", "-c", "redis-cli ping || exit 1"])
    );
    assert_eq!(
        server["mounts"][0]["source"], "/srv/immich-stack/library",
        "{server:#}"
    );
    assert_eq!(resource(&d, "database")["env"]["POSTGRES_DB"], "immich");
}

#[tokio::test]
async fn pihole_asks_cloudflared_at_its_fixed_address_after_it() {
    let (d, _) = stack("pihole").await;
    let cloudflared = resource(&d, "cloudflared");
    assert_eq!(cloudflared["networks"][0]["ipv4-address"], "172.20.0.2");
    assert_eq!(
        resource(&d, "network-pihole_net")["subnet"],
        "172.20.0.0/24"
    );
    let pihole = resource(&d, "pihole");
    assert_eq!(pihole["depends-on"], json!([{"id": "cloudflared"}]));
    assert_eq!(pihole["ports"].as_array().unwrap().len(), 3);
    assert_eq!(pihole["cap-add"], json!(["NET_ADMIN"]));
}

#[tokio::test]
async fn minecraft_s_data_under_home_is_left_to_docker() {
    let (d, notes) = stack("minecraft").await;
    let mc = resource(&d, "mc");
    assert_eq!(mc["mounts"][0]["source"], "/root/minecraft_data");
    assert!(
        d["resources"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["type"] != "directory"),
        "{d:#}"
    );
    noted(
        &notes,
        "/root/minecraft_data does not exist: left to Docker",
    );
    noted(&notes, "mc: tty: means nothing on a node");
    assert_eq!(mc["env"]["EULA"], "TRUE");
}

#[tokio::test]
async fn wordpress_imports_as_the_docs_say() {
    let (d, notes) = stack("wordpress").await;
    assert_eq!(resource(&d, "db")["restart"], "always");
    assert_eq!(resource(&d, "volume-db_data")["name"], "wordpress_db_data");
    noted(&notes, "db: expose: means nothing on a node");
}

#[tokio::test]
async fn traefik_s_cleared_entrypoint_and_read_only_root_are_kept() {
    let (d, notes) = stack("traefik").await;
    let t = resource(&d, "traefik");
    assert_eq!(t["entrypoint"], json!([]));
    assert_eq!(t["read-only-root"], true);
    assert_eq!(t["no-new-privileges"], true);
    assert_eq!(t["mounts"][0]["read-only"], true);
    noted(&notes, "traefik: read_only: \"yes\" read as true");
}

#[tokio::test]
async fn vaultwarden_s_init_step_and_typed_fields_read_as_compose_reads_them() {
    let (d, _) = stack("vaultwarden").await;
    assert_eq!(resource(&d, "init")["run-once"], true);
    let vw = resource(&d, "vaultwarden");
    assert_eq!(vw["restart"], "unless-stopped");
    assert_eq!(
        vw["tmpfs"],
        json!([{"target": "/tmp", "mode": "1777", "size": 67108864}])
    );
    assert_eq!(vw["health"]["retries"], 5);
    assert_eq!(vw["ports"][0]["address"], "127.0.0.1");
}

#[tokio::test]
async fn mailu_s_shared_env_file_with_quotes_is_read_as_compose_reads_it() {
    let (d, _) = stack("mailu").await;
    for id in ["front", "resolver", "admin", "imap", "smtp", "webmail"] {
        let c = resource(&d, id);
        assert_eq!(c["env-files-format"], "compose", "{id}: {c:#}");
        assert!(c["env-files"][0]
            .as_str()
            .unwrap()
            .ends_with("/mailu/mailu.env"));
    }
    assert_eq!(resource(&d, "redis").get("env-files-format"), None);
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compose/stacks/mailu/mailu.env"),
    )
    .unwrap();
    let env: std::collections::BTreeMap<String, String> =
        crate::container_spec::compose_env_file(&text)
            .unwrap()
            .into_iter()
            .collect();
    assert_eq!(env["HOSTNAMES"], "mail.example.org,mx.example.org");
    assert_eq!(env["MESSAGE_SIZE_LIMIT"], "50000000");
    assert_eq!(env["SITENAME"], "Mailu");
    assert!(env["WELCOME_BODY"].starts_with("Welcome to your new email account, if"));
    assert_eq!(
        resource(&d, "resolver")["networks"][0]["ipv4-address"],
        "192.168.203.254"
    );
}

#[tokio::test]
async fn loki_s_replicas_and_extended_targets_are_each_a_container() {
    let (d, _) = stack("loki").await;
    for target in ["read", "write"] {
        for i in 1..=3 {
            let c = resource(&d, &format!("{target}-{i}"));
            assert_eq!(c["name"], format!("loki-{target}-{i}"));
            // From the base in loki-common.yaml.
            assert_eq!(c["env"], json!({"LOKI_CONFIG": "/etc/loki/config.yaml"}));
            assert_eq!(c["restart"], "always");
            assert!(c["mounts"][0]["source"]
                .as_str()
                .unwrap()
                .ends_with("/loki/loki-config.yaml"));
            assert_eq!(c["command"][3], format!("-target={target}"));
        }
    }
    // The gateway waits for each replica of both paths.
    let after: Vec<&str> = resource(&d, "gateway")["depends-on"]
        .as_array()
        .unwrap()
        .iter()
        .map(|dep| dep["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        after,
        ["read-1", "read-2", "read-3", "write-1", "write-2", "write-3"]
    );
    assert_eq!(resource(&d, "backend")["name"], "loki-backend-1");
}
