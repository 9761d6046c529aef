//! A declared path as the unit will see it: through the links it passes
//! on its way. A usr-merged system (Debian 12, Fedora, RHEL) makes `/bin`,
//! `/sbin` and `/lib*` links into `/usr`, and `/var/run` and `/var/lock`
//! links into `/run`: `/lib/app/x` is `/usr/lib/app/x`, read-only to the
//! unit, and `/var/run/mesh-host/x` is the unit's own runtime directory.
//! [`super::sandbox`] judges the path reached as well as the path written,
//! and says which link it went through.
//!
//! The usr-merge links are known ([`MERGED`]), so a declaration means the
//! same on every machine; the path's existing prefix is then resolved on
//! the machine that checks it, as the kernel resolves it (a link at each
//! component, `..` after a link from where the link led), so a link an
//! operator made (`/srv/data` to `/home/data`) is seen too. A component
//! that does not exist ends the resolution: the rest is made as written.

use std::path::{Component, Path, PathBuf};

/// The links of a usr-merged system: each path and what it leads to.
pub const MERGED: &[(&str, &str)] = &[
    ("/bin", "/usr/bin"),
    ("/sbin", "/usr/sbin"),
    ("/lib", "/usr/lib"),
    ("/lib32", "/usr/lib32"),
    ("/lib64", "/usr/lib64"),
    ("/libx32", "/usr/libx32"),
    ("/var/run", "/run"),
    ("/var/lock", "/run/lock"),
];

/// How many links one path may pass, as the kernel's `MAXSYMLINKS`.
const MAX_LINKS: usize = 40;

/// Where a path leads, and through which links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    /// The path the unit would write.
    pub path: PathBuf,
    /// Each link passed, in words (`/lib is a link to /usr/lib on a
    /// usr-merged system`).
    pub via: Vec<String>,
}

/// Where `path` (absolute) leads, if it passes a link on its way.
pub fn reached(path: &Path) -> Option<Reached> {
    let mut via = Vec::new();
    let mut start = path.to_path_buf();
    if let Some((link, target)) = MERGED.iter().find(|(link, _)| path.starts_with(link)) {
        let rest = path.strip_prefix(link).unwrap_or(Path::new(""));
        start = Path::new(target).join(rest);
        via.push(format!(
            "{link} is a link to {target} on a usr-merged system"
        ));
    }
    let resolved = resolve(&start, &mut via);
    (!via.is_empty()).then_some(Reached {
        path: resolved,
        via,
    })
}

/// `path` with the links of its existing prefix on this machine followed,
/// each said in `via`.
fn resolve(path: &Path, via: &mut Vec<String>) -> PathBuf {
    let mut done = PathBuf::from("/");
    let mut rest: Vec<PathBuf> = components(path);
    rest.reverse();
    let mut links = 0;
    while let Some(name) = rest.pop() {
        if name.as_os_str() == ".." {
            done.pop();
            continue;
        }
        let next = done.join(&name);
        let Ok(meta) = std::fs::symlink_metadata(&next) else {
            // Not there (or not to be looked at): the rest is made as written.
            done = next;
            while let Some(name) = rest.pop() {
                if name.as_os_str() == ".." {
                    done.pop();
                } else {
                    done.push(name);
                }
            }
            break;
        };
        if !meta.file_type().is_symlink() {
            done = next;
            continue;
        }
        links += 1;
        let Ok(target) = std::fs::read_link(&next) else {
            done = next;
            continue;
        };
        if links > MAX_LINKS {
            // A loop: left for the apply to meet, as written.
            done = next;
            continue;
        }
        via.push(format!(
            "{} is a link to {}",
            next.display(),
            target.display()
        ));
        if target.is_absolute() {
            done = PathBuf::from("/");
        }
        let mut spliced = components(&target);
        spliced.reverse();
        rest.extend(spliced);
    }
    done
}

/// The names and `..` of a path, in order (`.` and the root dropped).
fn components(path: &Path) -> Vec<PathBuf> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(PathBuf::from(n)),
            Component::ParentDir => Some(PathBuf::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_usr_merge_links_are_known_whatever_the_machine() {
        let r = reached(Path::new("/lib/mesh/x.conf")).expect("through /lib");
        assert!(r.path.starts_with("/usr/lib"), "{r:?}");
        assert!(r.path.ends_with("mesh/x.conf"), "{r:?}");
        assert_eq!(
            r.via[0],
            "/lib is a link to /usr/lib on a usr-merged system"
        );
        let r = reached(Path::new("/var/run/mesh-host/x")).expect("through /var/run");
        assert!(r.path.starts_with("/run"), "{r:?}");
        // Look-alikes are not links.
        for p in ["/library/x", "/var/running/x"] {
            assert_eq!(
                reached(Path::new(p)).map(|r| r.via.len()).unwrap_or(0),
                0,
                "{p}"
            );
        }
    }

    #[test]
    fn links_of_the_existing_prefix_are_followed_as_the_kernel_does() {
        let dir = tempfile::tempdir().expect("dir");
        let d = dir.path();
        std::fs::create_dir_all(d.join("real/sub")).expect("dirs");
        std::os::unix::fs::symlink(d.join("real"), d.join("abs")).expect("abs link");
        std::os::unix::fs::symlink("real/sub", d.join("rel")).expect("rel link");
        // `..` after a link goes up from where the link led.
        std::os::unix::fs::symlink("real/sub/..", d.join("up")).expect("up link");
        let r = reached(&d.join("abs/sub/new/file")).expect("abs");
        assert_eq!(r.path, d.join("real/sub/new/file"));
        assert_eq!(r.via.len(), 1);
        assert!(r.via[0].ends_with(&format!("abs is a link to {}", d.join("real").display())));
        let r = reached(&d.join("rel/x")).expect("rel");
        assert_eq!(r.path, d.join("real/sub/x"));
        let r = reached(&d.join("up/sub/y")).expect("up");
        assert_eq!(r.path, d.join("real/sub/y"));
        // No link on the way: nothing reached but itself.
        assert_eq!(reached(&d.join("real/sub/z")), None);
        // A loop ends: left as written.
        std::os::unix::fs::symlink(d.join("loop"), d.join("loop")).expect("loop");
        let r = reached(&d.join("loop/x")).expect("loop");
        assert!(r.path.ends_with("loop/x"), "{r:?}");
    }
}
