//! Reading conversations (their context and their transcript) and
//! compacting them. A summary is a row of `summaries`; the newest one of a
//! conversation is current and hides the messages with `seq` below its
//! `summarised`. Superseded summaries stay, as every message does.

use agent_core::{Conversation, ConversationMeta, Message, StoreError};
use agent_store::{compaction_cut, context_with_summary, make_sendable};
use sqlx_core::query::query;
use sqlx_core::row::Row;
use sqlx_postgres::{PgConnection, PgPool};

use crate::error::db;
use crate::ops::{count, lock, read_meta, to_sql_count};

/// How a read starts: one snapshot for all its statements, so that the
/// metadata, the summary and the messages belong together even while other
/// sessions append or compact.
const BEGIN_SNAPSHOT: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY";

/// The current summary of `name`: its text and how many messages it stands for.
async fn current_summary(conn: &mut PgConnection, name: &str) -> Result<Option<(String, u64)>, StoreError> {
    let row = query("SELECT content, summarised FROM summaries WHERE conversation = $1 ORDER BY id DESC LIMIT 1")
        .bind(name)
        .fetch_optional(conn)
        .await
        .map_err(db)?;
    row.map(|row| Ok((row.try_get(0).map_err(db)?, count(&row, 1)?)))
        .transpose()
}

/// The stored messages of `name` from `first_seq` on, decoded.
async fn read_rows(conn: &mut PgConnection, name: &str, first_seq: u64) -> Result<Vec<Message>, StoreError> {
    let rows = query("SELECT seq, body FROM messages WHERE conversation = $1 AND seq >= $2 ORDER BY seq")
        .bind(name)
        .bind(to_sql_count(first_seq)?)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
    let mut messages = Vec::with_capacity(rows.len());
    for row in &rows {
        let seq: i64 = row.try_get(0).map_err(db)?;
        let body: &str = row.try_get(1).map_err(db)?;
        let message = serde_json::from_str(body).map_err(|error| {
            StoreError::corrupt(format!(
                "message {seq} of conversation `{name}` cannot be read: {error}"
            ))
        })?;
        messages.push(message);
    }
    restore(conn, name, &mut messages).await?;
    Ok(messages)
}

/// Puts the bytes of the stored media `messages` refer to back in them.
async fn restore(conn: &mut PgConnection, name: &str, messages: &mut [Message]) -> Result<(), StoreError> {
    let hashes = agent_store::stored_hashes(messages);
    if hashes.is_empty() {
        return Ok(());
    }
    agent_store::restore_media(name, messages, &held_media(conn, hashes).await?)
}

/// The bytes the store holds for `hashes` (checked against them); a hash
/// it does not hold is left out.
pub(crate) async fn held_media(
    conn: &mut PgConnection,
    hashes: std::collections::BTreeSet<String>,
) -> Result<std::collections::HashMap<String, std::sync::Arc<[u8]>>, StoreError> {
    let hashes: Vec<String> = hashes.into_iter().collect();
    let rows = query("SELECT sha256, data FROM media WHERE sha256 = ANY($1)")
        .bind(&hashes)
        .fetch_all(conn)
        .await
        .map_err(db)?;
    let mut blobs = std::collections::HashMap::with_capacity(rows.len());
    for row in rows {
        let sha256: String = row.try_get(0).map_err(db)?;
        let data: Vec<u8> = row.try_get(1).map_err(db)?;
        let data = agent_store::verified(&sha256, data)?;
        blobs.insert(sha256, data);
    }
    Ok(blobs)
}

/// Loads the context of a conversation (its summary, then the messages
/// after the summarised ones) from one snapshot.
pub async fn load(pool: &PgPool, name: &str) -> Result<Option<Conversation>, StoreError> {
    let mut tx = pool.begin_with(BEGIN_SNAPSHOT).await.map_err(db)?;
    let Some(meta) = read_meta(&mut tx, name).await? else {
        return Ok(None);
    };
    let summary = current_summary(&mut tx, name).await?;
    let summarised = summary.as_ref().map_or(0, |(_, summarised)| *summarised);
    let rows = read_rows(&mut tx, name, summarised).await?;
    tx.commit().await.map_err(db)?;
    let (messages, repairs) = context_with_summary(summary.as_ref().map(|(text, _)| text.as_str()), rows);
    Ok(Some(Conversation {
        meta,
        messages,
        repairs,
        summarised,
    }))
}

/// Loads every stored message of a conversation, without its summary, from
/// one snapshot.
pub async fn transcript(pool: &PgPool, name: &str) -> Result<Option<Conversation>, StoreError> {
    let mut tx = pool.begin_with(BEGIN_SNAPSHOT).await.map_err(db)?;
    let Some(meta) = read_meta(&mut tx, name).await? else {
        return Ok(None);
    };
    let mut messages = read_rows(&mut tx, name, 0).await?;
    tx.commit().await.map_err(db)?;
    let repairs = make_sendable(&mut messages);
    Ok(Some(Conversation {
        meta,
        messages,
        repairs,
        summarised: 0,
    }))
}

/// Stores `summary` in place of the first `replaced` messages of the
/// current context, in one transaction under the conversation's row lock
/// (see [`compaction_cut`]).
pub async fn compact(
    pool: &PgPool,
    name: &str,
    replaced: usize,
    summary: &str,
    now: &str,
) -> Result<ConversationMeta, StoreError> {
    let mut tx = pool.begin().await.map_err(db)?;
    // Appends and other compactions of `name` wait until this commits; the
    // statements below see everything they committed before.
    let meta = lock(&mut tx, name).await?;
    let current = current_summary(&mut tx, name).await?;
    let summarised = current.as_ref().map_or(0, |(_, summarised)| *summarised);
    let rows = read_rows(&mut tx, name, summarised).await?;
    let cut = compaction_cut(name, current.is_some(), &rows, replaced, summary)?;
    query("INSERT INTO summaries (conversation, summarised, content, created_at) VALUES ($1, $2, $3, $4)")
        .bind(name)
        .bind(to_sql_count(summarised + cut as u64)?)
        .bind(summary)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    tx.commit().await.map_err(db)?;
    Ok(meta)
}
