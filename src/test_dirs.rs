//! Temporary directories for the unit tests' declared paths.

/// A temporary directory for declared paths, outside /tmp, /var/tmp, /home,
/// /root and the rest where declared paths are refused (`declaration::sandbox`): under the
/// crate's own `target/`, unless the checkout itself lives under one of
/// those (a clone in /tmp); then under the user's cache directory, or
/// /var/lib for root. So the tests pass wherever the checkout lives.
pub fn test_dir() -> tempfile::TempDir {
    let checkout = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    let cache = std::env::var_os("HOME").map(|h| {
        std::path::Path::new(&h)
            .join(".cache")
            .join("mesh-host-tests")
    });
    let base = [
        Some(checkout),
        cache,
        Some("/var/lib/mesh-host-tests".into()),
    ]
    .into_iter()
    .flatten()
    .map(|dir| dir.join("test-dirs"))
    .find(|dir| declarable(dir) && std::fs::create_dir_all(dir).is_ok())
    .expect("a directory outside /tmp and /var/tmp for declared test paths");
    tempfile::tempdir_in(base).expect("tempdir")
}

/// Whether the validator accepts paths under `dir`.
fn declarable(dir: &std::path::Path) -> bool {
    crate::declaration::AbsPath::try_from(dir.display().to_string().as_str()).is_ok_and(|p| {
        crate::declaration::sandbox::refusal(&p).is_none()
            && crate::declaration::sandbox::write_refusal(&p).is_none()
    })
}
