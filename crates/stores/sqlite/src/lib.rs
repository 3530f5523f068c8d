//! # agent-store-sqlite
//!
//! Agentry's embedded [`ConversationStore`]: every conversation in one SQLite
//! file, shared safely by several processes.
//!
//! - **Atomic turns.** Each [`append`](ConversationStore::append) is one
//!   `BEGIN IMMEDIATE` transaction holding the turn's messages and its
//!   metadata delta (provider, model, usage, cost). A crash never keeps part
//!   of a turn, so a model turn appended with its tool results is never
//!   stored without them.
//! - **Always sendable.** Should a caller append tool calls and their results
//!   in separate turns and die in between, [`load`](ConversationStore::load)
//!   gives each call without a result an error result saying
//!   [`LOST_RESULT`](agent_core::LOST_RESULT) (see
//!   [`make_sendable`](agent_store::make_sendable)); the rows stay as they
//!   are, so every load shows the same conversation.
//! - **Compaction keeps everything.** [`compact`](ConversationStore::compact)
//!   stores a summary in place of the oldest messages of the context, in one
//!   transaction; [`load`](ConversationStore::load) then returns the summary
//!   followed by the later messages, and
//!   [`transcript`](ConversationStore::transcript) every stored message. No
//!   message is deleted, and a superseded summary stays in the file too.
//! - **Run checkpoints.** [`save_checkpoint`](ConversationStore::save_checkpoint)
//!   keeps one run state (opaque JSON) per conversation, durably, so a
//!   crashed or interrupted run can resume;
//!   [`append`](ConversationStore::append) deletes it in the turn's
//!   transaction, so a turn and a stale checkpoint that would replay it are
//!   never both stored.
//! - **Several processes.** Write-ahead logging lets readers go on while one
//!   process writes; writers wait for each other up to the busy timeout
//!   (10 s by default) instead of failing. Concurrent turns are stored one
//!   after the other, never interleaved. Keep the file on a local file
//!   system (WAL needs shared memory).
//! - **Durable and private.** `synchronous = FULL`: a turn reported as
//!   appended survives a power cut. On unix the file (and the directory,
//!   when this creates it) is readable by its owner only.
//! - **Migrations.** The schema version is `PRAGMA user_version`
//!   ([`SCHEMA_VERSION`]); opening an older file upgrades it in one
//!   transaction, opening a newer one is refused.
//!
//! Messages are stored as JSON rows (the serde form of
//! [`Message`]) numbered in order, so reopening gives identical messages;
//! summaries and checkpoints are text rows of their own.
//! rusqlite blocks, so every operation runs on tokio's blocking pool: use the
//! store inside a tokio runtime.
//!
//! ```
//! use agent_core::{ConversationStore, Message, TurnMeta, Usage};
//! use agent_store_sqlite::SqliteStore;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let store = SqliteStore::open(dir.path().join("conversations.db"))?;
//! store.create("trip").await?;
//! let turn = [Message::user("Weather in Tokyo?"), Message::assistant("Sunny, 21°C.")];
//! store.append("trip", &turn, &TurnMeta::new("openai", "gpt-4o-mini", Usage::new(20, 8), 0.00002)).await?;
//!
//! let reopened = SqliteStore::open(dir.path().join("conversations.db"))?;
//! let trip = reopened.load("trip").await?.ok_or("not stored")?;
//! assert_eq!(trip.messages, turn);
//! assert_eq!(trip.meta.usage.total_tokens(), 28);
//! assert_eq!(reopened.list().await?[0].name, "trip");
//!
//! // A run saves its state at each step; the turn it stores clears it.
//! reopened.save_checkpoint("trip", &serde_json::json!({"step": 1})).await?;
//! assert!(reopened.list().await?[0].has_checkpoint);
//! let next = [Message::user("And tomorrow?"), Message::assistant("Rain.")];
//! reopened.append("trip", &next, &TurnMeta::default()).await?;
//! assert_eq!(reopened.checkpoint("trip").await?, None);
//!
//! // A summary replaces the first turn in the context; the transcript keeps it.
//! reopened.compact("trip", 2, "Summary: Tokyo was sunny, 21°C.").await?;
//! let context = reopened.load("trip").await?.ok_or("not stored")?;
//! assert_eq!(context.messages, [vec![Message::system("Summary: Tokyo was sunny, 21°C.")], next.to_vec()].concat());
//! assert_eq!(context.summarised, 2);
//! assert_eq!(reopened.transcript("trip").await?.ok_or("not stored")?.messages.len(), 4);
//! # Ok(())
//! # }
//! ```

mod checkpoint;
mod context;
mod ops;
mod schema;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_core::{
    Conversation, ConversationMeta, ConversationStore, Message, StoreError, TurnMeta, validate_conversation_name,
};
use agent_store::{EncodedMessage, EncodedTurn, imported_meta, utc_now};
use async_trait::async_trait;
use rusqlite::Connection;

pub use crate::schema::SCHEMA_VERSION;

/// How long an operation waits for another connection's write by default.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// A [`ConversationStore`] on one SQLite file. Cheap to clone (clones share
/// one connection); several processes may open the same file.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl SqliteStore {
    /// Opens the store at `path`, creating the file (and its directory) when
    /// missing and migrating its schema. Blocks while it does so.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with_busy_timeout(path, DEFAULT_BUSY_TIMEOUT)
    }

    /// Like [`open`](Self::open), waiting at most `busy_timeout` for other
    /// connections' writes before an operation fails.
    pub fn open_with_busy_timeout(path: impl AsRef<Path>, busy_timeout: Duration) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let conn = schema::open(&path, busy_timeout)?;
        Ok(Self {
            inner: Arc::new(Inner {
                path,
                conn: Mutex::new(conn),
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `operation` on the connection on tokio's blocking pool.
    async fn run<T, F>(&self, operation: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            // A panic inside an operation rolls its transaction back, so the
            // connection is still usable when the lock is poisoned.
            let mut conn = inner.conn.lock().unwrap_or_else(PoisonError::into_inner);
            operation(&mut conn)
        })
        .await
        .map_err(|error| StoreError::backend(format!("the store's worker thread failed: {error}")))?
    }
}

/// A rusqlite error as a [`StoreError`].
pub(crate) fn db(error: rusqlite::Error) -> StoreError {
    StoreError::backend(error)
}

#[async_trait]
impl ConversationStore for SqliteStore {
    async fn create(&self, name: &str) -> Result<ConversationMeta, StoreError> {
        validate_conversation_name(name)?;
        let name = name.to_owned();
        self.run(move |conn| ops::create(conn, &name, &utc_now())).await
    }

    async fn load(&self, name: &str) -> Result<Option<Conversation>, StoreError> {
        validate_conversation_name(name)?;
        let name = name.to_owned();
        self.run(move |conn| context::load(conn, &name)).await
    }

    async fn meta(&self, name: &str) -> Result<Option<ConversationMeta>, StoreError> {
        validate_conversation_name(name)?;
        let name = name.to_owned();
        self.run(move |conn| context::meta(conn, &name)).await
    }

    async fn transcript(&self, name: &str) -> Result<Option<Conversation>, StoreError> {
        validate_conversation_name(name)?;
        let name = name.to_owned();
        self.run(move |conn| context::transcript(conn, &name)).await
    }

    async fn append(&self, name: &str, turn: &[Message], delta: &TurnMeta) -> Result<ConversationMeta, StoreError> {
        validate_conversation_name(name)?;
        let encoded = EncodedTurn::new(turn, delta)?;
        let name = name.to_owned();
        self.run(move |conn| ops::append(conn, &name, &encoded, &utc_now()))
            .await
    }

    async fn compact(&self, name: &str, replaced: usize, summary: &str) -> Result<ConversationMeta, StoreError> {
        validate_conversation_name(name)?;
        let name = name.to_owned();
        let summary = summary.to_owned();
        self.run(move |conn| context::compact(conn, &name, replaced, &summary, &utc_now()))
            .await
    }

    async fn list(&self) -> Result<Vec<ConversationMeta>, StoreError> {
        self.run(|conn| ops::list(conn)).await
    }

    async fn delete(&self, name: &str) -> Result<(), StoreError> {
        validate_conversation_name(name)?;
        let name = name.to_owned();
        self.run(move |conn| ops::delete(conn, &name)).await
    }

    async fn import(&self, conversation: &Conversation) -> Result<ConversationMeta, StoreError> {
        let meta = imported_meta(conversation)?;
        let messages = EncodedMessage::all(&conversation.messages)?;
        self.run(move |conn| ops::import(conn, &meta, &messages)).await
    }

    async fn save_checkpoint(&self, name: &str, checkpoint: &serde_json::Value) -> Result<(), StoreError> {
        validate_conversation_name(name)?;
        let (body, media) = agent_store::encode_checkpoint(name, checkpoint)?;
        let name = name.to_owned();
        self.run(move |conn| checkpoint::save(conn, &name, &body, &media, &utc_now()))
            .await
    }

    async fn checkpoint(&self, name: &str) -> Result<Option<serde_json::Value>, StoreError> {
        validate_conversation_name(name)?;
        let name = name.to_owned();
        self.run(move |conn| checkpoint::load(conn, &name)).await
    }

    async fn clear_checkpoint(&self, name: &str) -> Result<(), StoreError> {
        validate_conversation_name(name)?;
        let name = name.to_owned();
        self.run(move |conn| checkpoint::clear(conn, &name)).await
    }
}
