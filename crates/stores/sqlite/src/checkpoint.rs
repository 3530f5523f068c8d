//! Run checkpoints: at most one per conversation, a row of `checkpoints`
//! holding opaque JSON. [`ops::append`](crate::ops::append) deletes it in
//! the turn's transaction.

use agent_core::StoreError;
use rusqlite::{Connection, OptionalExtension};

use crate::db;
use crate::ops::{begin_write, conversation_id};

/// Stores `body` (JSON text) as the checkpoint of `name`, replacing any, in
/// one transaction.
pub fn save(conn: &mut Connection, name: &str, body: &str, now: &str) -> Result<(), StoreError> {
    let tx = begin_write(conn)?;
    let id = conversation_id(&tx, name)?;
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
    serde_json::from_str(&body).map(Some).map_err(|error| {
        StoreError::corrupt(format!(
            "the run checkpoint of conversation `{name}` cannot be read: {error}"
        ))
    })
}

/// Deletes the checkpoint of `name`, if there is one.
pub fn clear(conn: &mut Connection, name: &str) -> Result<(), StoreError> {
    let tx = begin_write(conn)?;
    let id = conversation_id(&tx, name)?;
    tx.execute("DELETE FROM checkpoints WHERE conversation_id = ?1", [id])
        .map_err(db)?;
    tx.commit().map_err(db)
}
