//! `mesh-host import` against hostile and broken projects: the corpus of
//! tests/fixtures/compose/hostile/, the inputs too large to keep there,
//! paths that are not files, and generated documents (a property test).
//! Each is refused (exit 2, nothing written) with a message that names the
//! place and quotes nothing of the file, in bounded memory: the bytes the
//! import allocates in all, counted by an instrumented allocator, stay
//! under [`ALLOCATED_BOUND`], 64 MiB (the most any case here needs is
//! 13 MiB, the billion laughs refused at its bound; docs/benchmarks.md has
//! the figures). A command that does not
//! end within [`HANG`] is killed and fails the test: a guard against a
//! hang (a FIFO read), not a measure of speed. No node needed.

use std::alloc::System;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mesh_host::compose::{import, Source};
use proptest::prelude::*;
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static HEAP: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// One test at a time: the allocator's counts are the process's, so a
/// measured import must be the only thing running.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Bytes one import may allocate in all (not only at its peak).
const ALLOCATED_BOUND: usize = 64 << 20;
/// A command still running after this has hung.
const HANG: Duration = Duration::from_secs(120);
/// What no message may quote.
const SECRET: &str = "SECRETLINE";

fn hostile_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compose/hostile")
}

/// Import `files` in-process: the problems (or the bytes) and the bytes
/// allocated meanwhile (the caller holds [`serial`]).
fn import_measured(src: &Source) -> (Result<Vec<u8>, Vec<String>>, usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let before = HEAP.stats().bytes_allocated;
    let got = rt.block_on(import(src, None)).map(|i| i.bytes);
    let allocated = HEAP.stats().bytes_allocated - before;
    (got, allocated)
}

fn source(dir: &Path, files: &[PathBuf]) -> Source {
    Source {
        files: files.to_vec(),
        project_name: Some("hostile".into()),
        dir: dir.to_path_buf(),
        ..Source::default()
    }
}

/// `mesh-host import ARGS -o OUT` in `dir`: exit code and standard error,
/// after checking that nothing was written.
fn cli(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = dir.join("out.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mesh-host"))
        .arg("import")
        .args(args)
        .args(["-p", "hostile", "--no-resolve", "-o"])
        .arg(&out)
        .current_dir(dir)
        .env_remove("DOCKER_HOST")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mesh-host import");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > HANG {
            let _ = child.kill();
            panic!("mesh-host import {args:?} hung for {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let code = output.status.code().unwrap_or(-1);
    if code != 0 {
        assert!(
            !out.exists(),
            "{args:?}: refused, yet {} was written",
            out.display()
        );
        assert!(output.stdout.is_empty(), "{args:?}: refused, yet printed");
    }
    (code, stderr)
}

/// A refusal that says `expect` and quotes nothing secret, in-process and
/// through the command line, within the bounds.
fn refused(dir: &Path, files: &[PathBuf], expect: &str) {
    let (got, allocated) = import_measured(&source(dir, files));
    let problems = match got {
        Ok(_) => panic!("{files:?}: imported, expected {expect:?}"),
        Err(p) => p,
    };
    assert!(
        problems.iter().any(|p| p.contains(expect)),
        "{files:?}: no {expect:?} in {problems:#?}"
    );
    for p in &problems {
        assert!(
            !p.contains(SECRET),
            "{files:?}: a message quotes the file: {p}"
        );
    }
    assert!(
        allocated < ALLOCATED_BOUND,
        "{files:?}: {allocated} bytes allocated"
    );
    // Shown with --nocapture: the figures of docs/benchmarks.md.
    eprintln!("{:?}: {} KiB allocated", files.first(), allocated >> 10);
    let args: Vec<String> = files
        .iter()
        .flat_map(|f| ["-f".to_owned(), f.display().to_string()])
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stderr) = cli(dir, &args);
    assert_eq!(code, 2, "{files:?}: {stderr}");
    assert!(stderr.contains(expect), "{files:?}: {stderr}");
    assert!(!stderr.contains(SECRET), "{files:?}: {stderr}");
}

#[test]
fn each_project_of_the_hostile_corpus_is_refused_by_place_and_bounded() {
    let _serial = serial();
    let mut seen = 0;
    for entry in std::fs::read_dir(hostile_dir()).expect("the corpus") {
        let path = entry.expect("an entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a case");
        let expect = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# expect: "))
            .unwrap_or_else(|| panic!("{}: no `# expect:` line", path.display()));
        let dir = tempfile::tempdir().expect("tempdir");
        refused(dir.path(), std::slice::from_ref(&path), expect);
        seen += 1;
    }
    assert!(seen >= 10, "only {seen} cases read");
}

#[test]
fn inputs_too_large_to_keep_are_refused_in_bounds() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let write = |name: &str, text: String| {
        let p = d.join(name);
        std::fs::write(&p, text).expect("write");
        p
    };
    // An anchored megabyte aliased 200 times (1.75 GB under serde_yaml).
    let big = SECRET.repeat((1 << 20) / SECRET.len());
    let aliases = vec!["*a"; 200].join(", ");
    let f = write(
        "anchor.yaml",
        format!("x-big: &a \"{big}\"\nservices:\n  web:\n    image: x\n    command: [{aliases}]\n"),
    );
    refused(d, &[f], "aliases here expand past 8 MiB");
    // Nesting 100,000 deep under command (19 s before its depth limit).
    let deep = format!(
        "services:\n  web:\n    image: x\n    command:\n      {}{SECRET}\n",
        "- ".repeat(100_000)
    );
    let f = write("deep.yaml", deep);
    refused(d, &[f], "nested deeper than 64 levels");
    // ${A:-${A:-...}} 20,000 deep (a stack overflow).
    let nested = "${A:-".repeat(20_000) + SECRET + &"}".repeat(20_000);
    let f = write(
        "interpolation.yaml",
        format!("services:\n  web:\n    image: \"{nested}\"\n"),
    );
    refused(d, &[f], "nested more than 32 deep");
    // A 200 MB file: refused by its size, never read.
    let f = d.join("huge.yaml");
    std::fs::File::create(&f)
        .and_then(|h| h.set_len(200 << 20))
        .expect("a sparse file");
    refused(d, &[f], "is larger than 8 MiB");
}

#[test]
fn paths_that_are_not_regular_files_are_named_never_read() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let fifo = d.join("fifo.yaml");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    refused(
        d,
        std::slice::from_ref(&fifo),
        "is a FIFO (named pipe): only a regular file is read",
    );
    refused(d, &[PathBuf::from("/dev/zero")], "is a character device");
    let sub = d.join("dir.yaml");
    std::fs::create_dir(&sub).expect("mkdir");
    refused(d, &[sub], "is a directory");

    // `.env` a FIFO, then `/dev/zero`: refused saying what it is, never
    // taken as "does not exist".
    let project = d.join("p");
    std::fs::create_dir(&project).expect("mkdir");
    let compose = project.join("compose.yaml");
    std::fs::write(&compose, "services:\n  web:\n    image: x:${TAG:-1}\n").expect("write");
    let dotenv = project.join(".env");
    let made = Command::new("mkfifo")
        .arg(&dotenv)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    refused(
        &project,
        std::slice::from_ref(&compose),
        ".env is a FIFO (named pipe)",
    );
    std::fs::remove_file(&dotenv).expect("rm");
    std::os::unix::fs::symlink("/dev/zero", &dotenv).expect("symlink");
    refused(
        &project,
        std::slice::from_ref(&compose),
        ".env is a character device",
    );
    std::fs::remove_file(&dotenv).expect("rm");

    // `--env-file` a FIFO.
    let (code, stderr) = cli(
        &project,
        &[
            "-f",
            &compose.display().to_string(),
            "--env-file",
            &fifo.display().to_string(),
        ],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("is a FIFO"), "{stderr}");
}

#[test]
fn a_file_linked_to_a_secret_never_has_its_lines_printed() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let shadow = d.join("shadow");
    std::fs::write(
        &shadow,
        format!("root:$6${SECRET}$hash:19000:0:99999:7:::\nwww-data:*:19000:0:99999:7:::\n"),
    )
    .expect("write");
    let compose = d.join("compose.yaml");
    std::fs::write(
        &compose,
        "services:\n  web:\n    image: x\n    env_file: linked.env\n",
    )
    .expect("write");
    std::os::unix::fs::symlink(&shadow, d.join("linked.env")).expect("symlink");
    refused(
        d,
        std::slice::from_ref(&compose),
        "linked.env: line 1: a value compose expands",
    );
    // As a compose file itself.
    std::os::unix::fs::symlink(&shadow, d.join("linked.yaml")).expect("symlink");
    refused(d, &[d.join("linked.yaml")], "services: missing");
    // As `.env`: compose reads it (`root: ...` is a variable to it), and
    // whatever comes of it, nothing of it is printed.
    std::os::unix::fs::symlink(&shadow, d.join(".env")).expect("symlink");
    std::fs::write(&compose, "services:\n  web:\n    image: x:${TAG:-1}\n").expect("write");
    let (_, stderr) = cli(d, &["-f", &compose.display().to_string()]);
    assert!(!stderr.contains(SECRET), "{stderr}");
}

// ---- generated documents ----

/// Scalars that are valid somewhere, odd, or hostile.
const SCALARS: &[&str] = &[
    "x",
    "yes",
    "no",
    "on",
    "Off",
    "y",
    "~",
    "null",
    "true",
    "1",
    "0o1777",
    "0x1F",
    "1e999",
    ".inf",
    "-.5",
    "08",
    "\"1\"",
    "'a b'",
    "\"${A}\"",
    "\"${A:-${B:-c}}\"",
    "\"${\"",
    "\"$$\"",
    "\"${A:?must}\"",
    "!!binary aGVsbG8=",
    "!!binary //79",
    "!reset []",
    "!override {}",
    "!custom 1",
    "!!int x",
    "\"1-65535:1-65535\"",
    "18446744073709551617s",
    "99999999999g",
    "[]",
    "{}",
    "\"\"",
    "|\n        block\n",
    "\"\\u0000\"",
];

/// Keys of a service, and a few others.
const KEYS: &[&str] = &[
    "image",
    "command",
    "entrypoint",
    "environment",
    "ports",
    "volumes",
    "healthcheck",
    "read_only",
    "privileged",
    "init",
    "deploy",
    "labels",
    "networks",
    "depends_on",
    "tmpfs",
    "ulimits",
    "stop_grace_period",
    "mem_limit",
    "restart",
    "x-a",
    "<<",
    "magic",
    "1",
    "\"1\"",
];

fn value(depth: u32) -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        proptest::sample::select(SCALARS).prop_map(str::to_owned),
        (1usize..200_000).prop_map(|n| format!("\"{}\"", "v".repeat(n))),
        (1usize..40).prop_map(|n| format!("{}x{}", "[".repeat(n), "]".repeat(n))),
        (1usize..80).prop_map(|n| format!("\"{}x{}\"", "${A:-".repeat(n), "}".repeat(n))),
        Just("*a".to_owned()),
    ];
    leaf.prop_recursive(depth, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6)
                .prop_map(|items| format!("[{}]", items.join(", "))),
            proptest::collection::vec((proptest::sample::select(KEYS), inner.clone()), 0..6)
                .prop_map(|pairs| {
                    let body: Vec<String> =
                        pairs.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                    format!("{{{}}}", body.join(", "))
                }),
            inner.prop_map(|v| format!("&a {v}")),
        ]
    })
}

fn document() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec((proptest::sample::select(KEYS), value(4)), 1..8),
        value(3),
        0usize..30,
    )
        .prop_map(|(fields, anchor, aliases)| {
            let mut doc = format!("x-base: &a {anchor}\nservices:\n  web:\n");
            for (k, v) in fields {
                doc.push_str(&format!("    {k}: {v}\n"));
            }
            doc.push_str(&format!(
                "  other: {{image: x, command: [{}]}}\n",
                vec!["*a"; aliases].join(", ")
            ));
            doc
        })
}

/// Whatever the document, import ends with a declaration or a refusal,
/// never a panic, within the allocation bound; a refusal about YAML that
/// is not valid stays a short sentence (it quotes no line).
#[test]
fn generated_documents_never_panic_and_stay_bounded() {
    let _serial = serial();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 64,
        ..ProptestConfig::default()
    });
    let result = runner.run(&document(), |doc| {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("compose.yaml");
        std::fs::write(&file, &doc).expect("write");
        let (got, allocated) = import_measured(&source(dir.path(), &[file]));
        prop_assert!(allocated < ALLOCATED_BOUND, "{} bytes allocated", allocated);
        if let Err(problems) = got {
            prop_assert!(!problems.is_empty());
            for p in problems.iter().filter(|p| p.contains("not valid YAML")) {
                prop_assert!(p.len() < 400, "{}", p);
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
