//! The command line: `mesh-host <command>`.
//!
//! Exit codes: [`crate::exit::Exit`], one type for every command (CONTRACT "Command
//! line"; every command's in docs/exit-codes.md). What the commands that
//! the daemon and `--local` both answer say is built in
//! [`crate::answer`] and printed by `output`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

mod apply;
mod args;
mod check;
mod cron;
mod diff;
mod generate;
mod history;
mod import;
mod local;
mod logs;
mod man;
mod metrics;
pub mod output;
mod progress;
mod remote;
mod status;
mod suspend;
mod take;
mod update;

pub use args::{command, Cli, Command, EXIT_FAILED, EXIT_OK, EXIT_REFUSED, GLOBAL_OPTIONS};

/// Parse the command line and run the command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // Kept to the end: dropping it flushes the stderr copy of the log.
    let _logging = crate::events::init_logging(cli.verbose);
    crate::declaration::sandbox::set_own_paths(cli.own_paths());
    ExitCode::from(dispatch(cli))
}

/// Run one parsed command; returns the exit code.
pub fn dispatch(cli: Cli) -> u8 {
    match cli.command {
        Command::Check { ref file, json } => check::run(file, json),
        Command::Cron {
            ref expr,
            ref from,
            count,
            ref zone,
            randomized_delay,
            ref step,
            json,
        } => cron::run(
            expr,
            cron::Options {
                from: from.as_deref(),
                count,
                zone: zone.as_deref(),
                splay: randomized_delay.zip(step.as_deref()),
            },
            json,
        ),
        Command::Generate { ref dir } => generate::run(dir),
        Command::Import {
            ref files,
            ref project_name,
            ref env_files,
            ref profiles,
            no_resolve,
            ref output,
        } => import::run(
            &cli,
            import::Options {
                files,
                project_name: project_name.as_deref(),
                env_files,
                profiles,
                resolve: !no_resolve,
                output: output.as_deref(),
            },
        ),
        Command::Schema => {
            output::text(crate::declaration::SCHEMA);
            EXIT_OK
        }
        Command::Take { ref id, json } => take::run(&cli, id, json),
        Command::Update {
            ref file,
            apply,
            local,
            json,
        } => update::run(&cli, file.as_deref(), apply, local, json),
        Command::History {
            ref step,
            fires,
            json,
        } => history::run(step.as_deref(), fires as usize, json),
        Command::Logs {
            ref step,
            fires,
            follow,
            json,
        } => logs::run(
            &cli,
            step,
            logs::Options {
                fires: fires as usize,
                follow,
                json,
            },
        ),
        Command::Run {
            ref step,
            local: true,
            force,
            follow,
            json,
        } => local::run_step(&cli, step, force, follow, json),
        Command::Plan {
            ref step,
            local: true,
            json,
        } => local::plan_step(&cli, step, json),
        Command::Run {
            ref step,
            local: false,
            force,
            follow,
            json,
        } => remote::run(&cli, step, force, follow, json),
        Command::Suspend {
            ref step,
            local: false,
            json,
        } => remote::call(
            &cli,
            &crate::control::Request::Suspend { step: step.clone() },
            json,
        ),
        Command::Resume {
            ref step,
            local: false,
            json,
        } => remote::call(
            &cli,
            &crate::control::Request::Resume { step: step.clone() },
            json,
        ),
        Command::Suspend {
            ref step,
            local: true,
            json,
        } => suspend::run_local(&cli, step, true, json),
        Command::Resume {
            ref step,
            local: true,
            json,
        } => suspend::run_local(&cli, step, false, json),
        Command::Plan {
            ref step,
            local: false,
            json,
        } => remote::call(
            &cli,
            &crate::control::Request::Plan { step: step.clone() },
            json,
        ),
        Command::Status {
            local: false,
            json,
            steps,
        } => remote::call(
            &cli,
            &crate::control::Request::Status {
                brief: !json && !steps,
                only: remote::form(json).only(),
            },
            json,
        ),
        Command::Reload => remote::reload(&cli),
        Command::Apply {
            ref file,
            local: false,
            allow_empty,
            json,
        } => remote::apply(&cli, file, allow_empty, json),
        Command::Apply {
            ref file,
            local: true,
            allow_empty,
            json,
        } => apply::run_local(&cli, file, allow_empty, json),
        Command::Status {
            local: true,
            json,
            steps,
        } => status::run_local(&cli, json, steps),
        Command::Diff {
            ref file,
            local,
            allow_empty,
            json,
        } => {
            // diff's 1 means "changes": trouble is 2, as diff(1) says it.
            output::set_failure_code(EXIT_REFUSED);
            if local {
                diff::run_local(&cli, file, allow_empty, json)
            } else {
                diff::run_remote(&cli, file, allow_empty, json)
            }
        }
        Command::Metrics { local: false } => {
            remote::call(&cli, &crate::control::Request::Metrics, false)
        }
        Command::Metrics { local: true } => metrics::run_local(&cli),
        Command::Daemon {
            reconcile_interval,
            ref metrics_file,
            ref on_alert,
        } => crate::daemon::run(crate::daemon::DaemonConfig {
            state_dir: cli.state_dir.clone(),
            docker_host: cli.docker_host.clone(),
            declaration: cli.declaration.clone(),
            control_socket: cli.control_socket.clone(),
            unit_dir: cli.unit_dir.clone(),
            reconcile_interval: std::time::Duration::from_secs(reconcile_interval.max(1)),
            metrics_file: (!metrics_file.is_empty()).then(|| PathBuf::from(metrics_file)),
            on_alert: on_alert.clone(),
        }),
    }
}
