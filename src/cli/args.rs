//! What the command line accepts: [`Cli`] and its [`Command`]s (clap's
//! definition, which the man pages and completions are drawn from), and the
//! exit codes every command's file returns. `mod.rs` dispatches to the
//! commands' files; they take these from here.

use std::path::PathBuf;

use clap::{CommandFactory, Parser, Subcommand};

use crate::exit::Exit;

/// Exit code: the command did what was asked ([`Exit::Ok`]).
pub const EXIT_OK: u8 = Exit::Ok.code();
/// Exit code: the command ran and failed ([`Exit::Failed`]).
pub const EXIT_FAILED: u8 = Exit::Failed.code();
/// Exit code: the input was refused or the command misused
/// ([`Exit::Refused`]).
pub const EXIT_REFUSED: u8 = Exit::Refused.code();

/// The heading the global options are listed under, after a command's own.
pub const GLOBAL_OPTIONS: &str = "Global options";

/// mesh-host converges this node to a declaration (containers, files,
/// directories, systemd units) and runs scheduled steps, holding the
/// containers a step names still while it runs and always starting them again.
#[derive(Debug, Parser)]
#[command(name = "mesh-host", version, about, long_about = None, propagate_version = true)]
// Every option has an environment variable (MESH_HOST_<OPTION>, DOCKER_HOST
// for --docker-host), so that a systemd drop-in can set any of them. The
// global options come after a command's own in its help.
#[command(next_help_heading = GLOBAL_OPTIONS)]
pub struct Cli {
    /// The state directory: the apply lock, what was applied, window records.
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        default_value = "/var/lib/mesh-host",
        env = "MESH_HOST_STATE_DIR"
    )]
    pub state_dir: PathBuf,

    /// The container runtime's API endpoint (unix:///path or tcp://host:port).
    /// Default: $DOCKER_HOST, else the local Docker socket.
    #[arg(long, global = true, value_name = "URL", env = "DOCKER_HOST")]
    pub docker_host: Option<String>,

    /// The node's declaration: the file `apply FILE` installs FILE as, and
    /// the one the daemon (start, reload, reconcile), `run`, `plan` and
    /// `status` work from.
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        default_value = crate::apply::node_declaration::DEFAULT_PATH,
        env = "MESH_HOST_DECLARATION"
    )]
    pub declaration: PathBuf,

    /// The daemon's control socket.
    #[arg(long, global = true, value_name = "PATH", default_value = crate::control::DEFAULT_SOCKET, hide = true, env = "MESH_HOST_CONTROL_SOCKET")]
    pub control_socket: PathBuf,

    /// Where unit resources' files are written.
    #[arg(long, global = true, value_name = "DIR", default_value = crate::apply::units::UNIT_DIR, hide = true, env = "MESH_HOST_UNIT_DIR")]
    pub unit_dir: PathBuf,

    /// More detail in the log; `apply` lists every resource even when
    /// the node is found as the same request left it.
    #[arg(long, short, global = true, env = "MESH_HOST_VERBOSE")]
    pub verbose: bool,

    /// What to do.
    #[command(subcommand, next_help_heading = None)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate a declaration without touching the machine. Exits 0 with a
    /// one-line summary (and warnings for legal but dangerous things), or 2
    /// listing every problem, each naming the resource and field.
    Check {
        /// The declaration file (`-` for standard input).
        file: PathBuf,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the next fire times of a cron expression, as Debian cron would
    /// run it, one per line in RFC 3339 with the zone's offset (like
    /// `systemd-analyze calendar --iterations`). Exits 2 with the reason when
    /// the expression is invalid.
    Cron {
        /// A five-field expression (minute hour day-of-month month
        /// day-of-week) or a macro such as @daily; quote it.
        expr: String,
        /// Start after this time (RFC 3339); default: now.
        #[arg(long, value_name = "TIME")]
        from: Option<String>,
        /// How many fire times to print.
        #[arg(long, default_value_t = 5)]
        count: usize,
        /// IANA time zone to evaluate in; default: the host's.
        #[arg(long, value_name = "TZ")]
        zone: Option<String>,
        /// Delay each time as a step declaring this `randomized-delay`
        /// (seconds) is delayed on this node (needs --step).
        #[arg(long, value_name = "SECONDS", requires = "step")]
        randomized_delay: Option<u64>,
        /// The step id the delay is derived for, with /etc/machine-id.
        #[arg(long, value_name = "ID", requires = "randomized_delay")]
        step: Option<String>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Apply a declaration: validate FILE, install it as the node's
    /// declaration (the `--declaration` file, atomically), converge the
    /// machine to it and report one line per resource. A refused FILE
    /// changes nothing. Containers an open maintenance window holds are left
    /// alone (`held-still`).
    ///
    /// On a terminal, a line on stderr shows each resource as it is decided
    /// and what the apply waits on (a pull, a run-once step, an open
    /// window), erased before the report.
    Apply {
        /// The declaration file (`-` for standard input).
        file: PathBuf,
        /// Work in this process (taking the same lock and honouring the same
        /// window records) instead of asking the daemon.
        #[arg(long)]
        local: bool,
        /// Apply FILE even when it declares no resources while resources
        /// are applied: everything the host made is removed. Without it
        /// such a FILE is refused (exit 2) and nothing changes.
        #[arg(long)]
        allow_empty: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show what `apply FILE` would do, doing none of it: containers
    /// created, recreated (and why), started or removed (and the volumes a
    /// removal keeps), held still by an open window; files, directories
    /// and unit files created or changed, with a unified diff of their
    /// content (a file others may not read: only its size); accounts made
    /// or removed; shared-folder grants set or taken away. The decisions
    /// are the apply's own. Exits 0 when nothing would change, 1 when
    /// something would, 2 when FILE is refused or the preview failed.
    Diff {
        /// The declaration file (`-` for standard input).
        file: PathBuf,
        /// Work in this process instead of asking the daemon.
        #[arg(long)]
        local: bool,
        /// Preview FILE even when it declares no resources while resources
        /// are applied (apply refuses it without `--allow-empty`).
        #[arg(long)]
        allow_empty: bool,
        /// Print the preview as JSON (the shape of `apply --json`).
        #[arg(long)]
        json: bool,
    },
    /// Show what was last applied, the scheduled steps and open windows.
    /// Exits 0 when all is well, 3 when something needs attention (a
    /// failed resource, a window past its bound, a suspended step, an alert
    /// since the last apply, an empty declaration refused: one line each),
    /// 1 when no status could be had.
    ///
    /// Above 20 scheduled steps, only the 10 due first and those running,
    /// suspended, failed last or not ready are listed, with a line saying
    /// how many were left out: `--steps` lists every one (as `--json`
    /// always does).
    Status {
        /// Read the state directly instead of asking the daemon.
        #[arg(long)]
        local: bool,
        /// Print the status as JSON.
        #[arg(long)]
        json: bool,
        /// List every scheduled step, however many.
        #[arg(long)]
        steps: bool,
    },
    /// Fire a scheduled step now, through the same path as its schedule
    /// (window, record, no stacking), wait for it and print its outcome.
    /// Exits 0 only when the step succeeded and every container it held
    /// runs again.
    ///
    /// On a terminal, a line on stderr shows the fire's phase (preparing,
    /// stopping held containers, running, starting them again) and the
    /// time since it began. Interrupted (Ctrl-C), `run` leaves the fire to
    /// the daemon, says so and exits 130: the fire goes on and its window
    /// still closes (with --local the fire is this process's own: the
    /// step is stopped and its window closed before it exits).
    Run {
        /// The step's resource id.
        step: String,
        /// Fire it in this process instead of asking the daemon.
        #[arg(long)]
        local: bool,
        /// Run it even though it is suspended (it stays suspended).
        #[arg(long)]
        force: bool,
        /// Print the step's output as it writes it (stdout on stdout,
        /// stderr on stderr), read from the journal as `logs` reads it,
        /// before the outcome.
        #[arg(long, short, conflicts_with = "json")]
        follow: bool,
        /// Print the outcome as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Suspend a scheduled step: its due times are logged (step-suspended),
    /// not run, and never caught up, until `resume`. Kept in the state
    /// directory across restarts, reboots and applies; a step that leaves
    /// the declaration loses it.
    Suspend {
        /// The step's resource id.
        step: String,
        /// Write it to the state directory in this process, for a node
        /// where no daemon runs (the next daemon reads it at start).
        #[arg(long)]
        local: bool,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Lift a step's suspension: it fires again from its next due time
    /// (the due times it passed are not caught up).
    Resume {
        /// The step's resource id.
        step: String,
        /// Write it to the state directory in this process, for a node
        /// where no daemon runs.
        #[arg(long)]
        local: bool,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show what a fire of a step would do (the containers it would hold,
    /// their state, stop and start order, conflicts) without doing it.
    Plan {
        /// The step's resource id.
        step: String,
        /// Work in this process instead of asking the daemon.
        #[arg(long)]
        local: bool,
        /// Print the plan as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a step's output from the journal: its last fire's, or its last
    /// N fires'.
    ///
    /// Lines are printed as the step's container wrote them, stdout on
    /// stdout and stderr on stderr, each fire after a `-- FIRE --` line
    /// when more than one may show. They are read from the journal, where
    /// the runtime wrote each line with MESH_STEP and MESH_FIRE, so this
    /// works with or without a running daemon and whatever happened to
    /// mesh-host meanwhile (`journalctl MESH_STEP=STEP` shows the same
    /// lines among the step's events). Exits 2 when no step of that id is
    /// declared or in the journal.
    Logs {
        /// The step's resource id (scheduled or run-once).
        step: String,
        /// How many of the last fires to print.
        #[arg(long, value_name = "N", default_value_t = 1,
              value_parser = clap::value_parser!(u32).range(1..=10_000))]
        fires: u32,
        /// Keep printing new output as it is written, of the fires to come
        /// too, until interrupted.
        #[arg(long, short)]
        follow: bool,
        /// Print one JSON object per line of output (fire, stream, time,
        /// message).
        #[arg(long)]
        json: bool,
    },
    /// List the last fires from the journal, with what each took and used.
    ///
    /// One line per fire, newest first: when it started, its step, its
    /// outcome (succeeded, skipped, or why it failed: exited, oom,
    /// timed-out, stopped, interrupted, error), how long it took, its CPU
    /// time, its peak memory (against its limit), the bytes it read and
    /// wrote, and the containers its window held and for how long. Read
    /// from each fire's end event in the journal (mesh-host's own entries
    /// only), so this works with or without a running daemon, for steps
    /// since removed too. A figure the node could not measure shows as -.
    History {
        /// Only this step's fires (its resource id); every step's without.
        step: Option<String>,
        /// How many of the last fires to list.
        #[arg(long, value_name = "N", default_value_t = 10,
              value_parser = clap::value_parser!(u32).range(1..=100_000))]
        fires: u32,
        /// Print the fires as a JSON array (figures in bytes and
        /// microseconds, as the journal has them).
        #[arg(long)]
        json: bool,
    },
    /// Consent to take over a shared folder that already holds data: the
    /// next apply sets its entries on what is there (objects owned by root
    /// excepted). Until then apply reports it `refused: holds data`.
    Take {
        /// The shared folder's resource id in the declaration file.
        id: String,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Follow image tags: for each container declared with "update":
    /// "registry" and an image REPO:TAG@sha256:..., ask its registry what
    /// TAG points to now; where it moved, write the new digest into FILE
    /// (atomically; the file before is kept as FILE.previous) and say what
    /// changed. A digest a roll back refused on this node is skipped until
    /// the tag moves again. Works on a copy of a declaration where no
    /// daemon runs, too. Exits 0, or 1 when a registry could not be asked
    /// (or, with --apply, when the apply failed).
    Update {
        /// The declaration file (default: the node's, --declaration).
        file: Option<PathBuf>,
        /// Then apply FILE (through the daemon, or in this process with
        /// --local); a replacement rolled back puts its old digest back
        /// in FILE.
        #[arg(long)]
        apply: bool,
        /// With --apply: apply in this process instead of asking the daemon.
        #[arg(long, requires = "apply")]
        local: bool,
        /// Print what changed as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run as the node's service (systemd Type=notify).
    Daemon {
        /// Seconds between two reconciliations of the declaration file.
        #[arg(
            long,
            default_value_t = 300,
            value_name = "SECONDS",
            env = "MESH_HOST_RECONCILE_INTERVAL"
        )]
        reconcile_interval: u64,
        /// Where to write the metrics for node-exporter's textfile collector
        /// after every fire, apply and window change; an empty value writes
        /// none. Its directory is made (0755) when missing.
        #[arg(
            long,
            value_name = "PATH",
            default_value = crate::metrics::DEFAULT_FILE,
            env = "MESH_HOST_METRICS_FILE"
        )]
        metrics_file: std::ffi::OsString,
        /// A service template (NAME@.service) to start an instance of for
        /// every will-not-start-again, held-unhealthy, step-failed,
        /// step-missed and rollout-rolled-back event, once the step's window has closed (at once
        /// when its close gave up while the runtime was away). The
        /// instance is named after the event, the step and the page's own
        /// id (%I is `EVENT:STEP:ID`) and finds the event's fields with
        /// `journalctl -o json -n 1 _UID=0 _SYSTEMD_UNIT=mesh-host.service
        /// MESH_ALERT_UNIT=%n`.
        #[arg(long, value_name = "UNIT", env = "MESH_HOST_ON_ALERT")]
        on_alert: Option<crate::page::Template>,
    },
    /// Print the host's metrics in Prometheus' text format: the same text
    /// the daemon writes to its --metrics-file.
    Metrics {
        /// Compute them from the state directory instead of asking the daemon.
        #[arg(long)]
        local: bool,
    },
    /// Make a declaration from a compose project: its files (the default
    /// names, or each -f merged in order), its .env or --env-file, the
    /// environment's variables interpolated, each service a container
    /// named as compose names it, its networks and volumes declared, and
    /// each image pinned to its digest (the local image's, else pulled).
    /// Exits 0 with the declaration on standard output (or in -o OUT) and
    /// notes on standard error, or 2 listing every problem, each with its
    /// fix, and nothing written. See docs/compose.md.
    Import {
        /// A compose file; several are merged in order.
        #[arg(short = 'f', long = "file", value_name = "FILE")]
        files: Vec<PathBuf>,
        /// The project name (default: the file's `name:`, else its
        /// directory's name).
        #[arg(short = 'p', long, value_name = "NAME")]
        project_name: Option<String>,
        /// Variables read instead of the project directory's .env.
        #[arg(long = "env-file", value_name = "FILE")]
        env_files: Vec<PathBuf>,
        /// Enable the services of this profile too.
        #[arg(long = "profile", value_name = "PROFILE")]
        profiles: Vec<String>,
        /// Leave image tags as written (check refuses them until pinned).
        #[arg(long)]
        no_resolve: bool,
        /// Write the declaration here (atomically) instead of standard
        /// output: a regular file (replaced, its mode kept) or a new one;
        /// a device, directory, FIFO, socket or symbolic link is refused.
        #[arg(short = 'o', long = "output", value_name = "OUT")]
        output: Option<PathBuf>,
    },
    /// Print the declaration's JSON Schema (draft 2020-12), for editors to
    /// validate and complete declarations. `check` stays the authority:
    /// rules between resources (unique ids, what `while-stopped` names)
    /// are its alone.
    Schema,
    /// Ask the daemon to apply its declaration file again, as
    /// `systemctl reload mesh-host` does, and return once that is done:
    /// what the unit's ExecReload= runs.
    #[command(hide = true)]
    Reload,
    /// Write the man page and shell completions into a directory.
    #[command(hide = true)]
    Generate {
        /// Where to write them.
        dir: PathBuf,
    },
}

impl Cli {
    /// The paths of this host that no declared path may write: the state
    /// directory, the unit's runtime directory, the control socket, the
    /// declaration file.
    pub fn own_paths(&self) -> crate::declaration::sandbox::OwnPaths {
        crate::declaration::sandbox::OwnPaths {
            state_dir: self.state_dir.clone(),
            control_socket: self.control_socket.clone(),
            declaration: self.declaration.clone(),
            ..Default::default()
        }
    }
}

/// The clap command, for man pages and completions.
pub fn command() -> clap::Command {
    Cli::command()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn an_empty_metrics_file_turns_the_textfile_off() {
        let cli = Cli::try_parse_from(["mesh-host", "daemon", "--metrics-file="]).expect("parses");
        assert!(
            matches!(cli.command, Command::Daemon { ref metrics_file, .. } if metrics_file.is_empty())
        );
        let cli = Cli::try_parse_from(["mesh-host", "daemon"]).expect("parses");
        assert!(
            matches!(cli.command, Command::Daemon { ref metrics_file, .. } if *metrics_file == *crate::metrics::DEFAULT_FILE)
        );
        let refused = Cli::try_parse_from(["mesh-host", "daemon", "--on-alert", "x.service"]);
        assert!(refused.is_err_and(|e| e.to_string().contains("NAME@.service")));
    }

    #[test]
    fn global_options_parse_after_the_command() {
        let cli =
            Cli::try_parse_from(["mesh-host", "run", "gc", "--local", "--state-dir", "/tmp/s"])
                .expect("parses");
        assert_eq!(cli.state_dir, PathBuf::from("/tmp/s"));
        assert!(
            matches!(cli.command, Command::Run { ref step, local: true, force: false, follow: false, json: false } if step == "gc")
        );
    }

    #[test]
    fn the_declaration_option_is_global_with_the_node_default() {
        for args in [
            &["mesh-host", "run", "gc", "--local"][..],
            &["mesh-host", "plan", "gc"],
            &["mesh-host", "status", "--local"],
            &["mesh-host", "apply", "x.json", "--local"],
        ] {
            let cli = Cli::try_parse_from(args).expect("parses");
            assert_eq!(
                cli.declaration,
                PathBuf::from("/etc/mesh-host/declaration.json"),
                "{args:?}"
            );
        }
        let cli = Cli::try_parse_from([
            "mesh-host",
            "status",
            "--local",
            "--declaration",
            "/srv/d.json",
        ])
        .expect("parses");
        assert_eq!(cli.declaration, PathBuf::from("/srv/d.json"));
    }
}
