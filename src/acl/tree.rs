//! Directories remembered without their paths, and reopened safely.
//!
//! A tree a writer controls can be arbitrarily deep, and its names are up
//! to 255 bytes each: keeping the path of every directory costs memory in
//! the square of the depth, and keeping a descriptor for every directory
//! runs the process out of descriptors. So the sweep and the watch keep,
//! per directory, a [`Link`]: its parent's key, its own name, and the
//! device and inode it had when it was checked. A directory is reopened
//! ([`reopen`]) one name at a time from the nearest ancestor whose
//! descriptor is still held in a small cache ([`FdCache`], a bounded
//! number of descriptors), never following a link, and every step must be
//! the very directory recorded (same device and inode): a name renamed or
//! exchanged meanwhile (`renameat2(RENAME_EXCHANGE)`) is refused with
//! `ESTALE`, never acted on.
//!
//! Paths are only ever built to be shown ([`shown`]), and then bounded.

use std::collections::VecDeque;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

/// Descriptors a cache holds at most.
pub const CACHED_FDS: usize = 16;

/// Most bytes of a path put in a message or a journal field; longer paths
/// keep their last components, after `…/`.
pub const PATH_SHOWN: usize = 256;

/// A directory: its parent (`None`: it is the top of its tree, reached by
/// the descriptor the caller holds), its name in that parent, and the
/// device and inode it was checked to have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link<K> {
    /// The parent's key; `None` for the top.
    pub parent: Option<K>,
    /// Its name in the parent (empty for the top).
    pub name: Box<[u8]>,
    /// Its device.
    pub dev: u64,
    /// Its inode.
    pub ino: u64,
}

/// A few open directory descriptors, by key, the most recently used kept.
#[derive(Debug)]
pub struct FdCache<K> {
    slots: VecDeque<(K, OwnedFd)>,
    cap: usize,
}

impl<K: Copy + Eq> FdCache<K> {
    /// A cache of at most `cap` descriptors.
    pub fn new(cap: usize) -> FdCache<K> {
        FdCache {
            slots: VecDeque::with_capacity(cap),
            cap: cap.max(1),
        }
    }

    fn get(&mut self, key: K) -> Option<BorrowedFd<'_>> {
        let at = self.slots.iter().position(|(k, _)| *k == key)?;
        let slot = self.slots.remove(at)?;
        self.slots.push_front(slot);
        self.slots.front().map(|(_, fd)| fd.as_fd())
    }

    fn put(&mut self, key: K, fd: OwnedFd) {
        self.forget(key);
        if self.slots.len() >= self.cap {
            self.slots.pop_back();
        }
        self.slots.push_front((key, fd));
    }

    /// Drop the descriptor of `key` (its directory is gone or changed).
    pub fn forget(&mut self, key: K) {
        self.slots.retain(|(k, _)| *k != key);
    }

    /// How many descriptors it holds.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

/// Whether `fd` is the object `link` recorded.
fn same(fd: BorrowedFd<'_>, link: &Link<impl Sized>) -> Result<(), Errno> {
    let stat = rustix::fs::fstat(fd)?;
    if stat.st_dev == link.dev && stat.st_ino == link.ino {
        Ok(())
    } else {
        Err(Errno::STALE)
    }
}

/// Open the directory `key` names, below `top` (the descriptor of the
/// directory whose link has no parent), as described in the module
/// documentation. `link` gives each key's [`Link`]; a key it does not know
/// is `ESTALE`; a chain longer than `max_depth` (a loop of stale links) is
/// `ELOOP`. The descriptor returned is the caller's own.
pub fn reopen<'l, K: Copy + Eq + 'l>(
    top: BorrowedFd<'_>,
    cache: &mut FdCache<K>,
    key: K,
    link: impl Fn(K) -> Option<&'l Link<K>>,
    max_depth: usize,
) -> Result<OwnedFd, Errno> {
    let mut below: Vec<K> = Vec::new();
    let mut k = key;
    let mut fd = loop {
        if let Some(fd) = cache.get(k) {
            break rustix::io::fcntl_dupfd_cloexec(fd, 0)?;
        }
        let l = link(k).ok_or(Errno::STALE)?;
        match l.parent {
            None => {
                same(top, l)?;
                break rustix::io::fcntl_dupfd_cloexec(top, 0)?;
            }
            Some(parent) => {
                below.push(k);
                if below.len() > max_depth {
                    return Err(Errno::LOOP);
                }
                k = parent;
            }
        }
    };
    let flags =
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    for k in below.into_iter().rev() {
        let l = link(k).ok_or(Errno::STALE)?;
        let next = match rustix::fs::openat(&fd, &*l.name, flags, Mode::empty()) {
            Ok(next) => next,
            // A link or something else put at the name: not the directory.
            Err(Errno::LOOP | Errno::NOTDIR | Errno::NOENT) => return Err(Errno::STALE),
            Err(e) => return Err(e),
        };
        same(next.as_fd(), l)?;
        cache.put(k, rustix::io::fcntl_dupfd_cloexec(&next, 0)?);
        fd = next;
    }
    Ok(fd)
}

/// The path of `key` relative to its top (`.` for the top itself), then
/// `name` beneath it when given, bounded to [`PATH_SHOWN`] bytes: only the
/// names that fit are looked up, so a deep tree costs no more to show.
pub fn shown<'l, K: Copy + Eq + 'l>(
    key: Option<K>,
    name: Option<&[u8]>,
    link: impl Fn(K) -> Option<&'l Link<K>>,
) -> String {
    let mut parts: Vec<&[u8]> = Vec::new();
    let mut len = 0;
    let mut cut = false;
    if let Some(name) = name {
        parts.push(name);
        len += name.len();
    }
    let mut k = key;
    while let Some(l) = k.and_then(&link) {
        if l.parent.is_none() {
            break;
        }
        if len + l.name.len() + 1 > PATH_SHOWN {
            cut = true;
            break;
        }
        len += l.name.len() + 1;
        parts.push(&l.name);
        k = l.parent;
    }
    if parts.is_empty() {
        return ".".into();
    }
    parts.reverse();
    let joined = String::from_utf8_lossy(&parts.join(&b'/')).into_owned();
    let joined = bounded(&joined, PATH_SHOWN);
    if cut {
        format!("…/{joined}")
    } else {
        joined
    }
}

/// `text` cut to at most `max` bytes (at a character boundary), its end
/// kept: the end of a path is its most telling part.
pub fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn open(path: &std::path::Path) -> OwnedFd {
        rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .expect("open")
    }

    fn link_of(path: &std::path::Path, parent: Option<u32>, name: &str) -> Link<u32> {
        let stat = rustix::fs::stat(path).expect("stat");
        Link {
            parent,
            name: name.as_bytes().into(),
            dev: stat.st_dev,
            ino: stat.st_ino,
        }
    }

    #[test]
    fn a_directory_is_reopened_only_while_it_is_the_one_recorded() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let top = tmp.path().join("top");
        std::fs::create_dir_all(top.join("a/b")).expect("dirs");
        std::fs::create_dir_all(top.join("c")).expect("dirs");
        let mut links = HashMap::new();
        links.insert(0u32, link_of(&top, None, ""));
        links.insert(1, link_of(&top.join("a"), Some(0), "a"));
        links.insert(2, link_of(&top.join("a/b"), Some(1), "b"));
        let top_fd = open(&top);
        let mut cache = FdCache::new(2);
        let fd = reopen(top_fd.as_fd(), &mut cache, 2, |k| links.get(&k), 10).expect("b");
        assert_eq!(rustix::fs::fstat(&fd).expect("stat").st_ino, links[&2].ino);
        assert_eq!(cache.len(), 2, "a and b are cached");
        assert_eq!(shown(Some(2), Some(b"f"), |k| links.get(&k)), "a/b/f");
        assert_eq!(shown(Some(0), None, |k| links.get(&k)), ".");

        // `a` swapped for another directory: `b` is not reached through it.
        let mut cold = FdCache::new(2);
        std::fs::rename(top.join("a"), top.join("x")).expect("rename");
        std::fs::rename(top.join("c"), top.join("a")).expect("rename");
        assert_eq!(
            reopen(top_fd.as_fd(), &mut cold, 1, |k| links.get(&k), 10).err(),
            Some(Errno::STALE)
        );
        // A link at the name is never followed.
        std::fs::remove_dir(top.join("a")).expect("rmdir");
        std::os::unix::fs::symlink(top.join("x"), top.join("a")).expect("symlink");
        assert_eq!(
            reopen(top_fd.as_fd(), &mut cold, 2, |k| links.get(&k), 10).err(),
            Some(Errno::STALE)
        );
        // A loop of stale links ends.
        links.insert(
            1,
            Link {
                parent: Some(2),
                ..links[&1].clone()
            },
        );
        assert_eq!(
            reopen(
                top_fd.as_fd(),
                &mut FdCache::new(1),
                2,
                |k| links.get(&k),
                10
            )
            .err(),
            Some(Errno::LOOP)
        );
    }

    #[test]
    fn shown_paths_are_bounded_whatever_the_depth() {
        let mut links = HashMap::new();
        links.insert(
            0u32,
            Link {
                parent: None,
                name: Box::from(&b""[..]),
                dev: 0,
                ino: 0,
            },
        );
        for i in 1..2000u32 {
            let name = vec![b'n'; 200].into_boxed_slice();
            links.insert(
                i,
                Link {
                    parent: Some(i - 1),
                    name,
                    dev: 0,
                    ino: u64::from(i),
                },
            );
        }
        let path = shown(Some(1999), Some(b"leaf"), |k| links.get(&k));
        assert!(path.len() <= PATH_SHOWN + 8, "{}", path.len());
        assert!(path.starts_with("…/") && path.ends_with("/leaf"), "{path}");
        assert_eq!(bounded("abcdef", 3), "…def");
        assert_eq!(bounded("é".repeat(4).as_str(), 3), "…é");
    }
}
