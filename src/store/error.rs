//! The store's error type: every variant names the path (or name) it is about,
//! so an operator reading a log line knows which file to look at.

use std::io;
use std::path::PathBuf;

/// What went wrong in the state directory.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// An operating-system call on `path` failed (`action` says which one).
    #[error("failed to {action} {}: {source}", path.display())]
    Io {
        /// What was being done, as a verb phrase ("read", "create directory", ...).
        action: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A state file exists but cannot be understood. Never treated as absent:
    /// guessing about state (an open window, what was applied) is how a held
    /// container gets started under a running step.
    #[error("corrupt state file {}: {reason}", path.display())]
    Corrupt {
        /// The file that could not be understood.
        path: PathBuf,
        /// Why (the parser's message, or the inconsistency found).
        reason: String,
    },
    /// Taking the apply lock failed (not "it is held": that blocks or is `None`).
    #[error("failed to lock {}: {source}", path.display())]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A lock was held by another process for longer than its bound: the
    /// wait was given up, and the holder named.
    #[error("{} is held by {holder}: waited {waited_secs} s, given up", path.display())]
    LockHeld {
        /// The lock file.
        path: PathBuf,
        /// Who holds it (pid, command, state).
        holder: String,
        /// How long it was waited for.
        waited_secs: u64,
    },
    /// A value could not be encoded as JSON (a map with non-string keys, a
    /// failing `Serialize` implementation): nothing was written to `path`.
    #[error("failed to encode {} as JSON: {source}", path.display())]
    Encode {
        /// The file that would have been written.
        path: PathBuf,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// A document or step name cannot be used as a file name in the store.
    #[error("invalid state name {name:?}: {reason}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// Why it cannot be used.
        reason: &'static str,
    },
}

impl StoreError {
    /// Shorthand for [`StoreError::Io`].
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        StoreError::Io {
            action,
            path: path.into(),
            source,
        }
    }

    /// True when the error is an I/O error saying the thing does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, StoreError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}
