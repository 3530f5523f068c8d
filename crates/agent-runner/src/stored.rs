//! Runs of a conversation kept in a [`ConversationStore`]: the run's state
//! saved there after every step ([`StoreCheckpoints`]), so that it can be
//! resumed after a crash, and its turn appended when it ends
//! ([`store_turn`]), which drops the saved state in the same operation.
//!
//! The CLI's sessions and the HTTP server's sessions both work this way, on
//! any store (SQLite, PostgreSQL, memory).

use std::sync::Arc;

use agent_core::{AgentRunResult, ConversationMeta, ConversationStore, Message, RunEnd, StoreError, TurnMeta};
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
/// `continued` messages of `result`: the history it started from, as
/// [`RunState::continued_messages`] of the state it ran from says (for a new
/// run, the length of the history it was given; for a state saved before
/// that was kept, the conversation's length as loaded is the best guess).
/// The run's own messages (its user message and everything after it) are
/// appended after what the conversation holds now, with the run's usage
/// and cost: when another run stored a turn meanwhile (another process or
/// instance sharing the store), the turn comes after it, whole.
///
/// If the run compacted the conversation, the summaries that replaced its
/// oldest messages are stored first, but only when the stored context is
/// still the one the run continued (its length is `continued`): a summary
/// of a context that changed meanwhile would not fit it. Skipped, nothing
/// is lost (the stored messages stay whole; the next run compacts again if
/// it must).
///
/// A failed run keeps the work it completed: its user message and every
/// tool call that has its result, up to the last such result (what ran is
/// never lost, nor run again when the prompt is sent again). One that
/// failed before a tool finished adds no message (the conversation stays as
/// it was and the prompt can be sent again). Its usage and cost count
/// either way; a cancelled or limited run keeps what it did.
///
/// # Errors
///
/// The store's error; [`StoreError::Conflict`] when `result` does not
/// continue `continued` messages (nothing is stored then).
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
    let summaries: Vec<(usize, &str)> = result
        .compactions
        .iter()
        .filter(|compaction| compaction.replaced_messages > 0)
        .filter_map(|compaction| Some((compaction.replaced_messages, compaction.summary.as_deref()?)))
        .collect();
    if !summaries.is_empty() {
        let stored = store.load(name).await?.map(|conversation| conversation.messages.len());
        if stored == Some(continued) {
            for (replaced, summary) in summaries {
                store.compact(name, replaced, summary).await?;
            }
        } else {
            tracing::warn!(
                conversation = name,
                continued,
                stored,
                "the conversation changed while the run compacted it; its summary is not stored"
            );
        }
    }
    let added = if result.stop_reason == RunEnd::Error {
        completed_work(&result.messages[start..])
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

/// The longest start of a failed run's `added` messages that ends with a
/// tool result and leaves no tool call without its result; empty when no
/// tool call of it finished.
fn completed_work(added: &[Message]) -> &[Message] {
    let mut pending: Vec<&str> = Vec::new();
    let mut end = 0;
    for (at, message) in added.iter().enumerate() {
        match message {
            Message::Assistant(reply) => pending.extend(reply.tool_calls.iter().map(|call| call.id.as_str())),
            Message::Tool(result) => {
                pending.retain(|id| *id != result.call_id);
                if pending.is_empty() {
                    end = at + 1;
                }
            }
            Message::System { .. } | Message::User { .. } => {}
        }
    }
    &added[..end]
}

#[cfg(test)]
mod tests {
    use agent_core::Message;
    use agent_store::InMemoryStore;

    use crate::RunState;
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
        let first = agent.resume(resumed).await.unwrap_or_else(|e| panic!("{e}"));

        let meta = store_turn(store.as_ref(), "trip", "scripted", 0, &first)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(meta.message_count, 2, "the user message and the answer");
        assert!(!meta.has_checkpoint, "the turn ends the saved run");

        let history = first.messages.clone();
        let second = agent
            .run("Tomorrow?")
            .history(history.clone())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        store_turn(store.as_ref(), "trip", "scripted", history.len(), &second)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let stored = store.load("trip").await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stored.map(|c| c.messages), Some(second.messages));
    }

    /// Found by the provider fault table (tests/e2e/provider_faults.rs): a
    /// run that failed after a tool had run left nothing in the session, so
    /// the tool's result was lost and sending the prompt again ran the tool
    /// again.
    #[tokio::test]
    async fn a_failed_run_keeps_its_completed_tool_calls_and_a_run_that_did_nothing_adds_nothing() {
        use agent_testing::{TestTool, TestTools, ToolBehaviour};

        let store: Arc<dyn ConversationStore> = Arc::new(InMemoryStore::new());
        let book = TestTool::new("book", ToolBehaviour::Reply("booked seat 12A".into()));
        let tools = agent_tools::ToolBox::builder()
            .provider(Arc::new(TestTools::new("travel").with(book.clone())))
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let client = ScriptedClient::new()
            .respond(response::tool_calls([("book", serde_json::json!({"seat": "12A"}))]))
            .fail(agent_core::LlmError::transport("boom"))
            .fail(agent_core::LlmError::transport("boom again"));
        let agent = Agent::builder(Arc::new(client)).tools(Arc::new(tools)).build();
        let session = || crate::Session::new(Arc::clone(&store), "trip");

        let failed = agent.run("Book 12A").session(session()).await;
        assert!(failed.is_err(), "{failed:?}");
        let kept = store.load("trip").await.unwrap_or_else(|e| panic!("{e}"));
        let kept = kept.map(|c| c.messages).unwrap_or_default();
        assert_eq!(kept.len(), 3, "the prompt, the call and its result: {kept:?}");
        assert!(matches!(&kept[0], Message::User { content, .. } if content == "Book 12A"));
        assert!(matches!(&kept[1], Message::Assistant(reply) if reply.tool_calls.len() == 1));
        assert!(matches!(&kept[2], Message::Tool(result) if result.content == "booked seat 12A"));
        assert_eq!(book.call_counter().load(std::sync::atomic::Ordering::SeqCst), 1);

        // A run that failed before doing anything adds nothing: its prompt
        // can simply be sent again.
        let nothing = agent.run("Anything else?").session(session()).await;
        assert!(nothing.is_err(), "{nothing:?}");
        let after = store.load("trip").await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(after.map(|c| c.messages), Some(kept));
    }

    #[tokio::test]
    async fn a_result_that_does_not_continue_the_history_is_refused_and_nothing_is_stored() {
        let store = InMemoryStore::new();
        store.create("trip").await.unwrap_or_else(|e| panic!("{e}"));
        let unrelated = agent(&["Hi."]).run("Hello").await.unwrap_or_else(|e| panic!("{e}"));
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

    async fn stored(store: &InMemoryStore, name: &str) -> Vec<Message> {
        let conversation = store.load(name).await.unwrap_or_else(|e| panic!("{e}"));
        conversation.map(|c| c.messages).unwrap_or_default()
    }

    #[tokio::test]
    async fn a_resumed_turn_is_stored_whole_after_a_turn_another_run_stored_meanwhile() {
        let store = Arc::new(InMemoryStore::new());
        store.create("trip").await.unwrap_or_else(|e| panic!("{e}"));
        let first = agent(&["Hello."]).run("Hi").await.unwrap_or_else(|e| panic!("{e}"));
        store_turn(store.as_ref(), "trip", "scripted", 0, &first)
            .await
            .unwrap_or_else(|e| panic!("{e}"));

        // A run starts from the stored conversation and saves its state ...
        let history = stored(&store, "trip").await;
        let slow = agent(&["Sunny."]);
        let state = slow.start(history.clone(), "Weather?");
        assert_eq!(state.continued_messages(), Some(2));
        let checkpoints = StoreCheckpoints::new(store.clone(), "trip");
        checkpoints.save(&state).await.unwrap_or_else(|e| panic!("{e}"));
        // ... another process stores a turn meanwhile ...
        let other = agent(&["Noon."])
            .run("Time?")
            .history(history.clone())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        store_turn(store.as_ref(), "trip", "scripted", history.len(), &other)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        // ... the first saves its state after its next step, and dies.
        checkpoints.save(&state).await.unwrap_or_else(|e| panic!("{e}"));

        let saved = store.checkpoint("trip").await.unwrap_or_else(|e| panic!("{e}"));
        let resumed = SavedRun::decode(saved.unwrap_or_default()).unwrap_or_else(|e| panic!("{e}"));
        let continued = resumed.continued_messages().unwrap_or(usize::MAX);
        let result = slow.resume(resumed).await.unwrap_or_else(|e| panic!("{e}"));
        let meta = store_turn(store.as_ref(), "trip", "scripted", continued, &result)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!meta.has_checkpoint, "the run ended");
        let expected = [
            Message::user("Hi"),
            Message::assistant("Hello."),
            Message::user("Time?"),
            Message::assistant("Noon."),
            Message::user("Weather?"),
            Message::assistant("Sunny."),
        ];
        assert_eq!(stored(&store, "trip").await, expected);

        // Not stuck: the next turn continues all of it.
        let history = stored(&store, "trip").await;
        let later = agent(&["Bye."])
            .run("Thanks")
            .history(history.clone())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        store_turn(store.as_ref(), "trip", "scripted", history.len(), &later)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stored(&store, "trip").await.len(), 8);
    }

    #[test]
    fn a_state_saved_before_it_kept_what_it_continued_says_it_does_not_know() {
        let state = agent(&[]).start(vec![Message::user("a"), Message::assistant("b")], "c");
        let mut saved = serde_json::to_value(&state).unwrap_or_default();
        assert_eq!(saved["continued"], 2);
        if let Some(fields) = saved.as_object_mut() {
            fields.remove("continued");
        }
        let old: RunState = serde_json::from_value(saved).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(old.continued_messages(), None);
    }

    /// The record of a run that continued `Q0 A0` (2 messages), summarised
    /// them, and added `Q1 A1`.
    fn compacted_turn() -> AgentRunResult {
        let summary = format!("{}they said hello", crate::context::SUMMARY_PREFIX);
        AgentRunResult {
            response: "A1".into(),
            stop_reason: RunEnd::Completed,
            stop_detail: None,
            iterations: 1,
            tool_calls: Vec::new(),
            model_calls: Vec::new(),
            usage: agent_core::Usage::default(),
            cost_usd: None,
            provider: "scripted".into(),
            model: "scripted-model".into(),
            messages: vec![
                Message::system(summary.clone()),
                Message::user("Q1"),
                Message::assistant("A1"),
            ],
            compactions: vec![agent_core::CompactionRecord {
                trigger: agent_core::CompactionTrigger::Threshold,
                iteration: 1,
                estimated_tokens_before: 100,
                estimated_tokens_after: 10,
                elided_results: 0,
                elided_bytes: 0,
                replaced_messages: 2,
                summary: Some(summary),
                summary_calls: 1,
                summary_usage: agent_core::Usage::default(),
            }],
            pending_approvals: Vec::new(),
            scene: None,
            grounding: None,
            guardrail: None,
        }
    }

    #[tokio::test]
    async fn a_summary_is_stored_only_when_the_conversation_is_still_the_one_the_run_continued() {
        let meta = TurnMeta::new("scripted", "scripted-model", agent_core::Usage::default(), 0.0);
        let opening = [Message::user("Q0"), Message::assistant("A0")];

        let unchanged = InMemoryStore::new();
        unchanged.create("trip").await.unwrap_or_else(|e| panic!("{e}"));
        unchanged
            .append("trip", &opening, &meta)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        store_turn(&unchanged, "trip", "scripted", 2, &compacted_turn())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let context = stored(&unchanged, "trip").await;
        assert_eq!(context.len(), 3, "the summary and the turn: {context:?}");
        assert!(matches!(&context[0], Message::System { .. }));

        // Another turn was stored meanwhile: the summary would replace it.
        let grown = InMemoryStore::new();
        grown.create("trip").await.unwrap_or_else(|e| panic!("{e}"));
        grown
            .append("trip", &opening, &meta)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let other = [Message::user("Q2"), Message::assistant("A2")];
        grown
            .append("trip", &other, &meta)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        store_turn(&grown, "trip", "scripted", 2, &compacted_turn())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let context = stored(&grown, "trip").await;
        let expected = [
            Message::user("Q0"),
            Message::assistant("A0"),
            Message::user("Q2"),
            Message::assistant("A2"),
            Message::user("Q1"),
            Message::assistant("A1"),
        ];
        assert_eq!(context, expected);
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
