//! Printing answers: the one renderer of every [`Response`], whether the
//! daemon sent it or this process made it ([`crate::answer`]), as text or
//! as JSON.

use crate::answer::{Answer, Failure};
use crate::control::Response;

/// Print `value` as pretty JSON on stdout.
pub fn print_json<T: serde::Serialize>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("mesh-host: cannot encode the result as JSON: {e}"),
    }
}

/// Print `response` (its JSON with `json`, else its text, ended by a
/// newline); its exit code.
pub fn print_response(response: &Response, json: bool) -> u8 {
    if json {
        print_json(&response.json);
    } else {
        print!("{}", response.text);
        if !response.text.ends_with('\n') {
            println!();
        }
    }
    response.exit
}

/// Print an answer made in this process (`--local`, or a command that
/// has no daemon side): as the daemon's would be printed, but a failure is
/// said on stderr, as every command says its errors (and, with `json`,
/// also as `{"error": ...}` on stdout, the daemon's shape).
pub fn print_local<A: Answer>(answer: &Result<A, Failure>, json: bool) -> u8 {
    match answer {
        Ok(a) => print_response(&a.response(), json),
        Err(f) => print_failure(f, json),
    }
}

/// Print a failure made in this process as [`print_local`] does; its exit
/// code.
pub fn print_failure(failure: &Failure, json: bool) -> u8 {
    eprintln!("mesh-host: {}", failure.error);
    if json {
        print_json(&failure.response().json);
    }
    failure.exit.code()
}
