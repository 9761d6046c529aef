//! `mesh-host logs STEP [--fires N] [--follow]`: a step's output, read
//! back from the journal, where the runtime (Docker) or mesh-host itself
//! (Podman) wrote it (docs/step-output.md).
//!
//! It reads the journal with `journalctl -o json`, never the daemon, so it
//! answers with or without one. First backwards, from the newest entry of
//! the step until N fires are seen: the fires are told by `MESH_FIRE` on
//! the output lines and on the step's own `step-started` events, or by the
//! tag of a line of the step's container (written on Podman by an older
//! mesh-host, under the journald driver: the tag is the fire's name). A
//! fire that was
//! skipped ran nothing and is not counted. Then forwards from the oldest
//! entry of those fires, printing their lines, and with `--follow` what
//! comes after, fire after fire.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde::Serialize;
use serde_json::Value;

use super::args::{Cli, EXIT_FAILED, EXIT_OK, EXIT_REFUSED};
use crate::declaration::{self, ResourceKind, Role};
use crate::schedule::output::is_fire_of;

/// Where `journalctl` is looked for, by absolute path (never `$PATH`).
pub(super) const JOURNALCTL: [&str; 2] = ["/usr/bin/journalctl", "/bin/journalctl"];

/// What to print.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// How many of the last fires.
    pub fires: usize,
    /// Follow new output, of new fires too.
    pub follow: bool,
    /// One JSON object per line of output.
    pub json: bool,
}

/// Run the command.
pub fn run(cli: &Cli, step: &str, opts: Options) -> u8 {
    let declared = match declared_step(&cli.declaration, step) {
        Ok(d) => d,
        Err(refusal) => {
            crate::errln!("mesh-host: {refusal}");
            return EXIT_REFUSED;
        }
    };
    let Some(journalctl) = JOURNALCTL.iter().copied().find(|p| Path::new(p).exists()) else {
        crate::errln!("mesh-host: no journalctl at {}", JOURNALCTL.join(" or "));
        return EXIT_FAILED;
    };
    let query = Query {
        step,
        container: declared.as_ref().ok().map(String::as_str),
    };
    let selection = match select(journalctl, &query, opts.fires) {
        Ok(s) => s,
        Err(e) => {
            crate::errln!("mesh-host: cannot read the journal: {e}");
            return EXIT_FAILED;
        }
    };
    if selection.fires.is_empty() {
        if let Err(why) = declared {
            crate::errln!(
                "mesh-host: no step {step}: {why}, and the journal holds no fire of a step by that id"
            );
            return EXIT_REFUSED;
        }
        if !opts.follow {
            crate::errln!("mesh-host: the journal holds no fire of step {step} yet");
            return EXIT_OK;
        }
    }
    match print(journalctl, &query, &selection, opts) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            crate::errln!("mesh-host: cannot read the journal: {e}");
            EXIT_FAILED
        }
    }
}

/// The container name of step `step` in the declaration `file`; `Err(Ok)`
/// when it is not a step there (said why, refused), `Ok(Err)` when the
/// file does not declare it (said why: the journal may still hold the
/// output of a step since removed).
fn declared_step(file: &Path, step: &str) -> Result<Result<String, String>, String> {
    let shown = file.display();
    let bytes = match declaration::input::read(file) {
        Ok(b) => b,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let decl = match declaration::parse(&bytes) {
        Ok(d) => d,
        Err(_) => return Ok(Err(format!("{shown} is refused (mesh-host check {shown})"))),
    };
    match decl.get(step).map(|r| &r.kind) {
        Some(ResourceKind::Container(c)) if !matches!(c.role, Role::Service) => {
            Ok(Ok(c.name.to_string()))
        }
        Some(_) => Err(format!(
            "{step} is not a step in {shown}: only a scheduled or run-once container has output kept in the journal"
        )),
        None => Ok(Err(format!("{shown} declares none by that id"))),
    }
}

/// What is asked of the journal: the step's entries, and the lines of its
/// container by name (a Podman node's, which carry no `MESH_STEP`).
struct Query<'a> {
    step: &'a str,
    container: Option<&'a str>,
}

impl Query<'_> {
    /// `journalctl` matches: `MESH_STEP=ID`, or `CONTAINER_NAME=NAME`.
    fn matches(&self) -> Vec<String> {
        let mut m = vec![format!("MESH_STEP={}", self.step)];
        if let Some(name) = self.container {
            m.push("+".to_string());
            m.push(format!("CONTAINER_NAME={name}"));
        }
        m
    }
}

/// One journal entry that belongs to a fire of the step.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    fire: String,
    kind: Kind,
    cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// A line (or part of one) the step's container wrote.
    Output(Line),
    /// One of mesh-host's events of the fire, by name.
    Event(String),
}

/// A line of output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Line {
    /// `stdout` or `stderr`.
    stream: &'static str,
    /// Its text, without the newline.
    message: String,
    /// A part of a longer line: no newline follows it.
    #[serde(skip)]
    partial: bool,
    /// Microseconds since the epoch.
    #[serde(skip)]
    realtime_us: Option<i64>,
}

/// The value of `field` as text: journalctl gives a field that is not
/// UTF-8 as an array of bytes.
pub(super) fn text(entry: &Value, field: &str) -> Option<String> {
    match entry.get(field)? {
        Value::String(s) => Some(s.clone()),
        Value::Array(bytes) => {
            let raw: Vec<u8> = bytes
                .iter()
                .filter_map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                .collect();
            Some(String::from_utf8_lossy(&raw).into_owned())
        }
        _ => None,
    }
}

/// What `entry` (one `journalctl -o json` object) is of the fires of
/// `step`, if anything.
fn classify(entry: &Value, step: &str) -> Option<Entry> {
    if let Some(s) = text(entry, "MESH_STEP") {
        if s != step {
            return None;
        }
    }
    let cursor = text(entry, "__CURSOR");
    if let Some(event) = text(entry, "MESH_EVENT") {
        let fire = text(entry, "MESH_FIRE")?;
        return Some(Entry {
            fire,
            kind: Kind::Event(event),
            cursor,
        });
    }
    // Output: written by the runtime's journald driver.
    text(entry, "CONTAINER_ID")?;
    let fire = text(entry, "MESH_FIRE")
        .or_else(|| text(entry, "CONTAINER_TAG").filter(|t| is_fire_of(step, t)))?;
    let mut message = text(entry, "MESSAGE").unwrap_or_default();
    // Podman keeps the newline in the message, Docker does not.
    if message.ends_with('\n') {
        message.pop();
    }
    let stream = if text(entry, "PRIORITY").as_deref() == Some("3") {
        "stderr"
    } else {
        "stdout"
    };
    Some(Entry {
        fire,
        kind: Kind::Output(Line {
            stream,
            message,
            partial: text(entry, "CONTAINER_PARTIAL_MESSAGE").as_deref() == Some("true"),
            realtime_us: text(entry, "__REALTIME_TIMESTAMP").and_then(|t| t.parse().ok()),
        }),
        cursor,
    })
}

/// The last fires of the step and where their entries begin.
#[derive(Debug, Default, PartialEq, Eq)]
struct Selection {
    /// Newest first.
    fires: Vec<String>,
    /// The cursor of their oldest entry.
    from: Option<String>,
}

/// Picks the last `wanted` fires from the step's entries, newest first:
/// `false` once it has them all and needs no older entry.
struct Selector {
    wanted: usize,
    skipped: BTreeSet<String>,
    selection: Selection,
}

impl Selector {
    fn new(wanted: usize) -> Self {
        Selector {
            wanted: wanted.max(1),
            skipped: BTreeSet::new(),
            selection: Selection::default(),
        }
    }

    fn take(&mut self, entry: Entry) -> bool {
        // Seen before its step-started (newest first): a skipped fire ran
        // nothing, and is not one of the last fires.
        if matches!(&entry.kind, Kind::Event(e) if e == "step-skipped") {
            self.skipped.insert(entry.fire);
            return true;
        }
        if self.skipped.contains(&entry.fire) {
            return true;
        }
        let fires = &mut self.selection.fires;
        if !fires.contains(&entry.fire) {
            if fires.len() == self.wanted {
                return false;
            }
            fires.push(entry.fire);
        }
        if entry.cursor.is_some() {
            self.selection.from = entry.cursor;
        }
        true
    }
}

/// `journalctl` with `args` and the query's matches, its output piped.
fn journalctl(path: &str, args: &[&str], query: &Query) -> std::io::Result<Child> {
    Command::new(path)
        .args(["--no-pager", "--quiet", "--output=json"])
        .args(args)
        .args(query.matches())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
}

/// Each entry `child` prints, until `each` says stop; then `child` ends.
pub(super) fn entries(
    mut child: Child,
    mut each: impl FnMut(Value) -> std::io::Result<bool>,
) -> std::io::Result<()> {
    let stdout = child.stdout.take().ok_or_else(|| {
        std::io::Error::other("journalctl's output was not piped to this process")
    })?;
    let mut reader = BufReader::new(stdout);
    let mut buf = Vec::new();
    let mut stopped = false;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        // A line that is not an entry (none is expected) is passed over.
        let Ok(entry) = serde_json::from_slice::<Value>(&buf) else {
            continue;
        };
        if !each(entry)? {
            stopped = true;
            break;
        }
    }
    if stopped {
        let _ = child.kill();
        let _ = child.wait();
        return Ok(());
    }
    let status = child.wait()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!("journalctl {status}")))
    }
}

/// The cursor of the journal's last entry, whatever it is of.
fn tail_cursor(path: &str) -> std::io::Result<Option<String>> {
    let out = Command::new(path)
        .args(["--no-pager", "--quiet", "--output=json", "--lines=1"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|e| text(&e, "__CURSOR")))
}

/// The last `wanted` fires of the query's step, read newest first.
fn select(path: &str, query: &Query, wanted: usize) -> std::io::Result<Selection> {
    let mut selector = Selector::new(wanted);
    entries(journalctl(path, &["--reverse"], query)?, |entry| {
        Ok(match classify(&entry, query.step) {
            Some(e) => selector.take(e),
            None => true,
        })
    })?;
    Ok(selector.selection)
}

/// Prints lines, a header before each fire when more than one may show.
pub struct Printer {
    opts: Options,
    headers: bool,
    current: Option<String>,
    /// A partial line is open on this stream.
    open: Option<&'static str>,
}

impl Printer {
    /// A printer of one fire's lines as text, with no header.
    pub fn plain() -> Printer {
        Printer {
            opts: Options {
                fires: 1,
                follow: true,
                json: false,
            },
            headers: false,
            current: None,
            open: None,
        }
    }

    fn header(&mut self, fire: &str, out: &mut impl Write) -> std::io::Result<()> {
        if self.current.as_deref() == Some(fire) {
            return Ok(());
        }
        self.current = Some(fire.to_string());
        if self.headers && !self.opts.json {
            self.close(out)?;
            writeln!(out, "-- {fire} --")?;
        }
        Ok(())
    }

    /// Ends a partial line left open, so that what follows starts a line.
    pub fn close(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        if self.open.take().is_some() {
            writeln!(out)?;
        }
        Ok(())
    }

    /// Print one line of `fire`: stdout's on `out`, stderr's on `err`.
    pub fn line(
        &mut self,
        fire: &str,
        line: &Line,
        out: &mut impl Write,
        err: &mut impl Write,
    ) -> std::io::Result<()> {
        self.header(fire, out)?;
        if self.opts.json {
            let time = line
                .realtime_us
                .and_then(chrono::DateTime::from_timestamp_micros)
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true));
            let json = serde_json::to_string(&crate::answer::logs::OutputLine {
                fire,
                time,
                stream: line.stream,
                message: &line.message,
            })
            .map_err(std::io::Error::other)?;
            return writeln!(out, "{json}");
        }
        if self.open.is_some_and(|s| s != line.stream) {
            match self.open {
                Some("stderr") => self.close(err)?,
                _ => self.close(out)?,
            }
        }
        let sink: &mut dyn Write = if line.stream == "stderr" { err } else { out };
        if line.partial {
            write!(sink, "{}", line.message)?;
            self.open = Some(line.stream);
        } else {
            writeln!(sink, "{}", line.message)?;
            self.open = None;
        }
        sink.flush()
    }
}

/// Print the selected fires' lines, oldest first, and with `--follow`
/// what comes after.
fn print(path: &str, query: &Query, selection: &Selection, opts: Options) -> std::io::Result<()> {
    let start = match (&selection.from, opts.follow) {
        (Some(cursor), true) => vec![format!("--cursor={cursor}"), "--follow".into()],
        (Some(cursor), false) => vec![format!("--cursor={cursor}")],
        // Nothing yet: what comes after the journal's last entry. Not
        // `--lines=0`: with matches joined by `+`, systemd 252's
        // journalctl seeks the tail so that it misses what follows.
        (None, _) => match tail_cursor(path)? {
            Some(cursor) => vec![format!("--after-cursor={cursor}"), "--follow".into()],
            None => vec!["--follow".into()],
        },
    };
    let args: Vec<&str> = start.iter().map(String::as_str).collect();
    let chosen: BTreeSet<&str> = selection.fires.iter().map(String::as_str).collect();
    let mut printer = Printer {
        opts,
        headers: opts.fires > 1 || opts.follow,
        current: None,
        open: None,
    };
    let (mut out, mut err) = (super::output::Out, super::output::ErrOut);
    entries(journalctl(path, &args, query)?, |entry| {
        let Some(e) = classify(&entry, query.step) else {
            return Ok(true);
        };
        // Followed, every fire from the first chosen one on is shown.
        let shown = chosen.contains(e.fire.as_str()) || opts.follow;
        match &e.kind {
            // Its header even when it writes nothing, as soon as it starts.
            Kind::Event(name) if name == "step-started" && shown => {
                printer.header(&e.fire, &mut out)?;
                out.flush()?;
            }
            Kind::Output(line) if shown => printer.line(&e.fire, line, &mut out, &mut err)?,
            _ => {}
        }
        Ok(true)
    })?;
    printer.close(&mut out)?;
    out.flush()
}

/// What following a step's entries in the journal gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FollowEvent {
    /// A line the step's container wrote in `fire`.
    Line {
        /// The fire.
        fire: String,
        /// The line.
        line: Line,
    },
    /// The fire's `step-finished`, `step-failed` or `step-skipped`: the
    /// fire ended.
    Ended {
        /// The fire.
        fire: String,
    },
}

/// Follows the journal for a step's entries from now on, for `run
/// --follow`; ends its `journalctl` when dropped.
pub struct Follower {
    child: Child,
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Follow what the journal gets of step `step` from now on (its output
/// by its fire, and the end of each fire), with the same query as `logs
/// --follow`; each is sent on the channel returned.
pub fn follow(
    cli: &Cli,
    step: &str,
) -> Result<(Follower, tokio::sync::mpsc::UnboundedReceiver<FollowEvent>), String> {
    let container = declared_step(&cli.declaration, step)
        .ok()
        .and_then(Result::ok);
    let journalctl_path = JOURNALCTL
        .iter()
        .copied()
        .find(|p| Path::new(p).exists())
        .ok_or_else(|| format!("no journalctl at {}", JOURNALCTL.join(" or ")))?;
    let query = Query {
        step,
        container: container.as_deref(),
    };
    let from = tail_cursor(journalctl_path).map_err(|e| format!("cannot read the journal: {e}"))?;
    let mut args = vec!["--follow".to_string()];
    args.extend(from.map(|c| format!("--after-cursor={c}")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut child = journalctl(journalctl_path, &args, &query)
        .map_err(|e| format!("cannot read the journal: {e}"))?;
    let stdout = child
        .stdout
        .take()
        .ok_or("journalctl's output was not piped to this process")?;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let step = step.to_string();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut buf = Vec::new();
        while matches!(reader.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
            let entry = serde_json::from_slice::<Value>(&buf);
            buf.clear();
            let Some(e) = entry.ok().and_then(|v| classify(&v, &step)) else {
                continue;
            };
            let event = match e.kind {
                Kind::Output(line) => FollowEvent::Line { fire: e.fire, line },
                Kind::Event(name)
                    if matches!(
                        name.as_str(),
                        "step-finished" | "step-failed" | "step-skipped"
                    ) =>
                {
                    FollowEvent::Ended { fire: e.fire }
                }
                Kind::Event(_) => continue,
            };
            if tx.send(event).is_err() {
                break;
            }
        }
    });
    Ok((Follower { child }, rx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(step: &str, fire: &str, msg: &str, prio: &str, cursor: &str) -> Value {
        json!({"MESH_STEP": step, "MESH_FIRE": fire, "CONTAINER_ID": "abc",
               "MESSAGE": msg, "PRIORITY": prio, "__CURSOR": cursor,
               "SYSLOG_IDENTIFIER": "mesh-host-step"})
    }

    fn event(step: &str, fire: &str, name: &str, cursor: &str) -> Value {
        json!({"MESH_STEP": step, "MESH_FIRE": fire, "MESH_EVENT": name,
               "__CURSOR": cursor, "SYSLOG_IDENTIFIER": "mesh-host"})
    }

    #[test]
    fn output_and_events_are_told_apart_and_others_left_out() {
        let out = classify(&line("gc", "F1", "hello", "6", "c1"), "gc").expect("a line");
        assert_eq!(out.fire, "F1");
        assert!(
            matches!(&out.kind, Kind::Output(l) if l.stream == "stdout" && l.message == "hello")
        );
        let err = classify(&line("gc", "F1", "oops", "3", "c2"), "gc").expect("a line");
        assert!(matches!(&err.kind, Kind::Output(l) if l.stream == "stderr"));
        let started = classify(&event("gc", "F1", "step-started", "c0"), "gc").expect("event");
        assert_eq!(started.kind, Kind::Event("step-started".into()));
        // Another step's, an event of no fire, a line of no container.
        assert_eq!(classify(&line("gc-2", "F1", "x", "6", "c"), "gc"), None);
        assert_eq!(
            classify(
                &json!({"MESH_STEP": "gc", "MESH_EVENT": "step-missed"}),
                "gc"
            ),
            None
        );
        assert_eq!(
            classify(
                &json!({"MESH_STEP": "gc", "MESH_FIRE": "F", "MESSAGE": "x"}),
                "gc"
            ),
            None
        );
    }

    #[test]
    fn a_podman_line_is_told_by_its_tag_and_bytes_are_read_as_text() {
        let fire = "mesh-host-step-gc-20261203T030000Z.scope";
        let podman = json!({"CONTAINER_ID": "abc", "CONTAINER_NAME": "gc-run",
                            "CONTAINER_TAG": fire, "MESSAGE": "hi\n", "PRIORITY": "6"});
        let e = classify(&podman, "gc").expect("a line");
        assert_eq!(e.fire, fire);
        assert!(matches!(&e.kind, Kind::Output(l) if l.message == "hi"));
        // The same container name under another tag: not this step's.
        let other = json!({"CONTAINER_ID": "abc", "CONTAINER_TAG": "web", "MESSAGE": "x"});
        assert_eq!(classify(&other, "gc"), None);
        let bytes = json!({"CONTAINER_ID": "a", "MESH_FIRE": "F", "MESSAGE": [104, 255, 105]});
        let e = classify(&bytes, "gc").expect("a line");
        assert!(matches!(&e.kind, Kind::Output(l) if l.message == "h\u{fffd}i"));
    }

    fn selected(wanted: usize, newest_first: &[Value]) -> Selection {
        let mut s = Selector::new(wanted);
        for v in newest_first {
            if let Some(e) = classify(v, "gc") {
                if !s.take(e) {
                    break;
                }
            }
        }
        s.selection
    }

    #[test]
    fn the_last_fires_are_chosen_newest_first_and_a_skipped_one_is_not_counted() {
        let newest_first = [
            event("gc", "F3", "step-skipped", "c9"),
            event("gc", "F3", "step-started", "c8"),
            event("gc", "F2", "step-finished", "c7"),
            line("gc", "F2", "two", "6", "c6"),
            event("gc", "F2", "step-started", "c5"),
            line("gc", "F1", "one b", "3", "c4"),
            line("gc", "F1", "one a", "6", "c3"),
            event("gc", "F1", "step-started", "c2"),
            line("gc", "F0", "zero", "6", "c1"),
        ];
        assert_eq!(
            selected(1, &newest_first),
            Selection {
                fires: vec!["F2".into()],
                from: Some("c5".into())
            }
        );
        assert_eq!(
            selected(2, &newest_first),
            Selection {
                fires: vec!["F2".into(), "F1".into()],
                from: Some("c2".into())
            }
        );
        assert_eq!(selected(9, &newest_first).fires, ["F2", "F1", "F0"]);
        assert_eq!(selected(1, &[]), Selection::default());
    }

    #[test]
    fn a_partial_line_is_continued_and_closed_before_anything_else() {
        let opts = Options {
            fires: 2,
            follow: false,
            json: false,
        };
        let mut p = Printer {
            opts,
            headers: true,
            current: None,
            open: None,
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let l = |message: &str, stream, partial| Line {
            stream,
            message: message.into(),
            partial,
            realtime_us: None,
        };
        p.line("F1", &l("a", "stdout", false), &mut out, &mut err)
            .expect("write");
        p.line("F1", &l("par", "stdout", true), &mut out, &mut err)
            .expect("write");
        p.line("F1", &l("tial", "stdout", false), &mut out, &mut err)
            .expect("write");
        p.line("F1", &l("e", "stderr", false), &mut out, &mut err)
            .expect("write");
        p.line("F2", &l("open", "stdout", true), &mut out, &mut err)
            .expect("write");
        p.close(&mut out).expect("write");
        assert_eq!(
            String::from_utf8_lossy(&out),
            "-- F1 --\na\npartial\n-- F2 --\nopen\n"
        );
        assert_eq!(String::from_utf8_lossy(&err), "e\n");
        let mut p = Printer {
            opts: Options { json: true, ..opts },
            headers: true,
            current: None,
            open: None,
        };
        let mut out = Vec::new();
        let mut with_time = l("x", "stderr", false);
        with_time.realtime_us = Some(1_796_288_332_370_456);
        p.line("F1", &with_time, &mut out, &mut err).expect("write");
        let v: Value = serde_json::from_slice(&out).expect("one JSON line");
        assert_eq!(
            v,
            json!({"fire": "F1", "stream": "stderr", "message": "x",
                   "time": "2026-12-03T08:58:52.370456Z"})
        );
    }

    #[test]
    fn the_step_is_looked_up_in_the_declaration() {
        let dir = crate::test_dirs::test_dir();
        let file = dir.path().join("d.json");
        let image = format!("r/x@sha256:{}", "ab".repeat(32));
        let decl = json!({"declaration": 1, "resources": [
            {"id": "web", "type": "container", "name": "web", "image": image},
            {"id": "gc", "type": "container", "name": "gc-run", "image": image,
             "schedule": "0 3 * * *"},
            {"id": "init", "type": "container", "name": "init-run", "image": image,
             "run-once": true}
        ]});
        std::fs::write(&file, decl.to_string()).expect("write");
        assert_eq!(declared_step(&file, "gc"), Ok(Ok("gc-run".into())));
        assert_eq!(declared_step(&file, "init"), Ok(Ok("init-run".into())));
        let refused = declared_step(&file, "web").expect_err("not a step");
        assert!(refused.contains("web is not a step"), "{refused}");
        assert!(
            matches!(declared_step(&file, "nope"), Ok(Err(why)) if why.contains("declares none"))
        );
        let missing = dir.path().join("missing.json");
        assert!(
            matches!(declared_step(&missing, "gc"), Ok(Err(why)) if why.contains("cannot read"))
        );
        std::fs::write(&file, b"{garbage").expect("write");
        assert!(matches!(declared_step(&file, "gc"), Ok(Err(why)) if why.contains("is refused")));
    }

    #[test]
    fn the_query_matches_the_step_or_its_container() {
        let q = Query {
            step: "gc",
            container: Some("gc-run"),
        };
        assert_eq!(q.matches(), ["MESH_STEP=gc", "+", "CONTAINER_NAME=gc-run"]);
        let q = Query {
            step: "gc",
            container: None,
        };
        assert_eq!(q.matches(), ["MESH_STEP=gc"]);
    }
}
