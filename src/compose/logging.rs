//! A service's `logging`: its log driver and options, as compose gives
//! them to Docker (`HostConfig.LogConfig`). A step made of a service
//! (one another waits to complete) keeps its output in the journal, where
//! `mesh-host logs` reads it: its `logging` is refused there.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::context::Service;
use super::values::{some, text};
use crate::declaration::raw::{Field, RawContainer, RawLogging};

/// Read `svc`'s `logging` into `c`.
pub fn read(s: &mut Service, svc: &Map<String, Value>, c: &mut RawContainer) {
    let Some(v) = svc.get("logging") else { return };
    let Some(m) = v.as_object() else {
        s.refuse("logging", "expected a mapping of driver and options");
        return;
    };
    if !c.run_once.is_absent() {
        s.refuse(
            "logging",
            "another service waits for this one to complete (service_completed_successfully), so it is a run-once step, whose output goes to the journal for mesh-host logs: remove logging",
        );
        return;
    }
    // No driver: the runtime's default one, with these options.
    let driver = m.get("driver").map(text);
    let options: BTreeMap<String, Field<String>> = match m.get("options") {
        Some(Value::Object(opts)) => opts
            .iter()
            .map(|(k, v)| (k.clone(), Field::Present(text(v))))
            .collect(),
        Some(Value::Null) | None => BTreeMap::new(),
        Some(_) => {
            s.refuse("logging.options", "expected a mapping");
            return;
        }
    };
    c.options.logging = some(RawLogging {
        driver: driver.map_or(Field::Absent, some),
        options: if options.is_empty() {
            Field::Absent
        } else {
            some(options)
        },
        ..RawLogging::default()
    });
}
