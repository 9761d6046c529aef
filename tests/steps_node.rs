//! How a scheduled step's fires are placed in time, with the daemon as a
//! real unit of the sandbox node: the splay of `randomized-delay` (the fire
//! comes when `status` and `plan` said), and the `catch-up` of a fire
//! missed while the daemon was stopped. Checked through journald (when
//! `step-started` was logged) and Docker (how often the step ran).

mod support;

use std::process::Output;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use support::daemon_unit::DaemonUnit;
use support::wait_for;
use support::world::World;

fn every_minute(id: &str, name: &str, image: &str) -> Value {
    json!({"id": id, "type": "container", "name": name, "image": image,
           "command": ["sh", "-c", "echo fired"], "network": "none",
           "schedule": "* * * * *", "timeout": 60})
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn time(v: &Value) -> DateTime<Utc> {
    let text = v.as_str().unwrap_or_else(|| panic!("not a time: {v}"));
    DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .to_utc()
}

/// When journald received each entry of the step's `event`, in order.
fn logged_at(d: &DaemonUnit, event: &str, step: &str) -> Vec<(DateTime<Utc>, String)> {
    let field = format!("MESH_EVENT={event}");
    let step = format!("MESH_STEP={step}");
    d.journal("-10min", &["-o", "json", &field, &step])
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| {
            let micros: i64 = e["__REALTIME_TIMESTAMP"]
                .as_str()
                .and_then(|t| t.parse().ok())
                .expect("a journal timestamp");
            let at = DateTime::from_timestamp_micros(micros).expect("a time");
            (at, e["MESSAGE"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_randomized_delay_fires_at_the_time_status_and_plan_show() {
    let mut w = World::new("splay");
    let machine_id = std::fs::read_to_string("/etc/machine-id")
        .expect("the node's machine id (the machine's)")
        .trim()
        .to_string();
    let bound = Duration::from_secs(30);
    // A step id whose delay on this node is well clear of the cron time, so
    // that a fire at the cron time could not pass for the delayed one.
    let id = (0..100)
        .map(|i| format!("splay{i}"))
        .find(|id| {
            let d = mesh_host::schedule::splay::delay(&machine_id, id, bound);
            d >= Duration::from_secs(8) && d <= Duration::from_secs(25)
        })
        .expect("a step id delayed 8 to 25 s");
    let delay = mesh_host::schedule::splay::delay(&machine_id, &id, bound);
    let run = w.name("run");
    let img = w.busybox();
    w.node.docker_ok(&["pull", &img]);
    let mut step = every_minute(&id, &run, &img);
    step["randomized-delay"] = json!(30);
    w.write_declaration(json!([step]));
    let d = DaemonUnit::install_with_args(&w, "", "--metrics-file=");
    d.start();

    let status = json_of(&d.cli(&["status", "--json"]));
    let shown = &status["steps"][0];
    assert_eq!(shown["step"], json!(id), "{status}");
    assert_eq!(
        shown["delay-ms"],
        json!(delay.as_millis() as u64),
        "{status}"
    );
    let next = time(&shown["next-fire"]);
    // The cron time (a whole minute) plus this node's delay for this step.
    assert_eq!(
        next.timestamp_millis() % 60_000,
        delay.as_millis() as i64,
        "{next}"
    );
    let plan = json_of(&d.cli(&["plan", &id, "--json"]));
    assert_eq!(time(&plan["next-fire"]), next, "{plan}");
    let text = String::from_utf8_lossy(&d.cli(&["status"]).stdout).into_owned();
    assert!(
        text.contains(&format!(
            "(randomized delay {}.{:03} s)",
            delay.as_secs(),
            delay.subsec_millis()
        )),
        "{text}"
    );
    // `mesh-host cron` shows the same time without asking the daemon.
    let cron = json_of(&w.mesh(&[
        "cron",
        "* * * * *",
        "--zone",
        "UTC",
        "--count",
        "1",
        "--from",
        &(next - chrono::TimeDelta::seconds(59)).to_rfc3339(),
        "--randomized-delay",
        "30",
        "--step",
        &id,
        "--json",
    ]));
    assert_eq!(time(&cron["next"][0]), next, "{cron}");

    // The fire comes at the time shown.
    let started = wait_for("the delayed fire", Duration::from_secs(100), || {
        logged_at(&d, "step-started", &id).into_iter().next()
    });
    let late = (started.0 - next).num_milliseconds();
    assert!(
        (0..2000).contains(&late),
        "step-started logged at {} for a fire shown at {next}: {}",
        started.0,
        started.1
    );
    assert!(
        started.1.contains(&format!("(due {})", next.to_rfc3339())),
        "{}",
        started.1
    );
    wait_for("the run to exit", Duration::from_secs(30), || {
        (w.inspect(&run, "{{.State.Status}} {{.State.ExitCode}}") == "exited 0").then_some(())
    });
}
