//! Run checkpoints: at most one per conversation, a row of `checkpoints`
//! holding opaque JSON text, its attachments kept once in `media` like a
//! message's. [`ops::append`](crate::ops::append) deletes it in the turn's
//! transaction. Saving is one transaction; the other operations are one
//! statement each.

use agent_core::StoreError;
use sqlx_core::query::query;
use sqlx_core::query_scalar::query_scalar;
use sqlx_postgres::PgPool;

use crate::error::{db, db_in};

/// Stores `body` (JSON text, its attachments references to `media`) as the
/// checkpoint of `name`, replacing any, in one transaction.
pub async fn save(
    pool: &PgPool,
    name: &str,
    body: &str,
    media: &[agent_store::MediaBlob],
    now: &str,
) -> Result<(), StoreError> {
    let mut tx = pool.begin().await.map_err(db)?;
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
    .execute(&mut *tx)
    .await
    .map_err(|error| db_in(name, error))?;
    if saved.rows_affected() == 0 {
        return Err(StoreError::not_found(name));
    }
    let media: Vec<&agent_store::MediaBlob> = media.iter().collect();
    crate::ops::insert_media(&mut tx, name, &media).await?;
    tx.commit().await.map_err(|error| db_in(name, error))
}

/// The checkpoint of `name`, parsed; `None` when it has none.
pub async fn load(pool: &PgPool, name: &str) -> Result<Option<serde_json::Value>, StoreError> {
    let mut conn = pool.acquire().await.map_err(db)?;
    let found: Option<Option<String>> = query_scalar(
        "SELECT checkpoints.body FROM conversations \
         LEFT JOIN checkpoints ON checkpoints.conversation = conversations.name \
         WHERE conversations.name = $1",
    )
    .bind(name)
    .fetch_optional(&mut *conn)
    .await
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
        let held = crate::context::held_media(&mut conn, hashes).await?;
        agent_store::restore_value(name, &mut checkpoint, &held)?;
    }
    Ok(Some(checkpoint))
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
