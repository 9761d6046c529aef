//! The lease: a process renews, every [`LEASE_RENEW`], the lease of every
//! record it owns. A window whose lease has lapsed for
//! [`super::record::LEASE_LAPSE`] is taken over even though its owner's
//! process exists (stopped, hung, frozen).
//!
//! The record can be renewed only under `windows.lock`, which another
//! process may hold; so each renewal also writes the owner's heartbeat
//! (`heartbeat.rs`) without the lock, and a taker judges the lease by the
//! later of the two.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::clock::Clock;
use crate::store::StoreError;

use super::owner::Owner;
use super::record::{WindowRecord, LEASE_RENEW};
use super::records::Records;

/// Renews the leases of one process's windows, on a task of its own that
/// runs only while the process owns a window.
#[derive(Debug, Clone)]
pub struct Renewer {
    records: Records,
    clock: Arc<dyn Clock>,
    owner: Owner,
    /// Whether the renewing task runs.
    renewing: Arc<AtomicBool>,
}

impl Renewer {
    /// A renewer of `owner`'s records, idle until [`Renewer::start`].
    pub fn new(records: Records, clock: Arc<dyn Clock>, owner: Owner) -> Self {
        Renewer {
            records,
            clock,
            owner,
            renewing: Arc::default(),
        }
    }

    /// Keep renewing, every [`LEASE_RENEW`], the lease of every record this
    /// process owns, while it owns one: started on a window opened or taken
    /// over, and ended once none is left, so an idle daemon is not woken.
    pub fn start(&self) {
        if self.renewing.swap(true, Ordering::SeqCst) {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(LEASE_RENEW);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                match this.renew_once().await {
                    Ok(0) => {
                        // Nothing of this process's is open: stop. A window
                        // opened meanwhile may have found this task still
                        // running and relied on it: look once more, and go
                        // on only if no newer renewer was started for it.
                        this.renewing.store(false, Ordering::SeqCst);
                        match this.renew_once().await {
                            Ok(n) if n > 0 && !this.renewing.swap(true, Ordering::SeqCst) => {}
                            _ => return,
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!("cannot renew the lease on this process's windows: {e}")
                    }
                }
            }
        });
    }

    /// Whether the renewing task runs.
    #[cfg(test)]
    pub fn runs(&self) -> bool {
        self.renewing.load(Ordering::SeqCst)
    }

    /// Renew the lease of every record this process owns, now; how many it
    /// owns. The heartbeat first, without `windows.lock`, so that a holder
    /// of the lock never makes this owner look lapsed; then the records'
    /// own leases, only if the lock is free (the beat stands for them
    /// meanwhile). Owning none, the heartbeat is removed.
    pub async fn renew_once(&self) -> Result<usize, StoreError> {
        let Some(now) = self.clock.since_boot().map(|d| d.as_secs()) else {
            return Ok(0);
        };
        let me = self.owner.beater();
        // Records are replaced atomically: read without the lock.
        let owned = self
            .records
            .scan()?
            .records
            .iter()
            .filter(|r| self.owner.owns(r))
            .count();
        if owned == 0 {
            self.records.beats().end(&me)?;
            return Ok(0);
        }
        // A beat that cannot be written must not keep the record from
        // being renewed: that is the lease a taker reads first.
        if let Err(e) = self.records.beats().beat(&me, now) {
            tracing::warn!("cannot write this process's heartbeat: {e}; renewing its records only");
        }
        let Some(_records) = self.records.try_lock()? else {
            return Ok(owned);
        };
        for record in self.records.scan()?.records {
            if self.owner.owns(&record) && record.lease_since_boot_secs != Some(now) {
                self.records.write(&WindowRecord {
                    lease_since_boot_secs: Some(now),
                    ..record
                })?;
            }
        }
        Ok(owned)
    }
}
