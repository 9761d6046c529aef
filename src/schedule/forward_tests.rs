//! A step's output forwarded to the journal where the runtime does not
//! write it there (Podman), against the scripted runtime and a socket of
//! the test's own standing for journald: every line an entry of its fire
//! with the fields Docker's driver gives, numbered in the container's log;
//! a forward resumed from where it was left sends nothing twice; what is
//! owed is on disk until the container has ended and all is sent. On the
//! sandbox node, journald itself: `tests/step_output_node.rs`.

use std::collections::BTreeMap;
use std::os::unix::net::UnixDatagram;
use std::sync::Arc;
use std::time::Duration;

use crate::runtime::fake::FakeRuntime;
use crate::runtime::{ContainerRuntime, ContainerSpec, OutputStream};
use crate::schedule::forward::{forward, Forwards, Owed};
use crate::schedule::output::{fire_name, to_journal};
use crate::schedule::tests::{rig, step, t0};
use crate::store::Store;
use crate::window::Owner;

/// A socket standing for journald, and what it received, entry by entry.
struct Journald {
    socket: UnixDatagram,
    path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Journald {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("journal");
        let socket = UnixDatagram::bind(&path).expect("bind");
        socket.set_nonblocking(true).expect("nonblocking");
        Journald {
            socket,
            path,
            _dir: dir,
        }
    }

    /// Every entry received so far, as field maps (no value here holds a
    /// newline: the simple form only).
    fn entries(&self) -> Vec<BTreeMap<String, String>> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = self.socket.recv(&mut buf) {
            let text = String::from_utf8_lossy(&buf[..n]).into_owned();
            out.push(
                text.lines()
                    .filter_map(|l| l.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            );
        }
        out
    }
}

fn owed(fire: &str) -> Owed {
    Owed::new(
        &Owner::current().expect("owner"),
        "gc",
        Some("m"),
        fire,
        "gc-run",
        "img@sha256:00",
    )
}

/// A fake runtime that forwards, with `gc-run` made for `fire` and run
/// to its end, having written `chunks`.
async fn ran(fire: &str, chunks: &[(OutputStream, &str)]) -> FakeRuntime {
    let fake = FakeRuntime::new();
    fake.forwarding_output();
    fake.add_image("img@sha256:00");
    let mut spec = ContainerSpec {
        name: "gc-run".into(),
        image: "img@sha256:00".into(),
        ..Default::default()
    };
    to_journal(&mut spec, "gc", fire);
    fake.add_container(spec, false);
    for (stream, text) in chunks {
        fake.write_output("gc-run", *stream, text);
    }
    fake
}

#[tokio::test]
async fn every_line_is_an_entry_of_its_fire_numbered_and_the_debt_settled() {
    let fire = fire_name("gc", t0());
    let (out, err) = (OutputStream::Stdout, OutputStream::Stderr);
    let long = "x".repeat(crate::journal::MAX_VALUE + 10);
    let fake = ran(
        &fire,
        &[
            (out, "one\ntw"),
            (err, "oops\n"),
            (out, "o\n"),
            (out, &format!("{long}\n")),
            (out, "no newline"),
        ],
    )
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let journald = Journald::new();
    let forwards =
        Forwards::of(&Store::open(dir.path()).expect("store")).sending_to(&journald.path);
    forwards.owe(&owed(&fire)).expect("owed");
    assert_eq!(forwards.all().len(), 1);
    let runtime: Arc<dyn ContainerRuntime> = Arc::new(fake);
    forward(runtime, forwards.clone(), owed(&fire), 0, true).await;
    let entries = journald.entries();
    let said: Vec<(&str, &str, &str, usize)> = entries
        .iter()
        .map(|e| {
            (
                e["MESH_OUTPUT_LINE"].as_str(),
                e["PRIORITY"].as_str(),
                e.get("CONTAINER_PARTIAL_MESSAGE")
                    .map_or("", String::as_str),
                e["MESSAGE"].len(),
            )
        })
        .collect();
    assert_eq!(
        said,
        vec![
            ("0", "6", "", 3),
            ("1", "3", "", 4),
            ("2", "6", "", 3),
            ("3", "6", "true", crate::journal::MAX_VALUE),
            ("4", "6", "", 10),
            ("5", "6", "", 10),
        ]
    );
    assert_eq!(entries[2]["MESSAGE"], "two", "a line cut across chunks");
    for e in &entries {
        assert_eq!(e["MESH_STEP"], "gc");
        assert_eq!(e["MESH_FIRE"], fire);
        assert_eq!(e["MESH_MODULE"], "m");
        assert_eq!(e["SYSLOG_IDENTIFIER"], "mesh-host-step");
        assert_eq!(e["CONTAINER_NAME"], "gc-run");
        assert!(!e["CONTAINER_ID"].is_empty());
    }
    assert!(forwards.all().is_empty(), "all sent: settled");
}

#[tokio::test]
async fn a_forward_resumed_from_where_it_was_left_sends_nothing_twice() {
    let fire = fire_name("gc", t0());
    let out = OutputStream::Stdout;
    let fake = ran(&fire, &[(out, "a\nb\n"), (out, "c\nd\n")]).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let journald = Journald::new();
    let forwards =
        Forwards::of(&Store::open(dir.path()).expect("store")).sending_to(&journald.path);
    let runtime: Arc<dyn ContainerRuntime> = Arc::new(fake);
    // Lines 0 and 1 went before its owner died.
    forward(runtime, forwards, owed(&fire), 2, true).await;
    let messages: Vec<String> = journald
        .entries()
        .iter()
        .map(|e| format!("{} {}", e["MESH_OUTPUT_LINE"], e["MESSAGE"]))
        .collect();
    assert_eq!(messages, ["2 c", "3 d"]);
}

#[tokio::test]
async fn the_container_of_another_fire_is_never_taken_for_this_ones() {
    let fire = fire_name("gc", t0());
    // The step's container now is the next fire's.
    let fake = ran(
        "mesh-host-step-gc-20300101T000000Z.scope",
        &[(OutputStream::Stdout, "later\n")],
    )
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let journald = Journald::new();
    let forwards =
        Forwards::of(&Store::open(dir.path()).expect("store")).sending_to(&journald.path);
    forwards.owe(&owed(&fire)).expect("owed");
    let runtime: Arc<dyn ContainerRuntime> = Arc::new(fake);
    forward(runtime, forwards.clone(), owed(&fire), 0, true).await;
    assert!(journald.entries().is_empty());
    assert!(
        forwards.all().is_empty(),
        "its container is gone: nothing left to forward"
    );
}

#[tokio::test(start_paused = true)]
async fn a_fire_owes_its_output_while_it_runs_and_forwards_it_as_it_comes() {
    let r = rig(&[("db", true)]);
    r.fake.forwarding_output();
    r.fake.exit_with("gc-run", 0, Duration::from_secs(30));
    let forwards = Forwards::of(&r.store);
    let firer = r.firer.clone();
    let fire = tokio::spawn(async move { firer.fire(&step("gc", &["db"], None), t0()).await });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(r.fake.is_running("gc-run"));
    let owed: Vec<String> = forwards.all().into_iter().map(|o| o.fire).collect();
    assert_eq!(owed, vec![fire_name("gc", t0())], "owed while it runs");
    let report = fire.await.expect("fire");
    assert!(report.ok(), "{report:?}");
    assert!(
        r.fake
            .calls()
            .iter()
            .any(|c| matches!(c, crate::runtime::fake::Call::Output(_))),
        "followed: {:?}",
        r.fake.calls()
    );
    assert!(forwards.all().is_empty(), "settled once it ended");
}
