//! The runs a server knows by id: those in flight and, for a while, those
//! that ended. Each keeps its events so that a client can follow it from
//! the start at any time (`GET /v1/runs/{id}/events`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use agent_core::{AgentEvent, AgentRunResult, CancellationToken, utc_now};
use futures::{Stream, stream};
use tokio::sync::watch;

use crate::auth::KeyId;

/// Runs by id, with the ended ones kept for a retention period.
pub(crate) struct RunRegistry {
    inner: Mutex<Registry>,
    retention: Duration,
    max_ended: usize,
    /// Bumped when a run ends, for [`wait_idle`](Self::wait_idle).
    ended: watch::Sender<u64>,
}

#[derive(Default)]
struct Registry {
    runs: HashMap<String, Arc<RunEntry>>,
    /// Ended runs, oldest first, with when they ended.
    ended: VecDeque<(Instant, String)>,
    running: usize,
}

impl RunRegistry {
    /// Keeps ended runs for `retention`, and at most `max_ended` of them.
    pub(crate) fn new(retention: Duration, max_ended: usize) -> Self {
        Self {
            inner: Mutex::new(Registry::default()),
            retention,
            max_ended,
            ended: watch::Sender::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a new run of `owner`, forgetting ended runs past their
    /// retention.
    pub(crate) fn insert(&self, owner: KeyId, session: Option<String>, cancel: CancellationToken) -> Arc<RunEntry> {
        let entry = Arc::new(RunEntry {
            id: new_id("run_"),
            owner,
            session,
            created_at: utc_now(),
            cancel,
            log: Mutex::new(RunLog::default()),
            changed: watch::Sender::new(0),
        });
        let mut registry = self.lock();
        let now = Instant::now();
        while let Some((ended_at, id)) = registry.ended.front() {
            let expired = now.duration_since(*ended_at) > self.retention || registry.ended.len() > self.max_ended;
            if !expired {
                break;
            }
            let id = id.clone();
            registry.ended.pop_front();
            registry.runs.remove(&id);
        }
        registry.runs.insert(entry.id.clone(), Arc::clone(&entry));
        registry.running += 1;
        entry
    }

    /// The run `id` when `caller` owns it (another key's runs are not found).
    pub(crate) fn get(&self, id: &str, caller: KeyId) -> Option<Arc<RunEntry>> {
        self.lock().runs.get(id).filter(|entry| entry.owner == caller).cloned()
    }

    /// Records that `entry` ended with `outcome`: its followers get the last
    /// event and their streams end.
    pub(crate) fn end(&self, entry: &RunEntry, outcome: RunOutcome) {
        entry.lock().outcome = Some(outcome);
        entry.changed.send_modify(|version| *version += 1);
        let mut registry = self.lock();
        registry.running = registry.running.saturating_sub(1);
        registry.ended.push_back((Instant::now(), entry.id.clone()));
        drop(registry);
        self.ended.send_modify(|count| *count += 1);
    }

    /// Runs in flight.
    pub(crate) fn running(&self) -> usize {
        self.lock().running
    }

    /// Cancels every run in flight (they end soon, keeping what they did).
    pub(crate) fn cancel_all(&self) {
        for entry in self.lock().runs.values() {
            entry.cancel.cancel();
        }
    }

    /// Completes when no run is in flight.
    pub(crate) async fn wait_idle(&self) {
        let mut ended = self.ended.subscribe();
        while self.running() > 0 {
            if ended.changed().await.is_err() {
                return;
            }
        }
    }
}

/// One run: who started it, its events so far and, once it ended, how.
pub(crate) struct RunEntry {
    pub(crate) id: String,
    owner: KeyId,
    /// The session it continues, by its public id.
    pub(crate) session: Option<String>,
    pub(crate) created_at: String,
    pub(crate) cancel: CancellationToken,
    log: Mutex<RunLog>,
    /// Bumped at every event and at the end.
    changed: watch::Sender<u64>,
}

#[derive(Default)]
struct RunLog {
    events: Vec<AgentEvent>,
    outcome: Option<RunOutcome>,
}

/// How a run ended.
#[derive(Clone)]
pub(crate) struct RunOutcome {
    /// The run's record.
    pub(crate) result: Arc<AgentRunResult>,
    /// Why its turn could not be stored in its session, if it could not.
    pub(crate) store_error: Option<String>,
}

impl RunEntry {
    fn lock(&self) -> MutexGuard<'_, RunLog> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds an event for the run's followers.
    pub(crate) fn push(&self, event: AgentEvent) {
        self.lock().events.push(event);
        self.changed.send_modify(|version| *version += 1);
    }

    /// How it ended, once it has.
    pub(crate) fn outcome(&self) -> Option<RunOutcome> {
        self.lock().outcome.clone()
    }

    /// Every event of the run from the first, then each new one as it
    /// comes, and at the end [`AgentEvent::RunFinished`] with its record
    /// (kept once, in the outcome); the stream ends with the run.
    pub(crate) fn events(self: &Arc<Self>) -> impl Stream<Item = AgentEvent> + Send + 'static {
        let changed = self.changed.subscribe();
        stream::unfold(
            (Arc::clone(self), changed, Some(0_usize)),
            |(entry, mut changed, next)| async move {
                let next = next?;
                loop {
                    {
                        let log = entry.lock();
                        if let Some(event) = log.events.get(next) {
                            let event = event.clone();
                            drop(log);
                            return Some((event, (entry, changed, Some(next + 1))));
                        }
                        if let Some(outcome) = &log.outcome {
                            let finished = AgentEvent::RunFinished {
                                result: Box::new(AgentRunResult::clone(&outcome.result)),
                            };
                            drop(log);
                            return Some((finished, (entry, changed, None)));
                        }
                    }
                    // The sender lives in `entry`, so this only waits.
                    changed.changed().await.ok()?;
                }
            },
        )
    }

    /// Completes when the run has ended.
    pub(crate) async fn ended(&self) -> Option<RunOutcome> {
        let mut changed = self.changed.subscribe();
        loop {
            if let Some(outcome) = self.outcome() {
                return Some(outcome);
            }
            changed.changed().await.ok()?;
        }
    }
}

/// A new random id: `prefix` and 24 hex digits.
pub(crate) fn new_id(prefix: &str) -> String {
    format!("{prefix}{:016x}{:08x}", fastrand::u64(..), fastrand::u32(..))
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;
    use crate::auth::ApiKeys;

    fn key(name: &str) -> KeyId {
        let keys = ApiKeys::from_hashes([crate::hash_key(name)]).unwrap_or_else(|e| panic!("{e}"));
        keys.identify(name).unwrap_or_else(|| panic!("a key"))
    }

    fn outcome() -> RunOutcome {
        RunOutcome {
            result: Arc::new(super::super::execute::failed_result(String::new(), "p", "m")),
            store_error: None,
        }
    }

    #[tokio::test]
    async fn a_follower_gets_every_event_from_the_first_and_the_stream_ends_with_the_run() {
        let registry = RunRegistry::new(Duration::from_secs(60), 10);
        let entry = registry.insert(key("a"), None, CancellationToken::new());
        entry.push(AgentEvent::TextDelta { text: "one".into() });
        let follower = tokio::spawn(entry.events().collect::<Vec<_>>());
        tokio::task::yield_now().await;
        entry.push(AgentEvent::TextDelta { text: "two".into() });
        registry.end(&entry, outcome());
        let events = follower.await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            events[..2],
            [
                AgentEvent::TextDelta { text: "one".into() },
                AgentEvent::TextDelta { text: "two".into() }
            ]
        );
        assert!(
            matches!(&events[2..], [AgentEvent::RunFinished { result }] if result.provider == "p"),
            "the record comes last: {events:?}"
        );
        assert_eq!(entry.events().count().await, 3, "a late follower gets them all too");
        assert_eq!(registry.running(), 0);
    }

    #[tokio::test]
    async fn another_keys_run_is_not_found_and_ended_runs_are_forgotten_past_the_cap() {
        let registry = RunRegistry::new(Duration::from_secs(60), 1);
        let first = registry.insert(key("a"), None, CancellationToken::new());
        assert!(registry.get(&first.id, key("a")).is_some());
        assert!(registry.get(&first.id, key("b")).is_none(), "not the caller's");
        registry.end(&first, outcome());
        let second = registry.insert(key("a"), None, CancellationToken::new());
        registry.end(&second, outcome());
        let _third = registry.insert(key("a"), None, CancellationToken::new());
        assert!(
            registry.get(&first.id, key("a")).is_none(),
            "over the cap of ended runs"
        );
        assert!(registry.get(&second.id, key("a")).is_some());
    }

    #[tokio::test]
    async fn wait_idle_completes_when_the_last_run_ends() {
        let registry = Arc::new(RunRegistry::new(Duration::from_secs(60), 10));
        let entry = registry.insert(key("a"), None, CancellationToken::new());
        let waiting = tokio::spawn({
            let registry = Arc::clone(&registry);
            async move { registry.wait_idle().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        registry.end(&entry, outcome());
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
