//! Writing the metrics text where node-exporter's textfile collector reads
//! it: atomically (the collector must never read half a file), readable by
//! the collector's user (0644), in a directory made (0755) when missing.

use std::io;
use std::path::Path;

use rustix::fs::{Mode, OFlags};

/// Write `text` to `path`, making its directory when it is missing.
/// Returns whether the directory had to be made.
pub fn write(path: &Path, text: &str) -> io::Result<bool> {
    let mut made = false;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        match std::fs::symlink_metadata(dir) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                std::fs::create_dir_all(dir)?;
                // Made under the daemon's umask (0077): the collector's
                // user must be able to enter it. Changed through a
                // descriptor of the directory itself (never a link put at
                // its name meanwhile), and only if it is the daemon's own.
                let fd = rustix::fs::open(
                    dir,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )?;
                if rustix::fs::fstat(&fd)?.st_uid == rustix::process::geteuid().as_raw() {
                    rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o755))?;
                }
                made = true;
            }
            Err(e) => return Err(e),
        }
    }
    crate::store::write_atomic(path, text.as_bytes(), 0o644)?;
    Ok(made)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_directory_is_made_and_the_file_replaced_whole() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("node-exporter/mesh-host.prom");
        assert!(write(&path, "a 1\n").expect("first write"));
        assert!(!write(&path, "a 2\n").expect("second write"));
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "a 2\n");
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o644);
        assert_eq!(mode(path.parent().expect("dir")), 0o755);
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().expect("dir"))
            .expect("list")
            .collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left behind");
    }

    #[test]
    fn a_file_where_the_directory_should_be_is_an_error() {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::write(tmp.path().join("dir"), "x").expect("file");
        assert!(write(&tmp.path().join("dir/mesh-host.prom"), "a 1\n").is_err());
    }
}
