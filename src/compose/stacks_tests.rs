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

#[tokio::test]
async fn jitsi_s_bare_names_come_from_its_env_file_and_prosody_answers_as_xmpp() {
    let (d, notes) = stack("jitsi").await;
    let web = resource(&d, "web");
    assert_eq!(web["env"]["PUBLIC_URL"], "https://meet.example.com");
    assert_eq!(web["env"]["XMPP_DOMAIN"], "meet.jitsi");
    // Set nowhere: left out, as compose leaves it out.
    assert_eq!(web["env"].get("AMPLITUDE_ID"), None, "{web:#}");
    assert_eq!(web["restart"], "unless-stopped");
    assert_eq!(
        resource(&d, "prosody")["networks"][0]["aliases"],
        json!(["prosody", "xmpp.meet.jitsi"])
    );
    assert_eq!(
        resource(&d, "jvb")["ports"],
        json!([{"address": "127.0.0.1", "container": 10000, "host": 10000, "protocol": "udp"}])
    );
    noted(&notes, "prosody: volumes: \"./jitsi-meet-cfg/prosody/config:/config:Z\": Z: SELinux labels are not changed");
}

#[tokio::test]
async fn synapse_s_shell_check_keeps_its_escaped_dollar_and_labels_their_backticks() {
    let (d, _) = stack("synapse").await;
    let s = resource(&d, "synapse");
    assert_eq!(
        s["health"]["command"],
        json!([
            "/bin/sh",
            "-c",
            "test -n \"$SYNAPSE_CONFIG_PATH\" || exit 1"
        ])
    );
    assert_eq!(
        s["labels"]["traefik.http.routers.http-synapse.rule"],
        "Host(`matrix.example.com`)"
    );
    assert_eq!(
        resource(&d, "db")["env"]["POSTGRES_INITDB_ARGS"],
        "--encoding=UTF-8 --lc-collate=C --lc-ctype=C"
    );
}

#[tokio::test]
async fn searxng_s_capabilities_tmpfs_and_log_options_are_kept() {
    let (d, _) = stack("searxng").await;
    let caddy = resource(&d, "caddy");
    assert_eq!(caddy["network"], "host");
    assert_eq!(caddy["name"], "caddy");
    assert_eq!(caddy["cap-drop"], json!(["ALL"]));
    assert_eq!(caddy["cap-add"], json!(["NET_BIND_SERVICE"]));
    let redis = resource(&d, "redis");
    assert_eq!(
        redis["tmpfs"],
        json!([{"target": "/var/lib/valkey", "size": 16777216, "mode": "0700"}])
    );
    assert_eq!(redis["command"][3], "valkey-server");
    for id in ["caddy", "redis", "searxng"] {
        assert_eq!(
            resource(&d, id)["logging"],
            json!({"driver": "json-file", "options": {"max-size": "1m", "max-file": "1"}}),
            "{id}"
        );
    }
}

#[tokio::test]
async fn airflow_s_anchors_merge_and_its_init_runs_first_as_root() {
    let (d, _) = stack("airflow").await;
    let init = resource(&d, "airflow-init");
    assert_eq!(init["run-once"], true);
    assert_eq!(init["user"], "0:0");
    assert_eq!(init["entrypoint"], json!(["/bin/sh"]));
    assert!(init["command"][1]
        .as_str()
        .unwrap()
        .contains("chown -R \"50000:0\""));
    assert_eq!(init["env"]["_AIRFLOW_DB_MIGRATE"], "true");
    assert_eq!(
        init["depends-on"],
        json!([
            {"id": "postgres", "condition": "healthy"},
            {"id": "redis", "condition": "healthy"}
        ])
    );
    let worker = resource(&d, "airflow-worker");
    assert_eq!(worker["user"], "50000:0");
    assert_eq!(worker["env"]["DUMB_INIT_SETSID"], "0");
    assert_eq!(worker["env"]["AIRFLOW__CORE__EXECUTOR"], "CeleryExecutor");
    assert_eq!(
        worker["depends-on"],
        json!([
            {"id": "airflow-webserver"},
            {"id": "postgres", "condition": "healthy"},
            {"id": "redis", "condition": "healthy"}
        ])
    );
    assert_eq!(
        resource(&d, "airflow-scheduler")["health"]["command"],
        json!(["/bin/sh", "-c", "test -n \"${AIRFLOW__CORE__EXECUTOR}\""])
    );
}

#[tokio::test]
async fn photoprism_s_unconfined_security_options_and_grace_period_are_kept() {
    let (d, notes) = stack("photoprism").await;
    let p = resource(&d, "photoprism");
    assert_eq!(
        p["security-opt"],
        json!(["seccomp:unconfined", "apparmor:unconfined"])
    );
    assert_eq!(p["stop-grace"], 10);
    assert_eq!(p["working-dir"], "/photoprism");
    assert_eq!(p["env"]["PHOTOPRISM_ORIGINALS_LIMIT"], "5000");
    assert_eq!(p["mounts"][0]["source"], "/root/Pictures");
    noted(&notes, "/root/Pictures does not exist: left to Docker");
    assert_eq!(
        resource(&d, "mariadb")["command"][0],
        "--innodb-buffer-pool-size=512M"
    );
}

#[tokio::test]
async fn kong_s_migrations_run_first_and_its_root_is_read_only() {
    let (d, notes) = stack("kong").await;
    assert_eq!(resource(&d, "kong-migrations")["run-once"], true);
    assert_eq!(
        resource(&d, "kong-migrations")["depends-on"],
        json!([{"id": "db", "condition": "healthy"}])
    );
    let kong = resource(&d, "kong");
    assert_eq!(kong["user"], "1000");
    assert_eq!(kong["read-only-root"], true);
    assert_eq!(kong["no-new-privileges"], true);
    assert_eq!(kong["restart"], "on-failure");
    assert_eq!(kong["env"]["KONG_PG_HOST"], "db");
    assert_eq!(kong["env"]["KONG_PREFIX"], "/var/run/kong");
    assert_eq!(kong["mounts"][0]["source"], "kong_kong_prefix_vol");
    assert_eq!(
        kong["mounts"][3]["target"],
        "/run/secrets/kong_postgres_password"
    );
    assert_eq!(kong["mounts"][3]["read-only"], true);
    assert_eq!(kong["ports"][0]["address"], "0.0.0.0");
    noted(&notes, "db: tty: means nothing on a node");
}

#[tokio::test]
async fn nextcloud_s_secrets_and_shared_volume_are_mounted_where_compose_mounts_them() {
    let (d, _) = stack("nextcloud").await;
    let app = resource(&d, "app");
    let targets: Vec<&str> = app["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["target"].as_str().unwrap())
        .collect();
    assert_eq!(targets.len(), 6, "{app:#}");
    assert!(targets.contains(&"/run/secrets/postgres_password"));
    assert_eq!(
        resource(&d, "cron")["mounts"][0]["source"],
        "nextcloud_nextcloud"
    );
    assert_eq!(app["mounts"][0]["source"], "nextcloud_nextcloud");
}

#[tokio::test]
async fn gitea_s_named_container_and_ssh_port_are_kept() {
    let (d, _) = stack("gitea").await;
    let server = resource(&d, "server");
    assert_eq!(server["name"], "gitea");
    assert_eq!(server["ports"][1]["host"], 222);
    assert_eq!(server["ports"][1]["container"], 22);
    assert_eq!(server["env"]["GITEA__database__HOST"], "db:5432");
    assert_eq!(server["mounts"][1]["read-only"], true);
}

#[tokio::test]
async fn paperless_s_own_environment_wins_over_its_env_file() {
    let (d, _) = stack("paperless").await;
    let web = resource(&d, "webserver");
    assert_eq!(web["env"]["PAPERLESS_DBHOST"], "db");
    assert!(web["env-files"][0]
        .as_str()
        .unwrap()
        .ends_with("/paperless/docker-compose.env"));
    assert_eq!(
        resource(&d, "gotenberg")["command"],
        json!([
            "gotenberg",
            "--chromium-disable-javascript=true",
            "--chromium-allow-list=file:///tmp/.*"
        ])
    );
}

#[tokio::test]
async fn home_assistant_runs_privileged_on_the_host_s_network() {
    let (d, _) = stack("homeassistant").await;
    let ha = resource(&d, "homeassistant");
    assert_eq!(ha["network"], "host");
    assert_eq!(ha["privileged"], true);
    assert_eq!(ha["name"], "homeassistant");
    assert_eq!(ha["mounts"][2]["source"], "/run/dbus");
    assert_eq!(ha["mounts"][2]["read-only"], true);
}

#[tokio::test]
async fn netdata_s_capabilities_and_apparmor_are_kept() {
    let (d, _) = stack("netdata").await;
    let n = resource(&d, "netdata");
    assert_eq!(n["cap-add"], json!(["SYS_PTRACE", "SYS_ADMIN"]));
    assert_eq!(n["security-opt"], json!(["apparmor:unconfined"]));
    assert_eq!(n["hostname"], "example.com");
    assert_eq!(n["network"], "host");
}

#[tokio::test]
async fn mastodon_s_unlimited_memlock_and_internal_network_are_kept() {
    let (d, _) = stack("mastodon").await;
    let es = resource(&d, "es");
    assert_eq!(
        es["ulimits"],
        json!({"memlock": {"soft": -1, "hard": -1}, "nofile": {"soft": 65536, "hard": 65536}})
    );
    assert_eq!(
        es["env"]["ES_JAVA_OPTS"],
        "-Xms512m -Xmx512m -Des.enforce.bootstrap.checks=true"
    );
    assert_eq!(resource(&d, "network-internal_network")["internal"], true);
    assert_eq!(resource(&d, "db")["shm-size"], 268435456);
    assert_eq!(
        resource(&d, "web")["command"],
        json!(["bundle", "exec", "puma", "-C", "config/puma.rb"])
    );
}

#[tokio::test]
async fn uptime_kuma_s_own_check_replaces_its_image_s() {
    let (d, _) = stack("uptimekuma").await;
    let kuma = resource(&d, "uptime-kuma");
    assert_eq!(kuma["name"], "uptime-kuma");
    assert_eq!(kuma["restart"], "unless-stopped");
    assert_eq!(kuma["health"]["start-period"], 180);
    assert_eq!(kuma["mounts"][1]["read-only"], true);
}

#[tokio::test]
async fn n8n_waits_for_its_database_s_check_and_reads_bare_names_from_env() {
    let (d, _) = stack("n8n").await;
    let db = resource(&d, "postgres");
    // Bare names take their values from `.env`.
    assert_eq!(db["env"]["POSTGRES_USER"], "changeUser");
    assert_eq!(db["env"]["POSTGRES_DB"], "n8n");
    let n8n = resource(&d, "n8n");
    assert_eq!(n8n["env"]["DB_POSTGRESDB_DATABASE"], "n8n");
    assert_eq!(
        n8n["depends-on"],
        json!([{"id": "postgres", "condition": "healthy"}])
    );
}

#[tokio::test]
async fn authentik_s_required_password_and_root_worker_are_kept() {
    let (d, _) = stack("authentik").await;
    let db = resource(&d, "postgresql");
    assert_eq!(db["env"]["POSTGRES_PASSWORD"], "q2bVV1hDpP5NG1cBxC9MC0b4n");
    assert_eq!(db["env"]["POSTGRES_USER"], "authentik");
    let worker = resource(&d, "worker");
    assert_eq!(worker["user"], "root");
    assert_eq!(worker["command"][3], "worker");
    assert_eq!(
        resource(&d, "server")["depends-on"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn outline_s_one_env_file_serves_three_services() {
    let (d, _) = stack("outline").await;
    for id in ["outline", "redis", "postgres"] {
        assert!(resource(&d, id)["env-files"][0]
            .as_str()
            .unwrap()
            .ends_with("/outline/docker.env"));
    }
    assert_eq!(resource(&d, "postgres")["env"]["POSTGRES_DB"], "outline");
}

#[tokio::test]
async fn plausible_keeps_clickhouse_s_open_file_limits_and_its_config_files() {
    let (d, _) = stack("plausible").await;
    let events = resource(&d, "plausible_events_db");
    assert_eq!(
        events["ulimits"]["nofile"],
        json!({"soft": 16384, "hard": 16384})
    );
    assert_eq!(events["mounts"][2]["read-only"], true);
    let web = resource(&d, "plausible");
    assert_eq!(web["command"][0], "sh");
    assert_eq!(web["env"]["HTTP_PORT"], "8000");
}
