//! An apply of the very request the last one converged the node to,
//! recognised without validating or building anything.
//!
//! After an apply of `apply FILE` that went through the whole declaration
//! and left every resource as declared, the daemon keeps in memory what
//! that apply converged to (a [`Converged`]): the request's digest, each
//! service's identity, the `stat` of every file its containers read and of
//! the state documents. The state directory stays the record for a restart;
//! this is only what lets the next apply of the same bytes be checked
//! against the machine rather than decided from the start. That check
//! (`check`) asks the runtime for its one listing, matches each service
//! by name, and stats the files: anything not exactly as left (a container
//! removed, stopped or of another identity, a file read by a container
//! written since, a state document written by another process, an open
//! window, a leftover of an interrupted replace, an image gone, the local
//! zone changed) and the apply is decided in full, as any other.
//!
//! Files are known unchanged by `stat`: device, inode, type and mode,
//! size, modification and change times. A write changes the change time
//! (which no one can set), but to the kernel's clock tick: a file changed
//! within a second before the apply that read it is taken as unsettled,
//! and nothing is remembered (the next apply is decided in full, and
//! remembers it then). The state documents and the declaration file are
//! written atomically, a new inode each time.
//!
//! Only declarations of service containers and scheduled steps are
//! remembered: a file, directory, unit, identity, shared folder, network
//! or volume resource, a run-once step (run at every apply), a container
//! with an identity or grants (read from the account files) keep every
//! apply decided in full.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use super::report::{Action, ApplyReport, ReportLine};
use super::state::ContainerInputs;
use crate::container_spec::{LABEL_IDENTITY, LABEL_RECORD, RECORD_FORMAT};
use crate::declaration::{Declaration, MountSource, ResourceKind, Role};
use crate::runtime::{replaced_base, ContainerSummary, LABEL_MADE_AS, LABEL_RESOURCE};
use crate::schedule::step::Machine;
use crate::store::{Store, APPLIED, CONTAINER_INPUTS};
use crate::window::Windows;

/// How long before the apply that read it a file must have last changed
/// for its `stat` to prove it unchanged since (the kernel's timestamps are
/// coarser than a write).
const SETTLED: Duration = Duration::from_secs(1);

/// A file as `stat` found it (following links, as the runtime and the
/// builds resolve a path).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Absent,
    Present {
        dev: u64,
        ino: u64,
        mode: u32,
        size: u64,
        mtime: (i64, i64),
        ctime: (i64, i64),
    },
}

impl Seen {
    /// `path` now; `None`: it could not be told (the check then fails).
    fn of(path: &Path) -> Option<Seen> {
        match std::fs::metadata(path) {
            Ok(m) => Some(Seen::Present {
                dev: m.dev(),
                ino: m.ino(),
                mode: m.mode(),
                size: m.size(),
                mtime: (m.mtime(), m.mtime_nsec()),
                ctime: (m.ctime(), m.ctime_nsec()),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(Seen::Absent),
            Err(_) => None,
        }
    }

    /// Whether it last changed before `before`.
    fn changed_before(&self, before: SystemTime) -> bool {
        match self {
            Seen::Absent => true,
            // To the nanosecond: a filesystem that keeps whole seconds
            // shows a change at most a second early, so a ctime a second
            // before the apply began is still one made before it began,
            // and a change after the apply read the file shows another
            // ctime.
            Seen::Present { ctime, .. } => {
                let before = before
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or((0, 0), |d| {
                        (d.as_secs() as i64, i64::from(d.subsec_nanos()))
                    });
                *ctime < before
            }
        }
    }
}

/// What a service's container was left as.
#[derive(Debug, Clone)]
struct Service {
    name: String,
    id: String,
    identity: String,
    /// The container whose network namespace it shares (`network:
    /// "container:NAME"`): one made anew since leaves it in a namespace
    /// that is gone, which only the runtime's ids tell.
    peer: Option<String>,
}

/// What the last apply of a request converged the node to (see the module
/// documentation).
#[derive(Debug, Clone)]
pub struct Converged {
    /// SHA-256 of the request's bytes.
    request: [u8; 32],
    /// Every resource's id, in declaration order (the report's lines).
    ids: Vec<String>,
    services: Vec<Service>,
    /// Every declared container's name.
    declared: BTreeSet<String>,
    /// The scheduled steps' images, each once.
    step_images: BTreeSet<String>,
    /// Files the containers read, the declaration file, the state
    /// documents the decisions read.
    files: BTreeMap<PathBuf, Seen>,
    machine_id: String,
    local_zone: chrono_tz::Tz,
}

/// SHA-256 of a request's bytes.
fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

impl Converged {
    /// What the apply of `bytes` (validated as `decl`, installed at
    /// `declaration_file`) that answered `report` converged to, or why it
    /// is not remembered (not converged, not of a kind checked this way, a
    /// file unsettled).
    pub fn record(
        store: &Store,
        decl: &Declaration,
        report: &ApplyReport,
        bytes: &[u8],
        declaration_file: &Path,
    ) -> Result<Converged, String> {
        converged_report(decl, report)?;
        let inputs: BTreeMap<String, ContainerInputs> = store
            .load(CONTAINER_INPUTS)
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        let mut services = Vec::new();
        let mut declared = BTreeSet::new();
        let mut step_images = BTreeSet::new();
        let mut paths: BTreeSet<PathBuf> = BTreeSet::new();
        for res in &decl.resources {
            let ResourceKind::Container(c) = &res.kind else {
                return Err(format!("{} is not a container", res.id));
            };
            if c.identity.is_some() || !c.grant.is_empty() || !c.restart_on.is_empty() {
                return Err(format!("{} reads more than its files", res.id));
            }
            let name = c.name.as_str().to_string();
            match &c.role {
                Role::Service => {
                    let recorded = inputs
                        .get(&name)
                        .filter(|i| i.resource == res.id.as_str())
                        .ok_or_else(|| format!("{name}: what it was made from is not recorded"))?;
                    paths.extend(recorded.reads.keys().map(PathBuf::from));
                    services.push(Service {
                        name: name.clone(),
                        id: res.id.to_string(),
                        identity: recorded.identity.clone(),
                        peer: c
                            .network
                            .as_ref()
                            .and_then(|n| n.peer())
                            .map(|p| p.as_str().to_string()),
                    });
                }
                Role::Scheduled(_) => {
                    step_images.insert(c.image.as_str().to_string());
                }
                Role::RunOnce => return Err(format!("{} runs at every apply", res.id)),
            }
            paths.extend(c.env_files.iter().map(|f| PathBuf::from(f.as_str())));
            paths.extend(c.mounts.iter().filter_map(|m| match &m.source {
                MountSource::Path(p) => Some(PathBuf::from(p.as_str())),
                _ => None,
            }));
            declared.insert(name);
        }
        // A file read by the apply is settled when it last changed a
        // while before the apply began.
        let began = SystemTime::from(report.started_at) - SETTLED;
        let mut files = BTreeMap::new();
        for path in paths {
            let seen = Seen::of(&path).ok_or_else(|| format!("{}: cannot stat", path.display()))?;
            if !seen.changed_before(began) {
                return Err(format!("{} changed just before the apply", path.display()));
            }
            files.insert(path, seen);
        }
        for path in [
            declaration_file.to_path_buf(),
            store.root().join(APPLIED),
            store.root().join(CONTAINER_INPUTS),
        ] {
            let seen = Seen::of(&path).ok_or_else(|| format!("{}: cannot stat", path.display()))?;
            files.insert(path, seen);
        }
        let machine = Machine::read();
        Ok(Converged {
            request: digest(bytes),
            ids: decl.resources.iter().map(|r| r.id.to_string()).collect(),
            services,
            declared,
            step_images,
            files,
            machine_id: machine.machine_id,
            local_zone: machine.local_zone,
        })
    }

    /// Whether `bytes` is the request this converged to.
    pub fn is_request(&self, bytes: &[u8]) -> bool {
        self.request == digest(bytes)
    }

    /// Every resource's line: `unchanged`, in declaration order.
    pub fn lines(&self) -> Vec<ReportLine> {
        self.ids
            .iter()
            .map(|id| ReportLine::new(id.clone(), Action::Unchanged, None))
            .collect()
    }

    /// How many resources it declares.
    pub fn resources(&self) -> usize {
        self.ids.len()
    }
}

/// Whether `report` left every resource of `decl` as declared.
fn converged_report(decl: &Declaration, report: &ApplyReport) -> Result<(), String> {
    let whole = report.ok
        && report.complete
        && report.error.is_none()
        && report.halted.is_none()
        && report.warnings.is_empty()
        && report.tidy.is_empty()
        && report.windows.is_empty()
        && report.lines.len() == decl.resources.len();
    if !whole {
        return Err(format!("not converged: {}", report.summary()));
    }
    for (line, res) in report.lines.iter().zip(&decl.resources) {
        let done = matches!(
            line.action,
            Action::Created
                | Action::Unchanged
                | Action::Started
                | Action::Recreated
                | Action::Installed
        );
        if !done || line.id != res.id.as_str() {
            return Err(format!("{}: {}", line.id, line.action.as_str()));
        }
    }
    Ok(())
}

/// Whether the machine is as `converged` left it, or why it must be
/// decided in full. The caller holds the apply lock; `listing` was asked
/// for under it.
pub(crate) async fn check(
    converged: &Converged,
    windows: &Windows,
    view: &dyn crate::runtime::RuntimeView,
    listing: super::facts::InFlight,
) -> Result<(), String> {
    let checked = check_files(converged, windows);
    if let Err(why) = checked {
        listing.abort();
        return Err(why);
    }
    let listed = listing
        .await
        .map_err(|e| format!("the listing did not finish: {e}"))?
        .map_err(|e| e.to_string())?;
    check_listing(converged, &listed)?;
    crate::task::drop_later(listed);
    for image in &converged.step_images {
        if !view.image_present(image).await.unwrap_or(false) {
            return Err(format!("image {image} is not present"));
        }
    }
    Ok(())
}

/// The files, the window records and the machine as left.
fn check_files(converged: &Converged, windows: &Windows) -> Result<(), String> {
    for (path, seen) in &converged.files {
        if Seen::of(path).as_ref() != Some(seen) {
            return Err(format!("{} changed", path.display()));
        }
    }
    match windows.live_records() {
        Ok(live) if live.is_empty() => {}
        Ok(_) => return Err("a window is open".into()),
        Err(e) => return Err(format!("cannot read the window records: {e}")),
    }
    let machine = Machine::read();
    if machine.machine_id != converged.machine_id || machine.local_zone != converged.local_zone {
        return Err("the machine id or the local zone changed".into());
    }
    Ok(())
}

/// Every service running as made, and nothing an interrupted create or
/// replace left behind.
fn check_listing(converged: &Converged, listed: &[ContainerSummary]) -> Result<(), String> {
    let by_name: std::collections::HashMap<&str, &ContainerSummary> =
        listed.iter().map(|c| (c.name.as_str(), c)).collect();
    for s in &converged.services {
        let Some(found) = by_name.get(s.name.as_str()) else {
            return Err(format!("{} is not there", s.name));
        };
        let label = |key: &str| found.labels.get(key).map(String::as_str);
        if !found.running
            || label(LABEL_IDENTITY) != Some(s.identity.as_str())
            || label(LABEL_RECORD) != Some(RECORD_FORMAT)
            || label(LABEL_RESOURCE) != Some(s.id.as_str())
        {
            return Err(format!("{} is not as made", s.name));
        }
        // As the full decision judges it (decide/services.rs): a runtime
        // that records no peer is taken at its word.
        if let (Some(peer), Some(joined)) = (&s.peer, found.network_peer()) {
            let now = by_name.get(peer.as_str());
            if !now.is_some_and(|now| joined == now.id || joined == now.name) {
                return Err(format!("{}'s network peer {peer} was made anew", s.name));
            }
        }
    }
    for c in listed {
        // As the full decision tidies (decide/removals.rs): what was being
        // made as one of these containers, or set aside for one. A
        // container made as a name this declaration does not have is
        // another state directory's (a `run --local` of its own, another
        // test's daemon on a shared node), which the full decision leaves.
        let made_as_declared = c
            .labels
            .get(LABEL_MADE_AS)
            .is_some_and(|made_as| converged.declared.contains(made_as));
        let leftover = made_as_declared
            || replaced_base(&c.name).is_some_and(|base| converged.declared.contains(base));
        if leftover && !converged.declared.contains(&c.name) {
            return Err(format!("{} is left from an interrupted change", c.name));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_within_the_tick_before_is_not_settled() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("app.env");
        std::fs::write(&path, "A=1\n").expect("write");
        let seen = Seen::of(&path).expect("stat");
        assert!(!seen.changed_before(SystemTime::now() - SETTLED));
        assert!(seen.changed_before(SystemTime::now() + 2 * SETTLED));
        assert!(Seen::Absent.changed_before(SystemTime::now()));
    }

    #[test]
    fn a_follower_whose_peer_was_made_anew_is_decided_in_full() {
        let service = |name: &str, peer: Option<&str>| Service {
            name: name.into(),
            id: name.into(),
            identity: format!("i-{name}"),
            peer: peer.map(str::to_string),
        };
        let converged = Converged {
            request: [0; 32],
            ids: vec!["vpn".into(), "app".into()],
            services: vec![service("vpn", None), service("app", Some("vpn"))],
            declared: ["vpn".to_string(), "app".to_string()].into(),
            step_images: BTreeSet::new(),
            files: BTreeMap::new(),
            machine_id: String::new(),
            local_zone: chrono_tz::UTC,
        };
        let listed = |vpn_id: &str, app_joined: &str| {
            ["vpn", "app"]
                .iter()
                .map(|name| ContainerSummary {
                    id: if *name == "vpn" {
                        vpn_id.into()
                    } else {
                        "a1".into()
                    },
                    name: (*name).into(),
                    running: true,
                    labels: BTreeMap::from([
                        (LABEL_IDENTITY.to_string(), format!("i-{name}")),
                        (LABEL_RECORD.to_string(), RECORD_FORMAT.to_string()),
                        (LABEL_RESOURCE.to_string(), (*name).to_string()),
                    ]),
                    created: 0,
                    network_mode: (*name == "app").then(|| format!("container:{app_joined}")),
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(check_listing(&converged, &listed("v1", "v1")), Ok(()));
        let err = check_listing(&converged, &listed("v2", "v1")).expect_err("peer moved");
        assert!(
            err.contains("app's network peer vpn was made anew"),
            "{err}"
        );
    }

    #[test]
    fn only_what_was_made_as_a_declared_container_is_a_leftover() {
        let converged = Converged {
            request: [0; 32],
            ids: vec!["app".into()],
            services: Vec::new(),
            declared: ["app".to_string()].into(),
            step_images: BTreeSet::new(),
            files: BTreeMap::new(),
            machine_id: String::new(),
            local_zone: chrono_tz::UTC,
        };
        let made = |name: &str, made_as: &str| ContainerSummary {
            id: format!("id-{name}"),
            name: name.into(),
            running: false,
            labels: BTreeMap::from([(LABEL_MADE_AS.to_string(), made_as.to_string())]),
            created: 0,
            network_mode: None,
        };
        // Another state directory's container, made (and named) as its own.
        assert_eq!(check_listing(&converged, &[made("other", "other")]), Ok(()));
        // An interrupted create of `app`, under its making name.
        let err = check_listing(&converged, &[made("app.making", "app")])
            .expect_err("a create of app left half done");
        assert!(err.contains("app.making is left"), "{err}");
        // Made whole and named: declared, so no leftover.
        assert_eq!(check_listing(&converged, &[made("app", "app")]), Ok(()));
    }

    #[test]
    fn settled_is_judged_to_the_nanosecond_not_the_second() {
        let at = |secs, nanos| Seen::Present {
            dev: 1,
            ino: 1,
            mode: 0o100644,
            size: 4,
            mtime: (secs, nanos),
            ctime: (secs, nanos),
        };
        let epoch = |ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms);
        // Changed at 100.1 s: settled for an apply that began at 101.5 s
        // (100.5 s less a second), which whole seconds would not see.
        assert!(at(100, 100_000_000).changed_before(epoch(100_500)));
        assert!(!at(100, 600_000_000).changed_before(epoch(100_500)));
        assert!(!at(100, 500_000_000).changed_before(epoch(100_500)));
    }

    #[test]
    fn a_rewrite_of_the_same_size_is_seen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("app.env");
        std::fs::write(&path, "A=1\n").expect("write");
        let before = Seen::of(&path).expect("stat");
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(&path, "A=2\n").expect("write");
        assert_ne!(Seen::of(&path), Some(before));
        std::fs::remove_file(&path).expect("remove");
        assert_eq!(Seen::of(&path), Some(Seen::Absent));
    }
}
