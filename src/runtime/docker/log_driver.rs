//! A container's log driver as Docker's `HostConfig.LogConfig` takes it:
//! a service's declared driver, or a step's journal (on Podman, a file of
//! the container's own that mesh-host forwards).

use std::collections::HashMap;

use bollard::models::HostConfigLogConfig;

use crate::runtime::JournalLog;

/// A service's declared log driver and options.
pub(super) fn declared_log_config(log: &crate::runtime::LogSpec) -> HostConfigLogConfig {
    HostConfigLogConfig {
        typ: log.driver.clone(),
        config: Some(log.options.iter().cloned().collect()),
    }
}

/// The log driver's configuration for `journal`. Docker's `journald`
/// driver turns the listed labels into fields of each entry. Podman 4.3's
/// carries no label, so there the output goes to a file of the
/// container's own (`k8s-file`, which its `logs` reads back) and mesh-host
/// forwards it to the journal with the same fields (src/schedule/forward.rs).
pub(super) fn log_config(journal: &JournalLog, podman: bool) -> HostConfigLogConfig {
    if podman {
        return HostConfigLogConfig {
            typ: Some("k8s-file".to_owned()),
            config: None,
        };
    }
    HostConfigLogConfig {
        typ: Some("journald".to_owned()),
        config: Some(HashMap::from([
            ("tag".to_owned(), journal.tag.clone()),
            ("labels".to_owned(), journal.labels.join(",")),
        ])),
    }
}
