//! A service's mounts: `volumes` in both syntaxes (binds made absolute,
//! a missing source declared as a directory as compose makes it, named
//! volumes by their top-level names, tmpfs), `secrets` and `configs` as
//! read-only files, `tmpfs` and `devices`.

use serde_json::{json, Map, Value};

use super::service::{strings, Service};
use super::top::text;
use super::{paths, units};

impl Service<'_> {
    pub(super) fn mounts(&mut self, svc: &Map<String, Value>, c: &mut Map<String, Value>) {
        let mut mounts = Vec::new();
        let mut tmpfs = Vec::new();
        if let Some(Value::Array(entries)) = svc.get("volumes") {
            for entry in entries {
                match entry {
                    Value::String(s) => self.short_volume(s, &mut mounts),
                    Value::Object(m) => self.long_volume(m, &mut mounts, &mut tmpfs),
                    _ => self.refuse("volumes", "expected a string or a mapping"),
                }
            }
        }
        for (kind, default_dir) in [("secrets", "/run/secrets/"), ("configs", "/")] {
            let Some(Value::Array(entries)) = svc.get(kind) else {
                continue;
            };
            for entry in entries {
                let (source, target) = match entry {
                    Value::Object(m) => {
                        for k in m.keys() {
                            if !["source", "target"].contains(&k.as_str()) {
                                self.refuse(kind, format!("{k}: not supported (a secret or config is mounted read-only as its file is); remove it"));
                            }
                        }
                        (
                            m.get("source").map(text).unwrap_or_default(),
                            m.get("target").map(text),
                        )
                    }
                    other => (text(other), None),
                };
                let files = if kind == "secrets" {
                    &self.top.secrets
                } else {
                    &self.top.configs
                };
                let Some(file) = files.get(&source).cloned() else {
                    self.refuse(
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
                mounts.push(json!({"source": file.display().to_string(), "target": target, "read-only": true}));
            }
        }
        if let Some(v) = svc.get("tmpfs") {
            for entry in strings(v) {
                let (target, opts) = entry.split_once(':').unwrap_or((&entry, ""));
                let mut t = json!({"target": target});
                for opt in opts.split(',').filter(|o| !o.is_empty()) {
                    match opt.split_once('=') {
                        Some(("size", s)) => match units::bytes(s) {
                            Ok(n) => t["size"] = json!(n),
                            Err(e) => self.refuse("tmpfs", e),
                        },
                        Some(("mode", m)) => t["mode"] = json!(m),
                        _ => self.refuse("tmpfs", format!("{opt:?}: size and mode are supported")),
                    }
                }
                tmpfs.push(t);
            }
        }
        if !mounts.is_empty() {
            c.insert("mounts".into(), Value::Array(mounts));
        }
        if !tmpfs.is_empty() {
            c.insert("tmpfs".into(), Value::Array(tmpfs));
        }
        if let Some(v) = svc.get("devices") {
            let mut devices = Vec::new();
            for entry in strings(v) {
                let parts: Vec<&str> = entry.split(':').collect();
                let d = match parts.as_slice() {
                    [p] => json!({"path": p}),
                    [p, t] if t.starts_with('/') => json!({"path": p, "target": t}),
                    [p, perms] => json!({"path": p, "permissions": perms}),
                    [p, t, perms] => json!({"path": p, "target": t, "permissions": perms}),
                    _ => {
                        self.refuse(
                            "devices",
                            format!("{entry:?} is not PATH[:TARGET[:PERMISSIONS]]"),
                        );
                        continue;
                    }
                };
                devices.push(d);
            }
            c.insert("devices".into(), Value::Array(devices));
        }
    }

    /// A bind source: absolute; one that does not exist is declared as a
    /// directory, as compose makes it.
    fn bind_source(&mut self, source: &str, create: bool) -> String {
        let abs = paths::absolute(self.project, source).display().to_string();
        if !std::path::Path::new(&abs).exists() {
            if create {
                let at = self.at("volumes");
                self.p.note(at, format!("{abs} does not exist: declared as a directory, made by the apply as compose makes it"));
                self.dirs.insert(abs.clone());
            } else {
                self.refuse(
                    "volumes",
                    format!("{abs} does not exist (bind.create_host_path is false)"),
                );
            }
        }
        abs
    }

    fn volume_source(&mut self, key: &str) -> Option<String> {
        match self.top.volumes.get(key) {
            Some(v) => Some(v.name.clone()),
            None => {
                self.refuse(
                    "volumes",
                    format!("{key:?} is not declared in the top-level volumes"),
                );
                None
            }
        }
    }

    fn short_volume(&mut self, text: &str, mounts: &mut Vec<Value>) {
        let parts: Vec<&str> = text.split(':').collect();
        let (source, target, opts) = match parts.as_slice() {
            [_] => {
                self.refuse(
                    "volumes",
                    format!("{text:?}: an anonymous volume: give it a name (NAME:{text}) to keep its data, then import again"),
                );
                return;
            }
            [s, t] => (*s, *t, ""),
            [s, t, o] => (*s, *t, *o),
            _ => {
                self.refuse("volumes", format!("{text:?} is not SOURCE:TARGET[:MODE]"));
                return;
            }
        };
        let mut read_only = false;
        for opt in opts.split(',').filter(|o| !o.is_empty()) {
            match opt {
                "ro" => read_only = true,
                "rw" | "z" | "Z" | "cached" | "delegated" | "consistent" => {}
                other => self.refuse(
                    "volumes",
                    format!("{text:?}: option {other:?} is not supported"),
                ),
            }
        }
        let source = if source.starts_with(['/', '.', '~']) {
            self.bind_source(source, true)
        } else {
            match self.volume_source(source) {
                Some(s) => s,
                None => return,
            }
        };
        mounts.push(json!({"source": source, "target": target, "read-only": read_only}));
    }

    fn long_volume(
        &mut self,
        m: &Map<String, Value>,
        mounts: &mut Vec<Value>,
        tmpfs: &mut Vec<Value>,
    ) {
        for k in m.keys() {
            if ![
                "type",
                "source",
                "target",
                "read_only",
                "bind",
                "volume",
                "tmpfs",
                "consistency",
            ]
            .contains(&k.as_str())
            {
                self.refuse("volumes", format!("{k}: not supported in a volume entry"));
            }
        }
        let target = m.get("target").map(text).unwrap_or_default();
        let read_only = m.get("read_only").and_then(Value::as_bool).unwrap_or(false);
        let source = m.get("source").map(text);
        match m.get("type").map(text).as_deref() {
            Some("bind") => {
                let create = m
                    .get("bind")
                    .and_then(|b| b.get("create_host_path"))
                    .and_then(Value::as_bool)
                    .unwrap_or(true);
                let Some(source) = source else {
                    return self.refuse("volumes", "a bind needs a source");
                };
                let source = self.bind_source(&source, create);
                mounts.push(json!({"source": source, "target": target, "read-only": read_only}));
            }
            Some("volume") => {
                if m.get("volume").and_then(|v| v.get("subpath")).is_some() {
                    self.refuse("volumes", "volume.subpath: not supported");
                }
                let Some(key) = source else {
                    return self.refuse(
                        "volumes",
                        format!("{target}: an anonymous volume: give it a source to keep its data"),
                    );
                };
                if let Some(source) = self.volume_source(&key) {
                    mounts
                        .push(json!({"source": source, "target": target, "read-only": read_only}));
                }
            }
            Some("tmpfs") => {
                let mut t = json!({"target": target});
                if let Some(o) = m.get("tmpfs").and_then(Value::as_object) {
                    if let Some(size) = o.get("size") {
                        match units::bytes(&text(size)) {
                            Ok(n) => t["size"] = json!(n),
                            Err(e) => self.refuse("volumes", e),
                        }
                    }
                    if let Some(mode) = o.get("mode") {
                        // Compose writes the mode as a number (1777 octal
                        // read as decimal by YAML): kept as the digits.
                        t["mode"] = json!(text(mode));
                    }
                }
                tmpfs.push(t);
            }
            other => self.refuse(
                "volumes",
                format!("type {other:?}: bind, volume and tmpfs are supported"),
            ),
        }
    }
}
