//! A service's `security_opt` as Docker's daemon takes it:
//! `no-new-privileges` into the declaration's field of that name, the
//! other options (`label=disable`, `seccomp:unconfined`,
//! `apparmor=unconfined`) into `security-opt` as written, as compose
//! sends them; a form the daemon would not honour is refused with why.

use serde_json::{Map, Value};

use super::context::Service;
use super::values::{list, some, strings};
use crate::declaration::options::security_opt_problem;
use crate::declaration::raw::RawOptions;

/// Read `svc`'s `security_opt` into `o`.
pub fn read(s: &mut Service, svc: &Map<String, Value>, o: &mut RawOptions) {
    let Some(v) = svc.get("security_opt") else {
        return;
    };
    let mut others = Vec::new();
    for opt in strings(v) {
        match opt.as_str() {
            "no-new-privileges" | "no-new-privileges:true" | "no-new-privileges=true" => {
                o.no_new_privileges = some(true);
            }
            "no-new-privileges:false" | "no-new-privileges=false" => {}
            other => match security_opt_problem(other) {
                Some(why) => s.refuse("security_opt", format!("{other:?}: {why}")),
                None if others.contains(&opt) => {}
                None => others.push(opt),
            },
        }
    }
    o.security_opt = list(others);
}
