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
        "check", "cron", "apply", "status", "run", "plan", "daemon", "logs",
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
    for cmd in ["check", "cron", "apply", "status", "run", "plan", "daemon"] {
        assert!(man.contains(cmd), "man page lacks {cmd}");
        let page = std::fs::read_to_string(dir.path().join(format!("mesh-host-{cmd}.8")))
            .unwrap_or_else(|e| panic!("mesh-host-{cmd}.8: {e}"));
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
