//! Networks and volumes, made before every other resource so that any
//! container may join or mount them (CONTRACT "Compose").
//!
//! | found | network | volume |
//! |---|---|---|
//! | missing | `created` | `created` |
//! | as declared | `unchanged` | `unchanged` |
//! | other settings | made again, containers attached again: `recreated` | `failed`, never changed |
//! | other settings, not mesh-host's | `failed`, never changed | `failed` |
//! | no longer declared | `removed`, or `kept` while a container uses it | `kept`, never removed |
//!
//! The store documents [`NETWORKS`] and [`VOLUMES`] record what this state
//! directory made or declared, so that a removal touches only a network it
//! made, and a volume that leaves the declaration is said once.

use std::collections::BTreeMap;

use super::state::NETWORKS;
use super::{Action, Run};
use crate::declaration::{Container, NetworkResource, VolumeResource};
use crate::runtime::{
    NetworkAttach, NetworkInfo, NetworkSpec, VolumeSpec, LABEL_MANAGED, MANAGED_VALUE,
};

/// Store document: the volumes declared, name → id.
pub const VOLUMES: &str = "volumes";
/// Store document: networks being made again, name → the containers to
/// attach again. Written before the first container is detached and
/// removed once every one is attached again, so that an apply killed in
/// between (or a power cut) leaves the next apply the list to finish.
pub const REMAKES: &str = "network-remakes";

type Remakes = BTreeMap<String, Vec<String>>;

type Record = BTreeMap<String, String>;

/// The settings of `live` that differ from `declared`, by name.
fn network_changes(declared: &NetworkResource, live: &NetworkInfo) -> Vec<&'static str> {
    let mut changed = Vec::new();
    if declared.driver != live.driver {
        changed.push("driver");
    }
    if let Some(subnet) = declared.subnet {
        if live.subnet.as_deref() != Some(subnet.to_string().as_str()) {
            changed.push("subnet");
        }
    }
    if let Some(gateway) = declared.gateway {
        if live.gateway.as_deref() != Some(gateway.to_string().as_str()) {
            changed.push("gateway");
        }
    }
    if declared.internal != live.internal {
        changed.push("internal");
    }
    let mut labels = declared.labels.clone();
    labels.insert(LABEL_MANAGED.into(), MANAGED_VALUE.into());
    if labels != live.labels {
        changed.push("labels");
    }
    changed
}

fn network_spec(n: &NetworkResource) -> NetworkSpec {
    NetworkSpec {
        name: n.name.to_string(),
        driver: n.driver.clone(),
        subnet: n.subnet.map(|s| s.to_string()),
        gateway: n.gateway.map(|g| g.to_string()),
        internal: n.internal,
        labels: n.labels.clone(),
    }
}

/// How `c` joins `network` as declared (`None`: it does not).
pub fn attach_of(c: &Container, network: &str) -> Option<NetworkAttach> {
    if let Some(join) = c.networks.iter().find(|j| j.name.as_str() == network) {
        return Some(NetworkAttach {
            network: network.to_owned(),
            aliases: join.aliases.clone(),
            ipv4_address: join.ipv4_address,
        });
    }
    match &c.network {
        Some(crate::declaration::Network::Named(n)) if n.as_str() == network => {
            Some(NetworkAttach {
                network: network.to_owned(),
                ..Default::default()
            })
        }
        _ => None,
    }
}

/// How a container is attached to `network` again: as `declared` joins
/// it, else (a container the declaration no longer joins to it) plainly.
fn attach_again(declared: Option<&Container>, network: &str) -> NetworkAttach {
    declared
        .and_then(|d| attach_of(d, network))
        .unwrap_or_else(|| NetworkAttach {
            network: network.to_owned(),
            ..Default::default()
        })
}

impl Run<'_> {
    fn record(&mut self, doc: &str, id: &str) -> Option<Record> {
        match self.applier.store.load::<Record>(doc) {
            Ok(r) => Some(r.unwrap_or_default()),
            Err(e) => {
                self.push(id, Action::Failed, Some(e.to_string()));
                None
            }
        }
    }

    fn save_record(&mut self, doc: &str, record: &Record) -> Result<(), String> {
        if self.preview {
            return Ok(());
        }
        self.applier
            .store
            .save(doc, record)
            .map_err(|e| format!("cannot record it: {e}"))
    }

    /// Every declared volume, then every declared network: made, compared,
    /// or made again, before any container needs them.
    pub(super) async fn networks_and_volumes(&mut self) {
        let decl = self.decl;
        for (res, volume) in decl.volumes() {
            self.volume(res.id.as_str(), volume).await;
        }
        for (res, network) in decl.networks() {
            self.network(res.id.as_str(), network).await;
        }
    }

    /// Mark `what` (`volume X`, `network X`) unusable by the containers of
    /// this apply, for `reason`, and fail its line.
    fn unusable(&mut self, id: &str, what: String, reason: String) {
        self.unusable.insert(what, reason.clone());
        self.push(id, Action::Failed, Some(reason));
    }

    async fn volume(&mut self, id: &str, volume: &VolumeResource) {
        let name = volume.name.to_string();
        let what = format!("volume {name}");
        let live = match self.runtime().volume(&name).await {
            Ok(live) => live,
            Err(e) => return self.unusable(id, what, crate::runtime::explain(&e)),
        };
        match live {
            Some(live) => {
                let mut differs = Vec::new();
                if live.driver != volume.driver {
                    differs.push(format!(
                        "driver {} (declared {})",
                        live.driver, volume.driver
                    ));
                }
                if live.driver_opts != volume.driver_opts {
                    differs.push(format!(
                        "driver-opts {} (declared {})",
                        serde_json::to_string(&live.driver_opts).unwrap_or_default(),
                        serde_json::to_string(&volume.driver_opts).unwrap_or_default()
                    ));
                }
                if !differs.is_empty() {
                    let reason = format!(
                        "volume {name} exists with {}: mesh-host never changes a volume; \
                         declare it as it is, or move its data and remove it yourself",
                        differs.join(", ")
                    );
                    return self.unusable(id, what, reason);
                }
                self.push(id, Action::Unchanged, None);
            }
            None if self.preview => self.push(id, Action::Created, Some(what)),
            None => {
                let spec = VolumeSpec {
                    name: name.clone(),
                    driver: volume.driver.clone(),
                    driver_opts: volume.driver_opts.clone(),
                    labels: volume.labels.clone(),
                };
                if let Err(e) = self.runtime().create_volume(&spec).await {
                    return self.unusable(id, what, crate::runtime::explain(&e));
                }
                self.push(id, Action::Created, Some(what));
            }
        }
        let Some(mut record) = self.record(VOLUMES, id) else {
            return;
        };
        if record.get(&name).map(String::as_str) != Some(id) {
            record.insert(name, id.to_owned());
            if let Err(e) = self.save_record(VOLUMES, &record) {
                self.warnings.push(format!("volume {}: {e}", volume.name));
            }
        }
    }

    async fn network(&mut self, id: &str, network: &NetworkResource) {
        let name = network.name.to_string();
        let what = format!("network {name}");
        // What an interrupted remake left to attach again.
        let pending = match self.remakes() {
            Ok(mut r) => r.remove(&name),
            Err(e) => return self.unusable(id, what, e),
        };
        let live = match self.runtime().network(&name).await {
            Ok(live) => live,
            Err(e) => return self.unusable(id, what, crate::runtime::explain(&e)),
        };
        let Some(live) = live else {
            if !self.preview {
                if let Err(e) = self.runtime().create_network(&network_spec(network)).await {
                    return self.unusable(id, what, crate::runtime::explain(&e));
                }
            }
            self.made_network(id, &name);
            let reason = match self.finish_remake(network, pending).await {
                Ok(Some(again)) => format!("{what}; {again}"),
                Ok(None) => what.clone(),
                Err(e) => return self.unusable(id, what, e),
            };
            return self.push(id, Action::Created, Some(reason));
        };
        let changes = network_changes(network, &live);
        if changes.is_empty() {
            return match self.finish_remake(network, pending).await {
                Ok(Some(again)) => self.push(id, Action::Updated, Some(again)),
                Ok(None) => self.push(id, Action::Unchanged, None),
                Err(e) => self.unusable(id, what, e),
            };
        }
        let changed = format!("{} changed", changes.join(", "));
        let ours = live.labels.get(LABEL_MANAGED).map(String::as_str) == Some(MANAGED_VALUE);
        if !ours {
            let reason = format!(
                "network {name} exists with other settings ({changed}) and was not made by \
                 mesh-host: it is never changed; remove it, or declare it as it is"
            );
            return self.unusable(id, what, reason);
        }
        let declared: BTreeMap<&str, &Container> = self
            .decl
            .containers()
            .map(|(_, c)| (c.name.as_str(), c))
            .collect();
        let foreign: Vec<&str> = live
            .containers
            .iter()
            .map(String::as_str)
            .filter(|c| !declared.contains_key(c))
            .collect();
        if !foreign.is_empty() {
            let reason = format!(
                "{changed}, but {} the declaration does not own {} attached: it is made again \
                 only once they leave it",
                foreign.join(", "),
                if foreign.len() == 1 { "is" } else { "are" }
            );
            return self.unusable(id, what, reason);
        }
        // Docker lists the running containers on a network; a stopped one
        // keeps it in its own settings all the same: each declared
        // container that joins it is detached and attached again too.
        let mut attached = live.containers.clone();
        if let Ok(listing) = &self.listing {
            for (cname, c) in &declared {
                if attach_of(c, &name).is_some()
                    && listing.contains_key(*cname)
                    && !attached.iter().any(|a| a == cname)
                {
                    attached.push((*cname).to_owned());
                }
            }
        }
        attached.sort();
        let again = if attached.is_empty() {
            String::new()
        } else {
            format!("; attached again: {}", attached.join(", "))
        };
        if self.preview {
            return self.push(id, Action::Recreated, Some(format!("{changed}{again}")));
        }
        if let Err(reason) = self.make_again(network, &attached, &declared).await {
            return self.unusable(id, what, format!("{changed}: {reason}"));
        }
        self.made_network(id, &name);
        self.push(id, Action::Recreated, Some(format!("{changed}{again}")));
    }

    /// Detach every container, remove the network, make it as declared and
    /// attach each container again as it declares.
    async fn make_again(
        &mut self,
        network: &NetworkResource,
        attached: &[String],
        declared: &BTreeMap<&str, &Container>,
    ) -> Result<(), String> {
        let name = network.name.as_str();
        let rt = self.applier.runtime.clone();
        let mut remakes = self.remakes()?;
        remakes.insert(name.to_owned(), attached.to_vec());
        self.applier
            .store
            .save(REMAKES, &remakes)
            .map_err(|e| format!("cannot record the containers to attach again: {e}"))?;
        for c in attached {
            rt.disconnect(c, name)
                .await
                .map_err(|e| crate::runtime::explain(&e))?;
        }
        rt.remove_network(name)
            .await
            .map_err(|e| crate::runtime::explain(&e))?;
        crate::fault::pause("pause-in-network-remake", name).await;
        rt.create_network(&network_spec(network))
            .await
            .map_err(|e| crate::runtime::explain(&e))?;
        let mut failed = Vec::new();
        for c in attached {
            let attach = attach_again(declared.get(c.as_str()).copied(), name);
            if let Err(e) = rt.connect(c, &attach).await {
                failed.push(format!("{c}: {}", crate::runtime::explain(&e)));
            }
        }
        if failed.is_empty() {
            self.remake_done(name)
        } else {
            Err(format!(
                "made again, but not attached again: {}",
                failed.join("; ")
            ))
        }
    }

    /// The remakes recorded as under way.
    fn remakes(&self) -> Result<Remakes, String> {
        self.applier
            .store
            .load::<Remakes>(REMAKES)
            .map(Option::unwrap_or_default)
            .map_err(|e| e.to_string())
    }

    /// The remake of `name` is over: its record goes.
    fn remake_done(&self, name: &str) -> Result<(), String> {
        let mut remakes = self.remakes()?;
        if remakes.remove(name).is_some() {
            self.applier
                .store
                .save(REMAKES, &remakes)
                .map_err(|e| format!("cannot record that the remake ended: {e}"))?;
        }
        Ok(())
    }

    /// Attach again what an interrupted remake of `network` detached (each
    /// container still there, as it declares it), and forget the remake:
    /// what was said, if anything.
    async fn finish_remake(
        &mut self,
        network: &NetworkResource,
        pending: Option<Vec<String>>,
    ) -> Result<Option<String>, String> {
        let Some(pending) = pending else {
            return Ok(None);
        };
        let name = network.name.as_str();
        let again = format!(
            "attached again after an interrupted remake: {}",
            pending.join(", ")
        );
        if self.preview {
            return Ok(Some(again));
        }
        let rt = self.applier.runtime.clone();
        let declared: BTreeMap<&str, &Container> = self
            .decl
            .containers()
            .map(|(_, c)| (c.name.as_str(), c))
            .collect();
        for c in &pending {
            if rt
                .inspect(c)
                .await
                .map_err(|e| crate::runtime::explain(&e))?
                .is_none()
            {
                continue;
            }
            let attach = attach_again(declared.get(c.as_str()).copied(), name);
            rt.connect(c, &attach)
                .await
                .map_err(|e| format!("{c} not attached again: {}", crate::runtime::explain(&e)))?;
        }
        self.remake_done(name)?;
        Ok(Some(again))
    }

    fn made_network(&mut self, id: &str, name: &str) {
        let Some(mut record) = self.record(NETWORKS, id) else {
            return;
        };
        if record.get(name).map(String::as_str) == Some(id) {
            return;
        }
        record.insert(name.to_owned(), id.to_owned());
        if let Err(e) = self.save_record(NETWORKS, &record) {
            self.warnings.push(format!("network {name}: {e}"));
        }
    }

    /// After the containers: remove each network this state directory made
    /// and no longer declares, unless a container still uses it; say once
    /// of each volume no longer declared that it is kept.
    pub(super) async fn remove_networks_and_volumes(&mut self) {
        let declared_networks: Vec<String> = self
            .decl
            .networks()
            .map(|(_, n)| n.name.to_string())
            .collect();
        let declared_volumes: Vec<String> = self
            .decl
            .volumes()
            .map(|(_, v)| v.name.to_string())
            .collect();
        let load = |doc: &str| self.applier.store.load::<Record>(doc);
        let (networks, volumes) = match (load(NETWORKS), load(VOLUMES)) {
            (Ok(n), Ok(v)) => (n.unwrap_or_default(), v.unwrap_or_default()),
            (Err(e), _) | (_, Err(e)) => {
                self.ok = false;
                self.warnings.push(format!(
                    "networks and volumes no longer declared are not looked at: {e}"
                ));
                return;
            }
        };
        let mut kept_networks = networks.clone();
        for (name, id) in networks
            .iter()
            .filter(|(n, _)| !declared_networks.contains(n))
        {
            match self.runtime().network(name).await {
                Ok(None) => {
                    kept_networks.remove(name);
                }
                Ok(Some(live)) if !live.containers.is_empty() => {
                    let reason = format!(
                        "network {name} is no longer declared, but {} still {} it",
                        live.containers.join(", "),
                        if live.containers.len() == 1 {
                            "uses"
                        } else {
                            "use"
                        }
                    );
                    self.push(id, Action::Other("kept".into()), Some(reason));
                }
                Ok(Some(_)) if self.preview => {
                    self.push(id, Action::Removed, Some(format!("network {name}")));
                }
                Ok(Some(_)) => match self.runtime().remove_network(name).await {
                    Ok(()) => {
                        kept_networks.remove(name);
                        self.push(id, Action::Removed, Some(format!("network {name}")));
                    }
                    Err(e) => self.push(id, Action::Failed, Some(crate::runtime::explain(&e))),
                },
                Err(e) => self.push(id, Action::Failed, Some(crate::runtime::explain(&e))),
            }
        }
        if kept_networks != networks {
            if let Err(e) = self.save_record(NETWORKS, &kept_networks) {
                self.warnings.push(format!("networks: {e}"));
            }
        }
        let mut kept_volumes = volumes.clone();
        for (name, id) in volumes
            .iter()
            .filter(|(n, _)| !declared_volumes.contains(n))
        {
            let reason = format!(
                "volume {name} is no longer declared; mesh-host never removes a volume: \
                 `docker volume rm {name}` frees it, and its data"
            );
            self.push(id, Action::Other("kept".into()), Some(reason));
            kept_volumes.remove(name);
        }
        if kept_volumes != volumes {
            if let Err(e) = self.save_record(VOLUMES, &kept_volumes) {
                self.warnings.push(format!("volumes: {e}"));
            }
        }
    }

    /// Why `c` cannot be made in this apply: a volume it mounts or a
    /// network it joins that failed.
    pub(super) fn unusable_for(&self, c: &Container) -> Option<String> {
        if self.unusable.is_empty() {
            return None;
        }
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
        uses.into_iter()
            .find_map(|what| self.unusable.get(&what).map(|why| format!("{what}: {why}")))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn declared(subnet: Option<&str>) -> NetworkResource {
        NetworkResource {
            name: "back".try_into().unwrap(),
            driver: "bridge".into(),
            subnet: subnet.map(|s| s.parse().unwrap()),
            gateway: None,
            internal: false,
            labels: BTreeMap::new(),
        }
    }

    fn live(subnet: &str) -> NetworkInfo {
        NetworkInfo {
            name: "back".into(),
            driver: "bridge".into(),
            subnet: Some(subnet.into()),
            gateway: Some("10.1.0.1".into()),
            internal: false,
            labels: BTreeMap::from([(LABEL_MANAGED.into(), MANAGED_VALUE.into())]),
            containers: Vec::new(),
        }
    }

    #[test]
    fn only_declared_settings_are_compared_and_each_change_is_named() {
        assert!(network_changes(&declared(None), &live("10.1.0.0/24")).is_empty());
        assert!(network_changes(&declared(Some("10.1.0.0/24")), &live("10.1.0.0/24")).is_empty());
        assert_eq!(
            network_changes(&declared(Some("10.2.0.0/24")), &live("10.1.0.0/24")),
            vec!["subnet"]
        );
        let mut labelled = declared(None);
        labelled.labels.insert("tier".into(), "back".into());
        labelled.internal = true;
        assert_eq!(
            network_changes(&labelled, &live("10.1.0.0/24")),
            vec!["internal", "labels"]
        );
    }
}
