//! The .deb as a distribution would check it: Debian's `lintian` reports
//! no error, and every warning it still gives is one docs/packaging.md
//! lists with the reason it stays. No node needed: the package is built
//! (from the test's binary, fast compression) and read, never installed.

mod support;

use std::path::Path;
use std::process::Command;

#[test]
#[ignore = "builds the .deb with cargo-deb and runs lintian: run tests/run"]
fn lintian_reports_no_error_and_only_the_warnings_the_packaging_page_explains() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out_dir = tempfile::tempdir().expect("tempdir");
    let deb =
        support::package::build_deb(out_dir.path(), &format!("{}-1", env!("CARGO_PKG_VERSION")));
    let deb = deb.as_str();

    let lint = Command::new("lintian")
        .args(["--no-tag-display-limit", deb])
        .output()
        .expect("lintian (apt-get install lintian; tests/node/prereqs.sh installs it)");
    let report = String::from_utf8_lossy(&lint.stdout).into_owned();
    // lintian's exit is 2 when it could not check at all.
    assert_ne!(
        lint.status.code(),
        Some(2),
        "lintian failed: {report}{}",
        String::from_utf8_lossy(&lint.stderr)
    );
    let errors: Vec<&str> = report.lines().filter(|l| l.starts_with("E: ")).collect();
    assert!(errors.is_empty(), "lintian errors:\n{}", errors.join("\n"));

    let page = std::fs::read_to_string(repo.join("docs/packaging.md")).expect("docs/packaging.md");
    for warning in report.lines().filter(|l| l.starts_with("W: ")) {
        // "W: mesh-host: TAG [context]"
        let tag = warning
            .split_whitespace()
            .nth(2)
            .unwrap_or_else(|| panic!("unexpected line: {warning}"));
        assert!(
            page.contains(&format!("`{tag}`")),
            "lintian warns {warning}: fix it, or list `{tag}` in docs/packaging.md with the reason it stays"
        );
    }
}
