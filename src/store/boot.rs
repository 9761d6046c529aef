//! Which boot this is and when a process started: together they tell a live
//! window owner from a pid the kernel has since given to someone else.

use std::fs;
use std::path::{Path, PathBuf};

use super::StoreError;

/// Where the kernel publishes the random id of the current boot.
const BOOT_ID_PATH: &str = "/proc/sys/kernel/random/boot_id";

/// The current boot's id (`/proc/sys/kernel/random/boot_id`, trimmed), e.g.
/// `"0f3c…-…"`. Differs after every reboot, so a record from another boot is
/// recognised as such.
pub fn boot_id() -> Result<String, StoreError> {
    let path = Path::new(BOOT_ID_PATH);
    let text = fs::read_to_string(path).map_err(|e| StoreError::io("read", path, e))?;
    let id = text.trim();
    if id.is_empty() {
        return Err(StoreError::Corrupt {
            path: path.to_owned(),
            reason: "empty boot id".into(),
        });
    }
    Ok(id.to_owned())
}

/// The start time of process `pid`, in clock ticks after boot (field 22 of
/// `/proc/<pid>/stat`). A recycled pid has a different start time. A process
/// that does not exist gives an I/O error for which
/// [`StoreError::is_not_found`] is true.
pub fn process_start_time(pid: u32) -> Result<u64, StoreError> {
    let path = PathBuf::from(format!("/proc/{pid}/stat"));
    let text = fs::read_to_string(&path).map_err(|e| StoreError::io("read", &path, e))?;
    parse_stat_start_time(&text).map_err(|reason| StoreError::Corrupt { path, reason })
}

/// [`process_start_time`] of a process that still runs: one that exited
/// and is not yet reaped (a zombie, state `Z` or `X`) counts as gone, with
/// an error for which [`StoreError::is_not_found`] is true. What tells a
/// window's owner dead: a pidfd turns readable at the exit, before the reap.
pub fn live_process_start_time(pid: u32) -> Result<u64, StoreError> {
    let path = PathBuf::from(format!("/proc/{pid}/stat"));
    let text = fs::read_to_string(&path).map_err(|e| StoreError::io("read", &path, e))?;
    let state = text
        .rfind(')')
        .and_then(|close| text[close + 1..].split_ascii_whitespace().next());
    if matches!(state, Some("Z" | "X" | "x")) {
        return Err(StoreError::io(
            "read",
            &path,
            std::io::Error::new(std::io::ErrorKind::NotFound, "the process has exited"),
        ));
    }
    parse_stat_start_time(&text).map_err(|reason| StoreError::Corrupt { path, reason })
}

/// Extracts field 22 (`starttime`) from the text of a `/proc/<pid>/stat`.
///
/// Field 2 is the command name in parentheses and may itself contain spaces
/// and parentheses, so fields are counted from the last `)`.
fn parse_stat_start_time(text: &str) -> Result<u64, String> {
    let close = text
        .rfind(')')
        .ok_or_else(|| "no ')' closing the command name".to_string())?;
    // After the name comes field 3 (state); field 22 is 19 further.
    let field = text[close + 1..]
        .split_ascii_whitespace()
        .nth(22 - 3)
        .ok_or_else(|| "fewer than 22 fields".to_string())?;
    field
        .parse::<u64>()
        .map_err(|e| format!("field 22 (starttime) {field:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_id_is_stable_and_uuid_shaped() {
        let a = boot_id().expect("boot id");
        let b = boot_id().expect("boot id");
        assert_eq!(a, b);
        assert_eq!(a.len(), 36, "{a}");
        assert_eq!(a.matches('-').count(), 4, "{a}");
    }

    #[test]
    fn parses_start_time_with_awkward_command_names() {
        let rest = "S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 424242 20 21";
        assert_eq!(
            parse_stat_start_time(&format!("77 (sh) {rest}")),
            Ok(424242)
        );
        assert_eq!(
            parse_stat_start_time(&format!("77 (a) b (c) {rest}")),
            Ok(424242)
        );
        assert!(parse_stat_start_time("77 (sh) S 1 2")
            .expect_err("short")
            .contains("fewer than 22"));
        assert!(parse_stat_start_time("garbage").is_err());
    }

    #[test]
    fn start_time_of_this_process_is_stable() {
        let me = std::process::id();
        let a = process_start_time(me).expect("own start time");
        assert_eq!(process_start_time(me).expect("again"), a);
        // pid 1 started no later than we did.
        assert!(process_start_time(1).expect("pid 1") <= a);
    }

    #[test]
    fn a_zombie_is_not_live() {
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        // Exited, not reaped yet.
        let mut waited = 0;
        while live_process_start_time(pid).is_ok() && waited < 500 {
            std::thread::sleep(std::time::Duration::from_millis(10));
            waited += 1;
        }
        let err = live_process_start_time(pid).expect_err("zombie");
        assert!(err.is_not_found(), "{err}");
        assert!(
            process_start_time(pid).is_ok(),
            "still in /proc until reaped"
        );
        child.wait().expect("wait");
        assert!(live_process_start_time(std::process::id()).is_ok());
    }

    #[test]
    fn start_time_of_a_dead_process_is_not_found() {
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        child.wait().expect("wait");
        let err = process_start_time(pid).expect_err("reaped");
        assert!(err.is_not_found(), "{err}");
        assert!(
            err.to_string().contains(&format!("/proc/{pid}/stat")),
            "{err}"
        );
    }
}
