//! Paging, systemd's way (`--on-alert UNIT@.service`).
//!
//! For every `will-not-start-again`, `held-unhealthy`, `step-failed`,
//! `step-missed` and `rollout-rolled-back` event the daemon starts an instance of the operator's
//! template whose name carries the event, the step and the page's own id,
//! escaped as systemd escapes names:
//! `mesh-host-alert@step\x2dfailed:gc:5f0c….service` (`%I` is
//! `step-failed:gc:5f0c…`). Before starting it, the daemon logs the event's
//! fields with `MESH_ALERT_UNIT=<instance>`, so the instance finds them,
//! among mesh-host's own entries only (fields journald sets, which no other
//! process can forge), with
//!
//! ```text
//! journalctl -o json -n 1 _UID=0 _SYSTEMD_UNIT=mesh-host.service MESH_ALERT_UNIT=%n
//! ```
//!
//! The pager is a task of its own fed by the events this process logs
//! ([`crate::tap`]): nothing on a window's path waits for it. A page for a
//! step whose window is still open waits until the window closed (its
//! `window-closed` event, or its record gone, or its bound passed); a
//! window whose close gave up while the runtime was away (owed) counts as
//! closed, so its alerts page at once rather than when Docker answers. Pages
//! for the same step and event coalesce, and an instance still running is
//! not started again: never more than one per step and event at a time.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, watch};

use crate::systemd::alerts::AlertUnits;
use crate::systemd::units::escape;
use crate::tap::Observed;
use crate::window::WindowRecord;
use crate::window::Windows;

/// The events that page.
pub const PAGED: [&str; 5] = [
    "will-not-start-again",
    "held-unhealthy",
    "step-failed",
    "step-missed",
    "rollout-rolled-back",
];

/// An `--on-alert` template: `NAME@.service`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    prefix: String,
}

impl Template {
    /// Parse `NAME@.service`; anything else is refused with the reason.
    pub fn parse(s: &str) -> Result<Template, String> {
        let Some(prefix) = s.strip_suffix("@.service") else {
            return Err(format!(
                "{s:?} is not a service template: it must be NAME@.service, such as mesh-host-alert@.service"
            ));
        };
        let valid = !prefix.is_empty()
            && prefix.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b':' | b'_' | b'.' | b'-' | b'\\')
            });
        if !valid {
            return Err(format!(
                "{s:?} is not a valid unit name: the part before @ may hold ASCII letters, digits and : _ . - \\"
            ));
        }
        Ok(Template {
            prefix: prefix.to_string(),
        })
    }

    /// The template's own name.
    pub fn name(&self) -> String {
        format!("{}@.service", self.prefix)
    }

    /// The instance for page `id` of `event` of `step` (or of the host as
    /// a whole): `PREFIX@<escaped "event:step">:<id>.service`. The id (hex
    /// digits, escaped as themselves) makes the name the page's own, so the
    /// instance finds its own journal entry, never an earlier page's.
    pub fn instance(&self, event: &str, step: Option<&str>, id: &str) -> String {
        format!("{}:{id}.service", self.kind(event, step))
    }

    /// What every instance for `event` of `step` starts with:
    /// `PREFIX@<escaped "event:step">`.
    fn kind(&self, event: &str, step: Option<&str>) -> String {
        let what = match step {
            Some(step) => format!("{event}:{step}"),
            None => event.to_string(),
        };
        format!("{}@{}", self.prefix, escape(&what))
    }

    /// Whether `unit` is an instance for `event` of `step` (of any page).
    pub fn is_instance_of(&self, unit: &str, event: &str, step: Option<&str>) -> bool {
        unit.strip_prefix(&self.kind(event, step))
            .and_then(|rest| rest.strip_prefix(':'))
            .and_then(|rest| rest.strip_suffix(".service"))
            .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit()))
    }

    /// A glob (as systemd's `ListUnitsByPatterns` reads it) matching every
    /// instance for `event` of `step`, and possibly a few more: each `\`
    /// of an escaped name is matched by `?`, whether or not the reader
    /// treats a backslash as an escape. Check each match with
    /// [`Self::is_instance_of`].
    pub fn pattern(&self, event: &str, step: Option<&str>) -> String {
        format!("{}:*.service", self.kind(event, step).replace('\\', "?"))
    }
}

impl std::str::FromStr for Template {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Template::parse(s)
    }
}

/// One page to send: the first event of its kind for its step, and how
/// many more came before it was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The event as observed.
    pub first: Observed,
    /// Events of the same kind and step coalesced into this page.
    pub count: u32,
    /// Containers named by those events.
    pub containers: Vec<String>,
}

/// Pages waiting for their step's window to close, by (event, step).
#[derive(Debug, Default)]
pub struct Pending {
    pages: BTreeMap<(String, Option<String>), Page>,
}

impl Pending {
    /// Take in an observed event: an alerting one is queued (or coalesced
    /// with one queued for the same step and event).
    pub fn observe(&mut self, o: &Observed) {
        if !PAGED.contains(&o.event.as_str()) {
            return;
        }
        let key = (o.event.clone(), o.step.clone());
        let page = self.pages.entry(key).or_insert_with(|| Page {
            first: o.clone(),
            count: 0,
            containers: Vec::new(),
        });
        page.count += 1;
        if let Some(c) = &o.container {
            if !page.containers.contains(c) {
                page.containers.push(c.clone());
            }
        }
    }

    /// The pages whose step has no window open (per `window_open`), taken
    /// out of the queue.
    pub fn ready(&mut self, window_open: impl Fn(&str) -> bool) -> Vec<Page> {
        let keys: Vec<_> = self
            .pages
            .keys()
            .filter(|(_, step)| !step.as_deref().is_some_and(&window_open))
            .cloned()
            .collect();
        keys.into_iter()
            .filter_map(|k| self.pages.remove(&k))
            .collect()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }
}

/// The pager task.
#[derive(Debug)]
pub struct Pager {
    template: Template,
    units: Arc<dyn AlertUnits>,
    windows: Windows,
    events: mpsc::UnboundedReceiver<Observed>,
    pending: Pending,
}

/// How often a page waiting for a window looks at the window records
/// again, in case the window ended without a `window-closed` event being
/// seen (its record erased by another process). Only while a page waits.
const RECHECK: Duration = Duration::from_secs(5);

impl Pager {
    /// A pager starting instances of `template` through `units` for the
    /// events of `events` (a [`crate::tap::subscribe`]).
    pub fn new(
        template: Template,
        units: Arc<dyn AlertUnits>,
        windows: Windows,
        events: mpsc::UnboundedReceiver<Observed>,
    ) -> Pager {
        Pager {
            template,
            units,
            windows,
            events,
            pending: Pending::default(),
        }
    }

    /// Serve until `shutdown` turns true; pages still waiting then are
    /// sent (the daemon stops only after its windows closed).
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        loop {
            let recheck = async {
                if self.pending.is_empty() {
                    std::future::pending::<()>().await
                } else {
                    tokio::time::sleep(RECHECK).await
                }
            };
            tokio::select! {
                o = self.events.recv() => match o {
                    Some(o) => self.pending.observe(&o),
                    None => return,
                },
                () = recheck => {}
                () = stopping(&mut shutdown) => {
                    self.send_ready().await;
                    return;
                }
            }
            // Everything logged so far is taken in before deciding.
            while let Ok(o) = self.events.try_recv() {
                self.pending.observe(&o);
            }
            self.send_ready().await;
        }
    }

    async fn send_ready(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let open = match self.windows.live_records() {
            Ok(records) => closing(&records),
            Err(e) => {
                tracing::warn!("paging: window records unreadable ({e}); sending pages now");
                Vec::new()
            }
        };
        let now = Utc::now();
        let window_open = |step: &str| {
            open.iter().any(|(s, opened, bound)| {
                s == step && (now - *opened).num_seconds() as f64 <= *bound
            })
        };
        for page in self.pending.ready(window_open) {
            self.send(page).await;
        }
    }

    async fn send(&self, page: Page) {
        let o = &page.first;
        let pattern = self.template.pattern(&o.event, o.step.as_deref());
        match self.units.running(&pattern).await {
            Ok(running) => {
                if let Some(earlier) = running
                    .iter()
                    .find(|u| self.template.is_instance_of(u, &o.event, o.step.as_deref()))
                {
                    tracing::warn!(
                        target: crate::events::PAGE_TARGET,
                        MESH_STEP = o.step.as_deref(),
                        "{earlier} is still running for an earlier {} of step {}: not started again for this one ({})",
                        o.event,
                        o.step.as_deref().unwrap_or("-"),
                        o.message
                    );
                    return;
                }
            }
            Err(e) => {
                tracing::debug!("paging: cannot tell whether {pattern} runs ({e}); starting it")
            }
        }
        let id = page_id();
        let unit = self.template.instance(&o.event, o.step.as_deref(), &id);
        let containers = page.containers.join(", ");
        let more = if page.count > 1 {
            format!(" (and {} more like it)", page.count - 1)
        } else {
            String::new()
        };
        // The instance reads these fields back: journalctl MESH_ALERT_UNIT=%n.
        // At `crit`, beyond the reach of a writer's flood (PAGE_TARGET).
        tracing::warn!(
            target: crate::events::PAGE_TARGET,
            MESH_ALERT_UNIT = %unit,
            MESH_ALERT_ID = %id,
            MESH_ALERT_EVENT = %o.event,
            MESH_ALERT_COUNT = page.count,
            MESH_ALERT_MESSAGE = %o.message,
            MESH_STEP = o.step.as_deref(),
            MESH_CONTAINER = (!containers.is_empty()).then_some(containers.as_str()),
            MESH_MODULE = o.module.as_deref(),
            MESH_EXIT_STATUS = o.exit_status.as_deref(),
            "paging through {unit}: {}{more}",
            o.message
        );
        if let Err(e) = self.units.start(&unit).await {
            tracing::error!(
                target: crate::events::PAGE_TARGET,
                MESH_ALERT_UNIT = %unit,
                "cannot start {unit} to page {} of step {}: {e}",
                o.event,
                o.step.as_deref().unwrap_or("-")
            );
        }
    }
}

/// The windows a page waits for: each still being run or closed, with
/// when it opened and its bound (seconds). A window whose close gave up
/// while the container runtime was away (owed) is not waited for: its
/// alerts are final until the runtime answers, which may be hours, and an
/// operator is paged for them at once.
fn closing(records: &[WindowRecord]) -> Vec<(String, DateTime<Utc>, f64)> {
    records
        .iter()
        .filter(|r| !r.owed)
        .map(|r| {
            (
                r.step.clone(),
                r.opened_at,
                crate::metrics::window_bound_secs(r),
            )
        })
        .collect()
}

/// A page's own id: 32 hex digits, from the kernel's random source (the
/// time and this process as a fallback, which are unique enough here).
fn page_id() -> String {
    match std::fs::read_to_string("/proc/sys/kernel/random/uuid") {
        Ok(uuid) if uuid.trim().len() == 36 => uuid.trim().replace('-', ""),
        _ => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            format!("{:016x}{:016x}", std::process::id(), nanos as u64)
        }
    }
}

/// Resolves once `shutdown` turns true (or its sender is gone).
async fn stopping(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|s| *s).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(event: &str, step: &str, container: Option<&str>) -> Observed {
        Observed {
            event: event.into(),
            step: Some(step.into()),
            container: container.map(str::to_string),
            message: format!("{event} of {step}"),
            ..Observed::default()
        }
    }

    /// Alert units that only remember what they were asked to start.
    #[derive(Debug, Default)]
    struct Started(std::sync::Mutex<Vec<String>>);

    #[async_trait::async_trait]
    impl AlertUnits for Started {
        async fn running(&self, _pattern: &str) -> Result<Vec<String>, String> {
            Ok(Vec::new())
        }
        async fn start(&self, unit: &str) -> Result<(), String> {
            self.0.lock().expect("lock").push(unit.to_string());
            Ok(())
        }
    }

    /// A pager over a store holding one window of step `gc`, opened now by
    /// this (live) process, owed or not, fed one `will-not-start-again` of
    /// it; returns the units it started within a second, and within a
    /// minute (of paused time).
    async fn paged_for_window(owed: bool) -> (Vec<String>, Vec<String>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = crate::store::Store::open(dir.path().join("state")).expect("store");
        let owner = crate::window::Owner::current().expect("owner");
        // As a close leaves it when the runtime stayed away for its budget.
        let record: WindowRecord = serde_json::from_value(serde_json::json!({
            "record": 1, "step": "gc", "module": "m",
            "fire-time": Utc::now(), "opened-at": Utc::now(),
            "boot-id": owner.boot_id, "pid": owner.pid, "pid-start-time": owner.pid_start_time,
            "step-container": "gc-run", "step-timeout-secs": 600, "owed": owed,
            "held": [{"id": "svc", "name": "svc", "was-running": true}]
        }))
        .expect("record");
        crate::window::Records::of(&store)
            .write(&record)
            .expect("write record");
        let windows = Windows::new(
            store,
            Arc::new(crate::runtime::fake::FakeRuntime::new()),
            Arc::new(crate::clock::SystemClock::new()),
            owner,
        );
        let units = Arc::new(Started::default());
        let (tx, rx) = mpsc::unbounded_channel();
        let (_stop, shutdown) = watch::channel(false);
        let pager = Pager::new(
            Template::parse("page@.service").expect("template"),
            units.clone(),
            windows,
            rx,
        );
        let task = tokio::spawn(pager.run(shutdown));
        tx.send(observed("will-not-start-again", "gc", Some("svc")))
            .expect("send");
        tokio::time::sleep(Duration::from_secs(1)).await;
        let at_once = units.0.lock().expect("lock").clone();
        tokio::time::sleep(Duration::from_secs(59)).await;
        task.abort();
        let in_a_minute = units.0.lock().expect("lock").clone();
        (at_once, in_a_minute)
    }

    #[tokio::test(start_paused = true)]
    async fn an_alert_of_an_owed_window_pages_at_once_and_once() {
        let (at_once, in_a_minute) = paged_for_window(true).await;
        let template = Template::parse("page@.service").expect("template");
        assert_eq!(at_once.len(), 1, "{at_once:?}");
        assert!(template.is_instance_of(&at_once[0], "will-not-start-again", Some("gc")));
        assert_eq!(in_a_minute, at_once, "paged once");
    }

    #[tokio::test(start_paused = true)]
    async fn an_alert_of_a_window_still_closing_waits_for_its_close() {
        let (at_once, in_a_minute) = paged_for_window(false).await;
        assert!(at_once.is_empty() && in_a_minute.is_empty());
    }

    #[test]
    fn templates_must_be_service_templates() {
        assert!(Template::parse("mesh-host-alert@.service").is_ok());
        for bad in [
            "mesh-host-alert.service",
            "mesh-host-alert@x.service",
            "@.service",
            "a b@.service",
            "mesh-host-alert@.timer",
        ] {
            assert!(Template::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn instance_names_carry_event_and_step_escaped_as_systemd_does() {
        let t = Template::parse("mesh-host-alert@.service").expect("template");
        // systemd-escape 'step-failed:garbage-collect:0a1b'
        let failed = t.instance("step-failed", Some("garbage-collect"), "0a1b");
        assert_eq!(
            failed,
            "mesh-host-alert@step\\x2dfailed:garbage\\x2dcollect:0a1b.service"
        );
        // systemd-escape 'will-not-start-again:.hidden_1:ff'
        assert_eq!(
            t.instance("will-not-start-again", Some(".hidden_1"), "ff"),
            "mesh-host-alert@will\\x2dnot\\x2dstart\\x2dagain:.hidden_1:ff.service"
        );
        assert_eq!(
            t.instance("step-missed", None, "12"),
            "mesh-host-alert@step\\x2dmissed:12.service"
        );
        // Told apart by event and step, whatever the page.
        assert!(t.is_instance_of(&failed, "step-failed", Some("garbage-collect")));
        assert!(!t.is_instance_of(&failed, "step-failed", Some("garbage")));
        assert!(!t.is_instance_of(&failed, "step-missed", Some("garbage-collect")));
        assert_eq!(
            t.pattern("step-failed", Some("garbage-collect")),
            "mesh-host-alert@step?x2dfailed:garbage?x2dcollect:*.service"
        );
        let id = page_id();
        assert_eq!(id.len(), 32, "{id}");
        assert_ne!(id, page_id(), "each page has its own");
    }

    #[test]
    fn pages_wait_for_their_window_and_coalesce_per_step_and_event() {
        let mut p = Pending::default();
        p.observe(&observed("window-opened", "gc", None));
        p.observe(&observed("step-failed", "gc", None));
        p.observe(&observed("will-not-start-again", "gc", Some("web")));
        p.observe(&observed("will-not-start-again", "gc", Some("db")));
        p.observe(&observed("step-missed", "backup", None));
        // gc's window is open: only backup's page goes.
        let ready = p.ready(|s| s == "gc");
        assert_eq!(ready.len(), 1);
        assert_eq!(ready[0].first.step.as_deref(), Some("backup"));
        // Closed: one page per event, the two alerts in one.
        let mut ready = p.ready(|_| false);
        ready.sort_by(|a, b| a.first.event.cmp(&b.first.event));
        assert_eq!(ready.len(), 2);
        assert_eq!(ready[0].first.event, "step-failed");
        assert_eq!(ready[1].first.event, "will-not-start-again");
        assert_eq!(ready[1].count, 2);
        assert_eq!(ready[1].containers, vec!["web", "db"]);
        assert!(p.is_empty());
    }
}
