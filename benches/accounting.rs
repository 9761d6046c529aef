//! What reading a fire's figures costs (`mesh_host::accounting`): the
//! reads a fire makes of its unit's cgroup, once before its container's
//! start (on the due second's path) and once after its exit.
//!
//! - read: one [`Cgroups::read`] of a real cgroup of this machine (the
//!   bench process's own: its unified group on cgroup v2, its memory group
//!   on v1), every file of the layout looked for; beside it, the floor: one
//!   `std::fs::read_to_string` of one file of that group;
//! - a fire: `Meter::start` then `Meter::finish` on the same group.
//!
//! `cargo bench --bench accounting [-- FILTER]`

mod support;

use mesh_host::accounting::{Cgroups, End, Meter};
use support::Bench;

/// The bench process's own cgroup and one file of it: the unified line's
/// on cgroup v2, else the memory hierarchy's.
fn own_group() -> (String, String) {
    let text = std::fs::read_to_string("/proc/self/cgroup").expect("/proc/self/cgroup");
    let path_of = |controllers: &str| {
        text.lines().find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, c, path) = (parts.next()?, parts.next()?, parts.next()?);
            (c == controllers).then(|| path.to_string())
        })
    };
    if std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        let path = path_of("").expect("a unified cgroup");
        return (path.clone(), format!("/sys/fs/cgroup{path}/memory.peak"));
    }
    let path = path_of("memory").expect("a memory cgroup");
    let file = format!("/sys/fs/cgroup/memory{path}/memory.max_usage_in_bytes");
    (path, file)
}

fn main() {
    let mut bench = Bench::from_args();
    let (group, file) = own_group();
    let cgroups = Cgroups::default();
    bench.table(
        "Reading a fire's figures",
        &["what", "group", "mesh-host", "one file read", "ratio"],
    );
    if let Some(p) = bench.pair(
        "read",
        || cgroups.read(&group).expect("read"),
        || std::fs::read_to_string(&file).expect("the group's file"),
    ) {
        bench.row(&[
            "one read of every figure".into(),
            format!("`{group}`"),
            p.ours.cell(),
            p.peer.cell(),
            p.ratio_cell(),
        ]);
    }
    if let Some(s) = bench.run("fire", || {
        Meter::start_in(cgroups.clone(), Some(&group)).finish(End::default())
    }) {
        bench.row(&[
            "a fire: before and after".into(),
            format!("`{group}`"),
            s.cell(),
            "—".into(),
            "—".into(),
        ]);
    }
    bench.finish("median (fastest–slowest sample) per call");
}
