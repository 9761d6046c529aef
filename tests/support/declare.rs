//! What a node test declares and reads back, one function per thing: a
//! busybox service of module `m`, a step of module `m` that holds services
//! while it runs, a command's output, and places in Docker's own record of
//! events ([`World::events`](super::world::World::events)).
//!
//! Each returns a plain `json!` resource, so a test that needs one field
//! more sets it on the value, in the test, where it shows.

use std::net::TcpListener;
use std::process::Output;

use serde_json::{json, Value};

use super::world::SERVICE_CMD;

/// A busybox service resource `id` of module `m`, its container `name`,
/// stopping at once on SIGTERM.
pub fn service(id: &str, name: &str, image: &str) -> Value {
    json!({"id": id, "type": "container", "module": "m", "name": name, "image": image,
           "command": ["sh", "-c", SERVICE_CMD], "network": "none"})
}

/// A step resource `id` of module `m`, its container `name` running
/// `script`, scheduled daily at 03:00, holding `holds` while it runs and
/// ended after `timeout` seconds.
pub fn step(
    id: &str,
    name: &str,
    image: &str,
    script: &str,
    holds: &[&str],
    timeout: u64,
) -> Value {
    json!({"id": id, "type": "container", "module": "m", "name": name, "image": image,
           "command": ["sh", "-c", script], "network": "none", "schedule": "0 3 * * *",
           "while-stopped": holds, "timeout": timeout})
}

/// A command's standard output and error, one after the other.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Where Docker first saw `action` of `name` among `events`; panics,
/// naming what it saw, when it never did.
pub fn first(events: &[(String, String)], name: &str, action: &str) -> usize {
    events
        .iter()
        .position(|(n, a)| n == name && a == action)
        .unwrap_or_else(|| panic!("Docker saw no {action} of {name}: {events:?}"))
}

/// Where Docker last saw `action` of `name` among `events`; panics,
/// naming what it saw, when it never did.
pub fn last(events: &[(String, String)], name: &str, action: &str) -> usize {
    events
        .iter()
        .rposition(|(n, a)| n == name && a == action)
        .unwrap_or_else(|| panic!("Docker saw no {action} of {name}: {events:?}"))
}

/// Whether Docker's `action` is a container coming to be under its name:
/// `create`, or, for one of network `none` that mesh-host made under its
/// making name first and then named (docs/apply.md), `rename`.
pub fn is_made(action: &str) -> bool {
    action == "create" || action == "rename"
}

/// Where Docker first saw `name` come to be under its name ([`is_made`]);
/// panics, naming what it saw, when it never did.
pub fn first_made(events: &[(String, String)], name: &str) -> usize {
    events
        .iter()
        .position(|(n, a)| n == name && is_made(a))
        .unwrap_or_else(|| panic!("Docker saw {name} never made: {events:?}"))
}

/// How many times Docker saw `action` of `name` among `events`.
pub fn count(events: &[(String, String)], name: &str, action: &str) -> usize {
    events
        .iter()
        .filter(|(n, a)| n == name && a == action)
        .count()
}

/// A loopback port nothing listens on (the node shares this machine's
/// network namespace).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
