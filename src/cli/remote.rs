//! Commands answered by the daemon over its control socket.

use std::time::Instant;

use super::args::Cli;
use super::local::block_on;
use super::logs;
use super::output::print_response;
use super::progress::{self, Followed, View};
use crate::control::{client, Request, Response};
use crate::progress::Reporter;

/// The exit code of a `run` interrupted (SIGINT), as a shell reports a
/// command ended by it.
pub const EXIT_INTERRUPTED: u8 = crate::exit::Exit::Interrupted.code();

/// Send `request` to the daemon, print its answer, return its exit code.
pub fn call(cli: &Cli, request: &Request, json: bool) -> u8 {
    block_on(async {
        let answer = client::call_for(&cli.control_socket, request, form(json)).await;
        print_answer(answer, json)
    })
}

/// The form of the daemon's answer the command line prints: only that one
/// is read (the `status` of thousands of steps is megabytes of JSON).
pub(super) fn form(json: bool) -> client::Form {
    if json {
        client::Form::Json
    } else {
        client::Form::Text
    }
}

fn print_answer(answer: Result<Response, String>, json: bool) -> u8 {
    print_answer_or(answer, json, super::args::EXIT_FAILED)
}

/// The daemon's answer printed, its exit code returned; `unreachable` when
/// there is none (the daemon could not be asked).
pub(super) fn print_answer_or(answer: Result<Response, String>, json: bool, unreachable: u8) -> u8 {
    match answer {
        Ok(response) => print_response(&response, json),
        Err(e) => {
            crate::errln!("mesh-host: {e}");
            unreachable
        }
    }
}

/// `reload`, the unit's `ExecReload=`: the daemon applies its declaration
/// file again and answers once that apply has ended. SIGTERM (systemd
/// stopping the unit while it reloads) ends the wait with success: the
/// stop supersedes the reload, and the daemon lets the apply in flight
/// finish before it exits.
pub fn reload(cli: &Cli) -> u8 {
    block_on(async {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(e) => {
                    crate::errln!("mesh-host: cannot handle SIGTERM: {e}");
                    return super::args::EXIT_FAILED;
                }
            };
        tokio::select! {
            answer = client::call_for(&cli.control_socket, &Request::Reload, client::Form::Text) => {
                print_answer(answer, false)
            }
            _ = term.recv() => {
                crate::outln!("the daemon is being stopped: the reload is left to it");
                super::args::EXIT_OK
            }
        }
    })
}

/// `apply FILE`: on a terminal, with the apply's progress from the daemon.
pub fn apply(cli: &Cli, file: &std::path::Path, allow_empty: bool, json: bool) -> u8 {
    let shown = file.display().to_string();
    let declaration =
        match super::apply::read_text(file, |r| super::apply::refused_apply(r, &shown, json)) {
            Ok(text) => text,
            Err(code) => return code,
        };
    let style = progress::style(json);
    let request = Request::Apply {
        declaration,
        allow_empty,
        progress: style.is_some(),
        every_line: json || cli.verbose,
    };
    block_on(async {
        let (reporter, rx) = Reporter::channel();
        let mut view = View::apply(Instant::now());
        let answer = progress::show(
            style,
            &mut view,
            rx,
            None,
            client::call_with_progress(&cli.control_socket, &request, form(json), |p| {
                reporter.send(p)
            }),
            |_| false,
        )
        .await;
        match answer {
            Ok(response) => {
                super::output::print_on_file(&response, &file.display().to_string(), json)
            }
            Err(e) => {
                crate::errln!("mesh-host: {e}");
                super::args::EXIT_FAILED
            }
        }
    })
}

/// `run STEP`: on a terminal, with the fire's phases from the daemon;
/// with `follow`, the step's output from the journal as it is written.
/// Interrupted, it leaves the fire to the daemon and says so.
pub fn run(cli: &Cli, step: &str, force: bool, follow: bool, json: bool) -> u8 {
    let style = progress::style(json);
    let request = Request::Run {
        step: step.to_string(),
        force,
        progress: style.is_some() || follow,
    };
    block_on(async {
        // Followed from before the request: no line of the fire is missed.
        let mut follower = None;
        let followed = if follow {
            match logs::follow(cli, step) {
                Ok((f, events)) => {
                    follower = Some(f);
                    Some(Followed::new(events))
                }
                Err(e) => {
                    crate::errln!("mesh-host: the step's output will not be shown: {e}");
                    None
                }
            }
        } else {
            None
        };
        let (reporter, rx) = Reporter::channel();
        let mut view = View::run(step, Instant::now());
        let answer = progress::show(style, &mut view, rx, followed, async {
            tokio::select! {
                answer = client::call_with_progress(&cli.control_socket, &request, form(json), |p| reporter.send(p)) => Some(answer),
                _ = tokio::signal::ctrl_c() => None,
            }
        }, |answer| matches!(answer, Some(Ok(_))))
        .await;
        drop(follower);
        match answer {
            Some(answer) => print_answer(answer, json),
            None => {
                crate::errln!("{}", interrupted(step, view.fire()));
                EXIT_INTERRUPTED
            }
        }
    })
}

/// What `run` says when interrupted: the fire is the daemon's.
pub fn interrupted(step: &str, fire: Option<&str>) -> String {
    let fire = fire.map(|f| format!(" ({f})")).unwrap_or_default();
    format!(
        "mesh-host: interrupted; the fire of {step}{fire} goes on in the daemon and its window still closes. \
         Its output: mesh-host logs {step} --follow; its outcome: mesh-host status"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupted_run_says_the_fire_goes_on() {
        let said = interrupted("gc", Some("mesh-host-step-gc-20261203T030000Z.scope"));
        assert!(
            said.contains("the fire of gc (mesh-host-step-gc-20261203T030000Z.scope) goes on in the daemon and its window still closes"),
            "{said}"
        );
        assert!(said.contains("mesh-host logs gc --follow"), "{said}");
        assert!(interrupted("gc", None).contains("the fire of gc goes on"));
    }
}
