//! Scheduled steps: the scheduler, its clock and timer, one fire, maintenance windows.
pub mod adopt;
pub mod alerts;
#[cfg(test)]
mod catch_up_tests;
pub mod clock;
pub mod ended;
pub mod fire;
pub mod history;
pub mod jobs;
#[cfg(test)]
mod oom_tests;
pub mod output;
pub mod plan;
pub mod ready;
#[cfg(test)]
mod ready_tests;
pub mod scheduler;
#[cfg(test)]
mod shared_holds_tests;
#[cfg(test)]
mod sleep_tests;
pub mod splay;
pub mod stale;
pub mod step;
pub mod suspend;
#[cfg(test)]
mod tests;
pub mod timer;
pub mod window;
