//! The .deb `packaging/build` makes from the test's own binary (fast
//! compression, no .rpm), for the tests that lint or install it.

use std::path::Path;
use std::process::Command;

/// Build the .deb of version `deb_version` into `out`: its path.
pub fn build_deb(out: &Path, deb_version: &str) -> String {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let built = Command::new(repo.join("packaging/build"))
        .current_dir(repo)
        .args(["--bin", env!("CARGO_BIN_EXE_mesh-host"), "--fast", "--out"])
        .arg(out)
        .args(["--deb-version", deb_version])
        .env("MESH_HOST_SKIP_RPM", "1")
        .output()
        .expect("packaging/build");
    let printed = String::from_utf8_lossy(&built.stdout).into_owned();
    assert!(
        built.status.success(),
        "packaging/build: {printed}{}",
        String::from_utf8_lossy(&built.stderr)
    );
    printed
        .lines()
        .find(|l| l.ends_with(".deb"))
        .unwrap_or_else(|| panic!("no .deb printed: {printed}"))
        .to_string()
}
