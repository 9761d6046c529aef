//! Issue 37's compose items, each as `import` meets it: typed fields
//! cast as compose casts them (a test per cast), values that do not fit
//! refused by field, meanings kept (`entrypoint: []`, a health check of
//! timings alone), nothing accepted and then ignored, compose's tags,
//! `.env` and unset variables, and the bounds.
#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};

use super::{import, Source};

/// A project of `compose` (and `files`) imported without pinning.
async fn run(
    compose: &str,
    files: &[(&str, &str)],
    env: &[(&str, &str)],
) -> Result<(Value, Vec<String>), Vec<String>> {
    let dir = tempfile::Builder::new().prefix("trust").tempdir().unwrap();
    std::fs::write(dir.path().join("compose.yaml"), compose).unwrap();
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
        .map(|i| (serde_json::from_slice(&i.bytes).unwrap(), i.notes))
}

/// The service `web` of `body` (its lines, indented under it).
async fn web(body: &str) -> Result<(Value, Vec<String>), Vec<String>> {
    web_env(body, &[]).await
}

async fn web_env(body: &str, env: &[(&str, &str)]) -> Result<(Value, Vec<String>), Vec<String>> {
    let compose = format!(
        "services:\n  web:\n    image: reg.test/busybox:stable\n{}",
        body.lines()
            .map(|l| format!("    {l}\n"))
            .collect::<String>()
    );
    let (d, notes) = run(&compose, &[], env).await?;
    let web = d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "web")
        .cloned()
        .unwrap();
    Ok((web, notes))
}

fn refused(got: Result<(Value, Vec<String>), Vec<String>>, words: &str) -> Vec<String> {
    match got {
        Ok((v, _)) => panic!("imported, expected {words:?}: {v:#}"),
        Err(p) => {
            assert!(
                p.iter().any(|l| l.contains(words)),
                "no {words:?} in {p:#?}"
            );
            p
        }
    }
}

fn noted(notes: &[String], words: &str) {
    assert!(
        notes.iter().any(|n| n.contains(words)),
        "no {words:?} in {notes:#?}"
    );
}

// ---- typed fields, a test per cast ----

#[tokio::test]
async fn read_only_as_a_string_is_cast() {
    let (w, notes) = web("read_only: \"true\"").await.unwrap();
    assert_eq!(w["read-only-root"], true);
    assert!(notes.iter().all(|n| !n.contains("read_only")), "{notes:?}");
}

#[tokio::test]
async fn read_only_as_a_yaml_1_1_word_is_cast_with_compose_s_warning() {
    let (w, notes) = web("read_only: yes").await.unwrap();
    assert_eq!(w["read-only-root"], true);
    noted(
        &notes,
        "web: read_only: \"yes\" read as true, as compose reads it",
    );
    let (w, _) = web("read_only: Off").await.unwrap();
    assert_eq!(w["read-only-root"], false);
}

#[tokio::test]
async fn a_long_form_volume_s_read_only_from_a_default_is_cast() {
    let body =
        "volumes:\n  - {type: bind, source: /etc, target: /host-etc, read_only: \"${RO:-true}\"}";
    let (w, _) = web(body).await.unwrap();
    assert_eq!(w["mounts"][0]["read-only"], true, "{w:#}");
    let (w, _) = web_env(body, &[("RO", "false")]).await.unwrap();
    assert_eq!(w["mounts"][0]["read-only"], false);
}

#[tokio::test]
async fn a_read_only_that_cannot_be_read_is_refused_never_defaulted() {
    let p = refused(
        web("volumes:\n  - {type: bind, source: /etc, target: /x, read_only: \"${RO:-maybe}\"}")
            .await,
        "web: volumes[0].read_only: \"maybe\" is not a boolean",
    );
    assert_eq!(p.len(), 1, "{p:#?}");
    refused(
        web("read_only: 2").await,
        "web: read_only: 2 is not a boolean",
    );
}

#[tokio::test]
async fn privileged_as_a_number_is_refused_as_compose_refuses_it() {
    refused(
        web("privileged: 1").await,
        "web: privileged: 1 is not a boolean",
    );
    let (w, _) = web("privileged: \"TRUE\"").await.unwrap();
    assert_eq!(w["privileged"], true);
}

#[tokio::test]
async fn init_as_a_string_is_cast() {
    let (w, _) = web("init: \"yes\"").await.unwrap();
    assert_eq!(w["init"], true);
}

#[tokio::test]
async fn a_network_s_internal_as_a_string_is_cast() {
    let (d, _) = run(
        "services:\n  web:\n    image: x\n    networks: [back]\nnetworks:\n  back:\n    internal: \"true\"\n",
        &[],
        &[],
    )
    .await
    .unwrap();
    let back = d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "network-back")
        .unwrap();
    assert_eq!(back["internal"], true);
    refused(
        run(
            "services:\n  web: {image: x}\nnetworks:\n  back:\n    internal: sometimes\n",
            &[],
            &[],
        )
        .await,
        "networks.back.internal: \"sometimes\" is not a boolean",
    );
}

#[tokio::test]
async fn retries_as_a_string_or_a_default_are_cast() {
    let (w, _) = web("healthcheck:\n  test: [CMD, 'true']\n  retries: \"10\"")
        .await
        .unwrap();
    assert_eq!(w["health"]["retries"], 10);
    let (w, _) = web("healthcheck:\n  test: [CMD, 'true']\n  retries: ${R:-5}")
        .await
        .unwrap();
    assert_eq!(w["health"]["retries"], 5);
    refused(
        web("healthcheck:\n  test: [CMD, 'true']\n  retries: lots").await,
        "web: healthcheck.retries: \"lots\" is not a whole number",
    );
}

#[tokio::test]
async fn replicas_as_a_string_are_cast_and_none_refused() {
    let (d, _) = run(
        "services:\n  web:\n    image: reg.test/busybox:stable\n    deploy:\n      replicas: \"4\"\n",
        &[],
        &[],
    )
    .await
    .unwrap();
    let names: Vec<&Value> = d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["type"] == "container")
        .map(|r| &r["name"])
        .collect();
    assert_eq!(names, ["p-web-1", "p-web-2", "p-web-3", "p-web-4"]);
    let (w, _) = web("deploy:\n  replicas: \"1\"").await.unwrap();
    assert_eq!(w["name"], "p-web-1");
    refused(
        web("scale: 0").await,
        "web: scale: 0: compose starts no container",
    );
}

#[tokio::test]
async fn sizes_cpus_and_pids_are_cast() {
    let (w, _) = web("mem_limit: \"1g\"\ncpus: \"1.5\"\npids_limit: \"100\"\nshm_size: 67108864")
        .await
        .unwrap();
    assert_eq!(w["memory"], 1u64 << 30);
    assert_eq!(w["cpus"], 1.5);
    assert_eq!(w["pids-limit"], 100);
    assert_eq!(w["shm-size"], 67_108_864);
    let (w, notes) = web("pids_limit: -1").await.unwrap();
    assert_eq!(w.get("pids-limit"), None);
    noted(&notes, "web: pids_limit: 0 or below: no limit");
}

#[tokio::test]
async fn a_duration_without_its_unit_is_refused_as_compose_refuses_it() {
    refused(
        web("stop_grace_period: 10").await,
        "web: stop_grace_period: 10 is not a duration",
    );
    let (w, _) = web("stop_grace_period: 1m30s").await.unwrap();
    assert_eq!(w["stop-grace"], 90);
}

// ---- what does not fit ----

#[tokio::test]
async fn values_that_overflow_are_refused_naming_the_field() {
    refused(
        web("stop_grace_period: 18446744073709551616s").await,
        "web: stop_grace_period: \"18446744073709551616s\" is longer than a duration can be",
    );
    refused(
        web("healthcheck:\n  test: [CMD, 'true']\n  interval: 18446744073709551617s").await,
        "web: healthcheck.interval: \"18446744073709551617s\" is longer than a duration can be",
    );
    refused(
        web("mem_limit: 99999999999g").await,
        "web: mem_limit: \"99999999999g\" is larger than a size can be",
    );
    refused(
        web("mem_limit: 18446744073709551615").await,
        "web: mem_limit: 18446744073709551615 is not a size that fits in 63 bits",
    );
}

#[tokio::test]
async fn a_tmpfs_mode_is_read_as_compose_reads_it() {
    let (w, _) = web("volumes:\n  - {type: tmpfs, target: /x, tmpfs: {mode: 0o1777}}")
        .await
        .unwrap();
    assert_eq!(w["tmpfs"][0]["mode"], "1777");
    let (w, notes) = web("volumes:\n  - {type: tmpfs, target: /x, tmpfs: {mode: 1777}}")
        .await
        .unwrap();
    assert_eq!(w["tmpfs"][0]["mode"], "3361");
    noted(
        &notes,
        "1777 is read as a number, as compose reads it: octal 3361",
    );
    refused(
        web("volumes:\n  - {type: tmpfs, target: /x, tmpfs: {mode: \"1777\"}}").await,
        "web: volumes[0].tmpfs.mode: \"1777\": a mode is a number",
    );
}

#[tokio::test]
async fn a_zero_health_interval_is_docker_s_default_as_under_compose_never_one() {
    let (w, notes) = web("healthcheck:\n  test: [CMD, 'true']\n  interval: 0s\n  timeout: 500ms")
        .await
        .unwrap();
    assert_eq!(w["health"], json!({"command": ["true"], "timeout": 1}));
    noted(&notes, "web: healthcheck.interval: 0: Docker's default");
    noted(&notes, "web: healthcheck.timeout: 500ms: rounded up to 1 s");
}

// ---- meanings kept ----

#[tokio::test]
async fn an_empty_entrypoint_clears_the_image_s() {
    for body in ["entrypoint: []", "entrypoint: \"\""] {
        let (w, _) = web(body).await.unwrap();
        assert_eq!(w["entrypoint"], json!([]), "{body}");
    }
    let (w, notes) = web("command: \"\"").await.unwrap();
    assert_eq!(w.get("command"), None);
    noted(
        &notes,
        "web: command: empty: Docker runs the image's own command",
    );
}

#[tokio::test]
async fn a_health_check_not_disabled_keeps_the_image_s() {
    let (w, _) = web("healthcheck:\n  disable: false").await.unwrap();
    assert_eq!(w.get("health"), None, "{w:#}");
    let (w, _) = web("healthcheck:\n  interval: 10s\n  retries: 5")
        .await
        .unwrap();
    assert_eq!(w["health"], json!({"interval": 10, "retries": 5}));
    let (w, _) = web("healthcheck:\n  disable: \"true\"").await.unwrap();
    assert_eq!(w["health"], "none");
}

#[tokio::test]
async fn a_missing_bind_source_the_unit_cannot_write_is_left_to_docker() {
    let (d, notes) = run(
        "services:\n  mc:\n    image: x\n    volumes:\n      - /root/minecraft_data_missing:/data\n      - /usr/share/appdata-missing/x:/y\n",
        &[],
        &[],
    )
    .await
    .unwrap();
    let kinds: Vec<&str> = d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert!(!kinds.contains(&"directory"), "{d:#}");
    noted(
        &notes,
        "/root/minecraft_data_missing does not exist: left to Docker, which makes it",
    );
    noted(
        &notes,
        "/usr/share/appdata-missing/x does not exist: left to Docker",
    );
    // One the unit can write is still declared, and made by the apply.
    let (d, _) = run(
        "services:\n  mc:\n    image: x\n    volumes: [/srv/missing-for-a-test:/data]\n",
        &[],
        &[],
    )
    .await
    .unwrap();
    assert!(d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["type"] == "directory" && r["path"] == "/srv/missing-for-a-test"));
}

// ---- nothing accepted and then ignored ----

#[tokio::test]
async fn network_priority_orders_the_networks_as_compose_does() {
    let (d, _) = run(
        "services:\n  web:\n    image: x\n    networks:\n      a: {}\n      b: {priority: 100}\n      c: {priority: \"10\"}\nnetworks: {a: {}, b: {}, c: {}}\n",
        &[],
        &[],
    )
    .await
    .unwrap();
    let web = d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "web")
        .unwrap();
    let names: Vec<&str> = web["networks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["p_b", "p_c", "p_a"]);
}

#[tokio::test]
async fn what_cannot_be_honoured_is_refused_or_noted_never_ignored() {
    refused(
        web("volumes:\n  - {type: bind, source: /etc, target: /x, bind: {propagation: rshared}}")
            .await,
        "web: volumes[0].bind.propagation: \"rshared\": not supported",
    );
    let (_, notes) = web(
        "volumes:\n  - {type: bind, source: /etc, target: /x, bind: {selinux: z}}\n  - /etc:/y:z",
    )
    .await
    .unwrap();
    noted(
        &notes,
        "web: volumes[0].bind.selinux: SELinux labels are not changed",
    );
    noted(
        &notes,
        "web: volumes: \"/etc:/y:z\": z: SELinux labels are not changed",
    );
    refused(
        run("services:\n  web:\n    image: x\n    volumes: [{type: volume, source: d, target: /x, volume: {nocopy: true}}]\nvolumes: {d: {}}\n", &[], &[]).await,
        "web: volumes[0].volume.nocopy: not supported",
    );
    refused(
        run(
            "services:\n  web:\n    image: x\n    volumes: [\"d:/x:nocopy\"]\nvolumes: {d: {}}\n",
            &[],
            &[],
        )
        .await,
        "nocopy: not supported",
    );
    let (_, notes) = run(
        "services:\n  web:\n    image: x\n    depends_on: {db: {condition: service_started, restart: true}}\n  db: {image: x}\nnetworks:\n  n: {attachable: true}\n",
        &[],
        &[],
    )
    .await
    .unwrap();
    noted(
        &notes,
        "web: depends_on.db.restart: compose restarts this service",
    );
    noted(&notes, "networks.n.attachable: a swarm setting");
    refused(
        run(
            "services:\n  web: {image: x}\nnetworks:\n  n: {ipam: {driver: dhcp}}\n",
            &[],
            &[],
        )
        .await,
        "networks.n.ipam.driver: \"dhcp\": not supported",
    );
    let (_, notes) = run(
        "services:\n  web:\n    image: x\n    depends_on: {init: {condition: service_completed_successfully}}\n  init: {image: x, restart: always}\n",
        &[],
        &[],
    )
    .await
    .unwrap();
    noted(
        &notes,
        "init: restart: always: not kept: another service waits for this one to complete",
    );
}

#[tokio::test]
async fn reset_and_override_apply_across_files() {
    let dir = tempfile::Builder::new().prefix("trust").tempdir().unwrap();
    std::fs::write(
        dir.path().join("compose.yaml"),
        "services:\n  web:\n    image: x\n    ports: [\"8080:80\"]\n    environment: {A: '1', B: '2'}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("compose.override.yaml"),
        "services:\n  web:\n    ports: !reset []\n    environment: !override {C: '3'}\n",
    )
    .unwrap();
    let src = Source {
        dir: dir.path().to_path_buf(),
        project_name: Some("p".into()),
        ..Source::default()
    };
    let d: Value = serde_json::from_slice(&import(&src, None).await.unwrap().bytes).unwrap();
    let web = d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "web")
        .unwrap();
    assert_eq!(web.get("ports"), None, "{web:#}");
    assert_eq!(web["env"], json!({"C": "3"}));
}

// ---- variables ----

#[tokio::test]
async fn an_unset_variable_is_noted_and_dotenv_values_use_earlier_ones() {
    let (d, notes) = run(
        "services:\n  web:\n    image: x${TAG}\n    volumes: [\"${DATA}:/data\"]\n",
        &[(".env", "BASE=/srv/base-for-a-test\nDATA=${BASE}/data\n")],
        &[],
    )
    .await
    .unwrap();
    noted(&notes, "services.web.image: the variable TAG is not set: an empty string is used, as compose uses it");
    let web = d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "web")
        .unwrap();
    assert_eq!(web["mounts"][0]["source"], "/srv/base-for-a-test/data");
}

// ---- YAML read as compose reads it ----

#[tokio::test]
async fn keys_that_collide_and_unknown_tags_are_refused_with_their_place() {
    let p = refused(
        web("labels:\n  1x: a\n  \"1x\": b").await,
        "compose.yaml: line 6, column 7: a key given twice in one mapping (first at line 5)",
    );
    assert_eq!(p.len(), 1);
    refused(web("labels: {1: a}").await, "a key YAML reads as a number");
    refused(
        web("hostname: !weird x").await,
        "line 4, column 15: a tag compose gives no meaning to",
    );
    let (w, _) = web("hostname: !!str 10\nlabels: {a: !!binary aGVsbG8=}")
        .await
        .unwrap();
    assert_eq!(w["hostname"], "10");
    assert_eq!(w["labels"]["a"], "hello");
}

// ---- bounds and linear passes ----

#[tokio::test]
async fn a_port_range_past_the_bound_is_refused_not_expanded() {
    let p = refused(
        run(
            "services:\n  a: {image: x, ports: [\"1-65535:1-65535\"]}\n",
            &[],
            &[],
        )
        .await,
        "a: ports: more than 16384 ports published in this project",
    );
    assert_eq!(p.len(), 1, "{p:#?}");
    let (d, _) = run(
        "services:\n  turn: {image: x, ports: [\"49152-65535:49152-65535/udp\"]}\n",
        &[],
        &[],
    )
    .await
    .unwrap();
    let turn = d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "turn")
        .unwrap();
    assert_eq!(turn["ports"].as_array().unwrap().len(), 16_384);
}

#[tokio::test]
async fn twenty_thousand_services_import() {
    let mut compose = String::from("services:\n");
    for i in 0..20_000 {
        compose.push_str(&format!("  s{i}: {{image: x, depends_on: [s{}]}}\n", i / 2));
    }
    compose = compose.replace("s0: {image: x, depends_on: [s0]}", "s0: {image: x}");
    let (d, _) = run(&compose, &[], &[]).await.unwrap();
    assert_eq!(d["resources"].as_array().unwrap().len(), 20_001);
}

/// Images left as tags are checked as if pinned: a real problem past the
/// first thousand a refusal lists is still named (it was hidden behind
/// a thousand "not pinned" lines, filtered away, and a count).
#[tokio::test]
async fn a_problem_past_a_thousand_tags_is_still_named() {
    let mut compose = String::from("services:\n");
    for i in 0..1_500 {
        compose.push_str(&format!("  s{i}: {{image: x, restart: always}}\n"));
    }
    compose.push_str("  a: {image: x, restart: always, ports: [\"8080:80\"]}\n");
    compose.push_str("  b: {image: x, restart: always, ports: [\"8080:80\"]}\n");
    let problems = refused(run(&compose, &[], &[]).await, "8080");
    assert_eq!(problems.len(), 1, "{problems:#?}");
}

#[tokio::test]
async fn a_secret_file_that_is_missing_or_no_file_is_refused() {
    refused(
        run(
            "services:\n  web: {image: x, secrets: [key]}\nsecrets:\n  key: {file: ./nowhere}\n",
            &[],
            &[],
        )
        .await,
        "secrets.key.file: ",
    );
    refused(
        run(
            "services:\n  web: {image: x, configs: [c]}\nconfigs:\n  c: {file: /dev/null}\n",
            &[],
            &[],
        )
        .await,
        "configs.c.file: /dev/null is not a regular file",
    );
    let (d, _) = run(
        "services:\n  web: {image: x, secrets: [key]}\nsecrets:\n  key: {file: ./key}\n",
        &[("key", "k\n")],
        &[],
    )
    .await
    .unwrap();
    let web = d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "web")
        .unwrap();
    assert_eq!(web["mounts"][0]["target"], "/run/secrets/key");
}
