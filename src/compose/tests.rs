//! `import` as a whole, against project directories made here and the
//! fake runtime as the pinner: the fixture stack read, anchors, merges
//! and profiles, and every refusal listed with nothing made.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{import, Source};
use crate::runtime::fake::FakeRuntime;

const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// The fixture stack, copied to a directory of the test's own where its
/// env-file may be declared: the checkout may be a clone under /tmp,
/// whose paths `check` refuses. Removed when dropped.
struct Fixture {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl std::ops::Deref for Fixture {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

fn fixture() -> Fixture {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compose/shop");
    let dir = crate::test_dirs::test_dir();
    let shop = dir.path().join("shop");
    std::fs::create_dir(&shop).unwrap();
    for entry in std::fs::read_dir(&from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), shop.join(entry.file_name())).unwrap();
    }
    Fixture {
        _dir: dir,
        path: shop,
    }
}

fn source(dir: &Path, env: &[(&str, &str)]) -> Source {
    Source {
        dir: dir.to_path_buf(),
        environment: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        ..Source::default()
    }
}

fn pinner() -> FakeRuntime {
    let fake = FakeRuntime::new();
    fake.set_repo_digests(
        "reg.test/busybox:stable",
        &[&format!("reg.test/busybox@{DIGEST}")],
    );
    fake
}

async fn declaration(source: &Source) -> Value {
    let fake = pinner();
    let imported = import(source, Some(&fake))
        .await
        .unwrap_or_else(|p| panic!("{p:#?}"));
    serde_json::from_slice(&imported.bytes).unwrap()
}

fn resource<'a>(d: &'a Value, id: &str) -> &'a Value {
    d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {d:#}"))
}

#[tokio::test]
async fn the_fixture_stack_imports_pinned_checked_and_stable() {
    let shop = fixture();
    let src = source(&shop, &[("REGISTRY", "reg.test")]);
    let fake = pinner();
    let first = import(&src, Some(&fake)).await.unwrap();
    let again = import(&src, Some(&fake)).await.unwrap();
    assert_eq!(first.bytes, again.bytes, "the same project, the same bytes");
    let decl = crate::declaration::parse(&first.bytes).unwrap();
    assert_eq!(decl.resources.len(), 6);
    assert!(decl
        .resources
        .iter()
        .all(|r| r.module.as_ref().unwrap().as_str() == "shop"));
    let d: Value = serde_json::from_slice(&first.bytes).unwrap();
    let web = resource(&d, "web");
    assert_eq!(web["name"], "shop-web-1");
    assert_eq!(web["image"], format!("reg.test/busybox:stable@{DIGEST}"));
    // Interpolated from .env; `$$` left as one dollar for the shell.
    assert_eq!(web["env"]["GREETING"], "hello from the shop");
    assert!(web["command"][2]
        .as_str()
        .unwrap()
        .starts_with("echo \"$GREETING\""));
    assert_eq!(
        web["env-files"][0],
        shop.join("web.env").display().to_string()
    );
    assert_eq!(
        web["depends-on"],
        serde_json::json!([{"id": "db", "condition": "healthy"}])
    );
    assert_eq!(web["ports"].as_array().unwrap().len(), 2);
    assert_eq!(web["ports"][1]["protocol"], "udp");
    assert_eq!(web["networks"][0]["aliases"], serde_json::json!(["web"]));
    // Shared through the anchor and merge key.
    assert_eq!(web["cap-drop"], serde_json::json!(["ALL"]));
    assert_eq!(web["stop-grace"], 5);
    let db = resource(&d, "db");
    assert_eq!(db["networks"][0]["ipv4-address"], "10.231.7.10");
    assert_eq!(db["mounts"][0]["source"], "shop_dbdata");
    assert_eq!(resource(&d, "network-back")["subnet"], "10.231.7.0/24");
    // The services come after what they depend on.
    let ids: Vec<&str> = d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert!(ids.iter().position(|i| *i == "db") < ids.iter().position(|i| *i == "web"));
    assert!(
        first.notes.iter().any(|n| n.contains("db: no restart")),
        "{:?}",
        first.notes
    );
}

#[tokio::test]
async fn the_process_environment_wins_over_env_and_env_file_replaces_it() {
    let shop = fixture();
    let d = declaration(&source(
        &shop,
        &[("REGISTRY", "reg.test"), ("APP_GREETING", "from the shell")],
    ))
    .await;
    assert_eq!(resource(&d, "web")["env"]["GREETING"], "from the shell");
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.env");
    std::fs::write(&other, "APP_GREETING=from the other file\n").unwrap();
    let mut src = source(&shop, &[("REGISTRY", "reg.test")]);
    src.env_files = vec![other];
    let d = declaration(&src).await;
    assert_eq!(
        resource(&d, "web")["env"]["GREETING"],
        "from the other file"
    );
    // BUSYBOX_TAG is no longer read from .env: its default applies.
    assert_eq!(
        resource(&d, "web")["image"],
        format!("reg.test/busybox:stable@{DIGEST}")
    );
}

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix("app").tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

#[tokio::test]
async fn files_merge_in_order_and_profiles_and_defaults_apply() {
    let dir = project(&[
        (
            "compose.yaml",
            "services:\n  web:\n    image: reg.test/busybox:stable\n    environment: [A=1, B=2]\n    ports: [\"80:80\"]\n  debug:\n    image: reg.test/busybox:stable\n    profiles: [debug]\n",
        ),
        (
            "compose.override.yaml",
            "services:\n  web:\n    environment: {B: '3'}\n    ports: [\"443:443\"]\n    expose: [\"9000\"]\n",
        ),
    ]);
    let mut src = source(dir.path(), &[]);
    src.project_name = Some("site".into());
    let fake = pinner();
    let imported = import(&src, Some(&fake)).await.unwrap();
    let d: Value = serde_json::from_slice(&imported.bytes).unwrap();
    let web = resource(&d, "web");
    assert_eq!(web["name"], "site-web-1");
    assert_eq!(web["env"], serde_json::json!({"A": "1", "B": "3"}));
    assert_eq!(web["ports"].as_array().unwrap().len(), 2);
    // The implicit default network, the service's name an alias on it.
    assert_eq!(resource(&d, "network-default")["name"], "site_default");
    assert_eq!(web["networks"][0]["aliases"], serde_json::json!(["web"]));
    assert!(d["resources"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["id"] != "debug"));
    assert!(
        imported.notes.iter().any(|n| n.contains("web: expose")),
        "{:?}",
        imported.notes
    );
    src.profiles = vec!["debug".into()];
    let d = declaration(&src).await;
    resource(&d, "debug");
    // Without a name anywhere: the directory's, as compose makes it.
    let src = source(dir.path(), &[]);
    let d = declaration(&src).await;
    let dir_name = dir
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_lowercase();
    assert_eq!(resource(&d, "web")["module"], dir_name.as_str());
}

async fn refused(files: &[(&str, &str)]) -> Vec<String> {
    let dir = project(files);
    let mut src = source(dir.path(), &[]);
    src.project_name = Some("bad".into());
    let fake = pinner();
    match import(&src, Some(&fake)).await {
        Ok(i) => panic!("imported:\n{}", String::from_utf8_lossy(&i.bytes)),
        Err(problems) => problems,
    }
}

fn has(problems: &[String], words: &str) {
    assert!(
        problems.iter().any(|p| p.contains(words)),
        "no {words:?} in {problems:#?}"
    );
}

#[tokio::test]
async fn bad_input_is_refused_with_every_problem_listed() {
    let p = refused(&[("compose.yaml", "services: [web\n")]).await;
    has(&p, "not valid YAML");

    let p = refused(&[(
        "compose.yaml",
        "services:\n  web:\n    build: .\n  db:\n    environment: [A=1]\n  cache:\n    image: \"${IMG:?give IMG}\"\n    links: [db]\n    network_mode: service:nowhere\n    platform: linux/arm64\n    deploy: {replicas: 3, mode: everywhere}\n    magic: true\n    volumes: [data]\n  proxy:\n    image: \"x:${TAG\"\n    command: \"${CMD?give CMD}\"\n",
    )])
    .await;
    has(&p, "web: build: not supported: mesh-host runs published images; build and push it, then import again");
    has(&p, "db: image: missing");
    has(&p, "required variable IMG is unset: give IMG");
    has(&p, "required variable CMD is unset: give CMD");
    has(&p, "is left open");
    has(&p, "cache: links: not supported");
    has(
        &p,
        "cache: network_mode: \"service:nowhere\": \"nowhere\" is not a service of this project",
    );
    has(&p, "cache: deploy.mode: \"everywhere\": replicated");
    has(
        &p,
        "cache: magic: not a property of the compose specification here",
    );
    has(
        &p,
        "cache: volumes: \"data\" is not an absolute path in the container, nor SOURCE:TARGET",
    );

    let p = refused(&[(
        "compose.yaml",
        "services:\n  a:\n    image: reg.test/busybox:stable\n    depends_on: [b]\n  b:\n    image: reg.test/busybox:stable\n    depends_on: [a]\n  c:\n    image: reg.test/busybox:stable\n    depends_on: [nowhere]\n",
    )])
    .await;
    has(&p, "a cycle among a, b");
    has(&p, "c: depends_on: \"nowhere\" is not a service");
}

#[tokio::test]
async fn an_image_the_runtime_cannot_pin_is_refused_by_name() {
    let dir = project(&[(
        "compose.yaml",
        "services:\n  web:\n    image: reg.test/missing:1\n",
    )]);
    let mut src = source(dir.path(), &[]);
    src.project_name = Some("p".into());
    let fake = FakeRuntime::new();
    let p = import(&src, Some(&fake)).await.unwrap_err();
    has(&p, "image reg.test/missing:1: cannot be pinned");
    // Without pinning, the tags stay and only that is said.
    let imported = import(&src, None).await.unwrap();
    assert!(String::from_utf8_lossy(&imported.bytes).contains("\"reg.test/missing:1\""));
    assert!(imported
        .notes
        .iter()
        .any(|n| n.contains("check refuses them until")));
}

#[tokio::test]
async fn an_env_file_with_quotes_is_read_in_compose_s_format_and_one_using_the_environment_refused()
{
    // Where an env-file may be declared (not under /tmp).
    let dir = crate::test_dirs::test_dir();
    let files: &[(&str, &str)] = &[
        (
            "compose.yaml",
            "services:\n  plain:\n    image: reg.test/busybox:stable\n    env_file: [plain.env]\n  quoted:\n    image: reg.test/busybox:stable\n    env_file: [plain.env, quoted.env]\n  outside:\n    image: reg.test/busybox:stable\n    env_file: [outside.env]\n",
        ),
        ("plain.env", "# as written\nA=1\nB=two words\n"),
        (
            "quoted.env",
            "C=\"quoted\"\nexport D='kept $X'\nE=1 # the first\nF=\"two\nlines\"\n",
        ),
        ("outside.env", "BASE=x\nH=${TAG}\nI=${BASE}/i\nJ=\"$TAG\"\n"),
        (".env", "TAG=from-dotenv\n"),
    ];
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let mut src = source(dir.path(), &[]);
    src.project_name = Some("p".into());
    let fake = pinner();
    let p = import(&src, Some(&fake)).await.unwrap_err();
    // Only the file with values to expand is refused, by its lines.
    has(&p, "outside.env: lines 2, 3, 4: a value compose expands");
    // The fix comes last, and the bound on a message leaves it whole.
    has(&p, "write it out, or give it in environment:");
    assert_eq!(p.len(), 1, "{p:#?}");

    std::fs::remove_file(dir.path().join("outside.env")).unwrap();
    let text = std::fs::read_to_string(dir.path().join("compose.yaml")).unwrap();
    let text = text.replace("    env_file: [outside.env]\n", "");
    std::fs::write(dir.path().join("compose.yaml"), text).unwrap();
    let d: serde_json::Value =
        serde_json::from_slice(&import(&src, Some(&fake)).await.unwrap().bytes).unwrap();
    let find = |id: &str| {
        d["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .cloned()
            .unwrap()
    };
    // A file Docker reads as compose does keeps Docker's format.
    assert_eq!(find("plain").get("env-files-format"), None);
    let quoted = find("quoted");
    assert_eq!(quoted["env-files-format"], "compose");
    assert_eq!(quoted["env-files"].as_array().unwrap().len(), 2);
    // What the container reads at creation is what compose gives it.
    let read = std::fs::read_to_string(dir.path().join("quoted.env")).unwrap();
    assert_eq!(
        crate::container_spec::compose_env_file(&read).unwrap(),
        [
            ("C", "quoted"),
            ("D", "kept $X"),
            ("E", "1"),
            ("F", "two\nlines")
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
    );
}

#[tokio::test]
async fn the_labels_of_watchtower_and_podman_auto_update_follow_the_tag() {
    let dir = project(&[(
        "compose.yaml",
        "services:\n  a:\n    image: reg.test/busybox:stable\n    labels: {com.centurylinklabs.watchtower.enable: \"true\"}\n  b:\n    image: reg.test/busybox:stable\n    labels: [io.containers.autoupdate=registry]\n  c:\n    image: reg.test/busybox:stable\n    labels: {io.containers.autoupdate: local}\n",
    )]);
    let mut src = source(dir.path(), &[]);
    src.project_name = Some("site".into());
    let d = declaration(&src).await;
    assert_eq!(resource(&d, "a")["update"], "registry");
    assert_eq!(resource(&d, "b")["update"], "registry");
    assert_eq!(resource(&d, "c").get("update"), None, "{d:#}");
    // The labels stay on the containers.
    assert_eq!(
        resource(&d, "a")["labels"]["com.centurylinklabs.watchtower.enable"],
        "true"
    );
}
