//! Paths of a compose project: relative to its directory, or to the home
//! directory with `~`, made absolute and lexically clean.

use std::path::{Component, Path, PathBuf};

use super::project::Project;

/// `text` as an absolute path: `~` is `$HOME`, anything relative is read
/// from the project directory; `.` and `..` are resolved in the text.
pub fn absolute(project: &Project, text: &str) -> PathBuf {
    let raw = if let Some(rest) = text.strip_prefix('~') {
        let home = project
            .variables
            .get("HOME")
            .cloned()
            .unwrap_or_else(|| "/root".into());
        PathBuf::from(format!("{home}{rest}"))
    } else if Path::new(text).is_absolute() {
        PathBuf::from(text)
    } else {
        let dir = project
            .dir
            .canonicalize()
            .unwrap_or_else(|_| project.dir.clone());
        dir.join(text)
    };
    clean(&raw)
}

fn clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(part) => out.push(part),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_made_absolute_and_clean() {
        assert_eq!(clean(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(clean(Path::new("/../x")), PathBuf::from("/x"));
    }
}
