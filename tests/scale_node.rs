//! `benches/scale-node.sh` still works: run at a tiny size (5 services, 5
//! steps, one fire each way) against the node, it prints every figure of
//! its table, each with a value. Nothing is asserted on a time: the full
//! size is run by hand (docs/benchmarks.md, "The apply at scale").

mod support;

use std::process::Command;

use support::Node;

/// The rows the bench prints, by the start of their label.
const ROWS: &[&str] = &[
    "| first apply (creates and starts 5)",
    "| no-op apply",
    "| `mesh-host diff FILE`",
    "| `mesh-host status`",
    "| `mesh-host plan t1`",
    "| idle: voluntary switches",
    "| resident memory",
    "| fire lateness, one step declared",
    "| fire lateness, beside 5 services |",
    "| fire lateness, beside 5 services and 5 steps",
    "| fire lateness: beside 5 steps against beside none",
];

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn the_scale_bench_prints_every_figure_at_a_tiny_size() {
    let node = Node::from_env();
    let repo = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("bash")
        .arg(format!("{repo}/benches/scale-node.sh"))
        .env("MESH_NODE_STATE", node.state_dir())
        .env("MESH_HOST_BIN", env!("CARGO_BIN_EXE_mesh-host"))
        .env("BENCH_SERVICES", "5")
        .env("BENCH_STEPS", "5")
        .env("BENCH_NOOP_RUNS", "2")
        .env("BENCH_IDLE_RUNS", "1")
        .env("BENCH_IDLE_SECONDS", "2")
        .env("BENCH_FIRES", "1")
        // Nothing here is a figure to keep: no settling before the idle
        // window, and the peer's start 15 s after the fire, not 30 (a
        // fire later than that under the pool's load would not be found).
        .env("BENCH_IDLE_SETTLE", "0")
        .env("BENCH_PEER_AT", "15")
        .output()
        .expect("run benches/scale-node.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "scale-node.sh failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    for row in ROWS {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("no row {row:?} in:\n{stdout}"));
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // A build without `diff` says so on its row.
        if row.contains("diff") && cells[2] == "— (not in this build)" {
            let help = Command::new(env!("CARGO_BIN_EXE_mesh-host"))
                .args(["diff", "--help"])
                .output()
                .expect("run mesh-host");
            assert!(
                !help.status.success(),
                "diff exists but was not measured: {line}"
            );
            continue;
        }
        // | label | mesh-host | peer | ...: the measured cell holds a value.
        assert!(
            cells[2].starts_with(|c: char| c.is_ascii_digit()),
            "row {row:?} has no figure: {line}"
        );
        if !row.contains("status") && !row.contains("plan") && !row.contains("memory") {
            assert!(
                cells[3].starts_with(|c: char| c.is_ascii_digit()),
                "row {row:?} has no peer figure: {line}"
            );
        }
    }
    // Every container and unit it made is gone.
    let prefix = stdout
        .split('`')
        .find(|w| w.starts_with("mhscale-") && w.ends_with("-…"))
        .map(|w| w.trim_end_matches('…'))
        .unwrap_or_else(|| panic!("no name prefix in:\n{stdout}"));
    let left = node.sh_ok(&format!(
        "docker ps -aq --filter name=^/{prefix} | wc -l; systemctl list-units --all --no-legend '{prefix}*' | wc -l"
    ));
    assert_eq!(
        left.split_whitespace().collect::<Vec<_>>(),
        ["0", "0"],
        "left behind"
    );
}
