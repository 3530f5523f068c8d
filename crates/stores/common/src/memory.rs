//! A [`ConversationStore`] in memory: for tests, and for applications that
//! keep conversations only while they run.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use serde_json::Value;

use agent_core::{
    Conversation, ConversationMeta, ConversationStore, Message, StoreError, TurnMeta, validate_conversation_name,
};

use crate::{compaction_cut, context_with_summary, imported_meta, make_sendable, record_turn, utc_now};

/// Conversations kept in this process's memory and lost when it ends.
///
/// Behaves like the persistent stores (same name rules, same atomic
/// appends, same repair on load, same compaction and checkpoints), so code
/// tested against it behaves the same on them. Cheap to create; share it as
/// `Arc<InMemoryStore>`.
///
/// ```
/// use agent_core::{ConversationStore, Message, TurnMeta, Usage};
/// use agent_store::InMemoryStore;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), agent_core::StoreError> {
/// let store = InMemoryStore::new();
/// store.create("trip").await?;
/// let turn = [Message::user("Weather in Tokyo?"), Message::assistant("Sunny.")];
/// store.append("trip", &turn, &TurnMeta::new("openai", "gpt-4o-mini", Usage::new(12, 3), 0.0001)).await?;
/// let loaded = store.load("trip").await?.expect("stored");
/// assert_eq!(loaded.messages, turn);
/// assert_eq!(loaded.meta.usage.total_tokens(), 15);
///
/// store.compact("trip", 2, "Summary: the user asked about Tokyo's weather; sunny.").await?;
/// let context = store.load("trip").await?.expect("stored");
/// assert_eq!(context.messages.len(), 1);
/// assert_eq!(context.summarised, 2);
/// assert_eq!(store.transcript("trip").await?.expect("stored").messages, turn);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Default)]
pub struct InMemoryStore {
    conversations: Mutex<BTreeMap<String, Stored>>,
}

#[derive(Debug, Clone)]
struct Stored {
    /// Its metadata; `has_checkpoint` follows `checkpoint`.
    meta: ConversationMeta,
    /// Every message appended, never removed.
    messages: Vec<Message>,
    /// The current summary and how many of `messages` it stands for.
    summary: Option<(String, usize)>,
    /// The run checkpoint, if any.
    checkpoint: Option<Value>,
}

impl Stored {
    fn new(meta: ConversationMeta, messages: Vec<Message>) -> Self {
        Self {
            meta,
            messages,
            summary: None,
            checkpoint: None,
        }
    }

    /// How many of `messages` the summary hides.
    fn summarised(&self) -> usize {
        self.summary.as_ref().map_or(0, |(_, summarised)| *summarised)
    }
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The map, even if a panicking thread poisoned the lock: every update
    /// below is applied whole once it starts, so the data stays consistent.
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Stored>> {
        self.conversations.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `update` on the conversation `name`, under the lock.
    fn update<T>(
        &self,
        name: &str,
        update: impl FnOnce(&mut Stored) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        validate_conversation_name(name)?;
        let mut conversations = self.lock();
        let stored = conversations.get_mut(name).ok_or_else(|| StoreError::not_found(name))?;
        update(stored)
    }
}

#[async_trait]
impl ConversationStore for InMemoryStore {
    async fn create(&self, name: &str) -> Result<ConversationMeta, StoreError> {
        validate_conversation_name(name)?;
        let mut conversations = self.lock();
        if conversations.contains_key(name) {
            return Err(StoreError::already_exists(name));
        }
        let meta = ConversationMeta::new(name, utc_now());
        conversations.insert(name.to_owned(), Stored::new(meta.clone(), Vec::new()));
        Ok(meta)
    }

    async fn load(&self, name: &str) -> Result<Option<Conversation>, StoreError> {
        validate_conversation_name(name)?;
        let conversations = self.lock();
        let Some(stored) = conversations.get(name) else {
            return Ok(None);
        };
        let summarised = stored.summarised();
        let rows = stored.messages.get(summarised..).unwrap_or_default().to_vec();
        let summary = stored.summary.as_ref().map(|(summary, _)| summary.as_str());
        let (messages, repairs) = context_with_summary(summary, rows);
        Ok(Some(Conversation {
            meta: stored.meta.clone(),
            messages,
            repairs,
            summarised: summarised as u64,
        }))
    }

    async fn meta(&self, name: &str) -> Result<Option<ConversationMeta>, StoreError> {
        validate_conversation_name(name)?;
        Ok(self.lock().get(name).map(|stored| stored.meta.clone()))
    }

    async fn transcript(&self, name: &str) -> Result<Option<Conversation>, StoreError> {
        validate_conversation_name(name)?;
        let Some(stored) = self.lock().get(name).cloned() else {
            return Ok(None);
        };
        let mut messages = stored.messages;
        let repairs = make_sendable(&mut messages);
        Ok(Some(Conversation {
            meta: stored.meta,
            messages,
            repairs,
            summarised: 0,
        }))
    }

    async fn append(&self, name: &str, turn: &[Message], delta: &TurnMeta) -> Result<ConversationMeta, StoreError> {
        self.update(name, |stored| {
            record_turn(&mut stored.meta, turn, delta, utc_now());
            stored.messages.extend_from_slice(turn);
            stored.checkpoint = None;
            Ok(stored.meta.clone())
        })
    }

    async fn compact(&self, name: &str, replaced: usize, summary: &str) -> Result<ConversationMeta, StoreError> {
        self.update(name, |stored| {
            let summarised = stored.summarised();
            let rows = stored.messages.get(summarised..).unwrap_or_default();
            let cut = compaction_cut(name, stored.summary.is_some(), rows, replaced, summary)?;
            stored.summary = Some((summary.to_owned(), summarised + cut));
            Ok(stored.meta.clone())
        })
    }

    async fn list(&self) -> Result<Vec<ConversationMeta>, StoreError> {
        let mut metas: Vec<ConversationMeta> = self.lock().values().map(|stored| stored.meta.clone()).collect();
        metas.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then_with(|| a.name.cmp(&b.name)));
        Ok(metas)
    }

    async fn delete(&self, name: &str) -> Result<(), StoreError> {
        validate_conversation_name(name)?;
        match self.lock().remove(name) {
            Some(_) => Ok(()),
            None => Err(StoreError::not_found(name)),
        }
    }

    async fn import(&self, conversation: &Conversation) -> Result<ConversationMeta, StoreError> {
        let meta = imported_meta(conversation)?;
        let mut conversations = self.lock();
        if conversations.contains_key(&meta.name) {
            return Err(StoreError::already_exists(&meta.name));
        }
        conversations.insert(
            meta.name.clone(),
            Stored::new(meta.clone(), conversation.messages.clone()),
        );
        Ok(meta)
    }

    async fn save_checkpoint(&self, name: &str, checkpoint: &Value) -> Result<(), StoreError> {
        self.update(name, |stored| {
            stored.checkpoint = Some(checkpoint.clone());
            stored.meta.has_checkpoint = true;
            Ok(())
        })
    }

    async fn checkpoint(&self, name: &str) -> Result<Option<Value>, StoreError> {
        self.update(name, |stored| Ok(stored.checkpoint.clone()))
    }

    async fn clear_checkpoint(&self, name: &str) -> Result<(), StoreError> {
        self.update(name, |stored| {
            stored.checkpoint = None;
            stored.meta.has_checkpoint = false;
            Ok(())
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use agent_core::{AssistantMessage, ToolCall, ToolResult, Usage};

    #[tokio::test]
    async fn create_append_load_list_delete() {
        let store = InMemoryStore::new();
        assert!(store.load("trip").await.unwrap().is_none());
        store.create("trip").await.unwrap();
        assert!(matches!(store.create("trip").await, Err(StoreError::Conflict { .. })));
        let turn = [Message::user("hi"), Message::assistant("hello")];
        let delta = TurnMeta::new("openai", "gpt", Usage::new(3, 4), 0.25);
        store.append("trip", &turn, &delta).await.unwrap();
        let meta = store.append("trip", &turn, &delta).await.unwrap();
        assert_eq!((meta.message_count, meta.user_turns), (4, 2));
        assert_eq!(meta.usage, Usage::new(6, 8));
        let loaded = store.load("trip").await.unwrap().unwrap();
        assert_eq!(loaded.messages.len(), 4);
        assert_eq!(loaded.repairs, 0);
        assert_eq!(store.list().await.unwrap(), vec![meta]);
        store.delete("trip").await.unwrap();
        assert!(matches!(store.delete("trip").await, Err(StoreError::NotFound { .. })));
        assert!(matches!(
            store.append("trip", &turn, &delta).await,
            Err(StoreError::NotFound { .. })
        ));
        assert!(matches!(
            store.create("../x").await,
            Err(StoreError::InvalidName { .. })
        ));
    }

    #[tokio::test]
    async fn a_dangling_call_loads_with_a_lost_result_and_storage_is_untouched() {
        let store = InMemoryStore::new();
        let conversation = store.load_or_create("crash").await.unwrap();
        assert!(conversation.messages.is_empty());
        let call = ToolCall::new("c1", "lookup", json!({"q": 1}));
        let calls = Message::Assistant(AssistantMessage::with_tool_calls("", vec![call]));
        store
            .append("crash", &[Message::user("go"), calls], &TurnMeta::default())
            .await
            .unwrap();
        let loaded = store.load("crash").await.unwrap().unwrap();
        assert_eq!(loaded.repairs, 1);
        assert_eq!(
            loaded.messages[2],
            Message::tool(ToolResult::error("c1", "lookup", agent_core::LOST_RESULT))
        );
        assert_eq!(loaded.meta.message_count, 2, "the repair is not stored");
        assert_eq!(store.load("crash").await.unwrap().unwrap(), loaded, "deterministic");
    }

    #[tokio::test]
    async fn compaction_hides_messages_from_the_context_but_not_from_the_transcript() {
        let store = InMemoryStore::new();
        store.create("long").await.unwrap();
        let turns: Vec<Message> = (0..3)
            .flat_map(|i| [Message::user(format!("q{i}")), Message::assistant(format!("a{i}"))])
            .collect();
        store.append("long", &turns, &TurnMeta::default()).await.unwrap();
        store.compact("long", 2, "S1").await.unwrap();
        let context = store.load("long").await.unwrap().unwrap();
        assert_eq!(context.messages[0], Message::system("S1"));
        assert_eq!(context.messages[1..], turns[2..]);
        assert_eq!((context.summarised, context.meta.message_count), (2, 6));
        // The new summary replaces the old one and two more messages.
        store.compact("long", 3, "S2").await.unwrap();
        let context = store.load("long").await.unwrap().unwrap();
        assert_eq!(context.messages[0], Message::system("S2"));
        assert_eq!(context.messages[1..], turns[4..]);
        assert_eq!(context.summarised, 4);
        let transcript = store.transcript("long").await.unwrap().unwrap();
        assert_eq!((transcript.messages, transcript.summarised), (turns, 0));
        assert!(matches!(
            store.compact("long", 4, "S3").await,
            Err(StoreError::Conflict { .. })
        ));
        assert!(matches!(
            store.compact("nope", 1, "S3").await,
            Err(StoreError::NotFound { .. })
        ));
    }

    #[tokio::test]
    async fn an_append_clears_the_checkpoint() {
        let store = InMemoryStore::new();
        store.create("run").await.unwrap();
        assert_eq!(store.checkpoint("run").await.unwrap(), None);
        store.save_checkpoint("run", &json!({"step": 1})).await.unwrap();
        assert!(store.list().await.unwrap()[0].has_checkpoint);
        assert_eq!(store.checkpoint("run").await.unwrap(), Some(json!({"step": 1})));
        let meta = store
            .append("run", &[Message::user("hi")], &TurnMeta::default())
            .await
            .unwrap();
        assert!(!meta.has_checkpoint);
        assert_eq!(store.checkpoint("run").await.unwrap(), None);
        assert!(matches!(
            store.save_checkpoint("nope", &json!(1)).await,
            Err(StoreError::NotFound { .. })
        ));
    }
}
