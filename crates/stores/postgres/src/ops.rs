//! Creating, appending to, listing, deleting and importing conversations.
//!
//! Every write that depends on what is stored runs in one transaction that
//! first locks the conversation's row (`SELECT ... FOR UPDATE`): writers of
//! one conversation, from any pool or process, wait for each other, and
//! each reads the row as the previous one committed it. Writers of
//! different conversations do not wait for each other.

use agent_core::{ConversationMeta, StoreError, Usage};
use agent_store::{EncodedMessage, EncodedTurn};
use sqlx_core::query::query;
use sqlx_core::row::Row;
use sqlx_postgres::{PgConnection, PgPool, PgRow};

use crate::error::{db, db_in};

/// The columns [`meta_of`] reads, from `conversations`.
macro_rules! meta_columns {
    () => {
        "name, created_at, updated_at, provider, model, input_tokens, output_tokens, cache_read_tokens, \
         cache_write_tokens, reasoning_tokens, cost_usd, message_count, user_turns, \
         EXISTS (SELECT 1 FROM checkpoints WHERE checkpoints.conversation = conversations.name)"
    };
}

/// A count read from a `BIGINT` column (negative values read as 0).
pub fn count(row: &PgRow, index: usize) -> Result<u64, StoreError> {
    Ok(row.try_get::<i64, _>(index).map_err(db)?.max(0) as u64)
}

/// The `meta_columns!` of `row`.
fn meta_of(row: &PgRow) -> Result<ConversationMeta, StoreError> {
    let text = |index: usize| row.try_get::<String, _>(index).map_err(db);
    Ok(ConversationMeta {
        name: text(0)?,
        created_at: text(1)?,
        updated_at: text(2)?,
        provider: text(3)?,
        model: text(4)?,
        usage: Usage {
            input_tokens: count(row, 5)?,
            output_tokens: count(row, 6)?,
            cache_read_tokens: count(row, 7)?,
            cache_write_tokens: count(row, 8)?,
            reasoning_tokens: count(row, 9)?,
        },
        cost_usd: row.try_get(10).map_err(db)?,
        message_count: count(row, 11)?,
        user_turns: count(row, 12)?,
        has_checkpoint: row.try_get(13).map_err(db)?,
    })
}

/// `value` as a `BIGINT`.
pub fn to_sql_count(value: u64) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::backend(format!("the count {value} is too large to store")))
}

/// The metadata of the conversation `name`, if it exists.
pub async fn read_meta(conn: &mut PgConnection, name: &str) -> Result<Option<ConversationMeta>, StoreError> {
    let sql = concat!("SELECT ", meta_columns!(), " FROM conversations WHERE name = $1");
    let row = query(sql).bind(name).fetch_optional(conn).await.map_err(db)?;
    row.as_ref().map(meta_of).transpose()
}

/// Locks the row of the conversation `name` until the transaction `conn`
/// is in ends, waiting for any other transaction that holds it, and
/// returns its metadata as last committed; a [`StoreError::NotFound`] when
/// there is no such conversation.
pub async fn lock(conn: &mut PgConnection, name: &str) -> Result<ConversationMeta, StoreError> {
    let sql = concat!("SELECT ", meta_columns!(), " FROM conversations WHERE name = $1");
    let row = query(sql).bind(name).fetch_optional(conn).await.map_err(db)?;
    row.as_ref()
        .map(meta_of)
        .transpose()?
        .ok_or_else(|| StoreError::not_found(name))
}

/// Creates an empty conversation.
pub async fn create(pool: &PgPool, name: &str, now: &str) -> Result<ConversationMeta, StoreError> {
    let inserted = query(
        "INSERT INTO conversations (name, created_at, updated_at) VALUES ($1, $2, $2) ON CONFLICT (name) DO NOTHING",
    )
    .bind(name)
    .bind(now)
    .execute(pool)
    .await
    .map_err(db)?;
    if inserted.rows_affected() == 0 {
        return Err(StoreError::already_exists(name));
    }
    Ok(ConversationMeta::new(name, now))
}

/// Stores `messages` as those of `name` numbered from `first_seq`, all of
/// turn `turn`, in one statement.
async fn insert_messages(
    conn: &mut PgConnection,
    name: &str,
    first_seq: i64,
    turn: i64,
    messages: &[EncodedMessage],
) -> Result<(), StoreError> {
    if messages.is_empty() {
        return Ok(());
    }
    let roles: Vec<&str> = messages.iter().map(|message| message.role).collect();
    let bodies: Vec<&str> = messages.iter().map(|message| message.body.as_str()).collect();
    query(
        "INSERT INTO messages (conversation, seq, turn, role, body) \
         SELECT $1, $2 + m.position - 1, $3, m.role, m.body \
         FROM unnest($4::text[], $5::text[]) WITH ORDINALITY AS m (role, body, position)",
    )
    .bind(name)
    .bind(first_seq)
    .bind(turn)
    .bind(roles)
    .bind(bodies)
    .execute(&mut *conn)
    .await
    .map_err(|error| db_in(name, error))?;
    let media: Vec<&agent_store::MediaBlob> = messages.iter().flat_map(|message| &message.media).collect();
    insert_media(conn, name, &media).await
}

/// Keeps each of `media` once in the store, used by `name`.
pub(crate) async fn insert_media(
    conn: &mut PgConnection,
    name: &str,
    media: &[&agent_store::MediaBlob],
) -> Result<(), StoreError> {
    for blob in media {
        query(
            "INSERT INTO media (sha256, mime_type, size, data) VALUES ($1, $2, $3, $4) ON CONFLICT (sha256) DO NOTHING",
        )
        .bind(&blob.sha256)
        .bind(&blob.mime_type)
        .bind(to_sql_count(blob.data.len() as u64)?)
        .bind(&blob.data[..])
        .execute(&mut *conn)
        .await
        .map_err(|error| db_in(name, error))?;
        query("INSERT INTO conversation_media (conversation, sha256) VALUES ($1, $2) ON CONFLICT DO NOTHING")
            .bind(name)
            .bind(&blob.sha256)
            .execute(&mut *conn)
            .await
            .map_err(|error| db_in(name, error))?;
    }
    Ok(())
}

/// Appends one turn and its metadata delta in one transaction, under the
/// conversation's row lock, and removes its checkpoint in the same
/// transaction.
pub async fn append(pool: &PgPool, name: &str, turn: &EncodedTurn, now: &str) -> Result<ConversationMeta, StoreError> {
    let mut tx = pool.begin().await.map_err(db)?;
    // Waits here while another transaction appends to (or compacts) `name`,
    // then reads the counts it committed.
    let row = query("SELECT message_count, turn_count FROM conversations WHERE name = $1 FOR UPDATE")
        .bind(name)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db)?
        .ok_or_else(|| StoreError::not_found(name))?;
    let next_seq: i64 = row.try_get(0).map_err(db)?;
    let turn_index: i64 = row.try_get(1).map_err(db)?;
    insert_messages(&mut tx, name, next_seq, turn_index, &turn.messages).await?;
    // The turn ends the run its checkpoint belongs to: never keep both.
    query("DELETE FROM checkpoints WHERE conversation = $1")
        .bind(name)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    query(
        "UPDATE conversations SET updated_at = $2, provider = coalesce($3, provider), model = coalesce($4, model), \
         input_tokens = input_tokens + $5, output_tokens = output_tokens + $6, \
         cache_read_tokens = cache_read_tokens + $7, cache_write_tokens = cache_write_tokens + $8, \
         reasoning_tokens = reasoning_tokens + $9, cost_usd = cost_usd + $10, \
         message_count = message_count + $11, user_turns = user_turns + $12, turn_count = turn_count + 1 \
         WHERE name = $1",
    )
    .bind(name)
    .bind(now)
    .bind(turn.provider.as_deref())
    .bind(turn.model.as_deref())
    .bind(to_sql_count(turn.usage.input_tokens)?)
    .bind(to_sql_count(turn.usage.output_tokens)?)
    .bind(to_sql_count(turn.usage.cache_read_tokens)?)
    .bind(to_sql_count(turn.usage.cache_write_tokens)?)
    .bind(to_sql_count(turn.usage.reasoning_tokens)?)
    .bind(turn.cost_usd)
    .bind(to_sql_count(turn.messages.len() as u64)?)
    .bind(to_sql_count(turn.user_messages)?)
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    let meta = read_meta(&mut tx, name)
        .await?
        .ok_or_else(|| StoreError::not_found(name))?;
    tx.commit().await.map_err(db)?;
    Ok(meta)
}

/// Every conversation's metadata, most recently updated first (ties by name).
pub async fn list(pool: &PgPool) -> Result<Vec<ConversationMeta>, StoreError> {
    let sql = concat!(
        "SELECT ",
        meta_columns!(),
        " FROM conversations ORDER BY updated_at DESC, name ASC"
    );
    let rows = query(sql).fetch_all(pool).await.map_err(db)?;
    rows.iter().map(meta_of).collect()
}

/// Deletes a conversation; its messages, summaries, checkpoint and media
/// uses go with it (`ON DELETE CASCADE`), and the media no other
/// conversation uses, in one transaction.
pub async fn delete(pool: &PgPool, name: &str) -> Result<(), StoreError> {
    let mut tx = pool.begin().await.map_err(db)?;
    let deleted = query("DELETE FROM conversations WHERE name = $1")
        .bind(name)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    if deleted.rows_affected() == 0 {
        return Err(StoreError::not_found(name));
    }
    query(
        "DELETE FROM media WHERE NOT EXISTS \
         (SELECT 1 FROM conversation_media WHERE conversation_media.sha256 = media.sha256)",
    )
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)
}

/// Stores a whole conversation with its metadata, as turn 0, in one
/// transaction.
pub async fn import(
    pool: &PgPool,
    meta: &ConversationMeta,
    messages: &[EncodedMessage],
) -> Result<ConversationMeta, StoreError> {
    let mut tx = pool.begin().await.map_err(db)?;
    let inserted = query(
        "INSERT INTO conversations (name, created_at, updated_at, provider, model, input_tokens, output_tokens, \
         cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, message_count, user_turns, turn_count) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 1) ON CONFLICT (name) DO NOTHING",
    )
    .bind(meta.name.as_str())
    .bind(meta.created_at.as_str())
    .bind(meta.updated_at.as_str())
    .bind(meta.provider.as_str())
    .bind(meta.model.as_str())
    .bind(to_sql_count(meta.usage.input_tokens)?)
    .bind(to_sql_count(meta.usage.output_tokens)?)
    .bind(to_sql_count(meta.usage.cache_read_tokens)?)
    .bind(to_sql_count(meta.usage.cache_write_tokens)?)
    .bind(to_sql_count(meta.usage.reasoning_tokens)?)
    .bind(meta.cost_usd)
    .bind(to_sql_count(meta.message_count)?)
    .bind(to_sql_count(meta.user_turns)?)
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    if inserted.rows_affected() == 0 {
        return Err(StoreError::already_exists(&meta.name));
    }
    insert_messages(&mut tx, &meta.name, 0, 0, messages).await?;
    tx.commit().await.map_err(db)?;
    Ok(meta.clone())
}
