//! Every command's standard output and standard error, through one path,
//! and the one renderer of every [`Response`], whether the daemon sent it
//! or this process made it ([`crate::answer`]), as text or as JSON.
//!
//! std's `print!` panics when standard output fails ("failed printing to
//! stdout", exit 101), and Rust ignores SIGPIPE, so `mesh-host check FILE
//! | head -2` or `schema > /dev/full` used to end in a panic. Everything a
//! command prints goes through [`Out`] instead (the [`outln!`](crate::outln)
//! and [`out!`](crate::out) macros, [`json`], [`bytes`]), which ends the
//! command the way Unix tools end (docs/exit-codes.md):
//!
//! - the reader went away (a closed pipe, `EPIPE`): the process ends by
//!   SIGPIPE, silently, as `cat` or `grep` do, so a shell's `pipefail` and
//!   `$?` (141) read it as they read theirs;
//! - any other failure (a full disk, `ENOSPC`; an I/O error): one line on
//!   standard error naming it, and the command's exit code for an error
//!   ([`EXIT_FAILED`], or 2 for `diff`, whose 1 means "changes").
//!
//! Standard error goes through [`errln!`](crate::errln): a failure to
//! write there has nowhere left to be told, so it is ignored rather than
//! turned into a panic.

use std::io::{self, Write};
use std::sync::atomic::{AtomicU8, Ordering};

use super::args::EXIT_FAILED;
use crate::answer::{Answer, Failure};
use crate::control::Response;

/// The exit code a command ends with when its standard output cannot be
/// written (other than a closed pipe).
static FAILED_OUTPUT_CODE: AtomicU8 = AtomicU8::new(EXIT_FAILED);

/// Set the exit code for an output that cannot be written, for a command
/// whose 1 means something else (`diff`: 2, trouble, as `diff(1)`).
pub fn set_failure_code(code: u8) {
    FAILED_OUTPUT_CODE.store(code, Ordering::Relaxed);
}

/// Standard output, ending the command when it cannot be written.
///
/// Its `write` never returns an error: a write that fails ends the
/// process ([`failed`]), so callers that take any `io::Write` (the
/// journal printer of `logs`) share the one path.
#[derive(Debug, Clone, Copy, Default)]
pub struct Out;

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            match io::stdout().lock().write(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => failed(&e),
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        loop {
            match io::stdout().lock().flush() {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => failed(&e),
            }
        }
    }
}

/// Standard error, whose failures are ignored: there is nowhere left to
/// tell them (a step's stderr lines that `logs` prints go here).
#[derive(Debug, Clone, Copy, Default)]
pub struct ErrOut;

impl Write for ErrOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let _ = io::stderr().lock().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let _ = io::stderr().lock().flush();
        Ok(())
    }
}

/// End the process for an output that failed: by SIGPIPE for a reader
/// that went away, else with a message and the command's error code.
pub fn failed(e: &io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        // Restores SIGPIPE's default action (std ignores it) and raises
        // it: the process ends as killed by SIGPIPE. Should that fail,
        // exit as a shell reports such an end (128 + 13).
        let _ = signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGPIPE);
        std::process::exit(128 + signal_hook::consts::SIGPIPE);
    }
    let _ = writeln!(
        io::stderr().lock(),
        "mesh-host: cannot write to standard output: {e}"
    );
    std::process::exit(i32::from(FAILED_OUTPUT_CODE.load(Ordering::Relaxed)));
}

/// Write `text` to standard output and flush it.
pub fn text(text: &str) {
    bytes(text.as_bytes());
}

/// Write `bytes` to standard output and flush them.
pub fn bytes(bytes: &[u8]) {
    let mut out = Out;
    // `Out` ends the process rather than return an error.
    let _ = out.write_all(bytes).and_then(|()| out.flush());
}

/// Write formatted text to standard output and flush it (the macros).
pub fn fmt(args: std::fmt::Arguments<'_>) {
    let mut out = Out;
    let _ = out.write_fmt(args).and_then(|()| out.flush());
}

/// Write formatted text to standard error; a failure there is ignored.
pub fn err_fmt(args: std::fmt::Arguments<'_>) {
    let _ = io::stderr().lock().write_fmt(args);
}

/// Print `value` as pretty JSON on stdout.
pub fn json<T: serde::Serialize>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(mut s) => {
            s.push('\n');
            text(&s);
        }
        Err(e) => crate::errln!("mesh-host: cannot encode the result as JSON: {e}"),
    }
}

/// Print `value` as pretty JSON on stdout (the name the commands use).
pub fn print_json<T: serde::Serialize>(value: &T) {
    json(value);
}

/// Print a JSON document given as text, indented as [`json`] indents,
/// onto standard output as it is read: neither a tree of its values nor
/// the indented text is held (the `status` of thousands of steps is
/// megabytes of it). Whether it was printed whole: a document that does
/// not transcode (deeper than serde_json reads, a number out of range)
/// is said on stderr, what was printed of it left unended.
pub fn print_document(document: &serde_json::value::RawValue) -> bool {
    let mut out = io::BufWriter::with_capacity(64 * 1024, Out);
    let mut from = serde_json::Deserializer::from_str(document.get());
    let mut to = serde_json::Serializer::pretty(&mut out);
    match serde_transcode::transcode(&mut from, &mut to) {
        // `Out` ends the process rather than return an error.
        Ok(()) => {
            let _ = out.write_all(b"\n").and_then(|()| out.flush());
            true
        }
        Err(e) => {
            let _ = out.flush();
            crate::errln!("\nmesh-host: the answer is not JSON that can be printed: {e}");
            false
        }
    }
}

/// Print `response` (its JSON with `json`, else its text, ended by a
/// newline); its exit code.
pub fn print_response(response: &Response, json: bool) -> u8 {
    if json {
        if !print_document(&response.json) {
            return EXIT_FAILED;
        }
    } else {
        crate::out!("{}", response.text);
        if !response.text.ends_with('\n') {
            crate::outln!();
        }
    }
    response.exit
}

/// Print the answer of `apply` or `diff` on FILE (`shown`), the daemon's
/// or this process's alike: a refusal's text on standard error, naming
/// FILE; any other text, and every `--json` document, on standard output.
pub fn print_on_file(response: &Response, shown: &str, json: bool) -> u8 {
    if !json && response.exit == crate::exit::Exit::Refused.code() {
        crate::errln!("mesh-host: {shown}: {}", response.text);
        return response.exit;
    }
    print_response(response, json)
}

/// Print an answer made in this process (`--local`, or a command that
/// has no daemon side): as the daemon's would be printed, but a failure is
/// said on stderr, as every command says its errors (and, with `json`,
/// also as `{"error": ...}` on stdout, the daemon's shape).
pub fn print_local<A: Answer>(answer: &Result<A, Failure>, json: bool) -> u8 {
    match answer {
        Ok(a) => print_response(&a.response_in(Some(form(json))), json),
        Err(f) => print_failure(f, json),
    }
}

/// The one form printed: with `--json` the JSON, else the text.
fn form(json: bool) -> crate::control::Form {
    if json {
        crate::control::Form::Json
    } else {
        crate::control::Form::Text
    }
}

/// Print a failure made in this process as [`print_local`] does; its exit
/// code.
pub fn print_failure(failure: &Failure, json: bool) -> u8 {
    crate::errln!("mesh-host: {}", failure.error);
    if json {
        let _ = print_document(&failure.response().json);
    }
    failure.exit.code()
}

/// `print!` through [`Out`].
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::output::fmt(format_args!($($arg)*))
    };
}

/// `println!` through [`Out`].
#[macro_export]
macro_rules! outln {
    () => {
        $crate::cli::output::text("\n")
    };
    ($($arg:tt)*) => {
        $crate::cli::output::fmt(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` that never panics: standard error that cannot be written
/// has nowhere left to say so.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::output::err_fmt(format_args!("{}\n", format_args!($($arg)*)))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_is_printed_whole_or_said_not_printed() {
        let doc: Box<serde_json::value::RawValue> =
            serde_json::from_str(r#"{"steps": [{"step": "gc"}]}"#).expect("json");
        assert!(print_document(&doc));
        // Read as a raw value (no depth bound there), it cannot be
        // printed: serde_json reads no deeper than 128.
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let deep: Box<serde_json::value::RawValue> = serde_json::from_str(&deep).expect("raw");
        assert!(!print_document(&deep));
    }
}
