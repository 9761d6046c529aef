//! `mesh-host generate DIR`: the man pages and shell completions, generated
//! from the same clap definitions as the command line itself, with the
//! sections `--help` has no place for (exit status, files, environment,
//! examples) written beside them in `man.rs`.

use std::path::Path;

use clap_complete::Shell;

use super::args::{EXIT_FAILED, EXIT_OK};

/// Write `mesh-host.8`, one page per visible command (`mesh-host-run.8`,
/// ...), `mesh-host-declaration.5`, and completions for bash, zsh and fish
/// into `dir`. Hidden commands and options appear in none of them.
pub fn run(dir: &Path) -> u8 {
    match write_all(dir) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            crate::errln!("mesh-host: cannot generate into {}: {e}", dir.display());
            EXIT_FAILED
        }
    }
}

fn write_all(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, text) in super::man::pages()? {
        std::fs::write(dir.join(name), text)?;
    }
    let cmd = visible_command();
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        clap_complete::generate_to(shell, &mut cmd.clone(), "mesh-host", dir)?;
    }
    Ok(())
}

/// The command line as an operator sees it: without the hidden commands
/// and options (the completions' generators would offer them all), and
/// without clap's `help` command (which has no page).
fn visible_command() -> clap::Command {
    let mut cmd = super::args::command().disable_help_subcommand(true);
    let hidden: Vec<String> = cmd
        .get_arguments()
        .filter(|a| a.is_hide_set())
        .map(|a| a.get_id().to_string())
        .collect();
    for id in hidden {
        cmd = cmd.mut_arg(id, |a| a.global(false));
    }
    let subs: Vec<clap::Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    let mut out = clap::Command::new(cmd.get_name().to_owned());
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        out = out.arg(arg.clone());
    }
    if let Some(about) = cmd.get_about() {
        out = out.about(about.clone());
    }
    out.version(env!("CARGO_PKG_VERSION"))
        .propagate_version(true)
        .disable_help_subcommand(true)
        .subcommands(subs)
}
