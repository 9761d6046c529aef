//! Compose's structure as `import` meets it: `!reset` and `!override`
//! across each kind of field and each way fields merge, and bare
//! `environment` names resolved from the environment and `.env`.
#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};

use super::{import, Source};

/// A project of `files` (the first is `compose.yaml`) imported without
/// pinning, in the process environment `env`.
async fn run(files: &[(&str, &str)], env: &[(&str, &str)]) -> Result<Value, Vec<String>> {
    let dir = tempfile::Builder::new().prefix("shape").tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let src = Source {
        dir: dir.path().to_path_buf(),
        project_name: Some("p".into()),
        environment: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Source::default()
    };
    import(&src, None)
        .await
        .map(|i| serde_json::from_slice(&i.bytes).unwrap())
}

fn resource<'a>(d: &'a Value, id: &str) -> &'a Value {
    d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {d:#}"))
}

const BASE: &str = "services:
  web:
    image: reg.test/busybox:stable
    user: '1000'
    command: [sleep, '9']
    ports: ['8080:80', '8443:443']
    dns: [1.1.1.1]
    volumes: ['./a:/a', 'logs:/logs']
    environment: [A=1, B=2]
    labels: {x: '1', y: '2'}
    healthcheck: {test: [CMD, 'true'], interval: 5s, retries: 2}
volumes:
  logs: {}
";

#[tokio::test]
async fn reset_and_override_apply_to_each_kind_of_field() {
    // (the later file's lines under `web`, the field, what it becomes)
    let cases: &[(&str, &str, Value)] = &[
        // a scalar
        ("user: !reset null", "user", Value::Null),
        ("user: !override '2000'", "user", json!("2000")),
        // a list joined without repeats
        ("ports: !reset []", "ports", Value::Null),
        (
            "ports: !override ['9090:80']",
            "ports",
            json!([{"host": 9090, "container": 80, "protocol": "tcp"}]),
        ),
        ("dns: !reset []", "dns", Value::Null),
        ("dns: !override [8.8.8.8]", "dns", json!(["8.8.8.8"])),
        // a list replaced whole
        ("command: !reset null", "command", Value::Null),
        // a list merged by target
        ("volumes: !override ['./b:/b']", "mounts", json!(["/b"])),
        // a list-form map, whole and one key of it
        ("environment: !reset []", "env", Value::Null),
        ("environment: !override {C: '3'}", "env", json!({"C": "3"})),
        ("environment: {A: !reset null}", "env", json!({"B": "2"})),
        // a map, one key of it
        ("labels: {x: !reset null}", "labels", json!({"y": "2"})),
        ("labels: !override {z: '3'}", "labels", json!({"z": "3"})),
        // a nested mapping
        ("healthcheck: !reset {}", "health", Value::Null),
        (
            "healthcheck: {retries: !reset null}",
            "health",
            json!("retries"),
        ),
    ];
    for (later, field, want) in cases {
        let over = format!("services:\n  web:\n    {later}\n");
        let d = run(
            &[("compose.yaml", BASE), ("compose.override.yaml", &over)],
            &[],
        )
        .await
        .unwrap_or_else(|p| panic!("{later}: {p:#?}"));
        let web = resource(&d, "web");
        let got = match *field {
            "mounts" => json!(web["mounts"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["target"] != "/logs")
                .map(|m| m["target"].clone())
                .collect::<Vec<_>>()),
            "health" if want.is_string() => {
                // The key is gone, the rest of the check kept.
                let h = &web["health"];
                assert!(h.get("retries").is_none(), "{later}: {h:#}");
                assert!(h.get("interval").is_some(), "{later}: {h:#}");
                json!("retries")
            }
            f => web.get(f).cloned().unwrap_or(Value::Null),
        };
        assert_eq!(&got, want, "{later}: {web:#}");
    }
}

#[tokio::test]
async fn a_reset_port_is_not_published_and_the_others_are_kept() {
    let d = run(
        &[
            ("compose.yaml", BASE),
            (
                "compose.override.yaml",
                "services:\n  web:\n    ports: !reset []\n",
            ),
        ],
        &[],
    )
    .await
    .unwrap();
    let web = resource(&d, "web");
    assert_eq!(web.get("ports"), None, "{web:#}");
    assert_eq!(web["dns"], json!(["1.1.1.1"]));
    assert_eq!(web["env"], json!({"A": "1", "B": "2"}));
}

#[tokio::test]
async fn bare_environment_names_take_their_values_as_compose_gives_them() {
    let compose = "services:
  list:
    image: reg.test/busybox:stable
    environment: [FROM_DOTENV, FROM_SHELL, BOTH, UNSET, PLAIN=x]
  map:
    image: reg.test/busybox:stable
    environment:
      FROM_DOTENV:
      BOTH:
      UNSET:
";
    let dotenv = "BASE=/srv\nFROM_DOTENV=\"${BASE}/data ${HOME_DIR:-none}\"\nBOTH=dotenv\n";
    let d = run(
        &[("compose.yaml", compose), (".env", dotenv)],
        &[
            ("FROM_SHELL", "shell"),
            ("BOTH", "shell"),
            ("HOME_DIR", "/home/op"),
        ],
    )
    .await
    .unwrap();
    // `.env`'s own `${...}` expanded, the shell over `.env`, a name set
    // nowhere left out (compose passes no value for it).
    assert_eq!(
        resource(&d, "list")["env"],
        json!({"FROM_DOTENV": "/srv/data /home/op", "FROM_SHELL": "shell", "BOTH": "shell", "PLAIN": "x"})
    );
    assert_eq!(
        resource(&d, "map")["env"],
        json!({"FROM_DOTENV": "/srv/data /home/op", "BOTH": "shell"})
    );
}

// ---- extends ----

#[tokio::test]
async fn extends_merges_the_base_of_the_same_file_by_compose_rules() {
    let compose = "services:
  base:
    image: reg.test/busybox:stable
    user: '1000'
    command: [sleep, '9']
    environment: [A=1, B=2]
    dns: [1.1.1.1]
    depends_on: [db]
  db:
    image: reg.test/busybox:stable
  web:
    extends: base
    command: [sleep, '5']
    environment: {B: '3'}
    dns: [8.8.8.8]
    ports: ['8443:443']
  mid:
    extends: {service: web}
    user: '2000'
    ports: !reset []
";
    let d = run(&[("compose.yaml", compose)], &[]).await.unwrap();
    let web = resource(&d, "web");
    assert_eq!(web["image"], "reg.test/busybox:stable");
    assert_eq!(web["user"], "1000");
    assert_eq!(web["command"], json!(["sleep", "5"]));
    assert_eq!(web["env"], json!({"A": "1", "B": "3"}));
    assert_eq!(web["dns"], json!(["1.1.1.1", "8.8.8.8"]));
    assert_eq!(web["ports"].as_array().unwrap().len(), 1, "{web:#}");
    // depends_on is the base's own.
    assert!(
        web.get("after").is_none() && web.get("depends-on").is_none(),
        "{web:#}"
    );
    // A chain, the last one's !reset taking the base's ports out.
    let mid = resource(&d, "mid");
    assert_eq!(mid["user"], "2000");
    assert_eq!(mid["env"], json!({"A": "1", "B": "3"}));
    assert_eq!(mid.get("ports"), None, "{mid:#}");
}

#[tokio::test]
async fn extends_reads_another_file_relative_to_the_extending_one() {
    let dir = tempfile::Builder::new().prefix("shape").tempdir().unwrap();
    let common = dir.path().join("common");
    std::fs::create_dir(&common).unwrap();
    std::fs::write(
        common.join("services.yaml"),
        "services:\n  app:\n    image: reg.test/busybox:${TAG}\n    volumes: ['./data:/data']\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("compose.yaml"),
        "services:\n  web:\n    extends: {file: common/services.yaml, service: app}\n    hostname: h\n",
    )
    .unwrap();
    let src = Source {
        dir: dir.path().to_path_buf(),
        project_name: Some("p".into()),
        environment: [("TAG".to_string(), "stable".to_string())].into(),
        ..Source::default()
    };
    let d: Value = serde_json::from_slice(&import(&src, None).await.unwrap().bytes).unwrap();
    let web = resource(&d, "web");
    let common = common.canonicalize().unwrap();
    assert_eq!(web["image"], "reg.test/busybox:stable");
    assert_eq!(web["hostname"], "h");
    assert_eq!(
        web["mounts"][0]["source"],
        json!(common.join("data").display().to_string()),
        "{web:#}"
    );
}

#[tokio::test]
async fn extends_refuses_a_cycle_by_name_a_missing_base_and_a_long_chain() {
    let cycle = "services:\n  a:\n    image: x\n    extends: b\n  b:\n    extends: {service: a}\n";
    let p = run(&[("compose.yaml", cycle)], &[]).await.unwrap_err();
    assert!(
        p.iter()
            .any(|l| l.contains("extends: a cycle: a (") && l.contains(" extends b (")),
        "{p:#?}"
    );
    let missing = "services:\n  web:\n    image: x\n    extends: nowhere\n";
    let p = run(&[("compose.yaml", missing)], &[]).await.unwrap_err();
    assert!(
        p.iter()
            .any(|l| l.contains("services.web.extends: no service \"nowhere\"")),
        "{p:#?}"
    );
    let mut long = String::from("services:\n  s0:\n    image: x\n");
    for n in 1..=super::extends::MAX_DEPTH + 1 {
        long.push_str(&format!("  s{n}:\n    extends: s{}\n", n - 1));
    }
    let p = run(&[("compose.yaml", &long)], &[]).await.unwrap_err();
    assert!(
        p.iter()
            .any(|l| l.contains("more than 16 services extended")),
        "{p:#?}"
    );
    // A file that is not there, or not a regular file, is named.
    let other = "services:\n  web:\n    extends: {file: /dev/null/x.yaml, service: a}\n";
    let p = run(&[("compose.yaml", other)], &[]).await.unwrap_err();
    assert!(
        p.iter().any(|l| l.contains("extends: /dev/null/x.yaml")),
        "{p:#?}"
    );
}

// ---- replicas ----

#[tokio::test]
async fn replicas_become_containers_named_as_compose_names_them() {
    let compose = "services:
  db:
    image: reg.test/busybox:stable
    healthcheck: {test: [CMD, 'true']}
  worker:
    image: reg.test/busybox:stable
    deploy: {mode: replicated, replicas: 3}
    ports: ['80']
    depends_on: {db: {condition: service_healthy}}
  web:
    image: reg.test/busybox:stable
    scale: 2
    depends_on: [worker]
  one:
    image: reg.test/busybox:stable
    deploy: {mode: global}
";
    let d = run(&[("compose.yaml", compose)], &[]).await.unwrap();
    for i in 1..=3 {
        let w = resource(&d, &format!("worker-{i}"));
        assert_eq!(w["name"], format!("p-worker-{i}"));
        assert_eq!(
            w["depends-on"],
            json!([{"id": "db", "condition": "healthy"}])
        );
        assert_eq!(w["ports"], json!([{"container": 80, "protocol": "tcp"}]));
    }
    for i in 1..=2 {
        let w = resource(&d, &format!("web-{i}"));
        assert_eq!(w["name"], format!("p-web-{i}"));
        // A dependency on a replicated service is on each replica.
        assert_eq!(
            w["depends-on"],
            json!([{"id": "worker-1"}, {"id": "worker-2"}, {"id": "worker-3"}])
        );
    }
    assert_eq!(resource(&d, "one")["name"], "p-one-1");
    assert_eq!(resource(&d, "db")["name"], "p-db-1");
    assert_eq!(d["resources"].as_array().unwrap().len(), 8, "{d:#}");
}

#[tokio::test]
async fn what_replicas_cannot_share_is_refused_as_compose_fails_on_it() {
    let refused = |p: &[String], words: &str| {
        assert!(
            p.iter().any(|l| l.contains(words)),
            "no {words:?} in {p:#?}"
        );
    };
    for (body, words) in [
        ("scale: 2\n    ports: ['8080:80']", "web: ports: 2 replicas cannot each publish the same host port"),
        ("scale: 2\n    container_name: front", "web: container_name: 2 replicas cannot share one container name"),
        ("scale: 2\n    deploy: {replicas: 3}", "web: scale: 2 where deploy.replicas is 3"),
        ("deploy: {mode: global, replicas: 2}", "web: deploy.mode: global runs one container a node"),
        ("deploy: {replicas: 0}", "web: deploy.replicas: 0: compose starts no container"),
        ("deploy: {replicas: -1}", "web: deploy.replicas: -1"),
        ("scale: 10002", "more than 10000 containers added by replicas"),
        (
            "scale: 2\n    networks: {n: {ipv4_address: 10.9.0.5}}\nnetworks:\n  n:\n    ipam: {config: [{subnet: 10.9.0.0/24}]}",
            "web: networks: 2 replicas cannot share one ipv4_address",
        ),
    ] {
        let compose = format!("services:\n  web:\n    image: reg.test/busybox:stable\n    {body}\n");
        let p = run(&[("compose.yaml", &compose)], &[])
            .await
            .err()
            .unwrap_or_else(|| panic!("{body}: imported"));
        refused(&p, words);
    }
}
