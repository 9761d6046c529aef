//! From a declared container to what the runtime creates, and what that
//! container *is*: its runtime-relevant fields and the content of what it
//! reads as configuration. Any change of either means the container must be
//! recreated, and the reason names what changed.
//!
//! Configuration is (CONTRACT "Apply"):
//!
//! - each env-file (at most [`MAX_ENV_FILE`] bytes, read whole);
//! - a bind-mounted regular file mounted **read-only** (a read-write one is
//!   the container's own data, a database or a log: it changes as the
//!   container runs and is never part of what the container is);
//! - each declared `file` under a bind-mounted directory.
//!
//! Every read goes through [`crate::store::open_config`]: never through a
//! symbolic link at the file or (below a mounted directory) on the way to
//! it, which is refused naming the resource and path; never from a FIFO,
//! socket or device (a FIFO planted where a declared file should be fails
//! the container at once instead of hanging the apply under its lock);
//! streamed and bounded ([`crate::store::MAX_HASHED`]). The mount source
//! itself is resolved as the runtime resolves it (a source that is a link,
//! such as `/etc/localtime`, is mounted as its target).

mod cache;
mod declared_fields;
pub mod dotenv;
pub mod grants;
mod planned;
mod reads;

pub use cache::Builds;
pub use declared_fields::DeclaredFields;
pub use planned::Planned;
use reads::FileReads;

use std::collections::BTreeMap;
use std::path::{Component, Path};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, CWD};
use rustix::io::Errno;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::declaration::{
    Container, Declaration, Health, MountSource, Resource, ResourceKind, Restart, Role,
};
use crate::runtime::{
    ContainerSpec, HealthSpec, MountSpec, NetworkAttach, PortSpec, ProcessSpec, RestartPolicy,
    LABEL_MANAGED, LABEL_MODULE, LABEL_RESOURCE, MANAGED_VALUE,
};

/// Label holding the container's identity digest, so that a listing alone
/// tells whether a container is what the declaration wants.
pub const LABEL_IDENTITY: &str = "mesh-host.identity";
/// Label holding the format of the identity; a container of an older format
/// is recreated once.
pub const LABEL_RECORD: &str = "mesh-host.record";
/// Label holding the container's role: `service`, `run-once` or `step`.
pub const LABEL_ROLE: &str = "mesh-host.role";
/// The current identity format.
pub const RECORD_FORMAT: &str = "1";

/// The largest env-file read (1 MiB): the kernel refuses a single variable
/// over 128 KiB and a whole environment much over 2 MiB at exec anyway.
pub const MAX_ENV_FILE: u64 = 1024 * 1024;

/// A declared container made ready for the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltContainer {
    /// What to create (shared with the step that runs it, if any).
    pub spec: std::sync::Arc<ContainerSpec>,
    /// The runtime-relevant declared fields, by field name (for reasons).
    pub fields: DeclaredFields,
    /// Each file read at creation and its SHA-256 (`None`: absent).
    pub reads: BTreeMap<String, Option<String>>,
    /// Digest of `fields` and `reads`: equal identity, same container.
    pub identity: String,
}

/// Why a container cannot be made ready.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{resource}: {reason}")]
pub struct SpecError {
    /// The resource id.
    pub resource: String,
    /// What went wrong, naming the file.
    pub reason: String,
}

/// The role label value of a container.
pub fn role_name(role: &Role) -> &'static str {
    match role {
        Role::Service => "service",
        Role::RunOnce => "run-once",
        Role::Scheduled(_) => "step",
    }
}

/// Build the runtime spec of `container` (resource `res` of `decl`).
///
/// Reads every file it needs; an apply builds through [`Builds`] instead,
/// which builds each container once and reads each file once.
pub fn build(
    decl: &Declaration,
    res: &Resource,
    container: &Container,
) -> Result<BuiltContainer, SpecError> {
    build_with(
        decl,
        res,
        container,
        &mut FileReads::default(),
        &Planned::new(),
    )
}

/// [`build`], the files read through `files` (each read once).
fn build_with(
    decl: &Declaration,
    res: &Resource,
    container: &Container,
    files: &mut FileReads,
    pending: &Planned,
) -> Result<BuiltContainer, SpecError> {
    let err = |reason: String| SpecError {
        resource: res.id.to_string(),
        reason,
    };
    let mut reads = BTreeMap::new();
    let mut env: Vec<(String, String)> = Vec::new();
    for file in &container.env_files {
        let (text, digest) = files
            .env_file(file.as_path(), |path| match pending.file(path) {
                Some(content) => String::from_utf8(content.to_vec())
                    .map_err(|_| "it is not UTF-8 text".to_string()),
                None => read_env_file(path),
            })
            .map_err(|e| err(format!("env-file {}: {e}", file.as_str())))?;
        reads.insert(file.as_str().to_string(), Some(digest.to_string()));
        let pairs = if container.env_files_compose {
            compose_env_file(text)
        } else {
            parse_env_file(text)
        };
        env.extend(pairs.map_err(|e| err(format!("env-file {}: {e}", file.as_str())))?);
    }
    // Declared env wins over env-files, as `docker run --env-file -e` does.
    env.extend(container.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    let env = each_name_once(env);
    let mut mounts = Vec::new();
    for m in &container.mounts {
        let source = match &m.source {
            MountSource::Path(p) => {
                let found = files
                    .mount(p.as_path(), m.read_only, |source, read_only| {
                        let mut found = BTreeMap::new();
                        record_mount_reads(decl, source, read_only, &mut found, pending)?;
                        Ok(found)
                    })
                    .map_err(err)?;
                reads.extend(found.iter().map(|(k, v)| (k.clone(), v.clone())));
                p.as_str().to_string()
            }
            MountSource::Volume(v) => v.to_string(),
        };
        mounts.push(MountSpec {
            source,
            target: m.target.as_str().to_string(),
            read_only: m.read_only,
        });
    }
    let role = role_name(&container.role);
    let access = grants::resolve(decl, container, pending).map_err(err)?;
    let mut fields: BTreeMap<String, Value> = [
        ("image", json!(container.image.as_str())),
        ("command", json!(container.command)),
        ("env", json!(container.env)),
        (
            "env-files",
            json!(container
                .env_files
                .iter()
                .map(|p| p.as_str())
                .collect::<Vec<_>>()),
        ),
        (
            "mounts",
            serde_json::to_value(&container.mounts).unwrap_or(Value::Null),
        ),
        (
            "network",
            serde_json::to_value(&container.network).unwrap_or(Value::Null),
        ),
        ("dns", json!(container.dns)),
        (
            "user",
            serde_json::to_value(&container.user).unwrap_or(Value::Null),
        ),
        ("role", json!(role)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    fields.extend(access.fields);
    // Each option only when declared, under its own name, so that a
    // change is named (`memory changed`) and a container declaring none
    // keeps the identity it had before they existed.
    if let Value::Object(options) = serde_json::to_value(&container.options).unwrap_or_default() {
        fields.extend(options);
    }
    // Only when declared, as `health` below: a container without ports
    // (or networks) keeps the identity it had before they existed.
    if !container.networks.is_empty() {
        fields.insert(
            "networks".to_string(),
            serde_json::to_value(&container.networks).unwrap_or(Value::Null),
        );
    }
    if !container.ports.is_empty() {
        fields.insert(
            "ports".to_string(),
            serde_json::to_value(&container.ports).unwrap_or(Value::Null),
        );
    }
    // Only when `compose`: a container reading its env-files as Docker
    // does keeps the identity it had before the format existed.
    if container.env_files_compose {
        fields.insert("env-files-format".to_string(), json!("compose"));
    }
    // Only when declared: the identity of a container without one stays
    // what it was before `health` existed (no recreate on upgrade).
    if let Some(health) = &container.health {
        fields.insert(
            "health".to_string(),
            serde_json::to_value(health).unwrap_or(Value::Null),
        );
    }
    let identity = identity_of(&fields, &reads);
    let fields = DeclaredFields::of(&fields);
    // Names and values of the program's are set borrowed, not copied
    // (thousands of specs carry them). Room for the six below and the
    // operator's, so the list is never grown past them.
    let mut labels = crate::runtime::Labels::with_capacity(6 + container.options.labels.len());
    labels.set(LABEL_MANAGED, MANAGED_VALUE);
    labels.set(LABEL_RESOURCE, res.id.to_string());
    labels.set(LABEL_ROLE, role);
    labels.set(LABEL_IDENTITY, identity.clone());
    labels.set(LABEL_RECORD, RECORD_FORMAT);
    if let Some(module) = &res.module {
        labels.set(LABEL_MODULE, module.to_string());
    }
    // The operator's labels never take a name of mesh-host's (refused by
    // the declaration's validation).
    for (k, v) in &container.options.labels {
        if !labels.contains_key(k) {
            labels.insert(k.clone(), v.clone());
        }
    }
    let o = &container.options;
    let process = ProcessSpec {
        entrypoint: o.entrypoint.clone(),
        working_dir: o.working_dir.clone(),
        platform: o.platform.clone(),
        hostname: o.hostname.clone(),
        stop_signal: o.stop_signal.clone(),
        stop_grace: o.stop_grace,
        init: o.init,
        cap_add: o.cap_add.clone(),
        cap_drop: o.cap_drop.clone(),
        privileged: o.privileged,
        read_only_root: o.read_only_root,
        no_new_privileges: o.no_new_privileges,
        security_opt: o.security_opt.clone(),
        logging: o.logging.as_ref().map(|l| crate::runtime::LogSpec {
            driver: l.driver.clone(),
            options: l
                .options
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }),
        memory: o.memory,
        memory_reservation: o.memory_reservation,
        nano_cpus: o.nano_cpus,
        pids_limit: o.pids_limit,
        shm_size: o.shm_size,
        tmpfs: o
            .tmpfs
            .iter()
            .map(|t| (t.target.clone(), t.docker_options()))
            .collect(),
        ulimits: o
            .ulimits
            .iter()
            .map(|(name, u)| (name.clone(), u.soft, u.hard))
            .collect(),
        sysctls: o
            .sysctls
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        extra_hosts: o
            .extra_hosts
            .iter()
            .map(|(name, ip)| format!("{name}:{ip}"))
            .collect(),
        devices: o
            .devices
            .iter()
            .map(|d| (d.path.clone(), d.target.clone(), d.permissions.clone()))
            .collect(),
        device_requests: o
            .device_requests
            .iter()
            .map(|r| crate::runtime::DeviceRequestSpec {
                driver: r.driver.clone().unwrap_or_default(),
                count: r.count.map_or(0, |c| c.docker()),
                device_ids: r.device_ids.clone(),
                capabilities: r.capabilities.clone(),
                options: r
                    .options
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            })
            .collect(),
    };
    let spec = ContainerSpec {
        name: container.name.to_string(),
        image: container.image.as_str().to_string(),
        command: container.command.clone(),
        env,
        mounts,
        anonymous_volumes: o.anonymous_volumes.clone(),
        network: container
            .network
            .as_ref()
            .map(|n| match serde_json::to_value(n) {
                Ok(Value::String(s)) => s,
                _ => String::new(),
            }),
        networks: container
            .networks
            .iter()
            .map(|n| NetworkAttach {
                network: n.name.to_string(),
                aliases: n.aliases.clone(),
                ipv4_address: n.ipv4_address,
                ipv6_address: n.ipv6_address,
            })
            .collect(),
        ports: container
            .ports
            .iter()
            .map(|p| PortSpec {
                host: p.host,
                container: p.container,
                protocol: p.protocol.as_str(),
                address: p.address,
            })
            .collect(),
        process: process.into(),
        dns: container.dns.clone(),
        user: access
            .user
            .or_else(|| container.user.as_ref().map(|u| u.to_string())),
        labels,
        restart: match (&container.role, o.restart) {
            (Role::Service, None | Some(Restart::UnlessStopped)) => RestartPolicy::UnlessStopped,
            (Role::Service, Some(Restart::Always)) => RestartPolicy::Always,
            (Role::Service, Some(Restart::OnFailure)) => RestartPolicy::OnFailure,
            _ => RestartPolicy::No,
        },
        cgroup_parent: None,
        auto_remove: false,
        groups: access.groups,
        health: container.health.as_ref().map(|h| Box::new(health_spec(h))),
        // A step's output goes to the journal as its fire's, which only
        // the run knows (crate::schedule::output).
        journal: None,
    };
    Ok(BuiltContainer {
        spec: spec.into(),
        fields,
        reads,
        identity,
    })
}

/// The runtime's form of a declared health check.
fn health_spec(health: &Health) -> HealthSpec {
    match health {
        Health::Disabled => HealthSpec::Disabled,
        Health::Check(c) => HealthSpec::Check {
            command: c.command.clone(),
            interval: c.interval,
            timeout: c.timeout,
            retries: c.retries,
            start_period: c.start_period,
        },
    }
}

/// What a bind mount gives the container to read as configuration: a
/// regular file mounted read-only, or the declared files under a mounted
/// directory (see the module documentation).
fn record_mount_reads(
    decl: &Declaration,
    source: &Path,
    read_only: bool,
    reads: &mut BTreeMap<String, Option<String>>,
    pending: &Planned,
) -> Result<(), String> {
    let shown = source.display();
    if let Some(content) = pending.file(source) {
        // A file the plan writes first: read as it will be.
        if read_only {
            reads.insert(source.display().to_string(), Some(pending_digest(content)));
        }
        return Ok(());
    }
    match std::fs::metadata(source) {
        Ok(meta) if meta.is_file() => {
            if !read_only {
                // The container's own data: never part of its identity.
                return Ok(());
            }
            // Resolved as the runtime resolves a mount source.
            let resolved = std::fs::canonicalize(source)
                .map_err(|e| format!("mount {shown}: cannot resolve it: {e}"))?;
            let digest = match crate::store::open_config(CWD, &resolved) {
                Ok(Some(file)) => Some(
                    crate::store::config_digest(file)
                        .map_err(|e| format!("mount {shown}: cannot read it: {e}"))?,
                ),
                Ok(None) => None,
                Err(e) => return Err(format!("mount {shown}: {e}")),
            };
            reads.insert(source.display().to_string(), digest);
        }
        Ok(meta) if meta.is_dir() => {
            declared_files_under(decl, source, pending, reads, true)?;
        }
        // A directory the plan makes (a declared one, or a parent of a
        // file it writes): the files the plan writes there, as written.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && pending.is_dir(source) => {
            declared_files_under(decl, source, pending, reads, false)?;
        }
        // Absent, or a socket/FIFO/device: the runtime reports what it makes
        // of it; it is no configuration to read.
        _ => {}
    }
    Ok(())
}

/// The declared files under the mounted directory `source`, each as the
/// plan writes it, else as found there (`exists`: the directory is there
/// now; else a file the plan does not write is absent).
fn declared_files_under(
    decl: &Declaration,
    source: &Path,
    pending: &Planned,
    reads: &mut BTreeMap<String, Option<String>>,
    exists: bool,
) -> Result<(), String> {
    for r in &decl.resources {
        if let ResourceKind::File(f) = &r.kind {
            let path = f.path.as_path();
            if path != source && path.starts_with(source) {
                let digest = match pending.file(path) {
                    Some(content) => Some(pending_digest(content)),
                    None if exists => declared_file_under(source, path)?,
                    None => None,
                };
                reads.insert(f.path.as_str().to_string(), digest);
            }
        }
    }
    Ok(())
}

/// The digest of a planned file, as reading it from disk would give it.
fn pending_digest(content: &[u8]) -> String {
    crate::store::hash_reader(content).unwrap_or_default()
}

/// The digest of declared file `path` under the mounted directory `source`,
/// walked to from `source` without following any link (a container would
/// read through one what the declaration does not say).
fn declared_file_under(source: &Path, path: &Path) -> Result<Option<String>, String> {
    let refuse_link = |at: &Path| {
        format!(
            "{} is a symbolic link under the mounted directory {}: refused, a link is never \
             followed out of a mount's source (declare the path it points to)",
            at.display(),
            source.display()
        )
    };
    let rel = path
        .strip_prefix(source)
        .map_err(|_| format!("{} is not under {}", path.display(), source.display()))?;
    let names: Vec<&std::ffi::OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    let Some((last, parents)) = names.split_last() else {
        return Ok(None);
    };
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    // The source itself as the runtime resolves it.
    let mut dir = rustix::fs::openat(CWD, source, dir_flags, Mode::empty())
        .map_err(|e| format!("mount {}: cannot open it: {e}", source.display()))?;
    let mut walked = source.to_path_buf();
    for name in parents {
        walked.push(name);
        dir = match rustix::fs::openat(&dir, *name, dir_flags | OFlags::NOFOLLOW, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e @ (Errno::LOOP | Errno::NOTDIR)) => {
                let is_link = rustix::fs::statat(&dir, *name, AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Symlink);
                return Err(if is_link {
                    refuse_link(&walked)
                } else {
                    format!(
                        "{} (a parent of {}) is not a directory: {e}",
                        walked.display(),
                        path.display()
                    )
                });
            }
            Err(e) => return Err(format!("cannot open {}: {e}", walked.display())),
        };
    }
    match crate::store::open_config(&dir, *last) {
        Ok(Some(file)) => crate::store::config_digest(file)
            .map(Some)
            .map_err(|e| format!("cannot read {}: {e}", path.display())),
        Ok(None) => Ok(None),
        Err(crate::store::ConfigReadError::Symlink) => Err(refuse_link(path)),
        Err(e) => Err(format!("{} {e}", path.display())),
    }
}

/// An env-file's text: never through a link at its name, never from a FIFO,
/// socket or device, at most [`MAX_ENV_FILE`] bytes.
fn read_env_file(path: &Path) -> Result<String, String> {
    let file = match crate::store::open_config(CWD, path) {
        Ok(Some(file)) => file,
        Ok(None) => return Err("No such file or directory (os error 2)".to_string()),
        Err(crate::store::ConfigReadError::Symlink) => return Err(
            "is a symbolic link: refused, a link is never followed (declare the path it points to)"
                .to_string(),
        ),
        Err(e) => return Err(e.to_string()),
    };
    let bytes = crate::store::read_config(file, MAX_ENV_FILE).map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_string())
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The identity digest of declared fields and reads.
pub fn identity_of(
    fields: &BTreeMap<String, Value>,
    reads: &BTreeMap<String, Option<String>>,
) -> String {
    // The text of `{"fields": …, "reads": …, "record": …}` (keys in this
    // order, the map's), written without a copy of the fields as values.
    #[derive(serde::Serialize)]
    struct Canonical<'a> {
        fields: &'a BTreeMap<String, Value>,
        reads: &'a BTreeMap<String, Option<String>>,
        record: &'a str,
    }
    let canonical = Canonical {
        fields,
        reads,
        record: RECORD_FORMAT,
    };
    sha256_hex(
        serde_json::to_string(&canonical)
            .unwrap_or_default()
            .as_bytes(),
    )
}

/// An env-file read as compose reads one ([`dotenv`]), its values taken
/// as they are once unquoted (`$$` a dollar): no variable is expanded at
/// creation (import refuses a file whose values would need one), and a
/// name alone takes no value.
pub fn compose_env_file(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut plain = |raw: &str, _: &std::collections::HashMap<String, String>, _: usize| {
        Ok(raw.replace("$$", "$"))
    };
    dotenv::read(text, &mut plain, &|_| None)
}

/// Parse an env-file the way `docker run --env-file` does: `KEY=VALUE`
/// lines, `#` comments and blank lines skipped, a bare `KEY` taken from the
/// host's own environment.
pub fn parse_env_file(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k, v.to_string()),
            None => (
                line.trim_end(),
                std::env::var(line.trim_end()).unwrap_or_default(),
            ),
        };
        if key.is_empty() || key.contains(char::is_whitespace) {
            // Never the line itself: an env-file may hold secrets, and a
            // line that is not KEY=VALUE may be one (a password alone).
            return Err(format!(
                "line {}: not a variable: KEY=VALUE, or KEY alone, the name not empty and without spaces",
                n + 1
            ));
        }
        out.push((key.to_string(), value));
    }
    Ok(out)
}

/// Each name once, where it first appears, with its last value: what the
/// process sees (of a name given twice the last wins) and what compose
/// sends (a file's name that `environment` sets again is not sent twice).
fn each_name_once(env: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut once: Vec<(String, String)> = Vec::with_capacity(env.len());
    for (name, value) in env {
        match at.get(&name) {
            Some(&i) => once[i].1 = value,
            None => {
                at.insert(name.clone(), once.len());
                once.push((name, value));
            }
        }
    }
    once
}

#[cfg(test)]
mod tests {
    use super::*;

    mod identity {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// The identity is the digest it always was (of the `json!`
            /// text of fields, reads and record): a container made by an
            /// older build is not recreated by an upgrade.
            #[test]
            fn is_the_digest_of_the_record_text(
                fields in prop::collection::btree_map(
                    "[a-z-]{1,8}",
                    prop_oneof![
                        "[a-z\\\\\"/@ \u{e9}]{0,12}".prop_map(Value::String),
                        any::<i64>().prop_map(|n| json!(n)),
                        prop::collection::vec("[a-z]{0,4}", 0..3).prop_map(|v| json!(v)),
                        Just(Value::Null),
                    ],
                    0..8,
                ),
                reads in prop::collection::btree_map(
                    "/[a-z/]{1,12}",
                    prop::option::of("[0-9a-f]{8}"),
                    0..4,
                ),
            ) {
                let text = json!({"fields": fields, "reads": reads, "record": RECORD_FORMAT}).to_string();
                prop_assert_eq!(identity_of(&fields, &reads), sha256_hex(text.as_bytes()));
            }
        }
    }

    #[test]
    fn env_file_lines() {
        let got = parse_env_file("# c\n\nA=1\nB = x\nC=a=b\n").unwrap_or_default();
        assert!(got.is_empty(), "a key with spaces is refused");
        let got = parse_env_file("# c\n\nA=1\nC=a=b\n  D=\n").expect("valid env-file");
        assert_eq!(
            got,
            vec![
                ("A".into(), "1".into()),
                ("C".into(), "a=b".into()),
                ("D".into(), "".into())
            ]
        );
        let e = parse_env_file("A=1\nB C=2\n").expect_err("bad key");
        assert!(e.contains("line 2"), "{e}");
        // A line that is not a variable is never quoted: it may be a secret.
        let e = parse_env_file("A=1\nroot:$y$j9T$hash secret:19000:0:99999:7:::\n")
            .expect_err("not an env-file");
        assert!(e.starts_with("line 2: "), "{e}");
        assert!(!e.contains("root") && !e.contains("secret"), "{e}");
    }

    fn parsed(resources: Value) -> Declaration {
        let doc = json!({"declaration": 1, "resources": resources});
        crate::declaration::parse(doc.to_string().as_bytes()).expect("valid")
    }

    fn container(mounts: Value, env_files: Value) -> Value {
        json!({"id": "app", "type": "container", "name": "app",
               "image": format!("registry.test/app@sha256:{}", "ab".repeat(32)),
               "mounts": mounts, "env-files": env_files})
    }

    fn built(decl: &Declaration) -> Result<BuiltContainer, SpecError> {
        let res = decl.resources.last().expect("container last");
        let ResourceKind::Container(c) = &res.kind else {
            panic!("a container");
        };
        build(decl, res, c)
    }

    #[test]
    fn a_name_an_env_file_and_env_both_set_is_sent_once_with_the_declared_value() {
        let dir = crate::test_dirs::test_dir();
        let file = dir.path().join("app.env");
        std::fs::write(&file, "HOST=file\nPORT=1\nHOST=file-again\n").expect("write");
        let mut c = container(json!([]), json!([file.display().to_string()]));
        c["env"] = json!({"HOST": "declared", "MODE": "x"});
        let b = built(&parsed(json!([c]))).expect("built");
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(
            b.spec.env,
            vec![
                pair("HOST", "declared"),
                pair("PORT", "1"),
                pair("MODE", "x")
            ]
        );
    }

    #[test]
    fn an_env_file_in_compose_s_format_is_read_so_and_part_of_the_identity() {
        let dir = crate::test_dirs::test_dir();
        let file = dir.path().join("app.env");
        std::fs::write(&file, "export A=\"quoted\" # note\nB='single'\n").expect("write");
        let files = json!([file.display().to_string()]);
        let docker = parsed(json!([container(json!([]), files.clone())]));
        let mut c = container(json!([]), files);
        c["env-files-format"] = json!("compose");
        let compose = parsed(json!([c]));
        // Docker's reading refuses the `export` line; compose's reads it.
        let e = built(&docker).expect_err("refused");
        assert!(e.reason.contains("line 1: not a variable"), "{e:?}");
        std::fs::write(&file, "A=\"quoted\" # note\nB='single'\n").expect("write");
        let (d, k) = (
            built(&docker).expect("built"),
            built(&compose).expect("built"),
        );
        let env = |b: &BuiltContainer| b.spec.env.clone();
        assert_eq!(
            env(&k),
            vec![
                ("A".to_string(), "quoted".to_string()),
                ("B".to_string(), "single".to_string())
            ]
        );
        assert_eq!(
            env(&d),
            vec![
                ("A".to_string(), "\"quoted\" # note".to_string()),
                ("B".to_string(), "'single'".to_string())
            ]
        );
        assert_ne!(d.identity, k.identity);
        assert_eq!(k.fields.get("env-files-format"), Some(json!("compose")));
        assert!(!d.fields.contains("env-files-format"));
        // Any other format is refused by name.
        let mut bad = container(json!([]), json!([]));
        bad["env-files-format"] = json!("shell");
        let doc = json!({"declaration": 1, "resources": [bad]});
        let e = crate::declaration::parse(doc.to_string().as_bytes()).expect_err("refused");
        assert!(
            format!("{e:?}").contains(r#"\"shell\" is not an env-file format"#),
            "{e:?}"
        );
    }

    #[test]
    fn only_read_only_file_mounts_are_configuration() {
        let dir = crate::test_dirs::test_dir();
        let db = dir.path().join("db.sqlite");
        let conf = dir.path().join("app.conf");
        std::fs::write(&db, b"rows").expect("write");
        std::fs::write(&conf, b"a=1").expect("write");
        let decl = parsed(json!([container(
            json!([
                {"source": db.display().to_string(), "target": "/data/db.sqlite", "read-only": false},
                {"source": conf.display().to_string(), "target": "/etc/app.conf", "read-only": true}
            ]),
            json!([])
        )]));
        let first = built(&decl).expect("built");
        assert_eq!(
            first.reads.keys().cloned().collect::<Vec<_>>(),
            vec![conf.display().to_string()]
        );
        // The container writes its database: the same container.
        std::fs::write(&db, b"more rows").expect("write");
        assert_eq!(built(&decl).expect("built").identity, first.identity);
        // Its configuration changed: another container.
        std::fs::write(&conf, b"a=2").expect("write");
        assert_ne!(built(&decl).expect("built").identity, first.identity);
    }

    #[test]
    fn declared_files_under_a_mounted_directory_never_block_or_follow_links() {
        let dir = crate::test_dirs::test_dir();
        let src = dir.path().join("conf");
        std::fs::create_dir_all(src.join("sub")).expect("mkdir");
        let declared = src.join("sub/app.conf");
        let file = json!({"id": "f", "type": "file", "path": declared.display().to_string(),
                          "content": "x"});
        let mounts = json!([{"source": src.display().to_string(), "target": "/conf"}]);
        let decl = parsed(json!([file, container(mounts, json!([]))]));
        // Absent, then present: read.
        assert_eq!(
            built(&decl)
                .expect("built")
                .reads
                .get(&declared.display().to_string()),
            Some(&None)
        );
        std::fs::write(&declared, b"x").expect("write");
        assert!(matches!(
            built(&decl)
                .expect("built")
                .reads
                .get(&declared.display().to_string()),
            Some(Some(_))
        ));
        // A FIFO where the file should be: refused at once, never opened
        // for a blocking read.
        std::fs::remove_file(&declared).expect("rm");
        let d = std::fs::File::open(src.join("sub")).expect("dir");
        rustix::fs::mknodat(
            &d,
            "app.conf",
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        let e = built(&decl).expect_err("a FIFO");
        assert_eq!(e.resource, "app");
        assert!(e.reason.contains("app.conf is a FIFO"), "{e}");
        // A link on the way out of the mounted directory: refused, naming it.
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(outside.join("app.conf"), b"secret").expect("write");
        std::fs::remove_dir_all(src.join("sub")).expect("rm");
        std::os::unix::fs::symlink(&outside, src.join("sub")).expect("link");
        let e = built(&decl).expect_err("a link");
        assert!(e.to_string().starts_with("app: "), "{e}");
        assert!(
            e.reason.contains(&format!(
                "{} is a symbolic link under the mounted directory",
                src.join("sub").display()
            )),
            "{e}"
        );
    }

    #[test]
    fn an_env_file_is_never_read_through_a_link_or_from_a_fifo() {
        let dir = crate::test_dirs::test_dir();
        let real = dir.path().join("real.env");
        std::fs::write(&real, b"A=1\n").expect("write");
        let link = dir.path().join("link.env");
        std::os::unix::fs::symlink(&real, &link).expect("link");
        let decl = parsed(json!([container(
            json!([]),
            json!([link.display().to_string()])
        )]));
        let e = built(&decl).expect_err("a link");
        assert!(e.reason.contains("link.env: is a symbolic link"), "{e}");
        let d = std::fs::File::open(dir.path()).expect("dir");
        rustix::fs::mknodat(
            &d,
            "fifo.env",
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        let fifo = dir.path().join("fifo.env");
        let decl = parsed(json!([container(
            json!([]),
            json!([fifo.display().to_string()])
        )]));
        let e = built(&decl).expect_err("a FIFO");
        assert!(e.reason.contains("is a FIFO"), "{e}");
        let decl = parsed(json!([container(
            json!([]),
            json!([real.display().to_string()])
        )]));
        assert_eq!(
            built(&decl).expect("built").spec.env,
            vec![("A".to_string(), "1".to_string())]
        );
    }

    #[test]
    fn health_is_part_of_the_identity_only_when_declared() {
        let plain = parsed(json!([container(json!([]), json!([]))]));
        let built_plain = built(&plain).expect("built");
        // No `health` field at all: identities made before it existed hold.
        assert!(!built_plain.fields.contains("health"));
        assert_eq!(built_plain.spec.health, None);
        let mut with = container(json!([]), json!([]));
        with["health"] = json!({"command": ["true"], "retries": 2});
        let checked = built(&parsed(json!([with.clone()]))).expect("built");
        assert_ne!(checked.identity, built_plain.identity);
        assert_eq!(
            checked.spec.health.as_deref(),
            Some(&HealthSpec::Check {
                command: Some(vec!["true".into()]),
                interval: None,
                timeout: None,
                retries: Some(2),
                start_period: None
            })
        );
        with["health"] = json!("none");
        let disabled = built(&parsed(json!([with]))).expect("built");
        assert_eq!(disabled.spec.health.as_deref(), Some(&HealthSpec::Disabled));
        assert_ne!(disabled.identity, checked.identity);
        assert_ne!(disabled.identity, built_plain.identity);
    }

    #[test]
    fn identity_changes_with_fields_and_reads() {
        let fields = BTreeMap::from([("image".to_string(), json!("a@sha256:00"))]);
        let reads = BTreeMap::from([("/etc/x".to_string(), Some("aa".to_string()))]);
        let base = identity_of(&fields, &reads);
        let mut f2 = fields.clone();
        f2.insert("image".into(), json!("b@sha256:00"));
        let mut r2 = reads.clone();
        r2.insert("/etc/x".into(), Some("bb".into()));
        assert_ne!(base, identity_of(&f2, &reads));
        assert_ne!(base, identity_of(&fields, &r2));
        assert_eq!(base, identity_of(&fields.clone(), &reads.clone()));
    }
}
