//! A service's device reservations, as compose gives them to Docker
//! (`HostConfig.DeviceRequests`): `deploy.resources.reservations.devices`
//! (each entry's capabilities one AND list, `count: all` as `-1`) and
//! `gpus` (`all`, or entries whose capabilities gain `gpu`, as compose
//! adds it). An entry with neither a count nor device ids is refused:
//! compose 1.29 sends a count of 0 (no device), later versions every
//! device; which was meant cannot be told, and the fix says how to write
//! it.

use serde_json::{json, Map, Value};

use super::context::Service;
use super::values::{list, some, string_map, strings, strings_map, text};
use crate::declaration::raw::{Field, RawDeviceRequest, RawOptions};

/// Read `svc`'s device reservations into `o`.
pub fn read(s: &mut Service, svc: &Map<String, Value>, o: &mut RawOptions) {
    let mut requests = Vec::new();
    let reserved = svc
        .get("deploy")
        .and_then(|d| d.get("resources"))
        .and_then(|r| r.get("reservations"))
        .and_then(|r| r.get("devices"));
    let field = "deploy.resources.reservations.devices";
    for entry in entries(s, field, reserved) {
        if let Some(r) = request(s, field, &entry, false) {
            requests.push(r);
        }
    }
    match svc.get("gpus") {
        None | Some(Value::Null) => {}
        Some(Value::String(all)) if all == "all" => requests.push(RawDeviceRequest {
            count: some(json!("all")),
            capabilities: list(vec!["gpu".to_owned()]),
            ..RawDeviceRequest::default()
        }),
        Some(v @ Value::Array(_)) => {
            for entry in entries(s, "gpus", Some(v)) {
                if let Some(r) = request(s, "gpus", &entry, true) {
                    requests.push(r);
                }
            }
        }
        Some(other) => s.refuse("gpus", format!("{other}: \"all\" or a list of devices")),
    }
    o.device_requests = list(requests);
}

fn entries(s: &mut Service, field: &str, v: Option<&Value>) -> Vec<Map<String, Value>> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| match i {
                Value::Object(m) => Some(m.clone()),
                _ => {
                    s.refuse(field, "each entry is a mapping");
                    None
                }
            })
            .collect(),
        Some(_) => {
            s.refuse(field, "expected a list");
            Vec::new()
        }
    }
}

/// One entry; `gpu` added to its capabilities when `gpus` gave it.
fn request(
    s: &mut Service,
    field: &str,
    m: &Map<String, Value>,
    gpu: bool,
) -> Option<RawDeviceRequest> {
    let mut capabilities = m.get("capabilities").map(strings).unwrap_or_default();
    if gpu && !capabilities.iter().any(|c| c == "gpu") {
        capabilities.push("gpu".to_owned());
    }
    let device_ids = m.get("device_ids").map(strings).unwrap_or_default();
    let count = match m.get("count") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) if c == "all" => Some(json!("all")),
        Some(v) => match text(v).parse::<u64>() {
            Ok(n) => Some(json!(n)),
            Err(_) => {
                s.refuse(
                    &format!("{field}.count"),
                    format!("{v}: a number or \"all\""),
                );
                return None;
            }
        },
    };
    if count.is_none() && device_ids.is_empty() {
        s.refuse(
            field,
            "neither count nor device_ids: compose 1.29 asks for no device, later versions for every one; write count: all (or a number, or device_ids)",
        );
        return None;
    }
    Some(RawDeviceRequest {
        driver: m.get("driver").map_or(Field::Absent, |d| some(text(d))),
        count: count.map_or(Field::Absent, some),
        device_ids: list(device_ids),
        capabilities: list(capabilities),
        options: strings_map(string_map(m.get("options"))),
        ..RawDeviceRequest::default()
    })
}
