//! Reading a container's options beyond its image
//! ([`crate::declaration::options`]): each refused with its reason, every
//! problem named.

use std::collections::BTreeMap;

use serde_json::Value;

use super::fields::{
    key_path, no_nul, read_entrypoint, read_string_map, refuse_unknown, require, take, take_list,
    Sink,
};
use crate::declaration::hints::Fields;
use crate::declaration::networking::Restart;
use crate::declaration::options::{
    sysctl_namespaced, ContainerOptions, Device, HostAddress, Tmpfs, Ulimit, CAPABILITIES, ULIMITS,
    UNLIMITED,
};
use crate::declaration::raw::{kind_of, Field, List, RawDevice, RawOptions, RawTmpfs, RawUlimit};

/// Longest `stop-grace` taken: an hour.
const MAX_STOP_GRACE_SECS: u64 = 3600;

/// Most CPUs `cpus` takes.
const MAX_CPUS: f64 = 1024.0;

pub(super) fn read_options(s: &mut Sink, raw: RawOptions) -> ContainerOptions {
    let entrypoint = read_entrypoint(s, raw.entrypoint);
    let working_dir = take(s, "working-dir", raw.working_dir).filter(|dir| {
        let ok = dir.starts_with('/') && !dir.contains('\0');
        if !ok {
            s.at(
                "working-dir",
                format!("{dir:?} is not an absolute path in the container"),
            );
        }
        ok
    });
    let hostname = take(s, "hostname", raw.hostname).filter(|name| {
        let ok = hostname_ok(name);
        if !ok {
            s.at(
                "hostname",
                format!("{name:?} is not a host name: letters, digits, '-' and '.', at most 63 characters"),
            );
        }
        ok
    });
    let labels = read_string_map(s, "labels", raw.labels, true);
    let restart = take(s, "restart", raw.restart).and_then(|word| {
        let restart = Restart::parse(&word);
        if restart.is_none() {
            s.at(
                "restart",
                format!("{word:?} is not a restart policy: \"unless-stopped\", \"always\", \"on-failure\" or \"no\""),
            );
        }
        restart
    });
    let stop_signal = take(s, "stop-signal", raw.stop_signal).filter(|sig| {
        let ok = signal_ok(sig);
        if !ok {
            s.at(
                "stop-signal",
                format!("{sig:?} is not a signal: a name such as \"SIGINT\" or \"SIGQUIT\", or a number"),
            );
        }
        ok
    });
    let stop_grace = take(s, "stop-grace", raw.stop_grace).and_then(|v| match v.as_u64() {
        Some(n) if n <= MAX_STOP_GRACE_SECS => Some(n),
        _ => {
            s.at(
                "stop-grace",
                format!("{v} is not a number of seconds from 0 to {MAX_STOP_GRACE_SECS}"),
            );
            None
        }
    });
    let init = take(s, "init", raw.init).unwrap_or(false);
    let cap_add = take_list(s, "cap-add", raw.cap_add);
    let cap_add = capabilities(s, "cap-add", cap_add);
    let cap_drop = take_list(s, "cap-drop", raw.cap_drop);
    let cap_drop = capabilities(s, "cap-drop", cap_drop);
    let privileged = take(s, "privileged", raw.privileged).unwrap_or(false);
    let read_only_root = take(s, "read-only-root", raw.read_only_root).unwrap_or(false);
    let no_new_privileges = take(s, "no-new-privileges", raw.no_new_privileges).unwrap_or(false);
    let security_opt = super::security::read_security_opt(s, raw.security_opt);
    let logging = super::security::read_logging(s, raw.logging);
    let memory = take(s, "memory", raw.memory);
    let memory = bytes(s, "memory", memory, 6 << 20);
    let memory_reservation = take(s, "memory-reservation", raw.memory_reservation);
    let memory_reservation = bytes(s, "memory-reservation", memory_reservation, 1);
    if let (Some(limit), Some(reserved)) = (memory, memory_reservation) {
        if reserved > limit {
            s.at(
                "memory-reservation",
                format!("{reserved} bytes is more than memory ({limit} bytes)"),
            );
        }
    }
    let nano_cpus = take(s, "cpus", raw.cpus).and_then(|v| match v.as_f64() {
        Some(c) if c > 0.0 && c <= MAX_CPUS && (c * 1e9).round() >= 1.0 => {
            Some((c * 1e9).round() as u64)
        }
        _ => {
            s.at(
                "cpus",
                format!("{v} is not a number of CPUs: a decimal above 0, at most {MAX_CPUS}"),
            );
            None
        }
    });
    let pids_limit = take(s, "pids-limit", raw.pids_limit).and_then(|v| match v.as_u64() {
        Some(n) if n >= 1 => Some(n),
        _ => {
            s.at(
                "pids-limit",
                format!("{v} is not a number of processes: a whole number, at least 1"),
            );
            None
        }
    });
    let shm_size = take(s, "shm-size", raw.shm_size);
    let shm_size = bytes(s, "shm-size", shm_size, 1);
    let tmpfs = read_tmpfs(s, raw.tmpfs);
    let ulimits = read_ulimits(s, raw.ulimits);
    let mut sysctls = BTreeMap::new();
    for (key, value) in take(s, "sysctls", raw.sysctls).unwrap_or_default() {
        let path = key_path("sysctls", &key);
        let Some(value) = take(s, &path, value) else {
            continue;
        };
        if !sysctl_namespaced(&key) {
            s.at(
                &path,
                format!("{key:?} is not a kernel parameter of the container's own namespaces (kernel.msg*, kernel.sem, kernel.shm*, fs.mqueue.*, net.*): set it on the node"),
            );
        } else if no_nul(s, &path, &value, "the value") {
            sysctls.insert(key, value);
        }
    }
    let mut extra_hosts = BTreeMap::new();
    for (key, value) in take(s, "extra-hosts", raw.extra_hosts).unwrap_or_default() {
        let path = key_path("extra-hosts", &key);
        let Some(value) = take(s, &path, value) else {
            continue;
        };
        if !hostname_ok(&key) {
            s.at(&path, format!("{key:?} is not a host name"));
        } else {
            match HostAddress::parse(&value) {
                Some(address) => {
                    extra_hosts.insert(key, address);
                }
                None => s.at(
                    &path,
                    format!("{value:?} is not an IP address, nor \"host-gateway\""),
                ),
            }
        }
    }
    let devices = read_devices(s, raw.devices);
    ContainerOptions {
        entrypoint,
        working_dir,
        hostname,
        labels,
        restart,
        stop_signal,
        stop_grace,
        init,
        cap_add,
        cap_drop,
        privileged,
        read_only_root,
        no_new_privileges,
        security_opt,
        logging,
        memory,
        memory_reservation,
        nano_cpus,
        pids_limit,
        shm_size,
        tmpfs,
        ulimits,
        sysctls,
        extra_hosts,
        devices,
    }
}

fn read_tmpfs(s: &mut Sink, raw: List<RawTmpfs>) -> Vec<Tmpfs> {
    let mut out: Vec<Tmpfs> = Vec::new();
    let mut targets: std::collections::HashSet<String> = std::collections::HashSet::new();
    for (path, t) in take_list(s, "tmpfs", raw) {
        refuse_unknown(s, &path, t.unknown, Fields::Tmpfs);
        let target_field = format!("{path}.target");
        let target = require(s, &target_field, t.target).filter(|target| {
            let ok = target.starts_with('/')
                && target != "/"
                && !target.contains('\0')
                && !target.contains(',');
            if !ok {
                s.at(
                    &target_field,
                    format!("{target:?} is not an absolute path in the container (nor \"/\")"),
                );
            }
            ok
        });
        let size_field = format!("{path}.size");
        let size = take(s, &size_field, t.size);
        let size = bytes(s, &size_field, size, 4096);
        let mode_field = format!("{path}.mode");
        let mode = take(s, &mode_field, t.mode).filter(|mode| {
            let ok = (3..=4).contains(&mode.len())
                && u32::from_str_radix(mode, 8).is_ok_and(|m| m <= 0o7777);
            if !ok {
                s.at(
                    &mode_field,
                    format!("{mode:?} is not an octal mode such as \"1777\""),
                );
            }
            ok
        });
        let exec = take(s, &format!("{path}.exec"), t.exec);
        let mut owner = |field: &str, v: Field<Value>| {
            let f = format!("{path}.{field}");
            let v = take(s, &f, v)?;
            match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) => Some(n),
                None => {
                    s.at(&f, format!("{v} is not a numeric id from 0 to 4294967295"));
                    None
                }
            }
        };
        let uid = owner("uid", t.uid);
        let gid = owner("gid", t.gid);
        let Some(target) = target else { continue };
        if !targets.insert(target.clone()) {
            s.at(&target_field, format!("{target} is already a tmpfs target"));
            continue;
        }
        out.push(Tmpfs {
            target,
            size,
            mode,
            exec,
            uid,
            gid,
        });
    }
    out
}

fn read_ulimits(
    s: &mut Sink,
    raw: Field<BTreeMap<String, Field<RawUlimit>>>,
) -> BTreeMap<String, Ulimit> {
    let mut out = BTreeMap::new();
    for (name, value) in take(s, "ulimits", raw).unwrap_or_default() {
        let path = key_path("ulimits", &name);
        let Some(u) = take(s, &path, value) else {
            continue;
        };
        refuse_unknown(s, &path, u.unknown, Fields::Ulimit);
        if !ULIMITS.contains(&name.as_str()) {
            s.at(
                &path,
                format!(
                    "{name:?} is not a resource limit: one of {}",
                    ULIMITS.join(", ")
                ),
            );
            continue;
        }
        let mut number = |field: &str, v: Field<Value>| {
            let f = format!("{path}.{field}");
            let v = require(s, &f, v)?;
            match (v.as_u64(), v.as_i64()) {
                (Some(n), _) => Some(n),
                // Unlimited, as Docker and compose write it.
                (None, Some(-1)) => Some(UNLIMITED),
                _ => {
                    s.at(
                        &f,
                        format!("{v} is not a whole number, at least 0, or -1 (unlimited)"),
                    );
                    None
                }
            }
        };
        let soft = number("soft", u.soft);
        let hard = number("hard", u.hard);
        if let (Some(soft), Some(hard)) = (soft, hard) {
            if soft > hard {
                s.at(&path, format!("soft {soft} is above hard {hard}"));
            } else {
                out.insert(name, Ulimit { soft, hard });
            }
        }
    }
    out
}

fn read_devices(s: &mut Sink, raw: List<RawDevice>) -> Vec<Device> {
    let mut out: Vec<Device> = Vec::new();
    for (path, d) in take_list(s, "devices", raw) {
        refuse_unknown(s, &path, d.unknown, Fields::Device);
        let abs = |s: &mut Sink, field: &str, value: Option<String>| {
            value.filter(|p| {
                let ok = p.starts_with('/') && !p.contains('\0');
                if !ok {
                    s.at(field, format!("{p:?} is not an absolute path"));
                }
                ok
            })
        };
        let path_field = format!("{path}.path");
        let host = require(s, &path_field, d.path);
        let host = abs(s, &path_field, host);
        let target_field = format!("{path}.target");
        let target = take(s, &target_field, d.target);
        let target = abs(s, &target_field, target);
        let perm_field = format!("{path}.permissions");
        let permissions = take(s, &perm_field, d.permissions).filter(|p| {
            let ok = !p.is_empty()
                && p.chars().all(|c| "rwm".contains(c))
                && p.chars().collect::<std::collections::BTreeSet<_>>().len() == p.len();
            if !ok {
                s.at(
                    &perm_field,
                    format!(
                        "{p:?} is not cgroup device permissions: letters of \"rwm\", each once"
                    ),
                );
            }
            ok
        });
        let Some(host) = host else { continue };
        let target = target.unwrap_or_else(|| host.clone());
        out.push(Device {
            path: host,
            target,
            permissions: permissions.unwrap_or_else(|| "rwm".to_string()),
        });
    }
    out
}

/// A number of bytes, at least `least` (Docker refuses a memory limit
/// under 6 MiB).
fn bytes(s: &mut Sink, field: &str, value: Option<Value>, least: u64) -> Option<u64> {
    let value = value?;
    match value.as_u64() {
        Some(n) if n >= least => Some(n),
        Some(n) => {
            s.at(field, format!("{n} bytes is less than the {least} taken"));
            None
        }
        None if value.is_number() => {
            s.at(field, format!("{value} is not a whole number of bytes"));
            None
        }
        None => {
            s.at(
                field,
                format!("must be a whole number of bytes, found {}", kind_of(&value)),
            );
            None
        }
    }
}

/// Known capability names, upper case, without `CAP_`: as Docker and
/// compose write them.
fn capabilities(s: &mut Sink, field: &str, items: Vec<(String, String)>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (path, text) in items {
        let name = text.to_ascii_uppercase();
        let name = name.strip_prefix("CAP_").unwrap_or(&name).to_string();
        if !CAPABILITIES.contains(&name.as_str()) {
            s.at(
                &path,
                format!("{text:?} is not a Linux capability (such as \"NET_ADMIN\"), nor \"ALL\""),
            );
        } else if out.contains(&name) {
            s.at(&path, format!("{name} is named twice in {field}"));
        } else {
            out.push(name);
        }
    }
    out
}

/// RFC 1123 host name: labels of letters, digits and '-', dot-separated.
pub(super) fn hostname_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name.split('.').all(|label| {
            !label.is_empty()
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// `SIGNAME`, `NAME` or a number from 1 to 64.
fn signal_ok(sig: &str) -> bool {
    if let Ok(n) = sig.parse::<u32>() {
        return (1..=64).contains(&n);
    }
    let name = sig.strip_prefix("SIG").unwrap_or(sig);
    !name.is_empty()
        && name.len() <= 10
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'+' || b == b'-')
}
