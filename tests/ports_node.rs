//! Published ports (CONTRACT, "Compose"), on the sandbox node's real
//! runtime: a declared port answers from the node, a changed port recreates
//! the container and answers at its new number only, and a host port that
//! another process holds fails that container alone, its reason named.
//! Each answer is read through the network (curl on the node), not
//! through mesh-host's report alone.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::declare::text;
use support::wait_for;
use support::world::World;

/// A web service on `network`, busybox httpd serving `/etc` on 8080.
fn web(name: &str, image: &str, network: &str, ports: Value) -> Value {
    json!({"id": "web", "type": "container", "module": "m", "name": name, "image": image,
           "command": ["httpd", "-f", "-p", "8080", "-h", "/etc"],
           "network": network, "ports": ports})
}

/// Host ports of this test: apart from every other test's (the node's
/// network namespace is the machine's).
fn host_ports(w: &mut World) -> [u16; 3] {
    let seed = w.name("ports");
    let n = seed
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b.into()));
    let base = 20_000 + (n % 3_000) as u16 * 3;
    [base, base + 1, base + 2]
}

/// A user-defined network (a published port answers only on one with this
/// node's `--bridge=none`), removed with the world's containers.
struct Net<'a> {
    w: &'a World,
    name: String,
}

impl<'a> Net<'a> {
    fn new(w: &'a World, name: String) -> Net<'a> {
        w.node.docker_ok(&["network", "create", &name]);
        Net { w, name }
    }
}

impl Drop for Net<'_> {
    fn drop(&mut self) {
        let _ = self.w.node.docker(&["network", "rm", &self.name]);
    }
}

/// What `GET http://127.0.0.1:PORT/hostname` answers from the node, if
/// anything.
fn get(w: &World, port: u16) -> Option<String> {
    let out = w
        .node
        .sh(&format!("curl -sf -m 2 http://127.0.0.1:{port}/hostname"));
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_published_port_answers_from_the_node_and_a_change_moves_it() {
    let mut w = World::new("ports");
    let img = w.pulled_busybox();
    let name = w.name("web");
    let [first, second, _] = host_ports(&mut w);
    let net_name = w.name("net");
    let net = Net::new(&w, net_name);
    let at = |port: u16| json!([{"host": port, "container": 8080, "address": "127.0.0.1"}]);

    let out = w.apply_local(json!([web(&name, &img, &net.name, at(first))]));
    assert!(out.status.success(), "{}", text(&out));
    let id = w.inspect(&name, "{{.Id}}");
    let answer = wait_for("the port to answer", Duration::from_secs(30), || {
        get(&w, first)
    });
    assert_eq!(
        answer,
        w.inspect(&name, "{{.Config.Hostname}}"),
        "the answer is the container's"
    );
    assert_eq!(
        w.inspect(&name, "{{json .HostConfig.PortBindings}}"),
        format!("{{\"8080/tcp\":[{{\"HostIp\":\"127.0.0.1\",\"HostPort\":\"{first}\"}}]}}")
    );

    // The same again: nothing to do.
    let out = w.apply_local(json!([web(&name, &img, &net.name, at(first))]));
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(w.inspect(&name, "{{.Id}}"), id, "unchanged ports keep it");

    // Moved: recreated, the report names the field, and only the new
    // port answers.
    let out = w.apply_local(json!([web(&name, &img, &net.name, at(second))]));
    let text = text(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("ports changed"), "{text}");
    assert_ne!(w.inspect(&name, "{{.Id}}"), id, "recreated");
    wait_for("the new port to answer", Duration::from_secs(30), || {
        get(&w, second)
    });
    assert_eq!(get(&w, first), None, "the old port still answers");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_host_port_another_process_holds_fails_that_container_alone() {
    let mut w = World::new("ports-held");
    let img = w.pulled_busybox();
    let name = w.name("web");
    let other = w.name("other");
    let [_, _, held] = host_ports(&mut w);
    let holder = w.name("holder");
    let net_name = w.name("net");
    let net = Net::new(&w, net_name);
    // Another process of the node listens on the port first: httpd in a
    // container of the host's network.
    w.node.docker_ok(&[
        "run",
        "-d",
        "--name",
        &holder,
        "--network",
        "host",
        &img,
        "httpd",
        "-f",
        "-p",
        &format!("127.0.0.1:{held}"),
        "-h",
        "/etc",
    ]);
    wait_for("the holder to listen", Duration::from_secs(60), || {
        get(&w, held).map(|_| ())
    });
    let out = w.apply_local(json!([
        web(
            &name,
            &img,
            &net.name,
            json!([{"host": held, "container": 8080, "address": "127.0.0.1"}])
        ),
        support::declare::service("other", &other, &img),
    ]));
    let text = text(&out);
    assert!(!out.status.success(), "the apply says it failed: {text}");
    assert!(
        text.contains(&held.to_string()),
        "the port is named: {text}"
    );
    assert!(w.running(&other), "the rest of the apply went on: {text}");
    assert!(!w.running(&name), "{name} runs though its port is held");
}
