//! Paths the service cannot honour as declared, refused on arrival.
//!
//! The shipped unit (`units/mesh-host.service`) confines the daemon: parts
//! of the file system are read-only to it, or its own private copy. A
//! declaration that writes there would pass `check` and then fail on the
//! node, or worse, succeed where it runs by hand and fail under the unit.
//! So every path the host *writes* (a file, a directory, a shared folder)
//! is refused under [`UNWRITABLE`], whoever applies the declaration (the
//! daemon, `apply --local`), and a declaration means the same wherever it
//! is applied. The table is the one source: the refusal quotes the unit
//! setting behind each row, and a test reads the shipped unit to check
//! that each setting is there, and that each setting of the unit that
//! narrows what it may write has its row.
//!
//! Paths the host only *reads* (env-files, grant paths) are refused only
//! under the private directories (`PrivateTmp=yes`): a read-only view is
//! still a view, but what the service sees there is no one else's.
//!
//! A path is judged as written and as the unit would reach it through
//! links ([`super::links`]): `/lib/x` is `/usr/lib/x` on a usr-merged
//! system, `/var/run/mesh-host/x` the unit's runtime directory; the
//! refusal says which link it went through.
//!
//! The host's own paths are refused as written paths too: its state
//! directory, the unit's runtime directory, its control socket and the
//! node's declaration file ([`OwnPaths`]). Writing them would corrupt the state
//! the window records live in, or replace the declaration under the apply
//! that reads it. They depend on the command line (`--state-dir`,
//! `--declaration`), so the command line sets them once per process
//! ([`set_own_paths`]); until then the defaults hold.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::types::AbsPath;

/// One part of the file system the unit does not let the daemon write.
#[derive(Debug, Clone, Copy)]
pub struct Unwritable {
    /// The directory (and everything under it).
    pub dir: &'static str,
    /// Directories under it that the unit makes writable again.
    pub except: &'static [&'static str],
    /// The unit setting that makes it so, as written in the unit.
    pub setting: &'static str,
    /// What the setting does there, for the refusal.
    pub why: &'static str,
}

/// Where to declare instead, said with every refusal below.
const INSTEAD: &str = "put it under /etc, /srv, /var, /opt or /usr/local";

/// The parts of the file system `mesh-host.service` cannot write, with
/// the setting behind each. Order matters only for the message: the
/// first row whose directory holds the path is quoted.
pub const UNWRITABLE: &[Unwritable] = &[
    Unwritable {
        dir: "/usr",
        except: &["/usr/local"],
        setting: "ProtectSystem=yes",
        why: "is read-only to mesh-host.service",
    },
    Unwritable {
        dir: "/boot",
        except: &[],
        setting: "ProtectSystem=yes",
        why: "is read-only to mesh-host.service",
    },
    Unwritable {
        dir: "/efi",
        except: &[],
        setting: "ProtectSystem=yes",
        why: "is read-only to mesh-host.service",
    },
    Unwritable {
        dir: "/home",
        except: &[],
        setting: "ProtectHome=read-only",
        why: "is read-only to mesh-host.service",
    },
    Unwritable {
        dir: "/root",
        except: &[],
        setting: "ProtectHome=read-only",
        why: "is read-only to mesh-host.service",
    },
    Unwritable {
        dir: "/run/user",
        except: &[],
        setting: "ProtectHome=read-only",
        why: "is read-only to mesh-host.service",
    },
    Unwritable {
        dir: "/proc",
        except: &[],
        setting: "ProtectKernelTunables=yes",
        why: "is the kernel's own file system, read-only to mesh-host.service",
    },
    Unwritable {
        dir: "/sys",
        except: &[],
        setting: "ProtectKernelTunables=yes",
        why: "is the kernel's own file system, read-only to mesh-host.service",
    },
    Unwritable {
        dir: "/dev",
        except: &[],
        setting: "PrivateDevices=yes",
        why: "is a private /dev of pseudo devices to mesh-host.service",
    },
    Unwritable {
        dir: "/tmp",
        except: &[],
        setting: "PrivateTmp=yes",
        why: PRIVATE_WHY,
    },
    Unwritable {
        dir: "/var/tmp",
        except: &[],
        setting: "PrivateTmp=yes",
        why: PRIVATE_WHY,
    },
];

const PRIVATE_WHY: &str = "is the service's own private directory: no other process \
     would see what it declares there, and tmpfiles empties it";

/// The directories `PrivateTmp=yes` makes private to the service.
pub const PRIVATE_TMP: [&str; 2] = ["/tmp", "/var/tmp"];

/// The host's own paths, which no declared path may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnPaths {
    /// The state directory (`--state-dir`).
    pub state_dir: PathBuf,
    /// The unit's runtime directory (`RuntimeDirectory=mesh-host`).
    pub runtime_dir: PathBuf,
    /// The control socket (`--control-socket`; in the runtime directory
    /// unless told otherwise).
    pub control_socket: PathBuf,
    /// The node's declaration file (`--declaration`).
    pub declaration: PathBuf,
}

impl Default for OwnPaths {
    /// The unit's: `StateDirectory=`, `RuntimeDirectory=`, the default
    /// declaration file.
    fn default() -> Self {
        OwnPaths {
            state_dir: "/var/lib/mesh-host".into(),
            runtime_dir: "/run/mesh-host".into(),
            control_socket: "/run/mesh-host/control.sock".into(),
            declaration: "/etc/mesh-host/declaration.json".into(),
        }
    }
}

static OWN_PATHS: OnceLock<OwnPaths> = OnceLock::new();

/// Set this process's own paths, once, before any declaration is read
/// (the command line does, from its options). A second call is ignored.
pub fn set_own_paths(own: OwnPaths) {
    let _ = OWN_PATHS.set(own);
}

fn own_paths() -> &'static OwnPaths {
    OWN_PATHS.get_or_init(OwnPaths::default)
}

/// Why `path`, which the host only reads, cannot be declared, if it
/// cannot: as written, or as the unit would reach it through links
/// ([`super::links`]).
pub fn refusal(path: &AbsPath) -> Option<String> {
    read_refusal(path).or_else(|| through_links(path, read_refusal))
}

/// `judge` of the path `path` reaches through links, said with the links.
fn through_links(path: &AbsPath, judge: impl Fn(&AbsPath) -> Option<String>) -> Option<String> {
    let reached = super::links::reached(path.as_path())?;
    let seen = AbsPath::try_from(reached.path.to_str()?).ok()?;
    let why = judge(&seen)?;
    Some(format!(
        "{path} is {seen} as the unit sees it ({}): {why}",
        reached.via.join("; ")
    ))
}

fn read_refusal(path: &AbsPath) -> Option<String> {
    let p = path.as_path();
    let dir = PRIVATE_TMP.iter().find(|d| p.starts_with(d))?;
    Some(format!(
        "{path} is under {dir}, which the service sees as its own private directory \
         (PrivateTmp=yes): no other process would see what it declares there, and tmpfiles \
         empties it; declare a path under /run, /srv or /var/lib instead"
    ))
}

/// Why `path`, which the host writes (a file, a directory, a shared
/// folder's entries), cannot be declared, if it cannot.
pub fn write_refusal(path: &AbsPath) -> Option<String> {
    let own = own_paths();
    write_refusal_with(path, own).or_else(|| through_links(path, |p| write_refusal_with(p, own)))
}

fn write_refusal_with(path: &AbsPath, own: &OwnPaths) -> Option<String> {
    let p = path.as_path();
    if let Some(row) = UNWRITABLE
        .iter()
        .find(|row| p.starts_with(row.dir) && !row.except.iter().any(|e| p.starts_with(e)))
    {
        let under = if p == Path::new(row.dir) {
            String::new()
        } else {
            format!(" (under {})", row.dir)
        };
        return Some(format!(
            "{path}{under} {} ({}); {INSTEAD}",
            row.why, row.setting
        ));
    }
    let own_dir = [
        (&own.state_dir, "state directory"),
        (&own.runtime_dir, "runtime directory"),
    ]
    .into_iter()
    .find(|(dir, _)| p.starts_with(dir));
    if let Some((dir, what)) = own_dir {
        return Some(format!(
            "{path} is mesh-host's own {what} ({}): its records live there and a declared \
             path must not write them; {INSTEAD}",
            dir.display()
        ));
    }
    if p == own.control_socket {
        return Some(format!(
            "{path} is mesh-host's own control socket: a declared path must not replace it; \
             {INSTEAD}"
        ));
    }
    if p == own.declaration {
        return Some(format!(
            "{path} is the node's declaration file: a resource may not replace the \
             declaration that declares it; use `mesh-host apply FILE` to change it"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> AbsPath {
        AbsPath::try_from(p).expect("absolute")
    }

    #[test]
    fn tmp_and_var_tmp_are_refused_and_their_neighbours_are_not() {
        for refused in ["/tmp/x", "/tmp", "/var/tmp/a/b", "/tmp/.x/y"] {
            let why = refusal(&path(refused)).unwrap_or_else(|| panic!("{refused}"));
            assert!(why.contains("PrivateTmp=yes"), "{why}");
            assert!(why.starts_with(refused), "{why}");
        }
        for fine in [
            "/tmpfiles/x",
            "/var/tmpx",
            "/srv/tmp/x",
            "/run/app/x",
            "/var/lib/tmp",
            "/usr/lib/app.conf",
            "/home/app/env",
        ] {
            assert_eq!(refusal(&path(fine)), None, "{fine}");
        }
    }

    #[test]
    fn written_paths_the_unit_cannot_write_name_the_setting_and_where_instead() {
        let own = OwnPaths::default();
        let cases = [
            ("/usr/lib/app.conf", "ProtectSystem=yes"),
            ("/usr", "ProtectSystem=yes"),
            ("/boot/grub/x", "ProtectSystem=yes"),
            ("/efi/EFI/x", "ProtectSystem=yes"),
            ("/home/app/.env", "ProtectHome=read-only"),
            ("/root/.ssh/authorized_keys", "ProtectHome=read-only"),
            ("/run/user/0/x", "ProtectHome=read-only"),
            ("/proc/sys/net/ipv4/ip_forward", "ProtectKernelTunables=yes"),
            ("/sys/kernel/mm/x", "ProtectKernelTunables=yes"),
            ("/dev/shm/x", "PrivateDevices=yes"),
            ("/tmp/x", "PrivateTmp=yes"),
            ("/var/tmp/x", "PrivateTmp=yes"),
        ];
        for (p, setting) in cases {
            let why = write_refusal_with(&path(p), &own).unwrap_or_else(|| panic!("{p}"));
            assert!(why.starts_with(p), "{why}");
            assert!(why.contains(setting), "{p}: {why}");
            assert!(why.contains("/usr/local"), "{p}: {why}");
        }
        assert_eq!(
            write_refusal_with(&path("/usr/lib/app.conf"), &own).as_deref(),
            Some(
                "/usr/lib/app.conf (under /usr) is read-only to mesh-host.service \
                 (ProtectSystem=yes); put it under /etc, /srv, /var, /opt or /usr/local"
            )
        );
    }

    #[test]
    fn paths_through_the_usr_merge_links_are_judged_where_they_lead() {
        for (p, reached, setting) in [
            (
                "/lib/mesh-test/x.conf",
                "/usr/lib/mesh-test/x.conf",
                "ProtectSystem=yes",
            ),
            ("/bin/tool", "/usr/bin/tool", "ProtectSystem=yes"),
            ("/sbin/x", "/usr/sbin/x", "ProtectSystem=yes"),
            ("/lib64/x", "/usr/lib64/x", "ProtectSystem=yes"),
        ] {
            let why = write_refusal(&path(p)).unwrap_or_else(|| panic!("{p}"));
            assert!(
                why.starts_with(&format!("{p} is {reached} as the unit sees it (")),
                "{why}"
            );
            assert!(why.contains("on a usr-merged system"), "{why}");
            assert!(why.contains(setting), "{why}");
        }
        let why = write_refusal(&path("/var/run/mesh-host/x")).expect("runtime directory");
        assert!(why.contains("/var/run is a link to /run"), "{why}");
        assert!(
            why.contains("own runtime directory (/run/mesh-host)"),
            "{why}"
        );
        // Read paths: the private /tmp reached through a link.
        let dir = tempfile::tempdir_in("/var/lib").expect("dir");
        let link = dir.path().join("scratch");
        std::os::unix::fs::symlink("/var/tmp", &link).expect("link");
        let p = AbsPath::try_from(link.join("app.env").to_str().expect("utf-8")).expect("path");
        let why = refusal(&p).expect("through the link");
        assert!(why.contains("PrivateTmp=yes"), "{why}");
        assert!(why.contains("is a link to /var/tmp"), "{why}");
    }

    #[test]
    fn writable_places_and_look_alikes_are_accepted() {
        let own = OwnPaths::default();
        for fine in [
            "/usr/local/etc/app.conf",
            "/usr/local",
            "/etc/app/app.conf",
            "/srv/app",
            "/opt/app/x",
            "/var/lib/app",
            "/run/app/x",
            "/usrx/y",
            "/homes/x",
            "/rooted",
            "/devices/x",
            "/var/lib/mesh-host-other/x",
            "/run/mesh-hostx",
            "/etc/mesh-host/other.json",
        ] {
            assert_eq!(write_refusal_with(&path(fine), &own), None, "{fine}");
        }
    }

    #[test]
    fn the_hosts_own_paths_are_refused_from_the_options_given() {
        let own = OwnPaths {
            state_dir: "/srv/mh/state".into(),
            runtime_dir: "/run/mh".into(),
            control_socket: "/srv/mh/control.sock".into(),
            declaration: "/srv/mh/declaration.json".into(),
        };
        let why = write_refusal_with(&path("/srv/mh/state/applied.json"), &own).expect("state");
        assert!(why.contains("own state directory (/srv/mh/state)"), "{why}");
        let why = write_refusal_with(&path("/srv/mh/state"), &own).expect("state itself");
        assert!(why.contains("state directory"), "{why}");
        let why = write_refusal_with(&path("/run/mh/x"), &own).expect("runtime");
        assert!(why.contains("runtime directory"), "{why}");
        let why = write_refusal_with(&path("/srv/mh/control.sock"), &own).expect("socket");
        assert!(why.contains("control socket"), "{why}");
        let why = write_refusal_with(&path("/srv/mh/declaration.json"), &own).expect("decl");
        assert!(why.contains("mesh-host apply FILE"), "{why}");
        for fine in [
            "/srv/mh/other",
            "/srv/mh/declaration.json.d",
            "/var/lib/mesh-host/x",
        ] {
            assert_eq!(write_refusal_with(&path(fine), &own), None, "{fine}");
        }
    }

    /// The unit file's lines, comments and blank lines left out.
    fn unit_settings() -> Vec<String> {
        let unit = include_str!("../../units/mesh-host.service");
        unit.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn every_row_of_the_table_is_a_setting_of_the_shipped_unit() {
        let settings = unit_settings();
        for row in UNWRITABLE {
            assert!(
                settings.iter().any(|s| s == row.setting),
                "{} is refused for {}, but units/mesh-host.service has no such line",
                row.dir,
                row.setting
            );
            for except in row.except {
                assert!(
                    settings
                        .iter()
                        .any(|s| s == &format!("ReadWritePaths=-{except}")
                            || s == &format!("ReadWritePaths={except}")),
                    "{except} is accepted under {}, but the unit does not make it writable",
                    row.dir
                );
            }
        }
    }

    #[test]
    fn every_setting_of_the_unit_that_narrows_writes_has_its_rows() {
        // The unit's settings that take a part of the file system away
        // from the daemon's writes, and the directories each one takes.
        let narrowing: &[(&str, &[&str])] = &[
            ("ProtectSystem=", &["/usr", "/boot", "/efi"]),
            ("ProtectHome=", &["/home", "/root", "/run/user"]),
            ("ProtectKernelTunables=yes", &["/proc", "/sys"]),
            ("PrivateDevices=yes", &["/dev"]),
            ("PrivateTmp=yes", &["/tmp", "/var/tmp"]),
        ];
        let settings = unit_settings();
        for setting in settings.iter().filter(|s| {
            s.starts_with("Protect") || s.starts_with("Private") || s.starts_with("ReadOnly")
        }) {
            let Some((_, dirs)) = narrowing.iter().find(|(k, _)| setting.starts_with(k)) else {
                // Settings that narrow no path the host writes.
                assert!(
                    [
                        "ProtectKernelModules=yes",
                        "ProtectKernelLogs=yes",
                        "ProtectControlGroups=yes",
                        "ProtectClock=yes",
                        "ProtectHostname=yes",
                        "PrivateMounts=yes",
                    ]
                    .contains(&setting.as_str()),
                    "units/mesh-host.service has {setting}: say in declaration::sandbox \
                     which paths it takes from the daemon's writes"
                );
                continue;
            };
            for dir in *dirs {
                assert!(
                    UNWRITABLE
                        .iter()
                        .any(|row| row.dir == *dir && row.setting == setting),
                    "the unit's {setting} makes {dir} unwritable, but no row of UNWRITABLE says so"
                );
            }
        }
    }
}
