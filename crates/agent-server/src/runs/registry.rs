//! The runs a server knows by id: those in flight and, for a while, those
//! that ended. Each keeps its events so that a client can follow it from
//! the start at any time (`GET /v1/runs/{id}/events`).
//!
//! What ended runs keep is bounded per key: at most so many runs of a key
//! are kept (its oldest ended one is forgotten first), and each keeps its
//! record without the conversation (`messages`, the whole history the run
//! continued, which may be large). A request that holds the run when it
//! ends (the `POST` that waits for it, a follower of its events) gets the
//! whole record; the conversation is forgotten once nobody but the
//! registry holds the run, at its end or at the registry's next change.
//!
//! A run that paused for the user's approval is an ended run that can go
//! on ([`Continuation`]): it is kept, and forgotten, as ended runs are
//! (with its paused state, when it has no session). Once decided it is in
//! flight again under the same id ([`RunRegistry::resume`]): its events
//! go on in the same log, and it ends again.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use agent_core::{AgentEvent, AgentRunResult, CancellationToken, ToolCall};
use agent_store::utc_now;
use futures::{Stream, StreamExt, stream};
use tokio::sync::watch;

use super::approvals::Continuation;
use crate::auth::KeyId;
use crate::error::ApiError;

/// Runs by id, with the ended ones kept for a retention period.
pub(crate) struct RunRegistry {
    inner: Mutex<Registry>,
    retention: Duration,
    max_ended: usize,
    max_ended_per_key: usize,
    /// Bumped when a run ends, for [`wait_idle`](Self::wait_idle).
    ended: watch::Sender<u64>,
}

#[derive(Default)]
struct Registry {
    runs: HashMap<String, Arc<RunEntry>>,
    /// Ended runs, oldest first, with when they ended.
    ended: VecDeque<(Instant, String)>,
    /// Each key's ended runs, oldest first.
    ended_by_owner: HashMap<KeyId, VecDeque<String>>,
    /// Ended runs whose record still has its conversation: someone held
    /// them when they ended.
    untrimmed: Vec<String>,
    running: usize,
}

impl Registry {
    /// Forgets the ended run `id` of `owner`.
    fn forget(&mut self, owner: KeyId, id: &str) {
        self.runs.remove(id);
        if let Some(owned) = self.ended_by_owner.get_mut(&owner) {
            owned.retain(|kept| kept != id);
            if owned.is_empty() {
                self.ended_by_owner.remove(&owner);
            }
        }
        self.untrimmed.retain(|kept| kept != id);
    }

    /// Forgets the conversation of the ended runs that only the registry
    /// holds now.
    fn trim_unheld(&mut self) {
        let Self { runs, untrimmed, .. } = self;
        untrimmed.retain(|id| match runs.get(id) {
            Some(entry) if Arc::strong_count(entry) > 1 => true,
            Some(entry) => {
                entry.forget_conversation();
                false
            }
            None => false,
        });
    }
}

impl RunRegistry {
    /// Keeps ended runs for `retention`, at most `max_ended` of them, and
    /// at most `max_ended_per_key` of each key.
    pub(crate) fn new(retention: Duration, max_ended: usize, max_ended_per_key: usize) -> Self {
        Self {
            inner: Mutex::new(Registry::default()),
            retention,
            max_ended,
            max_ended_per_key: max_ended_per_key.max(1),
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
            if let Some(owner) = registry.runs.get(&id).map(|expired| expired.owner) {
                registry.forget(owner, &id);
            }
        }
        registry.trim_unheld();
        registry.runs.insert(entry.id.clone(), Arc::clone(&entry));
        registry.running += 1;
        entry
    }

    /// The run `id` when `caller` owns it (another key's runs are not found).
    pub(crate) fn get(&self, id: &str, caller: KeyId) -> Option<Arc<RunEntry>> {
        let mut registry = self.lock();
        registry.trim_unheld();
        registry.runs.get(id).filter(|entry| entry.owner == caller).cloned()
    }

    /// Records that `entry` ended with `outcome`: its followers get the last
    /// event and their streams end. The key's oldest ended run is forgotten
    /// past its limit; the run's conversation is forgotten at once unless
    /// someone but the caller holds the run.
    pub(crate) fn end(&self, entry: &RunEntry, outcome: RunOutcome) {
        self.end_with(entry, outcome, None);
    }

    /// [`end`](Self::end), keeping how the run can go on when it paused
    /// for the user's approval.
    pub(crate) fn end_with(&self, entry: &RunEntry, outcome: RunOutcome, continuation: Option<Continuation>) {
        {
            let mut log = entry.lock();
            log.outcome = Some(outcome);
            log.continuation = continuation;
        }
        entry.changed.send_modify(|version| *version += 1);
        let mut registry = self.lock();
        registry.running = registry.running.saturating_sub(1);
        registry.ended.push_back((Instant::now(), entry.id.clone()));
        let owned = registry.ended_by_owner.entry(entry.owner).or_default();
        owned.push_back(entry.id.clone());
        let over = owned.len().saturating_sub(self.max_ended_per_key);
        let forgotten: Vec<String> = owned.drain(..over).collect();
        for id in &forgotten {
            registry.forget(entry.owner, id);
        }
        if !forgotten.is_empty() {
            registry.ended.retain(|(_, id)| !forgotten.contains(id));
        }
        // Held by the registry and by the caller (the run's task) only.
        match registry.runs.get(&entry.id) {
            Some(kept) if Arc::strong_count(kept) <= 2 => kept.forget_conversation(),
            Some(_) => registry.untrimmed.push(entry.id.clone()),
            None => {}
        }
        registry.trim_unheld();
        drop(registry);
        self.ended.send_modify(|count| *count += 1);
    }

    /// Puts the paused run `entry` in flight again, with what it needs to
    /// go on and what `decide` makes of the calls it waits for; `decide`
    /// is called, and the run changes, only if it still waits. The run
    /// is no longer an ended one (nor forgotten as one) until it ends
    /// again; its followers wait for its next events.
    ///
    /// # Errors
    ///
    /// [`ApiError::NotFound`] when the registry forgot it,
    /// [`ApiError::Conflict`] when it does not wait for approval (it is
    /// running, or it ended for good), and `decide`'s error.
    pub(crate) fn resume<T>(
        &self,
        entry: &Arc<RunEntry>,
        decide: impl FnOnce(&[ToolCall]) -> Result<T, ApiError>,
    ) -> Result<(Continuation, T), ApiError> {
        let mut registry = self.lock();
        if !registry
            .runs
            .get(&entry.id)
            .is_some_and(|kept| Arc::ptr_eq(kept, entry))
        {
            return Err(ApiError::NotFound(format!(
                "no run `{}` for this API key (ended runs are kept a while)",
                entry.id
            )));
        }
        let resumed = {
            let mut log = entry.lock();
            let not_waiting = |log: &RunLog| {
                let status = if log.outcome.is_some() { "ended" } else { "running" };
                ApiError::Conflict(format!(
                    "the run `{}` does not wait for approval: it is {status}",
                    entry.id
                ))
            };
            let Some(paused) = log.outcome.as_ref().filter(|_| log.continuation.is_some()) else {
                return Err(not_waiting(&log));
            };
            let decided = decide(&paused.result.pending_approvals)?;
            let Some(continuation) = log.continuation.take() else {
                return Err(not_waiting(&log));
            };
            log.outcome = None;
            (continuation, decided)
        };
        registry.running += 1;
        registry.ended.retain(|(_, id)| *id != entry.id);
        if let Some(owned) = registry.ended_by_owner.get_mut(&entry.owner) {
            owned.retain(|id| *id != entry.id);
            if owned.is_empty() {
                registry.ended_by_owner.remove(&entry.owner);
            }
        }
        registry.untrimmed.retain(|id| *id != entry.id);
        drop(registry);
        entry.changed.send_modify(|version| *version += 1);
        Ok(resumed)
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
    /// How the run goes on once decided, while it waits for approval.
    continuation: Option<Continuation>,
}

/// Where a run stands.
pub(crate) enum RunStatus {
    /// In flight.
    Running,
    /// Paused for the user's approval, with its record; it can go on.
    AwaitingApproval(RunOutcome),
    /// Ended for good, with its record.
    Ended(RunOutcome),
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

    /// Keeps its record without the conversation from now on.
    fn forget_conversation(&self) {
        let mut log = self.lock();
        if let Some(outcome) = log.outcome.as_mut()
            && !outcome.result.messages.is_empty()
        {
            // Copies the record first only if a request still renders it.
            Arc::make_mut(&mut outcome.result).messages = Vec::new();
        }
    }

    /// How it ended, once it has (or paused).
    pub(crate) fn outcome(&self) -> Option<RunOutcome> {
        self.lock().outcome.clone()
    }

    /// Whether it runs, waits for approval or ended.
    pub(crate) fn status(&self) -> RunStatus {
        let log = self.lock();
        match (&log.outcome, &log.continuation) {
            (None, _) => RunStatus::Running,
            (Some(outcome), Some(_)) => RunStatus::AwaitingApproval(outcome.clone()),
            (Some(outcome), None) => RunStatus::Ended(outcome.clone()),
        }
    }

    /// Ends a paused run for good: it can no longer be decided here.
    pub(crate) fn give_up_continuation(&self) {
        let mut log = self.lock();
        if log.outcome.is_some() {
            log.continuation = None;
        }
    }

    /// Every event of the run from the first, then each new one as it
    /// comes, and at the end [`AgentEvent::RunFinished`] with its record
    /// (kept once, in the outcome); the stream ends with the run, or when
    /// it pauses for approval.
    pub(crate) fn events(self: &Arc<Self>) -> impl Stream<Item = AgentEvent> + Send + 'static {
        self.numbered_events(0).map(|(_, event)| event)
    }

    /// [`events`](Self::events) after the first `after`, each with its
    /// number in the run's log (from 1); the closing
    /// [`AgentEvent::RunFinished`] has none (it is not in the log: a run
    /// that goes on after a pause ends with another).
    pub(crate) fn numbered_events(
        self: &Arc<Self>,
        after: usize,
    ) -> impl Stream<Item = (Option<usize>, AgentEvent)> + Send + 'static {
        let changed = self.changed.subscribe();
        stream::unfold(
            (Arc::clone(self), changed, Some(after)),
            |(entry, mut changed, next)| async move {
                let next = next?;
                loop {
                    {
                        let log = entry.lock();
                        if let Some(event) = log.events.get(next) {
                            let event = event.clone();
                            drop(log);
                            return Some(((Some(next + 1), event), (entry, changed, Some(next + 1))));
                        }
                        if let Some(outcome) = &log.outcome {
                            let finished = AgentEvent::RunFinished {
                                result: Box::new(AgentRunResult::clone(&outcome.result)),
                            };
                            drop(log);
                            return Some(((None, finished), (entry, changed, None)));
                        }
                    }
                    // The sender lives in `entry`, so this only waits.
                    changed.changed().await.ok()?;
                }
            },
        )
    }

    /// Completes when the run has ended (or paused).
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
        let registry = RunRegistry::new(Duration::from_secs(60), 10, 10);
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
        let registry = RunRegistry::new(Duration::from_secs(60), 1, 10);
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

    /// The record of a run that went on over `history_bytes` of
    /// conversation.
    fn ended_after(history_bytes: usize) -> RunOutcome {
        let mut result = super::super::execute::failed_result(String::new(), "p", "m");
        result.stop_reason = agent_core::RunEnd::Completed;
        result.stop_detail = None;
        result.response = "done".to_owned();
        result.iterations = 1;
        result.usage.input_tokens = 42;
        result.messages = vec![
            agent_core::Message::user("x".repeat(history_bytes)),
            agent_core::Message::assistant("done"),
        ];
        RunOutcome {
            result: Arc::new(result),
            store_error: None,
        }
    }

    #[tokio::test]
    async fn a_keys_ended_runs_are_capped_and_kept_without_their_conversation() {
        let registry = RunRegistry::new(Duration::from_secs(60), 1_000, 3);
        let other = registry.insert(key("b"), None, CancellationToken::new());
        registry.end(&other, ended_after(10));
        let mut ids = Vec::new();
        for _ in 0..5 {
            let entry = registry.insert(key("a"), None, CancellationToken::new());
            registry.end(&entry, ended_after(1 << 20));
            ids.push(entry.id.clone());
        }
        let kept: Vec<String> = ids
            .iter()
            .filter(|id| registry.get(id, key("a")).is_some())
            .cloned()
            .collect();
        assert_eq!(kept, ids[2..], "the key's last three");
        for id in &kept {
            let outcome = registry.get(id, key("a")).and_then(|entry| entry.outcome());
            let Some(RunOutcome { result, .. }) = outcome else {
                panic!("an ended run has its record")
            };
            assert!(
                result.messages.is_empty(),
                "no conversation kept: {} messages",
                result.messages.len()
            );
            assert_eq!(
                (
                    result.response.as_str(),
                    result.stop_reason,
                    result.usage.input_tokens,
                    result.iterations
                ),
                ("done", agent_core::RunEnd::Completed, 42, 1),
                "the rest of the record is"
            );
        }
        assert!(
            registry.get(&other.id, key("b")).is_some(),
            "another key's runs are not pushed out"
        );
    }

    #[tokio::test]
    async fn a_request_waiting_for_its_run_gets_the_whole_record_and_it_is_trimmed_after() {
        let registry = RunRegistry::new(Duration::from_secs(60), 1_000, 3);
        let run = registry.insert(key("a"), None, CancellationToken::new());
        let request = Arc::clone(&run);
        let follower = tokio::spawn(Arc::clone(&run).events().collect::<Vec<_>>());
        tokio::task::yield_now().await;
        registry.end(&run, ended_after(1_000));
        drop(run);
        let answered = request.ended().await.map(|outcome| outcome.result.messages.len());
        assert_eq!(answered, Some(2), "the waiting request answers with the conversation");
        let events = follower.await.unwrap_or_else(|e| panic!("{e}"));
        assert!(
            matches!(events.last(), Some(AgentEvent::RunFinished { result }) if result.messages.len() == 2),
            "so does a follower that saw the run end"
        );
        let id = request.id.clone();
        drop(request);
        // The next change of the registry trims what nobody holds.
        let _next = registry.insert(key("b"), None, CancellationToken::new());
        let kept = registry.get(&id, key("a")).and_then(|entry| entry.outcome());
        assert_eq!(kept.map(|outcome| outcome.result.messages.len()), Some(0));
        let Some(late) = registry.get(&id, key("a")) else {
            panic!("the run is kept")
        };
        let events = late.events().collect::<Vec<_>>().await;
        assert!(
            matches!(events.last(), Some(AgentEvent::RunFinished { result }) if result.messages.is_empty() && result.response == "done"),
            "a late follower gets the kept record: {events:?}"
        );
    }

    #[tokio::test]
    async fn wait_idle_completes_when_the_last_run_ends() {
        let registry = Arc::new(RunRegistry::new(Duration::from_secs(60), 10, 10));
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
