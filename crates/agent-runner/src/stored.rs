//! Runs of a conversation kept in a [`ConversationStore`]: the run's state
//! saved there after every step ([`StoreCheckpoints`]), so that it can be
//! resumed after a crash, and its turn appended when it ends
//! ([`store_turn`]), which drops the saved state in the same operation.
//!
//! The CLI's sessions and the HTTP server's sessions both work this way, on
//! any store (SQLite, PostgreSQL, memory).

use std::sync::Arc;

use agent_core::{AgentRunResult, ConversationMeta, ConversationStore, StopCause, StoreError, TurnMeta};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{RunCheckpoints, RunState};

/// The format of [`SavedRun`] this version writes and reads.
pub const SAVED_RUN_FORMAT: u32 = 1;

/// What is saved of a run in progress: the version of this format and the
/// runner's state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SavedRun {
    /// [`SAVED_RUN_FORMAT`] when it was written.
    pub format: u32,
    /// The run's state after its last step.
    pub state: RunState,
}

/// A stored checkpoint that cannot be resumed by this version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SavedRunError {
    /// The JSON is not a saved run.
    #[error("it cannot be read ({0})")]
    Unreadable(String),
    /// Another version saved it.
    #[error("it was saved by another version of agentry (format {found}, this one reads {SAVED_RUN_FORMAT})")]
    OtherFormat {
        /// The format it was saved in.
        found: u32,
    },
}

impl SavedRun {
    /// The run state of a checkpoint saved by [`StoreCheckpoints`].
    ///
    /// # Errors
    ///
    /// [`SavedRunError`] when it is not a saved run of this format.
    pub fn decode(saved: Value) -> Result<RunState, SavedRunError> {
        #[derive(Deserialize)]
        struct Format {
            format: u32,
        }
        let unreadable = |error: serde_json::Error| SavedRunError::Unreadable(error.to_string());
        let Format { format } = Format::deserialize(&saved).map_err(unreadable)?;
        if format != SAVED_RUN_FORMAT {
            return Err(SavedRunError::OtherFormat { found: format });
        }
        let saved: Self = serde_json::from_value(saved).map_err(unreadable)?;
        Ok(saved.state)
    }
}

/// Saves a run's state as the checkpoint of one stored conversation
/// ([`ConversationStore::save_checkpoint`]).
#[derive(Clone)]
pub struct StoreCheckpoints {
    store: Arc<dyn ConversationStore>,
    name: String,
}

impl StoreCheckpoints {
    /// Checkpoints of the conversation `name` in `store`.
    pub fn new(store: Arc<dyn ConversationStore>, name: impl Into<String>) -> Self {
        Self {
            store,
            name: name.into(),
        }
    }
}

impl std::fmt::Debug for StoreCheckpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreCheckpoints")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl RunCheckpoints for StoreCheckpoints {
    async fn save(&self, state: &RunState) -> Result<(), StoreError> {
        let saved = SavedRun {
            format: SAVED_RUN_FORMAT,
            state: state.clone(),
        };
        let value = serde_json::to_value(&saved)
            .map_err(|error| StoreError::backend(format!("the run state could not be encoded: {error}")))?;
        self.store.save_checkpoint(&self.name, &value).await
    }
}

/// Stores the turn of a run of `provider` that continued the first
/// `continued` messages of `result` (the conversation's context as loaded:
/// its length is all that is needed): first the summaries that replaced its
/// oldest messages, if the run compacted the conversation, then the
/// messages the run added with its usage and cost. A failed run adds no
/// message (the conversation stays as it was and the prompt can be sent
/// again), but its usage and cost count; a cancelled or limited run keeps
/// what it did.
///
/// # Errors
///
/// The store's error; [`StoreError::Conflict`] when `result` does not
/// continue `history` (nothing is stored then).
pub async fn store_turn(
    store: &dyn ConversationStore,
    name: &str,
    provider: &str,
    continued: usize,
    result: &AgentRunResult,
) -> Result<ConversationMeta, StoreError> {
    let Some(start) = result.added_messages_start(continued) else {
        return Err(StoreError::conflict(
            name,
            "the run's conversation does not continue the stored one; its turn was not stored",
        ));
    };
    for compaction in result.compactions.iter().filter(|c| c.replaced_messages > 0) {
        let Some(summary) = &compaction.summary else { continue };
        store.compact(name, compaction.replaced_messages, summary).await?;
    }
    let added = if result.stop_reason == StopCause::Error {
        &[][..]
    } else {
        &result.messages[start..]
    };
    let delta = TurnMeta::new(
        provider,
        result.model.clone(),
        result.usage,
        result.cost_usd.unwrap_or_default(),
    );
    store.append(name, added, &delta).await
}

#[cfg(test)]
mod tests {
    use agent_core::{InMemoryStore, Message, ToolContext};
    use agent_testing::{ScriptedClient, response};

    use super::*;
    use crate::Agent;

    fn agent(replies: &[&str]) -> Agent {
        let client = replies.iter().fold(ScriptedClient::new(), |client, text| {
            client.respond(response::text(*text))
        });
        Agent::builder(Arc::new(client)).build()
    }

    #[tokio::test]
    async fn a_stored_turn_adds_the_runs_messages_and_clears_the_checkpoint() {
        let store = Arc::new(InMemoryStore::new());
        store.create("trip").await.unwrap_or_else(|e| panic!("{e}"));
        let checkpoints = StoreCheckpoints::new(store.clone(), "trip");
        let agent = agent(&["Sunny.", "Rain."]);
        let state = agent.start(Vec::new(), "Weather?");
        checkpoints.save(&state).await.unwrap_or_else(|e| panic!("{e}"));
        let saved = store.checkpoint("trip").await.unwrap_or_else(|e| panic!("{e}"));
        let resumed = SavedRun::decode(saved.unwrap_or_default()).unwrap_or_else(|e| panic!("{e}"));
        let first = agent
            .resume(resumed, &ToolContext::new())
            .await
            .unwrap_or_else(|e| panic!("{e}"));

        let meta = store_turn(store.as_ref(), "trip", "scripted", 0, &first)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(meta.message_count, 2, "the user message and the answer");
        assert!(!meta.has_checkpoint, "the turn ends the saved run");

        let history = first.messages.clone();
        let second = agent
            .run(history.clone(), "Tomorrow?", &ToolContext::new())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        store_turn(store.as_ref(), "trip", "scripted", history.len(), &second)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let stored = store.load("trip").await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stored.map(|c| c.messages), Some(second.messages));
    }

    #[tokio::test]
    async fn a_result_that_does_not_continue_the_history_is_refused_and_nothing_is_stored() {
        let store = InMemoryStore::new();
        store.create("trip").await.unwrap_or_else(|e| panic!("{e}"));
        let unrelated = agent(&["Hi."]).prompt("Hello").await.unwrap_or_else(|e| panic!("{e}"));
        let history = [
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
            Message::assistant("d"),
        ];
        let refused = store_turn(&store, "trip", "scripted", history.len(), &unrelated).await;
        assert!(matches!(refused, Err(StoreError::Conflict { .. })), "{refused:?}");
        let stored = store.load("trip").await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stored.map(|c| c.messages.len()), Some(0));
    }

    #[test]
    fn a_checkpoint_of_another_format_or_shape_is_named_as_such() {
        assert_eq!(
            SavedRun::decode(serde_json::json!({"format": 99, "state": {}})).err(),
            Some(SavedRunError::OtherFormat { found: 99 })
        );
        assert!(matches!(
            SavedRun::decode(serde_json::json!("nonsense")),
            Err(SavedRunError::Unreadable(_))
        ));
    }
}
