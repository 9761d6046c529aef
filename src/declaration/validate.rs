//! From raw structs to the model, collecting every problem.
//!
//! Two passes. The first reads each resource on its own: field types, value
//! rules (through the newtypes' `TryFrom`), rules between fields of one
//! resource. The second checks what spans resources: unique ids, names and
//! paths, and the ids `while-stopped` and `restart-on` point at. A model is
//! returned only when both passes found nothing.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Display;
use std::net::IpAddr;
use std::str::FromStr;
use std::time::Duration;

use serde_json::Value;

use super::base64;
use super::model::{
    Container, Declaration, Directory, File, Mount, MountSource, Network, Resource, ResourceKind,
    Role, Schedule, Unit, UnitState,
};
use super::raw::{
    kind_of, Field, List, RawContainer, RawDeclaration, RawDirectory, RawFile, RawMount,
    RawResource, RawUnit, RESOURCE_TYPES,
};
use super::types::{
    AbsPath, ContainerName, ImageRef, Mode, ModuleName, NetworkName, Owner, ResourceId, UnitName,
    UserSpec, VolumeName,
};
use super::Problem;

mod health;
mod identities;
mod timing;

/// Longest `timeout` taken: 30 days. Longer is almost surely a unit mistake
/// (milliseconds), and keeps deadlines far from overflowing.
pub const MAX_TIMEOUT_SECS: u64 = 30 * 24 * 3600;

/// Problems found so far, each with the position it sorts at: 0 for the top
/// level, `N + 1` for `resources[N]`.
type Found = Vec<(usize, Problem)>;

/// Where problems of one resource (or the top level) are written.
struct Sink<'a> {
    found: &'a mut Found,
    order: usize,
    resource: Option<String>,
}

impl Sink<'_> {
    fn at(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.push(Some(field.into()), message.into());
    }

    fn whole(&mut self, message: impl Into<String>) {
        self.push(None, message.into());
    }

    fn push(&mut self, field: Option<String>, message: String) {
        self.found.push((
            self.order,
            Problem {
                resource: self.resource.clone(),
                field,
                message,
            },
        ));
    }
}

/// The value of a field that may be left out; a wrong type is reported.
fn take<T>(s: &mut Sink, field: &str, value: Field<T>) -> Option<T> {
    match value {
        Field::Absent => None,
        Field::Present(v) => Some(v),
        Field::Invalid { error, .. } => {
            s.at(field, error);
            None
        }
    }
}

/// The value of a field that must be there.
fn require<T>(s: &mut Sink, field: &str, value: Field<T>) -> Option<T> {
    if value.is_absent() {
        s.at(field, "missing");
        return None;
    }
    take(s, field, value)
}

/// A value rule's verdict, reported at `field` when it is a refusal.
fn check<T, E: Display>(s: &mut Sink, field: &str, result: Result<T, E>) -> Option<T> {
    match result {
        Ok(v) => Some(v),
        Err(e) => {
            s.at(field, e.to_string());
            None
        }
    }
}

/// The readable items of a list, each with its path (`field[i]`).
fn take_list<T>(s: &mut Sink, field: &str, value: List<T>) -> Vec<(String, T)> {
    let items = take(s, field, value).unwrap_or_default();
    items
        .into_iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let path = format!("{field}[{i}]");
            take(s, &path, item).map(|v| (path, v))
        })
        .collect()
}

/// `prefix.key`, or `prefix["odd key"]` when the key would not read as one
/// word (or would break the line).
fn key_path(prefix: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    match (prefix.is_empty(), plain) {
        (true, true) => key.to_owned(),
        (true, false) => format!("[{key:?}]"),
        (false, true) => format!("{prefix}.{key}"),
        (false, false) => format!("{prefix}[{key:?}]"),
    }
}

fn refuse_unknown(s: &mut Sink, prefix: &str, unknown: BTreeMap<String, Value>) {
    for key in unknown.into_keys() {
        s.at(key_path(prefix, &key), "unknown field");
    }
}

/// A path naming a file-like thing the host itself reads or writes:
/// absolute, not `/` itself, and not where the service cannot see it
/// ([`super::sandbox`]).
fn non_root_path(s: &mut Sink, field: &str, text: &str) -> Option<AbsPath> {
    let path = check(s, field, AbsPath::try_from(text))?;
    if path.is_root() {
        s.at(
            field,
            "\"/\" is the root directory itself: name something inside it",
        );
        return None;
    }
    if let Some(why) = super::sandbox::refusal(&path) {
        s.at(field, why);
        return None;
    }
    Some(path)
}

fn no_nul(s: &mut Sink, field: &str, text: &str, what: &str) -> bool {
    if text.contains('\0') {
        s.at(field, format!("{what} contains a NUL character"));
        return false;
    }
    true
}

/// What a container is for, as far as other resources care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RoleKind {
    Service,
    RunOnce,
    Scheduled,
}

/// What pass two needs to know of a resource.
#[derive(Debug)]
enum Kind {
    Container {
        role: RoleKind,
        name: Option<ContainerName>,
    },
    File(Option<AbsPath>),
    Directory(Option<AbsPath>),
    Unit(Option<UnitName>),
    Identity {
        name: Option<super::identity::AccountName>,
        uid: Option<u32>,
        gid: Option<u32>,
    },
    SharedFolder(Option<AbsPath>),
    /// Not readable as any type.
    Unknown,
}

impl Kind {
    fn noun(&self) -> &'static str {
        match self {
            Kind::Container { .. } => "a container",
            Kind::File(_) => "a file",
            Kind::Directory(_) => "a directory",
            Kind::Unit(_) => "a unit",
            Kind::Identity { .. } => "an identity",
            Kind::SharedFolder(_) => "a shared folder",
            Kind::Unknown => "a resource of unknown type",
        }
    }
}

/// One resource after pass one.
#[derive(Debug)]
struct Entry {
    order: usize,
    label: String,
    id: Option<ResourceId>,
    /// `None` when the module field could not be read.
    module: Option<Option<ModuleName>>,
    kind: Kind,
    holds: Vec<(String, ResourceId)>,
    restart_on: Vec<(String, ResourceId)>,
    /// Identity ids it names (a container's `identity`, a shared folder's
    /// `access`), with their fields.
    identities: Vec<(String, ResourceId)>,
    built: Option<Resource>,
}

impl Entry {
    fn sink<'a>(&self, found: &'a mut Found) -> Sink<'a> {
        Sink {
            found,
            order: self.order,
            resource: Some(self.label.clone()),
        }
    }
}

/// Validate a raw declaration (whose version was already checked).
pub(crate) fn validate(raw: RawDeclaration) -> Result<Declaration, Vec<Problem>> {
    let mut found = Found::new();
    let mut top = Sink {
        found: &mut found,
        order: 0,
        resource: None,
    };
    refuse_unknown(&mut top, "", raw.unknown);
    let resources = match raw.resources {
        Field::Absent => {
            top.at(
                "resources",
                "missing (a machine with nothing declared is \"resources\": [])",
            );
            Vec::new()
        }
        Field::Invalid { value, .. } => {
            top.at(
                "resources",
                format!("expected an array of resources, found {}", kind_of(&value)),
            );
            Vec::new()
        }
        Field::Present(resources) => resources,
    };

    let labels = labels(&resources);
    let entries: Vec<Entry> = resources
        .into_iter()
        .zip(labels)
        .enumerate()
        .map(|(index, (resource, label))| {
            let mut entry = Entry {
                order: index + 1,
                label,
                id: None,
                module: None,
                kind: Kind::Unknown,
                holds: Vec::new(),
                restart_on: Vec::new(),
                identities: Vec::new(),
                built: None,
            };
            let mut s = entry.sink(&mut found);
            let built = read_resource(&mut s, resource, &mut entry);
            entry.built = built;
            entry
        })
        .collect();

    cross_check(&mut found, &entries);

    if !found.is_empty() {
        // Stable: each resource's problems stay in the order they were found.
        found.sort_by_key(|(order, _)| *order);
        return Err(found.into_iter().map(|(_, p)| p).collect());
    }
    let mut built = Vec::with_capacity(entries.len());
    for entry in entries {
        match entry.built {
            Some(resource) => built.push(resource),
            // Every path that leaves a resource unbuilt reports why; this is
            // the validator failing, said as such rather than a panic.
            None => {
                return Err(vec![Problem {
                    resource: Some(entry.label),
                    field: None,
                    message: "could not be validated (a fault in mesh-host: please report it)"
                        .to_owned(),
                }])
            }
        }
    }
    Ok(Declaration { resources: built })
}

/// How each resource is named in problems: its id when the id is valid and
/// the first with that id, else `resources[N]`.
fn labels(resources: &[Field<RawResource>]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    resources
        .iter()
        .enumerate()
        .map(|(index, resource)| {
            let id = match resource {
                Field::Present(r) => match r.id() {
                    Field::Present(id) => Some(id.as_str()),
                    _ => None,
                },
                Field::Invalid { value, .. } => value.get("id").and_then(Value::as_str),
                Field::Absent => None,
            };
            match id.filter(|id| ResourceId::try_from(*id).is_ok()) {
                Some(id) if seen.insert(id.to_owned()) => id.to_owned(),
                _ => format!("resources[{index}]"),
            }
        })
        .collect()
}

fn read_resource(
    s: &mut Sink,
    resource: Field<RawResource>,
    entry: &mut Entry,
) -> Option<Resource> {
    let raw = match resource {
        Field::Present(raw) => raw,
        Field::Invalid { value, error } => {
            diagnose(s, &value, error, entry);
            return None;
        }
        // A list item is never absent.
        Field::Absent => return None,
    };
    let (id, module, kind) = match raw {
        RawResource::Container(mut c) => {
            let (id, module) = common(s, &mut c.id, &mut c.module, entry);
            let kind = read_container(s, c, entry).map(ResourceKind::Container);
            (id, module, kind)
        }
        RawResource::File(mut f) => {
            let (id, module) = common(s, &mut f.id, &mut f.module, entry);
            (id, module, read_file(s, f, entry).map(ResourceKind::File))
        }
        RawResource::Directory(mut d) => {
            let (id, module) = common(s, &mut d.id, &mut d.module, entry);
            (
                id,
                module,
                read_directory(s, d, entry).map(ResourceKind::Directory),
            )
        }
        RawResource::Unit(mut u) => {
            let (id, module) = common(s, &mut u.id, &mut u.module, entry);
            (id, module, read_unit(s, u, entry).map(ResourceKind::Unit))
        }
        RawResource::Identity(mut i) => {
            let (id, module) = common(s, &mut i.id, &mut i.module, entry);
            let kind = identities::read_identity(s, i, entry).map(ResourceKind::Identity);
            (id, module, kind)
        }
        RawResource::SharedFolder(mut f) => {
            let (id, module) = common(s, &mut f.id, &mut f.module, entry);
            let kind = identities::read_shared_folder(s, f, entry).map(ResourceKind::SharedFolder);
            (id, module, kind)
        }
    };
    Some(Resource {
        id: id?,
        module: module?,
        kind: kind?,
    })
}

/// `id` and `module`, which every type has.
fn common(
    s: &mut Sink,
    id: &mut Field<String>,
    module: &mut Field<String>,
    entry: &mut Entry,
) -> (Option<ResourceId>, Option<Option<ModuleName>>) {
    let (id, module) = (std::mem::take(id), std::mem::take(module));
    let id = require(s, "id", id).and_then(|id| check(s, "id", ResourceId::try_from(id)));
    let module = match module {
        Field::Absent => Some(None),
        other => take(s, "module", other)
            .and_then(|m| check(s, "module", ModuleName::try_from(m)))
            .map(Some),
    };
    entry.id = id.clone();
    entry.module = module.clone();
    (id, module)
}

/// Say why a resource could not be read as any type.
fn diagnose(s: &mut Sink, value: &Value, error: String, entry: &mut Entry) {
    let Some(object) = value.as_object() else {
        s.whole(format!("a resource is an object, found {}", kind_of(value)));
        return;
    };
    // Its id still counts: for duplicates, and for what points at it.
    if let Some(id) = object.get("id") {
        match id.as_str() {
            Some(text) => entry.id = check(s, "id", ResourceId::try_from(text)),
            None => s.at("id", format!("expected a string, found {}", kind_of(id))),
        }
    }
    let types = RESOURCE_TYPES.join(", ");
    match object.get("type") {
        None => s.at("type", format!("missing: one of {types}")),
        Some(Value::String(t)) if !RESOURCE_TYPES.contains(&t.as_str()) => {
            s.at("type", format!("unknown type {t:?}: one of {types}"))
        }
        Some(Value::String(_)) => s.whole(error),
        Some(other) => s.at(
            "type",
            format!(
                "expected a string, one of {types}; found {}",
                kind_of(other)
            ),
        ),
    }
}

fn read_container(s: &mut Sink, c: RawContainer, entry: &mut Entry) -> Option<Container> {
    refuse_unknown(s, "", c.unknown);
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

    let command = match take(s, "command", c.command) {
        Some(items) if items.is_empty() => {
            s.at(
                "command",
                "must not be empty: leave it out to run the image's own command",
            );
            None
        }
        Some(items) => {
            let mut args = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                let path = format!("command[{i}]");
                if let Some(arg) = take(s, &path, item) {
                    if no_nul(s, &path, &arg, "an argument") {
                        args.push(arg);
                    }
                }
            }
            Some(args)
        }
        None => None,
    };

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

    let network = take(s, "network", c.network).and_then(|n| match n.as_str() {
        "host" => Some(Network::Host),
        "none" => Some(Network::None),
        _ => check(s, "network", NetworkName::try_from(n)).map(Network::Named),
    });

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

    // Docker refuses the pair at create ("conflicting options: dns and the
    // network mode"); say so now rather than fail the apply.
    if network == Some(Network::Host) && !dns.is_empty() {
        s.at(
            "dns",
            "dns cannot be set with network \"host\": the container shares the host's resolver",
        );
    }

    let has_user = !c.user.is_absent();
    let user =
        take(s, "user", c.user).and_then(|u| check(s, "user", UserSpec::try_from(u.as_str())));
    let access = identities::read_container_access(s, c.identity, c.grant, has_user, entry);
    let health = health::read_health(s, c.health);

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

    let restart_on = take_list(s, "restart-on", c.restart_on);
    let restart_on = ids(s, restart_on);
    if has_restart_on && role_kind != RoleKind::Service {
        s.at(
            "restart-on",
            "restart-on applies to a service container, not to a run-once or scheduled step",
        );
    }

    entry.kind = Kind::Container {
        role: role_kind,
        name: name.clone(),
    };
    entry.holds = holds.clone();
    entry.restart_on = restart_on.clone();

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
        mounts,
        network,
        dns,
        user,
        role,
        timeout,
        restart_on: restart_on.into_iter().map(|(_, id)| id).collect(),
        identity: access.as_ref().and_then(|(i, _)| i.clone()),
        grant: access?.1,
        health,
    })
}

/// Ids of a list, each valid and named once.
fn ids(s: &mut Sink, items: Vec<(String, String)>) -> Vec<(String, ResourceId)> {
    let mut seen: HashMap<ResourceId, String> = HashMap::new();
    let mut out = Vec::new();
    for (path, text) in items {
        let Some(id) = check(s, &path, ResourceId::try_from(text)) else {
            continue;
        };
        if let Some(first) = seen.get(&id) {
            s.at(
                &path,
                format!("{:?} is already named at {first}", id.as_str()),
            );
            continue;
        }
        seen.insert(id.clone(), path.clone());
        out.push((path, id));
    }
    out
}

fn timeout_seconds(value: &Value) -> Result<Duration, String> {
    let rule = "a whole number of seconds, at least 1";
    match value {
        Value::Number(n) => match n.as_u64() {
            Some(0) => Err(format!("must be {rule}, found 0")),
            Some(secs) if secs > MAX_TIMEOUT_SECS => Err(format!(
                "{secs} seconds is more than the {MAX_TIMEOUT_SECS} (30 days) taken"
            )),
            Some(secs) => Ok(Duration::from_secs(secs)),
            None => Err(format!("must be {rule}, found {n}")),
        },
        other => Err(format!("must be {rule}, found {}", kind_of(other))),
    }
}

fn read_mount(s: &mut Sink, path: &str, raw: RawMount) -> Option<Mount> {
    refuse_unknown(s, path, raw.unknown);
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

fn read_mode(s: &mut Sink, value: Field<Value>, default: Mode) -> Option<Mode> {
    match take(s, "mode", value) {
        None => Some(default),
        Some(Value::String(text)) => check(s, "mode", Mode::try_from(text.as_str())),
        Some(Value::Number(n)) => {
            s.at(
                "mode",
                format!("must be an octal string such as \"0644\", found the number {n} (JSON numbers are decimal)"),
            );
            None
        }
        Some(other) => {
            s.at(
                "mode",
                format!(
                    "must be an octal string such as \"0644\", found {}",
                    kind_of(&other)
                ),
            );
            None
        }
    }
}

fn read_owner(s: &mut Sink, value: Field<String>) -> Option<Option<Owner>> {
    match take(s, "owner", value) {
        None => Some(None),
        Some(text) => check(s, "owner", Owner::try_from(text.as_str())).map(Some),
    }
}

fn read_file(s: &mut Sink, f: RawFile, entry: &mut Entry) -> Option<File> {
    refuse_unknown(s, "", f.unknown);
    let path = require(s, "path", f.path).and_then(|p| non_root_path(s, "path", &p));
    entry.kind = Kind::File(path.clone());
    let content = match (f.content, f.content_base64) {
        (Field::Absent, Field::Absent) => {
            s.at(
                "content",
                "missing: give content (UTF-8 text) or content-base64",
            );
            None
        }
        (text, Field::Absent) => take(s, "content", text).map(String::into_bytes),
        (Field::Absent, encoded) => take(s, "content-base64", encoded)
            .and_then(|e| check(s, "content-base64", base64::decode(&e))),
        (_, _) => {
            s.at(
                "content",
                "content and content-base64 are exclusive: give one of them",
            );
            None
        }
    };
    let mode = read_mode(s, f.mode, Mode::FILE_DEFAULT);
    let owner = read_owner(s, f.owner);
    Some(File {
        path: path?,
        content: content?,
        mode: mode?,
        owner: owner?,
    })
}

fn read_directory(s: &mut Sink, d: RawDirectory, entry: &mut Entry) -> Option<Directory> {
    refuse_unknown(s, "", d.unknown);
    let path = require(s, "path", d.path).and_then(|p| non_root_path(s, "path", &p));
    entry.kind = Kind::Directory(path.clone());
    let mode = read_mode(s, d.mode, Mode::DIRECTORY_DEFAULT);
    let owner = read_owner(s, d.owner);
    Some(Directory {
        path: path?,
        mode: mode?,
        owner: owner?,
    })
}

fn read_unit(s: &mut Sink, u: RawUnit, entry: &mut Entry) -> Option<Unit> {
    refuse_unknown(s, "", u.unknown);
    let name = require(s, "name", u.name).and_then(|n| check(s, "name", UnitName::try_from(n)));
    entry.kind = Kind::Unit(name.clone());
    let content = require(s, "content", u.content);
    let state = match take(s, "state", u.state).as_deref() {
        None | Some("started") => Some(UnitState::Started),
        Some("stopped") => Some(UnitState::Stopped),
        Some(other) => {
            s.at(
                "state",
                format!("{other:?} is not a unit state: \"started\" or \"stopped\""),
            );
            None
        }
    };
    let enabled = take(s, "enabled", u.enabled);
    Some(Unit {
        name: name?,
        content: content?,
        state: state?,
        enabled,
    })
}

/// Pass two: what spans resources.
fn cross_check(found: &mut Found, entries: &[Entry]) {
    // First resource with each id; later ones are duplicates.
    let mut by_id: HashMap<ResourceId, usize> = HashMap::new();
    for (index, entry) in entries.iter().enumerate() {
        let Some(id) = &entry.id else { continue };
        match by_id.get(id) {
            Some(first) => entry.sink(found).at(
                "id",
                format!("{:?} is already the id of resources[{first}]", id.as_str()),
            ),
            None => {
                by_id.insert(id.clone(), index);
            }
        }
    }

    unique(
        found,
        entries,
        "name",
        "the name of container",
        |kind| match kind {
            Kind::Container { name, .. } => name.as_ref().map(|n| n.to_string()),
            _ => None,
        },
    );
    unique(found, entries, "path", "declared by", |kind| match kind {
        Kind::File(path) | Kind::Directory(path) => path.as_ref().map(|p| p.to_string()),
        _ => None,
    });
    unique(
        found,
        entries,
        "name",
        "the name of unit",
        |kind| match kind {
            Kind::Unit(name) => name.as_ref().map(|n| n.to_string()),
            _ => None,
        },
    );

    identities::cross_check(found, entries, &by_id);

    for entry in entries.iter() {
        let mut s = entry.sink(found);
        for (field, target) in &entry.holds {
            if entry.id.as_ref() == Some(target) {
                s.at(
                    field,
                    format!(
                        "{:?} is this step itself: a step cannot hold itself still",
                        target.as_str()
                    ),
                );
                continue;
            }
            let Some(held) = by_id.get(target).map(|&i| &entries[i]) else {
                s.at(
                    field,
                    format!("{:?}: no container by that id", target.as_str()),
                );
                continue;
            };
            match &held.kind {
                Kind::Container {
                    role: RoleKind::Service,
                    ..
                } => {
                    if let (Some(step_module), Some(held_module)) = (&entry.module, &held.module) {
                        if step_module != held_module {
                            s.at(field, module_mismatch(target, step_module, held_module));
                        }
                    }
                }
                Kind::Container { role, .. } => s.at(
                    field,
                    format!(
                        "{:?} is a {} step, not a service container to hold still",
                        target.as_str(),
                        if *role == RoleKind::RunOnce {
                            "run-once"
                        } else {
                            "scheduled"
                        }
                    ),
                ),
                other => s.at(
                    field,
                    format!(
                        "{:?}: no container by that id (it is {})",
                        target.as_str(),
                        other.noun()
                    ),
                ),
            }
        }
        for (field, target) in &entry.restart_on {
            match by_id.get(target).map(|&i| &entries[i].kind) {
                Some(Kind::File(_)) => {}
                Some(other) => s.at(
                    field,
                    format!(
                        "{:?}: no file by that id (it is {})",
                        target.as_str(),
                        other.noun()
                    ),
                ),
                None => s.at(field, format!("{:?}: no file by that id", target.as_str())),
            }
        }
    }
}

fn module_mismatch(
    target: &ResourceId,
    step: &Option<ModuleName>,
    held: &Option<ModuleName>,
) -> String {
    let target = target.as_str();
    match (step, held) {
        (Some(step), Some(held)) => format!(
            "{target:?} is in module {:?}, not in this step's module {:?}",
            held.as_str(),
            step.as_str()
        ),
        (Some(step), None) => format!(
            "{target:?} is in no module, not in this step's module {:?}",
            step.as_str()
        ),
        (None, Some(held)) => format!(
            "{target:?} is in module {:?}, and this step is in none",
            held.as_str()
        ),
        (None, None) => format!("{target:?} is in another module"),
    }
}

/// Refuse a second resource with the same key (container name, path, unit).
fn unique(
    found: &mut Found,
    entries: &[Entry],
    field: &str,
    relation: &str,
    key: impl Fn(&Kind) -> Option<String>,
) {
    let mut first: HashMap<String, &str> = HashMap::new();
    for entry in entries {
        let Some(k) = key(&entry.kind) else { continue };
        match first.get(k.as_str()) {
            Some(label) => entry
                .sink(found)
                .at(field, format!("{k:?} is already {relation} {label}")),
            None => {
                first.insert(k, &entry.label);
            }
        }
    }
}
