//! Sessions per key over a real socket: a key's limit of sessions, and a
//! listing that reads the caller's sessions only, not every key's.

mod common;

use std::sync::{Arc, Mutex, PoisonError};

use agent_core::{Conversation, ConversationMeta, ConversationStore, Message, StoreError, TurnMeta};
use agent_store::InMemoryStore;
use async_trait::async_trait;
use common::{KEY, OTHER_KEY, answering, json_of, start};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// An in-memory store that records the calls of a listing: `list` (every
/// key's sessions) and `meta` (one session).
#[derive(Default)]
struct Recording {
    inner: InMemoryStore,
    calls: Mutex<Vec<String>>,
}

impl Recording {
    fn record(&self, call: String) {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).push(call);
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.calls.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

#[async_trait]
impl ConversationStore for Recording {
    async fn create(&self, name: &str) -> Result<ConversationMeta, StoreError> {
        self.inner.create(name).await
    }
    async fn load(&self, name: &str) -> Result<Option<Conversation>, StoreError> {
        self.inner.load(name).await
    }
    async fn transcript(&self, name: &str) -> Result<Option<Conversation>, StoreError> {
        self.inner.transcript(name).await
    }
    async fn meta(&self, name: &str) -> Result<Option<ConversationMeta>, StoreError> {
        self.record(format!("meta {name}"));
        self.inner.meta(name).await
    }
    async fn append(&self, name: &str, turn: &[Message], delta: &TurnMeta) -> Result<ConversationMeta, StoreError> {
        self.inner.append(name, turn, delta).await
    }
    async fn compact(&self, name: &str, replaced: usize, summary: &str) -> Result<ConversationMeta, StoreError> {
        self.inner.compact(name, replaced, summary).await
    }
    async fn list(&self) -> Result<Vec<ConversationMeta>, StoreError> {
        self.record("list".to_owned());
        self.inner.list().await
    }
    async fn delete(&self, name: &str) -> Result<(), StoreError> {
        self.inner.delete(name).await
    }
    async fn import(&self, conversation: &Conversation) -> Result<ConversationMeta, StoreError> {
        self.inner.import(conversation).await
    }
    async fn save_checkpoint(&self, name: &str, checkpoint: &Value) -> Result<(), StoreError> {
        self.inner.save_checkpoint(name, checkpoint).await
    }
    async fn checkpoint(&self, name: &str) -> Result<Option<Value>, StoreError> {
        self.inner.checkpoint(name).await
    }
    async fn clear_checkpoint(&self, name: &str) -> Result<(), StoreError> {
        self.inner.clear_checkpoint(name).await
    }
}

async fn create_session(server: &common::Running, key: &str) -> (StatusCode, Value) {
    json_of(server.post("/v1/sessions", Some(key), &json!({}))).await
}

fn ids(listing: &Value) -> Vec<String> {
    listing["data"]
        .as_array()
        .map(|data| {
            data.iter()
                .filter_map(|s| s["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_key_at_its_limit_of_sessions_gets_a_409_naming_it_until_it_deletes_one() {
    let server = start(answering("x"), |server| server.max_sessions_per_key(2)).await;
    let mut created = Vec::new();
    for _ in 0..2 {
        let (status, session) = create_session(&server, KEY).await;
        assert_eq!(status, StatusCode::CREATED, "{session}");
        created.push(session["id"].as_str().unwrap_or_default().to_owned());
    }
    let (status, body) = create_session(&server, KEY).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["type"], "conflict_error", "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("has 2 sessions, the most it may keep"), "{message}");
    let (_, listing) = server.get_as("/v1/sessions", KEY).await;
    assert_eq!(ids(&listing).len(), 2, "the refused one was not created: {listing}");

    let (status, body) = create_session(&server, OTHER_KEY).await;
    assert_eq!(status, StatusCode::CREATED, "each key has its own limit: {body}");
    assert_eq!(
        server.delete_as(&format!("/v1/sessions/{}", created[0]), KEY).await,
        StatusCode::NO_CONTENT
    );
    let (status, body) = create_session(&server, KEY).await;
    assert_eq!(status, StatusCode::CREATED, "one was deleted: {body}");
}

#[tokio::test]
async fn listing_a_keys_sessions_reads_its_sessions_only_not_every_keys() {
    let store = Arc::new(Recording::default());
    let server = start(answering("x"), |server| server.store(store.clone())).await;
    let mut mine = Vec::new();
    for _ in 0..3 {
        mine.push(
            create_session(&server, KEY).await.1["id"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
    }
    for _ in 0..5 {
        assert_eq!(create_session(&server, OTHER_KEY).await.0, StatusCode::CREATED);
    }
    store.take();

    for _ in 0..3 {
        let (status, listing) = server.get_as("/v1/sessions", KEY).await;
        assert_eq!(status, StatusCode::OK, "{listing}");
        let mut listed = ids(&listing);
        listed.sort();
        mine.sort();
        assert_eq!(listed, mine, "the key's sessions, and only them");
    }
    let calls = store.take();
    assert!(
        !calls.iter().any(|call| call == "list"),
        "no listing of every key's sessions: {calls:?}"
    );
    let read = calls.iter().filter(|call| call.starts_with("meta ")).count();
    assert_eq!(
        read,
        3 * mine.len(),
        "each of the key's sessions, once a listing: {calls:?}"
    );
    assert!(
        calls
            .iter()
            .all(|call| mine.iter().any(|id| call.ends_with(id.as_str()))),
        "the other key's sessions are not read: {calls:?}"
    );
}
