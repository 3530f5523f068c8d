//! Stopping a statement from outside its thread: at the time limit, or
//! when the call is cancelled.
//!
//! Two mechanisms share one [`Stop`]:
//!
//! - the connection's progress handler polls [`Stop::check`] every few
//!   hundred virtual-machine steps, on the statement's own thread;
//! - [`watch`], a task on the async runtime, calls SQLite's
//!   `sqlite3_interrupt` through rusqlite's [`InterruptHandle`] at the
//!   deadline or on cancellation, and keeps calling it until the blocking
//!   call has ended (SQLite clears a pending interrupt whenever a new
//!   statement starts, so one call is not enough).
//!
//! Neither can end a single function call already running inside SQLite;
//! the replacements in `functions.rs` and the value limits in `guard.rs`
//! keep every such call short.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use agent_core::CancellationToken;
use rusqlite::InterruptHandle;
use tokio::sync::oneshot;

/// How often [`watch`] repeats the interrupt once the call must stop.
const REINTERRUPT: Duration = Duration::from_millis(20);

/// Why a statement stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interruption {
    /// The time limit passed.
    TimedOut,
    /// The call was cancelled.
    Cancelled,
}

/// When one call must stop, and the means to stop it.
pub(crate) struct Stop {
    /// `None` when the time limit is too far away to represent.
    deadline: Option<Instant>,
    cancel: Option<CancellationToken>,
    reason: Mutex<Option<Interruption>>,
    handle: Mutex<Option<InterruptHandle>>,
}

impl Stop {
    /// A call that may run for `timeout` from now, and stops early when
    /// `cancel` (if any) is cancelled.
    pub(crate) fn new(timeout: Duration, cancel: Option<CancellationToken>) -> Arc<Self> {
        Arc::new(Self {
            deadline: Instant::now().checked_add(timeout),
            cancel,
            reason: Mutex::new(None),
            handle: Mutex::new(None),
        })
    }

    /// Why the call must stop now, if it must; notes the time limit or the
    /// cancellation the first time it sees it. Polled by the progress
    /// handler.
    pub(crate) fn check(&self) -> Option<Interruption> {
        let mut reason = lock(&self.reason);
        if reason.is_none() {
            if self.cancel.as_ref().is_some_and(CancellationToken::is_cancelled) {
                *reason = Some(Interruption::Cancelled);
            } else if self.deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                *reason = Some(Interruption::TimedOut);
            }
        }
        *reason
    }

    /// Why the call was stopped, if it was, without looking at the clock.
    pub(crate) fn reason(&self) -> Option<Interruption> {
        *lock(&self.reason)
    }

    /// Stops the call for `why` (the first reason given is kept) and
    /// interrupts its connection.
    pub(crate) fn stop(&self, why: Interruption) {
        lock(&self.reason).get_or_insert(why);
        self.interrupt();
    }

    /// Interrupts the connection, if one is attached.
    pub(crate) fn interrupt(&self) {
        if let Some(handle) = lock(&self.handle).as_ref() {
            handle.interrupt();
        }
    }

    /// Attaches the connection that runs the call; interrupts it at once if
    /// the call was stopped before it opened.
    pub(crate) fn attach(&self, handle: InterruptHandle) {
        *lock(&self.handle) = Some(handle);
        if self.reason().is_some() {
            self.interrupt();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Watches one blocking call until `done` resolves (its sender is dropped
/// when the call ends): at the deadline or on cancellation, stops it and
/// keeps interrupting its connection. Runs as its own task, so it goes on
/// even when the caller stops waiting for the call.
pub(crate) async fn watch(stop: Arc<Stop>, timeout: Duration, mut done: oneshot::Receiver<()>) {
    let cancel = stop.cancel.clone().unwrap_or_default();
    tokio::select! {
        _ = &mut done => return,
        () = tokio::time::sleep(timeout) => stop.stop(Interruption::TimedOut),
        () = cancel.cancelled() => stop.stop(Interruption::Cancelled),
    }
    loop {
        tokio::select! {
            _ = &mut done => return,
            () = tokio::time::sleep(REINTERRUPT) => stop.interrupt(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_reason_is_kept() {
        let cancel = CancellationToken::new();
        let stop = Stop::new(Duration::from_secs(60), Some(cancel.clone()));
        assert_eq!(stop.check(), None);
        cancel.cancel();
        assert_eq!(stop.check(), Some(Interruption::Cancelled));
        stop.stop(Interruption::TimedOut);
        assert_eq!(stop.reason(), Some(Interruption::Cancelled));

        let stop = Stop::new(Duration::ZERO, None);
        assert_eq!(stop.reason(), None);
        assert_eq!(stop.check(), Some(Interruption::TimedOut));
    }

    /// The watcher alone, without a progress handler, ends an endless
    /// statement at the deadline, and ends itself when the call is done.
    #[tokio::test]
    async fn the_watcher_interrupts_at_the_deadline() {
        let stop = Stop::new(Duration::from_millis(100), None);
        let (done, finished) = oneshot::channel();
        let watcher = tokio::spawn(watch(Arc::clone(&stop), Duration::from_millis(100), finished));
        let attach = Arc::clone(&stop);
        let started = Instant::now();
        let outcome = tokio::task::spawn_blocking(move || {
            let _done = done;
            let connection = rusqlite::Connection::open_in_memory()?;
            attach.attach(connection.get_interrupt_handle());
            connection.query_row(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n",
                [],
                |row| row.get::<_, i64>(0),
            )
        })
        .await
        .map_err(|error| error.to_string());
        assert!(
            matches!(&outcome, Ok(Err(rusqlite::Error::SqliteFailure(error, _))) if error.code == rusqlite::ErrorCode::OperationInterrupted),
            "{outcome:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        assert_eq!(stop.reason(), Some(Interruption::TimedOut));
        assert!(tokio::time::timeout(Duration::from_secs(5), watcher).await.is_ok());
    }

    #[test]
    fn a_huge_timeout_does_not_overflow() {
        let stop = Stop::new(Duration::MAX, None);
        assert_eq!(stop.check(), None);
    }
}
