//! Declared paths judged as the unit will see them, on the node: a
//! usr-merged Debian 12 whose `/lib`, `/bin` and `/var/run` are links
//! into `/usr` and `/run`. A file declared through one of them is refused
//! by `check` and by the daemon (an `apply` through its socket, and its
//! own declaration file at `systemctl reload`), naming the link, and
//! nothing is written where the link leads.

mod support;

use serde_json::json;
use support::daemon_unit::DaemonUnit;
use support::declare::{self, text};
use support::world::World;

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn paths_through_the_usr_merge_links_are_refused_by_check_and_the_daemon() {
    let mut w = World::new("paths");
    let a = w.name("a");
    let img = w.busybox();
    let tag = w.name("dir");
    let service = declare::service("a", &a, &img);
    let d = DaemonUnit::started_with_args(&w, "--metrics-file=", json!([service.clone()]));
    // The node is usr-merged: these are links there (else the test says so).
    for link in ["/lib", "/bin", "/var/run"] {
        let is_link = d.node.sh(&format!("test -L {link}"));
        assert!(is_link.status.success(), "{link} is not a link on the node");
    }
    let installed = w.path("declaration.json");
    let before = std::fs::read(&installed).expect("the node's declaration");
    let cases = [
        (
            format!("/lib/{tag}/app.conf"),
            format!("/usr/lib/{tag}/app.conf"),
            "/lib is a link to /usr/lib",
            "ProtectSystem=yes",
        ),
        (
            format!("/bin/{tag}"),
            format!("/usr/bin/{tag}"),
            "/bin is a link to /usr/bin",
            "ProtectSystem=yes",
        ),
        (
            format!("/var/run/mesh-host/{tag}.conf"),
            format!("/run/mesh-host/{tag}.conf"),
            "/var/run is a link to /run",
            "own runtime directory (/run/mesh-host)",
        ),
    ];
    for (i, (path, reached, link, why)) in cases.iter().enumerate() {
        let file = json!({"id": "conf", "type": "file", "path": path, "content": "x=1\n"});
        let decl = w.declaration(&format!("through-{i}.json"), json!([service.clone(), file]));
        let expected = format!("{path} is {reached} as the unit sees it (");

        // check on the node: refused, naming where it leads and the link.
        let out = w.mesh(&["check", &decl]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{path}: {said}");
        assert!(said.contains(&expected), "{path}: {said}");
        assert!(said.contains(link) && said.contains(why), "{path}: {said}");

        // The daemon, through its socket: refused, nothing applied.
        let out = d.cli(&["apply", &decl]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{path}: {said}");
        assert!(said.contains(&expected), "{path}: {said}");
        assert_eq!(
            std::fs::read(&installed).expect("read"),
            before,
            "{path}: the node's declaration file is not replaced"
        );

        // The daemon's own declaration file at a reload: refused, logged,
        // the daemon active and nothing written.
        let since = w.journal_now();
        std::fs::copy(&decl, &installed).expect("copy");
        d.reload_and_wait();
        assert!(d.active(), "the daemon stays active");
        let logged = d.journal(&since, &["PRIORITY=3"]);
        assert!(logged.contains(&expected), "{path}: journal: {logged}");
        std::fs::write(&installed, &before).expect("restore");
        d.reload_and_wait();

        let written = d.node.sh(&format!("test -e {reached}"));
        assert!(!written.status.success(), "{reached} was written");
    }
    assert!(w.running(&a), "the declared service still runs");
}
