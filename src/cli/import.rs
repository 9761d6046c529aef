//! `mesh-host import`: a compose project in, a declaration out
//! ([`crate::compose`]). Exit 0 with the declaration on standard output
//! (or written atomically to `-o`) and notes on standard error; exit 2
//! with every problem listed and nothing written.
//!
//! `-o PATH` writes a regular file only: PATH is a regular file (replaced,
//! its permission bits kept) or nothing yet (made 0644). Anything else is
//! refused before any work, and again just before the write: a device
//! (`-o /dev/null` as root would otherwise replace the device with a
//! file), a directory, a FIFO, a socket, and a symbolic link, which is
//! neither followed nor replaced (name the file it points at). The file is
//! written without a name until it is whole ([`crate::store::write_atomic`]),
//! so a SIGTERM, SIGINT or SIGKILL mid-write leaves PATH as it was and no
//! temporary file behind.

use std::io::Write;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::args::{Cli, EXIT_FAILED, EXIT_OK, EXIT_REFUSED};
use super::local::block_on;
use crate::compose::pin::Pinner;
use crate::compose::{self, Source};
use crate::runtime::DockerRuntime;

/// What `import` was given.
#[derive(Debug)]
pub struct Options<'a> {
    pub files: &'a [PathBuf],
    pub project_name: Option<&'a str>,
    pub env_files: &'a [PathBuf],
    pub profiles: &'a [String],
    pub resolve: bool,
    pub output: Option<&'a Path>,
}

pub fn run(cli: &Cli, o: Options<'_>) -> u8 {
    if let Some(path) = o.output {
        if let Err((code, why)) = output_target(path) {
            crate::errln!("mesh-host: import: -o {}: {why}", path.display());
            return code;
        }
    }
    let dir = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            crate::errln!("mesh-host: import: the working directory cannot be read: {e}");
            return EXIT_FAILED;
        }
    };
    let source = Source {
        files: o.files.to_vec(),
        project_name: o.project_name.map(str::to_owned),
        env_files: o.env_files.to_vec(),
        profiles: o.profiles.to_vec(),
        dir,
        environment: std::env::vars().collect(),
    };
    block_on(async {
        let imported = if o.resolve {
            match DockerRuntime::connect(cli.docker_host.as_deref()).await {
                Ok(runtime) => {
                    let pinner: &dyn Pinner = &runtime;
                    compose::import(&source, Some(pinner)).await
                }
                Err(e) => Err(vec![format!(
                    "images cannot be pinned: {} (or import with --no-resolve)",
                    crate::runtime::explain(&e)
                )]),
            }
        } else {
            compose::import(&source, None).await
        };
        said(imported, o.output)
    })
}

/// Write the declaration and say the notes, or list the problems.
fn said(imported: Result<compose::Imported, Vec<String>>, output: Option<&Path>) -> u8 {
    match imported {
        Ok(imported) => {
            for note in &imported.notes {
                crate::errln!("mesh-host: import: {note}");
            }
            match output {
                Some(path) => {
                    if let Err((code, why)) = write_output(path, &imported.bytes) {
                        crate::errln!("mesh-host: import: -o {}: {why}", path.display());
                        return code;
                    }
                }
                None => super::output::bytes(&imported.bytes),
            }
            EXIT_OK
        }
        Err(problems) => {
            crate::errln!(
                "mesh-host: import: refused, nothing written ({} problem{}):",
                problems.len(),
                if problems.len() == 1 { "" } else { "s" }
            );
            for p in problems {
                crate::errln!("  {p}");
            }
            EXIT_REFUSED
        }
    }
}

/// Whether `-o` may write `path`: the permission bits to give the file
/// (an existing one's, else 0644), or the exit code and why not.
fn output_target(path: &Path) -> Result<u32, (u8, String)> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0o644),
        Err(e) => return Err((EXIT_FAILED, format!("cannot be looked at: {e}"))),
    };
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(meta.permissions().mode() & 0o7777);
    }
    if kind.is_symlink() {
        let to = std::fs::read_link(path)
            .map(|t| format!(" (to {})", t.display()))
            .unwrap_or_default();
        return Err((
            EXIT_REFUSED,
            format!(
                "is a symbolic link{to}: -o neither follows nor replaces a link; name the file itself"
            ),
        ));
    }
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err((
        EXIT_REFUSED,
        format!("is {what}: -o writes a regular file, or makes a new one; nothing was written"),
    ))
}

/// Write the declaration at `path`, looked at again just before (what is
/// there may have changed while the project was read).
fn write_output(path: &Path, bytes: &[u8]) -> Result<(), (u8, String)> {
    let mode = output_target(path)?;
    crate::store::write_atomic_with(path, mode, |file| {
        let (first, rest) = bytes.split_at(bytes.len() / 2);
        file.write_all(first)?;
        crate::fault::pause_blocking("pause-in-output", "import");
        file.write_all(rest)
    })
    .map_err(|e| {
        (
            EXIT_FAILED,
            format!("cannot be written: {e}; nothing was written"),
        )
    })
}
