//! Reading conversations (their context and their transcript) and
//! compacting them. A summary is a row of `summaries`; the newest one of a
//! conversation is current and hides the messages with `seq` below its
//! `summarised`. Superseded summaries stay, as every message does.

use agent_core::{Conversation, ConversationMeta, Message, StoreError};
use agent_store::{compaction_cut, context_with_summary, make_sendable};
use rusqlite::{Connection, OptionalExtension, Transaction};

use crate::db;
use crate::ops::{begin_write, count, read_meta, to_sql_count};

/// The current summary of conversation `id`: its text and how many
/// messages it stands for.
fn current_summary(tx: &Transaction<'_>, id: i64) -> Result<Option<(String, u64)>, StoreError> {
    tx.query_row(
        "SELECT content, summarised FROM summaries WHERE conversation_id = ?1 ORDER BY id DESC LIMIT 1",
        [id],
        |row| Ok((row.get(0)?, count(row, 1)?)),
    )
    .optional()
    .map_err(db)
}

/// The stored messages of conversation `id` (called `name`) from `first_seq` on.
fn read_rows(
    tx: &Transaction<'_>,
    id: i64,
    name: &str,
    first_seq: u64,
    capacity: u64,
) -> Result<Vec<Message>, StoreError> {
    let mut messages = Vec::with_capacity(usize::try_from(capacity).unwrap_or(0));
    let mut statement = tx
        .prepare_cached("SELECT seq, body FROM messages WHERE conversation_id = ?1 AND seq >= ?2 ORDER BY seq")
        .map_err(db)?;
    let mut rows = statement.query((id, to_sql_count(first_seq)?)).map_err(db)?;
    while let Some(row) = rows.next().map_err(db)? {
        let seq: i64 = row.get(0).map_err(db)?;
        let body: String = row.get(1).map_err(db)?;
        let message = serde_json::from_str(&body).map_err(|error| {
            StoreError::corrupt(format!(
                "message {seq} of conversation `{name}` cannot be read: {error}"
            ))
        })?;
        messages.push(message);
    }
    drop(rows);
    drop(statement);
    restore(tx, name, &mut messages)?;
    Ok(messages)
}

/// Puts the bytes of the stored media `messages` refer to back in them.
fn restore(tx: &Transaction<'_>, name: &str, messages: &mut [Message]) -> Result<(), StoreError> {
    let hashes = agent_store::stored_hashes(messages);
    if hashes.is_empty() {
        return Ok(());
    }
    agent_store::restore_media(name, messages, &held_media(tx, hashes)?)
}

/// The bytes the store holds for `hashes` (checked against them); a hash
/// it does not hold is left out.
pub(crate) fn held_media(
    conn: &Connection,
    hashes: std::collections::BTreeSet<String>,
) -> Result<std::collections::HashMap<String, std::sync::Arc<[u8]>>, StoreError> {
    let mut blobs = std::collections::HashMap::with_capacity(hashes.len());
    let mut statement = conn
        .prepare_cached("SELECT data FROM media WHERE sha256 = ?1")
        .map_err(db)?;
    for sha256 in hashes {
        let data: Option<Vec<u8>> = statement
            .query_row([&sha256], |row| row.get(0))
            .optional()
            .map_err(db)?;
        if let Some(data) = data {
            let data = agent_store::verified(&sha256, data)?;
            blobs.insert(sha256, data);
        }
    }
    Ok(blobs)
}

/// The metadata of the conversation `name`, if it exists.
pub fn meta(conn: &mut Connection, name: &str) -> Result<Option<ConversationMeta>, StoreError> {
    let tx = conn.transaction().map_err(db)?;
    let meta = read_meta(&tx, name)?.map(|(_, meta)| meta);
    tx.finish().map_err(db)?;
    Ok(meta)
}

/// Loads the context of a conversation (its summary, then the messages
/// after the summarised ones) in one read transaction: a consistent snapshot.
pub fn load(conn: &mut Connection, name: &str) -> Result<Option<Conversation>, StoreError> {
    let tx = conn.transaction().map_err(db)?;
    let Some((id, meta)) = read_meta(&tx, name)? else {
        return Ok(None);
    };
    let summary = current_summary(&tx, id)?;
    let summarised = summary.as_ref().map_or(0, |(_, summarised)| *summarised);
    let capacity = meta.message_count.saturating_sub(summarised) + 1;
    let rows = read_rows(&tx, id, name, summarised, capacity)?;
    tx.finish().map_err(db)?;
    let (messages, repairs) = context_with_summary(summary.as_ref().map(|(text, _)| text.as_str()), rows);
    Ok(Some(Conversation {
        meta,
        messages,
        repairs,
        summarised,
    }))
}

/// Loads every stored message of a conversation, without its summary, in
/// one read transaction.
pub fn transcript(conn: &mut Connection, name: &str) -> Result<Option<Conversation>, StoreError> {
    let tx = conn.transaction().map_err(db)?;
    let Some((id, meta)) = read_meta(&tx, name)? else {
        return Ok(None);
    };
    let mut messages = read_rows(&tx, id, name, 0, meta.message_count)?;
    tx.finish().map_err(db)?;
    let repairs = make_sendable(&mut messages);
    Ok(Some(Conversation {
        meta,
        messages,
        repairs,
        summarised: 0,
    }))
}

/// Stores `summary` in place of the first `replaced` messages of the
/// current context, in one transaction (see [`compaction_cut`]).
pub fn compact(
    conn: &mut Connection,
    name: &str,
    replaced: usize,
    summary: &str,
    now: &str,
) -> Result<agent_core::ConversationMeta, StoreError> {
    let tx = begin_write(conn)?;
    let (id, meta) = read_meta(&tx, name)?.ok_or_else(|| StoreError::not_found(name))?;
    let current = current_summary(&tx, id)?;
    let summarised = current.as_ref().map_or(0, |(_, summarised)| *summarised);
    let rows = read_rows(&tx, id, name, summarised, meta.message_count.saturating_sub(summarised))?;
    let cut = compaction_cut(name, current.is_some(), &rows, replaced, summary)?;
    tx.execute(
        "INSERT INTO summaries (conversation_id, summarised, content, created_at) VALUES (?1, ?2, ?3, ?4)",
        (id, to_sql_count(summarised + cut as u64)?, summary, now),
    )
    .map_err(db)?;
    tx.commit().map_err(db)?;
    Ok(meta)
}
