//! System accounts for identities: what the account files say, what a
//! declared identity conflicts with, and making and removing accounts
//! through the system's own tools (`groupadd`, `useradd`, `userdel`,
//! `groupdel`), which take the account files' lock (`/etc/.pwd.lock`) and
//! write them atomically themselves.

use std::path::Path;
use std::process::Command;

use crate::declaration::{Declaration, Identity, Problem, ResourceKind};

/// One line of `/etc/passwd`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// Login name.
    pub name: String,
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
}

/// One line of `/etc/group`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Group name.
    pub name: String,
    /// Group id.
    pub gid: u32,
}

/// The machine's local accounts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Accounts {
    /// `/etc/passwd`.
    pub users: Vec<User>,
    /// `/etc/group`.
    pub groups: Vec<Group>,
}

impl Accounts {
    /// Read `passwd` and `group` in `etc` (normally `/etc`).
    pub fn read(etc: &Path) -> std::io::Result<Accounts> {
        let passwd = std::fs::read_to_string(etc.join("passwd"))?;
        let group = std::fs::read_to_string(etc.join("group"))?;
        Ok(Accounts::parse(&passwd, &group))
    }

    /// The machine's own accounts.
    pub fn system() -> Result<Accounts, String> {
        Accounts::read(Path::new("/etc"))
            .map_err(|e| format!("cannot read the account files in /etc: {e}"))
    }

    /// Parse the two files' text; lines that do not read are skipped (NIS
    /// `+` lines, comments).
    pub fn parse(passwd: &str, group: &str) -> Accounts {
        let users = passwd
            .lines()
            .filter_map(|line| {
                let f: Vec<&str> = line.split(':').collect();
                Some(User {
                    name: f.first()?.to_string(),
                    uid: f.get(2)?.parse().ok()?,
                    gid: f.get(3)?.parse().ok()?,
                })
            })
            .collect();
        let groups = group
            .lines()
            .filter_map(|line| {
                let f: Vec<&str> = line.split(':').collect();
                Some(Group {
                    name: f.first()?.to_string(),
                    gid: f.get(2)?.parse().ok()?,
                })
            })
            .collect();
        Accounts { users, groups }
    }

    /// The user named `name`.
    pub fn user(&self, name: &str) -> Option<&User> {
        self.users.iter().find(|u| u.name == name)
    }

    /// The group named `name`.
    pub fn group(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name == name)
    }

    /// The name of group `gid`.
    pub fn group_name(&self, gid: u32) -> Option<&str> {
        self.groups
            .iter()
            .find(|g| g.gid == gid)
            .map(|g| g.name.as_str())
    }

    /// What stands in the way of `identity`, as `(field, message)`; empty
    /// when its account and group are absent or exactly as declared.
    pub fn conflicts(&self, identity: &Identity) -> Vec<(&'static str, String)> {
        let name = identity.name.as_str();
        let mut out = Vec::new();
        if let Some(user) = self.user(name) {
            if user.uid != identity.uid {
                out.push((
                    "uid",
                    format!(
                        "account {name:?} already exists with uid {}, not the declared {}",
                        user.uid, identity.uid
                    ),
                ));
            }
            if user.gid != identity.gid {
                out.push((
                    "gid",
                    format!(
                        "account {name:?} already exists with primary group {}, not the declared {}",
                        user.gid, identity.gid
                    ),
                ));
            }
        }
        if let Some(group) = self.group(name) {
            if group.gid != identity.gid {
                out.push((
                    "gid",
                    format!(
                        "group {name:?} already exists with gid {}, not the declared {}",
                        group.gid, identity.gid
                    ),
                ));
            }
        }
        for user in self
            .users
            .iter()
            .filter(|u| u.uid == identity.uid && u.name != name)
        {
            out.push((
                "uid",
                format!(
                    "uid {} already belongs to account {:?}, not to {name:?}",
                    identity.uid, user.name
                ),
            ));
        }
        for group in self
            .groups
            .iter()
            .filter(|g| g.gid == identity.gid && g.name != name)
        {
            out.push((
                "gid",
                format!(
                    "gid {} already belongs to group {:?}, not to {name:?}",
                    identity.gid, group.name
                ),
            ));
        }
        out
    }
}

/// Every conflict between the identities of `decl` and these accounts, as
/// problems naming the resource, the field, and both parties.
pub fn problems(decl: &Declaration, accounts: &Accounts) -> Vec<Problem> {
    decl.resources
        .iter()
        .filter_map(|r| match &r.kind {
            ResourceKind::Identity(i) => Some((r.id.as_str(), i)),
            _ => None,
        })
        .flat_map(|(id, identity)| {
            accounts
                .conflicts(identity)
                .into_iter()
                .map(move |(field, message)| Problem {
                    resource: Some(id.to_string()),
                    field: Some(field.to_string()),
                    message,
                })
        })
        .collect()
}

/// What [`make`] made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Made {
    /// The group was added.
    pub group: bool,
    /// The account was added.
    pub user: bool,
}

/// The account tools, by absolute path: never found through `$PATH`
/// (whose `/usr/local/sbin` comes first and may be writable by others
/// than root). shadow's tools live in `/usr/sbin` on Debian and RHEL.
const GROUPADD: &str = "/usr/sbin/groupadd";
const USERADD: &str = "/usr/sbin/useradd";
const USERDEL: &str = "/usr/sbin/userdel";
const GROUPDEL: &str = "/usr/sbin/groupdel";

fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// What [`make`] would make for `identity` when `accounts` are the
/// machine's: what is missing of it.
pub fn to_make(identity: &Identity, accounts: &Accounts) -> Made {
    let name = identity.name.as_str();
    Made {
        user: accounts.user(name).is_none(),
        group: accounts.group(name).is_none(),
    }
}

/// Make what is missing of `identity`: a system group with its gid, a
/// system account with its uid, that group, no home and no login shell.
/// The caller has checked [`Accounts::conflicts`].
pub fn make(identity: &Identity, accounts: &Accounts) -> Result<Made, String> {
    let name = identity.name.as_str();
    let (uid, gid) = (identity.uid.to_string(), identity.gid.to_string());
    let mut made = Made::default();
    if accounts.group(name).is_none() {
        run(GROUPADD, &["--system", "--gid", &gid, name])?;
        made.group = true;
    }
    if accounts.user(name).is_none() {
        let result = run(
            USERADD,
            &[
                "--system",
                "--uid",
                &uid,
                "--gid",
                &gid,
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--shell",
                "/usr/sbin/nologin",
                name,
            ],
        );
        if let Err(e) = result {
            if made.group {
                // Leave nothing half made.
                let _ = run(GROUPDEL, &[name]);
            }
            return Err(e);
        }
        made.user = true;
    }
    Ok(made)
}

/// Remove what the host made of an identity, and only if it still has the
/// numbers the host gave it.
pub fn remove(name: &str, uid: u32, gid: u32, made: Made) -> Result<(), String> {
    let before = Accounts::system()?;
    if made.user && before.user(name).is_some_and(|u| u.uid == uid) {
        run(USERDEL, &[name])?;
    }
    let after = Accounts::system()?;
    let group = before.group(name).filter(|g| g.gid == gid);
    match (made.group, group, after.group(name)) {
        (true, Some(_), Some(_)) => run(GROUPDEL, &[name])?,
        // userdel removes a same-named primary group (USERGROUPS_ENAB);
        // one the host did not make is put back as it was.
        (false, Some(g), None) => run(GROUPADD, &["--system", "--gid", &g.gid.to_string(), name])?,
        _ => {}
    }
    Ok(())
}

/// The machine's account files, read: what an apply decides identities
/// from.
pub trait AccountBook: Send + Sync + std::fmt::Debug {
    /// The accounts as they are now.
    fn read(&self) -> Result<Accounts, String>;
}

/// The account tools: what adds and removes accounts (an apply's
/// executor holds these; its decisions only the [`AccountBook`]).
pub trait AccountTools: AccountBook {
    /// [`make`].
    fn make(&self, identity: &Identity, found: &Accounts) -> Result<Made, String>;
    /// [`remove`].
    fn remove(&self, name: &str, uid: u32, gid: u32, made: Made) -> Result<(), String>;
}

/// This machine's accounts, through its files and tools.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemAccounts;

impl AccountBook for SystemAccounts {
    fn read(&self) -> Result<Accounts, String> {
        Accounts::system()
    }
}

impl AccountTools for SystemAccounts {
    fn make(&self, identity: &Identity, found: &Accounts) -> Result<Made, String> {
        make(identity, found)
    }

    fn remove(&self, name: &str, uid: u32, gid: u32, made: Made) -> Result<(), String> {
        remove(name, uid, gid, made)
    }
}

/// Accounts in memory, for unit tests: [`AccountTools`] without the
/// machine's files. Every make and remove is recorded.
#[cfg(test)]
#[derive(Debug, Default)]
pub struct FakeAccounts {
    state: std::sync::Mutex<(Accounts, Vec<String>)>,
}

#[cfg(test)]
impl FakeAccounts {
    /// What was made and removed, in order (`make NAME`, `remove NAME`).
    pub fn calls(&self) -> Vec<String> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .1
            .clone()
    }

    /// Add an account (and its group) behind the tools' back.
    pub fn add(&self, name: &str, uid: u32, gid: u32) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0.users.push(User {
            name: name.into(),
            uid,
            gid,
        });
        state.0.groups.push(Group {
            name: name.into(),
            gid,
        });
    }
}

#[cfg(test)]
impl AccountBook for FakeAccounts {
    fn read(&self) -> Result<Accounts, String> {
        Ok(self
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone())
    }
}

#[cfg(test)]
impl AccountTools for FakeAccounts {
    fn make(&self, identity: &Identity, _found: &Accounts) -> Result<Made, String> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let name = identity.name.to_string();
        let made = to_make(identity, &state.0);
        if made.group {
            state.0.groups.push(Group {
                name: name.clone(),
                gid: identity.gid,
            });
        }
        if made.user {
            state.0.users.push(User {
                name: name.clone(),
                uid: identity.uid,
                gid: identity.gid,
            });
        }
        state.1.push(format!("make {name}"));
        Ok(made)
    }

    fn remove(&self, name: &str, _uid: u32, _gid: u32, made: Made) -> Result<(), String> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if made.user {
            state.0.users.retain(|u| u.name != name);
        }
        if made.group {
            state.0.groups.retain(|g| g.name != name);
        }
        state.1.push(format!("remove {name}"));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declaration::AccountName;

    fn identity(name: &str, uid: u32, gid: u32) -> Identity {
        Identity {
            name: AccountName::try_from(name).expect("valid name"),
            uid,
            gid,
        }
    }

    const PASSWD: &str = "root:x:0:0:root:/root:/bin/bash\nbob:x:1000:1000::/home/bob:/bin/sh\napp:x:2001:2001::/nonexistent:/usr/sbin/nologin\n+nis\n";
    const GROUP: &str = "root:x:0:\nbob:x:1000:\napp:x:2001:\nmedia:x:3000:bob\n";

    #[test]
    fn an_account_as_declared_is_no_conflict() {
        let a = Accounts::parse(PASSWD, GROUP);
        assert!(a.conflicts(&identity("app", 2001, 2001)).is_empty());
        assert!(a.conflicts(&identity("fresh", 2500, 2500)).is_empty());
    }

    #[test]
    fn conflicts_name_both_parties() {
        let a = Accounts::parse(PASSWD, GROUP);
        let got = a.conflicts(&identity("app", 2002, 2001));
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].1.contains("\"app\"") && got[0].1.contains("2001") && got[0].1.contains("2002"),
            "{got:?}"
        );
        let got = a.conflicts(&identity("web", 1000, 3000));
        let text: String = got
            .iter()
            .map(|(_, m)| m.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            text.contains("uid 1000 already belongs to account \"bob\", not to \"web\""),
            "{text}"
        );
        assert!(
            text.contains("gid 3000 already belongs to group \"media\", not to \"web\""),
            "{text}"
        );
        let got = a.conflicts(&identity("media", 2600, 2600));
        assert!(
            got.iter()
                .any(|(_, m)| m.contains("group \"media\" already exists with gid 3000")),
            "{got:?}"
        );
    }
}
