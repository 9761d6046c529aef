//! Who holds a lock file: read from `/proc/locks`, so that a wait given up
//! names the process that kept it (its pid, command and state), as an
//! operator would find it with `lslocks` and `ps`.

use std::fs::File;
use std::os::unix::fs::MetadataExt;

/// The holders of `file`'s lock as the kernel lists them (`/proc/locks`,
/// waiters left out), each as `pid N (COMM, state S: meaning)`.
pub(super) fn describe(file: &File) -> String {
    let Ok(meta) = file.metadata() else {
        return "an unknown process".to_string();
    };
    let locks = std::fs::read_to_string("/proc/locks").unwrap_or_default();
    let pids = holders(&locks, meta.ino());
    if pids.is_empty() {
        // Released meanwhile, or held from another PID namespace.
        return "an unknown process".to_string();
    }
    pids.iter()
        .map(|pid| format!("pid {pid} ({})", process(*pid)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The pids holding a lock on inode `ino`, from `/proc/locks` text: lines
/// `N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE START END`; a waiter's line
/// has `->` after the number.
fn holders(locks: &str, ino: u64) -> Vec<u32> {
    let mut pids: Vec<u32> = locks
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.get(1) == Some(&"->") || fields.len() < 6 {
                return None;
            }
            let inode: u64 = fields[5].rsplit(':').next()?.parse().ok()?;
            if inode != ino {
                return None;
            }
            fields[4].parse().ok()
        })
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// `COMM, state S: meaning` of `pid`, from `/proc/PID/stat`.
fn process(pid: u32) -> String {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return "gone".to_string();
    };
    // `PID (COMM) STATE ...`: COMM may hold spaces and parentheses.
    let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
        return "unreadable".to_string();
    };
    let comm = &stat[open + 1..close];
    let state = stat[close + 1..].split_whitespace().next().unwrap_or("?");
    let meaning = match state {
        "R" => "running",
        "S" => "sleeping",
        "D" => "in uninterruptible sleep",
        "T" => "stopped",
        "t" => "stopped by a tracer",
        "Z" => "a zombie",
        _ => "other",
    };
    format!("{comm}, state {state}: {meaning}")
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn holders_are_read_and_waiters_left_out() {
        let locks = "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF\n\
                     1: -> FLOCK  ADVISORY  WRITE 77 fd:01:1234 0 EOF\n\
                     2: POSIX  ADVISORY  READ 99 fd:01:999 0 EOF\n";
        assert_eq!(holders(locks, 1234), vec![4242]);
        assert_eq!(holders(locks, 999), vec![99]);
        assert!(holders(locks, 5).is_empty());
    }

    #[test]
    fn a_holder_is_named_with_its_state_and_a_bounded_wait_gives_up_naming_it() {
        let dir = crate::test_dirs::test_dir();
        let path = dir.path().join("windows.lock");
        std::fs::write(&path, b"").expect("lock file");
        let mut child = std::process::Command::new("flock")
            .arg(&path)
            .args(["sleep", "30"])
            .spawn()
            .expect("flock(1) from util-linux");
        let pid = child.id();
        let file = File::open(&path).expect("open");
        // flock(1) takes it and keeps it while its command runs, asleep in
        // its wait for it (running for a moment first, longer on a loaded
        // machine).
        let deadline = Instant::now() + Duration::from_secs(10);
        let said = loop {
            let said = describe(&file);
            if said.contains(", state S") || Instant::now() > deadline {
                break said;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(
            said.contains(&format!("pid {pid} (flock, state S")),
            "{said}"
        );
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid as i32).expect("pid"),
            rustix::process::Signal::STOP,
        )
        .expect("SIGSTOP");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !describe(&file).contains(", state T") && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let waited = Instant::now();
        let err =
            super::super::lock::lock_within(&path, Duration::from_millis(300)).expect_err("held");
        assert!(waited.elapsed() >= Duration::from_millis(300));
        let said = err.to_string();
        assert!(
            said.contains(&format!("pid {pid} (flock, state T: stopped)"))
                && said.contains("given up"),
            "{said}"
        );
        // flock(1)'s command shares its lock: end both.
        let _ = std::process::Command::new("pkill")
            .args(["-KILL", "-P", &pid.to_string()])
            .status();
        let _ = child.kill();
        let _ = child.wait();
    }
}
