//! A job queued on systemd and waited for until it ends.
//!
//! The `JobRemoved` stream is opened before the call that queues the job,
//! so that the job's end cannot go by unseen, and it is read on while that
//! call waits for its answer. zbus hands each message of a connection to
//! every stream that matches it, and a stream left unread fills its queue
//! (64 messages) and then holds back every later message of the
//! connection, the call's own answer included: a burst of other units'
//! jobs between the call and its answer (a `daemon-reload`, a slice of
//! many scopes stopped, other fires) would hang that call, and every other
//! call on the connection, for good.

use futures_util::StreamExt;
use zbus::OwnedObjectPath;
use zbus_systemd::systemd1::{JobRemovedStream, ManagerProxy};

/// The ends of jobs, listened to from before a job is queued.
pub struct JobEnds {
    removed: JobRemovedStream,
    /// Job ends read while the queuing call waited: (job, result).
    seen: Vec<(OwnedObjectPath, String)>,
}

impl std::fmt::Debug for JobEnds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobEnds").field("seen", &self.seen).finish()
    }
}

impl JobEnds {
    /// Start listening (the connection is subscribed to systemd's signals).
    pub async fn listen(manager: &ManagerProxy<'_>) -> Result<Self, String> {
        let removed = manager
            .receive_job_removed()
            .await
            .map_err(|e| format!("systemd JobRemoved: {e}"))?;
        Ok(Self {
            removed,
            seen: Vec::new(),
        })
    }

    /// Run `call`, which queues a job and answers its path, reading the
    /// job ends meanwhile.
    pub async fn queue<E>(
        &mut self,
        call: impl std::future::Future<Output = Result<OwnedObjectPath, E>>,
    ) -> Result<OwnedObjectPath, E> {
        let mut call = std::pin::pin!(call);
        loop {
            tokio::select! {
                answer = &mut call => return answer,
                Some(signal) = self.removed.next() => {
                    if let Ok(args) = signal.args() {
                        self.seen.push((args.job.clone(), args.result.clone()));
                    }
                }
            }
        }
    }

    /// The result of `job` (`done`, `failed`, `canceled`, ...) once it
    /// ended; `None` when systemd's signals were lost.
    pub async fn result(mut self, job: &OwnedObjectPath) -> Option<String> {
        if let Some((_, result)) = self.seen.iter().find(|(seen, _)| seen == job) {
            return Some(result.clone());
        }
        while let Some(signal) = self.removed.next().await {
            let Ok(args) = signal.args() else { continue };
            if args.job == *job {
                return Some(args.result.clone());
            }
        }
        None
    }
}
