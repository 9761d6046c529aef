//! What an apply's plan will have made of the machine by the time a
//! container is made: the files it writes (with their content), the
//! directories it makes (a declared one, or a parent of a file it
//! writes), and the group each path it writes or makes will have.
//!
//! An apply decides every resource before it acts, so a container is
//! built (its identity judged) before the files it reads are written:
//! builds read these instead of the disk where the plan says so, and a
//! container is judged against the content the plan will write, not
//! what is there now (docs/apply.md, "Preview").

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// See the module documentation.
#[derive(Debug, Default, Clone)]
pub struct Planned {
    files: HashMap<PathBuf, Vec<u8>>,
    dirs: HashSet<PathBuf>,
    groups: HashMap<PathBuf, u32>,
}

impl Planned {
    /// Nothing planned.
    pub fn new() -> Self {
        Self::default()
    }

    /// The plan writes `content` at `path`, the file's group then `gid`
    /// when known (declared, or the applier's for a file it makes); its
    /// missing parents are made too.
    pub fn write_file(&mut self, path: &Path, content: &[u8], gid: Option<u32>) {
        self.files.insert(path.to_path_buf(), content.to_vec());
        if let Some(gid) = gid {
            self.groups.insert(path.to_path_buf(), gid);
        }
        self.dirs
            .extend(path.ancestors().skip(1).map(Path::to_path_buf));
    }

    /// The plan makes (or changes) the directory `path`, its group then
    /// `gid` when known.
    pub fn make_dir(&mut self, path: &Path, gid: Option<u32>) {
        if let Some(gid) = gid {
            self.groups.insert(path.to_path_buf(), gid);
        }
        self.dirs.extend(path.ancestors().map(Path::to_path_buf));
    }

    /// The plan sets the group of `path` to `gid` (a fix in place).
    pub fn set_group(&mut self, path: &Path, gid: u32) {
        self.groups.insert(path.to_path_buf(), gid);
    }

    /// The content the plan writes at `path`, if it writes one.
    pub fn file(&self, path: &Path) -> Option<&[u8]> {
        self.files.get(path).map(Vec::as_slice)
    }

    /// Whether the plan makes a directory at `path` (or one under it).
    pub fn is_dir(&self, path: &Path) -> bool {
        self.dirs.contains(path)
    }

    /// The group `path` will have, when the plan says.
    pub fn group_of(&self, path: &Path) -> Option<u32> {
        self.groups.get(path).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planned_file_makes_its_parents_and_says_its_group() {
        let mut p = Planned::new();
        p.write_file(Path::new("/srv/app/conf/app.conf"), b"a=1\n", Some(1001));
        assert_eq!(
            p.file(Path::new("/srv/app/conf/app.conf")),
            Some(&b"a=1\n"[..])
        );
        assert!(p.is_dir(Path::new("/srv/app/conf")) && p.is_dir(Path::new("/srv")));
        assert!(!p.is_dir(Path::new("/srv/app/conf/app.conf")));
        assert_eq!(p.group_of(Path::new("/srv/app/conf/app.conf")), Some(1001));
        assert_eq!(p.group_of(Path::new("/srv/app")), None);
        p.make_dir(Path::new("/srv/data"), Some(2002));
        p.set_group(Path::new("/srv/app"), 3003);
        assert!(p.is_dir(Path::new("/srv/data")));
        assert_eq!(p.group_of(Path::new("/srv/data")), Some(2002));
        assert_eq!(p.group_of(Path::new("/srv/app")), Some(3003));
    }
}
