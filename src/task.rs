//! A spawned task tied to the life of what owns it.

/// Aborts its task when dropped, so that the task cannot act on after its
/// owner is gone (returned, failed, or unwound by a panic); a no-op once
/// the task has ended.
#[derive(Debug)]
pub struct AbortOnDrop(tokio::task::AbortHandle);

impl AbortOnDrop {
    /// Tie the task of `handle` to the returned value.
    pub fn new<T>(handle: &tokio::task::JoinHandle<T>) -> Self {
        Self(handle.abort_handle())
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_task_ends_when_its_guard_is_dropped() {
        let task = tokio::spawn(std::future::pending::<()>());
        drop(AbortOnDrop::new(&task));
        let ended = tokio::time::timeout(std::time::Duration::from_secs(5), task)
            .await
            .expect("ended");
        assert!(ended.is_err_and(|e| e.is_cancelled()));
    }

    #[tokio::test]
    async fn a_finished_task_keeps_its_result() {
        let task = tokio::spawn(async { 7 });
        let guard = AbortOnDrop::new(&task);
        assert_eq!(task.await.expect("ran"), 7);
        drop(guard);
    }
}
