//! The fake's volumes: an image may declare `VOLUME` targets, a container
//! gets an anonymous volume at each one nothing else is mounted at, and
//! no removal ever deletes a volume (as mesh-host asks of Docker).

use super::super::{ContainerSpec, RuntimeError, VolumeMount};
use super::{not_found, FakeRuntime, State};

impl FakeRuntime {
    /// `image` declares `VOLUME` at each of `targets`.
    pub fn set_image_volumes(&self, image: &str, targets: &[&str]) {
        self.state().image_volumes.insert(
            image.to_owned(),
            targets.iter().map(|t| t.to_string()).collect(),
        );
    }

    /// Every volume that exists, by name.
    pub fn volumes(&self) -> Vec<String> {
        self.state().volumes.iter().cloned().collect()
    }

    /// The volumes mounted in `name` (empty when there is no such
    /// container).
    pub fn volumes_of(&self, name: &str) -> Vec<VolumeMount> {
        self.state()
            .containers
            .get(name)
            .map(|c| c.volumes.clone())
            .unwrap_or_default()
    }
}

impl State {
    /// The volumes a container of `spec` gets: the volumes it mounts by
    /// name (made if missing), and a fresh anonymous one at each target its
    /// image declares that no mount covers.
    pub(super) fn mount_volumes(&mut self, spec: &ContainerSpec) -> Vec<VolumeMount> {
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
        let declared = self
            .image_volumes
            .get(&spec.image)
            .cloned()
            .unwrap_or_default();
        for target in declared {
            if spec.mounts.iter().any(|m| m.target == target) {
                continue;
            }
            self.next_id += 1;
            mounted.push(VolumeMount {
                name: format!("{:064x}", (0xa_u64 << 60) | self.next_id),
                target,
                read_only: false,
            });
        }
        self.volumes.extend(mounted.iter().map(|v| v.name.clone()));
        mounted
    }

    /// Docker's rename: the container keeps everything but its name.
    pub(super) fn rename(&mut self, name: &str, to: &str) -> Result<(), RuntimeError> {
        if self.containers.contains_key(to) {
            return Err(RuntimeError::Conflict {
                what: format!("container {name}"),
                reason: format!("the name {to} is already in use"),
            });
        }
        let mut container = self
            .containers
            .remove(name)
            .ok_or_else(|| not_found(name))?;
        container.spec.name = to.to_owned();
        self.containers.insert(to.to_owned(), container);
        Ok(())
    }
}
