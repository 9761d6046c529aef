//! Reading a container's `device-requests`
//! ([`crate::declaration::options::DeviceRequest`]): devices asked of a
//! runtime's device driver (GPUs), each request whole: capabilities
//! given, a count or device ids (not both, as Docker's driver refuses
//! them together, and not neither, which compose's versions read
//! differently: none for 1.29, every device for later ones).

use super::fields::read_string_map;
use super::fields::{refuse_unknown, take, take_list, Sink};
use crate::declaration::hints::Fields;
use crate::declaration::options::{DeviceCount, DeviceRequest};
use crate::declaration::raw::{List, RawDeviceRequest};

/// A driver, device id or capability as Docker passes it on: printable
/// words, no separator a driver would split on.
fn word_ok(w: &str) -> bool {
    !w.is_empty()
        && w.len() <= 255
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.:-/".contains(&b))
}

/// `device-requests`: every bad entry named.
pub(super) fn read_device_requests(
    s: &mut Sink,
    raw: List<RawDeviceRequest>,
) -> Vec<DeviceRequest> {
    let mut out = Vec::new();
    for (path, r) in take_list(s, "device-requests", raw) {
        refuse_unknown(s, &path, r.unknown, Fields::DeviceRequest);
        let mut ok = true;
        let driver_field = format!("{path}.driver");
        let driver = take(s, &driver_field, r.driver);
        if let Some(d) = &driver {
            if !word_ok(d) {
                s.at(
                    &driver_field,
                    format!("{d:?} is not a device driver name (such as \"nvidia\")"),
                );
                ok = false;
            }
        }
        let count_field = format!("{path}.count");
        let count = match take(s, &count_field, r.count) {
            None => None,
            Some(v) if v == "all" => Some(DeviceCount::All),
            Some(v) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) if n >= 1 => Some(DeviceCount::N(n)),
                _ => {
                    s.at(
                        &count_field,
                        format!("{v} is not a count: a whole number, at least 1, or \"all\""),
                    );
                    ok = false;
                    None
                }
            },
        };
        let mut words = |s: &mut Sink, field: &str, raw: List<String>| -> Vec<String> {
            let mut got: Vec<String> = Vec::new();
            for (at, w) in take_list(s, &format!("{path}.{field}"), raw) {
                if !word_ok(&w) {
                    s.at(&at, format!("{w:?} is not a word a device driver takes"));
                    ok = false;
                } else if got.contains(&w) {
                    s.at(&at, format!("{w:?} is named twice"));
                    ok = false;
                } else {
                    got.push(w);
                }
            }
            got
        };
        let device_ids = words(s, "device-ids", r.device_ids);
        let capabilities = words(s, "capabilities", r.capabilities);
        let options = read_string_map(s, &format!("{path}.options"), r.options, false);
        if capabilities.is_empty() {
            s.at(
                format!("{path}.capabilities"),
                "a request names the capabilities its devices have (such as [\"gpu\"])",
            );
            ok = false;
        }
        match (&count, device_ids.is_empty()) {
            (Some(_), false) => {
                s.at(
                    &count_field,
                    "count and device-ids are exclusive: Docker's driver takes one or the other",
                );
                ok = false;
            }
            (None, true) if ok => {
                s.at(
                    &path,
                    "a request names a count (a number or \"all\") or device-ids",
                );
                ok = false;
            }
            _ => {}
        }
        if ok {
            out.push(DeviceRequest {
                driver,
                count,
                device_ids,
                capabilities,
                options,
            });
        }
    }
    out
}
