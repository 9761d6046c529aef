//! Progress on a terminal: one line on stderr, redrawn in place, saying
//! what `apply` or `run` is doing and waiting on, from the engine's own
//! [`Progress`] (in this process with `--local`, else streamed by the
//! daemon over the control socket).
//!
//! Shown only when stderr is a terminal and the command prints no JSON;
//! otherwise nothing of it is asked for or printed, and the output is
//! the same as without it, byte for byte. On a terminal that cannot move
//! its cursor (`TERM=dumb`) what the line would say is printed as plain
//! lines instead, one per change; `NO_COLOR` (set, not empty) keeps it
//! free of colour. The line is erased before the command's own output.

use std::future::Future;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedReceiver;

use super::logs::{FollowEvent, Printer};
use crate::progress::{Phase, Progress};

/// How progress is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// The line is redrawn in place (a terminal that moves its cursor).
    pub redraw: bool,
    /// The line may be dimmed.
    pub color: bool,
}

/// How to show progress here, or `None` to show none: not a terminal on
/// stderr, or `--json`.
pub fn style(json: bool) -> Option<Style> {
    if json || !std::io::stderr().is_terminal() {
        return None;
    }
    Some(style_for(
        std::env::var_os("TERM").as_deref(),
        std::env::var_os("NO_COLOR").as_deref(),
    ))
}

/// The style for the values of `TERM` and `NO_COLOR`.
fn style_for(term: Option<&std::ffi::OsStr>, no_color: Option<&std::ffi::OsStr>) -> Style {
    let redraw = term.is_some_and(|t| !t.is_empty() && t != "dumb");
    Style {
        redraw,
        color: redraw && no_color.is_none_or(|v| v.is_empty()),
    }
}

/// What an apply or a run has done so far, as the engine told it.
#[derive(Debug, Clone)]
pub struct View {
    /// `apply` or `run STEP`.
    what: String,
    /// When the command began.
    began: Instant,
    total: Option<usize>,
    decided: usize,
    last: Option<String>,
    waiting: Option<String>,
    /// The fire's name, once known.
    fire: Option<String>,
    phase: Option<(Phase, Option<String>)>,
}

impl View {
    /// The view of an apply.
    pub fn apply(began: Instant) -> View {
        View::new("apply".into(), began)
    }

    /// The view of a run of `step`.
    pub fn run(step: &str, began: Instant) -> View {
        View::new(format!("run {step}"), began)
    }

    fn new(what: String, began: Instant) -> View {
        View {
            what,
            began,
            total: None,
            decided: 0,
            last: None,
            waiting: None,
            fire: None,
            phase: None,
        }
    }

    /// The fire's name, once the engine said it.
    pub fn fire(&self) -> Option<&str> {
        self.fire.as_deref()
    }

    /// Take one piece of progress; what a terminal that cannot redraw
    /// prints for it, if anything.
    pub fn take(&mut self, progress: Progress) -> Option<String> {
        match progress {
            Progress::Apply { resources } => {
                self.total = Some(resources);
                None
            }
            Progress::Decided { id, action, reason } => {
                self.decided += 1;
                self.waiting = None;
                let line = match reason {
                    Some(r) => format!("{id} {action}: {r}"),
                    None => format!("{id} {action}"),
                };
                self.last = Some(line.clone());
                Some(line)
            }
            Progress::Waiting { id, on } => {
                let on = match id {
                    Some(id) => format!("{id}: {on}"),
                    None => on,
                };
                self.waiting = Some(on.clone());
                Some(format!("waiting: {on}"))
            }
            Progress::Fire { fire, .. } => {
                self.fire = Some(fire.clone());
                Some(format!("fire {fire}"))
            }
            Progress::Phase { phase, detail, .. } => {
                self.phase = Some((phase, detail.clone()));
                (phase != Phase::Done).then(|| phase_text(phase, detail.as_deref()))
            }
        }
    }

    /// The progress line at `now`, without colour or width limit.
    pub fn line(&self, now: Instant) -> String {
        let elapsed = elapsed(now.saturating_duration_since(self.began));
        let mut line = format!("mesh-host {}", self.what);
        if let Some((phase, detail)) = &self.phase {
            line.push_str(&format!(": {}", phase_text(*phase, detail.as_deref())));
        } else if self.total.is_some() || self.decided > 0 {
            match self.total {
                Some(total) => line.push_str(&format!(": {}/{total} decided", self.decided)),
                None => line.push_str(&format!(": {} decided", self.decided)),
            }
            if let Some(last) = &self.last {
                line.push_str(&format!(", last {last}"));
            }
        }
        if let Some(on) = &self.waiting {
            line.push_str(&format!("; waiting: {on}"));
        }
        line.push_str(&format!(" ({elapsed})"));
        line
    }
}

fn phase_text(phase: Phase, detail: Option<&str>) -> String {
    match detail.filter(|d| !d.is_empty()) {
        Some(d) if phase == Phase::Releasing => {
            format!("{} ({d}; waiting for their health checks)", phase.name())
        }
        Some(d) => format!("{} ({d})", phase.name()),
        None => phase.name().to_string(),
    }
}

/// `42s`, `3m05s`, `1h02m`.
pub fn elapsed(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s / 60) % 60),
    }
}

/// `line` cut to `width` characters (a line longer than the terminal
/// wraps, and a wrapped line is not redrawn in place), dimmed when
/// `color`, ready to be written after a carriage return.
pub fn fit(line: &str, width: usize, color: bool) -> String {
    let width = width.max(10);
    let cut: String = if line.chars().count() > width - 1 {
        let mut cut: String = line.chars().take(width - 2).collect();
        cut.push('…');
        cut
    } else {
        line.to_string()
    };
    if color {
        format!("\x1b[2m{cut}\x1b[0m")
    } else {
        cut
    }
}

/// The terminal's width in columns (80 when it cannot be told).
fn width() -> usize {
    rustix::termios::tcgetwinsize(std::io::stderr())
        .ok()
        .map(|w| usize::from(w.ws_col))
        .filter(|&w| w > 0)
        .unwrap_or(80)
}

/// The progress line, on stderr (or, in tests, what stands for it).
struct Screen<W: Write> {
    style: Style,
    shown: bool,
    out: W,
}

impl<W: Write> Screen<W> {
    fn draw(&mut self, view: &View) {
        if !self.style.redraw {
            return;
        }
        let line = fit(&view.line(Instant::now()), width(), self.style.color);
        let _ = write!(self.out, "\r\x1b[K{line}");
        let _ = self.out.flush();
        self.shown = true;
    }

    fn clear(&mut self) {
        if self.shown {
            let _ = write!(self.out, "\r\x1b[K");
            let _ = self.out.flush();
            self.shown = false;
        }
    }

    /// A line a terminal that cannot redraw keeps.
    fn plain(&mut self, view: &View, text: Option<String>) {
        if let (false, Some(text)) = (self.style.redraw, text) {
            let _ = writeln!(self.out, "mesh-host {}: {text}", view.what);
            let _ = self.out.flush();
        }
    }
}

/// The step's output, when `run --follow` streams it: followed lines of
/// every fire of the step, of which only the fire the engine names is
/// printed.
pub struct Followed {
    /// What the journal follower sends.
    pub events: UnboundedReceiver<FollowEvent>,
    printer: Printer,
    /// Lines seen before the fire's name was known.
    early: Vec<FollowEvent>,
    ended: bool,
}

impl Followed {
    /// Print what `events` sends of the fire.
    pub fn new(events: UnboundedReceiver<FollowEvent>) -> Followed {
        Followed {
            events,
            printer: Printer::plain(),
            early: Vec::new(),
            ended: false,
        }
    }

    fn take(&mut self, event: FollowEvent, fire: Option<&str>) {
        let Some(fire) = fire else {
            self.early.push(event);
            return;
        };
        for event in std::mem::take(&mut self.early)
            .into_iter()
            .chain(std::iter::once(event))
        {
            match event {
                FollowEvent::Line { fire: of, line } if of == fire => {
                    let _ = self.printer.line(
                        &of,
                        &line,
                        &mut super::output::Out,
                        &mut super::output::ErrOut,
                    );
                }
                FollowEvent::Ended { fire: of } if of == fire => self.ended = true,
                _ => {}
            }
        }
    }

    fn finish(&mut self) {
        let _ = self.printer.close(&mut super::output::Out);
    }
}

/// How long the step's last lines are waited for after the fire's
/// report: the runtime writes them to the journal, not mesh-host, and
/// they may come a little after.
const LAST_LINES: Duration = Duration::from_secs(5);

/// Run `work`, showing `progress` (as `style` draws it, or not at all)
/// and the fire's output lines `followed` sends, until it is done; the
/// line is erased before its result is returned. `view` is what it
/// showed last (the fire's name, for one). When `last_lines` says so of
/// the result, the fire's last lines are waited for (at most
/// [`LAST_LINES`]) before returning.
pub async fn show<T>(
    style: Option<Style>,
    view: &mut View,
    progress: UnboundedReceiver<Progress>,
    followed: Option<Followed>,
    work: impl Future<Output = T>,
    last_lines: impl Fn(&T) -> bool,
) -> T {
    show_on(
        std::io::stderr(),
        style,
        view,
        progress,
        followed,
        work,
        last_lines,
    )
    .await
}

/// [`show`], drawing on `out`.
async fn show_on<T>(
    out: impl Write,
    style: Option<Style>,
    view: &mut View,
    mut progress: UnboundedReceiver<Progress>,
    mut followed: Option<Followed>,
    work: impl Future<Output = T>,
    last_lines: impl Fn(&T) -> bool,
) -> T {
    let mut screen = Screen {
        style: style.unwrap_or(Style {
            redraw: false,
            color: false,
        }),
        shown: false,
        out,
    };
    let visible = style.is_some();
    // The line is drawn before anything is asked, not on a first tick: a
    // timer's first tick is not ready until the timer is next turned, and
    // a quick answer (an apply with nothing to do) would come first and
    // leave a terminal that shows no progress at all, or only sometimes.
    if visible {
        screen.draw(view);
    }
    let second = Duration::from_secs(1);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + second, second);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(work);
    let result = loop {
        tokio::select! {
            result = &mut work => break result,
            Some(p) = progress.recv() => {
                let text = view.take(p);
                if visible {
                    screen.plain(view, text);
                    screen.draw(view);
                }
            }
            Some(event) = async {
                match followed.as_mut() {
                    Some(f) => f.events.recv().await,
                    None => std::future::pending().await,
                }
            } => {
                screen.clear();
                if let Some(f) = followed.as_mut() {
                    f.take(event, view.fire());
                }
                if visible {
                    screen.draw(view);
                }
            }
            _ = tick.tick(), if visible => screen.draw(view),
        }
    };
    while let Ok(p) = progress.try_recv() {
        let text = view.take(p);
        if visible {
            screen.plain(view, text);
        }
    }
    if let Some(mut f) = followed.filter(|_| last_lines(&result)) {
        let until = tokio::time::Instant::now() + LAST_LINES;
        while !f.ended {
            match tokio::time::timeout_at(until, f.events.recv()).await {
                Ok(Some(event)) => {
                    screen.clear();
                    f.take(event, view.fire());
                }
                Ok(None) | Err(_) => break,
            }
        }
        f.finish();
    }
    screen.clear();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn a_dumb_terminal_is_not_redrawn_and_no_color_is_honoured() {
        let xterm = Some(OsStr::new("xterm-256color"));
        assert_eq!(
            style_for(xterm, None),
            Style {
                redraw: true,
                color: true
            }
        );
        assert!(!style_for(xterm, Some(OsStr::new("1"))).color);
        assert!(
            style_for(xterm, Some(OsStr::new(""))).color,
            "empty NO_COLOR"
        );
        for dumb in [Some(OsStr::new("dumb")), Some(OsStr::new("")), None] {
            assert_eq!(
                style_for(dumb, None),
                Style {
                    redraw: false,
                    color: false
                },
                "{dumb:?}"
            );
        }
    }

    #[test]
    fn an_apply_line_counts_decisions_and_says_what_it_waits_on() {
        let t0 = Instant::now();
        let mut v = View::apply(t0);
        assert_eq!(v.line(t0), "mesh-host apply (0s)");
        assert_eq!(v.take(Progress::Apply { resources: 3 }), None);
        let kept = v.take(Progress::Decided {
            id: "conf".into(),
            action: "created".into(),
            reason: None,
        });
        assert_eq!(kept.as_deref(), Some("conf created"));
        let kept = v.take(Progress::Waiting {
            id: None,
            on: "pulling r/x@sha256:ab".into(),
        });
        assert_eq!(kept.as_deref(), Some("waiting: pulling r/x@sha256:ab"));
        assert_eq!(
            v.line(t0 + Duration::from_secs(4)),
            "mesh-host apply: 1/3 decided, last conf created; waiting: pulling r/x@sha256:ab (4s)"
        );
        v.take(Progress::Decided {
            id: "web".into(),
            action: "recreated".into(),
            reason: Some("/etc/app/env changed".into()),
        });
        assert_eq!(
            v.line(t0 + Duration::from_secs(75)),
            "mesh-host apply: 2/3 decided, last web recreated: /etc/app/env changed (1m15s)"
        );
        v.take(Progress::Waiting {
            id: Some("init".into()),
            on: "running init-run to completion".into(),
        });
        assert!(v
            .line(t0)
            .ends_with("; waiting: init: running init-run to completion (0s)"));
    }

    #[test]
    fn a_run_line_shows_the_phase_and_the_time_since_the_run_began() {
        let t0 = Instant::now();
        let mut v = View::run("gc", t0);
        let fire = "mesh-host-step-gc-20261203T030000Z.scope";
        assert_eq!(
            v.take(Progress::Fire {
                step: "gc".into(),
                fire: fire.into()
            })
            .as_deref(),
            Some("fire mesh-host-step-gc-20261203T030000Z.scope")
        );
        assert_eq!(v.fire(), Some(fire));
        let phase = |phase, detail: Option<&str>| Progress::Phase {
            step: "gc".into(),
            phase,
            detail: detail.map(String::from),
        };
        v.take(phase(Phase::Holding, Some("web, db")));
        assert_eq!(
            v.line(t0 + Duration::from_secs(2)),
            "mesh-host run gc: stopping held containers (web, db) (2s)"
        );
        let kept = v.take(phase(Phase::Running, Some("gc-run")));
        assert_eq!(kept.as_deref(), Some("running (gc-run)"));
        assert_eq!(
            v.line(t0 + Duration::from_secs(3725)),
            "mesh-host run gc: running (gc-run) (1h02m)"
        );
        v.take(phase(Phase::Releasing, Some("web, db")));
        assert_eq!(
            v.line(t0 + Duration::from_secs(61)),
            "mesh-host run gc: starting held containers again (web, db; waiting for their health checks) (1m01s)"
        );
        assert_eq!(v.take(phase(Phase::Done, None)), None);
    }

    #[test]
    fn a_line_is_cut_to_the_terminal_and_dimmed_only_in_colour() {
        let line = "mesh-host run gc: running (a-very-long-container-name) (12s)";
        assert_eq!(fit(line, 80, false), line);
        let cut = fit(line, 20, false);
        assert_eq!(cut.chars().count(), 19, "one column left free: {cut}");
        assert!(cut.ends_with('…'), "{cut}");
        assert_eq!(fit("x", 80, true), "\x1b[2mx\x1b[0m");
        assert!(!fit(line, 80, false).contains('\x1b'));
    }

    /// An answer ready at once (an apply with nothing to do) still shows
    /// the line first on a terminal, then erases it: the terminal never
    /// leaves the user unsure whether anything was shown.
    #[tokio::test]
    async fn the_line_is_drawn_before_an_answer_that_comes_at_once() {
        for _ in 0..50 {
            let mut out = Vec::new();
            let (_tx, rx) = tokio::sync::mpsc::unbounded_channel();
            let mut view = View::apply(Instant::now());
            let style = Some(Style {
                redraw: true,
                color: false,
            });
            let answer =
                show_on(&mut out, style, &mut view, rx, None, async { 7 }, |_| false).await;
            assert_eq!(answer, 7);
            let shown = String::from_utf8(out).expect("utf-8");
            assert_eq!(shown, "\r\x1b[Kmesh-host apply (0s)\r\x1b[K");
        }
    }

    /// Not on a terminal (no style), nothing at all is written.
    #[tokio::test]
    async fn nothing_is_drawn_without_a_style() {
        let mut out = Vec::new();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tx.send(Progress::Apply { resources: 2 }).expect("send");
        let mut view = View::apply(Instant::now());
        show_on(&mut out, None, &mut view, rx, None, async {}, |_| false).await;
        assert!(out.is_empty(), "{:?}", String::from_utf8_lossy(&out));
    }
}
