//! The shared-folder sweep (`mesh_host::acl::walk::sweep`): what it costs
//! at every apply on a folder of N objects, against its peer, a bare walk
//! of the same tree with `std::fs` (`read_dir` and `symlink_metadata` of
//! every entry): the difference is what opening each object and reading
//! (and, when needed, writing) its ACL costs on top of visiting it.
//!
//! Trees: directories of 100 empty files, 1,000 and 10,000 files, on the
//! filesystem of the temporary directory (ext4 on the reference machine),
//! owned by uid 4242 when run as root (the sweep never takes root's
//! objects). Two identities, one read-write and one read-only.
//!
//! - nothing to do: the tree already has its entries (the steady state of
//!   the sweep at every apply);
//! - setting every object: the entries taken away first (untimed), then
//!   set (a folder taken over for the first time).
//!
//! `cargo bench --bench acl [-- FILTER]`

mod support;

use std::os::fd::AsFd;
use std::path::Path;

use mesh_host::acl::walk::{self, Op, Wanted, SWEEP_BOUND};
use support::{Bench, Pair};

fn make_tree(root: &Path, files: usize) {
    let as_root = rustix::process::geteuid().is_root();
    for d in 0..files.div_ceil(100) {
        let dir = root.join(format!("d{d}"));
        std::fs::create_dir_all(&dir).expect("dir");
        for f in 0..100.min(files - d * 100) {
            std::fs::write(dir.join(format!("f{f}")), b"").expect("file");
            if as_root {
                std::os::unix::fs::lchown(dir.join(format!("f{f}")), Some(4242), Some(4242))
                    .expect("chown");
            }
        }
        if as_root {
            std::os::unix::fs::lchown(&dir, Some(4242), Some(4242)).expect("chown");
        }
    }
}

fn bare_walk(dir: &Path) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        let meta = std::fs::symlink_metadata(&path).expect("stat");
        n += 1;
        if meta.is_dir() {
            n += bare_walk(&path);
        }
    }
    n
}

fn main() {
    let mut bench = Bench::from_args();
    bench.table(
        "Sweep of a shared folder",
        &[
            "objects",
            "sweep, nothing to do",
            "bare walk (std::fs)",
            "ratio",
            "sweep, setting every object",
        ],
    );
    let wanted = Wanted::of(&[(2001, true), (2002, false)]);
    let uids = [2001, 2002];
    for files in [1_000, 10_000] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let folder = tmp.path().join("share");
        std::fs::create_dir(&folder).expect("folder");
        make_tree(&folder, files);
        let root = walk::open_path(folder.to_str().expect("utf-8")).expect("open");
        let first = walk::sweep(root.as_fd(), Op::Set(&wanted), SWEEP_BOUND, |_| {});
        assert!(first.errors.is_empty(), "{:?}", first.errors);
        let objects = first.visited;

        let name = format!("{objects} objects");
        let steady: Option<Pair> = bench.pair(
            &format!("{name} nothing to do"),
            || {
                let s = walk::sweep(root.as_fd(), Op::Set(&wanted), SWEEP_BOUND, |_| {});
                debug_assert_eq!(s.changed, 0);
                s.visited
            },
            || bare_walk(&folder),
        );
        let setting = bench.run_with_setup(
            &format!("{name} setting"),
            || {
                walk::sweep(root.as_fd(), Op::Unset(&uids), SWEEP_BOUND, |_| {});
            },
            |()| {
                let s = walk::sweep(root.as_fd(), Op::Set(&wanted), SWEEP_BOUND, |_| {});
                debug_assert_eq!(s.changed, objects);
                s.changed
            },
        );
        if let (Some(p), Some(s)) = (steady, setting) {
            bench.row(&[
                objects.to_string(),
                p.ours.cell(),
                p.peer.cell(),
                p.ratio_cell(),
                s.cell(),
            ]);
        }
    }
    bench.finish("trees in the temporary directory, warm page cache.");
}
