//! Scheduled steps: the scheduler, its clock, one fire, maintenance windows.
pub mod clock;
pub mod jobs;
