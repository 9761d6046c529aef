//! What `check` costs on hostile input, bounded: the declaration's reader
//! and validator run within 256 MiB of address space and 60 s of CPU
//! (enforced by the kernel: `prlimit --as --cpu`, so a breach ends the
//! process and fails the test, never a wall-clock assertion) whatever
//! they are given, refuse what they refuse with exit 2 and a clear
//! message, and never print the content of a file that is not a
//! declaration.
//!
//! The corpus below is every hostile input of the issue that `check`
//! reads, kept as a regression case with its assertions; a property test
//! then runs `check` on generated declarations of huge values, many ports
//! and deep nesting. `MESH_BOUNDS_BIN=PATH` runs them against another
//! build (the build before these bounds fails most of them: killed past
//! the address-space bound, or hung on the FIFO).

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::{json, Value};

/// The address space a check may take.
const MAX_ADDRESS_SPACE: u64 = 256 * 1024 * 1024;
/// The CPU seconds a check may take (the unoptimised build).
const MAX_CPU_SECS: u64 = 60;

const IMAGE: &str = "127.0.0.1:5000/shop/web:1.4.2@sha256:80b514138d31203ce7fb099562f8b9bb2cfe49790d84ee967a078d88319eb9d0";

fn binary() -> PathBuf {
    std::env::var_os("MESH_BOUNDS_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_mesh-host")),
        PathBuf::from,
    )
}

/// `mesh-host check PATH` within the bounds; a FIFO that would hang it is
/// given up on (killed) after five minutes of wall clock. Its output is
/// drained while it runs: a check printing more than a pipe holds would
/// otherwise wait on the pipe for ever.
fn bounded_check(path: &Path) -> Output {
    let mut child = Command::new("prlimit")
        .arg(format!("--as={MAX_ADDRESS_SPACE}"))
        .arg(format!("--cpu={MAX_CPU_SECS}"))
        .arg(binary())
        .arg("check")
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("prlimit (util-linux)");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
    let began = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if began.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            break child.wait().expect("wait");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().expect("stdout read"),
        stderr: stderr.join().expect("stderr read"),
    }
}

fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The last lines of `text`, for a failure's message.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join("\n")
}

/// Within the bounds: ended by itself, with exit 0 or 2 and no panic.
#[track_caller]
fn within_bounds(what: &str, out: &Output) {
    assert!(
        out.status.signal().is_none(),
        "{what}: ended by signal {:?} (a bound breached: SIGABRT/SIGSEGV for memory, SIGXCPU/SIGKILL for CPU): {}",
        out.status.signal(),
        tail(&said(out))
    );
    assert!(
        matches!(out.status.code(), Some(0 | 2)),
        "{what}: exit {:?}: {}",
        out.status.code(),
        said(out)
    );
    assert!(!said(out).contains("panicked"), "{what}: {}", said(out));
}

/// A declaration of `resources`, compact.
fn declaration(resources: Vec<Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({"declaration": 1, "resources": resources})).expect("json")
}

fn container(id: &str) -> Value {
    json!({"id": id, "type": "container", "name": format!("{id}-c"), "image": IMAGE})
}

/// One case of the corpus: a name, the bytes (or a path made by the
/// case), the exit code, and words the output must hold.
struct Case {
    name: &'static str,
    path: PathBuf,
    exit: i32,
    says: Vec<String>,
    /// Words the output must not hold (content of the file).
    never: Vec<&'static str>,
}

fn file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write");
    path
}

fn corpus(dir: &Path) -> Vec<Case> {
    let fifo = dir.join("fifo.json");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo")
        .success());
    let sparse = dir.join("sparse.json");
    std::fs::File::create(&sparse)
        .and_then(|f| f.set_len(200_000_000))
        .expect("sparse");
    let ports: Vec<Value> = (0..131_070)
        .map(|i| {
            let port = 1 + i / 2;
            json!({"host": port, "container": port, "protocol": if i % 2 == 0 { "tcp" } else { "udp" }})
        })
        .collect();
    let mut web = container("web");
    web["ports"] = json!(ports);
    let services: Vec<Value> = (0..20_000)
        .map(|i| {
            let mut c = container(&format!("s{i}"));
            c["ports"] = json!([{"host": 1024 + i, "container": 80}]);
            c
        })
        .collect();
    let steps: Vec<Value> = (0..10_000)
        .flat_map(|i| {
            let mut svc = container(&format!("s{i}"));
            svc["mounts"] = json!([{"source": format!("v{i}"), "target": "/data"}]);
            let mut step = container(&format!("b{i}"));
            step["mounts"] =
                json!([{"source": format!("v{i}"), "target": "/data", "read-only": true}]);
            step["schedule"] = json!("@daily");
            step["timeout"] = json!(600);
            step["while-stopped"] = json!([format!("s{i}")]);
            [svc, step]
        })
        .collect();
    let mut wide = container("last");
    let mut all: Vec<Value> = (0..20_000).map(|i| container(&format!("d{i}"))).collect();
    wide["depends-on"] = json!((0..20_000)
        .map(|i| json!({"id": format!("d{i}")}))
        .collect::<Vec<_>>());
    all.push(wide);
    let deep = format!(
        "{{\"declaration\": 1, \"resources\": [], \"x\": {}{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let values = format!(
        "{{\"declaration\": 1, \"resources\": [], \"x\": [{}]}}",
        vec!["0"; 1_100_000].join(",")
    );
    let empties = format!(
        "{{\"declaration\": 1, \"resources\": [{}]}}",
        vec!["{}"; 999_000].join(",")
    );
    let key = "k".repeat(4_000_000);
    let big_string = declaration(vec![{
        let mut c = container("cc");
        c["command"] = json!(["x".repeat(8_000_000)]);
        c
    }]);
    let mut cron = container("backup");
    cron["schedule"] = json!("1 2 3 4 \u{1b}[2J\u{7}\u{0}");
    cron["network"] = json!("none");
    let twenty_mb: Vec<u8> = declaration(
        (0..60_000)
            .map(|i| {
                let mut c = container(&format!("s{i}"));
                c["env"] = json!({"A": "x".repeat(300)});
                c
            })
            .collect(),
    );
    assert!(twenty_mb.len() > 20_000_000);
    vec![
        Case {
            name: "a FIFO",
            path: fifo,
            exit: 2,
            says: vec!["is a FIFO, not a regular file".into()],
            never: vec![],
        },
        Case {
            name: "/dev/zero",
            path: "/dev/zero".into(),
            exit: 2,
            says: vec!["is a character device, not a regular file".into()],
            never: vec![],
        },
        Case {
            name: "a directory",
            path: dir.to_path_buf(),
            exit: 2,
            says: vec!["is a directory, not a regular file".into()],
            never: vec![],
        },
        Case {
            name: "a sparse file of 200 MB",
            path: sparse,
            exit: 2,
            says: vec!["is 200000000 bytes: a declaration is at most 8388608 bytes".into()],
            never: vec![],
        },
        Case {
            name: "a declaration of 20 MB",
            path: file(dir, "twenty.json", &twenty_mb),
            exit: 2,
            says: vec![format!("is {} bytes", twenty_mb.len())],
            never: vec![],
        },
        Case {
            name: "/etc/shadow's kind of line",
            path: file(
                dir,
                "shadow",
                b"root:$y$j9T$SECRETHASH:19000:0:99999:7:::\n",
            ),
            exit: 2,
            says: vec!["not valid JSON: expected value at line 1 column 1".into()],
            never: vec!["SECRETHASH", "root:"],
        },
        Case {
            name: "a YAML file of secrets",
            path: file(
                dir,
                "secrets.yaml",
                b"password: hunter2-SECRET\ntoken: abc\n",
            ),
            exit: 2,
            says: vec!["this looks like YAML".into(), "line 1 column".into()],
            never: vec!["hunter2", "SECRET", "abc"],
        },
        Case {
            name: "JSON with a secret after a syntax error",
            path: file(
                dir,
                "broken.json",
                b"{\"declaration\": 1, \"resources\": [] SECRET}",
            ),
            exit: 2,
            says: vec!["not valid JSON".into(), "line 1 column".into()],
            never: vec!["SECRET"],
        },
        Case {
            name: "one container publishing 131,070 ports",
            path: file(dir, "ports.json", &declaration(vec![web])),
            exit: 0,
            says: vec!["accepted: 1 resource(s)".into()],
            never: vec![],
        },
        Case {
            name: "20,000 services publishing a port each",
            path: file(dir, "services.json", &declaration(services)),
            exit: 0,
            says: vec!["accepted: 20000 resource(s)".into()],
            never: vec![],
        },
        Case {
            name: "10,000 steps holding their writers",
            path: file(dir, "steps.json", &declaration(steps)),
            exit: 0,
            // The volumes are not declared: one warning each, the first
            // thousand listed and the rest counted.
            says: vec![
                "accepted: 20000 resource(s)".into(),
                "and 19000 more warnings, not listed".into(),
            ],
            never: vec![],
        },
        Case {
            name: "a service depending on 20,000",
            path: file(dir, "wide.json", &declaration(all)),
            exit: 0,
            says: vec!["accepted: 20001 resource(s)".into()],
            never: vec![],
        },
        Case {
            name: "JSON nested 100,000 deep",
            path: file(dir, "deep.json", deep.as_bytes()),
            exit: 2,
            says: vec!["nested deeper than 64 arrays and objects at line 1 column".into()],
            never: vec![],
        },
        Case {
            name: "1,100,000 values",
            path: file(dir, "values.json", values.as_bytes()),
            exit: 2,
            says: vec!["more than 1000000 values".into()],
            never: vec![],
        },
        Case {
            name: "999,000 empty resources",
            path: file(dir, "empties.json", empties.as_bytes()),
            exit: 2,
            says: vec![
                "999000 resources: a declaration declares at most 100000".into(),
                "and 99001 more problems, not listed".into(),
            ],
            never: vec![],
        },
        Case {
            name: "a 4 MB key twice",
            path: file(
                dir,
                "key.json",
                format!("{{\"{key}\": 1, \"{key}\": 2}}").as_bytes(),
            ),
            exit: 2,
            says: vec![format!("duplicate key \"{}…\"", "k".repeat(64))],
            never: vec![],
        },
        Case {
            name: "an 8 MB string",
            path: file(dir, "string.json", &big_string),
            exit: 0,
            says: vec!["accepted".into()],
            never: vec![],
        },
        Case {
            name: "a schedule of ESC, BEL and NUL",
            path: file(dir, "cron.json", &declaration(vec![cron])),
            exit: 2,
            says: vec![r#"unexpected character '\u{1b}' in "\u{1b}[2J\u{7}\0""#.into()],
            never: vec!["\u{1b}", "\u{7}", "\u{0}"],
        },
    ]
}

#[test]
fn every_hostile_input_is_refused_clearly_within_bounds() {
    let dir = tempfile::tempdir().expect("dir");
    for case in corpus(dir.path()) {
        let out = bounded_check(&case.path);
        within_bounds(case.name, &out);
        let text = said(&out);
        assert_eq!(out.status.code(), Some(case.exit), "{}: {text}", case.name);
        for words in &case.says {
            assert!(
                text.contains(words.as_str()),
                "{}: {words:?} not in {}",
                case.name,
                &text[..text.len().min(2000)]
            );
        }
        for secret in &case.never {
            assert!(!text.contains(secret), "{}: {secret:?} printed", case.name);
        }
        // A line of output stays a line: nothing of a file is dumped.
        assert!(
            text.lines().all(|l| l.len() < 1000),
            "{}: a line of {} bytes",
            case.name,
            text.lines().map(str::len).max().unwrap_or(0)
        );
    }
}

/// A declaration generated to be large somewhere: many ports, long
/// strings, many resources, deep values.
fn large() -> impl Strategy<Value = Value> {
    let ports = (0usize..140_000, any::<bool>()).prop_map(|(n, dup)| {
        let ports: Vec<Value> = (0..n)
            .map(|i| {
                let port = if dup { 1 + i % 1000 } else { 1 + (i / 2) % 65_535 };
                json!({"host": port, "container": port, "protocol": if i % 2 == 0 { "tcp" } else { "udp" }})
            })
            .collect();
        let mut c = container("web");
        c["ports"] = json!(ports);
        vec![c]
    });
    let strings = (0usize..6_000_000, "[a-z\\x00-\\x1f]{0,4}").prop_map(|(n, tail)| {
        let mut c = container("cc");
        c["command"] = json!([format!("{}{tail}", "x".repeat(n))]);
        c["hostname"] = json!("y".repeat(n.min(300_000)));
        vec![c]
    });
    let resources = (0usize..40_000, 0usize..4).prop_map(|(n, kind)| {
        (0..n)
            .map(|i| match kind {
                0 => container(&format!("s{i}")),
                1 => json!({"id": format!("v{i}"), "type": "volume", "name": format!("v{}", i % 100)}),
                2 => json!({"id": "same", "type": "file", "path": format!("/srv/f/{}", i % 7)}),
                _ => json!({"id": i, "type": ["x"], "name": {}}),
            })
            .collect::<Vec<_>>()
    });
    let deep = (1usize..120).prop_map(|depth| {
        let mut c = container("cc");
        c["health"] = serde_json::from_str(&format!("{}{}", "[".repeat(depth), "]".repeat(depth)))
            .unwrap_or(Value::Null);
        vec![c]
    });
    prop_oneof![ports, strings, resources, deep]
        .prop_map(|resources| json!({"declaration": 1, "resources": resources}))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
        ..ProptestConfig::default()
    })]

    /// Whatever is generated, check ends by itself within the bounds,
    /// with exit 0 or 2, and every line it prints is bounded.
    #[test]
    fn generated_large_declarations_are_checked_within_bounds(value in large()) {
        let dir = tempfile::tempdir().expect("dir");
        let path = file(dir.path(), "d.json", &serde_json::to_vec(&value).expect("json"));
        let out = bounded_check(&path);
        within_bounds("a generated declaration", &out);
        let text = said(&out);
        prop_assert!(text.lines().count() <= 1_010, "{} lines", text.lines().count());
        prop_assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "a control character printed"
        );
    }
}
