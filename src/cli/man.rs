//! The man pages: `mesh-host(8)`, one `mesh-host-COMMAND(8)` per visible
//! command, and `mesh-host-declaration(5)`. NAME, SYNOPSIS, DESCRIPTION and
//! the options come from clap (the same text as `--help`); EXIT STATUS,
//! ENVIRONMENT, FILES, EXAMPLES and SEE ALSO are written here. Commands are
//! taken from clap, never from a list kept by hand: a new command gets its
//! page and its line in `mesh-host(8)` by being declared.

use clap_mangen::Man;

use crate::exit::Exit;

/// The declaration's format reference, written by hand (roff).
const DECLARATION_PAGE: &str = include_str!("../../docs/man/mesh-host-declaration.5");

/// Pages other than mesh-host's own that the pages refer to (all on a
/// Debian system with systemd and Docker installed).
pub const OTHER_PAGES: &[&str] = &[
    "systemctl(1)",
    "journalctl(1)",
    "systemd.service(5)",
    "crontab(5)",
];

/// Every page: its file name and its roff text.
pub fn pages() -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let mut cmd = super::args::command().disable_help_subcommand(true);
    cmd.build();
    let subs: Vec<&clap::Command> = cmd.get_subcommands().filter(|s| !s.is_hide_set()).collect();
    let mut out = vec![("mesh-host.8".to_owned(), main_page(&cmd, &subs)?)];
    for sub in &subs {
        let name = format!("mesh-host-{}", sub.get_name());
        out.push((format!("{name}.8"), command_page(&name, sub, &subs)?));
    }
    out.push((
        "mesh-host-declaration.5".to_owned(),
        DECLARATION_PAGE
            .replace("@VERSION@", env!("CARGO_PKG_VERSION"))
            .replace("@DATE@", &date())
            .into_bytes(),
    ));
    Ok(out)
}

fn man(cmd: &clap::Command, title: &str) -> Man {
    Man::new(cmd.clone())
        .title(title.to_uppercase())
        .section("8")
        .date(date())
        .source(format!("mesh-host {}", env!("CARGO_PKG_VERSION")))
        .manual("System Administration")
}

/// The pages' date: $SOURCE_DATE_EPOCH's (reproducible builds), else today.
fn date() -> String {
    let at = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .unwrap_or_else(chrono::Utc::now);
    at.format("%Y-%m-%d").to_string()
}

fn head(man: &Man, w: &mut Vec<u8>) -> std::io::Result<()> {
    man.render_title(w)?;
    man.render_name_section(w)?;
    man.render_synopsis_section(w)?;
    man.render_description_section(w)?;
    man.render_options_section(w)
}

fn main_page(cmd: &clap::Command, subs: &[&clap::Command]) -> std::io::Result<Vec<u8>> {
    let mut w = Vec::new();
    head(&man(cmd, "mesh-host"), &mut w)?;
    w.extend_from_slice(b".SH COMMANDS\n");
    for sub in subs {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        w.extend_from_slice(
            format!(
                ".TP\n.BR mesh-host\\-{} (8)\n{}\n",
                escape(sub.get_name()),
                escape(&about)
            )
            .as_bytes(),
        );
    }
    w.extend_from_slice(exit_status().as_bytes());
    environment(cmd, &mut w);
    w.extend_from_slice(FILES.as_bytes());
    w.extend_from_slice(EXAMPLES.as_bytes());
    see_also(None, subs, &mut w);
    Ok(w)
}

fn command_page(
    name: &str,
    sub: &clap::Command,
    subs: &[&clap::Command],
) -> std::io::Result<Vec<u8>> {
    let mut w = Vec::new();
    head(&man(sub, name), &mut w)?;
    w.extend_from_slice(exit_status().as_bytes());
    environment(sub, &mut w);
    see_also(Some(sub.get_name()), subs, &mut w);
    Ok(w)
}

/// Text escaped for a roff text line: backslashes, and a leading `.` or `'`.
fn escape(text: &str) -> String {
    let text = text.replace('\\', "\\e").replace('-', "\\-");
    if text.starts_with('.') || text.starts_with('\'') {
        format!("\\&{text}")
    } else {
        text
    }
}

/// ENVIRONMENT: each visible option's variable, from clap.
fn environment(cmd: &clap::Command, w: &mut Vec<u8>) {
    let mut vars: Vec<(String, String)> = Vec::new();
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        if let (Some(env), Some(long)) = (arg.get_env(), arg.get_long()) {
            vars.push((env.to_string_lossy().into_owned(), long.to_owned()));
        }
    }
    if vars.is_empty() {
        return;
    }
    w.extend_from_slice(b".SH ENVIRONMENT\n");
    for (env, long) in vars {
        w.extend_from_slice(
            format!(
                ".TP\n.B {}\nThe default of\n.BR \\-\\-{} .\n",
                escape(&env),
                escape(&long)
            )
            .as_bytes(),
        );
    }
    w.extend_from_slice(
        b".PP\nAn option given on the command line wins over its variable.\n\
          The service takes them from a drop\\-in (\\fBsystemctl edit mesh\\-host\\fR).\n",
    );
}

/// SEE ALSO: mesh-host(8), the other commands' pages, the format's page,
/// the system's pages.
fn see_also(this: Option<&str>, subs: &[&clap::Command], w: &mut Vec<u8>) {
    let mut refs: Vec<String> = Vec::new();
    if this.is_some() {
        refs.push("mesh-host (8)".to_owned());
    }
    refs.push("mesh-host-declaration (5)".to_owned());
    for sub in subs.iter().filter(|s| Some(s.get_name()) != this) {
        refs.push(format!("mesh-host-{} (8)", sub.get_name()));
    }
    for other in OTHER_PAGES {
        refs.push(other.replacen('(', " (", 1));
    }
    w.extend_from_slice(b".SH \"SEE ALSO\"\n");
    let last = refs.len() - 1;
    for (i, r) in refs.iter().enumerate() {
        let comma = if i == last { "" } else { " ," };
        w.extend_from_slice(format!(".BR {}{comma}\n", escape(r)).as_bytes());
    }
}

/// EXIT STATUS: one entry per [`Exit`], in its order (a code added to the
/// type cannot be left out: the match below is exhaustive).
fn exit_status() -> String {
    let mut out = String::from(".SH \"EXIT STATUS\"\n");
    for exit in Exit::ALL {
        let meaning = match exit {
            Exit::Ok => "The command did what was asked.",
            Exit::Failed => "The command ran and failed (for \\fBdiff\\fR: there are changes).",
            Exit::Refused => {
                "The input was refused, or the command was misused; nothing was changed."
            }
            Exit::Attention => {
                "\\fBstatus\\fR only: something needs attention (a failed resource, a window\npast its bound, a suspended step, an alert since the last apply), and says what."
            }
            Exit::Interrupted => {
                "\\fBrun\\fR only: interrupted (Ctrl\\-C); the fire goes on in the daemon and\nits window still closes."
            }
        };
        out.push_str(&format!(".TP\n.B {}\n{meaning}\n", exit.code()));
    }
    out
}

const FILES: &str = r#".SH FILES
.TP
.I /etc/mesh\-host/declaration.json
The node's declaration (\fB\-\-declaration\fR), read at start and on
\fBsystemctl reload mesh\-host\fR; \fBmesh\-host apply\fR installs it.
The package makes an empty one when there is none and never replaces it.
.TP
.I /var/lib/mesh\-host/
The state directory (\fB\-\-state\-dir\fR): the apply lock, what was
applied, what each container was created reading, the window records.
.TP
.I /run/mesh\-host/control.sock
The daemon's control socket, root only; \fBapply\fR, \fBstatus\fR,
\fBrun\fR and \fBplan\fR talk to it unless given \fB\-\-local\fR.
.TP
.I /var/lib/prometheus/node\-exporter/mesh\-host.prom
The metrics for node\-exporter's textfile collector (\fB\-\-metrics\-file\fR).
.TP
.I /usr/lib/systemd/system/mesh\-host.service
The service; \fImesh\-host.slice\fR holds the scheduled steps' units.
"#;

const EXAMPLES: &str = r#".SH EXAMPLES
Validate a declaration, then apply it through the daemon:
.PP
.RS
.nf
mesh\-host check web.json
mesh\-host apply web.json
.fi
.RE
.PP
When the next fires of a schedule are, and what a fire of step \fIbackup\fR
would hold still:
.PP
.RS
.nf
mesh\-host cron '30 5 * * 1\-5' \-\-count 3
mesh\-host plan backup
.fi
.RE
.PP
What the last five fires of \fIbackup\fR took and used (CPU, peak memory
against its limit, I/O, what they held), and every run the OOM killer ended:
.PP
.RS
.nf
mesh\-host history backup \-\-fires 5
journalctl \-t mesh\-host MESH_EVENT=step\-failed MESH_REASON=oom
.fi
.RE
.PP
Every alert in the journal:
.PP
.RS
.nf
journalctl \-t mesh\-host MESH_EVENT=will\-not\-start\-again
.fi
.RE
.PP
Reconcile every minute, with a drop\-in made by \fBsystemctl edit mesh\-host\fR:
.PP
.RS
.nf
[Service]
Environment=MESH_HOST_RECONCILE_INTERVAL=60
.fi
.RE
"#;
