//! systemd: transient units for step fires, unit resources, readiness.
pub mod units;
