//! Identities, grants and shared folders on the sandbox node (CONTRACT
//! "Identities and shared folders"): accounts checked with `getent`,
//! containers' users with `id`, ACLs with `getfacl`, the watch through a
//! daemon running as a real unit and its journal.
//!
//! The node shares this machine's /etc: every account a test makes has a
//! unique name and unique high numbers, and its `World` removes it at the end.

mod support;

use std::process::Output;
use std::time::Duration;

use serde_json::{json, Value};
use support::accounts::{getfacl, named_users, shared_folder};
use support::daemon_unit::DaemonUnit;
use support::world::{World, SERVICE_CMD};
use support::{quote, stdout, wait_for};

fn container(w: &mut World, id: &str, identity: &str, extra: Value) -> (Value, String) {
    let name = w.name(id);
    let mut c = json!({"id": id, "type": "container", "name": name, "image": w.busybox(),
        "command": ["sh", "-c", SERVICE_CMD], "network": "none", "identity": identity});
    if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            c.insert(k.clone(), v.clone());
        }
    }
    (c, name)
}

fn line(out: &Output, id: &str) -> String {
    stdout(out)
        .lines()
        .find(|l| l.split(' ').next() == Some(id))
        .unwrap_or_default()
        .to_string()
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn an_identity_is_made_with_its_numbers_and_a_container_runs_as_it() {
    let mut w = World::new("ident-made");
    let ia = w.identity("ia");
    let (name_a, num_a) = (ia.name.clone(), ia.uid);
    let ib = w.identity("ib");
    let num_b = ib.uid;
    let (c, cname) = container(&mut w, "app", "ia", json!({}));
    let out = w.apply_local(json!([ia, ib, c]));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        line(&out, "ia").starts_with("ia created"),
        "{}",
        stdout(&out)
    );

    let passwd = w.node.sh_ok(&format!("getent passwd {name_a}"));
    assert_eq!(
        passwd.trim(),
        format!("{name_a}:x:{num_a}:{num_a}::/nonexistent:/usr/sbin/nologin")
    );
    let group = w.node.sh_ok(&format!("getent group {name_a}"));
    assert!(
        group.starts_with(&format!("{name_a}:x:{num_a}:")),
        "{group}"
    );
    assert!(
        !std::path::Path::new("/nonexistent").exists(),
        "no home made"
    );
    assert_eq!(
        w.node.docker_ok(&["exec", &cname, "id", "-u"]).trim(),
        num_a.to_string()
    );
    assert_eq!(
        w.node.docker_ok(&["exec", &cname, "id", "-g"]).trim(),
        num_a.to_string()
    );

    // A second apply changes nothing; another identity recreates it.
    let (c, _) = container(&mut w, "app", "ia", json!({}));
    let out = w.apply_local(json!([ia, ib, c]));
    assert_eq!(line(&out, "ia"), "ia unchanged");
    assert_eq!(line(&out, "app"), "app unchanged");
    let (c, _) = container(&mut w, "app", "ib", json!({}));
    let out = w.apply_local(json!([ia, ib, c]));
    assert_eq!(line(&out, "app"), "app recreated: identity changed");
    wait_for(
        "the container to run again",
        Duration::from_secs(30),
        || w.running(&cname).then_some(()),
    );
    assert_eq!(
        w.node.docker_ok(&["exec", &cname, "id", "-u"]).trim(),
        num_b.to_string()
    );

    // Removed with the resource, since the host made it.
    let out = w.mesh(&[
        "apply",
        &w.write_declaration(json!([])),
        "--local",
        "--allow-empty",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("ia removed"), "{}", stdout(&out));
    assert!(!w
        .node
        .sh(&format!("getent passwd {name_a}"))
        .status
        .success());
    assert!(!w
        .node
        .sh(&format!("getent group {name_a}"))
        .status
        .success());
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn an_account_the_host_did_not_make_is_never_removed() {
    let mut w = World::new("ident-kept");
    let ia = w.identity("ia");
    let (name, number) = (ia.name.clone(), ia.uid);
    w.node.sh_ok(&format!(
        "groupadd --system -g {number} {name} && useradd --system -u {number} -g {number} -M -s /usr/sbin/nologin {name}"
    ));
    let out = w.apply_local(json!([ia]));
    assert_eq!(line(&out, "ia"), "ia unchanged", "{}", stdout(&out));
    let out = w.mesh(&[
        "apply",
        &w.write_declaration(json!([])),
        "--local",
        "--allow-empty",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(w.node.sh(&format!("getent passwd {name}")).status.success());
    assert!(w.node.sh(&format!("getent group {name}")).status.success());
}

/// Some of the names the contract refuses as granting root's power.
const ROOT_GRANTING: [&str; 8] = [
    "root",
    "sudo",
    "wheel",
    "adm",
    "docker",
    "disk",
    "shadow",
    "systemd-journal",
];

#[test]
fn check_refuses_root_granting_names_and_numbers_taken_naming_both() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("d.json");
    let nobody = std::fs::read_to_string("/etc/passwd")
        .expect("passwd")
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.len() > 3 && f[2] != "0").then(|| (f[0].to_string(), f[2].to_string()))
        })
        .expect("an account other than root");
    let mut resources = vec![];
    for name in ROOT_GRANTING {
        resources.push(json!({"id": format!("i-{name}"), "type": "identity", "name": name, "uid": 2_100_000_001_u32, "gid": 2_100_000_001_u32}));
    }
    std::fs::write(
        &path,
        json!({"declaration": 1, "resources": resources}).to_string(),
    )
    .expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mesh-host"))
        .arg("check")
        .arg(&path)
        .output()
        .expect("mesh-host");
    assert_eq!(out.status.code(), Some(2));
    let text = stdout(&out);
    for name in ROOT_GRANTING {
        assert!(
            text.contains(&format!(
                "i-{name}: name: \"{name}\" grants root-equivalent power"
            )),
            "{name} in {text}"
        );
    }
    // A number taken by another account: both parties named.
    let uid: u32 = nobody.1.parse().expect("uid");
    let decl = json!({"declaration": 1, "resources": [
        {"id": "x", "type": "identity", "name": "mhtnotthere", "uid": uid, "gid": 2_100_000_002_u32}]});
    std::fs::write(&path, decl.to_string()).expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mesh-host"))
        .arg("check")
        .arg(&path)
        .output()
        .expect("mesh-host");
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(&format!(
            "x: uid: uid {uid} already belongs to account \"{}\", not to \"mhtnotthere\"",
            nobody.0
        )),
        "{}",
        stdout(&out)
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn two_identities_write_one_shared_folder_with_exactly_the_declared_entries() {
    let mut w = World::new("share-two");
    let ia = w.identity("ia");
    let a = ia.uid;
    let ib = w.identity("ib");
    let b = ib.uid;
    let share = w.path("srv/share");
    let folder = shared_folder("share", &share, &[("ia", true), ("ib", true)]);
    let mount = json!({"mounts": [{"source": share, "target": "/share"}]});
    let (ca, name_a) = container(&mut w, "ca", "ia", mount.clone());
    let (cb, name_b) = container(&mut w, "cb", "ib", mount);
    let resources = json!([ia, ib, folder, ca, cb]);
    let out = w.apply_local(resources.clone());
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        line(&out, "share").starts_with("share created"),
        "{}",
        stdout(&out)
    );

    let want_dir = vec![
        "user::rwx".to_string(),
        format!("user:{a}:rwx"),
        format!("user:{b}:rwx"),
        "group::---".into(),
        "mask::rwx".into(),
        "other::---".into(),
        "default:user::rwx".into(),
        format!("default:user:{a}:rwx"),
        format!("default:user:{b}:rwx"),
        "default:group::---".into(),
        "default:mask::rwx".into(),
        "default:other::---".into(),
    ];
    assert_eq!(getfacl(&w.node, &share), want_dir);

    // Both write, each into the folder and into a directory of the other.
    // (Without the daemon's watch, the sweep at each apply widens what
    // creation modes narrowed.)
    w.node.docker_ok(&[
        "exec",
        &name_a,
        "sh",
        "-c",
        "echo a > /share/from-a && mkdir /share/dir-a",
    ]);
    let out = w.apply_local(resources.clone());
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    // from-a was made 0644, which narrowed the inherited entries: put back.
    let restored = w.journal(&["MESH_EVENT=acl-restored"]);
    assert!(
        restored.contains(&format!("entries restored on {share}/from-a")),
        "{restored}"
    );
    w.node.docker_ok(&[
        "exec",
        &name_b,
        "sh",
        "-c",
        "echo b > /share/from-b && echo b > /share/dir-a/from-b",
    ]);
    let out = w.apply_local(resources);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    w.node
        .docker_ok(&["exec", &name_b, "sh", "-c", "echo b >> /share/from-a"]);
    w.node
        .docker_ok(&["exec", &name_a, "sh", "-c", "echo a >> /share/from-b"]);
    for file in ["from-a", "from-b", "dir-a/from-b"] {
        let acl = getfacl(&w.node, &format!("{share}/{file}"));
        assert_eq!(
            named_users(&acl),
            vec![format!("user:{a}:rw-"), format!("user:{b}:rw-")],
            "{file}: {acl:?}"
        );
        assert!(acl.contains(&"mask::rw-".to_string()), "{file}: {acl:?}");
    }
    let acl = getfacl(&w.node, &format!("{share}/dir-a"));
    assert_eq!(
        named_users(&acl),
        vec![format!("user:{a}:rwx"), format!("user:{b}:rwx")]
    );
    assert!(acl.contains(&format!("default:user:{b}:rwx")), "{acl:?}");
    assert_eq!(
        w.node
            .sh_ok(&format!("cat {}", quote(&format!("{share}/from-a")))),
        "a\nb\n"
    );

    // ib loses its access: its entries go, everywhere; ia's stay.
    let folder = shared_folder("share", &share, &[("ia", true)]);
    let out = w.apply_local(json!([ia, ib, folder]));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        line(&out, "share").contains(&format!("entries of uid [{b}] taken away")),
        "{}",
        stdout(&out)
    );
    for p in ["", "/from-a", "/from-b", "/dir-a", "/dir-a/from-b"] {
        let acl = getfacl(&w.node, &format!("{share}{p}"));
        let users = named_users(&acl);
        assert_eq!(users.len(), 1, "{p}: {acl:?}");
        assert!(users[0].starts_with(&format!("user:{a}:")), "{p}: {acl:?}");
        assert!(
            !acl.iter().any(|l| l.contains(&b.to_string())),
            "{p}: {acl:?}"
        );
    }
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_folder_holding_data_waits_for_take_root_data_and_links_are_never_touched() {
    let mut w = World::new("share-take");
    let ia = w.identity("ia");
    let a = ia.uid;
    let share = w.path("srv/data");
    let outside = w.path("outside");
    let root_share = w.path("srv/root-data");
    // A folder of an application (uid 4242) holding its data, data of root,
    // a link to /etc and one to a directory outside, a FIFO; and a folder
    // of root's holding data.
    w.node.sh_ok(&format!(
        "mkdir -p {s}/app {o} {r} && echo x > {s}/app/file && chown -R 4242:4242 {s} && echo r > {s}/root-file && ln -s /etc {s}/etc-link && ln -s {o} {s}/out-link && mkfifo {s}/fifo && chown 4242 {s}/fifo && echo r > {r}/file",
        s = quote(&share),
        o = quote(&outside),
        r = quote(&root_share)
    ));
    let root_share_before = getfacl(&w.node, &root_share);
    let etc_before = getfacl(&w.node, "/etc");
    let outside_before = getfacl(&w.node, &outside);
    let root_before = getfacl(&w.node, &format!("{share}/root-file"));
    let folder = shared_folder("data", &share, &[("ia", true)]);
    let root_folder = shared_folder("root-data", &root_share, &[("ia", true)]);
    let resources = json!([ia, folder, root_folder]);

    let out = w.apply_local(resources.clone());
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(
        line(&out, "data"),
        "data refused: holds data, run mesh-host take data"
    );
    assert!(
        named_users(&getfacl(&w.node, &share)).is_empty(),
        "nothing taken"
    );

    let taken = w.mesh(&["take", "data"]);
    assert_eq!(taken.status.code(), Some(0), "{}", stdout(&taken));
    let taken = w.mesh(&["take", "root-data"]);
    assert_eq!(taken.status.code(), Some(0), "{}", stdout(&taken));
    let out = w.apply_local(resources);
    // Root's folder is never taken, even after take.
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(
        line(&out, "root-data"),
        format!("root-data refused: holds data and is owned by root: never taken, even after take (give {root_share} to the owner of its data to share it)")
    );
    assert_eq!(getfacl(&w.node, &root_share), root_share_before);
    assert!(
        line(&out, "data").starts_with("data updated"),
        "{}",
        stdout(&out)
    );
    assert!(
        line(&out, "data").contains("1 object(s) owned by root left alone"),
        "{}",
        stdout(&out)
    );
    assert!(named_users(&getfacl(&w.node, &share)).contains(&format!("user:{a}:rwx")));
    assert!(named_users(&getfacl(&w.node, &format!("{share}/app/file")))
        .contains(&format!("user:{a}:rw-")));
    assert_eq!(
        getfacl(&w.node, &format!("{share}/root-file")),
        root_before,
        "root's data never taken"
    );
    assert_eq!(
        getfacl(&w.node, "/etc"),
        etc_before,
        "a link is never followed"
    );
    assert_eq!(
        getfacl(&w.node, &outside),
        outside_before,
        "a link is never followed"
    );
    assert_eq!(
        w.node
            .sh_ok(&format!("readlink {}", quote(&format!("{share}/etc-link"))))
            .trim(),
        "/etc"
    );

    // Removing the resource takes the entries away and leaves the data.
    let out = w.mesh(&[
        "apply",
        &w.write_declaration(json!([])),
        "--local",
        "--allow-empty",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        line(&out, "data").starts_with("data removed"),
        "{}",
        stdout(&out)
    );
    assert!(named_users(&getfacl(&w.node, &share)).is_empty());
    assert!(named_users(&getfacl(&w.node, &format!("{share}/app/file"))).is_empty());
    assert_eq!(
        w.node
            .sh_ok(&format!("cat {}", quote(&format!("{share}/app/file")))),
        "x\n"
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_grant_gives_the_paths_group_and_root_groups_are_refused() {
    let mut w = World::new("grant");
    let ia = w.identity("ia");
    let a = ia.uid;
    let (_group, gid) = w.group();
    let media = w.path("media");
    let readonly = w.path("readonly");
    let rootdir = w.path("rootdir");
    w.node.sh_ok(&format!(
        "mkdir -p {m} {r} {z} && chgrp {gid} {m} {r} && chmod 2775 {m} && chmod 0755 {r}",
        m = quote(&media),
        r = quote(&readonly),
        z = quote(&rootdir)
    ));
    let (c, cname) = container(&mut w, "app", "ia", json!({"grant": [{"path": media}]}));
    let out = w.apply_local(json!([ia, c]));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let groups = w.node.docker_ok(&["exec", &cname, "id", "-G"]);
    let groups: Vec<&str> = groups.split_whitespace().collect();
    assert_eq!(groups, vec![a.to_string(), gid.to_string()]);
    let stat = w.node.sh_ok(&format!("stat -c %a:%g {}", quote(&media)));
    assert_eq!(
        stat.trim(),
        format!("2775:{gid}"),
        "the path is never changed"
    );

    // The path's group changes: the container follows.
    let (_other, other_gid) = w.group();
    w.node
        .sh_ok(&format!("chgrp {other_gid} {}", quote(&media)));
    let (c, _) = container(&mut w, "app", "ia", json!({"grant": [{"path": media}]}));
    let out = w.apply_local(json!([ia, c]));
    assert_eq!(line(&out, "app"), "app recreated: grant changed");
    wait_for(
        "the container to run again",
        Duration::from_secs(30),
        || w.running(&cname).then_some(()),
    );
    let groups = w.node.docker_ok(&["exec", &cname, "id", "-G"]);
    assert_eq!(
        groups.split_whitespace().collect::<Vec<_>>(),
        vec![a.to_string(), other_gid.to_string()]
    );

    // A group that cannot write is reported, not refused.
    let (c, _) = container(&mut w, "app", "ia", json!({"grant": [{"path": readonly}]}));
    let out = w.apply_local(json!([ia, c]));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        line(&out, "app").contains(&format!(
            "unhealthy: grant {readonly}: its group (gid {gid}) cannot write it"
        )),
        "{}",
        stdout(&out)
    );
    let status = w.mesh(&["status", "--local"]);
    assert!(
        stdout(&status).contains("unhealthy: grant"),
        "{}",
        stdout(&status)
    );

    // Root's group is refused by name.
    let (c, _) = container(&mut w, "app", "ia", json!({"grant": [{"path": rootdir}]}));
    let out = w.apply_local(json!([ia, c]));
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        line(&out, "app").contains("its group is root's (gid 0)"),
        "{}",
        stdout(&out)
    );

    // A link to a granted path is never followed (the link could be
    // pointed anywhere later).
    let link = w.path("media-link");
    std::os::unix::fs::symlink(&media, &link).expect("symlink");
    let (c, _) = container(&mut w, "app", "ia", json!({"grant": [{"path": link}]}));
    let out = w.apply_local(json!([ia, c]));
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        line(&out, "app").contains(&format!("grant {link}: a symbolic link is on the path")),
        "{}",
        stdout(&out)
    );
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn the_watch_puts_back_entries_a_chmod_700_took_away() {
    let mut w = World::new("acl-watch");
    let ia = w.identity("ia");
    let (name, a) = (ia.name.clone(), ia.uid);
    // Its parent exists, searchable by the application below.
    let share = w.shared_path("share");
    let mut folder = shared_folder("share", &share, &[("ia", true)]);
    folder["module"] = json!("media");
    let daemon = DaemonUnit::started(&w, json!([ia, folder]));
    let node = &w.node;
    // Made by the daemon under the shipped unit's hardening.
    assert!(node.sh(&format!("getent passwd {name}")).status.success());
    assert!(named_users(&getfacl(node, &share)).contains(&format!("user:{a}:rwx")));

    // An application (running as the identity) makes a directory, and
    // later narrows it.
    let sub = format!("{share}/sub");
    node.sh_ok(&format!(
        "setpriv --reuid {a} --regid {a} --clear-groups mkdir {}",
        quote(&sub)
    ));
    wait_for(
        "the new directory's entries",
        Duration::from_secs(10),
        || {
            getfacl(node, &sub)
                .contains(&"mask::rwx".to_string())
                .then_some(())
        },
    );
    let before = node.journal(&["-u", &daemon.unit, "MESH_EVENT=acl-restored", "-o", "cat"]);
    node.sh_ok(&format!("chmod 700 {}", quote(&sub)));
    wait_for(
        "the watch to put the mask back",
        Duration::from_secs(10),
        || {
            let acl = getfacl(node, &sub);
            (acl.contains(&"mask::rwx".to_string()) && acl.contains(&format!("user:{a}:rwx")))
                .then_some(())
        },
    );
    wait_for(
        "acl-restored in the journal",
        Duration::from_secs(10),
        || {
            let after = node.journal(&["-u", &daemon.unit, "MESH_EVENT=acl-restored", "-o", "cat"]);
            (after.lines().count() > before.lines().count() && after.contains(&sub)).then_some(())
        },
    );
    let fields = node.journal(&[
        "-u",
        &daemon.unit,
        "MESH_EVENT=acl-restored",
        "-o",
        "verbose",
    ]);
    assert!(
        fields.contains("MESSAGE_ID=d2890cb406fd4d2d9414284c1bd8d0e9"),
        "{fields}"
    );
    assert!(fields.contains(&format!("MESH_PATH={sub}")), "{fields}");
    assert!(fields.contains("MESH_FOLDER=share"), "{fields}");
    assert!(fields.contains("MESH_MODULE=media"), "{fields}");
    // The owner's own bits stay as the application set them.
    assert!(getfacl(node, &sub).contains(&"group::---".to_string()));
}

#[test]
#[ignore = "needs the sandbox node: run tests/run"]
fn a_folder_under_an_unmounted_fstab_mount_point_waits_and_is_not_made() {
    let mut w = World::new("share-mount");
    let ia = w.identity("ia");
    let a = ia.uid;
    let point = w.path("mnt");
    std::fs::create_dir_all(&point).expect("mount point");
    let share = format!("{point}/share");
    // The node shares the machine's /etc/fstab: a `noauto` line (never
    // mounted at any boot) marked with this test's name, taken out again
    // whatever happens; sed -i replaces the file atomically.
    let marker = point.replace('/', "_");
    let _fstab = w.node.on_drop(format!("sed -i '/{marker}/d' /etc/fstab"));
    w.node.sh_ok(&format!(
        "sed -i '$a tmpfs {point} tmpfs noauto,mode=0755 0 0 # {marker}' /etc/fstab"
    ));
    let _umount = w
        .node
        .on_drop(format!("umount {} 2>/dev/null; true", quote(&point)));
    let folder = shared_folder("share", &share, &[("ia", true)]);
    let resources = json!([ia, folder]);

    let out = w.apply_local(resources.clone());
    assert_eq!(
        out.status.code(),
        Some(0),
        "waiting fails nothing: {}",
        stdout(&out)
    );
    assert_eq!(
        line(&out, "share"),
        format!("share waiting: not mounted: {point} is declared in /etc/fstab but not mounted; {share} is not made on the filesystem beneath it")
    );
    assert!(
        !w.node
            .sh(&format!("test -e {}", quote(&share)))
            .status
            .success(),
        "never made on the filesystem beneath"
    );

    // Mounted (in the node): the next apply makes it there.
    w.node.sh_ok(&format!(
        "mount -t tmpfs -o mode=0755 tmpfs {}",
        quote(&point)
    ));
    let out = w.apply_local(resources);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        line(&out, "share").starts_with("share created"),
        "{}",
        stdout(&out)
    );
    assert!(named_users(&getfacl(&w.node, &share)).contains(&format!("user:{a}:rwx")));
    let fs = w.node.sh_ok(&format!("stat -f -c %T {}", quote(&share)));
    assert_eq!(fs.trim(), "tmpfs", "made on the mounted filesystem");
}
