//! The window record: the on-disk proof that a maintenance window is open, so
//! that a daemon that died mid-window is followed by one that closes it, and
//! every apply on the machine knows which containers to leave alone.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[cfg(test)]
use crate::store::process_start_time;
use crate::store::{boot_id, live_process_start_time, StoreError};

use super::budget::CLOSE_BUDGET;

/// The bound of a window whose step has no timeout: opened longer ago than
/// this (and its owner gone) it holds nothing, so a record that was never
/// erased cannot keep a service down for good.
pub const WINDOW_MAX_AGE: Duration = Duration::from_secs(6 * 60 * 60);

/// How often an owner renews its lease on the windows it holds.
pub const LEASE_RENEW: Duration = Duration::from_secs(5);

/// How long a lease may go unrenewed before its window is taken over.
pub const LEASE_LAPSE: Duration = Duration::from_secs(30);

/// The record format version this host writes and reads.
pub const WINDOW_RECORD_VERSION: u32 = 1;

/// One open maintenance window, as written to `windows/<step>.json` before the
/// first held container is stopped and erased after the last is started.
///
/// JSON (kebab-case, `"record": 1` first); a record of another version is
/// refused rather than half-understood.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "WireRecord", into = "WireRecord")]
pub struct WindowRecord {
    /// The step's resource id.
    pub step: String,
    /// The step's module, if the declaration gives one.
    pub module: Option<String>,
    /// The due time that fired (or the time of a manual fire).
    pub fire_time: DateTime<Utc>,
    /// When the window was opened (just before the first stop).
    pub opened_at: DateTime<Utc>,
    /// The boot the window was opened in (see [`boot_id`]).
    pub boot_id: String,
    /// The process that opened the window and is expected to close it.
    pub pid: u32,
    /// That process's start time (see [`crate::store::process_start_time`]), so a recycled
    /// pid is not taken for the owner.
    pub pid_start_time: u64,
    /// The runtime name of the step's container.
    pub step_container: String,
    /// The step's `timeout` in seconds, so that whoever resumes the window
    /// ends a step that outlives it (absent in records without one).
    pub step_timeout_secs: Option<u64>,
    /// Seconds since boot (`CLOCK_BOOTTIME`, which no wall-clock step
    /// moves) when the window was opened: a window's age is measured on it
    /// (absent in older records: then on the wall clock).
    pub opened_since_boot_secs: Option<u64>,
    /// Seconds since boot (`CLOCK_BOOTTIME`) when the owner last renewed
    /// its lease on the window ([`LEASE_RENEW`]): a window whose lease has
    /// lapsed for [`LEASE_LAPSE`] is taken over even though its owner's
    /// process exists (absent in older records: only the owner's death
    /// frees those).
    pub lease_since_boot_secs: Option<u64>,
    /// The close ran out of its budget while the container runtime did not
    /// answer: the containers still listed are owed a start, made as soon
    /// as the runtime answers again (already alerted).
    pub owed: bool,
    /// The containers named by `while-stopped`, in the order they are stopped
    /// (they are started again in reverse).
    pub held: Vec<HeldContainer>,
}

/// A container named by a step's `while-stopped`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct HeldContainer {
    /// The container's resource id.
    pub id: String,
    /// The container's runtime name.
    pub name: String,
    /// Whether it was running when the window opened. Only those are held
    /// (stopped, then started again); one that was already stopped is left
    /// stopped when the window closes.
    pub was_running: bool,
    /// The close of this window found, under `windows.lock`, that no other
    /// window of its boot holds the container, and is starting it again:
    /// it no longer keeps the container stopped, and no other window
    /// counts it as a hold it shares (one opening waits for the start).
    /// Whoever closes this record (its owner, or a taker after a crash)
    /// starts it. Absent in records written before holds were counted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub starting: bool,
}

/// A moment as window records are measured against it: the wall clock,
/// the boot, and the time since boot (which no wall-clock step moves).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moment {
    /// Wall-clock time.
    pub wall: DateTime<Utc>,
    /// `/proc/sys/kernel/random/boot_id`.
    pub boot_id: String,
    /// Time since boot (`CLOCK_BOOTTIME`), when it could be read.
    pub since_boot: Option<Duration>,
}

impl WindowRecord {
    /// How long this window may stay open: its step's timeout plus the
    /// closing budget, or [`WINDOW_MAX_AGE`] when the step has no timeout.
    pub fn bound(&self) -> Duration {
        match self.step_timeout_secs {
            Some(t) => Duration::from_secs(t).saturating_add(CLOSE_BUDGET),
            None => WINDOW_MAX_AGE,
        }
    }

    /// How long the window has been open at `at` (same boot assumed):
    /// measured on the time since boot when both sides have it, so that a
    /// wall-clock step changes nothing; otherwise on the wall clock, both
    /// ways (a record stamped in the future is as old as it is far).
    pub fn age(&self, at: &Moment) -> Duration {
        if let (Some(opened), Some(now)) = (self.opened_since_boot_secs, at.since_boot) {
            return now.saturating_sub(Duration::from_secs(opened));
        }
        at.wall
            .signed_duration_since(self.opened_at)
            .abs()
            .to_std()
            .unwrap_or(Duration::MAX)
    }

    /// Whether this window still holds its containers by age alone: of
    /// this boot and not older than its [bound](Self::bound). A window
    /// from another boot holds nothing. Past its bound a window still
    /// holds while its owner lives or its step still runs: callers that
    /// can check those do ([`Self::owner_alive`]); age alone never
    /// releases a window whose step still runs.
    pub fn within_bound(&self, at: &Moment) -> bool {
        self.boot_id == at.boot_id && self.age(at) <= self.bound()
    }

    /// Whether this window holds its containers at `now` on the boot
    /// `current_boot`: of this boot, and within its bound (measured on the
    /// time since boot) or its owner still alive.
    pub fn holds(&self, now: DateTime<Utc>, current_boot: &str) -> bool {
        self.holds_at(&Moment {
            wall: now,
            boot_id: current_boot.to_string(),
            since_boot: Some(crate::clock::since_boot()),
        })
    }

    /// Whether the owner's lease on this window has lapsed at `at`: of this
    /// boot, renewed last more than [`LEASE_LAPSE`] ago. A record without
    /// a lease (written by an older host), or a moment without the time
    /// since boot, never lapses.
    ///
    /// `last_beat` is the owner's heartbeat ([`super::heartbeat::Heartbeats::last`]),
    /// renewed without `windows.lock`: a lease is renewed at the later of
    /// the two, so time the owner spent waiting for the lock never counts
    /// against it.
    pub fn lease_lapsed(&self, at: &Moment, last_beat: Option<u64>) -> bool {
        self.lease_left(at, last_beat)
            .is_some_and(|left| left.is_zero())
    }

    /// How long until the lease lapses (zero once it has); `None` when it
    /// never does (see [`Self::lease_lapsed`]).
    pub fn lease_left(&self, at: &Moment, last_beat: Option<u64>) -> Option<Duration> {
        if self.boot_id != at.boot_id {
            return None;
        }
        let record = self.lease_since_boot_secs?;
        let renewed = Duration::from_secs(record.max(last_beat.unwrap_or(0)));
        let now = at.since_boot?;
        let idle = now.saturating_sub(renewed);
        Some(LEASE_LAPSE.saturating_sub(idle))
    }

    /// Whether `other` is this same window held by the same owner: the
    /// same step, opening and owner (its lease may have been renewed
    /// since). What an owner checks before it acts on its window, and what
    /// is compared before a record is erased.
    pub fn same_window_and_owner(&self, other: &WindowRecord) -> bool {
        self.step == other.step
            && self.opened_at == other.opened_at
            && self.fire_time == other.fire_time
            && self.boot_id == other.boot_id
            && self.pid == other.pid
            && self.pid_start_time == other.pid_start_time
    }

    /// [`Self::holds`] at a given moment.
    pub fn holds_at(&self, at: &Moment) -> bool {
        self.boot_id == at.boot_id && (self.within_bound(at) || self.owner_alive())
    }

    /// The name of the fire this window opened for (`MESH_FIRE`, as its
    /// events carry it): the name of the fire's scope, as the scheduler
    /// names its fires.
    pub fn fire_name(&self) -> String {
        crate::systemd::units::scope_name(&self.step, self.fire_time)
    }

    /// Runtime names of the containers this window holds: those that were
    /// running when it opened, in the order they were stopped.
    pub fn held_names(&self) -> impl Iterator<Item = &str> {
        self.held
            .iter()
            .filter(|c| c.was_running)
            .map(|c| c.name.as_str())
    }

    /// Whether this window keeps `name` stopped: it holds it and has not
    /// begun starting it again. Holds are counted across the records of a
    /// boot: a container stays stopped while any record keeps it so.
    pub fn keeps_stopped(&self, name: &str) -> bool {
        self.held
            .iter()
            .any(|c| c.was_running && !c.starting && c.name == name)
    }

    /// Whether the close of this window is starting `name` again.
    pub fn is_starting(&self, name: &str) -> bool {
        self.held
            .iter()
            .any(|c| c.was_running && c.starting && c.name == name)
    }

    /// Whether the process that opened the window is still alive: same boot,
    /// and `pid` exists with the recorded start time. Only a definite
    /// answer is a death: no such process, another process under that pid,
    /// another boot. An error reading `/proc` that says nothing of the
    /// process (`EMFILE`, `ENFILE`, `ENOMEM`, `EACCES`) is logged and taken
    /// as alive: the owner's lease ([`Self::lease_lapsed`]) still frees a
    /// window whose owner no longer renews it.
    pub fn owner_alive(&self) -> bool {
        self.owner_alive_with(boot_id, live_process_start_time)
    }

    /// [`Self::owner_alive`] reading the boot id and a process's start
    /// time through `boot` and `start` (the kernel's, or a test's).
    fn owner_alive_with(
        &self,
        boot: impl FnOnce() -> Result<String, StoreError>,
        start: impl FnOnce(u32) -> Result<u64, StoreError>,
    ) -> bool {
        let boot = match boot() {
            Ok(boot) => boot,
            Err(err) => {
                tracing::warn!(step = %self.step, "cannot tell whether the window owner is alive, taken as alive: {err}");
                return true;
            }
        };
        if boot != self.boot_id || self.pid == 0 {
            return false;
        }
        match start(self.pid) {
            Ok(start) => start == self.pid_start_time,
            Err(err) if err.is_not_found() => false,
            Err(err) => {
                tracing::warn!(step = %self.step, "cannot tell whether the window owner is alive, taken as alive: {err}");
                true
            }
        }
    }
}

/// The JSON shape of a [`WindowRecord`], with its version.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct WireRecord {
    record: u32,
    step: String,
    module: Option<String>,
    fire_time: DateTime<Utc>,
    opened_at: DateTime<Utc>,
    boot_id: String,
    pid: u32,
    pid_start_time: u64,
    step_container: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    step_timeout_secs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    opened_since_boot_secs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lease_since_boot_secs: Option<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    owed: bool,
    held: Vec<HeldContainer>,
}

impl TryFrom<WireRecord> for WindowRecord {
    type Error = String;

    fn try_from(w: WireRecord) -> Result<Self, String> {
        if w.record != WINDOW_RECORD_VERSION {
            return Err(format!(
                "window record version {} is not understood (this host reads version {WINDOW_RECORD_VERSION})",
                w.record
            ));
        }
        Ok(WindowRecord {
            step: w.step,
            module: w.module,
            fire_time: w.fire_time,
            opened_at: w.opened_at,
            boot_id: w.boot_id,
            pid: w.pid,
            pid_start_time: w.pid_start_time,
            step_container: w.step_container,
            step_timeout_secs: w.step_timeout_secs,
            opened_since_boot_secs: w.opened_since_boot_secs,
            lease_since_boot_secs: w.lease_since_boot_secs,
            owed: w.owed,
            held: w.held,
        })
    }
}

impl From<WindowRecord> for WireRecord {
    fn from(r: WindowRecord) -> Self {
        WireRecord {
            record: WINDOW_RECORD_VERSION,
            step: r.step,
            module: r.module,
            fire_time: r.fire_time,
            opened_at: r.opened_at,
            boot_id: r.boot_id,
            pid: r.pid,
            pid_start_time: r.pid_start_time,
            step_container: r.step_container,
            step_timeout_secs: r.step_timeout_secs,
            opened_since_boot_secs: r.opened_since_boot_secs,
            lease_since_boot_secs: r.lease_since_boot_secs,
            owed: r.owed,
            held: r.held,
        }
    }
}

/// The file name (without directory) of the record for `step`.
///
/// Resource ids are letters, digits, `-`, `_` and `.`; those stay as they
/// are, except a leading `.` (which would hide the file, or make `.`/`..`).
/// Any other byte becomes `%XX`, `%` included, so the mapping is one-to-one
/// and never yields a path separator.
pub fn window_file_name(step: &str) -> Result<String, StoreError> {
    if step.is_empty() {
        return Err(StoreError::InvalidName {
            name: step.to_owned(),
            reason: "empty step id",
        });
    }
    let mut out = String::with_capacity(step.len() + 5);
    for (i, b) in step.bytes().enumerate() {
        let keep = b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || (b == b'.' && i > 0);
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out.push_str(".json");
    // Well under NAME_MAX (255), leaving room for the temporary file's
    // longer name during a write.
    if out.len() > 200 {
        return Err(StoreError::InvalidName {
            name: step.to_owned(),
            reason: "step id too long for a file name",
        });
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use chrono::TimeZone;

    pub(crate) fn sample(boot: &str) -> WindowRecord {
        WindowRecord {
            step: "db-backup".into(),
            module: Some("db".into()),
            fire_time: Utc
                .with_ymd_and_hms(2026, 3, 29, 2, 30, 0)
                .single()
                .expect("valid"),
            opened_at: Utc
                .with_ymd_and_hms(2026, 3, 29, 2, 30, 1)
                .single()
                .expect("valid"),
            boot_id: boot.into(),
            pid: std::process::id(),
            pid_start_time: process_start_time(std::process::id()).expect("own start time"),
            step_container: "mesh-db-backup".into(),
            step_timeout_secs: Some(3600),
            opened_since_boot_secs: None,
            lease_since_boot_secs: None,
            owed: false,
            held: vec![
                HeldContainer {
                    id: "db".into(),
                    name: "mesh-db".into(),
                    was_running: true,
                    starting: false,
                },
                HeldContainer {
                    id: "db-replica".into(),
                    name: "mesh-db-replica".into(),
                    was_running: false,
                    starting: false,
                },
                HeldContainer {
                    id: "cache".into(),
                    name: "mesh-cache".into(),
                    was_running: true,
                    starting: false,
                },
            ],
        }
    }

    #[test]
    fn json_round_trip_with_version() {
        let rec = sample("b1");
        let json = serde_json::to_value(&rec).expect("serialize");
        assert_eq!(json["record"], 1);
        assert_eq!(json["step-container"], "mesh-db-backup");
        assert_eq!(json["fire-time"], "2026-03-29T02:30:00Z");
        assert_eq!(json["held"][1]["was-running"], false);
        let back: WindowRecord = serde_json::from_value(json).expect("deserialize");
        assert_eq!(back, rec);
    }

    #[test]
    fn other_versions_and_missing_version_are_refused() {
        let mut json = serde_json::to_value(sample("b1")).expect("serialize");
        json["record"] = 2.into();
        let err = serde_json::from_value::<WindowRecord>(json.clone()).expect_err("v2");
        assert!(
            err.to_string().contains("version 2 is not understood"),
            "{err}"
        );
        json.as_object_mut().expect("object").remove("record");
        let err = serde_json::from_value::<WindowRecord>(json).expect_err("no version");
        assert!(err.to_string().contains("missing field `record`"), "{err}");
    }

    fn moment(wall: DateTime<Utc>, boot: &str, since_boot: Option<u64>) -> Moment {
        Moment {
            wall,
            boot_id: boot.into(),
            since_boot: since_boot.map(Duration::from_secs),
        }
    }

    #[test]
    fn a_window_is_bounded_by_its_timeout_plus_the_closing_budget() {
        let rec = sample("boot-a");
        assert_eq!(rec.bound(), Duration::from_secs(3600 + 300));
        let none = WindowRecord {
            step_timeout_secs: None,
            ..rec.clone()
        };
        assert_eq!(none.bound(), WINDOW_MAX_AGE);
        // A timeout longer than six hours is honoured: the bound follows it.
        let long = WindowRecord {
            step_timeout_secs: Some(10 * 3600),
            ..rec
        };
        assert_eq!(long.bound(), Duration::from_secs(10 * 3600 + 300));
    }

    #[test]
    fn without_a_boot_clock_the_age_is_on_the_wall_clock_both_ways() {
        let rec = sample("boot-a");
        let opened = rec.opened_at;
        let bound = chrono::Duration::seconds(3900);
        let second = chrono::Duration::seconds(1);
        let at = |w| moment(w, "boot-a", None);
        assert!(rec.within_bound(&at(opened)));
        assert!(rec.within_bound(&at(opened + bound)));
        assert!(!rec.within_bound(&at(opened + bound + second)));
        assert!(!rec.within_bound(&at(opened + chrono::Duration::days(3))));
        assert!(!rec.within_bound(&moment(opened, "boot-b", None)));
        // Clock stepped back a little: still open; far back: holds nothing.
        assert!(rec.within_bound(&at(opened - chrono::Duration::minutes(10))));
        assert!(!rec.within_bound(&at(opened - bound - second)));
    }

    #[test]
    fn a_wall_clock_jump_does_not_age_a_window_measured_since_boot() {
        let rec = WindowRecord {
            opened_since_boot_secs: Some(1000),
            ..sample("boot-a")
        };
        let opened = rec.opened_at;
        // The wall clock jumped a day forward one minute after opening.
        let jumped = moment(opened + chrono::Duration::days(1), "boot-a", Some(1060));
        assert_eq!(rec.age(&jumped), Duration::from_secs(60));
        assert!(rec.within_bound(&jumped));
        // And back: no younger than zero.
        let back = moment(opened - chrono::Duration::days(1), "boot-a", Some(1060));
        assert!(rec.within_bound(&back));
        // Time since boot does pass: past the bound, by age it holds nothing.
        let late = moment(opened, "boot-a", Some(1000 + 3900 + 1));
        assert!(!rec.within_bound(&late));
        assert!(!rec.within_bound(&moment(opened, "boot-b", Some(1060))));
    }

    #[test]
    fn past_its_bound_a_window_still_holds_while_its_owner_lives() {
        let boot = boot_id().expect("boot id");
        let rec = WindowRecord {
            opened_since_boot_secs: Some(0),
            step_timeout_secs: Some(0),
            ..sample(&boot)
        };
        // Opened at boot with a bound of five minutes, looked at long past
        // it: this process owns it, so it holds.
        let far = moment(rec.opened_at, &boot, Some(10_000));
        assert!(rec.holds_at(&far));
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        child.wait().expect("wait");
        let orphan = WindowRecord { pid, ..rec };
        assert!(!orphan.holds_at(&far), "past its bound, owner gone");
        assert!(orphan.holds_at(&moment(orphan.opened_at, &boot, Some(200))));
        assert!(!orphan.holds_at(&moment(orphan.opened_at, "another-boot", Some(200))));
    }

    #[test]
    fn held_names_are_the_running_ones_in_stop_order() {
        let rec = sample("b");
        assert_eq!(
            rec.held_names().collect::<Vec<_>>(),
            vec!["mesh-db", "mesh-cache"]
        );
    }

    #[test]
    fn owner_alive_for_this_process_only() {
        let boot = boot_id().expect("boot id");
        let rec = sample(&boot);
        assert!(rec.owner_alive(), "this process owns it");

        let recycled = WindowRecord {
            pid_start_time: rec.pid_start_time + 1,
            ..rec.clone()
        };
        assert!(!recycled.owner_alive(), "same pid, other start time");

        let other_boot = WindowRecord {
            boot_id: "00000000-0000-0000-0000-000000000000".into(),
            ..rec.clone()
        };
        assert!(!other_boot.owner_alive(), "another boot");

        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        child.wait().expect("wait");
        let dead = WindowRecord { pid, ..rec };
        assert!(!dead.owner_alive(), "reaped pid {pid}");
    }

    #[test]
    fn an_error_reading_proc_is_never_taken_for_the_owners_death() {
        // Only the kernel makes /proc fail with EMFILE (a process out of
        // descriptors) or ENOMEM: the readers are given here, as a
        // descriptor-starved process would see them.
        let boot = boot_id().expect("boot id");
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        child.wait().expect("wait");
        let rec = WindowRecord {
            pid,
            ..sample(&boot)
        };
        let emfile =
            |what: &str| StoreError::io("read", what, std::io::Error::from_raw_os_error(24));
        let here = || Ok(boot.clone());
        assert!(rec.owner_alive_with(here, |_| Err(emfile("/proc/N/stat"))));
        assert!(rec.owner_alive_with(|| Err(emfile("/proc/sys/kernel/random/boot_id")), |_| Ok(1)));
        let enomem = StoreError::io(
            "read",
            "/proc/N/stat",
            std::io::Error::from_raw_os_error(12),
        );
        assert!(rec.owner_alive_with(here, |_| Err(enomem)));
        // A definite answer still is one: no such process, another
        // process under the pid.
        assert!(!rec.owner_alive(), "reaped pid {pid}");
        let gone = StoreError::io("read", "/proc/N/stat", std::io::Error::from_raw_os_error(2));
        assert!(!rec.owner_alive_with(here, |_| Err(gone)));
        assert!(!rec.owner_alive_with(here, |_| Ok(rec.pid_start_time + 1)));
        assert!(rec.owner_alive_with(here, |_| Ok(rec.pid_start_time)));
    }

    #[test]
    fn a_lease_lapses_thirty_seconds_after_its_last_renewal_on_this_boot_only() {
        let rec = WindowRecord {
            lease_since_boot_secs: Some(1000),
            ..sample("boot-a")
        };
        let at = |secs| moment(rec.opened_at, "boot-a", Some(secs));
        assert!(!rec.lease_lapsed(&at(1000), None));
        assert_eq!(
            rec.lease_left(&at(1010), None),
            Some(Duration::from_secs(20))
        );
        assert!(!rec.lease_lapsed(&at(1029), None));
        assert!(rec.lease_lapsed(&at(1030), None));
        assert!(rec.lease_lapsed(&at(5000), None));
        assert!(!rec.lease_lapsed(&moment(rec.opened_at, "boot-b", Some(5000)), None));
        assert!(!rec.lease_lapsed(&moment(rec.opened_at, "boot-a", None), None));
        // A record of an older host has no lease: it never lapses.
        let old = WindowRecord {
            lease_since_boot_secs: None,
            ..rec.clone()
        };
        assert!(!old.lease_lapsed(&at(5000), None));
        // The owner's heartbeat, renewed without the lock, counts when it
        // is the later of the two; an older one changes nothing.
        assert!(!rec.lease_lapsed(&at(1030), Some(1020)));
        assert_eq!(
            rec.lease_left(&at(1030), Some(1020)),
            Some(Duration::from_secs(20))
        );
        assert!(rec.lease_lapsed(&at(1050), Some(1020)));
        assert!(rec.lease_lapsed(&at(1030), Some(900)));
        assert!(!old.lease_lapsed(&at(5000), Some(1)));
        // Renewing it keeps it the same window of the same owner.
        let renewed = WindowRecord {
            lease_since_boot_secs: Some(4990),
            ..rec.clone()
        };
        assert!(rec.same_window_and_owner(&renewed));
        assert!(!rec.same_window_and_owner(&WindowRecord {
            pid: rec.pid + 1,
            ..renewed
        }));
    }

    #[test]
    fn file_names_are_safe_and_one_to_one() {
        let name = |s: &str| window_file_name(s).expect("valid");
        assert_eq!(name("db-backup"), "db-backup.json");
        assert_eq!(name("a.b_c"), "a.b_c.json");
        assert_eq!(name(".."), "%2E..json");
        assert_eq!(name("a/b"), "a%2Fb.json");
        assert_eq!(name("a%2Fb"), "a%252Fb.json");
        assert_ne!(name("a/b"), name("a%2Fb"));
        assert_eq!(name("é"), "%C3%A9.json");
        assert!(matches!(
            window_file_name(""),
            Err(StoreError::InvalidName { .. })
        ));
        assert!(window_file_name(&"x".repeat(195)).is_ok());
        assert!(window_file_name(&"x".repeat(196)).is_err());
    }
}
