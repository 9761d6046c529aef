//! What a service may use: memory (`mem_limit`,
//! `deploy.resources.limits.memory`), its reservation, CPUs, processes,
//! `/dev/shm` and ulimits, each read as compose reads it and refused when
//! it does not fit.

use serde_json::{json, Map, Value};

use super::cast;
use super::context::Service;
use super::values::some;
use crate::declaration::raw::{Field, RawOptions, RawUlimit};

/// Read `svc`'s limits into `o`.
pub(super) fn read(s: &mut Service, svc: &Map<String, Value>, o: &mut RawOptions) {
    let mut memory = svc.get("mem_limit").map(|v| ("mem_limit", v));
    let mut reservation = svc.get("mem_reservation").map(|v| ("mem_reservation", v));
    let mut cpus = svc.get("cpus").map(|v| ("cpus", v));
    let mut pids = svc.get("pids_limit").map(|v| ("pids_limit", v));
    let resources = svc
        .get("deploy")
        .and_then(|d| d.get("resources"))
        .and_then(Value::as_object);
    if let Some(l) = resources
        .and_then(|r| r.get("limits"))
        .and_then(Value::as_object)
    {
        if let Some(v) = l.get("memory") {
            memory = Some(("deploy.resources.limits.memory", v));
        }
        if let Some(v) = l.get("cpus") {
            cpus = Some(("deploy.resources.limits.cpus", v));
        }
        if let Some(v) = l.get("pids") {
            pids = Some(("deploy.resources.limits.pids", v));
        }
    }
    if let Some(v) = resources
        .and_then(|r| r.get("reservations"))
        .and_then(|r| r.get("memory"))
    {
        reservation = Some(("deploy.resources.reservations.memory", v));
    }
    for (value, to) in [
        (memory, &mut o.memory),
        (reservation, &mut o.memory_reservation),
    ] {
        if let Some((field, v)) = value {
            if let Some(n) = s.size(field, v) {
                *to = some(json!(n));
            }
        }
    }
    if let Some((field, v)) = cpus {
        let at = s.at(field);
        if let Some(n) = cast::float(s.p, &at, v) {
            o.cpus = some(json!(n));
        }
    }
    if let Some((field, v)) = pids {
        match s.integer(field, v) {
            Some(n) if n > 0 => o.pids_limit = some(json!(n)),
            Some(_) => s.note(
                field,
                "0 or below: no limit, Docker's default, as under compose; left out",
            ),
            None => {}
        }
    }
    if let Some(v) = svc.get("shm_size") {
        if let Some(n) = s.size("shm_size", v) {
            o.shm_size = some(json!(n));
        }
    }
    if let Some(Value::Object(u)) = svc.get("ulimits") {
        let mut out = std::collections::BTreeMap::new();
        for (name, v) in u {
            let field = format!("ulimits.{name}");
            let (soft, hard) = match v {
                Value::Object(m) => {
                    let mut one = |key: &str| match m.get(key) {
                        Some(v) => s.integer(&format!("{field}.{key}"), v),
                        None => {
                            s.refuse(&field, "a number, or soft and hard");
                            None
                        }
                    };
                    (one("soft"), one("hard"))
                }
                other => {
                    let n = s.integer(&field, other);
                    (n, n)
                }
            };
            if let (Some(soft), Some(hard)) = (soft, hard) {
                out.insert(
                    name.clone(),
                    Field::Present(RawUlimit {
                        soft: some(json!(soft)),
                        hard: some(json!(hard)),
                        ..RawUlimit::default()
                    }),
                );
            }
        }
        o.ulimits = Field::Present(out);
    }
}
