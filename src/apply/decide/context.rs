//! What one apply's decisions share: what they read from (the
//! declaration, the [`Facts`], the runtime's and the unit manager's
//! reads, the account files), the builds of its containers, and what the
//! plan so far does that the decisions after it read (files it changes,
//! containers it makes or replaces under another name, volumes and
//! networks it cannot make). Each resource kind's decisions take it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::super::facts::Facts;
use super::super::units::UnitReads;
use crate::accounts::{AccountBook, Accounts};
use crate::container_spec::Builds;
use crate::declaration::Declaration;
use crate::runtime::RuntimeView;

/// See the module documentation.
pub(crate) struct Context<'a> {
    pub(super) decl: &'a Declaration,
    pub(super) facts: &'a Facts,
    pub(super) view: &'a dyn RuntimeView,
    /// The unit manager's reads, or why unit resources cannot be applied.
    pub(super) units: Result<&'a dyn UnitReads, &'a str>,
    accounts: &'a dyn AccountBook,
    /// Every container built once, each file read once, as the plan will
    /// have made them.
    pub(super) builds: Builds<'a>,
    /// File resources the plan changes so far: id → path.
    pub(super) changed_files: BTreeMap<String, String>,
    /// Containers the plan replaces under another name (renamed).
    pub(super) consumed: BTreeSet<String>,
    /// Container names the plan makes or makes anew.
    pub(super) replacing: BTreeSet<String>,
    /// Volumes and networks (`volume X`, `network X`) the plan cannot
    /// make, and why.
    pub(super) unusable: BTreeMap<String, String>,
    /// Resources decided `failed` so far: a service depending on one is
    /// not made or started ([`super::super::depends`]).
    pub(super) failed: BTreeSet<String>,
    /// Whether each image is present, asked once.
    images: HashMap<String, bool>,
    /// The account files, read once.
    system_accounts: Option<Result<Accounts, String>>,
}

impl<'a> Context<'a> {
    pub(super) fn new(
        decl: &'a Declaration,
        facts: &'a Facts,
        view: &'a dyn RuntimeView,
        units: Result<&'a dyn UnitReads, &'a str>,
        accounts: &'a dyn AccountBook,
    ) -> Self {
        Context {
            decl,
            facts,
            view,
            units,
            accounts,
            builds: Builds::new(decl),
            changed_files: BTreeMap::new(),
            consumed: BTreeSet::new(),
            replacing: BTreeSet::new(),
            unusable: BTreeMap::new(),
            failed: BTreeSet::new(),
            images: HashMap::new(),
            system_accounts: None,
        }
    }

    /// Whether `image` is present (asked once; a runtime that cannot say
    /// is taken as "no": the pull then says why).
    pub(super) async fn image_present(&mut self, image: &str) -> bool {
        if let Some(present) = self.images.get(image) {
            return *present;
        }
        let present = self.view.image_present(image).await.unwrap_or(false);
        self.images.insert(image.to_string(), present);
        present
    }

    /// The images found present.
    pub(super) fn images_present(&self) -> Vec<String> {
        self.images
            .iter()
            .filter(|(_, present)| **present)
            .map(|(image, _)| image.clone())
            .collect()
    }

    /// The machine's accounts, read once.
    pub(super) fn system_accounts(&mut self) -> Result<&Accounts, String> {
        if self.system_accounts.is_none() {
            self.system_accounts = Some(self.accounts.read());
        }
        match self.system_accounts.as_ref() {
            Some(Ok(accounts)) => Ok(accounts),
            Some(Err(e)) => Err(e.clone()),
            None => Err("the account files were not read".into()),
        }
    }
}

/// A grant whose group cannot write its path, said on the container's
/// line (`unhealthy: ...`); it fails nothing. Judged as the machine is
/// when the apply decides.
pub(super) fn unhealthy_note(c: &crate::declaration::Container) -> Option<String> {
    let unhealthy = crate::container_spec::grants::unhealthy(c);
    (!unhealthy.is_empty()).then(|| format!("unhealthy: {}", unhealthy.join("; ")))
}

/// Why a container using `uses` (`volume X`, `network X`) cannot be made
/// in this apply: one of them could not be made (in `unusable`).
pub(crate) fn unusable_of(unusable: &BTreeMap<String, String>, uses: &[String]) -> Option<String> {
    uses.iter()
        .find_map(|what| unusable.get(what).map(|why| format!("{what}: {why}")))
}

/// Why container `c` cannot be made in this apply: a volume it mounts or
/// a network it joins that failed (in `unusable`).
pub(crate) fn unusable_for(
    unusable: &BTreeMap<String, String>,
    c: &crate::declaration::Container,
) -> Option<String> {
    if unusable.is_empty() {
        return None;
    }
    uses_of(c)
        .into_iter()
        .find_map(|what| unusable.get(&what).map(|why| format!("{what}: {why}")))
}

/// The volumes and networks `c` uses, as `volume X` and `network X`.
pub(crate) fn uses_of(c: &crate::declaration::Container) -> Vec<String> {
    let mut uses: Vec<String> = c
        .mounts
        .iter()
        .filter_map(|m| match &m.source {
            crate::declaration::MountSource::Volume(v) => Some(format!("volume {v}")),
            _ => None,
        })
        .collect();
    uses.extend(c.networks.iter().map(|n| format!("network {}", n.name)));
    if let Some(crate::declaration::Network::Named(n)) = &c.network {
        uses.push(format!("network {n}"));
    }
    uses
}
