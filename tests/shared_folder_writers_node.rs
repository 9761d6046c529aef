//! Shared folders against a hostile writer, on the sandbox node (CONTRACT
//! "Identities and shared folders"): a process running as an identity
//! (`setpriv --reuid --regid --clear-groups /usr/bin/python3`) that writes
//! into a folder the daemon (a real unit, `DaemonUnit`) watches. What root
//! takes back is never granted again, whatever names are exchanged; a deep
//! tree costs the daemon little memory and a wide one few descriptors; a
//! `chmod` loop logs a bounded number of events; an object the host cannot
//! set is reported, not fatal; revoking access reaches hard links, and an
//! apply through the daemon that revokes it is not undone by the daemon's
//! own watch while another identity keeps writing.
//!
//! The node shares this machine's /etc: every account has a unique name
//! and a number above 2 000 000 000, and its `World` removes it at the end.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::accounts::{as_identity, getfacl, has_entry, named_users, shared_folder, Identity};
use support::daemon_unit::DaemonUnit;
use support::world::World;
use support::{quote, stdout, wait_for, Cleanup, Node};

fn ok(out: std::process::Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
}

/// The folder `share` at `path`, written by identity `ia`.
fn folder(path: &str) -> Value {
    shared_folder("share", path, &[("ia", true)])
}

/// The named user entries (`user:UID:rwx`) of `path`'s access ACL.
fn users(node: &Node, path: &str) -> Vec<String> {
    named_users(&getfacl(node, path))
}

/// `uid` makes directory `dir`; returns once the watch gave it its
/// entries (`what`, for a timeout's message).
fn mkdir_as(node: &Node, uid: u32, dir: &str, what: &str) {
    ok(
        as_identity(node, uid, "import os,sys; os.mkdir(sys.argv[1])", &[dir]),
        "mkdir as the identity",
    );
    wait_for(what, Duration::from_secs(60), || {
        has_entry(node, dir, uid).then_some(())
    });
}

/// A line of `/proc/PID/status` in kB.
fn status_kb(node: &Node, pid: &str, field: &str) -> u64 {
    node.sh_ok(&format!("cat /proc/{pid}/status"))
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {field} for {pid}"))
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_directory_root_takes_back_is_never_granted_again() {
    let mut w = World::new("acl-takeback");
    let ia = w.identity("ia");
    let share = w.shared_path("share");
    let d = DaemonUnit::started(&w, json!([ia, folder(&share)]));
    let dir = format!("{share}/taken");
    mkdir_as(&w.node, ia.uid, &dir, "the new directory's entries");
    let q = quote(&dir);
    w.node.sh_ok(&format!(
        "chown root:root {q} && chmod 700 {q} && setfacl -b {q}"
    ));
    // Root keeps changing it (each change is an event of the watch), and
    // it is never granted again.
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        assert!(
            !has_entry(&w.node, &dir, ia.uid),
            "root's directory granted again: {:?}",
            users(&w.node, &dir)
        );
        w.node.sh_ok(&format!("chmod 700 {q}; touch {q}"));
        std::thread::sleep(Duration::from_millis(200));
    }
    // An apply's sweep leaves it alone too.
    let out = d.cli(&["apply", &w.path("declaration.json")]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        users(&w.node, &dir).is_empty(),
        "{:?}",
        users(&w.node, &dir)
    );
    assert!(d.active());
}

/// Exchanges `a` and `b` (in the directory `sys.argv[1]`) with
/// `renameat2(RENAME_EXCHANGE)` in a loop for `sys.argv[2]` seconds, and
/// changes the mode of its own directory (by descriptor, wherever its name
/// is) after each: an event the watch acts on.
const EXCHANGE_LOOP: &str = r#"
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
d = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
mine = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=d)
end = time.time() + float(sys.argv[2])
n = 0
while time.time() < end:
    if libc.renameat2(d, b"a", d, b"b", 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
    os.fchmod(mine, 0o755 if n % 2 else 0o700)
    n += 1
print(n)
"#;

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn an_exchange_loop_never_gets_roots_directory_granted() {
    let mut w = World::new("acl-exchange");
    let ia = w.identity("ia");
    let share = w.shared_path("share");
    let d = DaemonUnit::started(&w, json!([ia, folder(&share)]));
    // Root's own directory in the folder, entries it inherited taken off.
    let theirs = format!("{share}/b");
    let q = quote(&theirs);
    w.node
        .sh_ok(&format!("mkdir {q} && chmod 700 {q} && setfacl -b {q}"));
    let mine = format!("{share}/a");
    mkdir_as(&w.node, ia.uid, &mine, "the writer's directory's entries");
    std::thread::sleep(Duration::from_millis(500));
    assert!(users(&w.node, &theirs).is_empty());
    let n = ok(
        as_identity(&w.node, ia.uid, EXCHANGE_LOOP, &[&share, "8"]),
        "the exchange loop",
    );
    eprintln!("{} exchanges", n.trim());
    std::thread::sleep(Duration::from_secs(1));
    // Whichever name root's directory ended under, it has no entry.
    for p in [&mine, &theirs] {
        let owner = w.node.sh_ok(&format!("stat -c %u {}", quote(p)));
        if owner.trim() == "0" {
            assert!(
                users(&w.node, p).is_empty(),
                "root's directory was granted: {:?}",
                users(&w.node, p)
            );
        } else {
            assert!(has_entry(&w.node, p, ia.uid), "the writer's lost its entry");
        }
    }
    assert!(d.active());
}

/// Builds a chain `sys.argv[2]` deep of 200-character names under
/// `sys.argv[1]`, one level at a time by descriptor (past PATH_MAX).
const DEEP_CHAIN: &str = r#"
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
for i in range(int(sys.argv[2])):
    name = ("%05d" % i) + "d" * 195
    os.mkdir(name, dir_fd=fd)
    nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    os.close(fd)
    fd = nxt
"#;

/// Counts (as root) the directories of the chain under `sys.argv[1]`, and
/// those whose access ACL has an entry of uid `sys.argv[2]`.
const CHAIN_ENTRIES: &str = r#"
import os, struct, sys
uid = int(sys.argv[2])
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
dirs = granted = 0
while True:
    names = os.listdir(fd)
    if not names:
        break
    nxt = os.open(names[0], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
    os.close(fd)
    fd = nxt
    dirs += 1
    try:
        acl = os.getxattr(fd, "system.posix_acl_access")
    except OSError:
        continue
    for i in range(4, len(acl), 8):
        tag, perm, who = struct.unpack("<HHI", acl[i:i + 8])
        if tag == 2 and who == uid:
            granted += 1
print(dirs, granted)
"#;

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_deep_chain_of_long_names_costs_the_daemon_little_memory() {
    let mut w = World::new("acl-deep");
    let ia = w.identity("ia");
    let share = w.shared_path("share");
    let d = DaemonUnit::started(&w, json!([ia, folder(&share)]));
    let pid = d.main_pid();
    std::thread::sleep(Duration::from_secs(1));
    let rss = status_kb(&w.node, &pid, "VmRSS");
    let hwm = status_kb(&w.node, &pid, "VmHWM");
    let depth = 1500;
    ok(
        as_identity(&w.node, ia.uid, DEEP_CHAIN, &[&share, &depth.to_string()]),
        "the chain",
    );
    let script = CHAIN_ENTRIES;
    wait_for(
        "every level to get its entry",
        Duration::from_secs(120),
        || {
            let out = ok(
                w.node.sh(&format!(
                    "/usr/bin/python3 -c {} {} {}",
                    quote(script),
                    quote(&share),
                    ia.uid
                )),
                "counting",
            );
            (out.trim() == format!("{depth} {depth}")).then_some(())
        },
    );
    assert_eq!(d.main_pid(), pid, "the daemon was not restarted");
    let rss_after = status_kb(&w.node, &pid, "VmRSS");
    let hwm_after = status_kb(&w.node, &pid, "VmHWM");
    eprintln!("VmRSS {rss} -> {rss_after} kB, VmHWM {hwm} -> {hwm_after} kB");
    assert!(
        rss_after <= rss + 16 * 1024,
        "VmRSS grew from {rss} to {rss_after} kB"
    );
    assert!(
        hwm_after <= hwm + 16 * 1024,
        "VmHWM grew from {hwm} to {hwm_after} kB"
    );
    // Journal fields naming a path are bounded.
    let fields = d.unit_journal(&["-o", "export"]);
    let longest = fields
        .lines()
        .filter(|l| l.starts_with("MESSAGE=") || l.starts_with("MESH_PATH="))
        .map(str::len)
        .max()
        .unwrap_or(0);
    assert!(longest < 2048, "a journal field of {longest} bytes");
    // Removing the folder, the deep chain included, leaves the daemon well.
    w.node.sh_ok(&format!("rm -rf {}", quote(&share)));
    assert!(d.active());
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_sweep_of_thousands_of_siblings_holds_few_descriptors() {
    let mut w = World::new("acl-wide");
    let ia = w.identity("ia");
    let share = w.shared_path("share");
    let d = DaemonUnit::started(&w, json!([ia, folder(&share)]));
    let count = 3000;
    ok(
        as_identity(
            &w.node,
            ia.uid,
            "import os,sys\nfor i in range(int(sys.argv[2])):\n  p = os.path.join(sys.argv[1], 'd%d' % i)\n  os.mkdir(p); os.mkdir(p + '/e')",
            &[&share, &count.to_string()],
        ),
        "the siblings",
    );
    // Root strips every entry while the daemon is down; the daemon's start
    // (its apply, then its watch) sweeps them all back.
    w.node.sh_ok(&format!("systemctl stop {}", quote(&d.unit)));
    w.node.sh_ok(&format!("setfacl -R -b {}", quote(&share)));
    w.node
        .sh_ok(&format!("systemctl start --no-block {}", quote(&d.unit)));
    let mut most = 0usize;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let pid = d.main_pid();
        if pid != "0" {
            let n = w.node.sh(&format!("ls /proc/{pid}/fd 2>/dev/null | wc -l"));
            let n: usize = String::from_utf8_lossy(&n.stdout)
                .trim()
                .parse()
                .unwrap_or(0);
            most = most.max(n);
        }
        let granted = w.node.sh_ok(&format!(
            "cd {} && getfacl -cnp d* d*/e 2>/dev/null | grep -c '^user:{}:rwx' ; true",
            quote(&share),
            ia.uid
        ));
        if d.active() && granted.trim() == (2 * count).to_string() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {} directories set again; journal:\n{}",
            granted.trim(),
            2 * count,
            d.unit_journal(&["-o", "cat", "-n", "20"])
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("at most {most} descriptors open");
    assert!(most > 0, "the daemon's descriptors were never seen");
    assert!(most < 200, "{most} descriptors open during the sweep");
    assert_eq!(d.prop("LimitNOFILESoft"), "8192");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_chmod_loop_logs_a_bounded_number_of_counted_restorations() {
    let mut w = World::new("acl-flood");
    let ia = w.identity("ia");
    let share = w.shared_path("share");
    let d = DaemonUnit::started(&w, json!([ia, folder(&share)]));
    let dir = format!("{share}/sub");
    mkdir_as(&w.node, ia.uid, &dir, "the new directory's entries");
    let seconds = 6;
    let n = ok(
        as_identity(
            &w.node,
            ia.uid,
            "import os,sys,time\nend = time.time() + float(sys.argv[2]); n = 0\nwhile time.time() < end:\n  os.chmod(sys.argv[1], 0o700); n += 1; time.sleep(0.005)\nprint(n)",
            &[&dir, &seconds.to_string()],
        ),
        "the chmod loop",
    );
    let chmods: u64 = n.trim().parse().expect("a count");
    // The interval (10 s) ends: what it counted is logged.
    let counts = wait_for("the counted event", Duration::from_secs(20), || {
        let out = d.unit_journal(&["MESH_EVENT=acl-restored", "-o", "export"]);
        let counts: Vec<u64> = out
            .lines()
            .filter_map(|l| l.strip_prefix("MESH_COUNT="))
            .filter_map(|v| v.parse().ok())
            .collect();
        counts.iter().any(|c| *c > 1).then_some(counts)
    });
    eprintln!("{chmods} chmods, events with counts {counts:?}");
    assert!(chmods > 50, "the loop ran ({chmods})");
    // One at once, one for the rest of each 10 s interval.
    assert!(
        counts.len() <= 1 + seconds / 10 + 1,
        "{} acl-restored events for {chmods} chmods: {counts:?}",
        counts.len()
    );
    assert!(has_entry(&w.node, &dir, ia.uid));
    assert!(d.active());
}

/// `uid` makes `path` and holds a write lease on it (every open of it by
/// anyone else is `EWOULDBLOCK`, non-blocking, meanwhile) until the guard
/// kills it (or 30 s pass).
fn hold_lease(node: &Node, uid: u32, path: &str) -> Cleanup {
    let holder = format!(
        "setpriv --reuid {uid} --regid {uid} --clear-groups /usr/bin/python3 -c {} {} >/dev/null 2>&1 & echo $!",
        quote(
            "import fcntl, os, signal, sys, time\nsignal.signal(signal.SIGIO, signal.SIG_IGN)\nfd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\nfcntl.fcntl(fd, 1024, fcntl.F_WRLCK)\nopen(sys.argv[1] + '.held', 'w').close()\ntime.sleep(30)"
        ),
        quote(path),
    );
    let pid = node.sh_ok(&holder);
    let pid = pid.trim().to_string();
    let guard = node.on_drop(format!("kill {pid} 2>/dev/null; true"));
    wait_for("the lease", Duration::from_secs(60), || {
        node.sh(&format!("test -e {}", quote(&format!("{path}.held"))))
            .status
            .success()
            .then_some(())
    });
    guard
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn an_object_the_host_cannot_set_is_reported_and_the_rest_is_done() {
    let mut w = World::new("acl-lease");
    let ia = w.identity("ia");
    let share = w.shared_path("share");
    let first = w.apply_local(json!([ia, folder(&share)]));
    let decl = w.path("declaration.json");
    assert_eq!(first.status.code(), Some(0), "{first:?}");
    // The identity holds a write lease on one file for a while: every
    // open of it by anyone else is EWOULDBLOCK (non-blocking) meanwhile.
    let leased = format!("{share}/leased");
    let other = format!("{share}/other");
    ok(
        as_identity(
            &w.node,
            ia.uid,
            "import sys; open(sys.argv[1], 'w').close()",
            &[&other],
        ),
        "a file",
    );
    let _lease = hold_lease(&w.node, ia.uid, &leased);
    // Another file's inode is filled with the identity's user.* attributes
    // once root took its entries off: no room for them again (ENOSPC).
    let full = format!("{share}/full");
    ok(
        as_identity(
            &w.node,
            ia.uid,
            "import sys; open(sys.argv[1], 'w').close()",
            &[&full],
        ),
        "a file",
    );
    w.node.sh_ok(&format!("setfacl -b {}", quote(&full)));
    let filled = ok(
        as_identity(
            &w.node,
            ia.uid,
            "import os, sys\nn = 0\ntry:\n  while n < 10000:\n    os.setxattr(sys.argv[1], 'user.k%d' % n, b'v' * 64); n += 1\nexcept OSError as e:\n  assert e.errno == 28, e\nprint(n)",
            &[&full],
        ),
        "filling the inode",
    );
    eprintln!("{} user.* attributes filled the inode", filled.trim());
    // Root narrows the other file: the apply puts back what it can.
    w.node.sh_ok(&format!("setfacl -b {}", quote(&other)));
    let out = w.mesh(&["apply", &decl, "--local"]);
    let report = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{report}");
    let line = report
        .lines()
        .find(|l| l.starts_with("share "))
        .unwrap_or_default();
    assert!(line.starts_with("share updated"), "{report}");
    assert!(line.contains("could not set 2 object(s): "), "{report}");
    assert!(line.contains("leased: "), "{report}");
    assert!(line.contains("full: "), "{report}");
    assert!(has_entry(&w.node, &other, ia.uid), "the rest is done");
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn revoking_access_reaches_hard_links_the_writer_made() {
    let mut w = World::new("acl-revoke");
    let ia = w.identity("ia");
    let ib = w.identity("ib");
    let (a, b) = (ia.uid, ib.uid);
    let share = w.shared_path("share");
    let both = shared_folder("share", &share, &[("ia", true), ("ib", true)]);
    let out = w.apply_local(json!([ia, ib, both]));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // Each writer makes a file (it inherits the entries) and keeps a
    // second name of it.
    for (uid, f) in [(a, "fa"), (b, "fb")] {
        let path = format!("{share}/{f}");
        ok(
            as_identity(
                &w.node,
                uid,
                "import os,sys; open(sys.argv[1], 'w').write('x'); os.link(sys.argv[1], sys.argv[1] + '.keep')",
                &[&path],
            ),
            "a file and its second name",
        );
        assert!(has_entry(&w.node, &format!("{path}.keep"), a));
    }
    // ib loses its access: its entries go, from both names of both files.
    let only_a = shared_folder("share", &share, &[("ia", true)]);
    let out = w.apply_local(json!([ia, ib, only_a]));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    for f in ["fa", "fa.keep", "fb", "fb.keep", ""] {
        let p = format!("{share}/{f}");
        assert!(!has_entry(&w.node, &p, b), "{p}: {:?}", users(&w.node, &p));
    }
    assert!(has_entry(&w.node, &format!("{share}/fb.keep"), a));
    // The folder goes: nothing the host gave is left.
    let out = w.apply_local(json!([ia, ib]));
    let report = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert!(report.contains("share removed"), "{report}");
    for f in ["fa", "fa.keep", "fb", "fb.keep", ""] {
        let p = format!("{share}/{f}");
        assert!(
            users(&w.node, &p).is_empty(),
            "{p}: {:?}",
            users(&w.node, &p)
        );
    }
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_revocation_that_cannot_finish_is_said_and_finished_later() {
    let mut w = World::new("acl-retry");
    let ia = w.identity("ia");
    let ib = w.identity("ib");
    let (a, b) = (ia.uid, ib.uid);
    let share = w.shared_path("share");
    let both = shared_folder("share", &share, &[("ia", true), ("ib", true)]);
    let out = w.apply_local(json!([ia, ib, both]));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // ib holds a write lease on its file while it loses its access.
    let leased = format!("{share}/leased");
    let lease = hold_lease(&w.node, b, &leased);
    assert!(has_entry(&w.node, &leased, b));
    let only_a = shared_folder("share", &share, &[("ia", true)]);
    let out = w.apply_local(json!([ia, ib, only_a]));
    let decl = w.path("declaration.json");
    let report = stdout(&out);
    assert!(
        report.contains(&format!(
            "entries of uid [{b}] not all taken away (1 object(s) could not be reached: leased: "
        )),
        "{report}"
    );
    assert!(report.contains("taken again at the next apply"), "{report}");
    assert!(!has_entry(&w.node, &share, b), "the rest is done");
    assert!(
        has_entry(&w.node, &leased, b),
        "the leased file was not reached"
    );
    // The lease ends: the next apply finishes it.
    drop(lease);
    wait_for("the lease to end", Duration::from_secs(60), || {
        w.mesh(&["apply", &decl, "--local"])
            .status
            .success()
            .then_some(())
            .filter(|()| !has_entry(&w.node, &leased, b))
    });
    assert!(has_entry(&w.node, &leased, a), "ia keeps its access");
    let out = w.mesh(&["apply", &decl, "--local"]);
    let report = stdout(&out);
    assert!(
        !report.contains("taken away"),
        "nothing left to take: {report}"
    );
}

/// Makes, beneath `sys.argv[1]`, ten directories of twenty directories
/// each, every one of them holding a file: 210 directories and 210 files
/// of the caller's.
const BUILD_TREE: &str = r#"
import os, sys
root = sys.argv[1]
for i in range(10):
    top = os.path.join(root, f"t{i}")
    os.mkdir(top)
    open(os.path.join(top, "f"), "w").write("x")
    for j in range(20):
        d = os.path.join(top, f"d{j}")
        os.mkdir(d)
        open(os.path.join(d, "f"), "w").write("x")
"#;

/// For `sys.argv[2]` seconds, writes files into the directories of
/// `sys.argv[1]`'s tree (as [`BUILD_TREE`] made them) and changes their
/// mode: objects and events for the watch while an apply runs. Prints how
/// many it wrote, and how many writes were denied (its access may be taken
/// away meanwhile).
const WRITE_LOOP: &str = r#"
import os, sys, time
root = sys.argv[1]
end = time.time() + float(sys.argv[2])
n = written = denied = 0
while time.time() < end:
    d = os.path.join(root, f"t{n % 10}", f"d{(n // 10) % 20}")
    p = os.path.join(d, f"w{n}")
    n += 1
    try:
        open(p, "w").write("x")
        os.chmod(p, 0o600 if n % 2 else 0o640)
        written += 1
    except PermissionError:
        denied += 1
    time.sleep(0.001)
print(written, denied)
"#;

/// The named user entries of `uid`, access and default, on `path` and
/// everything beneath it (`getfacl -R -n`, inside the node), each with
/// its file; and how many files were listed.
fn entries_under(node: &Node, path: &str, uid: u32) -> (usize, Vec<String>) {
    let listing = node.sh_ok(&format!("getfacl -R -n -p {}", quote(path)));
    let (mut files, mut found) = (0, Vec::new());
    let mut file = "";
    for line in listing.lines() {
        if let Some(f) = line.strip_prefix("# file: ") {
            file = f;
            files += 1;
        } else if line.starts_with(&format!("user:{uid}:"))
            || line.starts_with(&format!("default:user:{uid}:"))
        {
            found.push(format!("{file}: {line}"));
        }
    }
    (files, found)
}

/// `ia` and `ib` both writing in a folder the daemon watches: `ib` builds
/// [`BUILD_TREE`], and it holds the entries of both. Returns the world,
/// the daemon, the identities and the folder's path.
fn two_writers(tag: &str) -> (World, DaemonUnit, Identity, Identity, String) {
    let mut w = World::new(tag);
    let ia = w.identity("ia");
    let ib = w.identity("ib");
    let share = w.shared_path("share");
    let both = shared_folder("share", &share, &[("ia", true), ("ib", true)]);
    let d = DaemonUnit::started(&w, json!([ia, ib, both]));
    ok(
        as_identity(&w.node, ib.uid, BUILD_TREE, &[&share]),
        "ib's tree",
    );
    for uid in [ia.uid, ib.uid] {
        let (files, found) = entries_under(&w.node, &share, uid);
        assert!(files > 420, "the tree: {files} files");
        // Every directory has an access and a default entry, every file one.
        assert!(
            found.len() >= 211 * 2 + 210,
            "{uid}: {} entries",
            found.len()
        );
    }
    (w, d, ia, ib, share)
}

/// Apply `resources` through the daemon while `writer` writes into `ib`'s
/// tree under `share`: the report.
fn apply_while_writing(
    w: &World,
    d: &DaemonUnit,
    writer: u32,
    share: &str,
    resources: Value,
) -> String {
    let node = w.node.clone();
    let root = share.to_string();
    let writing = std::thread::spawn(move || as_identity(&node, writer, WRITE_LOOP, &[&root, "4"]));
    std::thread::sleep(Duration::from_millis(500));
    let decl = w.write_declaration(resources);
    let out = d.cli(&["apply", &decl]);
    let report = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{report}");
    let counts = ok(writing.join().expect("the writer"), "the writer's loop");
    let written: u64 = counts
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    eprintln!("written, denied during the apply: {}", counts.trim());
    assert!(written > 0, "the writer wrote nothing: {counts}");
    report
}

/// Asserts, right away and once the watch had time to act on every event
/// the revocation raised, that no entry of `uids` is left beneath `share`.
fn assert_none_left(node: &Node, share: &str, uids: &[u32]) {
    for when in ["when the apply reported", "after the watch settled"] {
        for &uid in uids {
            let (files, found) = entries_under(node, share, uid);
            assert!(
                found.is_empty(),
                "{when}: {} entries of {uid} left on {files} files, e.g. {:?}",
                found.len(),
                &found[..found.len().min(5)]
            );
        }
        std::thread::sleep(Duration::from_secs(3));
    }
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn dropping_an_identity_through_the_daemon_is_not_undone_by_its_watch() {
    let (w, d, ia, ib, share) = two_writers("acl-drop-id");
    let only_a = shared_folder("share", &share, &[("ia", true)]);
    let report = apply_while_writing(&w, &d, ia.uid, &share, json!([ia, ib, only_a]));
    assert!(
        report.contains(&format!("entries of uid [{}] taken away", ib.uid)),
        "{report}"
    );
    assert_none_left(&w.node, &share, &[ib.uid]);
    // ia keeps its access, on what it wrote meanwhile too.
    let (files, kept) = entries_under(&w.node, &share, ia.uid);
    assert!(
        kept.len() >= files,
        "{} entries on {files} files",
        kept.len()
    );
    assert!(d.active());
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn dropping_a_folder_through_the_daemon_is_not_undone_by_its_watch() {
    let (w, d, ia, ib, share) = two_writers("acl-drop-folder");
    let report = apply_while_writing(&w, &d, ia.uid, &share, json!([ia, ib]));
    assert!(report.contains("share removed"), "{report}");
    assert_none_left(&w.node, &share, &[ia.uid, ib.uid]);
    assert!(d.active());
}
