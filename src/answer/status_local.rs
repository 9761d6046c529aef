//! `status --local`: the [`Status`] read from the state directory and the
//! node's declaration file, in this process (no daemon, no container
//! runtime needed).

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Utc};

use super::status::{listed, recorded_apply, EmptyRefusal, OpenWindow, Status, Steps};
use super::Failure;
use crate::apply::AppliedState;
use crate::cron::local_zone;
use crate::declaration::{self, Declaration};
use crate::render;
use crate::schedule::scheduler::{StepHistory, StepStatus};
use crate::schedule::splay;
use crate::store::{boot_id, Store, STEP_HISTORY};

/// Where `status --local` looks.
#[derive(Debug, Clone, Copy)]
pub struct LocalPaths<'a> {
    /// The state directory.
    pub state_dir: &'a Path,
    /// The node's declaration file.
    pub declaration: &'a Path,
    /// The daemon's control socket (is one listening?).
    pub control_socket: &'a Path,
}

/// `status --local`: the answer from the state directory alone; `brief`:
/// of many steps, only those [`crate::step_listing`] picks.
pub fn local(paths: LocalPaths<'_>, brief: bool) -> Result<Status, Failure> {
    gather(paths, brief).map_err(Failure::failed)
}

/// The answer, or why none could be had.
fn gather(paths: LocalPaths<'_>, brief: bool) -> Result<Status, String> {
    let store = Store::open(paths.state_dir).map_err(|e| e.to_string())?;
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
    let open_windows = records
        .iter()
        .filter(|r| r.holds(now, &boot))
        .cloned()
        .map(OpenWindow::of)
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
            steps.push(step_at_rest(
                id.clone(),
                step.schedule.cron.expr().to_string(),
                zone.name().to_string(),
                splay::next_fire(&step.schedule.cron, zone, delay.unwrap_or_default(), now),
                delay.map(|d| d.as_millis() as u64),
                suspended.since(&id),
                history.get(&id).cloned().unwrap_or_default(),
            ));
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
    let empty = empty_declaration(paths, &store);
    if let Some(e) = &empty {
        attention.push(crate::attention::Attention::new(
            "declaration-empty-refused",
            e.line.clone(),
        ));
    }
    let (steps, steps_scheduled) = listed(steps, brief);
    Ok(Status {
        declaration: paths.declaration.display().to_string(),
        state_dir: store.root().display().to_string(),
        daemon_listening: std::os::unix::net::UnixStream::connect(paths.control_socket).is_ok(),
        last_apply: applied.as_ref().map(|a| recorded_apply(a, brief)),
        empty_declaration_refused: empty,
        open_windows,
        health,
        shared_folders: Vec::new(),
        steps: Steps::Listed(steps),
        steps_scheduled,
        attention,
    })
}

/// The node's declaration file declares nothing while resources are
/// applied: every apply and daemon refuses it (`apply --allow-empty`).
fn empty_declaration(paths: LocalPaths<'_>, store: &Store) -> Option<EmptyRefusal> {
    let decl = crate::apply::node_declaration::read(paths.declaration).ok()?;
    if !decl.resources.is_empty() {
        return None;
    }
    let applied = crate::apply::empty::applied_count(store, None).ok()?;
    let file = paths.declaration.display().to_string();
    (applied > 0).then(|| {
        EmptyRefusal::new(
            Utc::now(),
            file.clone(),
            Some(applied),
            format!("{file} declares no resources while {applied} are applied: it is not applied"),
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

/// A step's status as the state directory has it: no run in flight is
/// known here, nor its next container.
fn step_at_rest(
    step: String,
    schedule: String,
    zone: String,
    next_fire: Option<DateTime<Utc>>,
    delay_ms: Option<u64>,
    suspended_since: Option<DateTime<Utc>>,
    history: StepHistory,
) -> StepStatus {
    StepStatus {
        step,
        schedule,
        zone,
        next_fire,
        delay_ms,
        running: false,
        ready: None,
        suspended_since,
        history,
    }
}
