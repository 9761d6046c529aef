//! `mesh-host status --local`: what was last applied, the open windows and
//! the scheduled steps, read from the state directory (no daemon, no
//! container runtime needed).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::output::print_json;
use super::{Cli, EXIT_FAILED, EXIT_OK};
use crate::apply::{AppliedState, Halt, ReportLine, WindowLine};
use crate::cron::local_zone;
use crate::declaration::{self, Declaration};
use crate::render;
use crate::schedule::scheduler::StepHistory;
use crate::schedule::splay;
use crate::step_listing::StepFacts;
use crate::store::{boot_id, Store, STEP_HISTORY};

/// The whole answer of `status --local`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
struct Status {
    state_dir: String,
    /// The node's declaration file (what `apply FILE` installed).
    declaration: String,
    /// Whether a daemon answers on the control socket.
    daemon_listening: bool,
    last_apply: Option<LastApply>,
    windows: Vec<OpenWindow>,
    /// The declared health checks of the last apply.
    health: serde_json::Value,
    steps: Vec<StepLine>,
    /// What needs attention (`status` exits 3 when there is any).
    attention: Vec<crate::attention::Attention>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
struct LastApply {
    applied_at: DateTime<Utc>,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    halted: Option<Halt>,
    lines: Vec<ReportLine>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
struct OpenWindow {
    #[serde(flatten)]
    window: WindowLine,
    /// Whether the process that opened it still runs.
    owner_alive: bool,
    /// Its close ran out of budget while the container runtime did not
    /// answer: its containers are owed a start.
    owed: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
struct StepLine {
    step: String,
    schedule: String,
    zone: String,
    next_fire: Option<DateTime<Utc>>,
    /// The splay included in `next-fire` (`randomized-delay`).
    #[serde(skip_serializing_if = "Option::is_none")]
    delay_ms: Option<u64>,
    /// Since when an operator suspended it, if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    suspended_since: Option<DateTime<Utc>>,
    #[serde(flatten)]
    history: StepHistory,
}

/// Run `status --local`.
/// Run `status --local`; `all_steps`: list every step however many
/// ([`crate::step_listing`]).
pub fn run_local(cli: &Cli, json: bool, all_steps: bool) -> u8 {
    match gather(cli) {
        Ok(status) => {
            if json {
                print_json(&status);
            } else {
                print_text(&status, all_steps);
            }
            if status.attention.is_empty() {
                EXIT_OK
            } else {
                crate::attention::EXIT_ATTENTION
            }
        }
        Err(msg) => {
            crate::errln!("mesh-host: {msg}");
            EXIT_FAILED
        }
    }
}

fn gather(cli: &Cli) -> Result<Status, String> {
    let store = Store::open(&cli.state_dir).map_err(|e| e.to_string())?;
    let applied: Option<AppliedState> =
        crate::apply::load_applied(&store).map_err(|e| e.to_string())?;
    let history: BTreeMap<String, StepHistory> = store
        .load(STEP_HISTORY)
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    let now = Utc::now();
    let boot = boot_id().map_err(|e| e.to_string())?;
    let records = crate::window::Records::of(&store)
        .all()
        .map_err(|e| format!("cannot read the window records: {e}"))?;
    let windows = records
        .iter()
        .filter(|r| r.holds(now, &boot))
        .map(|r| OpenWindow {
            window: WindowLine::of(r),
            owner_alive: r.owner_alive(),
            owed: r.owed,
        })
        .collect();
    let suspended = crate::schedule::suspend::load(&store)?;
    let mut steps = Vec::new();
    let mut health = serde_json::Value::Array(Vec::new());
    if let Some(applied) = &applied {
        let decl = applied_declaration(applied)?;
        health = render::health_checks(&decl);
        let delays = splay::delays(&decl);
        let local_zone = local_zone();
        for step in decl.steps() {
            let id = step.resource.id.to_string();
            let zone = step.schedule.zone.unwrap_or(local_zone);
            let delay = delays.get(&id).copied();
            steps.push(StepLine {
                schedule: step.schedule.cron.expr().to_string(),
                zone: zone.name().to_string(),
                next_fire: splay::next_fire(
                    &step.schedule.cron,
                    zone,
                    delay.unwrap_or_default(),
                    now,
                ),
                delay_ms: delay.map(|d| d.as_millis() as u64),
                suspended_since: suspended.since(&id),
                history: history.get(&id).cloned().unwrap_or_default(),
                step: id,
            });
        }
    }
    let mut attention = crate::attention::gather(
        &store,
        applied.as_ref(),
        &records,
        &suspended,
        &crate::window::Moment {
            wall: now,
            boot_id: boot.clone(),
            since_boot: Some(crate::clock::since_boot()),
        },
    );
    if let Some(line) = empty_declaration(cli, &store) {
        attention.push(crate::attention::Attention::new(
            "declaration-empty-refused",
            line,
        ));
    }
    Ok(Status {
        attention,
        state_dir: store.root().display().to_string(),
        declaration: cli.declaration.display().to_string(),
        daemon_listening: std::os::unix::net::UnixStream::connect(&cli.control_socket).is_ok(),
        last_apply: applied.map(|a| LastApply {
            applied_at: a.applied_at,
            ok: a.ok,
            halted: a.halted,
            lines: a.lines,
        }),
        windows,
        health,
        steps,
    })
}

/// The node's declaration file declares nothing while resources are
/// applied: every apply and daemon refuses it (`apply --allow-empty`).
fn empty_declaration(cli: &Cli, store: &Store) -> Option<String> {
    let decl = crate::apply::node_declaration::read(&cli.declaration).ok()?;
    if !decl.resources.is_empty() {
        return None;
    }
    let applied = crate::apply::empty::applied_count(store, None).ok()?;
    (applied > 0).then(|| {
        format!(
            "EMPTY DECLARATION REFUSED: {} declares no resources while {applied} are applied: it is not applied (mesh-host apply --allow-empty FILE removes them)",
            cli.declaration.display()
        )
    })
}

/// The declaration recorded by the last apply (its canonical form parses
/// back to the same model).
fn applied_declaration(applied: &AppliedState) -> Result<Declaration, String> {
    let bytes = serde_json::to_vec(&applied.declaration)
        .map_err(|e| format!("the recorded declaration cannot be read: {e}"))?;
    declaration::parse(&bytes)
        .map_err(|r| format!("the recorded declaration is no longer accepted:\n{r}"))
}

fn print_text(status: &Status, all_steps: bool) {
    crate::outln!("declaration: {}", status.declaration);
    match &status.last_apply {
        None => crate::outln!("last apply: none recorded in {}", status.state_dir),
        Some(last) => {
            let outcome = match (&last.halted, last.ok) {
                (Some(h), _) => format!("failed, halted at {} ({})", h.id, h.reason),
                (None, true) => "ok".to_string(),
                (None, false) => "failed".to_string(),
            };
            crate::outln!("last apply: {} {outcome}", render::time(last.applied_at));
            for line in &last.lines {
                crate::outln!("  {line}");
            }
        }
    }
    if status.windows.is_empty() {
        crate::outln!("windows: none open");
    }
    for w in &status.windows {
        // Only a promise that holds: with a daemon listening, it adopts the
        // window within seconds; without one, a local command must run.
        let owner = match (w.owner_alive, status.daemon_listening) {
            (true, _) => "",
            (false, true) => " (its owner is gone: the running daemon adopts and closes it)",
            (false, false) => {
                " (its owner is gone and no daemon runs: the next mesh-host command closes it)"
            }
        };
        let owed = if w.owed {
            " (OWED: the container runtime did not answer; started as soon as it does)"
        } else {
            ""
        };
        crate::outln!("{}{owner}{owed}", w.window);
    }
    crate::out!("{}", render::health_lines(&status.health));
    if status.steps.is_empty() {
        crate::outln!("scheduled steps: none");
    }
    let shown: Vec<&StepLine> = if all_steps {
        status.steps.iter().collect()
    } else {
        crate::step_listing::pick(&status.steps, |s| StepFacts {
            next_fire: s.next_fire,
            to_be_seen: s.suspended_since.is_some()
                || StepFacts::failed_last(s.history.last_run, s.history.last_success),
        })
    };
    for s in &shown {
        let next =
            s.next_fire.map_or("never".to_string(), render::time) + &render::delayed(s.delay_ms);
        let last = match (&s.history.last_run, &s.history.last_outcome) {
            (Some(at), Some(outcome)) => format!(
                "last run {}: {outcome}{}",
                render::time(*at),
                render::last_figures(&serde_json::to_value(&s.history).unwrap_or_default())
            ),
            _ => "never run".to_string(),
        };
        let success = s
            .history
            .last_success
            .map_or("no success recorded".to_string(), |t| {
                format!("last success {}", render::time(t))
            });
        let suspended = render::suspended(s.suspended_since.map(|t| t.to_rfc3339()).as_deref());
        crate::outln!(
            "step {} \"{}\" ({}): next {next}; {last}; {success}{suspended}",
            s.step,
            s.schedule,
            s.zone
        );
    }
    if shown.len() < status.steps.len() {
        crate::outln!(
            "{}",
            crate::step_listing::left_out_line(status.steps.len(), shown.len())
        );
    }
    let attention = serde_json::to_value(&status.attention).unwrap_or_default();
    crate::out!("{}", render::attention_lines(Some(&attention)));
}
