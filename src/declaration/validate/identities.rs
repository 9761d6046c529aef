//! Validation of identities, shared folders and a container's `identity`
//! and `grant` (CONTRACT "Identities and shared folders"): each resource on
//! its own, then what spans resources (what the ids point at, names and
//! numbers used once, folders that do not nest).
//!
//! What the machine already has (an account by that name or number) is not
//! the declaration's business: `check` and apply ask the account files
//! through `crate::accounts`.

use crate::declaration::hints::Fields;
use crate::declaration::overlaps::PathIndex;
use std::collections::HashMap;

use serde_json::Value;

use super::entry::{Entry, Kind};
use super::fields::{
    check, non_root_path, refuse_unknown, require, take, take_list, written_path, Found, Sink,
};
use crate::declaration::identity::{
    root_granting, Access, AccountName, Grant, Identity, SharedFolder,
};
use crate::declaration::raw::kind_of;
use crate::declaration::raw::{Field, List, RawGrant, RawIdentity, RawSharedFolder};
use crate::declaration::types::{AbsPath, ResourceId};

fn read_id_number(s: &mut Sink, field: &str, value: Field<Value>) -> Option<u32> {
    let value = require(s, field, value)?;
    let n = match &value {
        Value::Number(n) => n.as_u64(),
        _ => None,
    };
    match n {
        Some(0) => {
            s.at(
                field,
                format!("{field} 0 is root's: an identity never has root's numbers"),
            );
            None
        }
        // 2^32 - 1 is the kernel's "no id" (-1).
        Some(n) if n < u64::from(u32::MAX) => Some(n as u32),
        _ => {
            s.at(
                field,
                format!(
                    "must be a whole number from 1 to {}, found {}",
                    u32::MAX - 1,
                    match &value {
                        Value::Number(n) => n.to_string(),
                        other => kind_of(other).to_string(),
                    }
                ),
            );
            None
        }
    }
}

/// `type: "identity"`.
pub(super) fn read_identity(s: &mut Sink, r: RawIdentity, entry: &mut Entry) -> Option<Identity> {
    refuse_unknown(s, "", r.unknown, Fields::Resource("identity"));
    let name = require(s, "name", r.name).and_then(|n| {
        let name = check(s, "name", AccountName::try_from(n.as_str()))?;
        if let Some(why) = root_granting(name.as_str()) {
            s.at(
                "name",
                format!(
                    "{:?} grants root-equivalent power ({why}): an identity never has that name",
                    name.as_str()
                ),
            );
            return None;
        }
        Some(name)
    });
    let uid = read_id_number(s, "uid", r.uid);
    let gid = read_id_number(s, "gid", r.gid);
    entry.kind = Kind::Identity {
        name: name.clone(),
        uid,
        gid,
    };
    Some(Identity {
        name: name?,
        uid: uid?,
        gid: gid?,
    })
}

/// `type: "shared-folder"`.
pub(super) fn read_shared_folder(
    s: &mut Sink,
    r: RawSharedFolder,
    entry: &mut Entry,
) -> Option<SharedFolder> {
    refuse_unknown(s, "", r.unknown, Fields::Resource("shared-folder"));
    let path = require(s, "path", r.path).and_then(|p| written_path(s, "path", &p));
    entry.kind = Kind::SharedFolder(path.clone());
    let absent = r.access.is_absent();
    let items = take_list(s, "access", r.access);
    if items.is_empty() {
        s.at(
            "access",
            if absent {
                "missing: name at least one identity"
            } else {
                "must name at least one identity"
            },
        );
    }
    let mut access = Vec::new();
    let mut seen: HashMap<ResourceId, String> = HashMap::new();
    let mut ok = true;
    for (field, raw) in items {
        refuse_unknown(s, &field, raw.unknown, Fields::Access);
        let id_field = format!("{field}.identity");
        let Some(id) = require(s, &id_field, raw.identity)
            .and_then(|t| check(s, &id_field, ResourceId::try_from(t)))
        else {
            ok = false;
            continue;
        };
        let write = take(s, &format!("{field}.write"), raw.write).unwrap_or(false);
        if let Some(first) = seen.get(&id) {
            s.at(
                &id_field,
                format!("{:?} is already named at {first}", id.as_str()),
            );
            ok = false;
            continue;
        }
        seen.insert(id.clone(), id_field.clone());
        entry.identities.push((id_field, id.clone()));
        access.push(Access {
            identity: id,
            write,
        });
    }
    if !ok || access.is_empty() {
        return None;
    }
    Some(SharedFolder {
        path: path?,
        access,
    })
}

/// A container's `identity` and `grant`. `None` when either is invalid.
pub(super) fn read_container_access(
    s: &mut Sink,
    identity: Field<String>,
    grant: List<RawGrant>,
    has_user: bool,
    entry: &mut Entry,
) -> Option<(Option<ResourceId>, Vec<Grant>)> {
    let mut ok = true;
    let identity = match take(s, "identity", identity) {
        None => None,
        Some(text) => match check(s, "identity", ResourceId::try_from(text)) {
            Some(id) => {
                if has_user {
                    s.at(
                        "identity",
                        "identity and user are exclusive: the identity gives the uid:gid",
                    );
                    ok = false;
                }
                entry.identities.push(("identity".to_string(), id.clone()));
                Some(id)
            }
            None => {
                ok = false;
                None
            }
        },
    };
    let mut grants: Vec<Grant> = Vec::new();
    let mut seen: HashMap<AbsPath, String> = HashMap::new();
    for (field, raw) in take_list(s, "grant", grant) {
        refuse_unknown(s, &field, raw.unknown, Fields::Grant);
        let path_field = format!("{field}.path");
        let Some(path) =
            require(s, &path_field, raw.path).and_then(|p| non_root_path(s, &path_field, &p))
        else {
            ok = false;
            continue;
        };
        if let Some(first) = seen.get(&path) {
            s.at(&path_field, format!("{path} is already granted at {first}"));
            ok = false;
            continue;
        }
        seen.insert(path.clone(), path_field);
        grants.push(Grant { path });
    }
    ok.then_some((identity, grants))
}

/// What spans resources: identity references, one name and one uid and
/// gid per identity, shared folders neither shared nor nested.
pub(super) fn cross_check(
    found: &mut Found,
    entries: &[Entry],
    by_id: &HashMap<ResourceId, usize>,
) {
    for entry in entries {
        let mut s = entry.sink(found);
        for (field, target) in &entry.identities {
            match by_id.get(target).map(|&i| &entries[i].kind) {
                Some(Kind::Identity { .. }) => {}
                Some(other) => s.at(
                    field,
                    format!(
                        "{:?}: no identity by that id (it is {})",
                        target.as_str(),
                        other.noun()
                    ),
                ),
                None => s.at(
                    field,
                    format!("{:?}: no identity by that id", target.as_str()),
                ),
            }
        }
    }
    let mut names: HashMap<&AccountName, &str> = HashMap::new();
    let mut uids: HashMap<u32, &str> = HashMap::new();
    let mut gids: HashMap<u32, &str> = HashMap::new();
    // Shared folders accepted so far, found by what they overlap.
    let mut folders: Vec<(&AbsPath, &str)> = Vec::new();
    let mut folder_index: PathIndex<usize> = PathIndex::new();
    for entry in entries {
        match &entry.kind {
            Kind::Identity { name, uid, gid } => {
                let mut problems = Vec::new();
                if let Some(name) = name {
                    if let Some(first) = names.insert(name, &entry.label) {
                        names.insert(name, first);
                        problems.push((
                            "name",
                            format!(
                                "{:?} is already the name of identity {first}",
                                name.as_str()
                            ),
                        ));
                    }
                }
                for (field, number, seen) in [("uid", uid, &mut uids), ("gid", gid, &mut gids)] {
                    if let Some(n) = number {
                        if let Some(first) = seen.insert(*n, &entry.label) {
                            seen.insert(*n, first);
                            problems.push((
                                field,
                                format!("{n} is already the {field} of identity {first}"),
                            ));
                        }
                    }
                }
                let mut s = entry.sink(found);
                for (field, message) in problems {
                    s.at(field, message);
                }
            }
            Kind::SharedFolder(Some(path)) => {
                let clash = folder_index
                    .first_overlapping(path)
                    .and_then(|i| folders.get(i));
                if let Some((other, label)) = clash {
                    let message = if *other == path {
                        format!("{path} is already shared by {label}")
                    } else {
                        format!("{path} overlaps {other}, shared by {label}: shared folders do not nest")
                    };
                    entry.sink(found).at("path", message);
                } else {
                    folder_index.insert(path, folders.len());
                    folders.push((path, &entry.label));
                }
            }
            _ => {}
        }
    }
    // A directory resource's mode would fight the folder's mask at every
    // apply (chmod narrows it, the watch widens it again).
    for entry in entries {
        let Kind::Directory(Some(path)) = &entry.kind else {
            continue;
        };
        let shared = folder_index
            .first_overlapping(path)
            .and_then(|i| folders.get(i))
            .filter(|(f, _)| *f == path);
        if let Some((_, label)) = shared {
            entry.sink(found).at(
                "path",
                format!("{path} is shared folder {label}: its permissions are the folder's entries; declare it once, as the shared folder"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::declaration::{parse, ResourceKind};

    const IMAGE: &str =
        "127.0.0.1:5000/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn decl(resources: Value) -> Vec<u8> {
        json!({"declaration": 1, "resources": resources})
            .to_string()
            .into_bytes()
    }

    fn problems(resources: Value) -> Vec<String> {
        parse(&decl(resources))
            .expect_err("refused")
            .problems
            .iter()
            .map(|p| p.to_string())
            .collect()
    }

    #[test]
    fn identities_folders_and_grants_are_read() {
        let d = parse(&decl(json!([
            {"id": "media-id", "type": "identity", "module": "media", "name": "media-app", "uid": 2001, "gid": 2001},
            {"id": "web-id", "type": "identity", "name": "web", "uid": 2002, "gid": 2002},
            {"id": "share", "type": "shared-folder", "path": "/srv/share",
             "access": [{"identity": "media-id", "write": true}, {"identity": "web-id"}]},
            {"id": "app", "type": "container", "name": "app", "image": IMAGE,
             "identity": "media-id", "grant": [{"path": "/srv/media"}]}
        ])))
        .expect("valid");
        let ResourceKind::SharedFolder(f) = &d.resources[2].kind else {
            panic!("a shared folder")
        };
        assert!(
            f.access[0].write && !f.access[1].write,
            "write defaults to false"
        );
        let c = d.container("app").expect("container");
        assert_eq!(c.identity.as_ref().map(|i| i.as_str()), Some("media-id"));
        assert_eq!(c.grant[0].path.as_str(), "/srv/media");
        assert_eq!(d.identity("web-id").map(|i| i.uid), Some(2002));
        // The canonical form reads back equal.
        let again = parse(serde_json::to_string(&d).expect("json").as_bytes()).expect("canonical");
        assert_eq!(again, d);
    }

    #[test]
    fn root_granting_names_and_root_numbers_are_refused_by_name() {
        for name in [
            "lxd",
            "incus-admin",
            "libvirt",
            "kvm",
            "kmem",
            "tty",
            "input",
        ] {
            assert!(crate::declaration::ROOT_GRANTING.contains(&name), "{name}");
        }
        for name in crate::declaration::ROOT_GRANTING {
            let p = problems(
                json!([{"id": "i", "type": "identity", "name": name, "uid": 2001, "gid": 2001}]),
            );
            assert_eq!(p.len(), 1, "{p:?}");
            assert!(
                p[0].starts_with("i: name: ")
                    && p[0].contains(&format!("{name:?}"))
                    && p[0].contains("root-equivalent"),
                "{p:?}"
            );
        }
        let p =
            problems(json!([{"id": "i", "type": "identity", "name": "app", "uid": 0, "gid": 0}]));
        assert_eq!(
            p,
            vec![
                "i: uid: uid 0 is root's: an identity never has root's numbers",
                "i: gid: gid 0 is root's: an identity never has root's numbers",
            ]
        );
        let p = problems(
            json!([{"id": "i", "type": "identity", "name": "App", "uid": -1, "gid": 4294967295_u64}]),
        );
        assert_eq!(p.len(), 3, "{p:?}");
    }

    #[test]
    fn references_names_numbers_and_folders_are_checked_across_resources() {
        let p = problems(json!([
            {"id": "a", "type": "identity", "name": "app", "uid": 2001, "gid": 2001},
            {"id": "b", "type": "identity", "name": "app", "uid": 2001, "gid": 2002},
            {"id": "f", "type": "file", "path": "/etc/x", "content": ""},
            {"id": "s1", "type": "shared-folder", "path": "/srv/s", "access": [{"identity": "f"}, {"identity": "nope"}]},
            {"id": "s2", "type": "shared-folder", "path": "/srv/s/inner", "access": [{"identity": "a"}, {"identity": "a"}]},
            {"id": "c", "type": "container", "name": "c", "image": IMAGE, "identity": "b", "user": "1:1",
             "grant": [{"path": "rel"}]}
        ]));
        let text = p.join("\n");
        for want in [
            "b: name: \"app\" is already the name of identity a",
            "b: uid: 2001 is already the uid of identity a",
            "s1: access[0].identity: \"f\": no identity by that id (it is a file)",
            "s1: access[1].identity: \"nope\": no identity by that id",
            "s2: access[1].identity: \"a\" is already named at access[0].identity",
            "s2: path: /srv/s/inner overlaps /srv/s, shared by s1: shared folders do not nest",
            "c: identity: identity and user are exclusive",
            "c: grant[0].path: \"rel\" is a relative path",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
        let p = problems(json!([
            {"id": "a", "type": "identity", "name": "app", "uid": 2001, "gid": 2001},
            {"id": "s", "type": "shared-folder", "path": "/srv/s", "access": [{"identity": "a"}]},
            {"id": "d", "type": "directory", "path": "/srv/s"}
        ]));
        assert_eq!(p, vec!["d: path: /srv/s is shared folder s: its permissions are the folder's entries; declare it once, as the shared folder"]);
        let p = problems(
            json!([{"id": "s", "type": "shared-folder", "path": "/srv/s", "access": [], "extra": 1}]),
        );
        assert_eq!(
            p,
            vec![
                "s: extra: unknown field",
                "s: access: must name at least one identity"
            ]
        );
    }
}
