//! # agent-store-postgres
//!
//! Agentry's server [`ConversationStore`]: every conversation in a
//! PostgreSQL database, shared safely by any number of processes and
//! machines. It keeps the semantics of the SQLite store
//! (`agent-store-sqlite`) exactly: same operations, same errors for the same
//! situations.
//!
//! - **Atomic turns.** Each [`append`](ConversationStore::append) is one
//!   transaction holding the turn's messages and its metadata delta
//!   (provider, model, usage, cost). A crash or a lost connection never keeps
//!   part of a turn, so a model turn appended with its tool results is never
//!   stored without them.
//! - **Serialised per conversation.** That transaction first locks the
//!   conversation's row (`SELECT ... FOR UPDATE`): turns appended at once to
//!   one conversation, by tasks of one process or by many processes, are
//!   stored one after the other, contiguous, none lost or duplicated.
//!   [`compact`](ConversationStore::compact) takes the same lock. Different
//!   conversations never wait for each other.
//! - **Always sendable.** Should a caller append tool calls and their results
//!   in separate turns and die in between, [`load`](ConversationStore::load)
//!   gives each call without a result an error result saying
//!   [`LOST_RESULT`](agent_core::LOST_RESULT) (see
//!   [`make_sendable`](agent_store::make_sendable)); the rows stay as they
//!   are, so every load shows the same conversation.
//! - **Consistent reads.** [`load`](ConversationStore::load) and
//!   [`transcript`](ConversationStore::transcript) read from one snapshot
//!   (a repeatable-read, read-only transaction): metadata, summary and
//!   messages always belong together.
//! - **Compaction keeps everything.** [`compact`](ConversationStore::compact)
//!   stores a summary in place of the oldest messages of the context, in one
//!   transaction; [`load`](ConversationStore::load) then returns the summary
//!   followed by the later messages, and
//!   [`transcript`](ConversationStore::transcript) every stored message.
//!   Superseded summaries stay too.
//! - **Run checkpoints.** [`save_checkpoint`](ConversationStore::save_checkpoint)
//!   keeps one run state (opaque JSON) per conversation, so a crashed or
//!   interrupted run can resume; [`append`](ConversationStore::append)
//!   deletes it in the turn's transaction, so a turn and a stale checkpoint
//!   that would replay it are never both stored.
//! - **Identical reloads.** Messages and checkpoints are stored as the JSON
//!   text serde wrote (not `JSONB`, which reorders keys), so a reload gives
//!   back exactly what was appended.
//! - **Migrations.** [`connect`](PostgresStore::connect) and
//!   [`from_pool`](PostgresStore::from_pool) apply the schema's migrations
//!   (up to [`LATEST_MIGRATION`]) under sqlx's advisory lock, so stores
//!   starting together against a new database set it up once; a database
//!   migrated by a newer version is refused. The migrations are recorded in
//!   `_sqlx_migrations`: give the store a database of its own.
//! - **No password in logs.** [`PostgresStore`]'s `Debug` shows the user,
//!   server and database, never the URL's password, and neither do its
//!   errors.
//!
//! Delete a conversation and its messages, summaries and checkpoint go with
//! it (`ON DELETE CASCADE`). The store is a connection pool: use it inside a
//! tokio runtime. TLS (the URL's `sslmode`; sqlx's default, `prefer`, uses
//! it when the server offers it) is rustls with the webpki root
//! certificates.
//!
//! The example runs against a throwaway server (`testing::TempCluster`,
//! feature `test-cluster`) and does nothing where PostgreSQL is not
//! installed; with a real server, `connect` takes its URL.
//!
//! ```
//! use agent_core::{ConversationStore, Message, TurnMeta, Usage};
//! use agent_store_postgres::PostgresStore;
//! use agent_store_postgres::testing::TempCluster;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let Some(cluster) = TempCluster::start()? else { return Ok(()) };
//! let url = cluster.create_database("agentry").await?; // postgres://postgres@127.0.0.1:PORT/agentry
//! let store = PostgresStore::connect(&url).await?;
//! store.create("trip").await?;
//! let turn = [Message::user("Weather in Tokyo?"), Message::assistant("Sunny, 21°C.")];
//! store.append("trip", &turn, &TurnMeta::new("openai", "gpt-4o-mini", Usage::new(20, 8), 0.00002)).await?;
//!
//! // Another process (here: another pool) sees the same conversation.
//! let other = PostgresStore::connect(&url).await?;
//! let trip = other.load("trip").await?.ok_or("not stored")?;
//! assert_eq!(trip.messages, turn);
//! assert_eq!(trip.meta.usage.total_tokens(), 28);
//! assert_eq!(other.list().await?[0].name, "trip");
//!
//! // A run saves its state at each step; the turn it stores clears it.
//! other.save_checkpoint("trip", &serde_json::json!({"step": 1})).await?;
//! assert!(other.list().await?[0].has_checkpoint);
//! let next = [Message::user("And tomorrow?"), Message::assistant("Rain.")];
//! other.append("trip", &next, &TurnMeta::default()).await?;
//! assert_eq!(other.checkpoint("trip").await?, None);
//!
//! // A summary replaces the first turn in the context; the transcript keeps it.
//! other.compact("trip", 2, "Summary: Tokyo was sunny, 21°C.").await?;
//! let context = other.load("trip").await?.ok_or("not stored")?;
//! assert_eq!(context.messages, [vec![Message::system("Summary: Tokyo was sunny, 21°C.")], next.to_vec()].concat());
//! assert_eq!(context.summarised, 2);
//! assert_eq!(other.transcript("trip").await?.ok_or("not stored")?.messages.len(), 4);
//! # Ok(())
//! # }
//! ```

mod checkpoint;
mod context;
mod error;
mod ops;
mod schema;
#[cfg(feature = "test-cluster")]
pub mod testing;

use std::fmt;
use std::sync::Arc;

use agent_core::{
    Conversation, ConversationMeta, ConversationStore, Message, StoreError, TurnMeta, validate_conversation_name,
};
use agent_store::{EncodedMessage, EncodedTurn, imported_meta, utc_now};
use async_trait::async_trait;
pub use sqlx_postgres::{PgConnectOptions, PgPool, PgPoolOptions};

pub use crate::schema::LATEST_MIGRATION;

/// How many connections [`PostgresStore::connect`]'s pool opens at most.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 10;

/// A [`ConversationStore`] on a PostgreSQL database. Cheap to clone (clones
/// share one connection pool); any number of stores, in any number of
/// processes, may use the same database.
#[derive(Clone)]
pub struct PostgresStore {
    pool: PgPool,
    /// `user@host:port/database`, for `Debug` and errors: no password.
    server: Arc<str>,
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/database`,
    /// with the usual query parameters such as `sslmode`) with a pool of at
    /// most [`DEFAULT_MAX_CONNECTIONS`], and migrates its schema. A server
    /// that refuses connections is retried for up to 30 s (sqlx's acquire
    /// timeout, which also bounds each operation's wait for a free
    /// connection); build the pool yourself and use
    /// [`from_pool`](Self::from_pool) to choose other limits.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let options: PgConnectOptions = url
            .parse()
            .map_err(|error| StoreError::backend(format!("invalid PostgreSQL URL: {error}")))?;
        let server = describe(&options);
        let pool = PgPoolOptions::new()
            .max_connections(DEFAULT_MAX_CONNECTIONS)
            .connect_with(options)
            .await
            .map_err(|error| StoreError::backend(format!("connecting to PostgreSQL at {server}: {error}")))?;
        Self::migrated(pool, server).await
    }

    /// A store on `pool` (configured as you like), after migrating the
    /// schema of its database.
    pub async fn from_pool(pool: PgPool) -> Result<Self, StoreError> {
        let server = describe(&pool.connect_options());
        Self::migrated(pool, server).await
    }

    async fn migrated(pool: PgPool, server: String) -> Result<Self, StoreError> {
        schema::migrate(&pool).await.map_err(|error| match error {
            StoreError::Backend { message } => StoreError::backend(format!("PostgreSQL at {server}: {message}")),
            other => other,
        })?;
        Ok(Self {
            pool,
            server: server.into(),
        })
    }

    /// The connection pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Closes the pool (of every clone) gracefully: waits for the
    /// operations in progress, then ends each connection. Operations started
    /// afterwards fail with [`StoreError::Backend`].
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("server", &self.server)
            .field("connections", &self.pool.size())
            .field("idle", &self.pool.num_idle())
            .finish_non_exhaustive()
    }
}

/// Where `options` connect to, without the password: `user@host:port/database`.
fn describe(options: &PgConnectOptions) -> String {
    let user = options.get_username();
    let place = match options.get_socket() {
        Some(dir) => format!("{}:{}", dir.display(), options.get_port()),
        None => format!("{}:{}", options.get_host(), options.get_port()),
    };
    match options.get_database() {
        Some(database) => format!("{user}@{place}/{database}"),
        None => format!("{user}@{place}"),
    }
}

#[async_trait]
impl ConversationStore for PostgresStore {
    async fn create(&self, name: &str) -> Result<ConversationMeta, StoreError> {
        validate_conversation_name(name)?;
        ops::create(&self.pool, name, &utc_now()).await
    }

    async fn load(&self, name: &str) -> Result<Option<Conversation>, StoreError> {
        validate_conversation_name(name)?;
        context::load(&self.pool, name).await
    }

    async fn meta(&self, name: &str) -> Result<Option<ConversationMeta>, StoreError> {
        validate_conversation_name(name)?;
        let mut conn = self.pool.acquire().await.map_err(error::db)?;
        ops::read_meta(&mut conn, name).await
    }

    async fn transcript(&self, name: &str) -> Result<Option<Conversation>, StoreError> {
        validate_conversation_name(name)?;
        context::transcript(&self.pool, name).await
    }

    async fn append(&self, name: &str, turn: &[Message], delta: &TurnMeta) -> Result<ConversationMeta, StoreError> {
        validate_conversation_name(name)?;
        let encoded = EncodedTurn::new(turn, delta)?;
        ops::append(&self.pool, name, &encoded, &utc_now()).await
    }

    async fn compact(&self, name: &str, replaced: usize, summary: &str) -> Result<ConversationMeta, StoreError> {
        validate_conversation_name(name)?;
        context::compact(&self.pool, name, replaced, summary, &utc_now()).await
    }

    async fn list(&self) -> Result<Vec<ConversationMeta>, StoreError> {
        ops::list(&self.pool).await
    }

    async fn delete(&self, name: &str) -> Result<(), StoreError> {
        validate_conversation_name(name)?;
        ops::delete(&self.pool, name).await
    }

    async fn import(&self, conversation: &Conversation) -> Result<ConversationMeta, StoreError> {
        let meta = imported_meta(conversation)?;
        let messages = EncodedMessage::all(&conversation.messages)?;
        ops::import(&self.pool, &meta, &messages).await
    }

    async fn save_checkpoint(&self, name: &str, checkpoint: &serde_json::Value) -> Result<(), StoreError> {
        validate_conversation_name(name)?;
        let (body, media) = agent_store::encode_checkpoint(name, checkpoint)?;
        checkpoint::save(&self.pool, name, &body, &media, &utc_now()).await
    }

    async fn checkpoint(&self, name: &str) -> Result<Option<serde_json::Value>, StoreError> {
        validate_conversation_name(name)?;
        checkpoint::load(&self.pool, name).await
    }

    async fn clear_checkpoint(&self, name: &str) -> Result<(), StoreError> {
        validate_conversation_name(name)?;
        checkpoint::clear(&self.pool, name).await
    }
}
