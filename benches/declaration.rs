//! `mesh_host::declaration::parse` (read with duplicate keys refused, then
//! every field validated into the model) against its peer, plain
//! `serde_json::from_slice::<serde_json::Value>` of the same bytes: the
//! difference is what strict validation costs on top of reading JSON.
//!
//! Inputs: the shipped examples, and generated declarations of 1,000 and
//! 10,000 resources in modules of ten (a directory, two files, six service
//! containers with env, env-files, mounts and restart-on, and one scheduled
//! step holding two of them still).
//!
//! A second table grows one thing at a time (ports of a container,
//! services publishing ports, dependencies, steps holding writers, shared
//! folders, tmpfs mounts) and times `check`'s own work on it (`parse`,
//! then `lint`): each pass of the validation is linear, so the time per
//! item stays flat as the count grows (a quadratic pass shows as a time
//! per item that grows with the count).
//!
//! A third measures the peak memory of a parse, in a process of its own
//! (this bench run again, `BENCH_PEAK_FILE` set): the resident memory's
//! high-water mark (`VmHWM`, reset through `/proc/self/clear_refs`) above
//! what the process held with the bytes read, against the size of the
//! bytes.
//!
//! `cargo bench --bench declaration [-- FILTER]`; any other run
//! (`cargo test --benches`) runs each body once on inputs of 100
//! resources or items, as a check that the bench still works.

mod support;

use serde_json::{json, Value};
use support::{Bench, Pair};

const IMAGE: &str = "127.0.0.1:5000/shop/web:1.4.2@sha256:80b514138d31203ce7fb099562f8b9bb2cfe49790d84ee967a078d88319eb9d0";
const SCHEDULES: [&str; 4] = ["*/15 * * * *", "30 3 * * *", "0 9 * * mon-fri", "@hourly"];

/// One module of ten resources.
fn module(k: usize) -> Vec<Value> {
    let m = format!("m{k}");
    let data = format!("/srv/{m}/data");
    let env_file = format!("/etc/{m}/app.env");
    let config = format!("/etc/{m}/config.yml");
    let mut out = vec![
        json!({"id": format!("{m}-data"), "type": "directory", "module": m,
               "path": data, "mode": "0750", "owner": "1000:1000"}),
        json!({"id": format!("{m}-env"), "type": "file", "module": m, "path": env_file,
               "mode": "0600", "owner": "0:0",
               "content": format!("DATABASE_URL=postgres://{m}@127.0.0.1:5432/{m}\nLISTEN=127.0.0.1:8080\nLOG=info\n")}),
        json!({"id": format!("{m}-config"), "type": "file", "module": m, "path": config,
               "content": format!("version: 1\nname: {m}\nstorage:\n  path: /data\n  cache: 256MiB\nworkers: 4\n")}),
    ];
    for c in 0..6 {
        out.push(json!({
            "id": format!("{m}-c{c}"), "type": "container", "module": m,
            "name": format!("{m}-svc-{c}"), "image": IMAGE,
            "command": ["shop", "serve", "--worker", c.to_string()],
            "env": {"RUST_LOG": "info", "WORKER": c.to_string(), "MODULE": m},
            "env-files": [env_file],
            "network": "host", "user": "1000:1000",
            "mounts": [
                {"source": data, "target": "/data"},
                {"source": config, "target": "/etc/app/config.yml", "read-only": true},
                {"source": format!("{m}-cache-{c}"), "target": "/cache"}
            ],
            "restart-on": [format!("{m}-config")]
        }));
    }
    out.push(json!({
        "id": format!("{m}-backup"), "type": "container", "module": m,
        "name": format!("{m}-backup"), "image": IMAGE,
        "command": ["backup", "--source", "/data", "--into", "/backups"],
        "network": "none",
        "mounts": [{"source": data, "target": "/data", "read-only": true}],
        "schedule": SCHEDULES[k % SCHEDULES.len()],
        "schedule-zone": "Europe/Amsterdam",
        "while-stopped": [format!("{m}-c0"), format!("{m}-c1")],
        "timeout": 1800
    }));
    out
}

/// A declaration of `resources` resources (a multiple of ten), as pretty
/// JSON like a hand-written file.
fn generated(resources: usize) -> Vec<u8> {
    let all: Vec<Value> = (0..resources / 10).flat_map(module).collect();
    serde_json::to_vec_pretty(&json!({"declaration": 1, "resources": all}))
        .expect("a JSON value serialises")
}

/// A container resource of its own name.
fn container(id: &str) -> Value {
    json!({"id": id, "type": "container", "name": format!("{id}-c"), "image": IMAGE})
}

/// Declarations growing one thing at a time, by `n`.
fn growing(kind: &str, n: usize) -> Vec<u8> {
    let resources: Vec<Value> = match kind {
        // One container publishing `n` ports (tcp and udp of each number).
        "ports of one container" => {
            let ports: Vec<Value> = (0..n)
                .map(|i| {
                    let port = 1 + i / 2;
                    json!({"host": port, "container": port,
                           "protocol": if i % 2 == 0 { "tcp" } else { "udp" }})
                })
                .collect();
            let mut c = container("web");
            c["ports"] = json!(ports);
            vec![c]
        }
        // `n` services, each publishing a host port of its own.
        "services publishing a port" => (0..n)
            .map(|i| {
                let mut c = container(&format!("s{i}"));
                c["ports"] = json!([{"host": 1024 + i, "container": 80}]);
                c
            })
            .collect(),
        // `n` services, each depending on every one of the 10 before it.
        "services depending on the 10 before" => (0..n)
            .map(|i| {
                let mut c = container(&format!("s{i}"));
                let deps: Vec<Value> = (i.saturating_sub(10)..i)
                    .map(|d| json!({"id": format!("s{d}")}))
                    .collect();
                c["depends-on"] = json!(deps);
                c
            })
            .collect(),
        // One service depending on `n` declared before it.
        "dependencies of one service" => {
            let mut all: Vec<Value> = (0..n).map(|i| container(&format!("s{i}"))).collect();
            let mut last = container("last");
            let deps: Vec<Value> = (0..n).map(|d| json!({"id": format!("s{d}")})).collect();
            last["depends-on"] = json!(deps);
            all.push(last);
            all
        }
        // `n` services each writing a volume of its own that a step of its
        // own reads, holding it: what lint looks for, `2n` containers.
        "steps holding a writer" => (0..n)
            .flat_map(|i| {
                let volume = format!("v{i}");
                let mut svc = container(&format!("s{i}"));
                svc["mounts"] = json!([{"source": volume, "target": "/data"}]);
                let mut step = container(&format!("b{i}"));
                step["mounts"] = json!([{"source": volume, "target": "/data", "read-only": true}]);
                step["schedule"] = json!("@daily");
                step["timeout"] = json!(600);
                step["while-stopped"] = json!([format!("s{i}")]);
                vec![
                    json!({"id": format!("vol{i}"), "type": "volume", "name": volume}),
                    svc,
                    step,
                ]
            })
            .collect(),
        // `n` shared folders, side by side.
        "shared folders" => std::iter::once(
            json!({"id": "media", "type": "identity", "name": "media", "uid": 2001, "gid": 2001}),
        )
        .chain((0..n).map(|i| {
            json!({"id": format!("f{i}"), "type": "shared-folder",
                   "path": format!("/srv/share/{}/f{i}", i % 100),
                   "access": [{"identity": "media"}]})
        }))
        .collect(),
        // One container with `n` tmpfs mounts.
        "tmpfs of one container" => {
            let tmpfs: Vec<Value> = (0..n)
                .map(|i| json!({"target": format!("/t/{i}")}))
                .collect();
            let mut c = container("web");
            c["tmpfs"] = json!(tmpfs);
            vec![c]
        }
        other => panic!("no input {other}"),
    };
    serde_json::to_vec(&json!({"declaration": 1, "resources": resources}))
        .expect("a JSON value serialises")
}

/// The sizes each growing input is measured at.
const GROWING: &[(&str, &[usize])] = &[
    ("ports of one container", &[16_384, 65_536, 131_070]),
    ("services publishing a port", &[5_000, 20_000]),
    ("services depending on the 10 before", &[5_000, 20_000]),
    ("dependencies of one service", &[5_000, 20_000]),
    ("steps holding a writer", &[2_500, 10_000]),
    ("shared folders", &[5_000, 20_000]),
    ("tmpfs of one container", &[5_000, 20_000]),
];

/// The one size of each growing input a check run (not measuring) takes.
const CHECK_SIZE: usize = 100;

/// What `check` does with the bytes but ask the machine's accounts.
fn check(bytes: &[u8]) -> usize {
    match mesh_host::declaration::parse(bytes) {
        Ok(decl) => mesh_host::declaration::lint(&decl).len() + decl.resources.len(),
        Err(refusal) => refusal.problems.len(),
    }
}

/// Resident memory figures of this process, in KiB: (`VmRSS`, `VmHWM`).
fn rss_and_peak() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// In the process run for one peak: read the file, reset the high-water
/// mark, parse and lint, print `PEAK KIB` above what was held before.
fn peak_of(file: &str) {
    let bytes = std::fs::read(file).expect("input");
    // 5: reset the peak resident memory to the current one.
    std::fs::write("/proc/self/clear_refs", "5").expect("clear_refs");
    let (before, _) = rss_and_peak();
    std::hint::black_box(check(&bytes));
    let (_, peak) = rss_and_peak();
    println!("PEAK {}", peak.saturating_sub(before));
}

/// The peak memory of a parse of `bytes`, in KiB, in a process of its own.
fn measure_peak(dir: &std::path::Path, name: &str, bytes: &[u8]) -> u64 {
    let file = dir.join(name.replace([' ', ','], "-"));
    std::fs::write(&file, bytes).expect("write input");
    let out = std::process::Command::new(std::env::current_exe().expect("this bench"))
        .env("BENCH_PEAK_FILE", &file)
        .output()
        .expect("run the peak");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("PEAK "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak from {name}: {text}"))
}

fn main() {
    if let Ok(file) = std::env::var("BENCH_PEAK_FILE") {
        peak_of(&file);
        return;
    }
    let mut bench = Bench::from_args();
    let mut inputs: Vec<(String, Vec<u8>, bool)> = vec![
        (
            "examples/registry.json".into(),
            include_bytes!("../examples/registry.json").to_vec(),
            true,
        ),
        (
            "examples/webapp.json".into(),
            include_bytes!("../examples/webapp.json").to_vec(),
            true,
        ),
        (
            "examples/refused.json (refused)".into(),
            include_bytes!("../examples/refused.json").to_vec(),
            false,
        ),
    ];
    // A check run (not measuring) takes small sizes: it proves the bench
    // still runs, and the full sizes cost the test pool a minute of CPU.
    let generated_sizes: &[usize] = if bench.measuring() {
        &[1_000, 10_000]
    } else {
        &[100]
    };
    for &n in generated_sizes {
        inputs.push((format!("generated, {n} resources"), generated(n), true));
    }
    // The generated declarations must be what they claim: valid, complete.
    for (name, bytes, valid) in &inputs {
        match mesh_host::declaration::parse(bytes) {
            Ok(decl) if *valid => {
                if let Some(n) = name.strip_prefix("generated, ") {
                    let want: usize = n
                        .trim_end_matches(" resources")
                        .parse()
                        .expect("a count in the name");
                    assert_eq!(decl.resources.len(), want, "{name}");
                }
            }
            Ok(_) => panic!("{name} was expected to be refused"),
            Err(r) if *valid => panic!("{name} is refused:\n{r}"),
            Err(_) => {}
        }
    }

    bench.table(
        "Parse a declaration",
        &[
            "input",
            "bytes",
            "mesh-host parse",
            "MB/s",
            "serde_json::Value",
            "MB/s",
            "ratio",
        ],
    );
    for (name, bytes, _) in &inputs {
        let pair: Option<Pair> = bench.pair(
            name,
            || mesh_host::declaration::parse(bytes),
            || serde_json::from_slice::<Value>(bytes),
        );
        if let Some(p) = pair {
            bench.row(&[
                name.clone(),
                bytes.len().to_string(),
                p.ours.cell(),
                format!("{:.0}", p.ours.mb_per_s(bytes.len())),
                p.peer.cell(),
                format!("{:.0}", p.peer.mb_per_s(bytes.len())),
                p.ratio_cell(),
            ]);
        }
    }

    bench.table(
        "What check costs as one thing grows",
        &["input", "count", "bytes", "parse + lint", "per item"],
    );
    for (kind, sizes) in GROWING {
        let sizes = if bench.measuring() {
            sizes
        } else {
            &[CHECK_SIZE][..]
        };
        for &n in sizes {
            let name = format!("{kind}, {n}");
            if !bench.selected(&name) {
                continue;
            }
            let bytes = growing(kind, n);
            // Each input is what it claims: accepted (never refused by a
            // bound), so the work measured is the whole validation.
            if let Err(r) = mesh_host::declaration::parse(&bytes) {
                panic!("{name} is refused:\n{r}");
            }
            if let Some(stats) = bench.run_few(&name, 5, || check(&bytes)) {
                let per_item = stats.median / u32::try_from(n).unwrap_or(u32::MAX);
                bench.row(&[
                    kind.to_string(),
                    n.to_string(),
                    bytes.len().to_string(),
                    stats.cell(),
                    support::human(per_item),
                ]);
            }
        }
    }

    bench.table(
        "Peak memory of a parse",
        &["input", "bytes", "peak above the bytes read", "ratio"],
    );
    let dir = tempfile::tempdir().expect("tempdir");
    if !bench.measuring() {
        // A check that the measuring process still runs, on a small input.
        measure_peak(dir.path(), "generated-100", &generated(100));
        bench.finish("");
        return;
    }
    let peaks: Vec<(String, Vec<u8>)> = vec![
        ("generated, 10000 resources".into(), generated(10_000)),
        (
            "ports of one container, 131070".into(),
            growing("ports of one container", 131_070),
        ),
        (
            "services publishing a port, 20000".into(),
            growing("services publishing a port", 20_000),
        ),
        (
            "steps holding a writer, 10000".into(),
            growing("steps holding a writer", 10_000),
        ),
    ];
    for (name, bytes) in &peaks {
        if !bench.selected(name) {
            continue;
        }
        let kib = measure_peak(dir.path(), name, bytes);
        bench.row(&[
            name.clone(),
            bytes.len().to_string(),
            format!("{:.1} MB", kib as f64 * 1024.0 / 1e6),
            format!("{:.1}×", kib as f64 * 1024.0 / bytes.len() as f64),
        ]);
    }
    bench.finish("cells are median (fastest–slowest sample) per parse; MB = 10^6 bytes.");
}
