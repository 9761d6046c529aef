//! `mesh_host::compose::import` (read, interpolate, merge, classify and
//! translate a compose project, then check the declaration made), images
//! left as tags (`--no-resolve`, no runtime asked), against its peer
//! `docker-compose config` (Debian's 1.29: read, interpolate, validate and
//! print the project) where it is installed.
//!
//! Inputs: generated projects of 100, 1,000 and 20,000 services, written
//! as stacks are: a shared block through an anchor and a merge key,
//! environment, a published port (every other service), a named volume, a
//! health check and a `depends_on` (each service on the one at half its index, so the order
//! is a tree). 100 and 1,000 are measured by the harness; 20,000 (and
//! every peer) in three timed runs, their median shown.
//!
//! `cargo bench --bench import [-- FILTER]`

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use mesh_host::compose::{import, Source};
use support::{human, Bench};

/// A project of `n` services.
fn project(n: usize) -> String {
    let mut out = String::from(
        "x-common: &common\n  image: ${REGISTRY:-reg.test}/busybox:stable\n  restart: unless-stopped\n  cap_drop: [ALL]\n  stop_grace_period: 5s\n\nservices:\n",
    );
    for i in 0..n {
        out.push_str(&format!(
            "  s{i}:\n    <<: *common\n    command: [\"sh\", \"-c\", \"exec httpd -f -p 80\"]\n    environment:\n      NAME: s{i}\n      LEVEL: ${{LEVEL:-info}}\n      PEER: s{peer}:80\n    volumes: [\"data{i}:/data\"]\n    healthcheck:\n      test: [\"CMD\", \"true\"]\n      interval: 10s\n      retries: 3\n",
            peer = i / 2,
        ));
        // Every other service publishes a port: 10,000 at 20,000
        // services, within the bound of one project's ports.
        if i % 2 == 0 {
            out.push_str(&format!(
                "    ports: [\"127.0.0.1:{}:80\"]\n",
                10_000 + i / 2
            ));
        }
        if i > 0 {
            out.push_str(&format!("    depends_on: [s{}]\n", i / 2));
        }
    }
    out.push_str("\nvolumes:\n");
    for i in 0..n {
        out.push_str(&format!("  data{i}: {{}}\n"));
    }
    out
}

/// Import the project in `dir` (no pinning), as the command does: the
/// declaration's bytes.
fn run(rt: &tokio::runtime::Runtime, dir: &Path) -> Vec<u8> {
    let src = Source {
        dir: dir.to_path_buf(),
        project_name: Some("bench".into()),
        ..Source::default()
    };
    match rt.block_on(import(&src, None)) {
        Ok(imported) => imported.bytes,
        Err(problems) => panic!("refused: {problems:#?}"),
    }
}

/// The median of three timed runs of `body`.
fn three(mut body: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..3)
        .map(|_| {
            let start = Instant::now();
            body();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[1]
}

/// `docker-compose config` of the project in `dir`, three runs, when the
/// command is there.
fn compose_config(dir: &Path) -> Option<Duration> {
    let found = std::process::Command::new("docker-compose")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    found.then(|| {
        three(|| {
            let out = std::process::Command::new("docker-compose")
                .args(["-p", "bench", "config", "-q"])
                .current_dir(dir)
                .output()
                .expect("docker-compose");
            assert!(out.status.success(), "{out:?}");
        })
    })
}

fn main() {
    let mut bench = Bench::from_args();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let base = tempfile::tempdir().expect("tempdir");
    let sizes: &[usize] = if bench.measuring() {
        &[100, 1_000, 20_000]
    } else {
        &[100]
    };
    bench.table(
        "Import a compose project (--no-resolve)",
        &[
            "services",
            "bytes",
            "mesh-host import",
            "declaration bytes",
            "of which its check",
            "docker-compose config",
        ],
    );
    for &n in sizes {
        let name = format!("{n} services");
        if !bench.selected(&name) {
            continue;
        }
        let dir = base.path().join(n.to_string());
        std::fs::create_dir_all(&dir).expect("project dir");
        let text = project(n);
        std::fs::write(dir.join("compose.yaml"), &text).expect("write");
        let declaration = run(&rt, &dir);
        // The import ends by checking what it made, as `check` would:
        // that part alone.
        let check = || {
            mesh_host::declaration::parse(&declaration).ok();
        };
        let (ours, checked) = if n <= 1_000 {
            (
                bench.run(&name, || run(&rt, &dir)).map(|s| s.cell()),
                bench
                    .run(&format!("{name}, check"), check)
                    .map_or(String::new(), |s| s.cell()),
            )
        } else if bench.measuring() {
            (
                Some(format!(
                    "{} (median of 3)",
                    human(three(|| {
                        run(&rt, &dir);
                    }))
                )),
                format!("{} (median of 3)", human(three(check))),
            )
        } else {
            (None, String::new())
        };
        let Some(ours) = ours else { continue };
        let peer = if bench.measuring() && n <= 1_000 {
            compose_config(&dir).map_or("not installed".to_owned(), |d| {
                format!("{} (median of 3)", human(d))
            })
        } else {
            "not run".to_owned()
        };
        bench.row(&[
            n.to_string(),
            text.len().to_string(),
            ours,
            declaration.len().to_string(),
            checked,
            peer,
        ]);
    }
}
