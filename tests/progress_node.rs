//! Progress on a terminal, against `mesh-host daemon` as a real unit of
//! the sandbox node: `apply` and `run` under a pseudo-terminal (`script`)
//! show what the engine does; on a pipe their output is what the daemon's
//! plain answer says, byte for byte; `run --follow` prints the step's own
//! lines; Ctrl-C on `run` leaves the fire to the daemon, which finishes it.

mod support;

use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::process::Output;
use std::time::Duration;

use serde_json::{json, Value};
use support::daemon_unit::DaemonUnit;
use support::declare;
use support::wait_for;
use support::world::World;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The daemon's answer to `request` sent as a client without progress
/// sends it (the protocol as it was): one JSON object.
fn plain_answer(w: &World, request: &Value) -> Value {
    let mut s = UnixStream::connect(w.path("control.sock")).expect("connect");
    s.write_all(request.to_string().as_bytes()).expect("send");
    s.shutdown(Shutdown::Write).expect("shutdown");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("read");
    serde_json::from_str(&answer).unwrap_or_else(|e| panic!("one JSON object ({e}): {answer}"))
}

/// A service and a step holding it, the step printing `lines` lines a
/// second apart and exiting 0.
fn declared(w: &mut World, lines: u32) -> (String, String, String, Value) {
    let image = w.pulled_busybox();
    let web = w.name("web");
    let step_id = w.name("gc");
    let step_name = w.name("gc-run");
    let script = format!(
        "for i in $(seq 1 {lines}); do echo \"step-line-$i\"; sleep 1; done; echo step-err >&2"
    );
    let resources = json!([
        declare::service("web", &web, &image),
        declare::step(&step_id, &step_name, &image, &script, &["web"], 120),
    ]);
    (web, step_id, step_name, resources)
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn apply_shows_progress_on_a_terminal_and_its_report_unchanged_on_a_pipe() {
    let mut w = World::new("progapply");
    let d = DaemonUnit::install_with_args(&w, "", "--metrics-file=");
    w.write_declaration(json!([]));
    d.start();
    let (web, _, _, resources) = declared(&mut w, 1);
    let file = w.declaration("next.json", resources.clone());

    // On a terminal: the line names the apply, its count of decisions,
    // and a resource as it was decided; it is erased before the report.
    let out = d.cli_pty(&["apply", &file], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let shown = stdout(&out);
    assert!(
        shown.contains("mesh-host apply: ") && shown.contains("/2 decided"),
        "the progress line: {shown:?}"
    );
    assert!(shown.contains("\r\x1b[K"), "redrawn in place: {shown:?}");
    assert!(shown.contains("web created"), "the report: {shown:?}");
    assert!(w.running(&web), "the apply did apply");

    // With NO_COLOR, no colour. (An apply with nothing to do may be
    // answered before any decision is drawn: the line asserted is the one
    // drawn before the apply is asked.)
    let out = d.cli_pty(&["apply", &file], &["NO_COLOR=1"]);
    let shown = stdout(&out);
    assert!(
        shown.contains("\r\x1b[Kmesh-host apply") && !shown.contains("\x1b[2m"),
        "{shown:?}"
    );

    // On a pipe: exactly what the daemon answers a client that asks for
    // no progress, and nothing on stderr.
    let piped = d.cli(&["apply", &file]);
    assert_eq!(piped.status.code(), Some(0), "{}", stdout(&piped));
    let answer = plain_answer(
        &w,
        &json!({"command": "apply", "declaration": std::fs::read_to_string(&file).expect("read")}),
    );
    let text = answer["text"].as_str().expect("text");
    assert_eq!(stdout(&piped), format!("{text}\n"));
    assert!(
        piped.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&piped.stderr)
    );
    // And --json on a terminal prints the JSON alone.
    let out = d.cli_pty(&["apply", &file, "--json"], &[]);
    let shown = stdout(&out);
    assert!(!shown.contains("decided"), "{shown:?}");
    let json: Value = serde_json::from_str(shown.trim()).expect("the JSON report alone");
    assert_eq!(json["ok"], true);

    // With TERM=dumb, no redrawing: plain lines. The same declaration in
    // other bytes, so that it is decided (the same request again is
    // answered from what its apply left, with no decision to draw).
    let again = w.path("again.json");
    std::fs::write(
        &again,
        format!("{}\n\n", std::fs::read_to_string(&file).expect("read")),
    )
    .expect("write again.json");
    let out = d.cli_pty(&["apply", &again], &["TERM=dumb"]);
    let shown = stdout(&out);
    assert!(
        !shown.contains('\x1b'),
        "no escape on a dumb terminal: {shown:?}"
    );
    assert!(
        shown.contains("mesh-host apply: web unchanged"),
        "{shown:?}"
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn run_shows_its_phases_and_follows_the_steps_output() {
    let mut w = World::new("progrun");
    let (web, step_id, _, resources) = declared(&mut w, 3);
    let d = DaemonUnit::started(&w, resources);
    w.wait_running("the service", &web);

    let out = d.cli_pty(&["run", &step_id, "--follow"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let shown = stdout(&out);
    let prefix = format!("mesh-host run {step_id}: ");
    for phase in [
        "stopping held containers",
        "running",
        "starting held containers again",
    ] {
        assert!(
            shown.contains(&format!("{prefix}{phase}")),
            "phase {phase}: {shown:?}"
        );
    }
    assert!(shown.contains("s)"), "the elapsed time: {shown:?}");
    // The step's own lines, in order, before the outcome.
    let at = |what: &str| {
        shown
            .find(what)
            .unwrap_or_else(|| panic!("{what} in {shown:?}"))
    };
    assert!(at("step-line-1") < at("step-line-2"));
    assert!(at("step-line-3") < at("step-err"));
    assert!(
        at("step-err") < at(&format!("{step_id}: succeeded")),
        "{shown:?}"
    );

    // On a pipe, --follow prints the lines too: stdout's and stderr's.
    let piped = d.cli(&["run", &step_id, "--follow"]);
    assert_eq!(piped.status.code(), Some(0), "{}", stdout(&piped));
    let out = stdout(&piped);
    assert!(
        out.starts_with("step-line-1\nstep-line-2\nstep-line-3\n"),
        "{out:?}"
    );
    assert_eq!(String::from_utf8_lossy(&piped.stderr), "step-err\n");

    // Without --follow on a pipe: the fire's report, no progress at all.
    let piped = d.cli(&["run", &step_id]);
    assert_eq!(piped.status.code(), Some(0), "{}", stdout(&piped));
    let out = stdout(&piped);
    assert!(
        !out.contains('\r') && !out.contains('\x1b') && !out.contains("step-line"),
        "{out:?}"
    );
    assert!(out.starts_with(&format!("{step_id}: ")), "{out:?}");
    assert!(
        piped.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&piped.stderr)
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn ctrl_c_on_run_leaves_the_fire_to_the_daemon_which_finishes_it() {
    let mut w = World::new("progint");
    let (web, step_id, step_name, resources) = declared(&mut w, 6);
    let d = DaemonUnit::started(&w, resources);
    w.wait_running("the service", &web);

    let mut run = d.cli_pty_spawn(&["run", &step_id], &[]);
    wait_for("the step to run", Duration::from_secs(60), || {
        (w.exists(&step_name) && w.running(&step_name)).then_some(())
    });
    assert!(!w.running(&web), "held while the step runs");
    // Ctrl-C typed on the terminal: SIGINT to its foreground process.
    run.stdin
        .as_mut()
        .expect("stdin")
        .write_all(b"\x03")
        .expect("ctrl-c");
    let out = run.wait_with_output().expect("script");
    let shown = stdout(&out);
    assert_eq!(out.status.code(), Some(130), "{shown:?}");
    assert!(
        shown.contains(&format!(
            "interrupted; the fire of {step_id} (mesh-host-step-"
        )) && shown.contains("goes on in the daemon and its window still closes"),
        "{shown:?}"
    );
    assert!(
        w.running(&step_name),
        "the step still runs after the interrupt"
    );

    // The daemon finishes the fire: the step exits 0, the held service
    // runs again.
    wait_for("the step to exit", Duration::from_secs(60), || {
        (!w.running(&step_name)).then_some(())
    });
    assert_eq!(w.inspect(&step_name, "{{.State.ExitCode}}"), "0");
    w.wait_running("the held service to start again", &web);
    let finished = wait_for("step-finished", Duration::from_secs(30), || {
        let said = w.journal(&[&format!("MESH_STEP={step_id}"), "MESH_EVENT=step-finished"]);
        (!said.trim().is_empty()).then_some(said)
    });
    assert!(
        finished.contains(&format!("step {step_id} finished")),
        "{finished}"
    );
    let closed = w.journal(&[&format!("MESH_STEP={step_id}"), "MESH_EVENT=window-closed"]);
    assert!(!closed.trim().is_empty(), "its window closed");
}
