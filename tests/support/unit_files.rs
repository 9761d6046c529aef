//! The node's systemd as `UnitFiles` sees it: connected to the node's own
//! system bus from outside (`/proc/<node pid>/root/run/dbus/system_bus_socket`),
//! writing unit files into the node's runtime unit directory
//! `/run/systemd/system`, its own tmpfs, so no unit file lands in this
//! machine's /etc. Enabling still puts a symlink under
//! /etc/systemd/system/<target>.wants (the real /etc, shared with the
//! node): [`NodeUnits::service`] gives each unit a guard that disables it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use mesh_host::declaration::{Unit, UnitName, UnitState};
use mesh_host::systemd::unit_files::{FileChange, UnitFiles};

use super::{quote, unique_name, Cleanup, Node};

/// The node's runtime unit directory, as the node sees it.
pub const NODE_UNIT_DIR: &str = "/run/systemd/system";

/// `UnitFiles` over the node's bus, and the node to check it with.
pub struct NodeUnits {
    /// The node.
    pub node: Node,
    /// The unit manager under test (a test may replace it with a
    /// differently configured clone).
    pub units: UnitFiles,
}

impl NodeUnits {
    /// Connected to the node's systemd; panics without a node.
    pub async fn connect() -> NodeUnits {
        let node = Node::from_env();
        let root = format!("/proc/{}/root", node.pid());
        let address = format!("unix:path={root}/run/dbus/system_bus_socket");
        let dir = PathBuf::from(format!("{root}{NODE_UNIT_DIR}"));
        let units = UnitFiles::connect_to(&address, dir)
            .await
            .expect("connect to the node's systemd");
        NodeUnits { node, units }
    }

    /// A unique service name for one test, and a guard that stops,
    /// disables and deletes it inside the node when dropped, with the
    /// test's output file `/run/<name>.out`.
    pub fn service(&self, what: &str) -> (String, Cleanup) {
        let name = format!("{}.service", unique_name(&format!("mesh-unit-{what}")));
        let n = quote(&name);
        let guard = self.node.on_drop(format!(
            "systemctl stop {n}; systemctl disable {n} 2>/dev/null; \
             rm -f {NODE_UNIT_DIR}/{name} /run/{name}.out; systemctl daemon-reload; \
             systemctl reset-failed {n} 2>/dev/null; true"
        ));
        (name, guard)
    }

    /// `prepare` the one unit resource `id`: what happened to each file.
    pub async fn write(&self, id: &str, unit: &Unit) -> BTreeMap<String, FileChange> {
        self.units
            .prepare(&[(id.to_string(), unit.clone())])
            .await
            .expect("prepare")
    }

    /// `systemctl VERB NAME` inside the node: its first line of output
    /// (these verbs exit non-zero for "inactive" or "disabled", which is
    /// an answer).
    pub fn answer(&self, verb: &str, name: &str) -> String {
        let out = self
            .node
            .command("systemctl", &[verb, name])
            .output()
            .expect("run systemctl in the node");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string()
    }

    /// What the unit's commands wrote to `/run/<name>.out` inside the node.
    pub fn output(&self, name: &str) -> String {
        self.node
            .sh_ok(&format!("cat /run/{name}.out 2>/dev/null || true"))
    }
}

/// A unit resource as the declaration gives it.
pub fn unit(name: &str, content: &str, state: UnitState, enabled: Option<bool>) -> Unit {
    Unit {
        name: UnitName::try_from(name).expect("a valid unit name"),
        content: content.to_string(),
        state,
        enabled,
    }
}
