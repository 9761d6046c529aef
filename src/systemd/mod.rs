//! systemd: transient units for step fires, unit resources, readiness.
pub mod alerts;
pub mod fresh_slice;
pub mod jobs;
pub mod oneshot_runs;
pub mod orphans;
pub mod stop_watch;
pub mod unit_files;
pub mod units;
