//! What an inspection of a container says, as mesh-host reads it
//! ([`ContainerInfo`]): its state, health, labels and volumes, from
//! Docker's answer or Podman's compatible one.

use std::collections::{BTreeMap, HashMap};

use bollard::models::{ContainerInspectResponse, ContainerStateStatusEnum};

use super::health::{health_decides_within, health_start_period};
use crate::runtime::{ContainerInfo, VolumeMount};

pub(super) fn to_btree(labels: Option<HashMap<String, String>>) -> BTreeMap<String, String> {
    labels.unwrap_or_default().into_iter().collect()
}

pub(super) fn container_info(raw: ContainerInspectResponse) -> ContainerInfo {
    let state = raw.state.unwrap_or_default();
    let status = state.status.unwrap_or(ContainerStateStatusEnum::EMPTY);
    let config = raw.config.unwrap_or_default();
    let exited = matches!(
        status,
        ContainerStateStatusEnum::EXITED | ContainerStateStatusEnum::DEAD
    );
    // Docker reports the zero time for a run that never started or ended.
    let real_time = |t: Option<String>| t.filter(|t| !t.starts_with("0001-01-01"));
    let decides_within = health_decides_within(config.healthcheck.as_ref());
    let start_period = health_start_period(config.healthcheck.as_ref());
    let volumes = volumes(raw.mounts.unwrap_or_default());
    ContainerInfo {
        id: raw.id.unwrap_or_default(),
        name: raw
            .name
            .unwrap_or_default()
            .trim_start_matches('/')
            .to_owned(),
        image: config.image.or(raw.image).unwrap_or_default(),
        running: state.running.unwrap_or(false),
        status: status.to_string(),
        exit_code: if exited { state.exit_code } else { None },
        started_at: real_time(state.started_at),
        finished_at: real_time(state.finished_at),
        labels: to_btree(config.labels),
        pid: state
            .pid
            .filter(|pid| *pid > 0)
            .and_then(|pid| u32::try_from(pid).ok()),
        oom_killed: state.oom_killed.unwrap_or(false),
        health: state.health.and_then(|h| {
            let status = h.status?.to_string();
            // "none" (no check) and "" are no health check at all.
            if status.is_empty() || status == "none" {
                return None;
            }
            let last_output = h
                .log
                .and_then(|log| log.into_iter().last())
                .and_then(|r| r.output)
                .unwrap_or_default()
                .trim()
                .to_string();
            Some(crate::runtime::Health {
                status,
                last_output,
                decides_within,
                start_period,
            })
        }),
        volumes,
    }
}

/// The volumes among an inspection's `Mounts` (Docker's and Podman's
/// answers alike: `Type` `volume`, the volume's `Name`, `Destination`).
pub(super) fn volumes(mounts: Vec<bollard::models::MountPoint>) -> Vec<VolumeMount> {
    mounts
        .into_iter()
        .filter(|m| m.typ.as_deref() == Some("volume"))
        .filter_map(|m| {
            Some(VolumeMount {
                name: m.name.filter(|n| !n.is_empty())?,
                target: m.destination.filter(|d| !d.is_empty())?,
                read_only: m.rw == Some(false),
            })
        })
        .collect()
}
