//! From a declared container to what the runtime creates, and what that
//! container *is*: its runtime-relevant fields and the content of every file
//! it reads at creation (env-files, bind-mounted files, files this host
//! writes under a bind-mounted directory). Any change of either means the
//! container must be recreated, and the reason names what changed.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::declaration::{Container, Declaration, MountSource, Resource, ResourceKind, Role};
use crate::runtime::{
    ContainerSpec, MountSpec, RestartPolicy, LABEL_MANAGED, LABEL_MODULE, LABEL_RESOURCE,
    MANAGED_VALUE,
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

/// A declared container made ready for the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltContainer {
    /// What to create.
    pub spec: ContainerSpec,
    /// The runtime-relevant declared fields, by field name (for reasons).
    pub fields: BTreeMap<String, Value>,
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
pub fn build(
    decl: &Declaration,
    res: &Resource,
    container: &Container,
) -> Result<BuiltContainer, SpecError> {
    let err = |reason: String| SpecError {
        resource: res.id.to_string(),
        reason,
    };
    let mut reads = BTreeMap::new();
    let mut env: Vec<(String, String)> = Vec::new();
    for file in &container.env_files {
        let text = std::fs::read_to_string(file.as_path())
            .map_err(|e| err(format!("env-file {}: {e}", file.as_str())))?;
        reads.insert(file.as_str().to_string(), Some(sha256_hex(text.as_bytes())));
        env.extend(
            parse_env_file(&text).map_err(|e| err(format!("env-file {}: {e}", file.as_str())))?,
        );
    }
    // Declared env wins over env-files, as `docker run --env-file -e` does.
    env.extend(container.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    let mut mounts = Vec::new();
    for m in &container.mounts {
        let source = match &m.source {
            MountSource::Path(p) => {
                record_mount_reads(decl, p.as_path(), &mut reads).map_err(err)?;
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
    let access = super::grants::resolve(decl, container).map_err(err)?;
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
            serde_json::to_value(container.user).unwrap_or(Value::Null),
        ),
        ("role", json!(role)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    fields.extend(access.fields);
    let identity = identity_of(&fields, &reads);
    let mut labels = BTreeMap::from([
        (LABEL_MANAGED.to_string(), MANAGED_VALUE.to_string()),
        (LABEL_RESOURCE.to_string(), res.id.to_string()),
        (LABEL_ROLE.to_string(), role.to_string()),
        (LABEL_IDENTITY.to_string(), identity.clone()),
        (LABEL_RECORD.to_string(), RECORD_FORMAT.to_string()),
    ]);
    if let Some(module) = &res.module {
        labels.insert(LABEL_MODULE.to_string(), module.to_string());
    }
    let spec = ContainerSpec {
        name: container.name.to_string(),
        image: container.image.as_str().to_string(),
        command: container.command.clone(),
        env,
        mounts,
        network: container
            .network
            .as_ref()
            .map(|n| match serde_json::to_value(n) {
                Ok(Value::String(s)) => s,
                _ => String::new(),
            }),
        dns: container.dns.clone(),
        user: access.user.or_else(|| {
            container.user.as_ref().map(|u| match u.gid {
                Some(g) => format!("{}:{g}", u.uid),
                None => u.uid.to_string(),
            })
        }),
        labels,
        restart: if matches!(container.role, Role::Service) {
            RestartPolicy::UnlessStopped
        } else {
            RestartPolicy::No
        },
        cgroup_parent: None,
        auto_remove: false,
        groups: access.groups,
    };
    Ok(BuiltContainer {
        spec,
        fields,
        reads,
        identity,
    })
}

/// A bind-mounted file is read at creation; under a bind-mounted directory,
/// the files this host writes there are.
fn record_mount_reads(
    decl: &Declaration,
    source: &Path,
    reads: &mut BTreeMap<String, Option<String>>,
) -> Result<(), String> {
    match std::fs::metadata(source) {
        Ok(meta) if meta.is_file() => {
            let digest = sha256_path(source)?;
            reads.insert(source.display().to_string(), digest);
        }
        Ok(meta) if meta.is_dir() => {
            for r in &decl.resources {
                if let ResourceKind::File(f) = &r.kind {
                    if f.path.as_path().starts_with(source) {
                        reads.insert(f.path.as_str().to_string(), sha256_path(f.path.as_path())?);
                    }
                }
            }
        }
        // Absent, or a socket/device: the runtime reports what it makes of it.
        _ => {}
    }
    Ok(())
}

fn sha256_path(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(sha256_hex(&bytes))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
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
    let canonical = json!({ "fields": fields, "reads": reads, "record": RECORD_FORMAT });
    sha256_hex(canonical.to_string().as_bytes())
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
            return Err(format!("line {}: {key:?} is not a variable name", n + 1));
        }
        out.push((key.to_string(), value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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
