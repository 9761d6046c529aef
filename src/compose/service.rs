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
    if s.completed.contains(s.name) {
        c.run_once = some(true);
    }
    process(s, svc, &mut c);
    environment(s, svc, &mut c);
    super::mounts::read(s, svc, &mut c);
    super::attach::read(s, svc, &mut c);
    super::limits::read(s, svc, &mut c.options);
    super::gpus::read(s, svc, &mut c.options);
    if let Some(h) = svc.get("healthcheck") {
        c.health = super::health::read(s, h);
    }
    restart(s, svc, &mut c);
    super::logging::read(s, svc, &mut c);
    c
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
        ("platform", &mut o.platform),
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
    let mut compose_format = false;
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
            if let Some((file, format)) = env_file(s, &abs, required) {
                files.push(file);
                compose_format |= format == Format::Compose;
            }
        }
    }
    c.env_files = list(files);
    if compose_format {
        c.env_files_format = some("compose".to_owned());
    }
}

/// How an env file must be read for the container to get compose's
/// values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// As `docker run --env-file` reads it: each value as written.
    Docker,
    /// As compose reads it (quotes, escapes, `export`, comments).
    Compose,
}

/// One env file: its path, and the format the container reads it in to
/// get compose's values. Compose expands a `${VARIABLE}` (and a name
/// alone) from the environment import runs in, `.env` and the file's
/// earlier lines; the apply reads the file at creation without any: a
/// file with a value to expand is refused, naming its lines.
fn env_file(s: &mut Service, abs: &std::path::Path, required: bool) -> Option<(String, Format)> {
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
    drop(expand);
    // What the apply reads in compose's format: the same but for what
    // was expanded.
    let plain: BTreeMap<String, String> = match crate::container_spec::compose_env_file(&text) {
        Ok(pairs) => pairs.into_iter().collect(),
        Err(e) => {
            s.refuse("env_file", format!("{shown}: {e}"));
            return None;
        }
    };
    // The plain reading's keys are compose's but for names alone, which
    // only compose gives values (from the environment): each is a
    // difference found here.
    let from_outside: std::collections::BTreeSet<usize> = compose
        .iter()
        .filter(|p| plain.get(&p.key) != Some(&p.value))
        .map(|p| p.line)
        .collect();
    if !from_outside.is_empty() {
        let lines: Vec<String> = from_outside.iter().take(10).map(usize::to_string).collect();
        s.refuse(
            "env_file",
            format!(
                "{shown}: line{} {}{}: a value compose expands (${{VARIABLE}}, or a name alone), which the container would read as written: write it out, or give it in environment:",
                if lines.len() == 1 { "" } else { "s" },
                lines.join(", "),
                if from_outside.len() > 10 { ", ..." } else { "" }
            ),
        );
        return None;
    }
    // Docker's env-file is one variable a line, each read on its own.
    let mut theirs: BTreeMap<String, String> = BTreeMap::new();
    let mut docker_reads_it = true;
    for line in text.lines() {
        match crate::container_spec::parse_env_file(line) {
            Ok(pairs) => theirs.extend(pairs),
            Err(_) => docker_reads_it = false,
        }
    }
    let same = docker_reads_it
        && theirs.len() == plain.len()
        && compose.iter().all(|p| theirs.get(&p.key) == Some(&p.value));
    Some((
        shown,
        if same {
            Format::Docker
        } else {
            Format::Compose
        },
    ))
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
