//! Value types of the model. Each checks its value when built (`TryFrom`),
//! so the model cannot hold an id with a space, an unpinned image or a
//! relative path. The error is a sentence naming the rule broken and quoting
//! the value (Rust-escaped, so control characters stay visible and a message
//! stays one line).

use std::fmt;
use std::ops::Deref;

use serde::{Serialize, Serializer};

/// Why a value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidValue(pub String);

fn invalid<T>(message: String) -> Result<T, InvalidValue> {
    Err(InvalidValue(message))
}

/// Longest resource id or module name. Ids become parts of systemd unit names
/// (`mesh-host-step-<id>-<time>.scope`, with `-` escaped to four characters)
/// and of file names in the state directory, both limited to 255 bytes.
pub const MAX_ID_LEN: usize = 48;

/// Longest container, volume or network name taken.
pub const MAX_NAME_LEN: usize = 128;

/// A string newtype whose value passed `$check`.
macro_rules! checked_string {
    ($(#[$doc:meta])* $name:ident, $check:path) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The value as declared.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<&str> for $name {
            type Error = InvalidValue;
            fn try_from(value: &str) -> Result<Self, InvalidValue> {
                $check(value)?;
                Ok(Self(value.to_owned()))
            }
        }

        impl TryFrom<String> for $name {
            type Error = InvalidValue;
            fn try_from(value: String) -> Result<Self, InvalidValue> {
                $check(&value)?;
                Ok(Self(value))
            }
        }

        impl std::str::FromStr for $name {
            type Err = InvalidValue;
            fn from_str(value: &str) -> Result<Self, InvalidValue> {
                Self::try_from(value)
            }
        }

        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }
    };
}

checked_string!(
    /// A resource id: 1 to [`MAX_ID_LEN`] ASCII letters, digits, `-`, `_`
    /// and `.`, and not `.` or `..` (it names files in the state directory).
    ResourceId,
    check_id
);

checked_string!(
    /// A module name: the same characters as a [`ResourceId`].
    ModuleName,
    check_module
);

checked_string!(
    /// A container name as Docker and Podman take it:
    /// `[a-zA-Z0-9][a-zA-Z0-9_.-]+`.
    ContainerName,
    check_container_name
);

checked_string!(
    /// A named volume as Docker and Podman take it:
    /// `[a-zA-Z0-9][a-zA-Z0-9_.-]+`.
    VolumeName,
    check_volume_name
);

checked_string!(
    /// A user-defined network: `[a-zA-Z0-9][a-zA-Z0-9_.-]+`, not `host` or
    /// `none` (those are [`super::Network::Host`] and
    /// [`super::Network::None`]).
    NetworkName,
    check_network_name
);

checked_string!(
    /// A systemd unit name that can be written under /etc/systemd/system:
    /// a type suffix such as `.service`, no path separator, no whitespace,
    /// only the characters systemd allows, not a template, and not one of
    /// the host's own units.
    UnitName,
    check_unit_name
);

fn id_like(what: &str, value: &str) -> Result<(), InvalidValue> {
    if value.is_empty() {
        return invalid(format!("{what} must not be empty"));
    }
    if let Some(c) = value
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return invalid(format!(
            "{value:?} contains {c:?}: {what} may hold only ASCII letters, digits, '-', '_' and '.'"
        ));
    }
    if value == "." || value == ".." {
        return invalid(format!("{what} must not be {value:?}"));
    }
    if value.len() > MAX_ID_LEN {
        return invalid(format!(
            "{value:?} is {} characters long: {what} may have at most {MAX_ID_LEN}",
            value.len()
        ));
    }
    Ok(())
}

fn check_id(value: &str) -> Result<(), InvalidValue> {
    id_like("an id", value)
}

fn check_module(value: &str) -> Result<(), InvalidValue> {
    id_like("a module name", value)
}

/// Docker's `[a-zA-Z0-9][a-zA-Z0-9_.-]+` (at least two characters).
fn docker_name(what: &str, value: &str) -> Result<(), InvalidValue> {
    let rule = "[a-zA-Z0-9][a-zA-Z0-9_.-]+";
    let mut chars = value.chars();
    match chars.next() {
        None => return invalid(format!("{what} must not be empty")),
        Some(c) if !c.is_ascii_alphanumeric() => {
            return invalid(format!(
                "{value:?} starts with {c:?}: {what} must match {rule}"
            ))
        }
        Some(_) => {}
    }
    if let Some(c) = chars.find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))) {
        return invalid(format!(
            "{value:?} contains {c:?}: {what} must match {rule}"
        ));
    }
    if value.len() < 2 {
        return invalid(format!(
            "{value:?} is too short: {what} must match {rule} (two characters or more)"
        ));
    }
    if value.len() > MAX_NAME_LEN {
        return invalid(format!(
            "{what} is {} characters long, at most {MAX_NAME_LEN} are taken",
            value.len()
        ));
    }
    Ok(())
}

fn check_container_name(value: &str) -> Result<(), InvalidValue> {
    docker_name("a container name", value)
}

fn check_volume_name(value: &str) -> Result<(), InvalidValue> {
    docker_name("a volume name", value)
}

fn check_network_name(value: &str) -> Result<(), InvalidValue> {
    if value == "host" || value == "none" {
        return invalid(format!("{value:?} is a network mode, not a network name"));
    }
    docker_name("a network name", value)
}

/// Unit types whose files can be written and whose state can be managed.
/// `.scope` (transient only) and `.device` (from udev) cannot.
pub const UNIT_SUFFIXES: [&str; 9] = [
    "service",
    "socket",
    "timer",
    "path",
    "mount",
    "automount",
    "swap",
    "target",
    "slice",
];

fn check_unit_name(value: &str) -> Result<(), InvalidValue> {
    if value.is_empty() {
        return invalid("a unit name must not be empty".to_owned());
    }
    if value.contains('/') {
        return invalid(format!(
            "{value:?} contains a path separator '/': give the unit's name, not a path"
        ));
    }
    if let Some(c) = value.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return invalid(format!(
            "{value:?} contains {c:?}: a unit name has no whitespace or control characters"
        ));
    }
    // systemd's unit name characters (unit-name.c VALID_CHARS plus '@' and '.').
    if let Some(c) = value
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, ':' | '-' | '_' | '.' | '\\' | '@')))
    {
        return invalid(format!(
            "{value:?} contains {c:?}, which systemd does not allow in a unit name"
        ));
    }
    if value.len() > 255 {
        return invalid(format!(
            "a unit name is at most 255 characters, this one has {}",
            value.len()
        ));
    }
    let suffixes = UNIT_SUFFIXES.map(|s| format!(".{s}")).join(" ");
    let Some((prefix, suffix)) = value.rsplit_once('.') else {
        return invalid(format!(
            "{value:?} has no unit type suffix: it must end in one of {suffixes}"
        ));
    };
    if !UNIT_SUFFIXES.contains(&suffix) {
        return invalid(format!(
            "{value:?} does not end in a unit type suffix: one of {suffixes}"
        ));
    }
    if prefix.is_empty() || prefix.starts_with('@') {
        return invalid(format!("{value:?} has no name before its suffix"));
    }
    if prefix.ends_with('@') {
        return invalid(format!(
            "{value:?} is a template, which cannot be started or stopped: declare an instance such as name@instance.{suffix}"
        ));
    }
    if value.starts_with("mesh-host") {
        return invalid(format!("{value:?} is reserved for mesh-host's own units"));
    }
    Ok(())
}

impl UnitName {
    /// The unit type: `service`, `timer`, ...
    pub fn suffix(&self) -> &str {
        self.0.rsplit_once('.').map_or("", |(_, s)| s)
    }
}

/// An absolute path with no `..` component and no NUL, kept in a normal
/// form: repeated `/` and `.` components dropped, no trailing `/` (except
/// for `/` itself). The normal form makes equal paths compare equal and
/// nested paths easy to tell.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct AbsPath(String);

impl AbsPath {
    /// The path in normal form.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path for filesystem calls.
    pub fn as_path(&self) -> &std::path::Path {
        std::path::Path::new(&self.0)
    }

    /// Whether this is `/`.
    pub fn is_root(&self) -> bool {
        self.0 == "/"
    }

    /// Whether `self` is `other` or lies inside it, by whole components.
    pub fn is_within(&self, other: &AbsPath) -> bool {
        other.is_root()
            || self.0 == other.0
            || (self.0.starts_with(&other.0) && self.0.as_bytes().get(other.0.len()) == Some(&b'/'))
    }

    /// Whether one of the two paths is or contains the other.
    pub fn overlaps(&self, other: &AbsPath) -> bool {
        self.is_within(other) || other.is_within(self)
    }
}

impl TryFrom<&str> for AbsPath {
    type Error = InvalidValue;
    fn try_from(value: &str) -> Result<Self, InvalidValue> {
        if value.is_empty() {
            return invalid("a path must not be empty".to_owned());
        }
        if !value.starts_with('/') {
            return invalid(format!(
                "{value:?} is a relative path: it must start with '/'"
            ));
        }
        if value.contains('\0') {
            return invalid(format!("{value:?} contains a NUL character"));
        }
        let mut normal = String::with_capacity(value.len());
        for component in value.split('/') {
            match component {
                "" | "." => {}
                ".." => {
                    return invalid(format!(
                    "{value:?} has a '..' component: paths must not climb out of where they point"
                ))
                }
                c => {
                    normal.push('/');
                    normal.push_str(c);
                }
            }
        }
        if normal.is_empty() {
            normal.push('/');
        }
        Ok(AbsPath(normal))
    }
}

impl TryFrom<String> for AbsPath {
    type Error = InvalidValue;
    fn try_from(value: String) -> Result<Self, InvalidValue> {
        AbsPath::try_from(value.as_str())
    }
}

impl Deref for AbsPath {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<std::path::Path> for AbsPath {
    fn as_ref(&self) -> &std::path::Path {
        self.as_path()
    }
}

impl fmt::Display for AbsPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An image pinned by digest: `REPO[:TAG]@sha256:<64 lowercase hex>`.
///
/// The runtime pulls and runs the digest; a tag, when given, is kept for
/// people reading the declaration.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ImageRef {
    full: String,
    repository_len: usize,
    tag: Option<String>,
}

impl ImageRef {
    /// The reference as declared.
    pub fn as_str(&self) -> &str {
        &self.full
    }

    /// The repository, with its registry host if one was given
    /// (`127.0.0.1:5000/registry`).
    pub fn repository(&self) -> &str {
        &self.full[..self.repository_len]
    }

    /// The tag, if one was given next to the digest.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// `sha256:<hex>`.
    pub fn digest(&self) -> &str {
        self.full.rsplit_once('@').map_or("", |(_, digest)| digest)
    }

    /// `REPO@sha256:<hex>` without the tag: what the runtime resolves.
    pub fn pinned(&self) -> String {
        format!("{}@{}", self.repository(), self.digest())
    }
}

impl TryFrom<&str> for ImageRef {
    type Error = InvalidValue;
    fn try_from(value: &str) -> Result<Self, InvalidValue> {
        let Some((name_tag, digest)) = value.split_once('@') else {
            return invalid(format!(
                "{value:?} is not pinned by digest: write REPO@sha256:<64 hex> (a tag alone can change under you)"
            ));
        };
        let hex = digest.strip_prefix("sha256:").unwrap_or("");
        if hex.len() != 64
            || !hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return invalid(format!(
                "{value:?}: the digest must be sha256: and 64 lowercase hex digits, found {digest:?}"
            ));
        }
        // A ':' after the last '/' starts a tag; one before it is a port.
        let last_slash = name_tag.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match name_tag[last_slash..].find(':') {
            Some(i) => (
                &name_tag[..last_slash + i],
                Some(&name_tag[last_slash + i + 1..]),
            ),
            None => (name_tag, None),
        };
        check_repository(value, name)?;
        if let Some(tag) = tag {
            check_tag(value, tag)?;
        }
        Ok(ImageRef {
            full: value.to_owned(),
            repository_len: name.len(),
            tag: tag.map(str::to_owned),
        })
    }
}

impl TryFrom<String> for ImageRef {
    type Error = InvalidValue;
    fn try_from(value: String) -> Result<Self, InvalidValue> {
        ImageRef::try_from(value.as_str())
    }
}

/// The distribution reference grammar: `[host[:port]/]component(/component)*`,
/// components lowercase alphanumerics joined by `.`, `_`, `__` or dashes.
fn check_repository(image: &str, name: &str) -> Result<(), InvalidValue> {
    let rule = "lowercase letters and digits, joined by '.', '_', '__' or '-', after an optional registry host[:port]/";
    if name.is_empty() {
        return invalid(format!("{image:?} has no repository before the digest"));
    }
    if name.len() > 255 {
        return invalid(format!(
            "{image:?}: the repository is longer than 255 characters"
        ));
    }
    let mut components: Vec<&str> = name.split('/').collect();
    if components.len() > 1 {
        let first = components[0];
        if first.contains('.') || first.contains(':') || first == "localhost" {
            check_registry_host(image, first)?;
            components.remove(0);
        }
    }
    for component in components {
        if !is_path_component(component) {
            return invalid(format!(
                "{image:?}: {component:?} is not a valid repository name component ({rule})"
            ));
        }
    }
    Ok(())
}

fn is_path_component(component: &str) -> bool {
    let bytes = component.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if bytes.first().is_none_or(|&b| !alnum(b)) || bytes.last().is_none_or(|&b| !alnum(b)) {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        if alnum(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !alnum(bytes[i]) {
            i += 1;
        }
        let separator = &component[start..i];
        let ok = separator == "."
            || separator == "_"
            || separator == "__"
            || separator.bytes().all(|b| b == b'-');
        if !ok {
            return false;
        }
    }
    true
}

fn check_registry_host(image: &str, host: &str) -> Result<(), InvalidValue> {
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (host, None),
    };
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if !name.split('.').all(label_ok) {
        return invalid(format!("{image:?}: {host:?} is not a valid registry host"));
    }
    if let Some(port) = port {
        if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
            return invalid(format!("{image:?}: {host:?} has an invalid port"));
        }
    }
    Ok(())
}

fn check_tag(image: &str, tag: &str) -> Result<(), InvalidValue> {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let ok = !tag.is_empty()
        && tag.len() <= 128
        && tag.bytes().next().is_some_and(word)
        && tag.bytes().all(|b| word(b) || b == b'.' || b == b'-');
    if ok {
        Ok(())
    } else {
        invalid(format!(
            "{image:?}: {tag:?} is not a valid tag ([A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})"
        ))
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.full)
    }
}

impl Serialize for ImageRef {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.full)
    }
}

/// A numeric user or group id, as `chown(2)` takes it. `4294967295` is
/// refused: it is `(uid_t)-1`, "leave unchanged".
fn numeric_id(text: &str) -> Option<u32> {
    if text.is_empty() || text.len() > 10 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u32>().ok().filter(|&n| n != u32::MAX)
}

/// A container's `user`: `USER` or `USER:GROUP`, each a number or a name.
/// A number means the same whatever the image's `/etc/passwd` says; a name
/// is resolved in the image by the runtime at start, as compose does.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UserSpec {
    /// The user.
    pub user: Principal,
    /// The group; the image's default for the user when absent.
    pub group: Option<Principal>,
}

/// A user or group: its number, or its name in the image.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Principal {
    Id(u32),
    Name(String),
}

impl Principal {
    fn parse(text: &str) -> Option<Principal> {
        if text.bytes().all(|b| b.is_ascii_digit()) {
            return numeric_id(text).map(Principal::Id);
        }
        // As useradd takes them: a letter or '_' first, at most 32.
        let ok = text.len() <= 32
            && text
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        ok.then(|| Principal::Name(text.to_string()))
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Principal::Id(n) => write!(f, "{n}"),
            Principal::Name(name) => f.write_str(name),
        }
    }
}

impl TryFrom<&str> for UserSpec {
    type Error = InvalidValue;
    fn try_from(value: &str) -> Result<Self, InvalidValue> {
        let (user, group) = match value.split_once(':') {
            Some((user, group)) => (user, Some(group)),
            None => (value, None),
        };
        let parsed = Principal::parse(user).and_then(|user| match group {
            None => Some(UserSpec { user, group: None }),
            Some(group) => Principal::parse(group).map(|group| UserSpec {
                user,
                group: Some(group),
            }),
        });
        parsed.ok_or_else(|| {
            InvalidValue(format!(
                "{value:?} is not \"USER\" or \"USER:GROUP\", each a numeric id (0 to 4294967294) or a name (a letter or '_', then letters, digits, '_', '-', '.')"
            ))
        })
    }
}

impl fmt::Display for UserSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.group {
            Some(group) => write!(f, "{}:{group}", self.user),
            None => write!(f, "{}", self.user),
        }
    }
}

impl Serialize for UserSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Owner of a file or directory: `UID:GID`, numeric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owner {
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
}

impl TryFrom<&str> for Owner {
    type Error = InvalidValue;
    fn try_from(value: &str) -> Result<Self, InvalidValue> {
        value
            .split_once(':')
            .and_then(|(uid, gid)| {
                Some(Owner {
                    uid: numeric_id(uid)?,
                    gid: numeric_id(gid)?,
                })
            })
            .ok_or_else(|| {
                InvalidValue(format!(
                    "{value:?} is not \"UID:GID\" with numeric ids (0 to 4294967294)"
                ))
            })
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.uid, self.gid)
    }
}

impl Serialize for Owner {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Permission bits of a file or directory, at most `07777`. Declared as an
/// octal string (`"0644"`, `"755"`, `"07777"`): a JSON number would be read
/// as decimal, and 644 decimal is not 0644.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mode(u32);

impl Mode {
    /// `0644`, a file's default.
    pub const FILE_DEFAULT: Mode = Mode(0o644);
    /// `0755`, a directory's default.
    pub const DIRECTORY_DEFAULT: Mode = Mode(0o755);

    /// The bits, for `chmod`.
    pub fn bits(self) -> u32 {
        self.0
    }
}

impl TryFrom<&str> for Mode {
    type Error = InvalidValue;
    fn try_from(value: &str) -> Result<Self, InvalidValue> {
        // Three digits at least, so that "7" is not taken for "0007"; five
        // allow "07777".
        let octal =
            (3..=5).contains(&value.len()) && value.bytes().all(|b| (b'0'..=b'7').contains(&b));
        match u32::from_str_radix(value, 8) {
            Ok(bits) if octal && bits <= 0o7777 => Ok(Mode(bits)),
            _ => invalid(format!(
                "{value:?} is not an octal mode such as \"0644\" (three or four octal digits, at most \"07777\")"
            )),
        }
    }
}

impl TryFrom<u32> for Mode {
    type Error = InvalidValue;
    fn try_from(bits: u32) -> Result<Self, InvalidValue> {
        if bits <= 0o7777 {
            Ok(Mode(bits))
        } else {
            invalid(format!("{bits:#o} has bits beyond 07777"))
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04o}", self.0)
    }
}

impl Serialize for Mode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}
