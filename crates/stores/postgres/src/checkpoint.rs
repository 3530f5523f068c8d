//! Run checkpoints: at most one per conversation, a row of `checkpoints`
//! holding opaque JSON text. [`ops::append`](crate::ops::append) deletes it
//! in the turn's transaction. Each operation here is one statement, so one
//! atomic step.

use agent_core::StoreError;
use sqlx_core::query::query;
use sqlx_core::query_scalar::query_scalar;
use sqlx_postgres::PgPool;

use crate::error::{db, db_in};

/// Stores `body` (JSON text) as the checkpoint of `name`, replacing any.
pub async fn save(pool: &PgPool, name: &str, body: &str, now: &str) -> Result<(), StoreError> {
    // Inserts nothing when there is no such conversation; a conversation
    // deleted while this runs is a foreign-key violation, also NotFound.
    let saved = query(
        "INSERT INTO checkpoints (conversation, saved_at, body) \
         SELECT name, $2, $3 FROM conversations WHERE name = $1 \
         ON CONFLICT (conversation) DO UPDATE SET saved_at = excluded.saved_at, body = excluded.body",
    )
    .bind(name)
    .bind(now)
    .bind(body)
    .execute(pool)
    .await
    .map_err(|error| db_in(name, error))?;
    if saved.rows_affected() == 0 {
        return Err(StoreError::not_found(name));
    }
    Ok(())
}

/// The checkpoint of `name`, parsed; `None` when it has none.
pub async fn load(pool: &PgPool, name: &str) -> Result<Option<serde_json::Value>, StoreError> {
    let found: Option<Option<String>> = query_scalar(
        "SELECT checkpoints.body FROM conversations \
         LEFT JOIN checkpoints ON checkpoints.conversation = conversations.name \
         WHERE conversations.name = $1",
    )
    .bind(name)
    .fetch_optional(pool)
    .await
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
pub async fn clear(pool: &PgPool, name: &str) -> Result<(), StoreError> {
    let exists: bool = query_scalar(
        "WITH cleared AS (DELETE FROM checkpoints WHERE conversation = $1) \
         SELECT EXISTS (SELECT 1 FROM conversations WHERE name = $1)",
    )
    .bind(name)
    .fetch_one(pool)
    .await
    .map_err(db)?;
    if exists {
        Ok(())
    } else {
        Err(StoreError::not_found(name))
    }
}
