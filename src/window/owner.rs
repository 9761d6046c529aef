//! Who owns a window: the process that opened it, or took it over.

use crate::store::StoreError;

use super::record::WindowRecord;

/// The process's identity as window owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// `/proc/sys/kernel/random/boot_id`.
    pub boot_id: String,
    /// This process's pid.
    pub pid: u32,
    /// Its start time, to tell it from a recycled pid.
    pub pid_start_time: u64,
}

impl Owner {
    /// The current process.
    pub fn current() -> Result<Self, StoreError> {
        let pid = std::process::id();
        Ok(Owner {
            boot_id: crate::store::boot_id()?,
            pid,
            pid_start_time: crate::store::process_start_time(pid)?,
        })
    }

    /// Whether `record` was written by this process.
    pub fn owns(&self, record: &WindowRecord) -> bool {
        record.boot_id == self.boot_id
            && record.pid == self.pid
            && record.pid_start_time == self.pid_start_time
    }

    /// This owner as its heartbeat file names it.
    pub fn beater(&self) -> super::heartbeat::Beater<'_> {
        super::heartbeat::Beater {
            boot_id: &self.boot_id,
            pid: self.pid,
            pid_start_time: self.pid_start_time,
        }
    }
}
