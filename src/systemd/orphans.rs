//! Step units whose owner died before its container was in them.
//!
//! A fire's scope (Docker's cgroupfs driver) is born holding a keeper
//! process, dropped once the run has ended and its figures are read. Its keeper
//! now ends with its owner ([`KEEPER`]); a keeper of
//! an older mesh-host (`sleep infinity`) did not, and kept its scope
//! active for good, showing a step running that is not. A starting daemon
//! and a daemon that took a window over stop every
//! `mesh-host-step-*.scope` that holds nothing but keepers whose owner is
//! gone: a scope holding anything else (a step container's processes) or a
//! keeper whose mesh-host still runs (a fire between its scope and its
//! container) is left alone.
//!
//! A keeper is told by what a container cannot imitate: it sits in the
//! scope's own cgroup, where mesh-host started it, while a container's
//! processes sit in the container's cgroup below it. A step whose only
//! process is `sleep infinity` or `cat -` (its parent the shim, no
//! mesh-host) is a container's, never a keeper. And a keeper that is gone
//! by the time its parent is read is no proof of an orphan (a live fire
//! drops its keeper once its run has ended): the scope is left for the
//! next sweep.

use zbus_systemd::systemd1::ManagerProxy;

/// The pattern of the fires' scopes.
const SCOPES: &str = "mesh-host-step-*.scope";

/// The process that keeps a step's scope alive until its container is in
/// it: `cat` of a pipe only the fire's process writes to (it never does):
/// it ends when that process drops it or dies. Defined here, beside the
/// keepers of older releases, as what the sweep recognises; the step units
/// ([`crate::systemd::units`]) start it.
pub const KEEPER: [&str; 2] = ["cat", "-"];

/// The command line of a keeper of an older mesh-host.
const OLD_KEEPER: [&str; 2] = ["sleep", "infinity"];

/// Stop every step scope holding only orphaned keepers; the names stopped.
pub async fn stop_orphaned_scopes(manager: &ManagerProxy<'_>) -> Vec<String> {
    let units = match manager
        .list_units_by_patterns(
            vec!["active".into(), "activating".into()],
            vec![SCOPES.into()],
        )
        .await
    {
        Ok(units) => units,
        Err(e) => {
            tracing::warn!("cannot list the step units: {e}");
            return Vec::new();
        }
    };
    let mut stopped = Vec::new();
    for unit in units {
        let name = unit.0;
        let processes = match manager.get_unit_processes(name.clone()).await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!("cannot list the processes of {name}: {e}");
                continue;
            }
        };
        let orphaned = !processes.is_empty()
            && processes.iter().all(|(cgroup, pid, cmdline)| {
                in_own_cgroup(cgroup, &name) && is_keeper(cmdline) && !owner_runs(*pid)
            });
        if !orphaned {
            continue;
        }
        match manager.stop_unit(name.clone(), "replace".into()).await {
            Ok(_) => {
                tracing::warn!(
                    "stopped {name}: it held nothing but the keeper process of a mesh-host that is gone"
                );
                stopped.push(name);
            }
            Err(e) => tracing::warn!("cannot stop the orphaned step unit {name}: {e}"),
        }
    }
    stopped
}

/// Whether a process in `cgroup` (as systemd gives it, from the root of
/// its hierarchy) sits in the cgroup of `unit` itself, as a keeper does,
/// rather than in one below it (a container's).
fn in_own_cgroup(cgroup: &str, unit: &str) -> bool {
    cgroup.trim_end_matches('/').rsplit('/').next() == Some(unit)
}

/// Whether `cmdline` (as systemd gives it: arguments joined by spaces,
/// the program as it was run, by name or by path) is a keeper's.
fn is_keeper(cmdline: &str) -> bool {
    let mut words: Vec<&str> = cmdline.split_whitespace().collect();
    if let Some(program) = words.first_mut() {
        *program = program.rsplit('/').next().unwrap_or(program);
    }
    words == OLD_KEEPER || words == KEEPER
}

/// Whether the parent of `pid` is a mesh-host process: the keeper's owner
/// still runs. When that cannot be read the owner is taken as running: a
/// scope is stopped only when its keeper is known to be an orphan.
fn owner_runs(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        // Gone meanwhile: a live fire may have dropped it, its container
        // in the scope now. Not known to be an orphan: left alone (an
        // orphan's scope is seen again by the next sweep, if it lasts).
        return true;
    };
    let Some(ppid) = stat
        .rfind(')')
        .and_then(|close| stat[close + 1..].split_ascii_whitespace().nth(1))
        .and_then(|p| p.parse::<u32>().ok())
    else {
        return true;
    };
    match std::fs::read_to_string(format!("/proc/{ppid}/comm")) {
        Ok(comm) => comm.trim() == "mesh-host",
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keepers_are_told_from_other_processes() {
        assert!(is_keeper("sleep infinity"));
        assert!(is_keeper("/usr/bin/sleep infinity"));
        assert!(is_keeper("cat -"));
        assert!(!is_keeper("/usr/bin/cat /etc/passwd"));
        assert!(!is_keeper("sleep 5"));
        assert!(!is_keeper(
            "/usr/bin/containerd-shim-runc-v2 -namespace moby"
        ));
    }

    #[test]
    fn a_keeper_of_a_live_process_that_is_not_mesh_host_is_an_orphan() {
        // This test's child: its parent (the test binary) is no mesh-host.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn");
        assert!(!owner_runs(child.id()));
        let _ = child.kill();
        let _ = child.wait();
        assert!(owner_runs(child.id()), "gone: not known to be an orphan");
    }

    #[test]
    fn only_a_process_in_the_scope_s_own_cgroup_can_be_a_keeper() {
        let unit = "mesh-host-step-gc-1767238200.scope";
        assert!(in_own_cgroup(
            "/mesh.slice/mesh-host.slice/mesh-host-step-gc-1767238200.scope",
            unit
        ));
        // A step container's `sleep infinity`, in its container's cgroup.
        assert!(!in_own_cgroup(
            "/mesh.slice/mesh-host.slice/mesh-host-step-gc-1767238200.scope/0123abcd",
            unit
        ));
        assert!(!in_own_cgroup(
            "/mesh.slice/mesh-host.slice/other.scope",
            unit
        ));
    }
}
