//! A container's devices as Docker's `HostConfig` takes them: host
//! devices by path (`Devices`), and devices asked of a device driver
//! (`DeviceRequests`, GPUs), each request's capabilities one AND list, as
//! compose sends them.

use bollard::models::{DeviceMapping, DeviceRequest};

use crate::runtime::ProcessSpec;

/// `HostConfig.Devices`; `None` when there are none.
pub(super) fn mappings(p: &ProcessSpec) -> Option<Vec<DeviceMapping>> {
    (!p.devices.is_empty()).then(|| {
        p.devices
            .iter()
            .map(|(host, target, permissions)| DeviceMapping {
                path_on_host: Some(host.clone()),
                path_in_container: Some(target.clone()),
                cgroup_permissions: Some(permissions.clone()),
            })
            .collect()
    })
}

/// `HostConfig.DeviceRequests`; `None` when there are none.
pub(super) fn requests(p: &ProcessSpec) -> Option<Vec<DeviceRequest>> {
    (!p.device_requests.is_empty()).then(|| {
        p.device_requests
            .iter()
            .map(|r| DeviceRequest {
                driver: Some(r.driver.clone()),
                count: Some(r.count),
                device_ids: Some(r.device_ids.clone()),
                capabilities: Some(vec![r.capabilities.clone()]),
                options: Some(r.options.iter().cloned().collect()),
            })
            .collect()
    })
}
