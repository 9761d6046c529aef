//! A cgroup's counters, where the kernel keeps them: the unified hierarchy
//! (cgroup v2), or the v1 controllers' hierarchies beside it (the legacy
//! and hybrid layouts).
//!
//! Everything is read under one root ([`Cgroups::at`]), `/sys/fs/cgroup` on
//! a machine, a tree of real files copied from a node in the unit tests.
//! A group is named as systemd names it (`ControlGroup`, from the root of
//! every hierarchy); its files are opened without following a symlink,
//! must be regular files, and are read to at most [`MAX_FILE`] bytes. A
//! figure the kernel does not offer, or whose file does not read right,
//! is `None`: never a zero made up.
//!
//! Which file gives what:
//!
//! | figure | v2 (and hybrid's unified tree for CPU) | v1 |
//! |---|---|---|
//! | CPU | `cpu.stat`: `usage_usec`, `user_usec`, `system_usec` | `cpuacct.usage` (ns), `cpuacct.stat` (ticks) |
//! | peak memory | `memory.peak` | `memory.max_usage_in_bytes` |
//! | memory now | `memory.current` | `memory.usage_in_bytes` |
//! | I/O | `io.stat`: `rbytes`, `wbytes` | `blkio.throttle.io_service_bytes_recursive` |
//! | OOM kills | `memory.events`: `oom_kill` (the group and below) | `memory.oom_control`: `oom_kill` (the group's own) |
//!
//! The CPU time of a hybrid node comes from the unified tree, which systemd
//! keeps for every unit whatever the controllers: it counts the group's
//! whole life in microseconds, descendants gone included.

use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::parse::{self, Io};

/// Where the cgroup file systems are mounted.
pub const ROOT: &str = "/sys/fs/cgroup";

/// The largest file read: the kernel's are a few lines per device.
pub const MAX_FILE: u64 = 64 * 1024;

/// The longest group name taken (systemd's paths are far shorter).
const MAX_GROUP: usize = 4096;

/// One reading of a group's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample {
    /// CPU time, user and system, in microseconds.
    pub cpu_usec: Option<u64>,
    /// Of it, in user mode.
    pub cpu_user_usec: Option<u64>,
    /// Of it, in the kernel.
    pub cpu_system_usec: Option<u64>,
    /// The highest memory use the group has had.
    pub memory_peak_bytes: Option<u64>,
    /// Its memory use now.
    pub memory_now_bytes: Option<u64>,
    /// Bytes read and written on block devices.
    pub io: Option<Io>,
    /// Processes the kernel's OOM killer ended.
    pub oom_kills: Option<u64>,
    /// Processes the OOM killer ended on the whole node (`/proc/vmstat`'s
    /// `oom_kill`), read on cgroup v1 only, where no group above the
    /// container's own counts its kills.
    pub node_oom_kills: Option<u64>,
}

/// Which layout the root has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// cgroup v2 alone: every controller in one tree.
    Unified,
    /// cgroup v1 controllers, each a tree of its own; `hybrid` when a
    /// unified tree (no controllers, systemd's) is mounted beside them.
    Legacy {
        /// A unified tree at `unified/`.
        hybrid: bool,
    },
}

/// The cgroup file systems under one root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cgroups {
    root: PathBuf,
    /// The kernel's event counters (`/proc/vmstat`), when read.
    vmstat: Option<PathBuf>,
}

impl Default for Cgroups {
    fn default() -> Self {
        Cgroups::at(ROOT).with_vmstat("/proc/vmstat")
    }
}

impl Cgroups {
    /// The cgroup file systems mounted under `root`.
    pub fn at(root: impl Into<PathBuf>) -> Cgroups {
        Cgroups {
            root: root.into(),
            vmstat: None,
        }
    }

    /// Read the node's OOM kills from `vmstat` (`/proc/vmstat`) too.
    pub fn with_vmstat(mut self, vmstat: impl Into<PathBuf>) -> Cgroups {
        self.vmstat = Some(vmstat.into());
        self
    }

    /// The layout under the root.
    pub fn layout(&self) -> Layout {
        if self.root.join("cgroup.controllers").is_file() {
            Layout::Unified
        } else {
            Layout::Legacy {
                hybrid: self.root.join("unified/cgroup.controllers").is_file(),
            }
        }
    }

    /// The counters of `group` (`/a.slice/b.scope`, as systemd's
    /// `ControlGroup` says); an error only when the name is refused.
    pub fn read(&self, group: &str) -> Result<Sample, String> {
        let parts = components(group)?;
        let dir = |tree: &str| {
            let mut d = self.root.join(tree);
            d.extend(&parts);
            d
        };
        Ok(match self.layout() {
            Layout::Unified => {
                let d = dir("");
                let io = text(&d.join("io.stat")).and_then(|t| parse::io_stat(&t));
                Sample {
                    memory_peak_bytes: figure(&d, "memory.peak", parse::single),
                    memory_now_bytes: figure(&d, "memory.current", parse::single),
                    oom_kills: figure(&d, "memory.events", |t| parse::keyed(t, "oom_kill")),
                    io,
                    ..cpu_stat(&d)
                }
            }
            Layout::Legacy { hybrid } => {
                let cpu = if hybrid {
                    Some(cpu_stat(&dir("unified"))).filter(|s| s.cpu_usec.is_some())
                } else {
                    None
                };
                let cpu = cpu.unwrap_or_else(|| {
                    ["cpuacct", "cpu,cpuacct", "cpuacct,cpu"]
                        .iter()
                        .map(|t| cpuacct(&dir(t)))
                        .find(|s| s.cpu_usec.is_some())
                        .unwrap_or_default()
                });
                let memory = dir("memory");
                let blkio = dir("blkio");
                let io = [
                    "blkio.throttle.io_service_bytes_recursive",
                    "blkio.throttle.io_service_bytes",
                ]
                .iter()
                .find_map(|f| text(&blkio.join(f)))
                .and_then(|t| parse::blkio(&t));
                let node_oom_kills = self
                    .vmstat
                    .as_deref()
                    .and_then(text)
                    .and_then(|t| parse::keyed(&t, "oom_kill"));
                Sample {
                    node_oom_kills,
                    memory_peak_bytes: figure(&memory, "memory.max_usage_in_bytes", parse::single),
                    memory_now_bytes: figure(&memory, "memory.usage_in_bytes", parse::single),
                    oom_kills: figure(&memory, "memory.oom_control", |t| {
                        parse::keyed(t, "oom_kill")
                    }),
                    io,
                    ..cpu
                }
            }
        })
    }
}

/// The v1 hierarchies whose counters a fire reads in a group of its own:
/// systemd keeps a unit's group in a v1 hierarchy only when the unit's
/// accounting there is on, which mesh-host does not ask on v1
/// (`systemd::units`), and at its next realize (a `daemon-reload`) it
/// removes the unit's empty groups in the others. `cpu` and `cpuacct` are
/// links to `cpu,cpuacct` on most machines, and hierarchies of their own
/// on some: a link, or a name where nothing is mounted, is passed over.
const KEPT_V1: [&str; 5] = ["blkio", "memory", "cpuacct", "cpu,cpuacct", "cpuacct,cpu"];

/// How often a group is made and joined again when systemd removed it in
/// between (it removes only empty groups, so once joined it stays).
const JOIN_TRIES: usize = 3;

impl Cgroups {
    /// Keep `group`'s counters for as long as `pid` lives: on a v1 layout,
    /// make the group in each hierarchy a fire reads (`KEPT_V1`) and put
    /// `pid` in it, so that systemd cannot remove the group once the
    /// container in it has gone, before its figures are read. Nothing on
    /// a unified tree, where systemd keeps the groups it was asked for.
    /// Every hierarchy is tried; an error names each that refused.
    pub fn hold(&self, group: &str, pid: u32) -> Result<(), String> {
        let parts = components(group)?;
        if self.layout() == Layout::Unified {
            return Ok(());
        }
        let mut refused = Vec::new();
        for tree in KEPT_V1 {
            let root = self.root.join(tree);
            // A hierarchy mounted there, not a link to one nor a bare
            // directory of the tmpfs above.
            let mounted = std::fs::symlink_metadata(&root).is_ok_and(|m| m.is_dir())
                && std::fs::symlink_metadata(root.join("cgroup.procs")).is_ok_and(|m| m.is_file());
            if !mounted {
                continue;
            }
            let mut dir = root;
            dir.extend(&parts);
            if let Err(e) = join(&dir, pid) {
                refused.push(format!("{tree}: {e}"));
            }
        }
        if refused.is_empty() {
            Ok(())
        } else {
            Err(format!("cannot keep the group in {}", refused.join("; ")))
        }
    }
}

/// Make `dir` (and what is above it) and put `pid` in it.
fn join(dir: &Path, pid: u32) -> std::io::Result<()> {
    let mut tries = 0;
    loop {
        std::fs::create_dir_all(dir)?;
        let written = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(dir.join("cgroup.procs"))
            .and_then(|mut f| std::io::Write::write_all(&mut f, pid.to_string().as_bytes()));
        tries += 1;
        match written {
            // Removed between its making and the write: made again.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries < JOIN_TRIES => {}
            other => return other,
        }
    }
}

/// The parts of a group's name, each checked: no `.` or `..`, no empty
/// part (`//`), no NUL; the root group itself is refused (its figures are
/// the whole machine's).
fn components(group: &str) -> Result<Vec<&str>, String> {
    let Some(rest) = group.strip_prefix('/') else {
        return Err("a control group starts with /".into());
    };
    if group.len() > MAX_GROUP || group.contains('\0') {
        return Err("a control group name too long or holding a NUL".into());
    }
    let parts: Vec<&str> = rest.split('/').collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return Err("a control group with an empty, . or .. component".into());
    }
    Ok(parts)
}

/// The content of a regular file, read to at most [`MAX_FILE`] bytes
/// without following a symlink; `None` when it is absent, not regular,
/// longer, or not text.
fn text(path: &Path) -> Option<String> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > MAX_FILE {
        return None;
    }
    String::from_utf8(bytes).ok()
}

fn figure(dir: &Path, file: &str, parse: impl Fn(&str) -> Option<u64>) -> Option<u64> {
    text(&dir.join(file)).and_then(|t| parse(&t))
}

/// CPU time from a unified tree's `cpu.stat`.
fn cpu_stat(dir: &Path) -> Sample {
    let Some(t) = text(&dir.join("cpu.stat")) else {
        return Sample::default();
    };
    Sample {
        cpu_usec: parse::keyed(&t, "usage_usec"),
        cpu_user_usec: parse::keyed(&t, "user_usec"),
        cpu_system_usec: parse::keyed(&t, "system_usec"),
        ..Sample::default()
    }
}

/// CPU time from a v1 `cpuacct` group: its total in nanoseconds, the
/// split in clock ticks.
fn cpuacct(dir: &Path) -> Sample {
    let ticks = rustix::param::clock_ticks_per_second();
    let usec = |n: u64| (ticks > 0).then(|| n.saturating_mul(1_000_000) / ticks);
    let stat = text(&dir.join("cpuacct.stat"));
    let split = |key| {
        stat.as_deref()
            .and_then(|t| parse::keyed(t, key))
            .and_then(usec)
    };
    Sample {
        cpu_usec: figure(dir, "cpuacct.usage", parse::single).map(|ns| ns / 1000),
        cpu_user_usec: split("user"),
        cpu_system_usec: split("system"),
        ..Sample::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The trees under `src/accounting/fixtures/`.
    fn fixture(name: &str) -> Cgroups {
        Cgroups::at(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("src/accounting/fixtures")
                .join(name),
        )
    }

    #[test]
    fn group_names_are_checked() {
        assert!(components("/a.slice/b.scope").is_ok());
        for bad in [
            "", "/", "a.slice", "/a//b", "/a/../b", "/a/./b", "/a/", "/a\0b",
        ] {
            assert!(components(bad).is_err(), "{bad:?}");
        }
        assert!(components(&format!("/{}", "a".repeat(MAX_GROUP))).is_err());
    }

    const SCOPE: &str = "/mesh.slice/mesh-host.slice/mesh-host-step-gc-20260601T030000Z.scope";

    #[test]
    fn a_hybrid_node_reads_cpu_from_the_unified_tree_and_the_rest_from_v1() {
        let cg = fixture("hybrid");
        assert_eq!(cg.layout(), Layout::Legacy { hybrid: true });
        let s = cg.read(SCOPE).expect("read");
        assert_eq!(
            s,
            Sample {
                cpu_usec: Some(282_210),
                cpu_user_usec: Some(239_684),
                cpu_system_usec: Some(42_526),
                memory_peak_bytes: Some(52_064_256),
                memory_now_bytes: Some(290_816),
                io: Some(Io::default()),
                oom_kills: Some(0),
                node_oom_kills: None,
            }
        );
        // With the node's counters: this kernel's /proc/vmstat, cut short.
        let s = cg
            .with_vmstat(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("src/accounting/fixtures/vmstat"),
            )
            .read(SCOPE)
            .expect("read");
        assert_eq!(s.node_oom_kills, Some(7));
    }

    #[test]
    fn a_v1_node_reads_cpuacct() {
        let cg = fixture("legacy");
        assert_eq!(cg.layout(), Layout::Legacy { hybrid: false });
        let s = cg.read(SCOPE).expect("read");
        let ticks = rustix::param::clock_ticks_per_second();
        assert_eq!(s.cpu_usec, Some(280_677));
        assert_eq!(s.cpu_user_usec, Some(23 * 1_000_000 / ticks));
        assert_eq!(s.cpu_system_usec, Some(4 * 1_000_000 / ticks));
        assert_eq!(s.memory_peak_bytes, Some(52_064_256));
        assert_eq!(s.memory_now_bytes, Some(290_816));
        assert_eq!(
            s.io,
            Some(Io {
                read: 1_048_576,
                written: 8192
            })
        );
    }

    #[test]
    fn a_v2_node_reads_one_tree() {
        let cg = fixture("unified");
        assert_eq!(cg.layout(), Layout::Unified);
        let s = cg
            .read("/mesh.slice/mesh-host.slice/mesh-host-step\\x2dgc.slice")
            .expect("read");
        assert_eq!(
            s,
            Sample {
                cpu_usec: Some(2_013_401),
                cpu_user_usec: Some(1_871_005),
                cpu_system_usec: Some(142_396),
                memory_peak_bytes: Some(268_419_072),
                memory_now_bytes: Some(1_114_112),
                io: Some(Io {
                    read: 3_149_824,
                    written: 1_048_576
                }),
                oom_kills: Some(1),
                node_oom_kills: None,
            }
        );
    }

    #[test]
    fn a_group_that_is_not_there_has_no_figures() {
        let s = fixture("hybrid")
            .read("/mesh.slice/gone.scope")
            .expect("read");
        assert_eq!(s, Sample::default());
    }

    #[test]
    fn files_that_are_not_what_the_kernel_writes_give_no_figure() {
        let dir = tempfile::tempdir().expect("tempdir");
        let g = dir.path().join("a.scope");
        std::fs::create_dir_all(&g).expect("mkdir");
        std::fs::write(dir.path().join("cgroup.controllers"), "memory\n").expect("write");
        std::fs::write(g.join("cpu.stat"), "usage_usec lots\n").expect("write");
        std::fs::write(g.join("memory.events"), "oom_kill 1\noom_kill 2\n").expect("write");
        // Past the bound: not read at all.
        std::fs::write(g.join("io.stat"), "8:0 rbytes=1\n".repeat(10_000)).expect("write");
        // A symlink is not followed, a directory not read.
        std::os::unix::fs::symlink("/proc/self/status", g.join("memory.peak")).expect("symlink");
        let s = Cgroups::at(dir.path()).read("/a.scope").expect("read");
        assert_eq!(s, Sample::default());
        std::fs::remove_file(g.join("memory.peak")).expect("rm");
        std::fs::create_dir(g.join("memory.peak")).expect("mkdir");
        assert_eq!(
            Cgroups::at(dir.path())
                .read("/a.scope")
                .expect("read")
                .memory_peak_bytes,
            None
        );
    }

    /// A v1 tree in `dir` as the kernel shows one: a `cgroup.procs` file at
    /// its root, and at `group` (where the kernel would make it).
    fn mounted(dir: &Path, tree: &str, group: Option<&str>) {
        let root = dir.join(tree);
        std::fs::create_dir_all(&root).expect("mkdir");
        std::fs::write(root.join("cgroup.procs"), "").expect("write");
        if let Some(g) = group {
            let g = root.join(g.trim_start_matches('/'));
            std::fs::create_dir_all(&g).expect("mkdir");
            std::fs::write(g.join("cgroup.procs"), "").expect("write");
        }
    }

    #[test]
    fn a_keeper_joins_the_fires_group_in_each_mounted_v1_tree_it_reads() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        for tree in ["blkio", "memory", "cpuacct"] {
            mounted(d, tree, Some(SCOPE));
        }
        // Not read by a fire: not joined.
        mounted(d, "cpuset", Some(SCOPE));
        // A bare directory where nothing is mounted, and a link: nothing
        // is made in either.
        std::fs::create_dir(d.join("cpu,cpuacct")).expect("mkdir");
        std::os::unix::fs::symlink(d.join("cpuset"), d.join("cpuacct,cpu")).expect("symlink");
        let cg = Cgroups::at(d);
        assert_eq!(cg.layout(), Layout::Legacy { hybrid: false });
        cg.hold(SCOPE, 4242).expect("hold");
        let procs = |tree: &str| {
            std::fs::read_to_string(d.join(tree).join(&SCOPE[1..]).join("cgroup.procs"))
                .expect("read")
        };
        for tree in ["blkio", "memory", "cpuacct"] {
            assert_eq!(procs(tree), "4242", "{tree}");
        }
        assert_eq!(procs("cpuset"), "");
        assert_eq!(
            std::fs::read_dir(d.join("cpu,cpuacct"))
                .expect("ls")
                .count(),
            0
        );
        // A group the kernel did not make (no cgroup.procs in it) is an
        // error that names each tree.
        let e = cg.hold("/other.scope", 1).expect_err("no group");
        for tree in ["blkio", "memory", "cpuacct"] {
            assert!(e.contains(&format!("{tree}: ")), "{e}");
        }
        assert!(cg.hold("/a/../b", 1).is_err());
    }

    #[test]
    fn a_keeper_joins_nothing_on_a_unified_tree() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("cgroup.controllers"), "memory io\n").expect("write");
        mounted(dir.path(), "blkio", None);
        Cgroups::at(dir.path()).hold(SCOPE, 1).expect("hold");
        assert!(!dir.path().join("blkio/mesh.slice").exists());
    }
}
