//! The records of replacements gated on health, in the state directory.
//!
//! A replacement of a service that has a health check keeps the old
//! container set aside (`<name>.replaced`, stopped, holding its volumes)
//! until the new one is healthy. The containers alone cannot say what a
//! kill in the middle left: `web` beside `web.replaced` is also what a
//! replace without a check leaves between its create and its removal. So
//! two documents per container name, each written atomically:
//!
//! | document | written | removed | what the next apply does with it |
//! |---|---|---|---|
//! | `rollout.<name>.json` ([`Rollout`]) | before the old one is stopped | once the old one is removed or back | the new one is judged again with what is left of its bound; healthy: done, else put back |
//! | `refused.<name>.json` ([`Refused`]) | before a roll back acts | once the declaration no longer asks for that identity | that definition is not tried again (`status` needs attention); one set aside with no container under its name is put back |
//!
//! Both are keyed by container name; concurrent services of one apply
//! write distinct documents, under the apply lock. A declaration that
//! moves on while a replacement is in flight never replaces it before it
//! is settled: a replace finding `<name>.replaced` beside the container
//! takes it for the leftover of a plain replace and removes it.
//!
//! They are read as the store reads what it does not trust (never
//! through a link, regular files only, at most [`MAX_RECORD_BYTES`]); one
//! that cannot be read ([`Unreadable`]) is named, never quoted, and leaves
//! its service alone (neither replaced nor put back: which of its two
//! containers is the good one is not known) while every other service is
//! applied, until an operator removes it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::store::Store;

const ROLLOUT: &str = "rollout.";
const REFUSED: &str = "refused.";

/// A health-gated replacement in flight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Rollout {
    /// The resource.
    pub id: String,
    /// The identity digest of the new definition.
    pub identity: String,
    /// When the replacement began (the bound counts from the new
    /// container's start, never before this).
    pub started: DateTime<Utc>,
    /// Its `rollback-after`, in seconds (the check's start period is
    /// added, read from the new container).
    pub rollback_after: u64,
}

impl Rollout {
    /// Its bound past the check's start period.
    pub fn rollback_after(&self) -> Duration {
        Duration::from_secs(self.rollback_after)
    }
}

/// A definition a roll back refused: not tried again while declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Refused {
    /// The resource.
    pub id: String,
    /// The identity digest of the refused definition.
    pub identity: String,
    /// Its image.
    pub image: String,
    /// Why it was rolled back (`not healthy after 90 s: …`).
    pub reason: String,
    /// When.
    pub at: DateTime<Utc>,
}

fn doc(prefix: &str, name: &str) -> String {
    format!("{prefix}{name}")
}

/// Record `rollout` of container `name`.
pub fn begin(store: &Store, name: &str, rollout: &Rollout) -> Result<(), String> {
    store
        .save(&doc(ROLLOUT, name), rollout)
        .map_err(|e| format!("cannot record the replacement of {name}: {e}"))
}

/// The replacement of `name` is over (done or put back).
pub fn end(store: &Store, name: &str) {
    remove(store, &doc(ROLLOUT, name));
}

/// Remember that `name`'s definition `refused.identity` was rolled back.
pub fn refuse(store: &Store, name: &str, refused: &Refused) -> Result<(), String> {
    store
        .save(&doc(REFUSED, name), refused)
        .map_err(|e| format!("cannot record the roll back of {name}: {e}"))
}

/// Forget the refusal of `name`'s definition (the declaration moved on).
pub fn forget_refused(store: &Store, name: &str) {
    remove(store, &doc(REFUSED, name));
}

/// The most a record is read of: a real one is a few hundred bytes.
pub const MAX_RECORD_BYTES: u64 = 64 * 1024;

/// A record file that cannot be read: never guessed around. The service
/// it is about (by container name) is left alone, neither replaced nor put
/// back, until an operator removes the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The file.
    pub path: PathBuf,
    /// Why (its kind, size or the place where it stops parsing: never its
    /// content).
    pub why: String,
}

/// The records of one kind, by container name, and those of them that
/// cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Records<T> {
    /// Each readable record.
    pub found: BTreeMap<String, T>,
    /// Each record that cannot be read.
    pub unreadable: BTreeMap<String, Unreadable>,
}

impl<T> Default for Records<T> {
    fn default() -> Self {
        Records {
            found: BTreeMap::new(),
            unreadable: BTreeMap::new(),
        }
    }
}

impl Records<Rollout> {
    /// What is said of container `name` whose replacement record cannot
    /// be read, with what to do about it.
    pub fn problem(&self, name: &str) -> Option<String> {
        self.unreadable.get(name).map(|u| {
            format!(
                "{} (the record of a health-gated replace of {name}) cannot be read: {}; {name} \
                 is left alone, neither replaced nor put back, until the file is removed: first \
                 see with `docker ps -a` which of {name} and {} should run, keep that one under \
                 {name}, then remove the file",
                u.path.display(),
                u.why,
                crate::runtime::replaced_name(name)
            )
        })
    }
}

impl Records<Refused> {
    /// What is said of container `name` whose refusal record cannot be
    /// read, with what to do about it.
    pub fn problem(&self, name: &str) -> Option<String> {
        self.unreadable.get(name).map(|u| {
            format!(
                "{} (the record of a roll back of {name}) cannot be read: {}; {name} is left \
                 alone, never replaced, until the file is removed (which lets the declared \
                 definition be tried again)",
                u.path.display(),
                u.why
            )
        })
    }
}

/// Every replacement in flight, by container name, and the records that
/// cannot be read. `Err`: the state directory cannot be listed.
pub fn scan_in_flight(store: &Store) -> Result<Records<Rollout>, String> {
    scan(store, ROLLOUT)
}

/// Every refused definition, by container name, and the records that
/// cannot be read. `Err`: the state directory cannot be listed.
pub fn scan_refused(store: &Store) -> Result<Records<Refused>, String> {
    scan(store, REFUSED)
}

/// Every replacement in flight, by container name; `Err` naming the
/// first record that cannot be read.
pub fn in_flight(store: &Store) -> Result<BTreeMap<String, Rollout>, String> {
    whole(scan_in_flight(store)?)
}

/// Every refused definition, by container name; `Err` naming the first
/// record that cannot be read (a reader that needs all of them, such as
/// `update`'s skipping of refused digests, must not miss one silently).
pub fn refused(store: &Store) -> Result<BTreeMap<String, Refused>, String> {
    whole(scan_refused(store)?)
}

fn whole<T>(records: Records<T>) -> Result<BTreeMap<String, T>, String> {
    match records.unreadable.values().next() {
        None => Ok(records.found),
        Some(u) => Err(format!("{} cannot be read: {}", u.path.display(), u.why)),
    }
}

fn scan<T: serde::de::DeserializeOwned>(store: &Store, prefix: &str) -> Result<Records<T>, String> {
    let root = store.root();
    let dir = match std::fs::read_dir(root) {
        Ok(dir) => dir,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Records::default()),
        Err(e) => return Err(format!("cannot list {}: {e}", root.display())),
    };
    let mut records = Records::default();
    for entry in dir {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", root.display()))?;
        let file = entry.file_name();
        // A temporary file (`.rollout.web.json.<pid>.<n>.tmp`) starts
        // with a dot: never read.
        let Some(name) = file
            .to_str()
            .and_then(|f| f.strip_prefix(prefix))
            .and_then(|f| f.strip_suffix(".json"))
        else {
            continue;
        };
        let path = root.join(&file);
        match read_record(&path) {
            Ok(None) => {}
            Ok(Some(value)) => {
                records.found.insert(name.to_string(), value);
            }
            Err(why) => {
                records
                    .unreadable
                    .insert(name.to_string(), Unreadable { path, why });
            }
        }
    }
    Ok(records)
}

/// Read one record as the store reads what it does not trust
/// ([`crate::store::open_config`], [`crate::store::read_config`]): never
/// through a link, only a regular file, at most [`MAX_RECORD_BYTES`];
/// `Ok(None)` when it is gone. The error never quotes the file.
fn read_record<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, String> {
    let file = match crate::store::open_config(rustix::fs::CWD, path) {
        Ok(Some(file)) => file,
        Ok(None) => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let bytes = crate::store::read_config(file, MAX_RECORD_BYTES).map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidData {
            e.to_string()
        } else {
            format!("cannot read it: {e}")
        }
    })?;
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        // serde's message may quote a field or value of the file: only
        // its kind and place are said.
        let kind = match e.classify() {
            serde_json::error::Category::Io => "cannot read it",
            serde_json::error::Category::Syntax => "not JSON",
            serde_json::error::Category::Data => {
                "not such a record (a field missing, unknown or of another type)"
            }
            serde_json::error::Category::Eof => "cut short",
        };
        format!("{kind} (line {}, column {})", e.line(), e.column())
    })
}

fn remove(store: &Store, name: &str) {
    let Ok(path) = store.document_path(name) else {
        return;
    };
    match std::fs::remove_file(&path) {
        Ok(()) => {
            if let Err(e) = crate::store::fsync_dir(store.root()) {
                tracing::warn!("cannot sync {}: {e}", store.root().display());
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!("cannot remove {}: {e}", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_kept_per_container_until_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        assert!(in_flight(&store).expect("read").is_empty());
        let rollout = Rollout {
            id: "web".into(),
            identity: "abc".into(),
            started: DateTime::from_timestamp(1_800_000_000, 0).expect("time"),
            rollback_after: 90,
        };
        begin(&store, "web", &rollout).expect("begin");
        begin(&store, "db.1", &rollout).expect("begin");
        let found = in_flight(&store).expect("read");
        assert_eq!(found.keys().collect::<Vec<_>>(), ["db.1", "web"]);
        assert_eq!(found["web"], rollout);
        end(&store, "web");
        end(&store, "web");
        assert_eq!(
            in_flight(&store).expect("read").keys().collect::<Vec<_>>(),
            ["db.1"]
        );
        let refused_web = Refused {
            id: "web".into(),
            identity: "abc".into(),
            image: "img".into(),
            reason: "not healthy after 9 s: boom".into(),
            at: rollout.started,
        };
        refuse(&store, "web", &refused_web).expect("refuse");
        assert_eq!(refused(&store).expect("read")["web"], refused_web);
        assert!(
            in_flight(&store).expect("read").len() == 1,
            "refusals are not rollouts"
        );
        forget_refused(&store, "web");
        assert!(refused(&store).expect("read").is_empty());
    }

    fn rollout() -> Rollout {
        Rollout {
            id: "web".into(),
            identity: "abc".into(),
            started: DateTime::from_timestamp(1_800_000_000, 0).expect("time"),
            rollback_after: 90,
        }
    }

    /// A secret-looking marker a bad file carries: never said back.
    const MARK: &str = "s3cr3t-Mark";

    #[test]
    fn a_bad_record_is_named_for_its_service_alone_and_never_quoted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        begin(&store, "good", &rollout()).expect("begin");
        let root = dir.path();
        let huge = format!("{{\"id\": \"{}\"}}", MARK.repeat(10_000));
        let bad: [(&str, &[u8]); 5] = [
            ("garbage", MARK.as_bytes()),
            ("huge", huge.as_bytes()),
            ("schema", br#"{"id": "web", "s3cr3t-Mark": 1}"#),
            (
                "types",
                br#"{"id": "s3cr3t-Mark", "identity": 1, "started": "x", "rollback-after": 2}"#,
            ),
            ("cut", br#"{"id": "s3cr3t-Mark", "#),
        ];
        for (name, bytes) in bad {
            std::fs::write(root.join(format!("rollout.{name}.json")), bytes).expect("write");
        }
        // A link to a readable record, a directory, a FIFO.
        std::os::unix::fs::symlink(
            root.join("rollout.good.json"),
            root.join("rollout.link.json"),
        )
        .expect("symlink");
        std::fs::create_dir(root.join("rollout.dir.json")).expect("mkdir");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("rollout.fifo.json"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");

        let scan = scan_in_flight(&store).expect("listed");
        assert_eq!(scan.found.keys().collect::<Vec<_>>(), ["good"]);
        assert_eq!(
            scan.unreadable.keys().collect::<Vec<_>>(),
            ["cut", "dir", "fifo", "garbage", "huge", "link", "schema", "types"]
        );
        for (name, u) in &scan.unreadable {
            assert!(!u.why.contains(MARK), "{name}: {}", u.why);
            let said = scan.problem(name).expect("a problem");
            assert!(!said.contains(MARK), "{said}");
            assert!(
                said.contains(&format!("rollout.{name}.json"))
                    && said.contains(&format!("{name} is left alone"))
                    && said.contains("remove the file"),
                "{said}"
            );
        }
        assert!(scan.unreadable["link"].why.contains("symbolic link"));
        assert!(scan.unreadable["dir"].why.contains("a directory"));
        assert!(scan.unreadable["fifo"].why.contains("a FIFO"));
        assert!(scan.unreadable["huge"].why.contains("larger than"));
        assert!(scan.unreadable["schema"]
            .why
            .starts_with("not such a record"));
        assert!(scan.problem("good").is_none());
        // Whoever needs them all is told which file stands in the way.
        let err = in_flight(&store).expect_err("one is unreadable");
        assert!(err.contains("rollout.cut.json"), "{err}");
        // A refusal record is read the same way, and is not a rollout.
        std::fs::write(root.join("refused.web.json"), MARK).expect("write");
        let refused = scan_refused(&store).expect("listed");
        assert!(refused.found.is_empty());
        let said = refused.problem("web").expect("a problem");
        assert!(
            said.contains("refused.web.json") && !said.contains(MARK),
            "{said}"
        );
    }

    proptest::proptest! {
        /// Whatever bytes a record file holds, reading it ends in a
        /// record or in a reason that quotes none of it.
        #[test]
        fn any_file_reads_as_a_record_or_an_unquoted_reason(
            before in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
            after in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
            quoted in proptest::bool::ANY,
        ) {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = Store::open(dir.path()).expect("store");
            let mark = if quoted { format!("\"{MARK}\"") } else { MARK.to_string() };
            let mut bytes = before;
            bytes.extend_from_slice(mark.as_bytes());
            bytes.extend(after);
            std::fs::write(dir.path().join("rollout.web.json"), &bytes).expect("write");
            let scan = scan_in_flight(&store).expect("listed");
            match scan.unreadable.get("web") {
                Some(u) => proptest::prop_assert!(!u.why.contains(MARK), "{}", u.why),
                None => proptest::prop_assert!(scan.found.contains_key("web")),
            }
        }

        /// Every record written reads back as it was.
        #[test]
        fn every_record_written_reads_back(
            id in "[a-z][a-z0-9_.-]{0,30}",
            identity in "[0-9a-f]{64}",
            secs in 0i64..4_000_000_000,
            after in 1u64..100_000,
        ) {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = Store::open(dir.path()).expect("store");
            let written = Rollout {
                id,
                identity,
                started: DateTime::from_timestamp(secs, 0).expect("time"),
                rollback_after: after,
            };
            begin(&store, "web", &written).expect("begin");
            let scan = scan_in_flight(&store).expect("listed");
            proptest::prop_assert_eq!(scan.found.get("web"), Some(&written));
            proptest::prop_assert!(scan.unreadable.is_empty());
        }
    }
}
