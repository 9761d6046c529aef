//! What a plan shows of a file (or unit file) it writes beyond its line:
//! the content as a unified diff, unless the file is secret (its declared
//! mode does not let others read it: then only its size is said).

use crate::declaration::File;

/// Context lines around each change, as `diff -u`.
const CONTEXT: usize = 3;

/// What a preview shows of a file it would write.
#[derive(Debug, Default)]
pub(crate) struct Shown {
    /// The unified diff of the content, current to declared.
    pub(crate) diff: Option<String>,
    /// Said instead, of a secret file or one that is not text.
    pub(crate) note: Option<String>,
}

/// The diff of `file`'s declared content against `before` (what is there
/// now; `None`: nothing, or nothing readable as a file). A file whose
/// declared mode does not let others read it is secret: only its size is
/// said.
pub(crate) fn content_diff(file: &File, before: Option<&[u8]>) -> Shown {
    let path = file.path.as_str();
    let mode = file.mode.bits();
    if mode & 0o004 == 0 {
        let was = before.map_or(String::new(), |b| format!(", {} found", b.len()));
        return Shown {
            diff: None,
            note: Some(format!(
                "content not shown: mode {mode:04o} is not readable by others ({} bytes declared{was})",
                file.content.len()
            )),
        };
    }
    if before == Some(file.content.as_slice()) {
        return Shown::default();
    }
    let (Ok(old), Ok(new)) = (
        std::str::from_utf8(before.unwrap_or_default()),
        std::str::from_utf8(&file.content),
    ) else {
        return Shown {
            diff: None,
            note: Some(format!(
                "binary content: {} bytes declared",
                file.content.len()
            )),
        };
    };
    Shown {
        diff: unified(path, old, new, before.is_some()),
        note: None,
    }
}

/// `diff -u` of `old` to `new` at `path` (`existed`: else from
/// `/dev/null`); `None` when they are the same.
fn unified(path: &str, old: &str, new: &str, existed: bool) -> Option<String> {
    let old_name = if existed {
        format!("a{path}")
    } else {
        "/dev/null".to_string()
    };
    let text = similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(CONTEXT)
        .header(&old_name, &format!("b{path}"))
        .to_string();
    (!text.is_empty()).then_some(text)
}

/// The diff of a unit file at `path`: declared against `before`.
pub(crate) fn unit_diff(
    path: &std::path::Path,
    declared: &[u8],
    before: Option<&[u8]>,
) -> Option<String> {
    let old = std::str::from_utf8(before.unwrap_or_default()).ok()?;
    let new = std::str::from_utf8(declared).ok()?;
    unified(&path.display().to_string(), old, new, before.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declaration::{AbsPath, Mode};

    fn file(content: &str, mode: u32) -> File {
        File {
            path: AbsPath::try_from("/etc/app/app.conf").expect("path"),
            content: content.as_bytes().to_vec(),
            mode: Mode::try_from(mode).expect("mode"),
            owner: None,
        }
    }

    #[test]
    fn a_readable_file_is_shown_as_a_unified_diff() {
        let shown = content_diff(&file("a=1\nb=3\n", 0o644), Some(b"a=1\nb=2\n"));
        let diff = shown.diff.expect("a diff");
        assert!(
            diff.starts_with("--- a/etc/app/app.conf\n+++ b/etc/app/app.conf\n"),
            "{diff}"
        );
        assert!(diff.contains("\n-b=2\n+b=3\n"), "{diff}");
        assert!(shown.note.is_none());
        let new = content_diff(&file("a=1\n", 0o644), None)
            .diff
            .expect("a diff");
        assert!(new.starts_with("--- /dev/null\n"), "{new}");
    }

    #[test]
    fn a_secret_file_says_only_its_sizes() {
        let shown = content_diff(&file("password=new\n", 0o640), Some(b"password=old!\n"));
        assert!(shown.diff.is_none());
        let note = shown.note.expect("a note");
        assert!(!note.contains("password"), "{note}");
        assert!(note.contains("13 bytes declared, 14 found"), "{note}");
    }
}
