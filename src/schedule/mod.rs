//! Scheduled steps: the scheduler, its clock, one fire, maintenance windows.
pub mod adopt;
pub mod clock;
pub mod fire;
pub mod jobs;
pub mod plan;
pub mod scheduler;
pub mod stale;
pub mod step;
#[cfg(test)]
mod tests;
pub mod window;
