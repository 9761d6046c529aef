//! The plan: what an apply will do, decided before it does anything.
//!
//! An apply first decides (`decide`), reading only: the one
//! listing of managed containers, the state documents, the window
//! records, the files on disk, what systemd and the account files say.
//! Each resource gets a `Decision`: its report line as decided (the
//! action and its reason, a file's diff) and the `Work` that carries it
//! out, typed by resource kind. `diff` renders the plan and stops; the
//! apply hands it to the executor (`execute`), which carries out
//! each decision's work and reports it with its outcome. Nothing that
//! acts decides again, and nothing that decides acts: there is no
//! "preview" to check, so a new resource kind cannot forget to.
//!
//! `Work::steps` says what a decision does to the machine, one
//! [`StepLine`] per act: what `diff --json` lists and what the apply's
//! report lists with each step's outcome.

use std::sync::Arc;
use std::time::Duration;

use super::records::MadeAccount;
use super::report::{ReportLine, StepLine};
use crate::acl::folders::{FolderAccess, ManagedFolder};
use crate::acl::walk::Wanted;
use crate::container_spec::BuiltContainer;
use crate::declaration::{Directory, File, Identity, Owner, Unit};
use crate::runtime::{NetworkAttach, NetworkSpec, VolumeSpec};
use crate::schedule::kept::KeptStep;
use crate::systemd::unit_files::{UnitDecision, UnitJob};

/// Where a decision belongs in the declaration: a declared resource (its
/// index), or what comes after them all (a removal, by what it removes).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Slot {
    /// The declared resource at this index.
    Declared(usize),
    /// A removal after the declared resources: of this kind (`container`,
    /// `unit`, …), this name.
    Removal(&'static str, String),
}

/// What kind of resource a decision is about (what the ledger records of
/// it once done).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Volume,
    Network,
    Service,
    RunOnce,
    Scheduled,
    File,
    Directory,
    Unit,
    Identity,
    SharedFolder,
    /// A removal of any kind.
    Removal,
}

/// One resource's decision.
#[derive(Debug)]
pub(crate) struct Decision {
    pub(crate) slot: Slot,
    pub(crate) kind: Kind,
    /// Its line as decided (no outcomes), with the steps `Work::steps`
    /// says.
    pub(crate) line: ReportLine,
    /// A `failed` line that does not fail the apply (a scheduled step
    /// that cannot be installed: CONTRACT "Apply").
    pub(crate) harmless: bool,
    /// What is said after whatever the line ends up saying: a grant whose
    /// group cannot write its path (`unhealthy: …`).
    pub(crate) note: Option<String>,
    /// What the plan says of a file's content in place of its diff (a
    /// secret file's sizes): said by `diff`, not by the apply's report.
    pub(crate) shown: Option<String>,
    /// Decided again after the machine changed under the plan (`after
    /// run-once step migrate`): said on its line.
    pub(crate) after: Option<String>,
    /// What carries it out.
    pub(crate) work: Work,
}

impl Decision {
    /// A decision of `line` carried out by `work`; its steps said.
    pub(crate) fn new(slot: Slot, kind: Kind, mut line: ReportLine, work: Work) -> Self {
        line.steps = work.steps();
        Decision {
            slot,
            kind,
            line,
            harmless: false,
            note: None,
            shown: None,
            after: None,
            work,
        }
    }
}

/// Something an interrupted create or replace left, removed after the
/// declared resources; no resource's line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tidy {
    /// A container left under its making name.
    Making { name: String, made_as: String },
    /// A container set aside by a replace whose new container exists; its
    /// volumes the new one does not mount (a note, if any).
    SetAside {
        name: String,
        base: String,
        unused: Option<String>,
    },
}

impl Tidy {
    /// Its step, as the report says it.
    pub(crate) fn step(&self) -> StepLine {
        match self {
            Tidy::Making { name, made_as } => StepLine::new("remove", format!("container {name}"))
                .because(format!("left by an interrupted create of {made_as}")),
            Tidy::SetAside { name, base, unused } => {
                let mut why = format!("left by an interrupted replace of {base}");
                if let Some(note) = unused {
                    why.push_str(&format!("; {note}"));
                }
                StepLine::new("remove", format!("container {name}")).because(why)
            }
        }
    }
}

/// The whole plan.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Volumes and networks first, then the declared resources in order,
    /// then the removals.
    pub(crate) decisions: Vec<Decision>,
    /// Leftovers removed with the removals.
    pub(crate) tidy: Vec<Tidy>,
    /// Worth saying, failing nothing (unless `failed_before`).
    pub(crate) warnings: Vec<String>,
    /// A warning that fails the apply was said (a state document of
    /// removals that cannot be read).
    pub(crate) failed_before: bool,
    /// Networks this state made that are gone: dropped from its record.
    pub(crate) networks_gone: Vec<String>,
    /// Containers recorded as read from that are gone and not declared:
    /// their records dropped.
    pub(crate) inputs_gone: Vec<String>,
}

impl Plan {
    /// The plan as `diff` shows it: each decision's line (the steps it
    /// takes, no outcomes), the leftovers it tidies, what it warns of, the
    /// windows open. The apply's report has the same shape, with outcomes.
    pub(crate) fn into_report(
        self,
        started_at: chrono::DateTime<chrono::Utc>,
        windows: Vec<super::report::WindowLine>,
    ) -> super::report::ApplyReport {
        use super::report::Action;
        let mut ok = !self.failed_before;
        let lines: Vec<ReportLine> = self
            .decisions
            .into_iter()
            .map(|d| {
                let mut line = d.line;
                if (line.action == Action::Failed && !d.harmless)
                    || line.action == Action::Other("refused".into())
                {
                    ok = false;
                }
                for note in d.shown.into_iter().chain(d.note) {
                    line.reason = Some(match line.reason.take() {
                        Some(reason) => format!("{reason}; {note}"),
                        None => note,
                    });
                }
                line
            })
            .collect();
        super::report::ApplyReport {
            ok,
            changed: lines.iter().any(ReportLine::changes_something),
            started_at,
            finished_at: chrono::Utc::now(),
            lines,
            unchanged_unlisted: 0,
            windows,
            halted: None,
            error: None,
            warnings: self.warnings,
            tidy: self.tidy.iter().map(Tidy::step).collect(),
            steps: Vec::new(),
            complete: true,
        }
    }
}

/// How a service container is brought to what it is declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ServiceAct {
    /// No container by its name: make it, in place of the one under its
    /// former name (`renamed`) or the one an interrupted recreate set
    /// aside (`leftover`), carrying its volumes.
    Create {
        renamed: Option<String>,
        leftover: Option<String>,
    },
    /// Its container is something else: replace it, for `reason`.
    Replace { reason: String },
    /// As declared but not running: start it (`restart_on`: a file it
    /// restarts on changed too).
    Start { restart_on: Option<String> },
    /// As declared and running, and a file it restarts on changed.
    Restart { path: String },
    /// As declared and running: nothing to do (what it reads is recorded
    /// if the record was lost).
    Keep,
    /// A replacement gated on health that a kill interrupted: the new
    /// container under its name, the old one set aside. The new one is
    /// judged with what is left of its bound; kept, or the old one put
    /// back. `then`: the declaration asks for another definition since,
    /// so what stands once it is settled is replaced, for that reason
    /// (never before: the old one set aside is the good one until then).
    Resume {
        rollout: crate::apply::rollouts::Rollout,
        then: Option<String>,
    },
    /// A roll back that a kill interrupted: the definition was refused and
    /// the old one is set aside (`aside`): the refused one still under the
    /// name, if any (`remove_new`), is removed (its volumes stay), and the
    /// old one put back and started; `then`, as for `Resume`.
    PutBack {
        aside: String,
        remove_new: bool,
        then: Option<String>,
    },
}

/// A service container's work.
#[derive(Debug)]
pub(crate) struct ServiceWork {
    pub(crate) id: String,
    /// Its container's name.
    pub(crate) name: String,
    pub(crate) built: Arc<BuiltContainer>,
    /// The image, when it is not present (pulled first).
    pub(crate) pull: Option<String>,
    /// Its `depends-on` with `condition: healthy`, waited for before it
    /// is made or started: (dependency id, container name).
    pub(crate) healthy_first: Vec<(String, String)>,
    /// Volumes and networks it uses: it is not made when one of them
    /// could not be made.
    pub(crate) uses: Vec<String>,
    pub(crate) act: ServiceAct,
    /// A replacement of it is gated on its health, bounded by this past
    /// the check's start period; `None`: it has no check (`"health":
    /// "none"`), so it is replaced as it always was.
    pub(crate) rollback_after: Option<Duration>,
    /// Its health check is declared (else the image's, if any, gates it).
    pub(crate) health_declared: bool,
    /// A refusal of an earlier definition of it is recorded and the
    /// declaration no longer asks for that one: forgotten.
    pub(crate) forget_refused: bool,
    /// A record of a replacement of it is left with nothing set aside
    /// (a kill before the old one was stopped): forgotten.
    pub(crate) forget_rollout: bool,
}

impl ServiceWork {
    /// Whether carrying it out makes its container in place of another
    /// and judges it on its health first.
    pub(crate) fn gated(&self) -> bool {
        self.rollback_after.is_some()
            && matches!(
                self.act,
                ServiceAct::Replace { .. }
                    | ServiceAct::Create {
                        renamed: None,
                        leftover: Some(_)
                    }
                    | ServiceAct::Resume { .. }
                    | ServiceAct::PutBack { then: Some(_), .. }
            )
    }

    /// Its `rollback-after` when carrying it out is gated: on its declared
    /// check, or on its image's own check if the image declares one (the
    /// plan does not read images: the new container's inspection says).
    pub(crate) fn gate(&self) -> Option<Duration> {
        self.rollback_after.filter(|_| self.gated())
    }

    /// What its reason says of its gate, when the check is declared:
    /// `health-gated, rollback-after 90 s`. (One its image's check may
    /// gate is said by its `wait-healthy` step alone, every recreate of a
    /// service without a declared check being one.)
    pub(crate) fn gate_said(&self) -> Option<String> {
        let after = self.gate()?.as_secs();
        self.health_declared
            .then(|| format!("health-gated, rollback-after {after} s"))
    }

    /// The plan's step that waits for it to be healthy, when it is gated.
    pub(crate) fn gate_step(&self) -> Option<StepLine> {
        let after = self.gate()?;
        let check = if self.health_declared {
            "its check"
        } else {
            "its image's check, if the image declares one"
        };
        let why = format!(
            "health-gated on {check}: the previous container is put back if this one is not healthy \
             within {} s past its start period",
            after.as_secs()
        );
        Some(StepLine::new("wait-healthy", format!("container {}", self.name)).because(why))
    }
}

impl ServiceWork {
    /// Whether carrying it out makes or starts the container.
    pub(crate) fn starts(&self) -> bool {
        !matches!(self.act, ServiceAct::Keep)
    }
}

/// A run-once step's run.
#[derive(Debug)]
pub(crate) struct RunOnceWork {
    pub(crate) name: String,
    pub(crate) built: Arc<BuiltContainer>,
    /// The step's module (`MESH_MODULE` of its output), if any.
    pub(crate) module: Option<String>,
    pub(crate) pull: Option<String>,
    /// The last run's container (or one an interrupted replace set
    /// aside), whose volumes the run carries.
    pub(crate) from: Option<String>,
    pub(crate) timeout: Option<Duration>,
    /// Its `healthy` dependencies (id, container name), waited for before
    /// it runs.
    pub(crate) healthy_first: Vec<(String, String)>,
}

/// A scheduled step handed to the scheduler.
#[derive(Debug)]
pub(crate) struct ScheduleWork {
    pub(crate) step: Box<KeptStep>,
    /// Its image, when it is not present.
    pub(crate) pull: Option<String>,
    /// It is new or declared otherwise than last installed.
    pub(crate) installs: bool,
    /// Declared as the last apply installed it.
    pub(crate) alike: bool,
}

/// How a file is brought to what it is declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileAct {
    /// Written whole (a new file, new content, or a file with other hard
    /// links whose mode or owner changes), owned by `owner` (the declared
    /// owner, else the old file's; none: whoever applies).
    Write { owner: Option<Owner> },
    /// Its mode and owner set in place.
    Fix,
}

/// A file's work.
#[derive(Debug)]
pub(crate) struct FileWork {
    pub(crate) file: File,
    pub(crate) act: FileAct,
}

/// How a directory is brought to what it is declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DirectoryAct {
    Make,
    Fix,
}

/// A directory's work.
#[derive(Debug)]
pub(crate) struct DirectoryWork {
    pub(crate) dir: Directory,
    pub(crate) act: DirectoryAct,
}

/// A unit's work: what was decided of its file, enablement and state.
#[derive(Debug)]
pub(crate) struct UnitWork {
    pub(crate) id: String,
    pub(crate) unit: Unit,
    pub(crate) decision: UnitDecision,
}

/// A shared folder's work.
#[derive(Debug)]
pub(crate) struct FolderWork {
    pub(crate) id: String,
    pub(crate) path: String,
    /// It is missing: made (0700, root's) first.
    pub(crate) make: bool,
    /// The host keeps it already (what its sweep changes was narrowed
    /// since, and is logged as restored).
    pub(crate) kept: bool,
    /// Entries of these uids taken away first.
    pub(crate) take_away: Vec<u32>,
    /// The entries set where missing, when some are.
    pub(crate) set: Option<Wanted>,
    /// What is recorded of it once done.
    pub(crate) access: Vec<FolderAccess>,
    pub(crate) module: Option<String>,
    /// What the grants set and taken say (the line's first words).
    pub(crate) grants: Option<String>,
    /// What the count of the entries to set said (the line's last words,
    /// when no entries are set).
    pub(crate) counted: Vec<String>,
}

/// A network's work.
#[derive(Debug)]
pub(crate) enum NetworkWork {
    /// Missing: made, and what an interrupted remake detached attached
    /// again.
    Make {
        spec: NetworkSpec,
        again: Vec<(String, NetworkAttach)>,
    },
    /// As declared, but an interrupted remake left these to attach again.
    AttachAgain { again: Vec<(String, NetworkAttach)> },
    /// Made again with other settings, its containers detached and
    /// attached again (recorded first, for a resumed apply).
    Remake {
        spec: NetworkSpec,
        attached: Vec<(String, NetworkAttach)>,
    },
}

/// What carries a decision out.
#[derive(Debug)]
pub(crate) enum Work {
    /// Nothing to do on the machine: the line says it all.
    Nothing,
    /// A run-once step that cannot run: the apply halts here.
    Halt,
    Volume(VolumeSpec),
    Network(NetworkWork),
    Service(Box<ServiceWork>),
    RunOnce(Box<RunOnceWork>),
    Schedule(ScheduleWork),
    File(FileWork),
    Directory(DirectoryWork),
    Unit(Box<UnitWork>),
    Identity(Identity),
    Folder(Box<FolderWork>),
    /// A managed container no longer declared (`stopped_only`: one set
    /// aside, removed only if it does not run), its volumes kept.
    RemoveContainer {
        name: String,
        stopped_only: bool,
    },
    RemoveUnit(String),
    RemoveAccount {
        name: String,
        made: MadeAccount,
    },
    RemoveFolder {
        id: String,
        folder: ManagedFolder,
    },
    RemoveNetwork(String),
    /// A volume no longer declared: kept, and forgotten by the record.
    ForgetVolume(String),
    /// A declared volume as declared that the record does not name yet.
    RecordVolume(String),
}

impl Work {
    /// What it does to the machine, one step per act, in order.
    pub(crate) fn steps(&self) -> Vec<StepLine> {
        let container = |name: &str| format!("container {name}");
        match self {
            Work::Nothing | Work::Halt | Work::ForgetVolume(_) | Work::RecordVolume(_) => {
                Vec::new()
            }
            Work::Volume(spec) => vec![StepLine::new("make", format!("volume {}", spec.name))],
            Work::Network(n) => network_steps(n),
            Work::Service(s) => {
                let mut steps = Vec::new();
                if s.starts() {
                    for (_, dep) in &s.healthy_first {
                        steps.push(StepLine::new("wait-healthy", container(dep)));
                    }
                }
                if let Some(image) = &s.pull {
                    steps.push(StepLine::new("pull", format!("image {image}")));
                }
                let name = &s.name;
                match &s.act {
                    ServiceAct::Create {
                        renamed: Some(old),
                        leftover: None,
                    } => steps.push(
                        StepLine::new("replace", container(old))
                            .because(format!("made anew as {name}")),
                    ),
                    ServiceAct::Create { renamed, leftover } => {
                        let mut create = StepLine::new("create", container(name));
                        if let Some(aside) = leftover {
                            create = create.because(format!("carrying the volumes of {aside}"));
                        }
                        steps.push(create);
                        if let Some(old) = renamed {
                            steps.push(StepLine::new("remove", container(old)));
                        }
                    }
                    ServiceAct::Replace { .. } => {
                        steps.push(StepLine::new("replace", container(name)))
                    }
                    ServiceAct::Resume { then, .. } => {
                        if then.is_some() {
                            steps.push(StepLine::new("replace", container(name)).because(
                                "once the interrupted recreate is settled (kept, or put back)",
                            ));
                        }
                    }
                    ServiceAct::PutBack {
                        aside,
                        remove_new,
                        then,
                    } => {
                        if *remove_new {
                            steps.push(
                                StepLine::new("remove", container(name))
                                    .because("its definition was refused by a roll back"),
                            );
                        }
                        steps.push(
                            StepLine::new("put-back", container(aside))
                                .because(format!("a roll back of {name} was interrupted")),
                        );
                        if then.is_some() {
                            steps.push(StepLine::new("replace", container(name)));
                        }
                    }
                    ServiceAct::Start { .. } => steps.push(StepLine::new("start", container(name))),
                    ServiceAct::Restart { .. } => {
                        steps.push(StepLine::new("restart", container(name)))
                    }
                    ServiceAct::Keep => {}
                }
                steps.extend(s.gate_step());
                steps
            }
            Work::RunOnce(r) => {
                let mut steps = Vec::new();
                if let Some(image) = &r.pull {
                    steps.push(StepLine::new("pull", format!("image {image}")));
                }
                steps.push(StepLine::new("run", container(&r.name)));
                steps
            }
            Work::Schedule(s) => {
                let mut steps = Vec::new();
                if let Some(image) = &s.pull {
                    steps.push(StepLine::new("pull", format!("image {image}")));
                }
                if s.installs || s.pull.is_some() {
                    steps.push(StepLine::new(
                        "install",
                        format!("schedule {}", s.step.id()),
                    ));
                }
                steps
            }
            Work::File(f) => {
                let act = match f.act {
                    FileAct::Write { .. } => "write",
                    FileAct::Fix => "set-mode-owner",
                };
                vec![StepLine::new(act, format!("file {}", f.file.path))]
            }
            Work::Directory(d) => {
                let act = match d.act {
                    DirectoryAct::Make => "make",
                    DirectoryAct::Fix => "set-mode-owner",
                };
                vec![StepLine::new(act, format!("directory {}", d.dir.path))]
            }
            Work::Unit(u) => unit_steps(u),
            Work::Identity(i) => vec![StepLine::new("add", format!("account {}", i.name))],
            Work::Folder(f) => {
                let folder = format!("folder {}", f.path);
                let mut steps = Vec::new();
                if f.make {
                    steps.push(StepLine::new("make", folder.clone()));
                }
                if !f.take_away.is_empty() {
                    steps.push(StepLine::new(
                        "take-entries",
                        format!("{folder} (uid {:?})", f.take_away),
                    ));
                }
                if f.set.is_some() {
                    steps.push(StepLine::new("set-entries", folder));
                }
                steps
            }
            Work::RemoveContainer { name, .. } => vec![StepLine::new("remove", container(name))],
            Work::RemoveUnit(name) => vec![StepLine::new("remove", format!("unit {name}"))],
            Work::RemoveAccount { name, .. } => {
                vec![StepLine::new("remove", format!("account {name}"))]
            }
            Work::RemoveFolder { folder, .. } => vec![StepLine::new(
                "take-entries",
                format!("folder {}", folder.path),
            )],
            Work::RemoveNetwork(name) => vec![StepLine::new("remove", format!("network {name}"))],
        }
    }
}

fn network_steps(n: &NetworkWork) -> Vec<StepLine> {
    let attach = |again: &[(String, NetworkAttach)], network: &str| {
        again
            .iter()
            .map(|(c, _)| StepLine::new("attach", format!("container {c} to network {network}")))
            .collect::<Vec<_>>()
    };
    match n {
        NetworkWork::Make { spec, again } => {
            let mut steps = vec![StepLine::new("make", format!("network {}", spec.name))];
            steps.extend(attach(again, &spec.name));
            steps
        }
        NetworkWork::AttachAgain { again } => {
            let network = again
                .first()
                .map(|(_, a)| a.network.clone())
                .unwrap_or_default();
            attach(again, &network)
        }
        NetworkWork::Remake { spec, attached } => {
            let mut steps = vec![StepLine::new("remake", format!("network {}", spec.name))];
            steps.extend(attach(attached, &spec.name));
            steps
        }
    }
}

fn unit_steps(u: &UnitWork) -> Vec<StepLine> {
    let unit = format!("unit {}", u.unit.name);
    let d = &u.decision;
    let mut steps = Vec::new();
    if d.file != crate::systemd::unit_files::FileChange::Unchanged {
        steps.push(StepLine::new("write", format!("unit file {}", u.unit.name)));
    } else if d.fix_mode {
        steps.push(StepLine::new(
            "set-mode",
            format!("unit file {}", u.unit.name),
        ));
    }
    match d.enable {
        Some(true) => steps.push(StepLine::new("enable", unit.clone())),
        Some(false) => steps.push(StepLine::new("disable", unit.clone())),
        None => {}
    }
    if let Some(job) = d.job {
        let act = match job {
            UnitJob::Start => "start",
            UnitJob::Restart => "restart",
            UnitJob::Stop => "stop",
        };
        steps.push(StepLine::new(act, unit));
    }
    steps
}
