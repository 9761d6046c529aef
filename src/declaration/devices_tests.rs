//! A container's `device-requests` and `anonymous-volumes`: read into
//! the model, part of its canonical form, every bad value named at once.
#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::options::DeviceCount;
use super::tests::{accept, assert_problem, refuse, service};

#[test]
fn device_requests_and_anonymous_volumes_are_read_and_kept() {
    let mut web = service("web", "web");
    web["device-requests"] = json!([
        {"driver": "nvidia", "count": 1, "capabilities": ["gpu", "utility"], "options": {"a": "b"}},
        {"device-ids": ["0", "GPU-abc"], "capabilities": ["gpu"]},
        {"count": "all", "capabilities": ["gpu"]}
    ]);
    web["anonymous-volumes"] = json!(["/data", "/var/cache/"]);
    let d = accept(json!([web]));
    let o = &d.container("web").unwrap().options;
    assert_eq!(o.device_requests.len(), 3);
    assert_eq!(o.device_requests[0].count, Some(DeviceCount::N(1)));
    assert_eq!(o.device_requests[1].device_ids, ["0", "GPU-abc"]);
    assert_eq!(o.device_requests[2].count.unwrap().docker(), -1);
    assert_eq!(o.anonymous_volumes, ["/data", "/var/cache"]);
    let canonical = serde_json::to_value(&d).unwrap();
    assert_eq!(accept(canonical["resources"].clone()), d);
}

#[test]
fn bad_device_requests_and_anonymous_volumes_are_each_named() {
    let mut web = service("web", "web");
    web["mounts"] = json!([{"source": "/srv/data", "target": "/data"}]);
    web["tmpfs"] = json!([{"target": "/run"}]);
    web["device-requests"] = json!([
        {"count": 1, "device-ids": ["0"], "capabilities": ["gpu"]},
        {"driver": "nvidia", "capabilities": ["gpu"]},
        {"count": 0, "capabilities": []},
        {"count": "some", "capabilities": ["g pu"], "driver": "a b", "ids": []}
    ]);
    web["anonymous-volumes"] = json!(["data", "/", "/data", "/run", "/x", "/x"]);
    let problems = refuse(json!([web]));
    let at = |field: &str, words: &str| assert_problem(&problems, Some("web"), Some(field), words);
    at(
        "device-requests[0].count",
        "count and device-ids are exclusive",
    );
    at(
        "device-requests[1]",
        "names a count (a number or \"all\") or device-ids",
    );
    at("device-requests[2].count", "is not a count");
    at("device-requests[2].capabilities", "names the capabilities");
    at("device-requests[3].count", "is not a count");
    at(
        "device-requests[3].capabilities[0]",
        "not a word a device driver takes",
    );
    at("device-requests[3].driver", "not a device driver name");
    at("device-requests[3].ids", "unknown field");
    at("anonymous-volumes[0]", "not an absolute path");
    at("anonymous-volumes[1]", "cannot cover the container's root");
    at("anonymous-volumes[2]", "already the target of mounts[0]");
    at("anonymous-volumes[3]", "already a tmpfs target");
    at("anonymous-volumes[5]", "named twice");
}
