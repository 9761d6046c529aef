//! Paths the service cannot honour as declared, refused on arrival.
//!
//! The shipped unit runs the daemon with `PrivateTmp=yes`: its `/tmp` and
//! `/var/tmp` are its own, so a file it wrote there would be seen by no
//! other process (a container's bind mount included: Docker resolves mount
//! sources in its own namespace), and an env-file there would be missing to
//! it while present to everyone else. Those directories are also emptied by
//! `systemd-tmpfiles`. A declared path under either is refused, whoever
//! applies the declaration (the daemon, `apply --local`), so a declaration
//! means the same wherever it is applied. docs/security.md says why the
//! unit keeps `PrivateTmp=yes`.

use super::types::AbsPath;

/// The directories `PrivateTmp=yes` makes private to the service.
pub const PRIVATE_TMP: [&str; 2] = ["/tmp", "/var/tmp"];

/// Why `path` cannot be declared, if it cannot.
pub fn refusal(path: &AbsPath) -> Option<String> {
    let p = path.as_path();
    let dir = PRIVATE_TMP.iter().find(|d| p.starts_with(d))?;
    Some(format!(
        "{path} is under {dir}, which the service sees as its own private directory \
         (PrivateTmp=yes): no other process would see what it declares there, and tmpfiles \
         empties it; declare a path under /run, /srv or /var/lib instead"
    ))
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
        ] {
            assert_eq!(refusal(&path(fine)), None, "{fine}");
        }
    }
}
