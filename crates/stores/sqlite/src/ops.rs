//! The store's operations as blocking functions on one connection. Every
//! write runs in one `BEGIN IMMEDIATE` transaction: it takes the database's
//! write lock first (waiting up to the busy timeout), so concurrent writers
//! from any process are serialised and never interleave.

use agent_core::{ConversationMeta, StoreError, Usage};
use agent_store::{EncodedMessage, EncodedTurn};
use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};

use crate::db;

/// The columns [`meta_at`] reads, from `conversations`.
const META_COLUMNS: &str = "name, created_at, updated_at, provider, model, input_tokens, output_tokens, \
     cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, message_count, user_turns, \
     EXISTS (SELECT 1 FROM checkpoints WHERE checkpoints.conversation_id = conversations.id)";

/// A count read from an integer column (negative values read as 0).
pub fn count(row: &Row<'_>, index: usize) -> rusqlite::Result<u64> {
    Ok(row.get::<_, i64>(index)?.max(0) as u64)
}

/// The [`META_COLUMNS`] of `row`, starting at column `first`.
fn meta_at(row: &Row<'_>, first: usize) -> rusqlite::Result<ConversationMeta> {
    Ok(ConversationMeta {
        name: row.get(first)?,
        created_at: row.get(first + 1)?,
        updated_at: row.get(first + 2)?,
        provider: row.get(first + 3)?,
        model: row.get(first + 4)?,
        usage: Usage {
            input_tokens: count(row, first + 5)?,
            output_tokens: count(row, first + 6)?,
            cache_read_tokens: count(row, first + 7)?,
            cache_write_tokens: count(row, first + 8)?,
            reasoning_tokens: count(row, first + 9)?,
        },
        cost_usd: row.get(first + 10)?,
        message_count: count(row, first + 11)?,
        user_turns: count(row, first + 12)?,
        has_checkpoint: row.get(first + 13)?,
    })
}

/// `value` as an SQLite integer.
pub fn to_sql_count(value: u64) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::backend(format!("the count {value} is too large to store")))
}

/// Starts a write: `BEGIN IMMEDIATE` takes the write lock first.
pub fn begin_write(conn: &mut Connection) -> Result<Transaction<'_>, StoreError> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(db)
}

/// The id of the conversation `name`; a [`StoreError::NotFound`] when there is none.
pub fn conversation_id(tx: &Transaction<'_>, name: &str) -> Result<i64, StoreError> {
    tx.query_row("SELECT id FROM conversations WHERE name = ?1", [name], |row| row.get(0))
        .optional()
        .map_err(db)?
        .ok_or_else(|| StoreError::not_found(name))
}

/// The id and metadata of the conversation `name`, if it exists.
pub fn read_meta(tx: &Transaction<'_>, name: &str) -> Result<Option<(i64, ConversationMeta)>, StoreError> {
    tx.query_row(
        &format!("SELECT id, {META_COLUMNS} FROM conversations WHERE name = ?1"),
        [name],
        |row| Ok((row.get(0)?, meta_at(row, 1)?)),
    )
    .optional()
    .map_err(db)
}

/// Creates an empty conversation.
pub fn create(conn: &mut Connection, name: &str, now: &str) -> Result<ConversationMeta, StoreError> {
    let tx = begin_write(conn)?;
    let inserted = tx
        .execute(
            "INSERT INTO conversations (name, created_at, updated_at) VALUES (?1, ?2, ?2) \
             ON CONFLICT (name) DO NOTHING",
            params![name, now],
        )
        .map_err(db)?;
    if inserted == 0 {
        return Err(StoreError::already_exists(name));
    }
    tx.commit().map_err(db)?;
    Ok(ConversationMeta::new(name, now))
}

fn insert_messages(
    tx: &Transaction<'_>,
    id: i64,
    first_seq: i64,
    turn: i64,
    messages: &[EncodedMessage],
) -> Result<(), StoreError> {
    let mut statement = tx
        .prepare_cached("INSERT INTO messages (conversation_id, seq, turn, role, body) VALUES (?1, ?2, ?3, ?4, ?5)")
        .map_err(db)?;
    for (seq, message) in (first_seq..).zip(messages) {
        statement
            .execute(params![id, seq, turn, message.role, message.body])
            .map_err(db)?;
        insert_media(tx, id, &message.media)?;
    }
    Ok(())
}

/// Keeps each of `media` once in the store, used by conversation `id`.
pub(crate) fn insert_media(tx: &Transaction<'_>, id: i64, media: &[agent_store::MediaBlob]) -> Result<(), StoreError> {
    for blob in media {
        tx.prepare_cached(
            "INSERT INTO media (sha256, mime_type, size, data) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (sha256) DO NOTHING",
        )
        .map_err(db)?
        .execute(params![
            blob.sha256,
            blob.mime_type,
            to_sql_count(blob.data.len() as u64)?,
            &blob.data[..]
        ])
        .map_err(db)?;
        tx.prepare_cached(
            "INSERT INTO conversation_media (conversation_id, sha256) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
        )
        .map_err(db)?
        .execute(params![id, blob.sha256])
        .map_err(db)?;
    }
    Ok(())
}

/// Appends one turn and its metadata delta in one transaction.
pub fn append(
    conn: &mut Connection,
    name: &str,
    turn: &EncodedTurn,
    now: &str,
) -> Result<ConversationMeta, StoreError> {
    let tx = begin_write(conn)?;
    let found: Option<(i64, i64, i64)> = tx
        .query_row(
            "SELECT id, message_count, turn_count FROM conversations WHERE name = ?1",
            [name],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()
        .map_err(db)?;
    let (id, next_seq, turn_index) = found.ok_or_else(|| StoreError::not_found(name))?;
    insert_messages(&tx, id, next_seq, turn_index, &turn.messages)?;
    // The turn ends the run its checkpoint belongs to: never keep both.
    tx.execute("DELETE FROM checkpoints WHERE conversation_id = ?1", [id])
        .map_err(db)?;
    tx.execute(
        "UPDATE conversations SET updated_at = ?2, provider = coalesce(?3, provider), model = coalesce(?4, model), \
         input_tokens = input_tokens + ?5, output_tokens = output_tokens + ?6, \
         cache_read_tokens = cache_read_tokens + ?7, cache_write_tokens = cache_write_tokens + ?8, \
         reasoning_tokens = reasoning_tokens + ?9, cost_usd = cost_usd + ?10, \
         message_count = message_count + ?11, user_turns = user_turns + ?12, turn_count = turn_count + 1 \
         WHERE id = ?1",
        params![
            id,
            now,
            turn.provider,
            turn.model,
            to_sql_count(turn.usage.input_tokens)?,
            to_sql_count(turn.usage.output_tokens)?,
            to_sql_count(turn.usage.cache_read_tokens)?,
            to_sql_count(turn.usage.cache_write_tokens)?,
            to_sql_count(turn.usage.reasoning_tokens)?,
            turn.cost_usd,
            to_sql_count(turn.messages.len() as u64)?,
            to_sql_count(turn.user_messages)?,
        ],
    )
    .map_err(db)?;
    let (_, meta) = read_meta(&tx, name)?.ok_or_else(|| StoreError::not_found(name))?;
    tx.commit().map_err(db)?;
    Ok(meta)
}

/// Every conversation's metadata, most recently updated first.
pub fn list(conn: &Connection) -> Result<Vec<ConversationMeta>, StoreError> {
    let mut statement = conn
        .prepare_cached(&format!(
            "SELECT {META_COLUMNS} FROM conversations ORDER BY updated_at DESC, name ASC"
        ))
        .map_err(db)?;
    let rows = statement.query_map([], |row| meta_at(row, 0)).map_err(db)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(db)
}

/// Deletes a conversation with its messages, summaries and checkpoint.
pub fn delete(conn: &mut Connection, name: &str) -> Result<(), StoreError> {
    let tx = begin_write(conn)?;
    let id = conversation_id(&tx, name)?;
    for table in ["messages", "summaries", "checkpoints", "conversation_media"] {
        tx.execute(&format!("DELETE FROM {table} WHERE conversation_id = ?1"), [id])
            .map_err(db)?;
    }
    tx.execute("DELETE FROM conversations WHERE id = ?1", [id])
        .map_err(db)?;
    // Media no other conversation uses go with it.
    tx.execute(
        "DELETE FROM media WHERE NOT EXISTS (SELECT 1 FROM conversation_media WHERE conversation_media.sha256 = media.sha256)",
        [],
    )
    .map_err(db)?;
    tx.commit().map_err(db)
}

/// Stores a whole conversation with its metadata, as turn 0.
pub fn import(
    conn: &mut Connection,
    meta: &ConversationMeta,
    messages: &[EncodedMessage],
) -> Result<ConversationMeta, StoreError> {
    let tx = begin_write(conn)?;
    let inserted = tx
        .execute(
            "INSERT INTO conversations (name, created_at, updated_at, provider, model, input_tokens, output_tokens, \
             cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, message_count, user_turns, turn_count) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, 1) ON CONFLICT (name) DO NOTHING",
            params![
                meta.name,
                meta.created_at,
                meta.updated_at,
                meta.provider,
                meta.model,
                to_sql_count(meta.usage.input_tokens)?,
                to_sql_count(meta.usage.output_tokens)?,
                to_sql_count(meta.usage.cache_read_tokens)?,
                to_sql_count(meta.usage.cache_write_tokens)?,
                to_sql_count(meta.usage.reasoning_tokens)?,
                meta.cost_usd,
                to_sql_count(meta.message_count)?,
                to_sql_count(meta.user_turns)?,
            ],
        )
        .map_err(db)?;
    if inserted == 0 {
        return Err(StoreError::already_exists(&meta.name));
    }
    insert_messages(&tx, tx.last_insert_rowid(), 0, 0, messages)?;
    tx.commit().map_err(db)?;
    Ok(meta.clone())
}
