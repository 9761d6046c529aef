//! Content digests of files a container reads at creation, recorded so that a
//! change to any of them is noticed and named.
//!
//! What a container reads as configuration is read here without ever
//! blocking or leaving the named file ([`open_config`]): opened
//! `O_NONBLOCK | O_NOFOLLOW` (a FIFO opens at once instead of waiting for a
//! writer; a symbolic link is not followed), its type checked with `fstat`
//! on the descriptor, and only a regular file read. Reads are streamed and
//! bounded ([`config_digest`]): up to [`MAX_HASHED`] bytes are hashed; a
//! larger file is identified by its size and modification time instead.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

/// The largest configuration file whose content is hashed (64 MiB); a
/// larger one counts as changed when its size or modification time does.
pub const MAX_HASHED: u64 = 64 * 1024 * 1024;

/// Why a configuration file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigReadError {
    /// The name is a symbolic link: never followed.
    #[error("is a symbolic link, which is never followed")]
    Symlink,
    /// A FIFO, socket, device or directory: never read.
    #[error("is {0}, not a regular file: it is never read")]
    NotRegular(&'static str),
    /// Opening or reading failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// What a file type is, in words.
fn kind(t: FileType) -> &'static str {
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

/// Open `name` beneath `dir` as a configuration file: without following a
/// link at `name`, without blocking on a FIFO, and only if `fstat` on the
/// descriptor says it is a regular file. `Ok(None)`: there is no such file.
pub fn open_config(
    dir: impl AsFd,
    name: impl rustix::path::Arg,
) -> Result<Option<File>, ConfigReadError> {
    let fd: OwnedFd = match rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(None),
        Err(Errno::LOOP) => return Err(ConfigReadError::Symlink),
        Err(Errno::NXIO) => return Err(ConfigReadError::NotRegular("a socket")),
        Err(e) => return Err(ConfigReadError::Io(e.into())),
    };
    let stat = rustix::fs::fstat(&fd).map_err(|e| ConfigReadError::Io(e.into()))?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Ok(Some(File::from(fd))),
        other => Err(ConfigReadError::NotRegular(kind(other))),
    }
}

/// The digest of a configuration file opened by [`open_config`]: the
/// SHA-256 of its content (streamed), or, above [`MAX_HASHED`] bytes, its
/// size and modification time.
pub fn config_digest(file: File) -> io::Result<String> {
    let meta = file.metadata()?;
    if meta.len() > MAX_HASHED {
        use std::os::unix::fs::MetadataExt;
        return Ok(format!(
            "size {} modified {}.{:09}",
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec()
        ));
    }
    hash_reader(file.take(MAX_HASHED))
}

/// Read a whole configuration file opened by [`open_config`] into memory,
/// refusing one larger than `limit` bytes.
pub fn read_config(file: File, limit: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {limit} bytes"),
        ));
    }
    Ok(bytes)
}

/// SHA-256 of everything `reader` yields, as 64 lowercase hex digits.
pub fn hash_reader(mut reader: impl Read) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        hasher.update(&buf[..n]);
    }
    let mut hex = String::with_capacity(64);
    for byte in hasher.finalize() {
        // Writing to a String cannot fail.
        let _ = write!(hex, "{byte:02x}");
    }
    Ok(hex)
}

/// The SHA-256 of the file at `path` as 64 lowercase hex digits, or `None` if
/// there is no such file (an absent input is a state of its own, distinct
/// from an empty one). Reads in chunks, so large files are fine.
pub fn sha256_file(path: &Path) -> io::Result<Option<String>> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    hash_reader(file).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digests_and_absence() {
        let dir = tempfile::tempdir().expect("tempdir");
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").expect("write");
        assert_eq!(
            sha256_file(&empty).expect("hash").as_deref(),
            Some("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        );
        let abc = dir.path().join("abc");
        std::fs::write(&abc, b"abc").expect("write");
        assert_eq!(
            sha256_file(&abc).expect("hash").as_deref(),
            Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
        assert_eq!(
            sha256_file(&dir.path().join("missing")).expect("absent"),
            None
        );
        assert!(sha256_file(dir.path()).is_err(), "a directory is no file");
    }

    #[test]
    fn a_fifo_socket_or_link_is_never_read_and_never_blocks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = std::fs::File::open(dir.path()).expect("dir");
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(&d, "fifo", FileType::Fifo, Mode::from_raw_mode(0o600), 0)
            .expect("mkfifo");
        // No writer: a blocking open would wait for ever.
        let e = open_config(&d, "fifo").expect_err("a FIFO");
        assert_eq!(
            e.to_string(),
            "is a FIFO, not a regular file: it is never read"
        );
        let _sock = std::os::unix::net::UnixListener::bind(dir.path().join("sock")).expect("sock");
        let e = open_config(&d, "sock").expect_err("a socket");
        assert!(e.to_string().contains("a socket"), "{e}");
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link")).expect("link");
        assert!(matches!(
            open_config(&d, "link"),
            Err(ConfigReadError::Symlink)
        ));
        assert!(matches!(open_config(&d, "missing"), Ok(None)));
        let e = open_config(rustix::fs::CWD, "/dev/null").expect_err("a device");
        assert!(e.to_string().contains("character device"), "{e}");
        assert!(fifo.exists());
    }

    #[test]
    fn config_reads_are_bounded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = std::fs::File::open(dir.path()).expect("dir");
        std::fs::write(dir.path().join("abc"), b"abc").expect("write");
        let f = open_config(&d, "abc").expect("open").expect("present");
        assert_eq!(
            config_digest(f).expect("digest"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let f = open_config(&d, "abc").expect("open").expect("present");
        assert_eq!(read_config(f, 3).expect("fits"), b"abc");
        let f = open_config(&d, "abc").expect("open").expect("present");
        let e = read_config(f, 2).expect_err("too large");
        assert!(e.to_string().contains("larger than 2 bytes"), "{e}");
        // Above the bound: size and time, not content (a sparse file).
        let big = std::fs::File::create(dir.path().join("big")).expect("create");
        big.set_len(MAX_HASHED + 1).expect("grow");
        let f = open_config(&d, "big").expect("open").expect("present");
        let digest = config_digest(f).expect("digest");
        assert!(
            digest.starts_with(&format!("size {} modified ", MAX_HASHED + 1)),
            "{digest}"
        );
    }

    #[test]
    fn large_file_matches_one_shot_digest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("big");
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).expect("write");
        let expected: String = Sha256::digest(&data)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(sha256_file(&path).expect("hash"), Some(expected));
    }
}
