//! Run checkpoints: at most one per conversation, a row of `checkpoints`
//! holding opaque JSON, its attachments kept once in `media` like a
//! message's. [`ops::append`](crate::ops::append) deletes it in the turn's
//! transaction.

use agent_core::StoreError;
use rusqlite::{Connection, OptionalExtension};

use crate::db;
use crate::ops::{begin_write, conversation_id, insert_media};

/// Stores `body` (JSON text, its attachments references to `media`) as the
/// checkpoint of `name`, replacing any, in one transaction.
pub fn save(
    conn: &mut Connection,
    name: &str,
    body: &str,
    media: &[agent_store::MediaBlob],
    now: &str,
) -> Result<(), StoreError> {
    let tx = begin_write(conn)?;
    let id = conversation_id(&tx, name)?;
    insert_media(&tx, id, media)?;
    tx.execute(
        "INSERT INTO checkpoints (conversation_id, saved_at, body) VALUES (?1, ?2, ?3) \
         ON CONFLICT (conversation_id) DO UPDATE SET saved_at = excluded.saved_at, body = excluded.body",
        (id, now, body),
    )
    .map_err(db)?;
    tx.commit().map_err(db)
}

/// The checkpoint of `name`, parsed; `None` when it has none.
pub fn load(conn: &Connection, name: &str) -> Result<Option<serde_json::Value>, StoreError> {
    let found: Option<Option<String>> = conn
        .query_row(
            "SELECT checkpoints.body FROM conversations \
             LEFT JOIN checkpoints ON checkpoints.conversation_id = conversations.id \
             WHERE conversations.name = ?1",
            [name],
            |row| row.get(0),
        )
        .optional()
        .map_err(db)?;
    let Some(body) = found.ok_or_else(|| StoreError::not_found(name))? else {
        return Ok(None);
    };
    let mut checkpoint: serde_json::Value = serde_json::from_str(&body).map_err(|error| {
        StoreError::corrupt(format!(
            "the run checkpoint of conversation `{name}` cannot be read: {error}"
        ))
    })?;
    let hashes = agent_store::stored_hashes_in(&checkpoint);
    if !hashes.is_empty() {
        let held = crate::context::held_media(conn, hashes)?;
        agent_store::restore_value(name, &mut checkpoint, &held)?;
    }
    Ok(Some(checkpoint))
}

/// Deletes the checkpoint of `name`, if there is one.
pub fn clear(conn: &mut Connection, name: &str) -> Result<(), StoreError> {
    let tx = begin_write(conn)?;
    let id = conversation_id(&tx, name)?;
    tx.execute("DELETE FROM checkpoints WHERE conversation_id = ?1", [id])
        .map_err(db)?;
    tx.commit().map_err(db)
}
