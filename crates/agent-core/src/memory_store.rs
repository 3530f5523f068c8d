//! A [`ConversationStore`] in memory: for tests, and for applications that
//! keep conversations only while they run.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use async_trait::async_trait;

use crate::store::{count_user_messages, make_sendable, utc_timestamp, validate_conversation_name};
use crate::{Conversation, ConversationMeta, ConversationStore, Message, StoreError, TurnMeta};

/// Conversations kept in this process's memory and lost when it ends.
///
/// Behaves like the persistent stores (same name rules, same atomic
/// appends, same repair on load), so code tested against it behaves the same
/// on them. Cheap to create; share it as `Arc<InMemoryStore>`.
///
/// ```
/// use agent_core::{ConversationStore, InMemoryStore, Message, TurnMeta, Usage};
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
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Default)]
pub struct InMemoryStore {
    conversations: Mutex<BTreeMap<String, Stored>>,
}

#[derive(Debug, Clone)]
struct Stored {
    meta: ConversationMeta,
    messages: Vec<Message>,
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
}

fn now() -> String {
    utc_timestamp(SystemTime::now())
}

#[async_trait]
impl ConversationStore for InMemoryStore {
    async fn create(&self, name: &str) -> Result<ConversationMeta, StoreError> {
        validate_conversation_name(name)?;
        let mut conversations = self.lock();
        if conversations.contains_key(name) {
            return Err(StoreError::already_exists(name));
        }
        let meta = ConversationMeta::new(name, now());
        conversations.insert(
            name.to_owned(),
            Stored {
                meta: meta.clone(),
                messages: Vec::new(),
            },
        );
        Ok(meta)
    }

    async fn load(&self, name: &str) -> Result<Option<Conversation>, StoreError> {
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
        }))
    }

    async fn append(&self, name: &str, turn: &[Message], delta: &TurnMeta) -> Result<ConversationMeta, StoreError> {
        validate_conversation_name(name)?;
        let mut conversations = self.lock();
        let stored = conversations.get_mut(name).ok_or_else(|| StoreError::not_found(name))?;
        stored.meta.record_turn(turn, delta, now());
        stored.messages.extend_from_slice(turn);
        Ok(stored.meta.clone())
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
        let name = conversation.meta.name.as_str();
        validate_conversation_name(name)?;
        let mut conversations = self.lock();
        if conversations.contains_key(name) {
            return Err(StoreError::already_exists(name));
        }
        let mut meta = conversation.meta.clone();
        meta.message_count = conversation.messages.len() as u64;
        meta.user_turns = count_user_messages(&conversation.messages);
        conversations.insert(
            name.to_owned(),
            Stored {
                meta: meta.clone(),
                messages: conversation.messages.clone(),
            },
        );
        Ok(meta)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{AssistantMessage, ToolCall, ToolResult, Usage};

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
            Message::tool(ToolResult::error("c1", "lookup", crate::LOST_RESULT))
        );
        assert_eq!(loaded.meta.message_count, 2, "the repair is not stored");
        assert_eq!(store.load("crash").await.unwrap().unwrap(), loaded, "deterministic");
    }
}
