//! Volumes decided, before every other resource so that any container
//! may mount them (CONTRACT "Compose").
//!
//! | found | decided |
//! |---|---|
//! | missing | made: `created` |
//! | as declared | `unchanged` |
//! | other settings | `failed`, never changed (its containers are not made) |
//! | no longer declared | `kept`, never removed ([`super::removals`]) |

use super::super::plan::{Decision, Kind, Slot, Work};
use super::super::report::{Action, ReportLine};
use super::context::Context;
use crate::declaration::{Resource, VolumeResource};
use crate::runtime::VolumeSpec;

pub(super) async fn volume(
    d: &mut Context<'_>,
    slot: Slot,
    res: &Resource,
    volume: &VolumeResource,
) -> Decision {
    let id = res.id.as_str();
    let name = volume.name.to_string();
    let what = format!("volume {name}");
    let line = |action, reason| ReportLine::new(id, action, reason);
    let live = match d.view.volume(&name).await {
        Ok(live) => live,
        Err(e) => return unusable(d, slot, id, what, crate::runtime::explain(&e)),
    };
    let Some(live) = live else {
        let spec = VolumeSpec {
            name: name.clone(),
            driver: volume.driver.clone(),
            driver_opts: volume.driver_opts.clone(),
            labels: volume.labels.clone(),
        };
        let made = line(Action::Created, Some(what.clone()));
        return Decision::new(slot, Kind::Volume, made, Work::Volume(spec));
    };
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
        return unusable(d, slot, id, what, reason);
    }
    let recorded = d
        .facts
        .volumes
        .as_ref()
        .is_ok_and(|names| names.get(&name).map(String::as_str) == Some(id));
    let work = if recorded {
        Work::Nothing
    } else {
        Work::RecordVolume(name)
    };
    Decision::new(slot, Kind::Volume, line(Action::Unchanged, None), work)
}

/// A volume the plan cannot make: its line fails, and so does every
/// container that mounts it.
fn unusable(d: &mut Context<'_>, slot: Slot, id: &str, what: String, reason: String) -> Decision {
    d.unusable.insert(what, reason.clone());
    let line = ReportLine::new(id, Action::Failed, Some(reason));
    Decision::new(slot, Kind::Volume, line, Work::Nothing)
}
