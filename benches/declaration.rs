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
//! `cargo bench --bench declaration [-- FILTER]`

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

fn main() {
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
    for n in [1_000, 10_000] {
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
    bench.finish("cells are median (fastest–slowest sample) per parse; MB = 10^6 bytes.");
}
