//! Reading a unit resource: a systemd unit file's name and content, and
//! the state and enablement declared for it.

use super::entry::{Entry, Kind};
use super::fields::{check, refuse_unknown, require, take, Sink};
use crate::declaration::hints::Fields;
use crate::declaration::model::{Unit, UnitState};
use crate::declaration::raw::RawUnit;
use crate::declaration::types::UnitName;

pub(super) fn read_unit(s: &mut Sink, u: RawUnit, entry: &mut Entry) -> Option<Unit> {
    refuse_unknown(s, "", u.unknown, Fields::Resource("unit"));
    let name = require(s, "name", u.name).and_then(|n| check(s, "name", UnitName::try_from(n)));
    entry.kind = Kind::Unit(name.clone());
    let content = require(s, "content", u.content);
    let state = match take(s, "state", u.state).as_deref() {
        None | Some("started") => Some(UnitState::Started),
        Some("stopped") => Some(UnitState::Stopped),
        Some(other) => {
            s.at(
                "state",
                format!("{other:?} is not a unit state: \"started\" or \"stopped\""),
            );
            None
        }
    };
    let enabled = take(s, "enabled", u.enabled);
    Some(Unit {
        name: name?,
        content: content?,
        state: state?,
        enabled,
    })
}
