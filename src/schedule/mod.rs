//! Scheduled steps: the scheduler, its clock, one fire, maintenance windows.
pub mod clock;
pub mod fire;
pub mod jobs;
pub mod scheduler;
pub mod step;
#[cfg(test)]
mod tests;
pub mod window;
