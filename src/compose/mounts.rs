//! A service's mounts: `volumes` in both syntaxes (binds made absolute,
//! a target alone an anonymous volume the runtime makes and recreates carry,
//! named volumes by their top-level names, tmpfs), `secrets` and
//! `configs` as read-only files, `tmpfs` and `devices`. A bind source
//! that does not exist is declared as a directory the apply makes, as
//! compose makes it; one the service's unit cannot write (under `/root`,
//! `/home`, `/usr`, ...) is left to Docker, which makes it, as compose
//! relies on, and that is noted.

use serde_json::{json, Map, Value};

use super::context::Service;
use super::values::{list, some, strings, text};
use super::{paths, units};
use crate::declaration::raw::{Field, RawContainer, RawDevice, RawMount, RawTmpfs};
use crate::declaration::sandbox;
use crate::declaration::types::AbsPath;

/// Read `svc`'s mounts, tmpfs and devices into `c`.
pub(super) fn read(s: &mut Service, svc: &Map<String, Value>, c: &mut RawContainer) {
    let mut mounts = Vec::new();
    let mut tmpfs = Vec::new();
    let mut anonymous = Vec::new();
    if let Some(Value::Array(entries)) = svc.get("volumes") {
        for (i, entry) in entries.iter().enumerate() {
            match entry {
                Value::String(text) if !text.contains(':') && text.starts_with('/') => {
                    anonymous.push(text.clone());
                }
                Value::String(text) => short_volume(s, text, &mut mounts),
                Value::Object(m) => {
                    if let Some(target) = long_volume(s, i, m, &mut mounts, &mut tmpfs) {
                        anonymous.push(target);
                    }
                }
                _ => s.refuse("volumes", "expected a string or a mapping"),
            }
        }
    }
    for (kind, default_dir) in [("secrets", "/run/secrets/"), ("configs", "/")] {
        let Some(Value::Array(entries)) = svc.get(kind) else {
            continue;
        };
        for entry in entries {
            let (source, target) = match entry {
                Value::Object(m) => (
                    m.get("source").map(text).unwrap_or_default(),
                    m.get("target").map(text),
                ),
                other => (text(other), None),
            };
            let files = if kind == "secrets" {
                &s.top.secrets
            } else {
                &s.top.configs
            };
            let Some(file) = files.get(&source).cloned() else {
                s.refuse(
                    kind,
                    format!("{source:?} is not declared in the top-level {kind}"),
                );
                continue;
            };
            let target = match target {
                Some(t) if t.starts_with('/') => t,
                Some(t) => format!("{default_dir}{t}"),
                None => format!("{default_dir}{source}"),
            };
            mounts.push(mount(file.display().to_string(), target, true));
        }
    }
    if let Some(v) = svc.get("tmpfs") {
        for entry in strings(v) {
            let (target, opts) = entry.split_once(':').unwrap_or((&entry, ""));
            let mut t = RawTmpfs {
                target: some(target.to_owned()),
                ..RawTmpfs::default()
            };
            for opt in opts.split(',').filter(|o| !o.is_empty()) {
                match opt.split_once('=') {
                    Some(("size", size)) => match units::bytes(size) {
                        Ok(n) => t.size = some(json!(n)),
                        Err(e) => s.refuse("tmpfs", e),
                    },
                    Some(("mode", m)) => t.mode = some(m.to_owned()),
                    Some((owner @ ("uid" | "gid"), n)) => match n.parse::<u32>() {
                        Ok(n) if owner == "uid" => t.uid = some(json!(n)),
                        Ok(n) => t.gid = some(json!(n)),
                        Err(_) => s.refuse("tmpfs", format!("{opt:?}: not a numeric id")),
                    },
                    None if opt == "exec" || opt == "noexec" => t.exec = some(opt == "exec"),
                    _ => s.refuse(
                        "tmpfs",
                        format!("{opt:?}: size, mode, uid, gid, exec and noexec are supported"),
                    ),
                }
            }
            tmpfs.push(t);
        }
    }
    c.mounts = list(mounts);
    c.options.tmpfs = list(tmpfs);
    c.options.anonymous_volumes = list(anonymous);
    if let Some(v) = svc.get("devices") {
        let mut devices = Vec::new();
        let entries = match v {
            Value::Array(items) => items.clone(),
            other => vec![other.clone()],
        };
        for entry in entries {
            if let Some(d) = device(s, &entry) {
                devices.push(d);
            }
        }
        c.options.devices = Field::Present(devices.into_iter().map(Field::Present).collect());
    }
}

fn mount(source: String, target: String, read_only: bool) -> RawMount {
    RawMount {
        source: some(source),
        target: some(target),
        read_only: some(read_only),
        ..RawMount::default()
    }
}

/// One device: `PATH[:TARGET[:PERMISSIONS]]`, or the long form.
fn device(s: &mut Service, entry: &Value) -> Option<RawDevice> {
    let (path, target, permissions) = match entry {
        Value::Object(m) => (
            m.get("source").map(text).unwrap_or_default(),
            m.get("target").map(text),
            m.get("permissions").map(text),
        ),
        other => {
            let entry = text(other);
            let parts: Vec<&str> = entry.split(':').collect();
            match parts.as_slice() {
                [p] => (p.to_string(), None, None),
                [p, t] if t.starts_with('/') => (p.to_string(), Some(t.to_string()), None),
                [p, perms] => (p.to_string(), None, Some(perms.to_string())),
                [p, t, perms] => (p.to_string(), Some(t.to_string()), Some(perms.to_string())),
                _ => {
                    s.refuse(
                        "devices",
                        format!("{entry:?} is not PATH[:TARGET[:PERMISSIONS]]"),
                    );
                    return None;
                }
            }
        }
    };
    Some(RawDevice {
        path: some(path),
        target: target.map_or(Field::Absent, Field::Present),
        permissions: permissions.map_or(Field::Absent, Field::Present),
        ..RawDevice::default()
    })
}

/// A bind source, absolute. One that does not exist is declared as a
/// directory, as compose makes it, unless the unit cannot write there:
/// then Docker makes it when it creates the container, as it does under
/// compose.
fn bind_source(s: &mut Service, source: &str, create: bool) -> String {
    let abs = paths::absolute(s.project, source).display().to_string();
    if std::path::Path::new(&abs).symlink_metadata().is_err() {
        if !create {
            s.refuse(
                "volumes",
                format!("{abs} does not exist (bind.create_host_path is false)"),
            );
        } else if let Some(why) = AbsPath::try_from(abs.as_str())
            .ok()
            .and_then(|p| sandbox::write_refusal(&p))
        {
            let why = why
                .split(':')
                .next()
                .unwrap_or("the unit cannot write there")
                .to_owned();
            s.note(
                "volumes",
                format!("{abs} does not exist: left to Docker, which makes it when it creates the container, as under compose (mesh-host's unit cannot write there: {why})"),
            );
        } else {
            s.note(
                "volumes",
                format!("{abs} does not exist: declared as a directory, made by the apply as compose makes it"),
            );
            s.dirs.insert(abs.clone());
        }
    }
    abs
}

fn volume_source(s: &mut Service, key: &str) -> Option<String> {
    match s.top.volumes.get(key) {
        Some(v) => Some(v.name.clone()),
        None => {
            s.refuse(
                "volumes",
                format!("{key:?} is not declared in the top-level volumes"),
            );
            None
        }
    }
}

fn short_volume(s: &mut Service, text: &str, mounts: &mut Vec<RawMount>) {
    let parts: Vec<&str> = text.split(':').collect();
    let (source, target, opts) = match parts.as_slice() {
        [_] => {
            s.refuse(
                "volumes",
                format!("{text:?} is not an absolute path in the container, nor SOURCE:TARGET"),
            );
            return;
        }
        [src, t] => (*src, *t, ""),
        [src, t, o] => (*src, *t, *o),
        _ => {
            s.refuse("volumes", format!("{text:?} is not SOURCE:TARGET[:MODE]"));
            return;
        }
    };
    let mut read_only = false;
    for opt in opts.split(',').filter(|o| !o.is_empty()) {
        match opt {
            "ro" => read_only = true,
            "rw" | "rprivate" | "cached" | "delegated" | "consistent" => {}
            "z" | "Z" => s.note(
                "volumes",
                format!("{text:?}: {opt}: SELinux labels are not changed by mesh-host: on a host enforcing SELinux, label the source yourself (chcon -Rt container_file_t PATH)"),
            ),
            "nocopy" => s.refuse(
                "volumes",
                format!("{text:?}: nocopy: not supported: Docker copies the image's files into a new, empty volume; remove it to accept that"),
            ),
            "shared" | "rshared" | "slave" | "rslave" | "private" => s.refuse(
                "volumes",
                format!("{text:?}: {opt}: not supported: binds are mounted rprivate, Docker's default; remove it"),
            ),
            other => s.refuse(
                "volumes",
                format!("{text:?}: option {other:?} is not supported"),
            ),
        }
    }
    let source = if source.starts_with(['/', '.', '~']) {
        bind_source(s, source, true)
    } else {
        match volume_source(s, source) {
            Some(v) => v,
            None => return,
        }
    };
    mounts.push(mount(source, target.to_owned(), read_only));
}

/// One entry of `volumes` in the long form into `mounts` or `tmpfs`; an
/// anonymous volume's target is returned.
fn long_volume(
    s: &mut Service,
    i: usize,
    m: &Map<String, Value>,
    mounts: &mut Vec<RawMount>,
    tmpfs: &mut Vec<RawTmpfs>,
) -> Option<String> {
    let field = |name: &str| format!("volumes[{i}].{name}");
    let target = m.get("target").map(text).unwrap_or_default();
    let read_only = match m.get("read_only") {
        // Never defaulted: not a boolean, the project is refused.
        Some(v) => s.boolean(&field("read_only"), v)?,
        None => false,
    };
    let source = m.get("source").map(text);
    match m.get("type").map(text).as_deref() {
        Some("bind") => {
            let bind = m.get("bind");
            let create = match bind.and_then(|b| b.get("create_host_path")) {
                Some(v) => s.boolean(&field("bind.create_host_path"), v)?,
                None => true,
            };
            if let Some(p) = bind.and_then(|b| b.get("propagation")) {
                let p = text(p);
                if p != "rprivate" {
                    s.refuse(
                        &field("bind.propagation"),
                        format!("{p:?}: not supported: binds are mounted rprivate, Docker's default; remove it"),
                    );
                }
            }
            let Some(source) = source else {
                s.refuse(&field("source"), "a bind needs a source");
                return None;
            };
            let source = bind_source(s, &source, create);
            mounts.push(mount(source, target, read_only));
        }
        Some("volume") => {
            if let Some(v) = m.get("volume").and_then(|v| v.get("nocopy")) {
                if s.boolean(&field("volume.nocopy"), v) == Some(true) {
                    s.refuse(
                        &field("volume.nocopy"),
                        "not supported: Docker copies the image's files into a new, empty volume; remove it to accept that",
                    );
                }
            }
            let Some(key) = source else {
                // A volume of no name: the runtime's, carried across
                // recreates as compose carries it.
                if read_only {
                    s.refuse(
                        &field("read_only"),
                        format!("{target}: an anonymous volume is made empty: read-only it could hold nothing; give it a source"),
                    );
                    return None;
                }
                return Some(target);
            };
            if let Some(source) = volume_source(s, &key) {
                mounts.push(mount(source, target, read_only));
            }
        }
        Some("tmpfs") => {
            let mut t = RawTmpfs {
                target: some(target),
                ..RawTmpfs::default()
            };
            if let Some(o) = m.get("tmpfs").and_then(Value::as_object) {
                if let Some(size) = o.get("size") {
                    if let Some(n) = s.size(&field("tmpfs.size"), size) {
                        t.size = some(json!(n));
                    }
                }
                if let Some(mode) = o.get("mode") {
                    if let Some(mode) = tmpfs_mode(s, &field("tmpfs.mode"), mode) {
                        t.mode = some(mode);
                    }
                }
            }
            tmpfs.push(t);
        }
        other => s.refuse(
            &field("type"),
            format!("{other:?}: bind, volume and tmpfs are supported"),
        ),
    }
    None
}

/// A long-form tmpfs `mode` as compose reads it: a number, taken as the
/// mode's value (`0o1777` is the octal mode 1777; `1777` is the decimal
/// number 1777, mode 3361, and that is said); text is refused, as compose
/// refuses it.
fn tmpfs_mode(s: &mut Service, field: &str, v: &Value) -> Option<String> {
    let at = s.at(field);
    let n = match v {
        Value::Number(n) => n.as_u64(),
        _ => None,
    };
    match n {
        Some(n) if n <= 0o7777 => {
            let octal = format!("{n:03o}");
            if n & 0o6000 != 0 {
                s.p.note(
                    at,
                    format!("{n} is read as a number, as compose reads it: octal {octal}, with set-id bits; write 0o1777 for the usual sticky mode"),
                );
            }
            Some(octal)
        }
        _ => {
            s.p.refuse(
                at,
                format!("{v}: a mode is a number, as compose reads it (write it in octal: 0o1777)"),
            );
            None
        }
    }
}
