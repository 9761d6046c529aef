//! A step's output forwarded to the journal by mesh-host, where the
//! runtime's log driver carries no label (Podman 4.3,
//! [`ContainerRuntime::journals_output`] false): each line an entry with
//! the fields Docker's journald driver gives it (`MESH_STEP`, `MESH_FIRE`,
//! `SYSLOG_IDENTIFIER=mesh-host-step`, `PRIORITY` 6 or 3, the container's
//! name, id and image), read back from the runtime's own log of the
//! container (its `k8s-file`), which keeps every line whatever happens to
//! mesh-host.
//!
//! So that no line is lost while no mesh-host forwards (a daemon SIGKILLed
//! mid-step, an upgrade's hand-over, a local run that dies), the output
//! is **owed** before the container starts: `forwards/<fire>.json` in the
//! state directory names the fire, its container and its owner. Each
//! entry carries its place in the container's log (`MESH_OUTPUT_LINE`).
//! Once the container has ended and every line is sent, the debt is
//! settled (the file removed). A debt whose owner is gone is taken over
//! (under `forwards.lock`) by the next daemon, or a running one when the
//! owner dies, or the next local command: it asks journald for the last
//! line sent (`journalctl --sync` first, so that what the dead owner sent
//! is counted), reads the container's log again from its start, and
//! forwards from the next line on. Lines written meanwhile come late,
//! never twice and never lost.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use crate::journal::{Journal, MAX_VALUE};
use crate::runtime::{ContainerRuntime, OutputStream};
use crate::schedule::output::{IDENTIFIER, LABEL_FIRE};
use crate::store::{Store, StoreError};
use crate::window::Owner;

/// The directory of debts under the state directory.
const DIR: &str = "forwards";

/// The store document whose lock serialises taking debts over.
const LOCK: &str = "forwards";

/// How long a fire waits, once its container has ended, for its last
/// lines to be forwarded before it reports (they are sent all the same).
const FINISH_WAIT: Duration = Duration::from_secs(10);

/// Where `journalctl` is looked for, by absolute path (never `$PATH`).
const JOURNALCTL: [&str; 2] = ["/usr/bin/journalctl", "/bin/journalctl"];

/// The largest debt file read: a real one is a few hundred bytes.
const MAX_DEBT_BYTES: u64 = 64 * 1024;

/// The output of one fire owed to the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Owed {
    /// The fire's name (`MESH_FIRE`).
    pub fire: String,
    /// The step's id (`MESH_STEP`).
    pub step: String,
    /// The step's module (`MESH_MODULE`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// The container's runtime name.
    pub container: String,
    /// Its image, as declared.
    pub image: String,
    /// The owner's boot, pid and start time: who forwards it now.
    pub boot_id: String,
    /// See [`Owed::boot_id`].
    pub pid: u32,
    /// See [`Owed::boot_id`].
    pub pid_start_time: u64,
}

impl Owed {
    /// The output of `fire` of step `step` (of `module`), written by its
    /// container `container` of `image`, owed by `owner`.
    pub fn new(
        owner: &Owner,
        step: &str,
        module: Option<&str>,
        fire: &str,
        container: &str,
        image: &str,
    ) -> Self {
        Owed {
            fire: fire.to_string(),
            step: step.to_string(),
            module: module.map(str::to_string),
            container: container.to_string(),
            image: image.to_string(),
            boot_id: owner.boot_id.clone(),
            pid: owner.pid,
            pid_start_time: owner.pid_start_time,
        }
    }

    /// Whether its owner is alive: of this boot, the same process.
    fn owner_alive(&self) -> bool {
        crate::store::boot_id().is_ok_and(|b| b == self.boot_id)
            && crate::store::live_process_start_time(self.pid)
                .is_ok_and(|start| start == self.pid_start_time)
    }

    fn owned_by(&self, owner: &Owner) -> bool {
        self.boot_id == owner.boot_id
            && self.pid == owner.pid
            && self.pid_start_time == owner.pid_start_time
    }
}

/// The debts of one state directory.
#[derive(Debug, Clone)]
pub struct Forwards {
    store: Store,
    dir: PathBuf,
    /// journald's native socket (a test's own elsewhere).
    journal: PathBuf,
}

impl Forwards {
    /// The debts kept in `store`'s state directory.
    pub fn of(store: &Store) -> Self {
        Forwards {
            store: store.clone(),
            dir: store.root().join(DIR),
            journal: PathBuf::from(crate::journal::SOCKET),
        }
    }

    /// The same debts, their lines sent to the datagram socket at `path`
    /// (a test's journal).
    pub fn sending_to(mut self, path: &std::path::Path) -> Self {
        self.journal = path.to_path_buf();
        self
    }

    /// The directory of debts (watched by the daemon).
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    fn path(&self, fire: &str) -> PathBuf {
        let mut name = String::new();
        for b in fire.bytes() {
            if b.is_ascii_alphanumeric()
                || matches!(b, b'-' | b'_')
                || (b == b'.' && !name.is_empty())
            {
                name.push(char::from(b));
            } else {
                name.push_str(&format!("%{b:02X}"));
            }
        }
        self.dir.join(format!("{name}.json"))
    }

    /// Record that `owed` is owed (atomically, before its container starts).
    pub fn owe(&self, owed: &Owed) -> Result<(), StoreError> {
        crate::store::ensure_dir(&self.dir)?;
        crate::store::write_json(&self.path(&owed.fire), owed)
    }

    /// The output of `fire` is all in the journal.
    pub fn settle(&self, fire: &str) -> Result<(), StoreError> {
        let path = self.path(fire);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io("remove", &path, e)),
        }
    }

    /// Every debt on disk. One that cannot be read (not a regular file,
    /// too big, not a debt) is said and removed: the container's own log
    /// still has its lines.
    pub fn all(&self) -> Vec<Owed> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            let read = std::fs::symlink_metadata(&path)
                .ok()
                .filter(|m| m.is_file() && m.len() <= MAX_DEBT_BYTES)
                .and_then(|_| std::fs::read(&path).ok())
                .and_then(|bytes| serde_json::from_slice::<Owed>(&bytes).ok())
                .filter(|owed| self.path(&owed.fire) == path);
            match read {
                Some(owed) => out.push(owed),
                None => {
                    tracing::warn!(
                        "{} is not a record of output owed to the journal: removed",
                        path.display()
                    );
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        out
    }

    /// Take over every debt whose owner is gone: rewritten as `owner`'s
    /// under `forwards.lock`, so that one process only forwards it.
    pub fn claim_orphans(&self, owner: &Owner) -> Vec<Owed> {
        let lock = match self.store.document_lock(LOCK) {
            Ok(lock) => lock,
            Err(e) => {
                tracing::warn!("cannot take over output owed to the journal: {e}");
                return Vec::new();
            }
        };
        let mut claimed = Vec::new();
        for owed in self.all() {
            if owed.owned_by(owner) || owed.owner_alive() {
                continue;
            }
            let mine = Owed {
                boot_id: owner.boot_id.clone(),
                pid: owner.pid,
                pid_start_time: owner.pid_start_time,
                ..owed
            };
            match self.owe(&mine) {
                Ok(()) => claimed.push(mine),
                Err(e) => tracing::warn!(
                    MESH_STEP = %mine.step,
                    "cannot take over the output of {} owed to the journal: {e}",
                    mine.fire
                ),
            }
        }
        drop(lock);
        claimed
    }
}

/// The output of one fire, forwarded by this process when the runtime
/// does not write it to the journal itself.
#[derive(Debug)]
pub struct Forwarding {
    runtime: Arc<dyn ContainerRuntime>,
    job: Option<(Forwards, Owed)>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Forwarding {
    /// Owe `owed` before its container starts, when `runtime` does not
    /// write the output to the journal itself; nothing otherwise.
    pub fn owe(runtime: Arc<dyn ContainerRuntime>, forwards: &Forwards, owed: Owed) -> Self {
        if runtime.journals_output() {
            return Forwarding {
                runtime,
                job: None,
                task: None,
            };
        }
        if let Err(e) = forwards.owe(&owed) {
            // Forwarded all the same while this process lives.
            tracing::warn!(MESH_STEP = %owed.step, "cannot record the output of {} as owed: {e}", owed.fire);
        }
        Forwarding {
            runtime,
            job: Some((forwards.clone(), owed)),
            task: None,
        }
    }

    /// The container started: follow its output to the journal.
    pub fn follow(&mut self) {
        if let Some((forwards, owed)) = self.job.clone() {
            let runtime = self.runtime.clone();
            self.task = Some(tokio::spawn(async move {
                forward(runtime, forwards, owed, 0, true).await;
            }));
        }
    }

    /// The container never started: nothing is owed.
    pub fn abandon(self) {
        if let Some((forwards, owed)) = &self.job {
            if let Err(e) = forwards.settle(&owed.fire) {
                tracing::warn!(MESH_STEP = %owed.step, "cannot settle the output of {}: {e}", owed.fire);
            }
        }
    }

    /// The run is over: wait a moment for its last lines to be sent (the
    /// fire's outcome is logged after them); past that they go on being
    /// sent by a task of their own.
    pub async fn finish(self) {
        if let Some(task) = self.task {
            let _ = tokio::time::timeout(FINISH_WAIT, task).await;
        }
    }
}

/// Forward the output of `owed` to the journal, from line `skip` on; with
/// `follow`, until the container ends, and then the debt is settled. A
/// stream cut short is read again from the start (the lines sent are
/// skipped).
pub async fn forward(
    runtime: Arc<dyn ContainerRuntime>,
    forwards: Forwards,
    owed: Owed,
    skip: u64,
    follow: bool,
) {
    let journal = match Journal::to(&forwards.journal) {
        Ok(j) => j,
        Err(e) => {
            tracing::error!(MESH_STEP = %owed.step, "cannot reach journald to forward the output of {}: {e}", owed.fire);
            return;
        }
    };
    // The fire's own container, by its id: a name taken since by the
    // next fire's container is not this fire's output.
    let id = match runtime.inspect(&owed.container).await {
        Ok(Some(info)) if info.labels.get(LABEL_FIRE) == Some(&owed.fire) => info.id,
        Ok(_) => {
            tracing::warn!(MESH_STEP = %owed.step, "the container of {} is gone: what was not forwarded of it is lost", owed.fire);
            settle(&forwards, &owed);
            return;
        }
        Err(e) => {
            // Not settled: whoever takes the debt over tries again.
            tracing::warn!(MESH_STEP = %owed.step, "cannot find the container of {}: {e}", owed.fire);
            return;
        }
    };
    let mut sent = skip;
    let mut pause = Duration::from_millis(500);
    loop {
        let mut lines = Lines::new(&owed, &id, sent);
        let ended = match runtime.output(&id, follow).await {
            Ok(mut chunks) => {
                let mut cut = false;
                while let Some(chunk) = chunks.next().await {
                    match chunk {
                        Ok(chunk) => lines.push(chunk.stream, &chunk.bytes, &journal),
                        Err(e) => {
                            tracing::debug!(MESH_STEP = %owed.step, "the output of {} was cut: {e}", owed.fire);
                            cut = true;
                            break;
                        }
                    }
                }
                if !cut {
                    lines.flush(&journal);
                }
                sent = lines.sent;
                !cut
            }
            Err(crate::runtime::RuntimeError::NotFound { .. }) => {
                tracing::warn!(MESH_STEP = %owed.step, "the container of {} is gone: what was not forwarded is lost", owed.fire);
                true
            }
            Err(e) => {
                tracing::debug!(MESH_STEP = %owed.step, "cannot read the output of {}: {e}", owed.fire);
                false
            }
        };
        // Ended for good only once the container no longer runs.
        let running = matches!(runtime.inspect(&id).await, Ok(Some(i)) if i.running);
        if ended && (!running || !follow) {
            if !running {
                settle(&forwards, &owed);
            }
            return;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(10));
    }
}

fn settle(forwards: &Forwards, owed: &Owed) {
    if let Err(e) = forwards.settle(&owed.fire) {
        tracing::warn!(MESH_STEP = %owed.step, "cannot settle the output of {}: {e}", owed.fire);
    }
}

/// The lines of a fire's output, cut from the runtime's chunks and sent
/// one entry each, numbered in the container's log.
struct Lines<'a> {
    owed: &'a Owed,
    /// The container's id: `CONTAINER_ID_FULL`, and its first 12
    /// characters `CONTAINER_ID`, as Docker's driver gives them.
    id: &'a str,
    /// Entries numbered below this are in the journal already.
    skip: u64,
    /// The number of the next entry.
    next: u64,
    /// Entries sent or skipped so far: where a later read resumes.
    sent: u64,
    /// A line not yet ended, per stream.
    pending: [(OutputStream, Vec<u8>); 2],
}

impl<'a> Lines<'a> {
    fn new(owed: &'a Owed, id: &'a str, skip: u64) -> Self {
        Lines {
            owed,
            id,
            skip,
            next: 0,
            sent: skip,
            pending: [
                (OutputStream::Stdout, Vec::new()),
                (OutputStream::Stderr, Vec::new()),
            ],
        }
    }

    fn push(&mut self, stream: OutputStream, bytes: &[u8], journal: &Journal) {
        let slot = usize::from(stream == OutputStream::Stderr);
        self.pending[slot].1.extend_from_slice(bytes);
        while let Some(end) = self.pending[slot].1.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending[slot].1.drain(..=end).collect();
            self.entry(stream, &line[..line.len() - 1], journal);
        }
    }

    /// What is left without its newline, as a line of its own.
    fn flush(&mut self, journal: &Journal) {
        for slot in 0..2 {
            let (stream, rest) = (
                self.pending[slot].0,
                std::mem::take(&mut self.pending[slot].1),
            );
            if !rest.is_empty() {
                self.entry(stream, &rest, journal);
            }
        }
    }

    /// One line: one entry, or parts of [`MAX_VALUE`] bytes, all but the
    /// last marked partial (as Docker's driver marks them).
    fn entry(&mut self, stream: OutputStream, line: &[u8], journal: &Journal) {
        let parts: Vec<&[u8]> = if line.is_empty() {
            vec![line]
        } else {
            line.chunks(MAX_VALUE).collect()
        };
        let last = parts.len() - 1;
        for (i, part) in parts.into_iter().enumerate() {
            let n = self.next;
            self.next += 1;
            if n < self.skip {
                continue;
            }
            let number = n.to_string();
            let priority = match stream {
                OutputStream::Stdout => "6",
                OutputStream::Stderr => "3",
            };
            let mut fields: Vec<(&str, &[u8])> = vec![
                ("MESSAGE", part),
                ("PRIORITY", priority.as_bytes()),
                ("SYSLOG_IDENTIFIER", IDENTIFIER.as_bytes()),
                ("MESH_STEP", self.owed.step.as_bytes()),
                ("MESH_FIRE", self.owed.fire.as_bytes()),
                ("MESH_OUTPUT_LINE", number.as_bytes()),
                ("CONTAINER_NAME", self.owed.container.as_bytes()),
                ("CONTAINER_TAG", IDENTIFIER.as_bytes()),
                ("IMAGE_NAME", self.owed.image.as_bytes()),
                ("CONTAINER_ID", short(self.id).as_bytes()),
                ("CONTAINER_ID_FULL", self.id.as_bytes()),
            ];
            if let Some(module) = &self.owed.module {
                fields.push(("MESH_MODULE", module.as_bytes()));
            }
            if i < last {
                fields.push(("CONTAINER_PARTIAL_MESSAGE", b"true"));
            }
            if let Err(e) = journal.send(&fields) {
                tracing::warn!(MESH_STEP = %self.owed.step, "cannot send a line of {} to the journal: {e}", self.owed.fire);
            }
            self.sent = self.next;
        }
    }
}

/// The first 12 characters of a container id.
fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// How many entries of `fire` journald has (one past the last
/// `MESH_OUTPUT_LINE` sent), once what was sent before is written.
pub async fn forwarded_so_far(fire: &str) -> Result<u64, String> {
    let Some(journalctl) = JOURNALCTL
        .iter()
        .copied()
        .find(|p| std::path::Path::new(p).exists())
    else {
        return Err("no journalctl".into());
    };
    let run = |args: Vec<String>| async move {
        let out = tokio::time::timeout(
            Duration::from_secs(30),
            tokio::process::Command::new(journalctl)
                .args(&args)
                .kill_on_drop(true)
                .output(),
        )
        .await
        .map_err(|_| format!("{journalctl} did not answer in 30 s"))?
        .map_err(|e| format!("{journalctl}: {e}"))?;
        Ok::<_, String>(out)
    };
    // What the dead owner sent is in journald's queue: written first.
    let _ = run(vec!["--sync".into()]).await;
    let out = run(vec![
        "--no-pager".into(),
        "-o".into(),
        "json".into(),
        "-r".into(),
        "-n".into(),
        "1".into(),
        format!("SYSLOG_IDENTIFIER={IDENTIFIER}"),
        format!("MESH_FIRE={fire}"),
    ])
    .await?;
    let last = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|e| {
            e.get("MESH_OUTPUT_LINE")
                .and_then(|v| v.as_str())
                .and_then(|n| n.parse::<u64>().ok())
        })
        .max();
    Ok(last.map_or(0, |n| n + 1))
}

/// Forward `owed`, taken over from an owner that is gone, from where it
/// was left (one past the last line journald has of it).
pub async fn resume_one(
    runtime: Arc<dyn ContainerRuntime>,
    forwards: Forwards,
    owed: Owed,
    follow: bool,
) {
    let skip = match forwarded_so_far(&owed.fire).await {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(MESH_STEP = %owed.step, "cannot tell how much of {} was forwarded ({e}): all of it is sent again", owed.fire);
            0
        }
    };
    tracing::info!(
        MESH_STEP = %owed.step,
        "forwarding the output of {} to the journal from line {skip}, left by a process that is gone",
        owed.fire
    );
    forward(runtime, forwards, owed, skip, follow).await;
}

/// Take over the output owed by owners that are gone and forward each
/// from where it was left, on tasks of their own; with `follow`, also a
/// container that still runs, to its end (a daemon); without, what is
/// there now (a local command), leaving a running one's debt to the next.
pub fn resume(
    runtime: Arc<dyn ContainerRuntime>,
    forwards: &Forwards,
    owner: &Owner,
    follow: bool,
) -> Vec<tokio::task::JoinHandle<()>> {
    if runtime.journals_output() {
        return Vec::new();
    }
    forwards
        .claim_orphans(owner)
        .into_iter()
        .map(|owed| {
            let (runtime, forwards) = (runtime.clone(), forwards.clone());
            tokio::spawn(resume_one(runtime, forwards, owed, follow))
        })
        .collect()
}
