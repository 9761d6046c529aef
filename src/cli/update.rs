//! `mesh-host update [FILE] [--apply [--local]] [--json]`: follow image
//! tags ([`crate::answer::update`]) and write what moved into FILE.
//!
//! FILE (default: the node's declaration) is validated first: a refused
//! one is left as it is. Where a tag moved, the file before is kept beside
//! it as `FILE.previous`, and only the moved images are written anew in
//! FILE, every other byte kept, atomically (its mode kept; a link is
//! written through to its target).
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
    let given = file.map_or_else(|| cli.declaration.clone(), Path::to_path_buf);
    let shown = given.display().to_string();
    // A link is written through, to the file it names: replacing the link
    // itself would leave its target behind, unchanged.
    let path = std::fs::canonicalize(&given).unwrap_or(given);
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
        let moves: Vec<(String, String)> = update
            .moved
            .iter()
            .map(|m| {
                (
                    format!("{}@{}", m.tag, m.from),
                    format!("{}@{}", m.tag, m.to),
                )
            })
            .collect();
        match write(&path, &bytes, &raw, &moves) {
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

/// Keep the file as it was beside it, then replace it with its text where
/// each `(old, new)` image of `moves` is written anew, the rest of it
/// byte for byte (`raw` is what it must then read as): where the file
/// before is kept.
fn write(
    path: &Path,
    before: &[u8],
    raw: &Value,
    moves: &[(String, String)],
) -> Result<PathBuf, String> {
    let text = rewrite(before, raw, moves)?;
    let mode = mode_of(path);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".previous");
    let previous = path.with_file_name(name);
    write_atomic(&previous, before, mode)
        .map_err(|e| format!("cannot keep {}: {e}", previous.display()))?;
    write_atomic(path, &text, mode).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(previous)
}

/// The permission bits of `path` (0644 when it cannot be read).
fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o644)
}

/// `before` with each `(old, new)` image string replaced, nothing else:
/// the operator's layout, key order and whitespace are kept. Refused when
/// the result does not read as `raw` (an image also written elsewhere,
/// or written with escapes), so that no other byte of the file changes.
fn rewrite(before: &[u8], raw: &Value, moves: &[(String, String)]) -> Result<Vec<u8>, String> {
    let mut text =
        String::from_utf8(before.to_vec()).map_err(|_| "the file is not UTF-8".to_string())?;
    for (old, new) in moves {
        let (old, new) = (Value::from(old.as_str()), Value::from(new.as_str()));
        text = text.replace(&old.to_string(), &new.to_string());
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(read) if &read == raw => Ok(text.into_bytes()),
        _ => Err(
            "cannot write the new digests in place: an image to change is also written elsewhere in the file, or with escapes; nothing was written"
                .to_string(),
        ),
    }
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
    let moves: Vec<(String, String)> = back
        .iter()
        .map(|m| {
            (
                format!("{}@{}", m.tag, m.to),
                format!("{}@{}", m.tag, m.from),
            )
        })
        .collect();
    let written = declaration::input::read(path)
        .map_err(|e| e.to_string())
        .and_then(|now| rewrite(&now, raw, &moves))
        .and_then(|text| write_atomic(path, &text, mode_of(path)).map_err(|e| e.to_string()));
    match written {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const OLD: &str =
        "reg.test/app:1@sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const NEW: &str =
        "reg.test/app:1@sha256:2222222222222222222222222222222222222222222222222222222222222222";

    #[test]
    fn a_moved_image_is_rewritten_and_every_other_byte_kept() {
        let before = format!(
            "{{\n  \"resources\": [\n    {{\"type\": \"container\", \"id\": \"web\",   \"image\": \"{OLD}\", \"update\": \"registry\"}}\n  ],\n  \"declaration\": 1\n}}\n"
        );
        let mut raw: Value = serde_json::from_str(&before).expect("json");
        set_image(&mut raw, "web", NEW);
        let moves = [(OLD.to_string(), NEW.to_string())];
        let after = rewrite(before.as_bytes(), &raw, &moves).expect("rewritten");
        assert_eq!(
            String::from_utf8(after).expect("utf-8"),
            before.replace(OLD, NEW)
        );
    }

    #[test]
    fn an_image_also_written_elsewhere_is_not_rewritten_by_text() {
        let before = json!({"declaration": 1, "resources": [
            {"type": "container", "id": "web", "image": OLD, "update": "registry"},
            {"type": "container", "id": "api", "image": OLD},
        ]})
        .to_string();
        let mut raw: Value = serde_json::from_str(&before).expect("json");
        set_image(&mut raw, "web", NEW);
        let moves = [(OLD.to_string(), NEW.to_string())];
        assert!(rewrite(before.as_bytes(), &raw, &moves).is_err());
    }
}
