//! Scheduled steps: the scheduler, one fire, its output, the steps' own records.
#[cfg(test)]
mod catch_up_tests;
pub mod ended;
pub mod fire;
pub mod forward;
pub mod forward_keeper;
#[cfg(test)]
mod forward_tests;
pub mod history;
pub mod jobs;
pub mod kept;
#[cfg(test)]
mod oom_tests;
pub mod outcome;
pub mod output;
pub mod plan;
pub mod ready;
#[cfg(test)]
mod ready_tests;
mod run_end;
pub mod scheduler;
#[cfg(test)]
mod shared_holds_tests;
#[cfg(test)]
mod sleep_tests;
pub mod splay;
pub mod stale;
pub mod step;
#[cfg(test)]
mod stop_tests;
pub mod suspend;
#[cfg(test)]
pub(crate) mod tests;
