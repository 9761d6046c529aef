//! `mesh-host generate DIR`: the man page and shell completions, generated
//! from the same clap definitions as the command line itself.

use std::path::Path;

use clap_complete::Shell;

use super::{EXIT_FAILED, EXIT_OK};

/// Write `mesh-host.8`, one page per command (`mesh-host-run.8`, ...), and
/// completions for bash, zsh and fish into `dir`.
pub fn run(dir: &Path) -> u8 {
    match write_all(dir) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("mesh-host: cannot generate into {}: {e}", dir.display());
            EXIT_FAILED
        }
    }
}

fn write_all(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let cmd = super::command();
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .section("8")
        .render(&mut page)?;
    std::fs::write(dir.join("mesh-host.8"), page)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("mesh-host-{}", sub.get_name());
        let mut page = Vec::new();
        clap_mangen::Man::new(sub.clone().name(name.clone()))
            .section("8")
            .render(&mut page)?;
        std::fs::write(dir.join(format!("{name}.8")), page)?;
    }
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        clap_complete::generate_to(shell, &mut cmd.clone(), "mesh-host", dir)?;
    }
    Ok(())
}
