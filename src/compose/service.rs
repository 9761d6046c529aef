//! One compose service as one `container` resource, built as the
//! declaration's own raw types ([`crate::declaration::raw`]): its process
//! (command, entrypoint, user, privileges), its environment and env files,
//! and its restart policy here; mounts, networks and ports, limits and
//! the health check in the files beside. Which keys exist at all was
//! settled by the walk of the classification table ([`super::classify`]);
//! here each is read as compose reads it ([`super::cast`]), and what it
//! cannot honour is refused naming the field.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::context::Service;
use super::values::{list, some, string_map, strings, strings_map, text};
use super::{cast, dotenv, input, paths, problems::Problems};
use crate::declaration::raw::{Field, RawContainer, RawOptions};

/// A command or entrypoint: a list as written, a string split as compose
/// splits it (shell words, quotes honoured, no shell run). `Some([])`:
/// written empty (`[]`, `""`).
fn args(v: &Value, at: String, p: &mut Problems) -> Option<Vec<String>> {
    match v {
        Value::String(s) => match shlex::split(s) {
            Some(words) => Some(words),
            None => {
                p.refuse(at, "a quote is left open");
                None
            }
        },
        Value::Array(items) => Some(items.iter().map(text).collect()),
        Value::Null => None,
        _ => {
            p.refuse(at, "expected a string or a list");
            None
        }
    }
}

/// The container resource of `svc`.
pub fn container(s: &mut Service, svc: &Map<String, Value>) -> RawContainer {
    let name = svc
        .get("container_name")
        .map(text)
        .unwrap_or_else(|| format!("{}-{}-1", s.project.name, s.name));
    let mut c = RawContainer {
        id: some(s.name.to_owned()),
        module: some(s.project.name.clone()),
        name: some(name),
        ..RawContainer::default()
    };
    match svc.get("image") {
        Some(image) => c.image = some(text(image)),
        None if svc.contains_key("build") => {}
        None => s.refuse(
            "image",
            "missing: mesh-host runs published images; give the service one",
        ),
    }
    count(s, svc);
    if s.completed.contains(s.name) {
        c.run_once = some(true);
    }
    process(s, svc, &mut c);
    environment(s, svc, &mut c);
    super::mounts::read(s, svc, &mut c);
    super::attach::read(s, svc, &mut c);
    super::limits::read(s, svc, &mut c.options);
    if let Some(h) = svc.get("healthcheck") {
        c.health = super::health::read(s, h);
    }
    restart(s, svc, &mut c);
    super::logging::read(s, svc, &mut c);
    c
}

/// `deploy.replicas` and `scale`: one container, as one node runs it.
fn count(s: &mut Service, svc: &Map<String, Value>) {
    let replicas = svc.get("deploy").and_then(|d| d.get("replicas"));
    for (field, v) in [("deploy.replicas", replicas), ("scale", svc.get("scale"))] {
        let Some(v) = v else { continue };
        match s.integer(field, v) {
            Some(1) | None => {}
            Some(0) => s.refuse(
                field,
                "0: compose starts no container of this service; leave the service out (or give it a profile)",
            ),
            Some(n) => s.refuse(
                field,
                format!("{n}: one container per service on one node"),
            ),
        }
    }
}

fn process(s: &mut Service, svc: &Map<String, Value>, c: &mut RawContainer) {
    let o: &mut RawOptions = &mut c.options;
    if let Some(v) = svc.get("command") {
        let at = s.at("command");
        match args(v, at, s.p) {
            Some(words) if words.is_empty() => s.note(
                "command",
                "empty: Docker runs the image's own command for an empty one, under compose too; left out",
            ),
            Some(words) => c.command = list(words),
            None => {}
        }
    }
    if let Some(v) = svc.get("entrypoint") {
        let at = s.at("entrypoint");
        if let Some(words) = args(v, at, s.p) {
            // Empty: the image's entrypoint cleared, as compose clears it.
            o.entrypoint = Field::Present(words.into_iter().map(Field::Present).collect());
        }
    }
    for (from, to) in [
        ("hostname", &mut o.hostname),
        ("working_dir", &mut o.working_dir),
        ("stop_signal", &mut o.stop_signal),
    ] {
        if let Some(v) = svc.get(from) {
            *to = some(text(v));
        }
    }
    if let Some(v) = svc.get("user") {
        c.user = some(text(v));
    }
    if let Some(v) = svc.get("stop_grace_period") {
        let at = s.at("stop_grace_period");
        if let Some(d) = cast::duration(s.p, &at, v) {
            match super::units::seconds_down(d) {
                Ok(s) => o.stop_grace = some(json!(s)),
                Err(e) => s.refuse("stop_grace_period", e),
            }
        }
    }
    for (from, to) in [
        ("init", &mut o.init),
        ("privileged", &mut o.privileged),
        ("read_only", &mut o.read_only_root),
    ] {
        if let Some(v) = svc.get(from) {
            let at = format!("{}: {from}", s.name);
            if let Some(b) = cast::boolean(s.p, &at, v) {
                *to = some(b);
            }
        }
    }
    if let Some(v) = svc.get("cap_add") {
        o.cap_add = some(strings(v).into_iter().map(Field::Present).collect());
    }
    if let Some(v) = svc.get("cap_drop") {
        o.cap_drop = some(strings(v).into_iter().map(Field::Present).collect());
    }
    super::security::read(s, svc, o);
    let labels = string_map(svc.get("labels"));
    // The labels by which watchtower and Podman's auto-update follow a
    // tag: mesh-host update does it here (docs/updates.md).
    let follows = |key: &str, value: &str| {
        labels
            .get(key)
            .is_some_and(|v| text(v).eq_ignore_ascii_case(value))
    };
    if follows("com.centurylinklabs.watchtower.enable", "true")
        || follows("io.containers.autoupdate", "registry")
    {
        c.update = some("registry".to_string());
    }
    o.labels = strings_map(labels);
    if let Some(v) = svc.get("dns") {
        c.dns = some(strings(v).into_iter().map(Field::Present).collect());
    }
    let mut hosts = Map::new();
    if let Some(v) = svc.get("extra_hosts") {
        for (name, ip) in super::merge::as_map(v.clone(), ':') {
            hosts.insert(name, json!(text(&ip)));
        }
    }
    o.extra_hosts = strings_map(hosts);
    o.sysctls = strings_map(string_map(svc.get("sysctls")));
}

fn environment(s: &mut Service, svc: &Map<String, Value>, c: &mut RawContainer) {
    let mut env = Map::new();
    if let Some(v) = svc.get("environment") {
        for (k, v) in super::merge::as_map(v.clone(), '=') {
            match v {
                // A name alone takes the value from the environment
                // compose runs in, and is left out when it has none.
                Value::Null => {
                    if let Some(found) = s.project.variables.get(&k) {
                        env.insert(k, json!(found));
                    }
                }
                other => {
                    env.insert(k, json!(text(&other)));
                }
            }
        }
    }
    c.env = strings_map(env);
    let mut files = Vec::new();
    if let Some(v) = svc.get("env_file") {
        let entries: Vec<Value> = match v {
            Value::Array(items) => items.clone(),
            other => vec![other.clone()],
        };
        for entry in entries {
            let (path, required) = match &entry {
                Value::Object(m) => {
                    let required = match m.get("required") {
                        Some(r) => match s.boolean("env_file.required", r) {
                            Some(b) => b,
                            None => continue,
                        },
                        None => true,
                    };
                    (m.get("path").map(text).unwrap_or_default(), required)
                }
                other => (text(other), true),
            };
            let abs = paths::absolute(s.project, &path);
            if let Some(file) = env_file(s, &abs, required) {
                files.push(file);
            }
        }
    }
    c.env_files = list(files);
}

/// One env file: its path when compose and the declaration's
/// `env-files` (read as `docker run --env-file` reads them: each
/// value as written) give the container the same values.
fn env_file(s: &mut Service, abs: &std::path::Path, required: bool) -> Option<String> {
    let shown = abs.display().to_string();
    let text = {
        let mut budget = s.project.budget.borrow_mut();
        input::read_text(abs, &mut budget)
    };
    let text = match text {
        Ok(t) => t,
        Err(input::Unread::Missing) if !required => {
            s.note(
                "env_file",
                format!("{shown} does not exist and is not required; left out"),
            );
            return None;
        }
        Err(e) => {
            s.refuse("env_file", format!("{shown} {}", e.reason()));
            return None;
        }
    };
    let variables = &s.project.variables;
    let environment = |name: &str| variables.get(name).cloned();
    let mut unset = Vec::new();
    let mut expand = dotenv::expander(&environment, &shown, &mut unset);
    let compose = match dotenv::read_lines(&text, &mut expand, &environment) {
        Ok(pairs) => pairs,
        Err(e) => {
            s.refuse("env_file", format!("{shown}: {e}"));
            return None;
        }
    };
    // Docker's env-file is one variable a line, each read on its own.
    let mut theirs: BTreeMap<String, (String, usize)> = BTreeMap::new();
    let mut lines = std::collections::BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        match crate::container_spec::parse_env_file(line) {
            Ok(pairs) => {
                for (k, v) in pairs {
                    theirs.insert(k, (v, i + 1));
                }
            }
            Err(_) => {
                lines.insert(i + 1);
            }
        }
    }
    for pair in &compose {
        match theirs.get(&pair.key) {
            Some((v, _)) if *v == pair.value => {}
            _ => {
                lines.insert(pair.line);
            }
        }
    }
    let keys: std::collections::HashSet<&str> = compose.iter().map(|p| p.key.as_str()).collect();
    for (k, (_, line)) in &theirs {
        if !keys.contains(k.as_str()) {
            lines.insert(*line);
        }
    }
    drop(expand);
    if lines.is_empty() {
        return Some(shown);
    }
    let shown_lines: Vec<String> = lines.iter().take(10).map(usize::to_string).collect();
    let why = format!(
        "{shown}: line{} {}{}: read otherwise by compose (quotes, `export`, a comment or a ${{VARIABLE}} taken off or expanded) than by an env-file, whose values are taken as written: write them plainly, then import again",
        if lines.len() == 1 { "" } else { "s" },
        shown_lines.join(", "),
        if lines.len() > 10 { ", ..." } else { "" }
    );
    s.refuse("env_file", why);
    None
}

fn restart(s: &mut Service, svc: &Map<String, Value>, c: &mut RawContainer) {
    let Some(v) = svc.get("restart") else { return };
    let policy = text(v);
    if !c.run_once.is_absent() {
        if policy != "no" {
            s.note(
                "restart",
                format!("{policy}: not kept: another service waits for this one to complete (service_completed_successfully), so it is a run-once step, run to completion at each apply"),
            );
        }
        return;
    }
    let word = match policy.as_str() {
        "no" | "always" | "unless-stopped" | "on-failure" => policy.clone(),
        p if p.starts_with("on-failure:") => {
            s.note(
                "restart",
                format!("{p}: the retry count is left out; Docker retries without end"),
            );
            "on-failure".into()
        }
        other => {
            s.refuse(
                "restart",
                format!("{other:?}: no, always, on-failure or unless-stopped"),
            );
            return;
        }
    };
    c.options.restart = some(word);
}
