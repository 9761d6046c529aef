//! mesh-host: the host daemon of one Linux node.
//!
//! It converges the machine to a JSON declaration ([`declaration`], [`apply`])
//! and runs scheduled steps ([`schedule`]) whose maintenance windows always
//! close. External systems sit behind small interfaces: the container
//! runtime ([`runtime`]), systemd ([`systemd`]), the on-disk state
//! ([`store`]) and the clock ([`clock`]).

pub mod accounting;
pub mod accounts;
pub mod acl;
pub mod answer;
pub mod apply;
pub mod attention;
pub mod cli;
pub mod clock;
pub mod compose;
pub mod container_spec;
pub mod control;
pub mod cron;
pub mod daemon;
pub mod declaration;
pub mod events;
pub mod exit;
pub mod fault;
pub mod journal;
pub mod metrics;
pub mod page;
pub mod plain_log;
pub mod progress;
pub mod render;
pub mod runtime;
pub mod schedule;
pub mod step_listing;
pub mod store;
pub mod systemd;
pub mod tap;
pub mod task;
#[cfg(test)]
mod test_dirs;
pub mod wake;
pub mod window;
