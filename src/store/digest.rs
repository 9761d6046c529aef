//! Content digests of files a container reads at creation, recorded so that a
//! change to any of them is noticed and named.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use sha2::{Digest, Sha256};

/// The SHA-256 of the file at `path` as 64 lowercase hex digits, or `None` if
/// there is no such file (an absent input is a state of its own, distinct
/// from an empty one). Reads in chunks, so large files are fine.
pub fn sha256_file(path: &Path) -> io::Result<Option<String>> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match file.read(&mut buf) {
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
    Ok(Some(hex))
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
