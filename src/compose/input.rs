//! Every file `import` reads (`-f`, `.env`, `--env-file`, `env_file:`),
//! read as outside input: regular files only (a FIFO, a device or a
//! directory is named for what it is, never opened for reading, so never
//! waited on), each bounded in size, all of them together bounded by one
//! budget, and text checked to be UTF-8 with the place of a bad byte named
//! by line and column. No message quotes what a file holds: a path given
//! by mistake (`-f /etc/shadow`) or an `.env` that links to a secret
//! never has its lines printed.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};

/// Bytes one file may hold. A real compose file is a few kilobytes; the
/// largest stacks measured (20,000 services) stay under 2 MiB.
pub const MAX_FILE_BYTES: u64 = 8 << 20;
/// Bytes all files of one import may hold together.
pub const MAX_TOTAL_BYTES: u64 = 32 << 20;

/// What is left of the bytes one import may read.
#[derive(Debug)]
pub struct Budget {
    left: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            left: MAX_TOTAL_BYTES,
        }
    }
}

/// Why a file was not read, in words that name the path and never its
/// content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unread {
    /// Nothing is at the path.
    Missing,
    /// Something is, and it is not read: the sentence says why.
    Refused(String),
}

impl Unread {
    /// The sentence to show after the path.
    pub fn reason(&self) -> String {
        match self {
            Unread::Missing => "does not exist".into(),
            Unread::Refused(why) => why.clone(),
        }
    }
}

/// What a file type is, in an operator's words.
fn kind(file_type: FileType) -> &'static str {
    match file_type {
        FileType::Directory => "a directory",
        FileType::Fifo => "a FIFO (named pipe)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Symlink => "a symbolic link",
        _ => "not a regular file",
    }
}

/// Open `path` for reading without waiting on it: `O_NONBLOCK` makes the
/// open of a FIFO return at once, and the type is checked on the open
/// descriptor, so a swap between a check and the read cannot slip a FIFO
/// or a device in.
fn open_regular(path: &Path) -> Result<(OwnedFd, u64), Unread> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(|e| match e {
        rustix::io::Errno::NOENT => Unread::Missing,
        rustix::io::Errno::NOTDIR => Unread::Missing,
        e => Unread::Refused(format!(
            "cannot be opened: {}",
            std::io::Error::from_raw_os_error(e.raw_os_error())
        )),
    })?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| {
        Unread::Refused(format!(
            "cannot be read: {}",
            std::io::Error::from_raw_os_error(e.raw_os_error())
        ))
    })?;
    let file_type = FileType::from_raw_mode(stat.st_mode);
    if file_type != FileType::RegularFile {
        return Err(Unread::Refused(format!(
            "is {}: only a regular file is read",
            kind(file_type)
        )));
    }
    Ok((fd, u64::try_from(stat.st_size).unwrap_or(0)))
}

/// The place of byte `at` in `bytes`, as `line L, column C` (both from 1;
/// the column counts bytes).
pub fn place(bytes: &[u8], at: usize) -> String {
    let before = &bytes[..at.min(bytes.len())];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let column = at
        - before
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1)
        + 1;
    format!("line {line}, column {column}")
}

/// Read the regular file at `path` as UTF-8 text, within `MAX_FILE_BYTES`
/// and what is left of `budget`.
pub fn read_text(path: &Path, budget: &mut Budget) -> Result<String, Unread> {
    let (fd, size) = open_regular(path)?;
    let limit = MAX_FILE_BYTES.min(budget.left);
    let too_big = || {
        if limit < MAX_FILE_BYTES {
            Unread::Refused(format!(
                "is refused: the files of one project may hold {} MiB together",
                MAX_TOTAL_BYTES >> 20
            ))
        } else {
            Unread::Refused(format!(
                "is larger than {} MiB, more than any compose project needs",
                MAX_FILE_BYTES >> 20
            ))
        }
    };
    if size > limit {
        return Err(too_big());
    }
    // The size may change after the stat: the read itself is bounded.
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    std::fs::File::from(fd)
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Unread::Refused(format!("cannot be read: {e}")))?;
    let read = bytes.len() as u64;
    if read > limit {
        return Err(too_big());
    }
    budget.left -= read;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        Unread::Refused(format!(
            "is not UTF-8 text (an invalid byte at {})",
            place(e.as_bytes(), at)
        ))
    })
}

/// Whether something is at `path` (without following it further than
/// `stat` does): `.env` is read when it is there, and refused, not
/// skipped, when it is there but is not a regular file.
pub fn exists(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_reads_and_counts_against_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.yaml");
        std::fs::write(&path, "services: {}\n").unwrap();
        let mut budget = Budget::default();
        assert_eq!(read_text(&path, &mut budget).unwrap(), "services: {}\n");
        assert_eq!(budget.left, MAX_TOTAL_BYTES - 13);
    }

    #[test]
    fn what_is_not_a_regular_file_is_named_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let mut budget = Budget::default();
        // Returns at once: the open does not wait for a writer.
        let e = read_text(&fifo, &mut budget).unwrap_err();
        assert!(e.reason().contains("is a FIFO"), "{e:?}");
        let e = read_text(dir.path(), &mut budget).unwrap_err();
        assert!(e.reason().contains("is a directory"), "{e:?}");
        let e = read_text(Path::new("/dev/zero"), &mut budget).unwrap_err();
        assert!(e.reason().contains("character device"), "{e:?}");
        let e = read_text(&dir.path().join("none"), &mut budget).unwrap_err();
        assert_eq!(e, Unread::Missing);
        assert_eq!(budget.left, MAX_TOTAL_BYTES);
    }

    #[test]
    fn a_file_too_large_or_not_text_is_refused_without_its_content() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_FILE_BYTES + 1).unwrap();
        let e = read_text(&big, &mut Budget::default()).unwrap_err();
        assert!(e.reason().contains("larger than 8 MiB"), "{e:?}");
        let mut small = Budget { left: 10 };
        let ok = dir.path().join("ok");
        std::fs::write(&ok, "0123456789abc").unwrap();
        let e = read_text(&ok, &mut small).unwrap_err();
        assert!(e.reason().contains("together"), "{e:?}");
        let bin = dir.path().join("bin");
        std::fs::write(&bin, b"secret: x\nmore\xff\n").unwrap();
        let e = read_text(&bin, &mut Budget::default()).unwrap_err();
        assert_eq!(
            e.reason(),
            "is not UTF-8 text (an invalid byte at line 2, column 5)"
        );
    }
}
