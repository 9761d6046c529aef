//! A declaration's bytes, as every reader takes them: `check FILE`,
//! `apply FILE`, `diff FILE`, the daemon's `--declaration` at start and
//! reload, `status`, `logs`, `take`.
//!
//! A file is read only if it is a regular file, said by `fstat` on the
//! descriptor it was opened as (`O_NONBLOCK`, so a FIFO opens at once
//! instead of waiting for a writer, and `O_NOCTTY`): a FIFO, a device
//! (`/dev/zero`), a socket or a directory is refused, naming what the path
//! is. A link at the path is followed: the node's declaration may well be
//! a link into a checkout. Standard input (`-`) may be anything that ends.
//! Either way at most [`MAX_BYTES`] are read: a larger file is refused by
//! its size before a byte is read, standard input once it has given one
//! byte more. An error never quotes the content.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};

/// The largest declaration read: 8 MiB, about 10,000 resources written
/// out by hand (docs/declaration.md, "Limits"). The control socket takes a
/// request that carries one this size (`control::MAX_REQUEST`).
pub const MAX_BYTES: u64 = 8 * 1024 * 1024;

/// Why a declaration could not be read; nothing was done.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The path is not a regular file.
    #[error("{path} is {what}, not a regular file: a declaration is read from a regular file (or `-`, standard input)")]
    NotRegular {
        /// The path as given.
        path: String,
        /// What it is (`a FIFO`, `a character device`, `a directory`).
        what: &'static str,
    },
    /// Larger than [`MAX_BYTES`].
    #[error("{path}: {}", too_large(*.size))]
    TooLarge {
        /// The path as given.
        path: String,
        /// Its size; `None` for a stream cut one byte past the bound.
        size: Option<u64>,
    },
    /// Opening or reading failed.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// The error.
        #[source]
        source: io::Error,
    },
}

impl InputError {
    /// Why, without the path (for a message that names it already).
    pub fn reason(&self) -> String {
        match self {
            InputError::NotRegular { what, .. } => format!(
                "is {what}, not a regular file: a declaration is read from a regular file (or `-`, standard input)"
            ),
            InputError::TooLarge { size, .. } => too_large(*size),
            InputError::Io { source, .. } => source.to_string(),
        }
    }
}

/// What is said of a declaration of `size` bytes (`None`: a stream that
/// gave more than [`MAX_BYTES`]).
pub fn too_large(size: Option<u64>) -> String {
    let size = match size {
        Some(size) => format!("is {size} bytes"),
        None => format!("gives more than {MAX_BYTES} bytes"),
    };
    format!(
        "{size}: a declaration is at most {MAX_BYTES} bytes (8 MiB); split what it \
         declares across nodes, or declare less"
    )
}

/// What a file type is, in words.
fn what(t: FileType) -> &'static str {
    match t {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "of an unknown type",
    }
}

/// Read the declaration at `path`, or standard input for `-`.
pub fn read(path: &Path) -> Result<Vec<u8>, InputError> {
    let shown = path.display().to_string();
    if path == Path::new("-") {
        return read_bounded(io::stdin().lock(), &shown, None);
    }
    let io_error = |source: io::Error| InputError::Io {
        path: shown.clone(),
        source,
    };
    let fd = match rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        // A socket cannot be opened at all.
        Err(rustix::io::Errno::NXIO) => {
            return Err(InputError::NotRegular {
                path: shown,
                what: "a socket",
            })
        }
        Err(e) => return Err(io_error(e.into())),
    };
    let stat = rustix::fs::fstat(&fd).map_err(|e| io_error(e.into()))?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => {}
        other => {
            return Err(InputError::NotRegular {
                path: shown,
                what: what(other),
            })
        }
    }
    let size = u64::try_from(stat.st_size).unwrap_or(0);
    if size > MAX_BYTES {
        return Err(InputError::TooLarge {
            path: shown,
            size: Some(size),
        });
    }
    read_bounded(File::from(fd), &shown, Some(size))
}

/// Read at most [`MAX_BYTES`] (the file may have grown since its size was
/// taken).
fn read_bounded(reader: impl Read, shown: &str, size: Option<u64>) -> Result<Vec<u8>, InputError> {
    let capacity = usize::try_from(size.unwrap_or(0).min(MAX_BYTES)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(capacity);
    reader
        .take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| InputError::Io {
            path: shown.to_owned(),
            source,
        })?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(InputError::TooLarge {
            path: shown.to_owned(),
            size: size.map(|_| bytes.len() as u64),
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_and_anything_else_named() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("d.json");
        std::fs::write(&file, b"{}").expect("write");
        assert_eq!(read(&file).expect("read"), b"{}");
        // Through a link: followed.
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).expect("link");
        assert_eq!(read(&link).expect("read"), b"{}");

        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        for (path, said) in [
            (fifo.as_path(), "is a FIFO, not a regular file"),
            (dir.path(), "is a directory, not a regular file"),
            (
                Path::new("/dev/zero"),
                "is a character device, not a regular file",
            ),
        ] {
            let e = read(path).expect_err("refused").to_string();
            assert!(e.contains(said), "{e}");
            assert!(e.starts_with(&path.display().to_string()), "{e}");
        }
        let e = read(&dir.path().join("absent"))
            .expect_err("absent")
            .to_string();
        assert!(
            e.contains("cannot read") && e.contains("No such file"),
            "{e}"
        );
    }

    #[test]
    fn a_file_over_the_bound_is_refused_by_its_size_unread() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("big.json");
        let f = File::create(&file).expect("create");
        // Sparse: 200 MB that take no room, and no time to refuse.
        f.set_len(200_000_000).expect("grow");
        let e = read(&file).expect_err("too large").to_string();
        assert!(e.contains("is 200000000 bytes"), "{e}");
        assert!(e.contains("at most 8388608 bytes"), "{e}");
        f.set_len(MAX_BYTES).expect("shrink");
        assert_eq!(read(&file).expect("at the bound").len() as u64, MAX_BYTES);
    }

    #[test]
    fn a_stream_is_cut_one_byte_past_the_bound() {
        let endless = io::repeat(b' ');
        let e = read_bounded(endless, "-", None).expect_err("cut");
        assert!(matches!(e, InputError::TooLarge { size: None, .. }), "{e}");
        assert!(
            e.to_string().contains("gives more than 8388608 bytes"),
            "{e}"
        );
    }
}
