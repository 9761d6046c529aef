//! The walk of one apply's decisions, in the order the apply carries
//! them out: volumes, then networks (any container may join or mount
//! them), then the declared resources in declaration order, then the
//! removals. Each kind's decisions are in a file of their own; this is
//! the order, and the plan it makes.

use std::collections::BTreeMap;

use super::super::facts::Facts;
use super::super::plan::{Plan, Slot};
use super::super::report::Action;
use super::super::units::UnitReads;
use super::context::{unhealthy_note, Context};
use super::{files, folders, identities, networks, removals, services, steps, units, volumes};
use crate::accounts::AccountBook;
use crate::declaration::{Declaration, ResourceKind, Role};
use crate::runtime::RuntimeView;

/// Decides an apply; see the module documentation.
pub(crate) struct Decider<'a> {
    cx: Context<'a>,
}

impl<'a> Decider<'a> {
    /// A decider of `decl` from `facts` and these reads.
    pub(crate) fn new(
        decl: &'a Declaration,
        facts: &'a Facts,
        view: &'a dyn RuntimeView,
        units: Result<&'a dyn UnitReads, &'a str>,
        accounts: &'a dyn AccountBook,
    ) -> Self {
        Decider {
            cx: Context::new(decl, facts, view, units, accounts),
        }
    }

    /// The same, knowing that these file resources changed in this apply
    /// already (what `restart-on` reads).
    pub(crate) fn with_changed_files(mut self, changed: BTreeMap<String, String>) -> Self {
        self.cx.changed_files = changed;
        self
    }

    /// The whole plan, and the images it found present (the executor
    /// need not ask again).
    pub(crate) async fn plan(mut self) -> (Plan, Vec<String>) {
        let mut plan = Plan::default();
        let decl = self.cx.decl;
        let cx = &mut self.cx;
        for (index, res) in decl.resources.iter().enumerate() {
            if let ResourceKind::Volume(v) = &res.kind {
                let decision = volumes::volume(cx, Slot::Declared(index), res, v).await;
                plan.decisions.push(decision);
            }
        }
        for (index, res) in decl.resources.iter().enumerate() {
            if let ResourceKind::Network(n) = &res.kind {
                let decision = networks::network(cx, Slot::Declared(index), res, n).await;
                plan.decisions.push(decision);
            }
        }
        declared_from(cx, 0, &mut plan).await;
        removals::removals(cx, &mut plan).await;
        cx.builds.release();
        (plan, cx.images_present())
    }

    /// The plan from the declared resource after `index` on (its
    /// volumes and networks were made already): the declared resources
    /// after it, then the removals. Decided again after a run-once step
    /// ran, on what the machine is then; `unusable`: the volumes and
    /// networks the apply could not make.
    pub(crate) async fn tail(mut self, index: usize, unusable: BTreeMap<String, String>) -> Plan {
        let cx = &mut self.cx;
        cx.unusable = unusable;
        let mut plan = Plan::default();
        declared_from(cx, index + 1, &mut plan).await;
        removals::removals(cx, &mut plan).await;
        cx.builds.release();
        plan
    }
}

/// The declared resources from `start` on, in order (volumes and networks
/// are decided first, on their own).
async fn declared_from(cx: &mut Context<'_>, start: usize, plan: &mut Plan) {
    let decl = cx.decl;
    for (index, res) in decl.resources.iter().enumerate().skip(start) {
        let slot = Slot::Declared(index);
        let id = res.id.as_str();
        let decision = match &res.kind {
            ResourceKind::Volume(_) | ResourceKind::Network(_) => continue,
            ResourceKind::File(file) => files::file(cx, slot, id, file),
            ResourceKind::Directory(dir) => files::directory(cx, slot, id, dir),
            ResourceKind::Container(c) => {
                let mut decision = match &c.role {
                    Role::Service => {
                        let decision = services::service(cx, slot, res, c).await;
                        super::super::depends::after_failed(&cx.failed, decl, c, decision)
                    }
                    Role::RunOnce => {
                        let decision = steps::run_once(cx, slot, res, c).await;
                        super::super::depends::after_failed(&cx.failed, decl, c, decision)
                    }
                    Role::Scheduled(_) => steps::scheduled(cx, slot, res, c).await,
                };
                decision.note = unhealthy_note(c);
                decision
            }
            ResourceKind::Unit(unit) => units::unit(cx, slot, id, unit).await,
            ResourceKind::Identity(identity) => identities::identity(cx, slot, id, identity),
            ResourceKind::SharedFolder(folder) => {
                folders::shared_folder(cx, slot, res, folder).await
            }
        };
        if decision.line.action == Action::Failed {
            cx.failed.insert(id.to_string());
        }
        plan.decisions.push(decision);
    }
}
