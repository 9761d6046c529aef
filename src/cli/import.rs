//! `mesh-host import`: a compose project in, a declaration out
//! ([`crate::compose`]). Exit 0 with the declaration on standard output
//! (or written atomically to `-o`) and notes on standard error; exit 2
//! with every problem listed and nothing written.

use std::path::{Path, PathBuf};

use super::local::block_on;
use super::{Cli, EXIT_FAILED, EXIT_OK, EXIT_REFUSED};
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
                    if let Err(e) = crate::store::write_atomic(path, &imported.bytes, 0o644) {
                        crate::errln!("mesh-host: import: {}: {e}", path.display());
                        return EXIT_FAILED;
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
