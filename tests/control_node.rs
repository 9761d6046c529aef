//! The control socket of `mesh-host daemon` running as a real unit of the
//! sandbox node, against clients that hold its connections and say nothing.

mod support;

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::json;
use support::daemon_unit::DaemonUnit;
use support::wait_for;
use support::world::World;

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Forty connections opened and left silent take every slot of the socket;
/// once the request timeout (10 s) has passed, each silent client has been
/// dropped, told why, and `mesh-host status` is served again while those
/// clients still hold their ends open.
#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn silent_clients_are_dropped_after_the_request_timeout_and_status_is_served() {
    let w = World::new("ctl");
    let d = DaemonUnit::install_with_args(&w, "", "--metrics-file=");
    w.write_declaration(json!([]));
    d.start();
    let out = d.cli(&["status"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    // The socket is a path on the filesystem the node shares: connect as
    // root from here, and never send a byte.
    let sock = w.path("control.sock");
    let opened = Instant::now();
    let mut silent: Vec<UnixStream> = (0..40)
        .map(|i| UnixStream::connect(&sock).unwrap_or_else(|e| panic!("connection {i}: {e}")))
        .collect();
    let full = d.cli(&["status"]);
    assert_eq!(full.status.code(), Some(2), "{}", text(&full));
    assert!(
        text(&full).contains("too many connections"),
        "every slot is held by a silent client: {}",
        text(&full)
    );

    // Past the timeout, with all forty still open on this side.
    let timeout = Duration::from_secs(10);
    std::thread::sleep((timeout + Duration::from_millis(500)).saturating_sub(opened.elapsed()));
    let served = wait_for(
        "status to be served after the request timeout",
        Duration::from_secs(3),
        || {
            let out = d.cli(&["status"]);
            (out.status.code() == Some(0)).then_some(out)
        },
    );
    assert!(text(&served).contains("last apply"), "{}", text(&served));
    eprintln!("served {:?} after the connections opened", opened.elapsed());

    // Each silent client was answered and closed by the daemon: sixteen
    // dropped for their silence, the rest refused for want of a slot.
    let mut dropped = 0;
    let mut refused = 0;
    for (i, stream) in silent.iter_mut().enumerate() {
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("read timeout");
        let mut answer = String::new();
        stream
            .read_to_string(&mut answer)
            .unwrap_or_else(|e| panic!("connection {i} was not closed by the daemon: {e}"));
        if answer.contains("request not received in time") {
            dropped += 1;
        } else if answer.contains("too many connections") {
            refused += 1;
        } else {
            panic!("connection {i}: unexpected answer {answer:?}");
        }
    }
    assert_eq!((dropped, refused), (16, 24));
    assert!(d.active(), "the daemon still runs");
}
