//! What the watch says about a shared folder, rate-limited per folder and
//! kind of message.
//!
//! A writer in a folder chooses how often the watch has something to say:
//! a `chmod` loop on files whose entries cannot be put back (a write lease,
//! an inode full of `user.*` attributes) is one event each, and so is
//! every lost event queue. Said once per event, that floods the journal,
//! and journald then suppresses the unit's entries of the same priority,
//! pages included. So of each kind of message, per folder, the first is
//! logged at once and those that follow within [`INTERVAL`] are counted
//! into one at its end, with `MESH_COUNT` and the last case: at most two
//! lines per folder and kind in any [`INTERVAL`], whatever the writer does.

use std::time::{Duration, Instant};

use super::tree;
use crate::events::Event;
use crate::mesh_event;

/// At most one message per folder and kind in this time (after the first).
pub const INTERVAL: Duration = Duration::from_secs(10);

/// A kind of message a writer can cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Entries that had been removed or narrowed were put back
    /// (`acl-restored`, notice).
    Restored,
    /// Objects whose entries could not be set (warning).
    Unset,
    /// The kernel's event queue overflowed: the folder is swept again
    /// (warning).
    Lost,
    /// Directories of the folder not watched: past its share of watches,
    /// or the kernel's limit (warning).
    Unwatched,
}

const KINDS: usize = 4;

impl Kind {
    fn slot(self) -> usize {
        match self {
            Kind::Restored => 0,
            Kind::Unset => 1,
            Kind::Lost => 2,
            Kind::Unwatched => 3,
        }
    }

    const ALL: [Kind; KINDS] = [Kind::Restored, Kind::Unset, Kind::Lost, Kind::Unwatched];
}

/// The folder a message is about.
#[derive(Debug, Clone, Copy)]
pub struct Who<'a> {
    /// Its resource id.
    pub id: &'a str,
    /// Its module.
    pub module: Option<&'a str>,
}

/// Cases of one kind counted and not yet logged.
#[derive(Debug, Default)]
struct Counted {
    /// When the last message of this kind was logged.
    last: Option<Instant>,
    /// Cases since.
    count: u64,
    /// The last case: a path, and what was wrong there (bounded).
    path: String,
    what: String,
}

/// The messages of one folder.
#[derive(Debug, Default)]
pub struct Notes {
    kinds: [Counted; KINDS],
}

impl Notes {
    /// Count `n` cases of `kind`, the last at `path` (`what` says what was
    /// wrong, for the kinds that say it); logged at once unless a message
    /// of that kind was logged within [`INTERVAL`].
    pub fn note(&mut self, who: Who<'_>, kind: Kind, n: u64, path: &str, what: &str) {
        let c = &mut self.kinds[kind.slot()];
        c.count += n;
        c.path = tree::bounded(path, 2 * tree::PATH_SHOWN);
        c.what = tree::bounded(what, 2 * tree::PATH_SHOWN);
        if c.last.is_none_or(|l| l.elapsed() >= INTERVAL) {
            log(who, kind, c);
        }
    }

    /// When counted cases are next due to be logged.
    pub fn next_due(&self) -> Option<Instant> {
        self.kinds
            .iter()
            .filter(|c| c.count > 0)
            .filter_map(|c| c.last.map(|l| l + INTERVAL))
            .min()
    }

    /// Log what is due (everything counted, when `all`).
    pub fn flush(&mut self, who: Who<'_>, all: bool) {
        for kind in Kind::ALL {
            let c = &mut self.kinds[kind.slot()];
            if c.count > 0 && (all || c.last.is_none_or(|l| l.elapsed() >= INTERVAL)) {
                log(who, kind, c);
            }
        }
    }
}

/// Log `c`'s cases as one message of `kind`, and start its interval.
fn log(who: Who<'_>, kind: Kind, c: &mut Counted) {
    let (id, path, what, count) = (who.id, c.path.as_str(), c.what.as_str(), c.count);
    let times = if count == 1 {
        String::new()
    } else {
        format!(" ({count} times in {} s)", INTERVAL.as_secs())
    };
    let module = who.module.unwrap_or("");
    match kind {
        Kind::Restored => log_restored(id, who.module, path, count),
        Kind::Unset => tracing::warn!(
            MESH_FOLDER = %id,
            MESH_MODULE = %module,
            MESH_PATH = %path,
            MESH_COUNT = count,
            "shared folder {id}: entries could not be set{times}, the last time on {path}: {what}"
        ),
        Kind::Lost => tracing::warn!(
            MESH_FOLDER = %id,
            MESH_MODULE = %module,
            MESH_COUNT = count,
            "shared folder {id}: the watch lost events{times}; the folder is swept again (at most once in {} s)",
            INTERVAL.as_secs()
        ),
        Kind::Unwatched => tracing::warn!(
            MESH_FOLDER = %id,
            MESH_MODULE = %module,
            MESH_PATH = %path,
            MESH_COUNT = count,
            "shared folder {id}: {what}"
        ),
    }
    c.count = 0;
    c.last = Some(Instant::now());
}

/// Log `acl-restored`: shared folder `id`'s (of `module`) entries put
/// back on `count` objects, the last at `path` (`MESH_COUNT`).
pub fn log_restored(id: &str, module: Option<&str>, path: &str, count: u64) {
    let path = tree::bounded(path, 2 * tree::PATH_SHOWN);
    let what = if count == 1 {
        format!("shared folder {id}: entries restored on {path}")
    } else {
        format!("shared folder {id}: entries restored on {count} objects, the last {path}")
    };
    match module {
        Some(module) => mesh_event!(
            info,
            Event::AclRestored,
            MESH_FOLDER = %id,
            MESH_MODULE = %module,
            MESH_PATH = %path,
            MESH_COUNT = count,
            "{what}"
        ),
        None => mesh_event!(
            info,
            Event::AclRestored,
            MESH_FOLDER = %id,
            MESH_PATH = %path,
            MESH_COUNT = count,
            "{what}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_case_is_said_at_once_and_the_rest_once_counted() {
        let who = Who {
            id: "share",
            module: None,
        };
        let mut notes = Notes::default();
        notes.note(who, Kind::Unset, 1, "/srv/share/a", "EWOULDBLOCK");
        assert_eq!(notes.next_due(), None, "logged at once: nothing owed");
        let first = notes.kinds[Kind::Unset.slot()].last.expect("logged");
        for i in 0..10_000 {
            let path = format!("/srv/share/{}", if i % 2 == 0 { "a" } else { "b" });
            notes.note(who, Kind::Unset, 1, &path, "ENOSPC");
        }
        // Another kind has an interval of its own.
        notes.note(who, Kind::Lost, 1, "/srv/share", "");
        let c = &notes.kinds[Kind::Unset.slot()];
        assert_eq!(
            (c.count, c.last),
            (10_000, Some(first)),
            "counted, not logged"
        );
        assert_eq!(notes.next_due(), Some(first + INTERVAL));
        // Not due yet: kept; at the end (or when told), one message.
        notes.flush(who, false);
        assert_eq!(notes.kinds[Kind::Unset.slot()].count, 10_000);
        notes.flush(who, true);
        assert_eq!(notes.kinds[Kind::Unset.slot()].count, 0);
        assert_eq!(notes.next_due(), None);
    }
}
