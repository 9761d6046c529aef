//! The fake's volumes: an image may declare `VOLUME` targets, a container
//! gets an anonymous volume at each one nothing else is mounted at, named
//! volumes are made by hand or by a mount, and none is ever deleted (as
//! mesh-host asks of Docker).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::super::{ContainerSpec, VolumeInfo, VolumeMount, VolumeSpec};

/// Every volume that exists, and what images declare.
#[derive(Debug, Default)]
pub(super) struct Volumes {
    /// Every volume that exists (none is ever deleted).
    pub(super) all: BTreeSet<String>,
    /// What each volume made by `create_volume` (or seeded) was made with.
    info: BTreeMap<String, VolumeInfo>,
    /// Per image, the targets it declares `VOLUME` at.
    pub(super) image_volumes: HashMap<String, Vec<String>>,
}

impl Volumes {
    /// The volumes a container of `spec` gets: the volumes it mounts by
    /// name (made if missing), and a fresh anonymous one at each target its
    /// image declares that no mount covers (named from `next_id`).
    pub(super) fn mount(&mut self, spec: &ContainerSpec, next_id: &mut u64) -> Vec<VolumeMount> {
        let mut mounted: Vec<VolumeMount> = spec
            .mounts
            .iter()
            .filter(|m| !m.is_bind())
            .map(|m| VolumeMount {
                name: m.source.clone(),
                target: m.target.clone(),
                read_only: m.read_only,
            })
            .collect();
        let mut declared = self
            .image_volumes
            .get(&spec.image)
            .cloned()
            .unwrap_or_default();
        declared.extend(spec.anonymous_volumes.iter().cloned());
        for target in declared {
            if spec.mounts.iter().any(|m| m.target == target)
                || mounted.iter().any(|v| v.target == target)
            {
                continue;
            }
            *next_id += 1;
            mounted.push(VolumeMount {
                name: format!("{:064x}", (0xa_u64 << 60) | *next_id),
                target,
                read_only: false,
            });
        }
        self.all.extend(mounted.iter().map(|v| v.name.clone()));
        mounted
    }

    /// A volume made outside mesh-host, with what it was made with.
    pub(super) fn add(&mut self, info: VolumeInfo) {
        self.all.insert(info.name.clone());
        self.info.insert(info.name.clone(), info);
    }

    /// The volume `name` as the runtime reports it.
    pub(super) fn get(&self, name: &str) -> Option<VolumeInfo> {
        match self.info.get(name) {
            Some(info) => Some(info.clone()),
            // Made by a mount: the runtime's defaults.
            None if self.all.contains(name) => Some(VolumeInfo {
                name: name.to_owned(),
                driver: "local".into(),
                ..Default::default()
            }),
            None => None,
        }
    }

    /// Make a named volume; one that exists is left as it is.
    pub(super) fn create(&mut self, spec: &VolumeSpec) {
        if self.all.insert(spec.name.clone()) {
            self.info.insert(
                spec.name.clone(),
                VolumeInfo {
                    name: spec.name.clone(),
                    driver: spec.driver.clone(),
                    driver_opts: spec.driver_opts.clone(),
                    labels: spec.labels.clone(),
                },
            );
        }
    }
}
