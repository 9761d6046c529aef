//! A writer in a shared folder against the daemon's shared resources, on
//! the sandbox node (docs/security.md, "Against a writer in a shared
//! folder"): the journal, which journald rate-limits per unit and
//! priority (a flood would have it suppress the daemon's pages too), and
//! root's inotify watches, which PID 1 and every root service share.
//!
//! The writer is a process running as an identity (`setpriv --reuid
//! --regid --clear-groups /usr/bin/python3`); the daemon is a real unit
//! (`DaemonUnit`). The node's journal is shared by every test running on
//! it: only the daemon unit's own entries are counted.

mod support;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use support::accounts::{as_identity, has_entry, shared_folder};
use support::daemon_unit::DaemonUnit;
use support::declare;
use support::world::World;
use support::{quote, stdout, unique_name, wait_for, Node};

fn ok(out: std::process::Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
}

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The journal's entries (`-o json`), one object each.
fn entries(journal: &str) -> Vec<Value> {
    journal
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn field<'v>(entry: &'v Value, name: &str) -> &'v str {
    entry.get(name).and_then(Value::as_str).unwrap_or("")
}

/// The writer's flood, as the identity, in the folder `sys.argv[1]`:
/// `full` has its access ACL taken off and its inode filled with `user.*`
/// attributes (ext4 then refuses to put the ACL back: ENOSPC), `leased`
/// is held under a write lease (every open by anyone else fails with
/// EWOULDBLOCK); then `chmod` alternates between them for `sys.argv[2]`
/// seconds (alternating, so that the kernel does not merge the events).
/// Prints the chmods done. `ready` is made once the flood begins.
const FLOOD: &str = r#"
import errno, fcntl, os, signal, sys, time
d, secs = sys.argv[1], float(sys.argv[2])
full, leased = os.path.join(d, "full"), os.path.join(d, "leased")
open(full, "w").close()
signal.signal(signal.SIGIO, signal.SIG_IGN)
lease = os.open(leased, os.O_RDWR | os.O_CREAT, 0o600)
for attempt in range(500):
    try:
        fcntl.fcntl(lease, 1024, fcntl.F_WRLCK)
        break
    except OSError:
        time.sleep(0.01)  # the watch has it open a moment (its new entries)
else:
    sys.exit("no lease")
# The watch puts the ACL back while it can: strip and fill until there is
# no ACL and no room for one.
n = 0
for attempt in range(1000):
    try:
        os.removexattr(full, "system.posix_acl_access")
    except OSError:
        pass
    for size in (200, 64, 16, 4, 1):
        while True:
            try:
                os.setxattr(full, "user.f%d" % n, b"v" * size)
                n += 1
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                break
    try:
        os.getxattr(full, "system.posix_acl_access")
    except OSError as e:
        if e.errno == errno.ENODATA:
            break
else:
    sys.exit("the ACL kept coming back")
open(os.path.join(d, "ready"), "w").close()
end = time.time() + secs
chmods = 0
while time.time() < end:
    os.chmod(full, 0o600 if chmods % 4 < 2 else 0o640)
    os.chmod(leased, 0o600 if chmods % 4 < 2 else 0o640)
    chmods += 2
print(chmods)
"#;

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_writers_flood_costs_few_journal_lines_and_never_loses_a_page() {
    let node = Node::from_env();
    let mut w = World::new("acl-jflood");
    let ia = w.identity("ia");
    let share = w.shared_path("share");
    // A paging template that keeps the entry it finds, as documented.
    let prefix = unique_name("flood-page");
    let template = format!("{prefix}@.service");
    let pages = w.path("pages");
    std::fs::create_dir_all(&pages).expect("pages dir");
    std::fs::write(
        format!("/proc/{}/root/run/systemd/system/{template}", node.pid()),
        format!(
            "[Service]\nType=oneshot\nExecStart=/bin/sh -c 'for i in $$(seq 1 20); do \
             e=$$(journalctl -o json -n 1 --no-pager \"MESH_ALERT_UNIT=$$1\"); [ -n \"$$e\" ] && break; sleep 1; done; \
             printf \"%%s\\n\" \"$$e\" >>{pages}/page.json' sh %n\n"
        ),
    )
    .expect("template");
    let _template = node.on_drop(format!(
        "systemctl stop '{prefix}@*'; rm -f /run/systemd/system/{template}; systemctl daemon-reload"
    ));
    node.sh_ok("systemctl daemon-reload");
    let bad = w.name("fl");
    let img = w.busybox();
    w.write_declaration(json!([
        ia,
        shared_folder("share", &share, &[("ia", true)]),
        declare::step(&bad, &bad, &img, "exit 3", &[], 300),
    ]));
    let d =
        DaemonUnit::install_with_args(&w, "", &format!("--metrics-file= --on-alert {template}"));
    d.start();
    let sub = format!("{share}/sub");
    ok(
        as_identity(
            &node,
            ia.uid,
            "import os,sys; os.mkdir(sys.argv[1])",
            &[&sub],
        ),
        "a directory",
    );
    wait_for("the directory's entries", Duration::from_secs(60), || {
        has_entry(&node, &sub, ia.uid).then_some(())
    });

    let seconds = 10;
    let writer = {
        let node = node.clone();
        let (share, uid) = (share.clone(), ia.uid);
        std::thread::spawn(move || as_identity(&node, uid, FLOOD, &[&share, &seconds.to_string()]))
    };
    let ready = format!("{share}/ready");
    wait_for("the flood to begin", Duration::from_secs(60), || {
        node.sh(&format!("test -e {}", quote(&ready)))
            .status
            .success()
            .then_some(())
    });
    let began = now_secs();
    let began_at = Instant::now();
    // A step fails while the flood goes on: its page must not be lost.
    std::thread::sleep(Duration::from_secs(3));
    let out = d.cli_with_state(&["run", &bad]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let chmods: u64 = ok(writer.join().expect("the writer"), "the flood")
        .trim()
        .parse()
        .expect("a count");
    let ended = now_secs();
    eprintln!("{chmods} chmods in {seconds} s");
    assert!(chmods > 1000, "the flood ran ({chmods} chmods)");

    // The page's instance found the daemon's entry for it.
    let page_file = format!("{pages}/page.json");
    let page = wait_for("the page instance", Duration::from_secs(60), || {
        std::fs::read_to_string(&page_file)
            .ok()
            .filter(|t| t.ends_with('\n'))
    });
    let page: Value =
        serde_json::from_str(page.lines().next().unwrap_or("")).unwrap_or_else(|_| {
            panic!("the page's entry was not in the journal (suppressed?): {page:?}")
        });
    assert_eq!(field(&page, "MESH_ALERT_EVENT"), "step-failed", "{page}");
    assert_eq!(field(&page, "MESH_STEP"), bad, "{page}");

    // What the flood cost: the daemon's own lines meanwhile, but those of
    // the step that failed and its page.
    std::thread::sleep(Duration::from_secs(2));
    let since = format!("@{began:.3}");
    let until = format!("@{:.3}", ended + 2.0);
    let all = entries(&d.unit_journal(&["--since", &since, "--until", &until, "-o", "json"]));
    // The daemon's own lines: not a step's output, not a pager's.
    let daemons_own = |e: &&Value| {
        field(e, "_SYSTEMD_UNIT") == d.unit
            && field(e, "MESH_STEP").is_empty()
            && field(e, "MESH_ALERT_UNIT").is_empty()
    };
    let flood: Vec<&Value> = all.iter().filter(daemons_own).collect();
    for e in &flood {
        eprintln!(
            "{} {}",
            field(e, "PRIORITY"),
            field(e, "MESSAGE").chars().take(200).collect::<String>()
        );
    }
    eprintln!("{} lines of the daemon during the flood", flood.len());
    assert!(
        flood.len() <= 30,
        "{} lines of the daemon for {chmods} chmods in {seconds} s",
        flood.len()
    );
    // The count is written some seconds after the first case (the
    // notes' interval), so it may land past the flood's end: looked for
    // without an end.
    wait_for("the cases to be counted", Duration::from_secs(30), || {
        entries(&d.unit_journal(&["--since", &since, "-o", "json"]))
            .iter()
            .filter(daemons_own)
            .any(|e| field(e, "MESH_COUNT").parse().unwrap_or(0) > 1)
            .then_some(())
    });

    // journald says what it suppressed only when the unit's next entry of
    // that priority comes after its interval (30 s): one more case, then.
    let wait = Duration::from_secs(32).saturating_sub(began_at.elapsed());
    std::thread::sleep(wait);
    ok(
        as_identity(
            &node,
            ia.uid,
            "import os,sys\nfor p in sys.argv[1:]: os.chmod(p, 0o600)",
            &[&format!("{share}/full"), &format!("{share}/leased")],
        ),
        "one more chmod",
    );
    wait_for("the case after the flood", Duration::from_secs(60), || {
        let after =
            entries(&d.unit_journal(&["--since", &format!("@{:.3}", began + 31.0), "-o", "json"]));
        after
            .iter()
            .any(|e| field(e, "PRIORITY") == "4" && !field(e, "MESH_FOLDER").is_empty())
            .then_some(())
    });
    let suppressed: Vec<String> = node
        .journal(&["-b", "--since", &since, "-o", "cat"])
        .lines()
        .filter(|l| l.starts_with("Suppressed") && l.contains(&d.unit))
        .map(str::to_string)
        .collect();
    assert!(suppressed.is_empty(), "journald: {suppressed:?}");
    assert!(d.active());
}

/// The inotify watches process `pid` holds (every `inotify wd:` line of
/// its descriptors' fdinfo).
fn watches(node: &Node, pid: &str) -> usize {
    node.sh_ok(&format!(
        "cat /proc/{pid}/fdinfo/* 2>/dev/null | grep -c '^inotify wd:' ; true"
    ))
    .trim()
    .parse()
    .unwrap_or(0)
}

/// Under `sys.argv[1]`: 90 directories of 100 directories each (9,090),
/// then `deep/a/b` holding a file `f`: the deepest level, made last.
const NINE_THOUSAND: &str = r#"
import os, sys
root = sys.argv[1]
for i in range(90):
    top = os.path.join(root, "t%d" % i)
    os.mkdir(top)
    for j in range(100):
        os.mkdir(os.path.join(top, "d%d" % j))
os.makedirs(os.path.join(root, "deep", "a", "b"))
open(os.path.join(root, "deep", "a", "b", "f"), "w").write("x")
"#;

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn nine_thousand_directories_cost_a_bounded_number_of_watches_and_are_still_kept() {
    let mut w = World::new("acl-watches");
    let ia = w.identity("ia");
    let share = w.shared_path("share");
    let d = DaemonUnit::started(
        &w,
        json!([ia, shared_folder("share", &share, &[("ia", true)])]),
    );
    let pid = d.main_pid();
    ok(
        as_identity(&w.node, ia.uid, NINE_THOUSAND, &[&share]),
        "the tree",
    );
    let deep = format!("{share}/deep/a/b/f");
    wait_for("the deepest file's entry", Duration::from_secs(60), || {
        has_entry(&w.node, &deep, ia.uid).then_some(())
    });
    // Settled: the count stays put.
    let mut last = usize::MAX;
    let held = wait_for("the watches to settle", Duration::from_secs(60), || {
        std::thread::sleep(Duration::from_secs(1));
        let n = watches(&w.node, &pid);
        let settled = n == last;
        last = n;
        settled.then_some(n)
    });
    eprintln!("{held} inotify watches for 9,094 directories");
    assert!(held <= 8192, "{held} inotify watches held");
    assert!(held > 7000, "the folder's share is used ({held})");
    let status = stdout(&d.cli(&["status"]));
    assert!(
        status.contains("NOT WATCHED") && status.contains("kept by a sweep"),
        "{status}"
    );
    // Root strips the entries of a file beneath a directory that is not
    // watched: no event; the periodic sweep puts them back.
    w.node.sh_ok(&format!("setfacl -b {}", quote(&deep)));
    assert!(!has_entry(&w.node, &deep, ia.uid));
    let stripped = Instant::now();
    wait_for("the periodic sweep", Duration::from_secs(90), || {
        has_entry(&w.node, &deep, ia.uid).then_some(())
    });
    let took = stripped.elapsed();
    eprintln!("put back after {took:?}");
    assert!(took <= Duration::from_secs(45), "put back after {took:?}");
    assert!(watches(&w.node, &pid) <= 8192);
    assert!(d.active());
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_directory_moved_out_of_its_folder_is_no_longer_watched() {
    let mut w = World::new("acl-moveout");
    let ia = w.identity("ia");
    let share = w.shared_path("share");
    // A directory of the writer's own beside the folder, same filesystem.
    let outside = w.path("outside");
    w.node.sh_ok(&format!(
        "mkdir {o} && chown {u}:{u} {o}",
        o = quote(&outside),
        u = ia.uid
    ));
    let d = DaemonUnit::started(
        &w,
        json!([ia, shared_folder("share", &share, &[("ia", true)])]),
    );
    let pid = d.main_pid();
    let base = watches(&w.node, &pid);
    ok(
        as_identity(
            &w.node,
            ia.uid,
            "import os,sys\nfor t in ('tree', 'kept'):\n  for i in range(300):\n    os.makedirs(os.path.join(sys.argv[1], t, 'x%d' % i))",
            &[&share],
        ),
        "two trees",
    );
    let full = wait_for("both trees watched", Duration::from_secs(30), || {
        let n = watches(&w.node, &pid);
        (n >= base + 602).then_some(n)
    });
    // Moved within the folder: still watched, and still acted on.
    ok(
        as_identity(
            &w.node,
            ia.uid,
            "import os,sys; os.rename(sys.argv[1] + '/kept', sys.argv[1] + '/kept2')",
            &[&share],
        ),
        "a move within",
    );
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(watches(&w.node, &pid), full, "a move within the folder");
    let inner = format!("{share}/kept2/x7");
    ok(
        as_identity(
            &w.node,
            ia.uid,
            "import os,sys; os.chmod(sys.argv[1], 0o700)",
            &[&inner],
        ),
        "chmod",
    );
    wait_for(
        "the moved tree's watch to act",
        Duration::from_secs(5),
        || has_entry(&w.node, &inner, ia.uid).then_some(()),
    );
    // Moved out: its 301 watches go.
    ok(
        as_identity(
            &w.node,
            ia.uid,
            "import os,sys; os.rename(sys.argv[1] + '/tree', sys.argv[2] + '/tree')",
            &[&share, &outside],
        ),
        "a move out",
    );
    let after = wait_for(
        "the moved-out watches dropped",
        Duration::from_secs(10),
        || {
            let n = watches(&w.node, &pid);
            (n + 301 <= full).then_some(n)
        },
    );
    eprintln!("{base} watches idle, {full} with both trees, {after} once one left");
    assert!(d.active());
}

/// Voluntary context switches of every thread of `pid` (one per sleep
/// after a wake).
fn switches(node: &Node, pid: &str) -> u64 {
    node.sh_ok(&format!(
        "cat /proc/{pid}/task/*/status | awk '/^voluntary_ctxt_switches:/ {{ s += $2 }} END {{ print s }}'"
    ))
    .trim()
    .parse()
    .unwrap_or(0)
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_folder_within_its_share_adds_no_wake_ups_to_the_idle_daemon() {
    let mut w = World::new("acl-idle");
    let ia = w.identity("ia");
    let share = w.shared_path("share");
    let d = DaemonUnit::started(
        &w,
        json!([ia, shared_folder("share", &share, &[("ia", true)])]),
    );
    ok(
        as_identity(
            &w.node,
            ia.uid,
            "import os,sys\nfor i in range(200): os.makedirs(os.path.join(sys.argv[1], 'd%d' % i, 'e'))",
            &[&share],
        ),
        "a tree",
    );
    let pid = d.main_pid();
    // Settled: its events handled, its messages said.
    std::thread::sleep(Duration::from_secs(12));
    let status = stdout(&d.cli(&["status"]));
    assert!(
        status.contains("shared folder share: 401 directories watched\n"),
        "{status}"
    );
    let before = switches(&w.node, &pid);
    std::thread::sleep(Duration::from_secs(30));
    let woke = switches(&w.node, &pid) - before;
    eprintln!("{woke} wake-ups in 30 s");
    assert!(woke <= 10, "{woke} wake-ups in 30 s");
}

/// CPU time (user and system, in clock ticks) process `pid` has used.
fn cpu_ticks(node: &Node, pid: &str) -> u64 {
    let stat = node.sh_ok(&format!("cat /proc/{pid}/stat"));
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of the line: the 12th and 13th after the name.
    fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0)
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn renaming_a_big_tree_back_and_forth_does_not_sweep_it_again() {
    let mut w = World::new("acl-rename");
    let ia = w.identity("ia");
    let share = w.shared_path("share");
    let d = DaemonUnit::started(
        &w,
        json!([ia, shared_folder("share", &share, &[("ia", true)])]),
    );
    let pid = d.main_pid();
    // 50 directories of 400 files: 20,050 names.
    ok(
        as_identity(
            &w.node,
            ia.uid,
            "import os,sys\nfor i in range(50):\n  p = os.path.join(sys.argv[1], 'big', 'd%d' % i); os.makedirs(p)\n  for j in range(400): open(os.path.join(p, 'f%d' % j), 'w').close()",
            &[&share],
        ),
        "the tree",
    );
    std::thread::sleep(Duration::from_secs(3));
    let before = cpu_ticks(&w.node, &pid);
    let n = ok(
        as_identity(
            &w.node,
            ia.uid,
            "import os,sys,time\nd = sys.argv[1]; end = time.time() + 10; n = 0\nwhile time.time() < end:\n  os.rename(d + '/big', d + '/big2'); time.sleep(0.05); os.rename(d + '/big2', d + '/big'); time.sleep(0.05); n += 2\nprint(n)",
            &[&share],
        ),
        "the rename loop",
    );
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_ticks(&w.node, &pid) - before;
    eprintln!(
        "{} renames in 10 s cost the daemon {used} ticks of CPU",
        n.trim()
    );
    // Each rename is a relink, not a sweep of 20,050 names.
    assert!(used < 100, "{used} ticks of CPU for {} renames", n.trim());
    assert!(has_entry(&w.node, &format!("{share}/big/d7/f9"), ia.uid));
    assert!(d.active());
}
