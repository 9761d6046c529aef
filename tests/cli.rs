//! The command line as a user runs it: exit codes, output, and the
//! generated man page and completions. No node needed.

use std::process::{Command, Output};

fn mesh(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mesh-host"))
        .args(args)
        .env_remove("MESH_HOST_STATE_DIR")
        .output()
        .expect("run mesh-host")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn example(name: &str) -> String {
    format!("{}/examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn check_accepts_the_examples_with_a_one_line_summary() {
    for name in ["media.json", "registry.json", "webapp.json"] {
        let out = mesh(&["check", &example(name)]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        let text = stdout(&out);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.contains("accepted") && text.contains("scheduled step"),
            "{text}"
        );
    }
}

#[test]
fn check_refuses_with_every_problem_and_exit_2() {
    let out = mesh(&["check", &example("refused.json")]);
    assert_eq!(out.status.code(), Some(2));
    let expected = std::fs::read_to_string(example("refused.expected")).expect("expected");
    let text = stdout(&out);
    for line in expected.lines().filter(|l| !l.trim().is_empty()) {
        assert!(text.contains(line.trim()), "missing {line:?} in:\n{text}");
    }
    let json = mesh(&["check", "--json", &example("refused.json")]);
    assert_eq!(json.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(v["accepted"], false);
    assert_eq!(
        v["problems"].as_array().map(Vec::len),
        Some(expected.lines().filter(|l| !l.trim().is_empty()).count())
    );
}

#[test]
fn check_of_something_that_is_not_json_is_one_clear_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("d.json");
    std::fs::write(&path, b"{not json").expect("write");
    let out = mesh(&["check", path.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2));
    let text = stdout(&out);
    assert!(text.contains("not valid JSON"), "{text}");
    assert_eq!(text.lines().count(), 2, "a header and one problem: {text}");
}

#[test]
fn cron_previews_like_systemd_analyze_calendar() {
    let out = mesh(&[
        "cron",
        "30 2 * * *",
        "--zone",
        "Europe/Amsterdam",
        "--from",
        "2026-03-28T12:00:00+01:00",
        "--count",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // 2026-03-29 02:30 does not exist in Amsterdam: it runs right after the change.
    assert_eq!(
        stdout(&out),
        "2026-03-29T03:00:00+02:00\n2026-03-30T02:30:00+02:00\n2026-03-31T02:30:00+02:00\n"
    );
}

#[test]
fn cron_refuses_with_the_field_and_exit_2() {
    let out = mesh(&["cron", "0 0 30 2 *"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("never"), "{}", stderr(&out));
    let out = mesh(&["cron", "0 */5 * * * *"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("seconds"), "{}", stderr(&out));
    let out = mesh(&["cron", "61 * * * *"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("minute"), "{}", stderr(&out));
}

#[test]
fn misuse_is_exit_2_and_every_command_explains_itself() {
    assert_eq!(mesh(&["no-such-command"]).status.code(), Some(2));
    for cmd in [
        "check", "cron", "apply", "status", "run", "plan", "daemon", "logs", "history",
    ] {
        let out = mesh(&[cmd, "--help"]);
        assert_eq!(out.status.code(), Some(0), "{cmd}");
        assert!(
            stdout(&out).len() > 200,
            "{cmd} --help says too little:\n{}",
            stdout(&out)
        );
    }
}

#[test]
fn a_file_that_is_not_utf_8_is_refused_alike_by_apply_and_diff_with_or_without_local() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("d.json");
    std::fs::write(
        &file,
        b"{\"declaration\": 1, \"resources\": [{\"id\": \"caf\xe9\", \"type\": \"file\"}]}",
    )
    .expect("write");
    let f = file.to_str().expect("path");
    let sock = dir.path().join("none.sock");
    let state = dir.path().join("state");
    let common = [
        "--control-socket",
        sock.to_str().expect("path"),
        "--state-dir",
        state.to_str().expect("path"),
        // No runtime either: the refusal comes before both.
        "--docker-host",
        "unix:///nonexistent/docker.sock",
    ];
    let mut answers = Vec::new();
    for args in [
        vec!["apply", f, "--json"],
        vec!["apply", f, "--local", "--json"],
        vec!["diff", f, "--json"],
        vec!["diff", f, "--local", "--json"],
    ] {
        let out = mesh(&[&common[..], &args[..]].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let answer: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: no JSON ({e}): {}", stderr(&out)));
        assert_eq!(answer["accepted"], false, "{args:?}: {answer}");
        answers.push(answer);
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:#?}");
    assert!(!state.exists(), "a refused FILE made the state directory");
}

#[test]
fn without_a_daemon_the_client_says_so_and_points_at_local() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sock = dir.path().join("control.sock");
    let out = mesh(&["status", "--control-socket", sock.to_str().expect("path")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--local"), "{}", stderr(&out));
}

#[test]
fn man_page_and_completions_are_generated_from_the_same_definitions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = mesh(&["generate", dir.path().to_str().expect("path")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let man = std::fs::read_to_string(dir.path().join("mesh-host.8")).expect("man page");
    for cmd in [
        "check", "cron", "apply", "status", "run", "plan", "daemon", "logs", "history",
    ] {
        assert!(man.contains(cmd), "man page lacks {cmd}");
        let page = std::fs::read_to_string(dir.path().join(format!("mesh-host-{cmd}.8")))
            .unwrap_or_else(|e| panic!("mesh-host-{cmd}.8: {e}"))
            .replace("\\-", "-");
        assert!(
            page.contains(&format!("mesh-host-{cmd}")),
            "mesh-host-{cmd}.8 names itself"
        );
    }
    let run = std::fs::read_to_string(dir.path().join("mesh-host-run.8")).expect("run page");
    assert!(run.contains("local"), "the run page documents --local");
    for file in ["mesh-host.bash", "_mesh-host", "mesh-host.fish"] {
        let text = std::fs::read_to_string(dir.path().join(file)).expect(file);
        assert!(text.contains("plan"), "{file} completes the plan command");
    }
}

#[test]
fn check_refuses_declared_paths_under_tmp_naming_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("d.json");
    std::fs::write(
        &file,
        br#"{"declaration": 1, "resources": [
            {"id": "f", "type": "file", "path": "/tmp/app.conf", "content": "x"},
            {"id": "d", "type": "directory", "path": "/var/tmp/cache"},
            {"id": "c", "type": "container", "name": "c",
             "image": "r.test/c@sha256:0000000000000000000000000000000000000000000000000000000000000000",
             "env-files": ["/tmp/c.env"]}
        ]}"#,
    )
    .expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mesh-host"))
        .arg("check")
        .arg(&file)
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    for (id, path) in [
        ("f", "/tmp/app.conf"),
        ("d", "/var/tmp/cache"),
        ("c", "/tmp/c.env"),
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.contains(id) && l.contains(path) && l.contains("PrivateTmp=yes")),
            "{id} {path}: {stdout}"
        );
    }
}

#[test]
fn logs_refuses_a_service_and_a_count_of_no_fires_with_exit_2() {
    // Refused before the journal is read: no node needed.
    let out = mesh(&["logs", "db", "--declaration", &example("webapp.json")]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("db is not a step"),
        "{}",
        stderr(&out)
    );
    let out = mesh(&["logs", "migrate", "--fires", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--fires"), "{}", stderr(&out));
}

#[test]
fn check_refuses_paths_the_unit_cannot_write_and_the_hosts_own() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("d.json");
    std::fs::write(
        &file,
        br#"{"declaration": 1, "resources": [
            {"id": "usr", "type": "file", "path": "/usr/lib/app.conf", "content": "x"},
            {"id": "local", "type": "file", "path": "/usr/local/etc/app.conf", "content": "x"},
            {"id": "boot", "type": "directory", "path": "/boot/app"},
            {"id": "home", "type": "file", "path": "/home/app/.env", "content": "x"},
            {"id": "sysctl", "type": "file", "path": "/proc/sys/net/ipv4/ip_forward", "content": "1"},
            {"id": "state", "type": "file", "path": "/srv/mh/state/applied.json", "content": "{}"},
            {"id": "decl", "type": "file", "path": "/srv/mh/declaration.json", "content": "{}"},
            {"id": "default-state", "type": "directory", "path": "/var/lib/mesh-host/x"},
            {"id": "app", "type": "container", "name": "app",
             "image": "r.test/c@sha256:0000000000000000000000000000000000000000000000000000000000000000",
             "env-files": ["/usr/share/app/defaults.env"]}
        ]}"#,
    )
    .expect("write");
    let out = mesh(&[
        "--state-dir",
        "/srv/mh/state",
        "--declaration",
        "/srv/mh/declaration.json",
        "check",
        &file.to_string_lossy(),
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(2), "{text}{}", stderr(&out));
    for (id, needle) in [
        ("usr", "/usr/lib/app.conf (under /usr) is read-only to mesh-host.service (ProtectSystem=yes); put it under /etc, /srv, /var, /opt or /usr/local"),
        ("boot", "ProtectSystem=yes"),
        ("home", "ProtectHome=read-only"),
        ("sysctl", "ProtectKernelTunables=yes"),
        ("state", "own state directory (/srv/mh/state)"),
        ("decl", "the node's declaration file"),
    ] {
        assert!(
            text.lines().any(|l| l.contains(id) && l.contains(needle)),
            "{id}: {needle:?} not in:\n{text}"
        );
    }
    // /usr/local is the administrator's; env-files are only read; the
    // default state directory is not this invocation's.
    for id in ["local", "default-state", "app"] {
        assert!(
            !text
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{id}:"))),
            "{id} refused:\n{text}"
        );
    }
    assert_eq!(
        text.matches("\n").count(),
        7,
        "one heading and six problems:\n{text}"
    );
}

/// `check --json`'s problems as (resource, field, message).
fn check_problems(file: &std::path::Path) -> Vec<(String, String, String)> {
    let out = mesh(&["check", "--json", &file.to_string_lossy()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("check --json");
    v["problems"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .map(|p| {
                    let s = |k: &str| p[k].as_str().unwrap_or("").to_string();
                    (s("resource"), s("field"), s("message"))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn schema() -> serde_json::Value {
    let out = mesh(&["schema"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("the schema is JSON")
}

#[test]
fn the_schema_knows_every_resource_type_and_check_knows_every_field_it_lists() {
    let schema = schema();
    // The resource types check knows, from its own refusal of another.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("d.json");
    std::fs::write(
        &file,
        r#"{"declaration": 1, "resources": [{"id": "x", "type": "nonesuch"}]}"#,
    )
    .expect("write");
    let (_, _, message) = check_problems(&file).remove(0);
    let known: Vec<&str> = message
        .rsplit_once("one of ")
        .map(|(_, list)| list.split(", ").collect())
        .unwrap_or_default();
    let listed: Vec<&str> = schema["$defs"]["resource"]["properties"]["type"]["enum"]
        .as_array()
        .expect("the type enum")
        .iter()
        .filter_map(|t| t.as_str())
        .collect();
    assert_eq!(
        listed, known,
        "the schema's types against check's ({message})"
    );
    // Each property the schema gives a type is one check reads (a junk
    // value may be refused, but never as an unknown field).
    for kind in known {
        let props = schema["$defs"][kind]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("no $defs.{kind}.properties"));
        for key in props
            .keys()
            .filter(|k| !["id", "type"].contains(&k.as_str()))
        {
            let decl = serde_json::json!({"declaration": 1, "resources": [
                {"id": "x", "type": kind, key.as_str(): "junk"}
            ]});
            std::fs::write(&file, decl.to_string()).expect("write");
            let problems = check_problems(&file);
            assert!(
                !problems
                    .iter()
                    .any(|(_, f, m)| f == key && m.contains("unknown field")),
                "{kind}.{key} is in the schema but check does not know it: {problems:?}"
            );
        }
    }
}

#[test]
#[ignore = "needs python3-jsonschema (Debian): run tests/run"]
fn every_example_validates_against_the_schema_and_both_agree_on_the_refused_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let schema_file = dir.path().join("schema.json");
    std::fs::write(&schema_file, mesh(&["schema"]).stdout).expect("write the schema");
    let examples = ["media.json", "registry.json", "webapp.json", "refused.json"].map(example);
    let out = Command::new("/usr/bin/python3")
        .arg(format!(
            "{}/tests/schema/errors.py",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg(&schema_file)
        .args(&examples)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "the schema validator failed (apt-get install python3-jsonschema): {}",
        stderr(&out)
    );
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    for accepted in &examples[..3] {
        assert_eq!(found[accepted], serde_json::json!([]), "{accepted}");
    }
    // check's problems, as (resource index, field), less the ones only
    // check can see: rules between resources and facts of the machine.
    let refused = &examples[3];
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(refused).expect("read")).expect("json");
    let ids: Vec<&str> = doc["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| r["id"].as_str().unwrap_or(""))
        .collect();
    let check_only = [
        "is already the",             // unique ids and names
        "is this step itself",        // what while-stopped names
        "no container by that id",    // likewise
        "not an IANA time zone name", // the zone database
    ];
    let mut by_check: Vec<(i64, String)> = check_problems(std::path::Path::new(refused))
        .into_iter()
        .filter(|(_, _, m)| !check_only.iter().any(|c| m.contains(c)))
        .map(|(resource, field, _)| {
            let index = resource
                .strip_prefix("resources[")
                .and_then(|r| r.strip_suffix(']'))
                .and_then(|n| n.parse().ok())
                .or_else(|| ids.iter().position(|id| *id == resource).map(|i| i as i64))
                .unwrap_or(-1);
            (index, field)
        })
        .collect();
    by_check.sort();
    by_check.dedup();
    let mut by_schema: Vec<(i64, String)> = found[refused]
        .as_array()
        .expect("the refused example's errors")
        .iter()
        .map(|e| {
            (
                e[0].as_i64().unwrap_or(-2),
                e[1].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    by_schema.sort();
    assert!(!by_schema.is_empty());
    assert_eq!(
        by_schema, by_check,
        "schema (left) and check (right) disagree"
    );
}

#[test]
fn messages_name_the_fix_for_a_misspelt_field_a_byte_order_mark_yaml_and_no_runtime() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        path.to_string_lossy().into_owned()
    };
    let image = "r.test/c@sha256:0000000000000000000000000000000000000000000000000000000000000000";
    let misspelt = file(
        "misspelt.json",
        format!(
            r#"{{"declaration": 1, "resources": [{{"id": "app", "type": "container",
                "name": "app", "image": "{image}", "healthcheck": {{}}, "helth": "none",
                "mounts": [{{"source": "/srv/a", "target": "/a", "read_only": true}}]}}]}}"#
        )
        .as_bytes(),
    );
    let out = mesh(&["check", &misspelt]);
    assert_eq!(out.status.code(), Some(2));
    let text = stdout(&out);
    for line in [
        r#"app: healthcheck: unknown field; did you mean "health"?"#,
        r#"app: helth: unknown field; did you mean "health"?"#,
        r#"app: mounts[0].read_only: unknown field; did you mean "read-only"?"#,
    ] {
        assert!(text.contains(line), "{line:?} not in:\n{text}");
    }
    let bom = file(
        "bom.json",
        b"\xEF\xBB\xBF{\"declaration\": 1, \"resources\": []}",
    );
    let out = mesh(&["check", &bom]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).contains("byte order mark"), "{}", stdout(&out));
    let yaml = file("compose.yml", b"services:\n  web:\n    image: nginx\n");
    let out = mesh(&["check", &yaml]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).contains("looks like YAML"), "{}", stdout(&out));
    // No runtime at the endpoint: what to start, and how to name another.
    let empty = file("empty.json", br#"{"declaration": 1, "resources": []}"#);
    let state = dir.path().join("state").to_string_lossy().into_owned();
    let decl = dir
        .path()
        .join("declaration.json")
        .to_string_lossy()
        .into_owned();
    let out = mesh(&[
        "--state-dir",
        &state,
        "--declaration",
        &decl,
        "--docker-host",
        "unix:///nonexistent/docker.sock",
        "apply",
        "--local",
        &empty,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    for needed in ["docker.service", "podman.socket", "--docker-host"] {
        assert!(err.contains(needed), "{needed} not in: {err}");
    }
}

#[test]
fn the_readmes_first_declaration_is_accepted_as_it_stands() {
    let readme = include_str!("../README.md");
    let from = readme
        .find("## The declaration")
        .expect("the README has its declaration section");
    let block = readme[from..]
        .split("```json\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("a json block in that section");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("first.json");
    std::fs::write(&file, block).expect("write");
    let out = mesh(&["check", &file.to_string_lossy()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the README's first declaration is refused:\n{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stdout(&out).contains("scheduled step"), "{}", stdout(&out));
}

/// `import` run in `dir` with only `env` in its environment.
fn import_in(dir: &std::path::Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mesh-host"))
        .arg("import")
        .args(args)
        .current_dir(dir)
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .expect("run mesh-host import")
}

/// A directory of the test's own under which `check` accepts declared
/// paths: the target's, unless the checkout (and so the target) is a
/// clone under /tmp, which declarations may not name; then
/// /var/lib/mesh-host-tests, as the unit tests' `test_dirs` does. Asked of
/// `check` itself, which holds the rule.
fn declarable_dir() -> tempfile::TempDir {
    let probe = tempfile::tempdir().expect("dir");
    let accepts = |base: &std::path::Path| {
        let file = probe.path().join("probe.json");
        let decl = serde_json::json!({"declaration": 1, "resources": [
            {"id": "d", "type": "directory", "path": base.join("d")}]});
        std::fs::write(&file, decl.to_string()).expect("write");
        mesh(&["check", &file.to_string_lossy()]).status.success()
    };
    [env!("CARGO_TARGET_TMPDIR"), "/var/lib/mesh-host-tests"]
        .into_iter()
        .map(std::path::PathBuf::from)
        .find(|base| accepts(base) && std::fs::create_dir_all(base).is_ok())
        .map(|base| tempfile::tempdir_in(base).expect("dir"))
        .expect("a directory outside /tmp whose paths check accepts")
}

/// The fixture stack, copied to `dir`: its env-file is then declared at a
/// path `check` accepts wherever the checkout lives.
fn shop_fixture(dir: &std::path::Path) -> std::path::PathBuf {
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compose/shop");
    let shop = dir.join("shop");
    std::fs::create_dir(&shop).expect("mkdir");
    for entry in std::fs::read_dir(&from).expect("the fixture") {
        let entry = entry.expect("an entry");
        std::fs::copy(entry.path(), shop.join(entry.file_name())).expect("copy");
    }
    shop
}

#[test]
fn import_writes_a_declaration_check_reads_and_refuses_bad_projects_writing_nothing() {
    let owned = declarable_dir();
    let fixture = shop_fixture(owned.path());
    let dir = tempfile::tempdir().expect("dir");
    let out_file = dir.path().join("shop.json");
    let out_path = out_file.to_str().expect("utf-8");
    let out = import_in(
        &fixture,
        &[("REGISTRY", "reg.test")],
        &["--no-resolve", "-o", out_path],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("check refuses them until each is pinned"),
        "{}",
        stderr(&out)
    );
    let written = std::fs::read_to_string(&out_file).expect("written");
    assert!(written.contains("\"shop-web-1\""), "{written}");
    // Only the tags left unpinned stand between it and check.
    let check = mesh(&["check", out_path]);
    assert_eq!(check.status.code(), Some(2));
    let said = stdout(&check) + &stderr(&check);
    assert!(
        said.lines().filter(|l| l.contains(": image:")).count() == 2,
        "{said}"
    );
    assert!(
        !said
            .lines()
            .any(|l| l.contains(':') && !l.contains(": image:") && l.starts_with("web")),
        "{said}"
    );
    std::fs::remove_file(&out_file).expect("remove");

    // Bad projects: exit 2, every problem, nothing written.
    for (text, words) in [
        ("services: [web\n", vec!["not valid YAML"]),
        (
            "services:\n  web:\n    command: \"${CMD:?give CMD}\"\n  db:\n    image: \"x:${TAG\"\n",
            vec!["web: image: missing", "required variable CMD is unset: give CMD", "is left open"],
        ),
        (
            "services:\n  a:\n    image: x\n    depends_on: [b]\n  b:\n    image: x\n    depends_on: [a]\n",
            vec!["a cycle among a, b"],
        ),
    ] {
        let project = tempfile::tempdir().expect("dir");
        std::fs::write(project.path().join("compose.yaml"), text).expect("write");
        let out = import_in(project.path(), &[], &["-p", "bad", "--no-resolve", "-o", out_path]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        for w in words {
            assert!(stderr(&out).contains(w), "{w:?} not in {}", stderr(&out));
        }
        assert!(stdout(&out).is_empty());
        assert!(!out_file.exists(), "nothing is written");
    }
}

/// Where a command's standard output goes in [`printed_to`].
enum Sink {
    /// `/dev/full`: every write fails with ENOSPC.
    Full,
    /// A pipe whose reading end was closed before the command started:
    /// every write fails with EPIPE.
    ClosedPipe,
}

/// Run mesh-host with `args` in `dir`, its standard output on `sink`,
/// with a state directory and declaration of its own.
fn printed_to(sink: Sink, dir: &std::path::Path, args: &[&str]) -> Output {
    let stdout: std::process::Stdio = match sink {
        Sink::Full => std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full")
            .into(),
        Sink::ClosedPipe => {
            let (reader, writer) = std::io::pipe().expect("pipe");
            drop(reader);
            writer.into()
        }
    };
    let child = Command::new(env!("CARGO_BIN_EXE_mesh-host"))
        .args(args)
        .current_dir(dir)
        .env_remove("MESH_HOST_STATE_DIR")
        .stdout(stdout)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run mesh-host");
    child.wait_with_output().expect("wait")
}

/// One command of each kind that prints: a validation (text and JSON), a
/// static document, computed lines, an imported declaration, and reports
/// read from a state directory.
fn printing_commands(dir: &std::path::Path) -> Vec<Vec<String>> {
    let state = dir.join("state");
    std::fs::create_dir_all(&state).expect("state");
    std::fs::write(
        dir.join("compose.yaml"),
        "services:\n  web:\n    image: nginx:1.27\n",
    )
    .expect("compose");
    let local = |cmd: &str| {
        vec![
            cmd.to_string(),
            "--local".into(),
            "--state-dir".into(),
            state.to_string_lossy().into_owned(),
            "--declaration".into(),
            dir.join("none.json").to_string_lossy().into_owned(),
        ]
    };
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        words(&["check", &example("webapp.json")]),
        words(&["check", "--json", &example("refused.json")]),
        words(&["schema"]),
        words(&["cron", "*/5 * * * *", "--count", "1000"]),
        words(&["cron", "--json", "@daily"]),
        words(&["import", "--no-resolve", "-p", "shop"]),
        local("status"),
        local("metrics"),
    ]
}

#[test]
fn a_full_disk_on_standard_output_is_one_clear_error_exit_1_never_a_panic() {
    let dir = tempfile::tempdir().expect("dir");
    for args in printing_commands(dir.path()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = printed_to(Sink::Full, dir.path(), &args);
        let said = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {said}");
        assert_eq!(
            said.lines()
                .filter(|l| l.starts_with(
                    "mesh-host: cannot write to standard output: No space left on device"
                ))
                .count(),
            1,
            "{args:?}: {said}"
        );
        assert!(!said.contains("panicked"), "{args:?}: {said}");
    }
    // diff's 1 means "changes": its trouble is 2, as diff(1)'s. (Without
    // a runtime it stops before printing: exit 2 either way, never 101.)
    let out = printed_to(
        Sink::Full,
        dir.path(),
        &[
            "diff",
            "--local",
            "--state-dir",
            &dir.path().join("state").to_string_lossy(),
            &example("webapp.json"),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn a_closed_pipe_ends_the_command_quietly_by_sigpipe_as_unix_tools_end() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().expect("dir");
    for args in printing_commands(dir.path()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = printed_to(Sink::ClosedPipe, dir.path(), &args);
        assert_eq!(
            out.status.signal(),
            Some(libc_sigpipe()),
            "{args:?}: {:?} {}",
            out.status,
            stderr(&out)
        );
        // import says its notes before the declaration; nothing else is said.
        let err = stderr(&out);
        let said: Vec<&str> = err
            .lines()
            .filter(|l| !l.starts_with("mesh-host: import: "))
            .map(str::trim_end)
            .collect::<Vec<_>>();
        assert!(said.is_empty(), "{args:?}: {said:?}");
    }
    // What a shell sees: `| head -2` takes two lines, and the command
    // ends as `yes | head -2` does (141 under pipefail), saying nothing.
    // The binary is passed as `$0`, not pasted into the script: a clone's
    // path may hold a space.
    let shell = Command::new("bash")
        .arg("-c")
        .arg("set -o pipefail; \"$0\" cron '* * * * *' --count 100000 | head -2; echo \"status $?\" >&2")
        .arg(env!("CARGO_BIN_EXE_mesh-host"))
        .output()
        .expect("bash");
    assert_eq!(stdout(&shell).lines().count(), 2, "{}", stdout(&shell));
    assert_eq!(stderr(&shell).trim(), "status 141", "{}", stderr(&shell));
}

/// SIGPIPE's number on Linux.
fn libc_sigpipe() -> i32 {
    13
}

#[test]
fn a_schedule_with_esc_bel_and_nul_is_refused_with_them_escaped() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("d.json");
    let decl = serde_json::json!({"declaration": 1, "resources": [{
        "id": "backup", "type": "container", "name": "backup",
        "image": "127.0.0.1:5000/b@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        "network": "none", "schedule": "1 2 3 4 \u{1b}[2J\u{7}\u{0}"
    }]});
    std::fs::write(&file, decl.to_string()).expect("write");
    let out = mesh(&["check", &file.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(r#"unexpected character '\u{1b}' in "\u{1b}[2J\u{7}\0""#),
        "{text}"
    );
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{text:?}"
    );
    // The preview's own refusal too.
    let out = mesh(&["cron", "1 2 3 4 \u{1b}[2J\u{7}"]);
    assert_eq!(out.status.code(), Some(2));
    let said = stderr(&out);
    assert!(said.contains(r"'\u{1b}'"), "{said}");
    assert!(
        !said.chars().any(|c| c.is_control() && c != '\n'),
        "{said:?}"
    );
}

/// Names in `dir`, sorted.
fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn import_o_writes_only_a_regular_file_or_a_new_one() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    std::fs::write(
        d.join("compose.yaml"),
        "services:\n  web:\n    image: nginx:1.27\n",
    )
    .expect("compose");
    std::fs::write(d.join("kept.json"), "the link's own target\n").expect("target");
    std::os::unix::fs::symlink("kept.json", d.join("link.json")).expect("symlink");
    std::fs::create_dir(d.join("a-dir")).expect("dir");
    let fifo = Command::new("mkfifo")
        .arg(d.join("fifo"))
        .status()
        .expect("mkfifo");
    assert!(fifo.success());
    // A character device like /dev/null (1:3), made where a refusal that
    // did not happen could do no harm; only root can make one.
    let device = Command::new("mknod")
        .arg(d.join("null"))
        .args(["c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success());
    let mut refused = vec![
        ("link.json", "is a symbolic link (to kept.json)"),
        ("a-dir", "is a directory"),
        ("fifo", "is a FIFO"),
    ];
    if device {
        refused.push(("null", "is a character device"));
    }
    let before = names_in(d);
    for (target, why) in refused {
        let out = import_in(d, &[], &["--no-resolve", "-p", "shop", "-o", target]);
        assert_eq!(out.status.code(), Some(2), "{target}: {}", stderr(&out));
        assert!(stderr(&out).contains(why), "{target}: {}", stderr(&out));
        assert_eq!(names_in(d), before, "{target}: nothing written");
    }
    assert_eq!(
        std::fs::read_to_string(d.join("kept.json")).expect("read"),
        "the link's own target\n",
        "a link is never written through"
    );
    assert!(std::fs::symlink_metadata(d.join("link.json"))
        .expect("link")
        .file_type()
        .is_symlink());
    if device {
        let meta = std::fs::symlink_metadata(d.join("null")).expect("device");
        assert!(meta.file_type().is_char_device(), "the device is still one");
    }
    // A new file is made; an existing one is replaced, its mode kept.
    let out = import_in(d, &[], &["--no-resolve", "-p", "shop", "-o", "new.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(std::fs::read_to_string(d.join("new.json"))
        .expect("new")
        .contains("shop-web-1"));
    std::fs::write(d.join("mine.json"), "old").expect("old");
    std::fs::set_permissions(d.join("mine.json"), std::fs::Permissions::from_mode(0o600))
        .expect("chmod");
    let out = import_in(d, &[], &["--no-resolve", "-p", "shop", "-o", "mine.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let meta = std::fs::metadata(d.join("mine.json")).expect("mine");
    assert_eq!(meta.permissions().mode() & 0o7777, 0o600);
    assert!(std::fs::read_to_string(d.join("mine.json"))
        .expect("mine")
        .contains("shop-web-1"));
}

/// Whether process `pid` has a file open under `dir` other than the
/// project it reads: the `-o` file being written (`DIR/#INODE (deleted)`
/// while it has no name).
fn writes_under(pid: u32, dir: &std::path::Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .any(|target| target.starts_with(dir) && !target.ends_with("compose.yaml"))
}

#[test]
fn a_signal_while_import_o_writes_leaves_the_file_as_it_was_and_nothing_beside() {
    use std::os::unix::process::ExitStatusExt;
    // The pause is a fault point of debug builds (src/fault.rs).
    if !cfg!(debug_assertions) {
        eprintln!("skipped: the pause-in-output fault point exists in debug builds only");
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    std::fs::write(
        d.join("compose.yaml"),
        "services:\n  web:\n    image: nginx:1.27\n",
    )
    .expect("compose");
    std::fs::write(d.join("out.json"), "the previous declaration\n").expect("previous");
    let before = names_in(d);
    for (signal, number) in [
        (rustix::process::Signal::TERM, 15),
        (rustix::process::Signal::INT, 2),
        (rustix::process::Signal::KILL, 9),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mesh-host"))
            .args(["import", "--no-resolve", "-p", "shop", "-o", "out.json"])
            .current_dir(d)
            .env("MESH_HOST_FAULT", "pause-in-output:import")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("import");
        // Half of it written, paused: signal it there.
        let began = std::time::Instant::now();
        while !writes_under(child.id(), d) {
            assert!(
                began.elapsed() < std::time::Duration::from_secs(30),
                "import never began writing"
            );
            assert!(child.try_wait().expect("wait").is_none(), "import ended");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("pid");
        rustix::process::kill_process(pid, signal).expect("signal");
        let status = child.wait().expect("wait");
        assert_eq!(status.signal(), Some(number), "{status:?}");
        assert_eq!(names_in(d), before, "after signal {number}");
        assert_eq!(
            std::fs::read_to_string(d.join("out.json")).expect("read"),
            "the previous declaration\n"
        );
    }
}

/// `mesh` with a bound on its run: a FIFO would hang a reader that waits
/// for a writer.
fn mesh_bounded(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mesh-host"))
        .args(args)
        .env_remove("MESH_HOST_STATE_DIR")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run mesh-host");
    let began = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if began.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("mesh-host {args:?} still runs after a minute");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

#[test]
fn a_declaration_is_read_from_a_regular_file_only_and_bounded() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    let fifo = d.join("fifo.json");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo")
        .success());
    let big = d.join("big.json");
    // Sparse: 200 MB that take no room.
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(200_000_000))
        .expect("big");
    let dir_path = d.to_string_lossy().into_owned();
    let cases = [
        (
            fifo.to_string_lossy().into_owned(),
            "is a FIFO, not a regular file",
        ),
        (
            "/dev/zero".to_string(),
            "is a character device, not a regular file",
        ),
        (dir_path, "is a directory, not a regular file"),
        (
            big.to_string_lossy().into_owned(),
            "is 200000000 bytes: a declaration is at most 8388608 bytes",
        ),
    ];
    for (path, said) in &cases {
        for command in [
            vec!["check", path.as_str()],
            vec!["apply", path.as_str()],
            vec!["diff", path.as_str()],
            vec!["apply", "--local", path.as_str()],
        ] {
            let out = mesh_bounded(&command);
            assert_eq!(out.status.code(), Some(2), "{command:?}: {}", stderr(&out));
            assert!(
                stderr(&out).contains(&format!("{path} {said}"))
                    || stderr(&out).contains(&format!("{path}: {said}")),
                "{command:?}: {}",
                stderr(&out)
            );
        }
    }
}

#[test]
#[ignore = "needs python3-jsonschema (Debian): run tests/run"]
fn check_and_cron_answer_by_their_json_schemas() {
    let schema = |name: &str| {
        format!(
            "{}/src/answer/schema/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        )
    };
    let outs = [
        (
            "check",
            mesh(&["check", &example("registry.json"), "--json"]),
            0,
        ),
        (
            "check",
            mesh(&["check", &example("refused.json"), "--json"]),
            2,
        ),
        (
            "cron",
            mesh(&["cron", "30 3 * * *", "--zone", "UTC", "--json"]),
            0,
        ),
    ];
    for (command, out, code) in outs {
        assert_eq!(out.status.code(), Some(code), "{command}: {}", stderr(&out));
        let mut child = Command::new("/usr/bin/python3")
            .arg(format!(
                "{}/tests/schema/answer.py",
                env!("CARGO_MANIFEST_DIR")
            ))
            .arg(schema(command))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run python3");
        use std::io::Write as _;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(&out.stdout)
            .expect("write the document");
        let checked = child.wait_with_output().expect("python3");
        assert!(
            checked.status.success(),
            "{command}: not a document of its schema: {}{}",
            String::from_utf8_lossy(&checked.stdout),
            String::from_utf8_lossy(&checked.stderr)
        );
    }
}
