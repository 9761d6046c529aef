//! Replacing a container without losing its volumes.
//!
//! mesh-host never deletes a volume (CONTRACT, "Apply"). A container whose
//! image declares `VOLUME` gets an anonymous volume there from the
//! runtime; the container made in its place (a recreate, a step's next
//! fire, a run-once step's next run) is given the old one's anonymous
//! volumes at the same targets, as `docker compose up` does, unless its
//! declaration now mounts something else there.
//!
//! Set aside, made, then removed. The old container is stopped, renamed to
//! [`replaced_name`] (`<name>.replaced`), the new one created with its
//! volumes, and only then the old one removed. At every instant a
//! container names the volumes: a process killed (or a node losing power)
//! after the rename leaves `<name>.replaced`, which the next create of
//! that name carries the volumes from. That is preferred over recording
//! the volumes in the state directory: steps are replaced by the
//! scheduler, which keeps no record per container; what the runtime holds
//! cannot disagree with itself after a crash, where a record written
//! before a removal could; and an operator sees the container in
//! `docker ps -a`. It is the pattern of the making name
//! ([`super::making_name`]): a recognisable name, never started, removed
//! once what it stands for is done.

use std::path::{Component, Path};

use super::{ContainerInfo, ContainerRuntime, ContainerSpec, MountSpec, RuntimeError, VolumeMount};
use super::{LABEL_MANAGED, LABEL_RESOURCE, MANAGED_VALUE};

/// What a container set aside for its replacement is renamed with.
const REPLACED_SUFFIX: &str = ".replaced";

/// The name a container is set aside under while the one replacing `name`
/// is made.
pub fn replaced_name(name: &str) -> String {
    format!("{name}{REPLACED_SUFFIX}")
}

/// The name a container set aside under `name` was replaced for, if
/// `name` is such a name.
pub fn replaced_base(name: &str) -> Option<&str> {
    name.strip_suffix(REPLACED_SUFFIX).filter(|b| !b.is_empty())
}

/// Whether a volume name is one the runtime made up for an anonymous
/// volume: 64 lowercase hex digits (Docker and Podman alike). Docker 20.10
/// does not otherwise tell an anonymous volume from a named one.
pub fn is_anonymous_volume(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A mount target as the runtime compares it: `/data/`, `//data` and
/// `/data/.` are `/data`.
fn clean(target: &str) -> Vec<String> {
    Path::new(target)
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p.to_string_lossy().into_owned()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect()
}

/// The volumes of an old container its replacement carries: the anonymous
/// ones, at their targets, unless `mounts` (the new declaration) mounts
/// something at that target or names that volume.
pub fn carried_volumes(old: &[VolumeMount], mounts: &[MountSpec]) -> Vec<MountSpec> {
    let declared: Vec<Vec<String>> = mounts.iter().map(|m| clean(&m.target)).collect();
    let mut carried: Vec<MountSpec> = Vec::new();
    for volume in old {
        let target = clean(&volume.target);
        if !is_anonymous_volume(&volume.name)
            || declared.contains(&target)
            || mounts.iter().any(|m| m.source == volume.name)
            || carried.iter().any(|c| clean(&c.target) == target)
        {
            continue;
        }
        carried.push(MountSpec {
            source: volume.name.clone(),
            target: volume.target.clone(),
            read_only: volume.read_only,
        });
    }
    carried
}

/// A report's note on volumes a removed container leaves, none of them
/// deleted: `kept volume NAME (/data): docker volume rm to free it`.
pub fn kept_volumes_note(kept: &[VolumeMount]) -> Option<String> {
    let listed: Vec<String> = kept
        .iter()
        .map(|v| format!("{} ({})", v.name, v.target))
        .collect();
    match listed.len() {
        0 => None,
        1 => Some(format!(
            "kept volume {}: docker volume rm to free it",
            listed[0]
        )),
        _ => Some(format!(
            "kept volumes {}: docker volume rm to free them",
            listed.join(", ")
        )),
    }
}

/// What [`replace`] did with the old container's volumes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replaced {
    /// Given to the new container at their targets.
    pub carried: Vec<VolumeMount>,
    /// Volumes the old container had that the new one mounts nowhere: kept,
    /// unused.
    pub kept: Vec<VolumeMount>,
}

fn is_managed(info: &ContainerInfo) -> bool {
    info.labels.get(LABEL_MANAGED).map(String::as_str) == Some(MANAGED_VALUE)
}

/// Creates (does not start) `spec`'s container in place of `old`,
/// inspected just before: the container under `spec.name` (or under
/// another name, or a container an interrupted replace left under
/// [`replaced_name`]). A running `old` is stopped first (its own stop
/// grace): two containers must never run on one volume.
///
/// On failure nothing is lost: before the create, `old` stays under its
/// name (started again if this stopped it); a create that fails puts it
/// back the same way, or, if that fails too, leaves it set aside under
/// [`replaced_name`], where the next create of `spec.name` finds it.
pub async fn replace(
    rt: &dyn ContainerRuntime,
    spec: &ContainerSpec,
    old: &ContainerInfo,
) -> Result<Replaced, String> {
    let replaced = replace_keeping_aside(rt, spec, old).await?;
    remove_replaced(rt, &spec.name).await;
    Ok(replaced)
}

/// [`replace`], but the old container is left set aside under
/// [`replaced_name`] (stopped): a replacement gated on its health removes
/// it with [`remove_replaced`] once the new one is healthy, or puts it back
/// with [`put_back`].
pub async fn replace_keeping_aside(
    rt: &dyn ContainerRuntime,
    spec: &ContainerSpec,
    old: &ContainerInfo,
) -> Result<Replaced, String> {
    let name = &spec.name;
    let aside = replaced_name(name);
    let stopped = old.running;
    if old.running {
        if let Err(e) = rt.stop(&old.name).await {
            tracing::warn!("cannot stop {}: {e}; killing it", old.name);
            rt.kill(&old.name)
                .await
                .map_err(|e| format!("cannot stop {}: {e}", old.name))?;
        }
    }
    if old.name != aside {
        if let Err(e) = set_aside(rt, old, &aside).await {
            restart(rt, &old.name, stopped).await;
            return Err(e);
        }
    }
    crate::fault::pause("pause-before-replacing", name).await;
    let carried = carried_volumes(&old.volumes, &spec.mounts);
    let mut with = spec.clone();
    with.mounts.extend(carried.iter().cloned());
    if let Err(e) = rt.create(&with).await {
        let why = match e {
            RuntimeError::Conflict { .. } => format!(
                "a container named {name} exists that mesh-host does not manage (no \
                 mesh-host.managed label): it is left alone; rename or remove it"
            ),
            other => format!("cannot create {name}: {other}"),
        };
        if old.name == aside {
            return Err(why);
        }
        return match rt.rename(&aside, &old.name).await {
            Ok(()) => {
                restart(rt, &old.name, stopped).await;
                Err(why)
            }
            Err(back) => Err(format!(
                "{why}; the container it replaces is left as {aside} ({back}), whose \
                 volumes the next create carries"
            )),
        };
    }
    let carried: Vec<VolumeMount> = carried
        .into_iter()
        .map(|m| VolumeMount {
            name: m.source,
            target: m.target,
            read_only: m.read_only,
        })
        .collect();
    let kept = old
        .volumes
        .iter()
        .filter(|v| {
            !carried.iter().any(|c| c.name == v.name)
                && !spec.mounts.iter().any(|m| m.source == v.name)
        })
        .cloned()
        .collect();
    if !carried.is_empty() {
        tracing::info!(
            "container {name} carries {} from the container it replaced",
            carried
                .iter()
                .map(|v| format!("volume {} ({})", v.name, v.target))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(Replaced { carried, kept })
}

/// Removes the container set aside for `name` (its volumes stay): the
/// replace is done. A failure is logged; the next apply tidies it away.
pub async fn remove_replaced(rt: &dyn ContainerRuntime, name: &str) {
    let aside = replaced_name(name);
    crate::fault::pause("pause-before-removing-replaced", name).await;
    if let Err(e) = rt.remove_stopped(&aside).await {
        tracing::warn!("cannot remove {aside}, which {name} replaced: {e}; it is left for later");
    }
}

/// Undoes a replace: removes the container now under `name` (its volumes
/// stay, the old one mounts them), renames the one set aside back to
/// `name` and starts it. Each step is tried in that order so that a kill
/// between two of them leaves the one set aside for the next apply to
/// finish from (the refusal recorded before this says which way).
pub async fn put_back(rt: &dyn ContainerRuntime, name: &str) -> Result<(), String> {
    let aside = replaced_name(name);
    crate::fault::pause("pause-before-removing-refused", name).await;
    rt.remove(name)
        .await
        .map_err(|e| format!("cannot remove {name}: {e}"))?;
    crate::fault::pause("pause-before-putting-back", name).await;
    rt.rename(&aside, name)
        .await
        .map_err(|e| format!("cannot rename {aside} back to {name}: {e}"))?;
    rt.start(name)
        .await
        .map_err(|e| format!("{name} is back but would not start: {e}"))
}

/// Renames `old` to `aside`. A container already there is one an earlier
/// replace left after `old` was made from it (so `old` carries its
/// volumes): removed (its volumes stay), then the rename is tried again.
/// One mesh-host did not leave, or one that runs, is left alone.
async fn set_aside(
    rt: &dyn ContainerRuntime,
    old: &ContainerInfo,
    aside: &str,
) -> Result<(), String> {
    let first = match rt.rename(&old.name, aside).await {
        Ok(()) => return Ok(()),
        Err(e) => e,
    };
    let left = match rt.inspect(aside).await {
        Ok(Some(left)) => left,
        Ok(None) => {
            return rt
                .rename(&old.name, aside)
                .await
                .map_err(|e| format!("cannot set {} aside as {aside}: {e}", old.name))
        }
        Err(_) => return Err(format!("cannot set {} aside as {aside}: {first}", old.name)),
    };
    // Set aside for the same resource: a container that merely has that
    // name (a declared one, another resource's) is never taken for one.
    let same = left.labels.get(LABEL_RESOURCE) == old.labels.get(LABEL_RESOURCE);
    if !is_managed(&left) || left.running || !same {
        return Err(format!(
            "cannot set {} aside: the name {aside} is taken by a container mesh-host did not \
             leave there (or one that runs): it is left alone; rename or remove it",
            old.name
        ));
    }
    rt.remove_stopped(aside)
        .await
        .map_err(|e| format!("cannot remove {aside}, left by an earlier replace: {e}"))?;
    let orphaned: Vec<VolumeMount> = left
        .volumes
        .into_iter()
        .filter(|v| !old.volumes.iter().any(|o| o.name == v.name))
        .collect();
    if let Some(note) = kept_volumes_note(&orphaned) {
        tracing::warn!("{aside}, left by an earlier replace, is removed; {note}");
    }
    rt.rename(&old.name, aside)
        .await
        .map_err(|e| format!("cannot set {} aside as {aside}: {e}", old.name))
}

/// Start `name` again if this replace stopped it (best effort: what is
/// reported is the replace's own failure).
async fn restart(rt: &dyn ContainerRuntime, name: &str, stopped: bool) {
    if stopped {
        if let Err(e) = rt.start(name).await {
            tracing::warn!("cannot start {name} again after a failed replace: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANON: &str = "3f2a000000000000000000000000000000000000000000000000000000000001";

    fn volume(name: &str, target: &str) -> VolumeMount {
        VolumeMount {
            name: name.into(),
            target: target.into(),
            read_only: false,
        }
    }

    fn mount(source: &str, target: &str) -> MountSpec {
        MountSpec {
            source: source.into(),
            target: target.into(),
            read_only: false,
        }
    }

    #[test]
    fn anonymous_volumes_are_64_lowercase_hex_digits() {
        assert!(is_anonymous_volume(ANON));
        assert!(!is_anonymous_volume("pgdata"));
        assert!(!is_anonymous_volume(&ANON.to_uppercase()));
        assert!(!is_anonymous_volume(&ANON[1..]));
        assert!(!is_anonymous_volume(""));
    }

    #[test]
    fn anonymous_volumes_are_carried_unless_the_declaration_mounts_there() {
        let other = "b".repeat(64);
        let old = [
            volume(ANON, "/data"),
            volume("pgdata", "/var/lib/pg"),
            volume(&other, "/cache/"),
        ];
        assert_eq!(
            carried_volumes(&old, &[]),
            [mount(ANON, "/data"), mount(&other, "/cache/")]
        );
        // A mount at the same target, however spelled, wins; a named
        // volume is never carried.
        let declared = [mount("/srv/cache", "//cache/.")];
        assert_eq!(carried_volumes(&old, &declared), [mount(ANON, "/data")]);
        // The declaration names the volume itself elsewhere.
        let moved = [mount(ANON, "/elsewhere")];
        assert_eq!(carried_volumes(&old, &moved), [mount(&other, "/cache/")]);
    }

    #[test]
    fn replaced_names_say_what_they_replace() {
        assert_eq!(replaced_name("web"), "web.replaced");
        assert_eq!(replaced_base("web.replaced"), Some("web"));
        assert_eq!(replaced_base("web"), None);
        assert_eq!(replaced_base(".replaced"), None);
    }

    #[test]
    fn the_note_names_every_volume_kept() {
        assert_eq!(kept_volumes_note(&[]), None);
        assert_eq!(
            kept_volumes_note(&[volume(ANON, "/data")]).as_deref(),
            Some(format!("kept volume {ANON} (/data): docker volume rm to free it").as_str())
        );
        let two = kept_volumes_note(&[volume(ANON, "/data"), volume("pg", "/pg")]);
        assert_eq!(
            two.as_deref(),
            Some(
                format!("kept volumes {ANON} (/data), pg (/pg): docker volume rm to free them")
                    .as_str()
            )
        );
    }
}
