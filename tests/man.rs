//! The man pages, completions and `--help` as an operator reads them: every
//! page lints clean with mandoc, refers only to pages that exist, the format
//! page names every field of the JSON Schema, hidden options stay out of the
//! completions, and every option of the daemon has an environment variable.
//! No node needed; mandoc comes from Debian's `mandoc` package.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

fn mesh(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mesh-host"));
    cmd.args(args);
    for var in [
        "MESH_HOST_STATE_DIR",
        "MESH_HOST_DECLARATION",
        "MESH_HOST_RECONCILE_INTERVAL",
        "MESH_HOST_VERBOSE",
        "DOCKER_HOST",
    ] {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied());
    cmd.output().expect("run mesh-host")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn generated() -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = mesh(&["generate", dir.path().to_str().expect("path")], &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut pages: Vec<String> = std::fs::read_dir(dir.path())
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".8") || n.ends_with(".5"))
        .collect();
    pages.sort();
    (dir, pages)
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The visible commands, as `mesh-host --help` lists them.
fn commands() -> Vec<String> {
    let help = stdout(&mesh(&["--help"], &[]));
    let list = help
        .split("Commands:\n")
        .nth(1)
        .expect("a Commands: list")
        .split("\n\n")
        .next()
        .expect("list");
    list.lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn there_is_one_page_per_command_and_the_main_page_has_the_sections_of_a_debian_page() {
    let (dir, pages) = generated();
    let main = read(dir.path(), "mesh-host.8");
    for section in [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "COMMANDS",
        "\"EXIT STATUS\"",
        "ENVIRONMENT",
        "FILES",
        "EXAMPLES",
        "\"SEE ALSO\"",
    ] {
        assert!(
            main.contains(&format!("\n.SH {section}\n")),
            "mesh-host.8 lacks {section}"
        );
    }
    let commands = commands();
    assert!(commands.len() >= 10, "{commands:?}");
    let mut expected: BTreeSet<String> = commands
        .iter()
        .map(|c| format!("mesh-host-{c}.8"))
        .collect();
    expected.insert("mesh-host.8".into());
    expected.insert("mesh-host-declaration.5".into());
    assert_eq!(pages.iter().cloned().collect::<BTreeSet<_>>(), expected);
    for c in &commands {
        assert!(
            main.contains(&format!(".BR mesh\\-host\\-{} (8)", c.replace('-', "\\-"))),
            "mesh-host.8 lists {c}"
        );
        let page = read(dir.path(), &format!("mesh-host-{c}.8"));
        assert!(page.contains("\n.SH \"EXIT STATUS\"\n"), "mesh-host-{c}.8");
        assert!(
            page.contains(".BR mesh\\-host (8)"),
            "mesh-host-{c}.8 refers to mesh-host(8)"
        );
    }
    for hidden in [
        "mesh\\-host\\-generate",
        "mesh\\-host\\-help",
        "\\-\\-control\\-socket",
        "\\-\\-unit\\-dir",
    ] {
        assert!(!main.contains(hidden), "mesh-host.8 names {hidden}");
    }
}

#[test]
fn every_page_lints_clean_with_mandoc() {
    let (dir, pages) = generated();
    for page in &pages {
        let out = Command::new("mandoc")
            .args(["-Tlint", "-W", "warning"])
            .arg(dir.path().join(page))
            .output()
            .expect("mandoc (apt-get install mandoc; tests/node/prereqs.sh installs it)");
        let report = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
        assert!(
            out.status.success() && report.trim().is_empty(),
            "{page}:\n{report}"
        );
    }
}

#[test]
fn every_reference_names_a_page_that_is_generated_or_a_system_page() {
    let (dir, pages) = generated();
    let system = [
        "systemctl(1)",
        "journalctl(1)",
        "systemd.service(5)",
        "crontab(5)",
    ];
    let mut seen = 0;
    for page in &pages {
        let text = read(dir.path(), page);
        for line in text.lines().filter(|l| l.starts_with(".BR ")) {
            let mut words = line[4..].split_whitespace();
            let (Some(name), Some(sect)) = (words.next(), words.next()) else {
                continue;
            };
            let Some(sect) = sect.strip_prefix('(').and_then(|s| s.split(')').next()) else {
                continue;
            };
            let name = name.replace("\\-", "-");
            seen += 1;
            let file = format!("{name}.{sect}");
            assert!(
                pages.contains(&file) || system.contains(&format!("{name}({sect})").as_str()),
                "{page} refers to {name}({sect}), which is not generated"
            );
        }
    }
    assert!(seen > pages.len(), "only {seen} references found");
}

#[test]
fn the_format_page_names_every_resource_type_and_every_field_of_the_schema() {
    let (dir, _) = generated();
    let page = read(dir.path(), "mesh-host-declaration.5").replace("\\-", "-");
    let schema: serde_json::Value =
        serde_json::from_slice(&mesh(&["schema"], &[]).stdout).expect("schema is JSON");
    let types = schema["$defs"]["resource"]["properties"]["type"]["enum"]
        .as_array()
        .expect("the type enum");
    let mut fields = 0;
    for t in types {
        let t = t.as_str().expect("type");
        assert!(
            page.contains(&format!(".SH \"TYPE {}\"", t.to_uppercase())),
            "type {t}"
        );
        for field in schema["$defs"][t]["properties"]
            .as_object()
            .expect(t)
            .keys()
        {
            fields += 1;
            assert!(
                page.contains(&format!(".B {field}\n")) || page.contains(&format!(".BR {field} ")),
                "the page does not name {t}'s field {field}"
            );
        }
    }
    assert!(fields > 40, "{fields} fields");
    assert!(page.contains(".B catch-up\n"), "{page}");
}

#[test]
fn hidden_commands_and_options_stay_out_of_the_completions() {
    let (dir, _) = generated();
    for file in ["mesh-host.bash", "_mesh-host", "mesh-host.fish"] {
        let text = read(dir.path(), file);
        for visible in ["plan", "daemon", "state-dir", "reconcile-interval"] {
            assert!(text.contains(visible), "{file} completes {visible}");
        }
        for hidden in ["control-socket", "unit-dir", "generate"] {
            assert!(!text.contains(hidden), "{file} offers the hidden {hidden}");
        }
    }
}

/// The options an entry of `--help` lists under each heading.
fn options_by_heading(help: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in help.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            out.push((line.trim_end_matches(':').to_owned(), Vec::new()));
        } else if let Some((_, opts)) = out.last_mut() {
            let t = line.trim_start();
            if t.starts_with('-') && line.len() - t.len() <= 6 {
                let long = t
                    .split(|c: char| c.is_whitespace() || c == ',')
                    .find(|w| w.starts_with("--"))
                    .unwrap_or(t);
                opts.push(long.to_owned());
            }
        }
    }
    out
}

#[test]
fn a_commands_help_lists_its_own_options_first_and_the_global_ones_after() {
    for c in commands() {
        let help = stdout(&mesh(&[&c, "--help"], &[]));
        let headings: Vec<String> = options_by_heading(&help)
            .into_iter()
            .map(|(h, _)| h)
            .collect();
        let global = headings.iter().position(|h| h == "Global options");
        let own = headings.iter().position(|h| h == "Options");
        assert!(
            matches!((own, global), (Some(o), Some(g)) if o < g),
            "{c}: {headings:?}"
        );
    }
    let daemon = options_by_heading(&stdout(&mesh(&["daemon", "--help"], &[])));
    let global = &daemon
        .iter()
        .find(|(h, _)| h == "Global options")
        .expect("global")
        .1;
    assert!(global.contains(&"--state-dir".to_owned()), "{global:?}");
}

#[test]
fn every_daemon_and_global_option_has_an_environment_variable() {
    let help = stdout(&mesh(&["daemon", "--help"], &[]));
    let mut entries: Vec<String> = Vec::new();
    for line in help.lines() {
        let t = line.trim_start();
        if t.starts_with('-') && line.len() - t.len() <= 6 {
            entries.push(t.to_owned());
        } else if let Some(last) = entries.last_mut() {
            last.push(' ');
            last.push_str(t);
        }
    }
    let mut checked = 0;
    for entry in entries
        .iter()
        .filter(|e| !e.contains("--help") && !e.contains("--version"))
    {
        checked += 1;
        assert!(entry.contains("[env: "), "no environment variable: {entry}");
    }
    assert!(checked >= 7, "{checked} options in\n{help}");
    for var in [
        "MESH_HOST_DECLARATION",
        "MESH_HOST_RECONCILE_INTERVAL",
        "MESH_HOST_ON_ALERT",
        "MESH_HOST_METRICS_FILE",
        "MESH_HOST_STATE_DIR",
        "DOCKER_HOST",
    ] {
        let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(&format!("[env: {var}=")), "{var}");
    }
}

#[test]
fn an_environment_variable_takes_effect_and_the_command_line_wins() {
    // Read by the daemon's parser: a value clap refuses never starts it.
    let out = mesh(&["daemon"], &[("MESH_HOST_RECONCILE_INTERVAL", "soon")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("soon"));
    // The declaration the local status reads.
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let decl = dir.path().join("d.json");
    let status = |env: &[(&str, &str)], extra: &[&str]| {
        let mut args = vec![
            "status",
            "--local",
            "--json",
            "--state-dir",
            state.to_str().expect("p"),
        ];
        args.extend_from_slice(extra);
        mesh(&args, env)
    };
    std::fs::write(&decl, "not json").expect("write");
    let by_env = status(&[("MESH_HOST_DECLARATION", decl.to_str().expect("p"))], &[]);
    let by_option = status(&[], &["--declaration", decl.to_str().expect("p")]);
    let neither = status(&[], &["--declaration", "/nonexistent/d.json"]);
    let key = |o: &Output| {
        (
            o.status.code(),
            stdout(o).replace(decl.to_str().expect("p"), "D"),
        )
    };
    assert_eq!(key(&by_env), key(&by_option));
    assert_ne!(key(&by_env), key(&neither));
}
