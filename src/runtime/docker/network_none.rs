//! Containers of network `none` on Docker, made without its network hook.
//!
//! Docker runs every container that has a network namespace of its own
//! through an OCI prestart hook that executes the whole `dockerd` binary
//! again (`libnetwork-setkey`), network `none` included, where all it does
//! is bring the loopback up and write `/etc/hosts`. On a two-core node that
//! is half of a start (docs/benchmarks.md: 444 ms against 219 ms, median of
//! 15 a side) and a third of the CPU of a burst of starts. A container
//! created with `NetworkDisabled` is started without the hook: runc still
//! gives it a namespace of its own with the loopback up, and Docker writes
//! no `/etc/hosts`. Docker's own file for network `none` ([`HOSTS`]) is
//! put into the container's layer before its first start instead, so that
//! `localhost` resolves as it does in any container.
//!
//! Made whole, then named. The container is created under a name of its
//! own ([`crate::runtime::making_name`]), given its `/etc/hosts`, and only
//! then renamed to its name: a container under a declared name is whole,
//! at whatever point mesh-host is killed. One left under the making name
//! is removed by the next create of that name, or by an apply once it is
//! older than [`crate::runtime::MAKING_GRACE`].
//!
//! Podman has no such hook and writes its own `/etc/hosts`; a container
//! that mounts something at `/etc` or `/etc/hosts` must not have the file
//! put there (it would land in the mounted directory), and one with an
//! extra host at `host-gateway` needs the hook to learn that address.
//! Those are created as declared.

use std::path::{Component, Path};

use bollard::errors::Error as BollardError;
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{RenameContainerOptions, UploadToContainerOptions};

use super::client::DockerRuntime;
use super::containers::{create_as, remove_with};
use crate::runtime::{
    making_name, ContainerId, ContainerSpec, RuntimeError, LABEL_MADE_AS, LABEL_MANAGED,
    MANAGED_VALUE,
};

/// Docker's `/etc/hosts` of a container on network `none` (20.10), to the
/// byte.
pub(super) const HOSTS: &str = "127.0.0.1\tlocalhost\n\
::1\tlocalhost ip6-localhost ip6-loopback\n\
fe00::0\tip6-localnet\n\
ff00::0\tip6-mcastprefix\n\
ff02::1\tip6-allnodes\n\
ff02::2\tip6-allrouters\n";

/// Whether `spec` is created without the network hook on this runtime.
pub(super) fn applies(rt: &DockerRuntime, spec: &ContainerSpec) -> bool {
    !rt.is_podman()
        && spec.network.as_deref() == Some("none")
        && !spec.mounts.iter().any(|m| covers_hosts(&m.target))
        && !spec
            .process
            .extra_hosts
            .iter()
            .any(|h| h.ends_with(":host-gateway"))
}

/// Whether a mount at `target` hides or holds `/etc/hosts`: `/`, `/etc`,
/// `/etc/hosts`, however spelled (`//etc/`, `/etc/.`); a target with `..`
/// is taken to.
fn covers_hosts(target: &str) -> bool {
    let mut parts = Vec::new();
    for part in Path::new(target).components() {
        match part {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::ParentDir => return true,
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    matches!(
        parts.iter().map(String::as_str).collect::<Vec<_>>()[..],
        [] | ["etc"] | ["etc", "hosts"]
    )
}

/// Creates `spec` (network `none`) without the network hook: under its
/// making name, with [`HOSTS`] put in, then renamed. An image the file
/// cannot go into (a directory at `/etc/hosts`: Docker refuses the archive)
/// gets a container as declared instead.
pub(super) async fn create(
    rt: &DockerRuntime,
    spec: &ContainerSpec,
) -> Result<ContainerId, RuntimeError> {
    let name = &spec.name;
    let making = making_name(name);
    let body = || without_hook(super::containers::create_body(spec), name);
    let id = match create_as(
        rt,
        &making,
        &spec.image,
        spec.process.platform.as_deref(),
        body(),
    )
    .await
    {
        Err(RuntimeError::Conflict { .. }) => {
            clear_left_over(rt, name, &making).await?;
            create_as(
                rt,
                &making,
                &spec.image,
                spec.process.platform.as_deref(),
                body(),
            )
            .await?
        }
        other => other?,
    };
    match put_hosts(rt, &id.0).await {
        Ok(()) => {}
        Err(refused @ RuntimeError::Api { .. }) => {
            remove_with(rt, &id.0, true).await?;
            tracing::info!(
                "container {name} is created with Docker's network hook: its /etc/hosts \
                 could not be put in ({refused})"
            );
            let as_declared = super::containers::create_body(spec);
            return create_as(
                rt,
                name,
                &spec.image,
                spec.process.platform.as_deref(),
                as_declared,
            )
            .await;
        }
        Err(other) => {
            let _ = remove_with(rt, &id.0, true).await;
            return Err(other);
        }
    }
    crate::fault::pause("pause-before-naming", name).await;
    let options = RenameContainerOptions { name: name.clone() };
    match rt.docker.rename_container(&id.0, options).await {
        Ok(()) => Ok(id),
        Err(err) => {
            let err = rt.error(
                &format!("name container {name}"),
                &format!("container {name}"),
                err,
            );
            let _ = remove_with(rt, &id.0, true).await;
            Err(err)
        }
    }
}

/// `body` for a start without the hook, marked with the name it is made as.
fn without_hook(mut body: ContainerCreateBody, name: &str) -> ContainerCreateBody {
    body.network_disabled = Some(true);
    body.labels
        .get_or_insert_with(Default::default)
        .insert(LABEL_MADE_AS.into(), name.to_owned());
    body
}

/// Removes what an interrupted create of `name` left under `making`: only
/// a managed container made as `name` and never started. Anything else
/// under that name is left alone, and the create fails naming it.
async fn clear_left_over(rt: &DockerRuntime, name: &str, making: &str) -> Result<(), RuntimeError> {
    let Some(info) = rt.inspect_raw(making).await? else {
        // Gone meanwhile: the create may go ahead.
        return Ok(());
    };
    let labels = info
        .config
        .as_ref()
        .and_then(|c| c.labels.clone())
        .unwrap_or_default();
    let ours = labels.get(LABEL_MANAGED).map(String::as_str) == Some(MANAGED_VALUE)
        && labels.get(LABEL_MADE_AS).map(String::as_str) == Some(name);
    let never_started = info
        .state
        .as_ref()
        .and_then(|s| s.started_at.as_deref())
        .is_none_or(|t| t.starts_with("0001-01-01"));
    if !(ours && never_started) {
        return Err(RuntimeError::Api {
            context: format!("create container {name}"),
            reason: format!(
                "the name it is made under, {making}, is taken by a container mesh-host did \
                 not leave there: it is left alone; rename or remove it"
            ),
        });
    }
    tracing::info!("container {making}, left by an interrupted create of {name}, is removed");
    remove_with(rt, making, true).await
}

/// Puts [`HOSTS`] at `/etc/hosts` of the created container `id`.
async fn put_hosts(rt: &DockerRuntime, id: &str) -> Result<(), RuntimeError> {
    // Never in place of a directory the image has at /etc/hosts: Docker
    // refuses the archive then, and the container is made as declared.
    let options = UploadToContainerOptions {
        path: "/".into(),
        no_overwrite_dir_non_dir: Some("1".into()),
        ..Default::default()
    };
    let body = bollard::body_full(hosts_archive().into());
    match rt.docker.upload_to_container(id, Some(options), body).await {
        Ok(()) => Ok(()),
        Err(err @ BollardError::DockerResponseServerError { .. }) => Err(RuntimeError::Api {
            context: format!("put /etc/hosts into container {id}"),
            reason: super::client::error_chain(&err),
        }),
        Err(err) => Err(rt.error(
            &format!("put /etc/hosts into container {id}"),
            &format!("container {id}"),
            err,
        )),
    }
}

/// A tar archive of `etc/hosts` ([`HOSTS`], root's, mode 0644). No entry
/// for `etc` itself: Docker makes a missing parent, and an entry would set
/// the owner and mode of the image's own `/etc`.
fn hosts_archive() -> Vec<u8> {
    let mut header = tar::Header::new_ustar();
    header.set_size(HOSTS.len() as u64);
    header.set_mode(0o644);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default(),
    );
    header.set_entry_type(tar::EntryType::Regular);
    let mut archive = tar::Builder::new(Vec::new());
    archive
        .append_data(&mut header, "etc/hosts", HOSTS.as_bytes())
        .and_then(|()| archive.into_inner())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_mounts_at_the_root_etc_or_etc_hosts_cover_the_hosts_file() {
        for target in [
            "/",
            "/etc",
            "/etc/",
            "//etc",
            "/etc/.",
            "/etc/hosts",
            "/x/../etc",
        ] {
            assert!(covers_hosts(target), "{target}");
        }
        for target in ["/data", "/etc/app", "/etc/hosts.d", "/var/etc", "/etcetera"] {
            assert!(!covers_hosts(target), "{target}");
        }
    }

    #[test]
    fn the_archive_holds_the_hosts_file_alone_as_roots() {
        let bytes = hosts_archive();
        let mut archive = tar::Archive::new(&bytes[..]);
        let mut entries: Vec<(String, u32, u64, u64, String)> = Vec::new();
        for entry in archive.entries().expect("a tar archive") {
            let mut entry = entry.expect("an entry");
            let header = entry.header().clone();
            let mut text = String::new();
            std::io::Read::read_to_string(&mut entry, &mut text).expect("text");
            entries.push((
                entry.path().expect("a path").display().to_string(),
                header.mode().expect("a mode"),
                header.uid().expect("a uid"),
                header.gid().expect("a gid"),
                text,
            ));
        }
        assert_eq!(
            entries,
            [("etc/hosts".to_string(), 0o644, 0, 0, HOSTS.to_string())]
        );
    }
}
