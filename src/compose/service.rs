//! One compose service as one `container` resource: every field mapped,
//! noted (it means nothing on a node) or refused with the fix, never
//! dropped in silence. See docs/compose.md for the table.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use super::top::{string_map, text, TopLevel};
use super::{paths, ports, units, Problems};
use crate::compose::project::Project;

/// What each refused field is told (`web: build: not supported: ...`).
const REFUSED: &[(&str, &str)] = &[
    (
        "build",
        "not supported: mesh-host runs published images; build and push it, then import again",
    ),
    (
        "extends",
        "not supported: write the service out in full, then import again",
    ),
    (
        "links",
        "not supported: services on one network find each other by name; remove it",
    ),
    (
        "platform",
        "not supported: the image's own platform runs; pin the digest of the one you want",
    ),
    (
        "runtime",
        "not supported: containers run with the runtime's default; remove it",
    ),
    (
        "external_links",
        "not supported: join the other container's network instead",
    ),
    (
        "logging",
        "not supported: a container logs through the runtime's default driver; remove it",
    ),
    (
        "scale",
        "not supported: one container per service on one node",
    ),
];

/// Fields that mean nothing on a node: said on stderr, not declared.
const NOTED: &[&str] = &[
    "expose",
    "stdin_open",
    "tty",
    "pull_policy",
    "profiles",
    "attach",
];

/// Fields mapped below.
const MAPPED: &[&str] = &[
    "image",
    "container_name",
    "command",
    "entrypoint",
    "environment",
    "env_file",
    "volumes",
    "ports",
    "networks",
    "network_mode",
    "healthcheck",
    "depends_on",
    "secrets",
    "configs",
    "restart",
    "hostname",
    "working_dir",
    "user",
    "labels",
    "stop_signal",
    "stop_grace_period",
    "init",
    "cap_add",
    "cap_drop",
    "privileged",
    "read_only",
    "security_opt",
    "mem_limit",
    "mem_reservation",
    "cpus",
    "pids_limit",
    "shm_size",
    "tmpfs",
    "ulimits",
    "sysctls",
    "extra_hosts",
    "devices",
    "dns",
    "deploy",
];

pub(super) fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.iter().map(text).collect(),
        Value::Null => Vec::new(),
        other => vec![text(other)],
    }
}

/// A command or entrypoint: a list as written, a string split as compose
/// splits it (shell words, quotes honoured, no shell run).
fn args(v: &Value, at: String, p: &mut Problems) -> Option<Vec<String>> {
    match v {
        Value::String(s) => match shlex::split(s) {
            Some(words) if !words.is_empty() => Some(words),
            Some(_) => None,
            None => {
                p.refuse(at, format!("{s:?}: a quote is left open"));
                None
            }
        },
        Value::Array(items) if items.is_empty() => None,
        Value::Array(items) => Some(items.iter().map(text).collect()),
        Value::Null => None,
        _ => {
            p.refuse(at, "expected a string or a list");
            None
        }
    }
}

/// Why an env file would give the container other values through
/// mesh-host's `env-files` (read as `docker run --env-file` reads them:
/// each value as written) than compose gives (quotes taken off, `export`
/// and trailing comments dropped); `None` when both read it alike.
fn read_otherwise(path: &std::path::Path) -> Option<String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return Some(format!("{}: cannot be read: {e}", path.display())),
    };
    let compose = super::project::read_dotenv(&text);
    let ours = crate::container_spec::parse_env_file(&text);
    match (compose, ours) {
        (Ok(c), Ok(o)) if c == o => None,
        (Ok(c), Ok(o)) => {
            let differ: Vec<&str> = c
                .iter()
                .zip(o.iter())
                .filter(|(a, b)| a != b)
                .map(|(a, _)| a.0.as_str())
                .collect();
            Some(format!(
                "{}: {} read otherwise by compose (quotes, `export` or a comment taken off) than by an env-file, whose values are taken as written: write them plainly, then import again",
                path.display(),
                if differ.is_empty() { "its lines are".to_owned() } else { differ.join(", ") }
            ))
        }
        (Err(e), _) | (_, Err(e)) => Some(format!("{}: {e}", path.display())),
    }
}

/// The context one service is read in.
pub struct Service<'a> {
    pub project: &'a Project,
    pub top: &'a TopLevel,
    pub name: &'a str,
    pub p: &'a mut Problems,
    /// Directories to declare (bind sources compose would make).
    pub dirs: &'a mut BTreeSet<String>,
    /// Services that must have run to completion first (become run-once).
    pub completed: &'a BTreeSet<String>,
}

impl Service<'_> {
    pub(super) fn at(&self, field: &str) -> String {
        format!("{}: {field}", self.name)
    }

    pub(super) fn refuse(&mut self, field: &str, why: impl Into<String>) {
        let at = self.at(field);
        self.p.refuse(at, why);
    }

    /// The container resource of `svc`.
    pub fn container(&mut self, svc: &Map<String, Value>) -> Value {
        let mut c = Map::new();
        c.insert("id".into(), json!(self.name));
        c.insert("type".into(), json!("container"));
        c.insert("module".into(), json!(self.project.name));
        let name = svc
            .get("container_name")
            .map(text)
            .unwrap_or_else(|| format!("{}-{}-1", self.project.name, self.name));
        c.insert("name".into(), json!(name));
        match svc.get("image") {
            Some(image) => {
                c.insert("image".into(), json!(text(image)));
            }
            None if svc.contains_key("build") => {}
            None => self.refuse(
                "image",
                "missing: mesh-host runs published images; give the service one",
            ),
        }
        for (field, why) in REFUSED {
            if svc.contains_key(*field) {
                self.refuse(field, *why);
            }
        }
        for (field, _) in svc {
            let f = field.as_str();
            if f.starts_with("x-") || MAPPED.contains(&f) || REFUSED.iter().any(|(r, _)| *r == f) {
                continue;
            }
            if NOTED.contains(&f) {
                if f != "profiles" {
                    let at = self.at(f);
                    self.p.note(at, "means nothing on a node; left out");
                }
                continue;
            }
            self.refuse(
                f,
                "not supported by mesh-host import; remove it, or declare its effect by hand after import",
            );
        }
        if self.completed.contains(self.name) {
            c.insert("run-once".into(), json!(true));
        }
        self.process(svc, &mut c);
        self.environment(svc, &mut c);
        self.mounts(svc, &mut c);
        self.network(svc, &mut c);
        self.limits(svc, &mut c);
        self.health(svc, &mut c);
        self.restart(svc, &mut c);
        Value::Object(c)
    }

    fn process(&mut self, svc: &Map<String, Value>, c: &mut Map<String, Value>) {
        for (from, to) in [("command", "command"), ("entrypoint", "entrypoint")] {
            if let Some(v) = svc.get(from) {
                let at = self.at(from);
                if let Some(words) = args(v, at, self.p) {
                    c.insert(to.into(), json!(words));
                }
            }
        }
        for (from, to) in [
            ("hostname", "hostname"),
            ("working_dir", "working-dir"),
            ("user", "user"),
            ("stop_signal", "stop-signal"),
        ] {
            if let Some(v) = svc.get(from) {
                c.insert(to.into(), json!(text(v)));
            }
        }
        if let Some(v) = svc.get("stop_grace_period") {
            match units::seconds(&text(v)) {
                Ok(s) => {
                    c.insert("stop-grace".into(), json!(s));
                }
                Err(e) => self.refuse("stop_grace_period", e),
            }
        }
        for (from, to) in [
            ("init", "init"),
            ("privileged", "privileged"),
            ("read_only", "read-only-root"),
        ] {
            if let Some(v) = svc.get(from) {
                c.insert(to.into(), json!(v.as_bool().unwrap_or(text(v) == "true")));
            }
        }
        for (from, to) in [("cap_add", "cap-add"), ("cap_drop", "cap-drop")] {
            if let Some(v) = svc.get(from) {
                c.insert(to.into(), json!(strings(v)));
            }
        }
        if let Some(v) = svc.get("security_opt") {
            for opt in strings(v) {
                match opt.as_str() {
                    "no-new-privileges" | "no-new-privileges:true" | "no-new-privileges=true" => {
                        c.insert("no-new-privileges".into(), json!(true));
                    }
                    "no-new-privileges:false" | "no-new-privileges=false" => {}
                    other => self.refuse(
                        "security_opt",
                        format!("{other:?}: only no-new-privileges is supported; remove it"),
                    ),
                }
            }
        }
        let labels = string_map(svc.get("labels"));
        if !labels.is_empty() {
            c.insert("labels".into(), Value::Object(labels));
        }
        if let Some(v) = svc.get("dns") {
            c.insert("dns".into(), json!(strings(v)));
        }
        let mut hosts = Map::new();
        if let Some(v) = svc.get("extra_hosts") {
            for (name, ip) in super::merge::as_map(v.clone(), ':') {
                hosts.insert(name, json!(text(&ip)));
            }
        }
        if !hosts.is_empty() {
            c.insert("extra-hosts".into(), Value::Object(hosts));
        }
        let sysctls = string_map(svc.get("sysctls"));
        if !sysctls.is_empty() {
            c.insert("sysctls".into(), Value::Object(sysctls));
        }
    }

    fn environment(&mut self, svc: &Map<String, Value>, c: &mut Map<String, Value>) {
        let mut env = Map::new();
        if let Some(v) = svc.get("environment") {
            for (k, v) in super::merge::as_map(v.clone(), '=') {
                match v {
                    // A name alone takes the value from the environment
                    // compose runs in, and is left out when it has none.
                    Value::Null => {
                        if let Some(found) = self.project.variables.get(&k) {
                            env.insert(k, json!(found));
                        }
                    }
                    other => {
                        env.insert(k, json!(text(&other)));
                    }
                }
            }
        }
        if !env.is_empty() {
            c.insert("env".into(), Value::Object(env));
        }
        let mut files = Vec::new();
        if let Some(v) = svc.get("env_file") {
            let entries: Vec<Value> = match v {
                Value::Array(items) => items.clone(),
                other => vec![other.clone()],
            };
            for entry in entries {
                let (path, required) = match &entry {
                    Value::Object(m) => {
                        if m.contains_key("format") {
                            self.refuse("env_file", "format: not supported; remove it");
                        }
                        (
                            m.get("path").map(text).unwrap_or_default(),
                            m.get("required").and_then(Value::as_bool).unwrap_or(true),
                        )
                    }
                    other => (text(other), true),
                };
                let abs = paths::absolute(self.project, &path);
                if !abs.is_file() {
                    if required {
                        self.refuse("env_file", format!("{} does not exist", abs.display()));
                    } else {
                        let at = self.at("env_file");
                        self.p.note(
                            at,
                            format!(
                                "{} does not exist and is not required; left out",
                                abs.display()
                            ),
                        );
                    }
                    continue;
                }
                if let Some(why) = read_otherwise(&abs) {
                    self.refuse("env_file", why);
                    continue;
                }
                files.push(json!(abs.display().to_string()));
            }
        }
        if !files.is_empty() {
            c.insert("env-files".into(), Value::Array(files));
        }
    }

    fn network(&mut self, svc: &Map<String, Value>, c: &mut Map<String, Value>) {
        if svc.contains_key("networks") && svc.contains_key("network_mode") {
            self.refuse("network_mode", "network_mode and networks are exclusive");
        }
        if let Some(mode) = svc.get("network_mode").map(text) {
            match mode.as_str() {
                "host" | "none" | "bridge" => {
                    c.insert("network".into(), json!(mode));
                }
                other => self.refuse(
                    "network_mode",
                    format!("{other:?}: not supported: mesh-host joins host, none, bridge or networks; put both services on one network"),
                ),
            }
        } else {
            let joined: Vec<(String, Value)> = match svc.get("networks") {
                None | Some(Value::Null) => vec![("default".into(), Value::Null)],
                Some(Value::Array(items)) => items.iter().map(|i| (text(i), Value::Null)).collect(),
                Some(Value::Object(m)) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                Some(_) => {
                    self.refuse("networks", "expected a list or a mapping");
                    Vec::new()
                }
            };
            let mut networks = Vec::new();
            for (key, settings) in joined {
                let name = match self.top.networks.get(&key) {
                    Some(n) => n.name.clone(),
                    None if key == "default" => format!("{}_default", self.project.name),
                    None => {
                        self.refuse(
                            "networks",
                            format!("{key:?} is not declared in the top-level networks"),
                        );
                        continue;
                    }
                };
                // Compose gives each service its name as an alias on
                // every network it joins.
                let mut aliases = vec![self.name.to_string()];
                let mut entry = json!({"name": name});
                if let Value::Object(s) = settings {
                    for k in s.keys() {
                        if !["aliases", "ipv4_address", "priority"].contains(&k.as_str()) {
                            self.refuse("networks", format!("{key}.{k}: not supported"));
                        }
                    }
                    for a in s.get("aliases").map(strings).unwrap_or_default() {
                        if !aliases.contains(&a) {
                            aliases.push(a);
                        }
                    }
                    if let Some(ip) = s.get("ipv4_address") {
                        entry["ipv4-address"] = json!(text(ip));
                    }
                }
                entry["aliases"] = json!(aliases);
                networks.push(entry);
            }
            if !networks.is_empty() {
                c.insert("networks".into(), Value::Array(networks));
            }
        }
        if let Some(v) = svc.get("ports") {
            let mut published = Vec::new();
            for entry in match v {
                Value::Array(items) => items.clone(),
                other => vec![other.clone()],
            } {
                let read = match &entry {
                    Value::Object(m) => ports::long(m),
                    other => ports::short(&text(other)),
                };
                match read {
                    Ok(ps) => published.extend(ps.iter().map(|p| p.to_json())),
                    Err(e) => self.refuse("ports", e),
                }
            }
            if !published.is_empty() {
                c.insert("ports".into(), Value::Array(published));
            }
        }
    }

    fn limits(&mut self, svc: &Map<String, Value>, c: &mut Map<String, Value>) {
        let mut memory = svc.get("mem_limit").map(text);
        let mut reservation = svc.get("mem_reservation").map(text);
        let mut cpus = svc.get("cpus").map(text);
        let mut pids = svc.get("pids_limit").map(text);
        if let Some(deploy) = svc.get("deploy").and_then(Value::as_object) {
            for k in deploy.keys() {
                match k.as_str() {
                    "resources" | "replicas" => {}
                    other => self.refuse(
                        &format!("deploy.{other}"),
                        "not supported: one container per service on one node",
                    ),
                }
            }
            if let Some(n) = deploy.get("replicas").and_then(Value::as_u64) {
                if n > 1 {
                    self.refuse(
                        "deploy.replicas",
                        format!("{n}: one container per service on one node"),
                    );
                }
            }
            let resources = deploy.get("resources");
            let limits = resources.and_then(|r| r.get("limits"));
            let reservations = resources.and_then(|r| r.get("reservations"));
            if let Some(l) = limits.and_then(Value::as_object) {
                for (k, v) in l {
                    match k.as_str() {
                        "memory" => memory = Some(text(v)),
                        "cpus" => cpus = Some(text(v)),
                        "pids" => pids = Some(text(v)),
                        other => self
                            .refuse(&format!("deploy.resources.limits.{other}"), "not supported"),
                    }
                }
            }
            if let Some(r) = reservations.and_then(Value::as_object) {
                for (k, v) in r {
                    match k.as_str() {
                        "memory" => reservation = Some(text(v)),
                        other => self.refuse(
                            &format!("deploy.resources.reservations.{other}"),
                            "not supported: only memory is reserved",
                        ),
                    }
                }
            }
        }
        for (field, value, to) in [
            ("memory", memory, "memory"),
            ("memory reservation", reservation, "memory-reservation"),
        ] {
            if let Some(v) = value {
                match units::bytes(&v) {
                    Ok(n) => {
                        c.insert(to.into(), json!(n));
                    }
                    Err(e) => self.refuse(field, e),
                }
            }
        }
        if let Some(v) = cpus {
            match v.parse::<f64>() {
                Ok(n) => {
                    c.insert("cpus".into(), json!(n));
                }
                Err(_) => self.refuse("cpus", format!("{v:?} is not a number")),
            }
        }
        if let Some(v) = pids {
            match v.parse::<u64>() {
                Ok(n) => {
                    c.insert("pids-limit".into(), json!(n));
                }
                Err(_) => self.refuse("pids_limit", format!("{v:?} is not a whole number")),
            }
        }
        if let Some(v) = svc.get("shm_size") {
            match units::bytes(&text(v)) {
                Ok(n) => {
                    c.insert("shm-size".into(), json!(n));
                }
                Err(e) => self.refuse("shm_size", e),
            }
        }
        if let Some(Value::Object(u)) = svc.get("ulimits") {
            let mut out = Map::new();
            for (name, v) in u {
                let (soft, hard) = match v {
                    Value::Object(m) => (
                        m.get("soft").and_then(Value::as_u64),
                        m.get("hard").and_then(Value::as_u64),
                    ),
                    other => {
                        let n = other.as_u64().or_else(|| text(other).parse().ok());
                        (n, n)
                    }
                };
                match (soft, hard) {
                    (Some(s), Some(h)) => {
                        out.insert(name.clone(), json!({"soft": s, "hard": h}));
                    }
                    _ => self.refuse(&format!("ulimits.{name}"), "a number, or soft and hard"),
                }
            }
            c.insert("ulimits".into(), Value::Object(out));
        }
    }

    fn health(&mut self, svc: &Map<String, Value>, c: &mut Map<String, Value>) {
        let Some(Value::Object(h)) = svc.get("healthcheck") else {
            return;
        };
        if h.get("disable").and_then(Value::as_bool) == Some(true) {
            c.insert("health".into(), json!("none"));
            return;
        }
        let command: Option<Vec<String>> = match h.get("test") {
            Some(Value::String(s)) => Some(vec!["/bin/sh".into(), "-c".into(), s.clone()]),
            Some(Value::Array(items)) => {
                let words: Vec<String> = items.iter().map(text).collect();
                match words.first().map(String::as_str) {
                    Some("NONE") => {
                        c.insert("health".into(), json!("none"));
                        return;
                    }
                    Some("CMD") => Some(words[1..].to_vec()),
                    Some("CMD-SHELL") => {
                        Some(vec!["/bin/sh".into(), "-c".into(), words[1..].join(" ")])
                    }
                    _ => {
                        self.refuse("healthcheck.test", "starts with CMD, CMD-SHELL or NONE");
                        None
                    }
                }
            }
            None => {
                self.refuse(
                    "healthcheck.test",
                    "missing: mesh-host replaces the image's check whole; give the test",
                );
                None
            }
            Some(_) => {
                self.refuse("healthcheck.test", "expected a string or a list");
                None
            }
        };
        let Some(command) = command else { return };
        let mut health = json!({"command": command});
        for (from, to) in [
            ("interval", "interval"),
            ("timeout", "timeout"),
            ("start_period", "start-period"),
        ] {
            if let Some(v) = h.get(from) {
                match units::seconds(&text(v)) {
                    Ok(s) => health[to] = json!(s.max(1)),
                    Err(e) => self.refuse(&format!("healthcheck.{from}"), e),
                }
            }
        }
        if let Some(r) = h.get("retries") {
            health["retries"] = json!(r.as_u64().unwrap_or(3));
        }
        for k in h.keys() {
            if ![
                "test",
                "interval",
                "timeout",
                "start_period",
                "retries",
                "disable",
            ]
            .contains(&k.as_str())
            {
                self.refuse(&format!("healthcheck.{k}"), "not supported; remove it");
            }
        }
        c.insert("health".into(), health);
    }

    fn restart(&mut self, svc: &Map<String, Value>, c: &mut Map<String, Value>) {
        let Some(v) = svc.get("restart") else { return };
        if c.contains_key("run-once") {
            return;
        }
        let policy = text(v);
        let word = match policy.as_str() {
            "no" | "always" | "unless-stopped" | "on-failure" => policy.clone(),
            p if p.starts_with("on-failure:") => {
                let at = self.at("restart");
                self.p.note(
                    at,
                    format!("{p}: the retry count is left out; Docker retries without end"),
                );
                "on-failure".into()
            }
            other => {
                self.refuse(
                    "restart",
                    format!("{other:?}: no, always, on-failure or unless-stopped"),
                );
                return;
            }
        };
        c.insert("restart".into(), json!(word));
    }
}
