//! `mesh-host update [FILE] [--apply [--local]] [--json]`: follow image
//! tags ([`crate::answer::update`]) and write what moved into FILE.
//!
//! FILE (default: the node's declaration) is validated first: a refused
//! one is left as it is. Where a tag moved, the file before is kept beside
//! it as `FILE.previous` and FILE is replaced atomically (its mode kept).
//! With `--apply` the file is then applied as `apply FILE` does (the
//! daemon, or this process with `--local`); a container whose replacement
//! was rolled back gets its old digest back in FILE, and the refused
//! digest is skipped by the next `update` until the tag moves again.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::args::{Cli, EXIT_FAILED, EXIT_REFUSED};
use super::check::read_or_refuse;
use super::output::print_local;
use crate::answer::update::{follow_tags, set_image, Update};
use crate::answer::Failure;
use crate::apply::rollouts::{self, Refused};
use crate::declaration;
use crate::runtime::DockerRuntime;
use crate::store::{write_atomic, Store};

/// Run `update`.
pub fn run(cli: &Cli, file: Option<&Path>, apply: bool, local: bool, json: bool) -> u8 {
    let path = file.map_or_else(|| cli.declaration.clone(), Path::to_path_buf);
    let shown = path.display().to_string();
    let bytes = match read_or_refuse(&path) {
        Ok(b) => b,
        Err(code) => return code,
    };
    let decl = match declaration::parse(&bytes) {
        Ok(d) => d,
        Err(refusal) => {
            crate::errln!(
                "mesh-host: {shown} is refused, nothing was updated; {} problem(s):",
                refusal.problems.len()
            );
            for p in &refusal.problems {
                crate::errln!("  {p}");
            }
            return EXIT_REFUSED;
        }
    };
    let mut raw: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            crate::errln!("mesh-host: {shown}: {e}");
            return EXIT_REFUSED;
        }
    };
    let asked = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
        .and_then(|rt| {
            rt.block_on(async {
                let runtime = DockerRuntime::connect(cli.docker_host.as_deref())
                    .await
                    .map_err(|e| crate::runtime::explain(&e))?;
                let refused = refused_here(cli);
                Ok(follow_tags(&runtime, &decl, &mut raw, &refused, &shown).await)
            })
        });
    let mut update = match asked {
        Ok(update) => update,
        Err(e) => return print_local::<Update>(&Err(Failure::failed(e)), json),
    };
    if !update.moved.is_empty() {
        match write(&path, &bytes, &raw) {
            Ok(previous) => update.previous = Some(previous.display().to_string()),
            Err(e) => return print_local::<Update>(&Err(Failure::failed(e)), json),
        }
    }
    let found = print_local(&Ok(update.clone()), json);
    if !apply || found != 0 || update.moved.is_empty() {
        return found;
    }
    // FILE as just written.
    let code = if local {
        super::apply::run_local(cli, &path, false, json)
    } else {
        super::remote::apply(cli, &path, false, json)
    };
    if code == EXIT_FAILED {
        put_back_refused(cli, &path, &decl, &mut raw, &update);
    }
    code
}

/// The definitions roll backs refused on this node, when this node has a
/// state directory (a controller's copy has none: nothing is refused).
fn refused_here(cli: &Cli) -> BTreeMap<String, Refused> {
    if !cli.state_dir.is_dir() {
        return BTreeMap::new();
    }
    Store::open(&cli.state_dir)
        .map_err(|e| e.to_string())
        .and_then(|store| rollouts::refused(&store))
        .unwrap_or_else(|e| {
            crate::errln!("mesh-host: the refused digests cannot be read ({e}): none is skipped");
            BTreeMap::new()
        })
}

/// Keep the file as it was beside it, then replace it with `raw`: where
/// the file before is kept.
fn write(path: &Path, before: &[u8], raw: &Value) -> Result<PathBuf, String> {
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o644);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".previous");
    let previous = path.with_file_name(name);
    write_atomic(&previous, before, mode)
        .map_err(|e| format!("cannot keep {}: {e}", previous.display()))?;
    let mut text = serde_json::to_vec_pretty(raw).map_err(|e| e.to_string())?;
    text.push(b'\n');
    write_atomic(path, &text, mode).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(previous)
}

/// After a failed apply: each moved image a roll back refused goes back to
/// its old digest in the file.
fn put_back_refused(
    cli: &Cli,
    path: &Path,
    decl: &declaration::Declaration,
    raw: &mut Value,
    update: &Update,
) {
    let refused = refused_here(cli);
    let mut back = Vec::new();
    for m in &update.moved {
        let Some((_, c)) = decl.containers().find(|(r, _)| r.id.as_str() == m.id) else {
            continue;
        };
        let new = format!("{}@{}", m.tag, m.to);
        if refused.get(c.name.as_str()).is_some_and(|r| r.image == new) {
            set_image(raw, &m.id, &format!("{}@{}", m.tag, m.from));
            back.push(m);
        }
    }
    if back.is_empty() {
        return;
    }
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o644);
    let mut text = serde_json::to_vec_pretty(raw).unwrap_or_default();
    text.push(b'\n');
    match write_atomic(path, &text, mode) {
        Ok(()) => {
            for m in back {
                crate::errln!(
                    "mesh-host: {} was rolled back: {} is back on {} ({} is skipped until {} moves again)",
                    m.id,
                    path.display(),
                    m.from,
                    m.to,
                    m.tag
                );
            }
        }
        Err(e) => crate::errln!(
            "mesh-host: cannot put the old digests back in {}: {e}",
            path.display()
        ),
    }
}
