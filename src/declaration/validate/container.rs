//! Reading a container resource: its command, environment, mounts,
//! network, user and identity, health check, and role (service, run-once
//! or scheduled step) with the fields that only some roles take.

use crate::declaration::hints::Fields;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::str::FromStr;

use super::entry::{Entry, Kind, RoleKind};
use super::fields::{
    check, ids, key_path, no_nul, non_root_path, read_args, refuse_unknown, require, take,
    take_list, timeout_seconds, Sink,
};
use super::{health, identities, options, timing};
use crate::declaration::model::{
    Container, Health, Mount, MountSource, Network, Port, Protocol, Role, Schedule,
};
use crate::declaration::raw::{Field, List, RawContainer, RawMount, RawPort};
use crate::declaration::types::{
    AbsPath, ContainerName, ImageRef, NetworkName, UserSpec, VolumeName,
};

pub(super) fn read_container(
    s: &mut Sink,
    mut c: RawContainer,
    entry: &mut Entry,
) -> Option<Container> {
    refuse_unknown(s, "", c.unknown, Fields::Resource("container"));
    let has_schedule = !c.schedule.is_absent();
    let has_zone = !c.schedule_zone.is_absent();
    // An empty list asks for nothing, so only a non-empty one is held
    // against a container that cannot honour it.
    let has_holds = matches!(&c.while_stopped, Field::Present(v) if !v.is_empty())
        || matches!(c.while_stopped, Field::Invalid { .. });
    let has_timeout = !c.timeout.is_absent();
    let has_restart_on = matches!(&c.restart_on, Field::Present(v) if !v.is_empty())
        || matches!(c.restart_on, Field::Invalid { .. });

    let name =
        require(s, "name", c.name).and_then(|n| check(s, "name", ContainerName::try_from(n)));
    let image = require(s, "image", c.image).and_then(|i| check(s, "image", ImageRef::try_from(i)));

    let command = read_args(s, "command", c.command);

    let mut env = BTreeMap::new();
    for (key, value) in take(s, "env", c.env).unwrap_or_default() {
        let path = key_path("env", &key);
        let name_ok = if key.is_empty() {
            s.at(&path, "a variable name must not be empty");
            false
        } else if key.contains('=') {
            s.at(
                &path,
                format!("{key:?}: a variable name must not contain '='"),
            );
            false
        } else {
            no_nul(s, &path, &key, "the variable name")
        };
        if let Some(value) = take(s, &path, value) {
            if no_nul(s, &path, &value, "the value") && name_ok {
                env.insert(key, value);
            }
        }
    }

    let env_files = take_list(s, "env-files", c.env_files)
        .into_iter()
        .filter_map(|(path, text)| non_root_path(s, &path, &text))
        .collect();
    let env_files_compose = match take(s, "env-files-format", c.env_files_format).as_deref() {
        None | Some("docker") => false,
        Some("compose") => true,
        Some(other) => {
            s.at(
                "env-files-format",
                format!("{other:?} is not an env-file format: \"docker\" (each value as written, as docker run --env-file reads it) or \"compose\" (quotes, escapes, export and comments read as compose reads them)"),
            );
            false
        }
    };

    let mut mounts: Vec<Mount> = Vec::new();
    let mut targets: HashMap<AbsPath, String> = HashMap::new();
    for (path, mount) in take_list(s, "mounts", c.mounts) {
        if let Some(mount) = read_mount(s, &path, mount) {
            if let Some(first) = targets.get(&mount.target) {
                s.at(
                    format!("{path}.target"),
                    format!("{} is already the target of {first}", mount.target),
                );
                continue;
            }
            targets.insert(mount.target.clone(), path);
            mounts.push(mount);
        }
    }

    let network = take(s, "network", c.network).and_then(|n| read_network(s, n));

    let dns: Vec<IpAddr> = take_list(s, "dns", c.dns)
        .into_iter()
        .filter_map(|(path, text)| match IpAddr::from_str(&text) {
            Ok(ip) => Some(ip),
            Err(_) => {
                s.at(
                    path,
                    format!("{text:?} is not an IP address (names are refused: a resolver is given by its address)"),
                );
                None
            }
        })
        .collect();

    let has_networks = !c.networks.is_absent();
    let networks = super::networking::read_networks(s, c.networks);
    if has_networks && network.is_some() {
        s.at(
            "networks",
            "network and networks are exclusive: join one network with either, several with networks",
        );
    }
    let ports = read_ports(s, c.ports, network.as_ref());

    // Docker refuses the pair at create ("conflicting options: dns and the
    // network mode"); say so now rather than fail the apply.
    if network == Some(Network::Host) && !dns.is_empty() {
        s.at(
            "dns",
            "dns cannot be set with network \"host\": the container shares the host's resolver",
        );
    }
    if let Some(peer) = network.as_ref().and_then(Network::peer) {
        if !dns.is_empty() {
            s.at("dns", shared_by(peer, "dns", "its resolvers"));
        }
    }

    let has_user = !c.user.is_absent();
    let user =
        take(s, "user", c.user).and_then(|u| check(s, "user", UserSpec::try_from(u.as_str())));
    let access = identities::read_container_access(s, c.identity, c.grant, has_user, entry);
    let health = health::read_health(s, c.health);
    let anonymous = std::mem::take(&mut c.options.anonymous_volumes);
    let mut options = options::read_options(s, c.options);
    if let Some(peer) = network.as_ref().and_then(Network::peer) {
        if options.hostname.is_some() {
            s.at("hostname", shared_by(peer, "hostname", "its host name"));
        }
        if !options.extra_hosts.is_empty() {
            s.at(
                "extra-hosts",
                shared_by(peer, "extra-hosts", "its /etc/hosts"),
            );
        }
    }
    options.anonymous_volumes =
        options::read_anonymous_volumes(s, anonymous, &options.tmpfs, &targets);

    let run_once = take(s, "run-once", c.run_once).unwrap_or(false);
    if run_once && has_schedule {
        s.at(
            "run-once",
            "run-once and schedule are exclusive: a container is a run-once step or a scheduled step, not both",
        );
    }
    let cron = take(s, "schedule", c.schedule).and_then(|expr| {
        check(
            s,
            "schedule",
            crate::cron::CronSchedule::parse(&expr).map_err(|e| format!("{expr:?}: {e}")),
        )
    });
    let zone = take(s, "schedule-zone", c.schedule_zone).and_then(|z| {
        check(
            s,
            "schedule-zone",
            chrono_tz::Tz::from_str(&z).map_err(|_| {
                format!("{z:?} is not an IANA time zone name known to mesh-host (such as \"Europe/Berlin\" or \"UTC\")")
            }),
        )
    });
    if has_zone && !has_schedule {
        s.at("schedule-zone", "schedule-zone needs a schedule");
    }
    if has_holds && !has_schedule {
        s.at(
            "while-stopped",
            "while-stopped needs a schedule: only a scheduled step holds containers still",
        );
    }
    let holds = take_list(s, "while-stopped", c.while_stopped);
    let holds = ids(s, holds);
    let randomized_delay = timing::read_randomized_delay(s, c.randomized_delay, has_schedule);
    let catch_up = timing::read_catch_up(s, c.catch_up, has_schedule);

    let role_kind = if has_schedule {
        RoleKind::Scheduled
    } else if run_once {
        RoleKind::RunOnce
    } else {
        RoleKind::Service
    };

    let timeout = match take(s, "timeout", c.timeout) {
        Some(value) => check(s, "timeout", timeout_seconds(&value)),
        None => None,
    };
    if has_timeout && role_kind == RoleKind::Service {
        s.at(
            "timeout",
            "timeout needs run-once or a schedule: a service runs until it is stopped",
        );
    }

    let rollback_after =
        timing::read_rollback_after(s, c.rollback_after, role_kind == RoleKind::Service);
    let update = match take(s, "update", c.update) {
        None => None,
        Some(word) if word == "registry" => {
            if image.as_ref().is_some_and(|i| i.tag().is_none()) {
                s.at(
                    "update",
                    "update \"registry\" follows the image's tag: pin the image as REPO:TAG@sha256:...",
                );
            }
            Some(super::super::model::UpdatePolicy::Registry)
        }
        Some(other) => {
            s.at(
                "update",
                format!("{other:?} is not an update policy: the one known is \"registry\""),
            );
            None
        }
    };

    let has_depends_on = matches!(&c.depends_on, Field::Present(v) if !v.is_empty());
    let depends_on = super::depends::read_depends_on(s, c.depends_on);
    let restart_on = take_list(s, "restart-on", c.restart_on);
    let restart_on = ids(s, restart_on);
    if has_restart_on && role_kind != RoleKind::Service {
        s.at(
            "restart-on",
            "restart-on applies to a service container, not to a run-once or scheduled step",
        );
    }

    if has_depends_on && role_kind == RoleKind::Scheduled {
        s.at(
            "depends-on",
            "depends-on applies to a service or a run-once step: a scheduled step runs on its schedule",
        );
    }
    if options.logging.is_some() && role_kind != RoleKind::Service {
        s.at(
            "logging",
            "logging applies to a service container: a step's output goes to the journal through the runtime's journald driver, where mesh-host logs reads it",
        );
    }
    if options.restart.is_some() && role_kind != RoleKind::Service {
        s.at(
            "restart",
            "restart applies to a service container: a step runs once per fire and is never restarted",
        );
    }

    entry.kind = Kind::Container {
        role: role_kind,
        name: name.clone(),
    };
    entry.holds = holds.clone();
    entry.restart_on = restart_on.clone();
    entry.spans.ports = ports;
    entry.spans.joins = networks;
    entry.spans.depends_on = depends_on;
    entry.spans.peer = network.as_ref().and_then(Network::peer).cloned();
    entry.spans.health_disabled = matches!(health, Some(Health::Disabled));

    let role = match cron {
        Some(cron) => Role::Scheduled(Schedule {
            cron,
            zone,
            while_stopped: holds.into_iter().map(|(_, id)| id).collect(),
            randomized_delay,
            catch_up,
        }),
        None if run_once => Role::RunOnce,
        None => Role::Service,
    };
    Some(Container {
        name: name?,
        image: image?,
        command,
        env,
        env_files,
        env_files_compose,
        mounts,
        network,
        networks: entry.spans.joins.iter().map(|(_, j)| j.clone()).collect(),
        ports: entry.spans.ports.iter().map(|(_, p)| p.clone()).collect(),
        dns,
        user,
        role,
        timeout,
        restart_on: restart_on.into_iter().map(|(_, id)| id).collect(),
        depends_on: entry
            .spans
            .depends_on
            .iter()
            .map(|(_, d)| d.clone())
            .collect(),
        identity: access.as_ref().and_then(|(i, _)| i.clone()),
        grant: access?.1,
        health,
        rollback_after,
        update,
        options: options.into(),
    })
}

/// `network`: `host`, `none`, `container:NAME` (another container's
/// namespace) or a network name.
fn read_network(s: &mut Sink, n: String) -> Option<Network> {
    match n.as_str() {
        "host" => return Some(Network::Host),
        "none" => return Some(Network::None),
        _ => {}
    }
    if let Some(peer) = n.strip_prefix("container:") {
        return check(
            s,
            "network",
            ContainerName::try_from(peer.to_owned()).map_err(|e| {
                format!(
                    "{n:?}: container:NAME names a container of this declaration by its name: {e}"
                )
            }),
        )
        .map(Network::Container);
    }
    if let Some(service) = n.strip_prefix("service:") {
        s.at(
            "network",
            format!("{n:?}: service:NAME is compose's; a declaration names the peer container by its name: \"container:NAME\" (mesh-host import writes it, {service:?} as PROJECT-{service}-1)"),
        );
        return None;
    }
    check(s, "network", NetworkName::try_from(n)).map(Network::Named)
}

/// The refusal of `field` beside `network: "container:PEER"`: the
/// container shares `what` of its peer, and Docker refuses the pair at
/// create ("conflicting options").
fn shared_by(peer: &ContainerName, field: &str, what: &str) -> String {
    format!("{field} cannot be set with network \"container:{peer}\": the container shares {peer}'s network namespace and with it {what}; set it on {peer} instead")
}

fn read_mount(s: &mut Sink, path: &str, raw: RawMount) -> Option<Mount> {
    refuse_unknown(s, path, raw.unknown, Fields::Mount);
    let source_field = format!("{path}.source");
    let target_field = format!("{path}.target");
    let source = require(s, &source_field, raw.source).and_then(|text| {
        if text.starts_with('/') {
            check(s, &source_field, AbsPath::try_from(text)).map(MountSource::Path)
        } else if text.contains('/') || text.starts_with('.') || text.starts_with('~') {
            s.at(
                &source_field,
                format!("{text:?} is a relative path: a mount source is an absolute path or a volume name"),
            );
            None
        } else {
            check(s, &source_field, VolumeName::try_from(text)).map(MountSource::Volume)
        }
    });
    let target = require(s, &target_field, raw.target).and_then(|text| {
        let target = check(s, &target_field, AbsPath::try_from(text))?;
        if target.is_root() {
            s.at(
                &target_field,
                "\"/\": a mount cannot cover the container's root",
            );
            return None;
        }
        Some(target)
    });
    let read_only = take(s, &format!("{path}.read-only"), raw.read_only).unwrap_or(false);
    Some(Mount {
        source: source?,
        target: target?,
        read_only,
    })
}

/// `ports`: each entry read, none binding a host port another entry
/// binds, and none with a network that publishes nothing.
fn read_ports(s: &mut Sink, raw: List<RawPort>, network: Option<&Network>) -> Vec<(String, Port)> {
    let mut ports: Vec<(String, Port)> = Vec::new();
    let mut bound: super::ports::Bound<String> = super::ports::Bound::new();
    let entries = take_list(s, "ports", raw);
    if !entries.is_empty() {
        match network {
            Some(Network::Host) => s.at(
                "ports",
                "ports cannot be published with network \"host\": the container already listens on the host's own ports",
            ),
            Some(Network::None) => s.at(
                "ports",
                "ports cannot be published with network \"none\": the container has no network to reach them through",
            ),
            Some(Network::Container(peer)) => s.at(
                "ports",
                shared_by(peer, "ports", "its published ports"),
            ),
            _ => {}
        }
    }
    for (path, raw) in entries {
        let Some(port) = read_port(s, &path, raw) else {
            continue;
        };
        if let Some(first) = bound.first(&port) {
            s.at(&path, format!("{port} binds what {first} binds already"));
            continue;
        }
        bound.take(&port, path.clone());
        ports.push((path, port));
    }
    ports
}

fn read_port(s: &mut Sink, path: &str, raw: RawPort) -> Option<Port> {
    refuse_unknown(s, path, raw.unknown, Fields::Port);
    let host_field = format!("{path}.host");
    let container_field = format!("{path}.container");
    let host = take(s, &host_field, raw.host).and_then(|v| check(s, &host_field, port_number(&v)));
    let container = require(s, &container_field, raw.container)
        .and_then(|v| check(s, &container_field, port_number(&v)));
    let protocol_field = format!("{path}.protocol");
    let protocol = match take(s, &protocol_field, raw.protocol).as_deref() {
        None | Some("tcp") => Some(Protocol::Tcp),
        Some("udp") => Some(Protocol::Udp),
        Some(other) => {
            s.at(
                &protocol_field,
                format!("{other:?} is not a protocol: \"tcp\" (the default) or \"udp\""),
            );
            None
        }
    };
    let address_field = format!("{path}.address");
    let address = match take(s, &address_field, raw.address) {
        Some(text) => match IpAddr::from_str(&text) {
            Ok(ip) => Some(Some(ip)),
            Err(_) => {
                s.at(
                    &address_field,
                    format!("{text:?} is not an IP address of the host"),
                );
                None
            }
        },
        None => Some(None),
    };
    Some(Port {
        host,
        container: container?,
        protocol: protocol?,
        address: address?,
    })
}

/// A port number: an integer from 1 to 65535.
fn port_number(value: &serde_json::Value) -> Result<u16, String> {
    match value.as_u64() {
        Some(n) if (1..=65535).contains(&n) => Ok(n as u16),
        _ => Err(format!("{value} is not a port: an integer from 1 to 65535")),
    }
}
