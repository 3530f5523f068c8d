//! The sessions API: conversations kept in the server's
//! [`ConversationStore`], each owned by the key that created it. Another
//! key's sessions are not found (404), not forbidden: their ids tell
//! nothing.
//!
//! - `POST /v1/sessions`: a new, empty session (201).
//! - `GET /v1/sessions`: the caller's sessions, most recently used first.
//! - `GET /v1/sessions/{id}`: one session with every stored message.
//! - `DELETE /v1/sessions/{id}`: deletes it (204).
//! - `POST /v1/sessions/{id}/resume`: goes on with its run that did not end
//!   (see [`crate::runs`]).
//!
//! A session is stored under `TAG.ID`, where `TAG` is sixteen hex digits of
//! the owner key's hash ([`KeyId::tag`]), so every store (SQLite,
//! PostgreSQL, memory) keeps the owner without a schema of its own, and
//! instances sharing a store agree on it. Each key may have so many
//! sessions (409 past it); its sessions are found through an index by
//! owner ([`crate::session_index`]), not by listing every key's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use agent_core::{ConversationMeta, StoreError};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::OwnedMutexGuard;

use crate::auth::KeyId;
use crate::error::ApiError;
use crate::runs::registry::new_id;
use crate::state::{Caller, Shared};

/// How a session id starts.
const SESSION_PREFIX: &str = "sess_";

/// Sessions of a key whose metadata a listing reads at once.
const READ_AT_ONCE: usize = 8;

/// Whether `id` has the form of a session id: `sess_` and 24 hex digits.
pub(crate) fn well_formed(id: &str) -> bool {
    id.strip_prefix(SESSION_PREFIX)
        .is_some_and(|digits| digits.len() == 24 && digits.bytes().all(|byte| byte.is_ascii_hexdigit()))
}

/// A session of the caller: its public id and its name in the store.
#[derive(Debug, Clone)]
pub(crate) struct SessionRef {
    pub(crate) id: String,
    pub(crate) stored: String,
}

impl SessionRef {
    /// The caller's session `id`, if `id` has the form of one.
    pub(crate) fn of(caller: KeyId, id: &str) -> Option<Self> {
        well_formed(id).then(|| Self {
            id: id.to_owned(),
            stored: format!("{}.{id}", caller.tag()),
        })
    }
}

/// The store's error for a request about `session`.
pub(crate) fn store_error(session: &str, error: StoreError) -> ApiError {
    match error {
        StoreError::NotFound { .. } => not_found(session),
        other => ApiError::Store(other.to_string()),
    }
}

fn not_found(session: &str) -> ApiError {
    ApiError::NotFound(format!("no session `{session}` for this API key"))
}

impl Shared {
    /// The caller's session `id`, checked to exist, with what is known
    /// of it.
    pub(crate) async fn session(&self, caller: Caller, id: &str) -> Result<(SessionRef, ConversationMeta), ApiError> {
        let session = SessionRef::of(caller.0, id).ok_or_else(|| not_found(id))?;
        match self.store.meta(&session.stored).await {
            Ok(Some(meta)) => Ok((session, meta)),
            Ok(None) => Err(not_found(id)),
            Err(error) => Err(store_error(id, error)),
        }
    }

    /// The caller's sessions with what is known of each, most recently
    /// used first, read through the index; those found missing from the
    /// store (deleted on another instance) leave the index.
    async fn sessions_of(&self, caller: Caller) -> Result<Vec<(String, ConversationMeta)>, ApiError> {
        let tag = caller.0.tag();
        self.session_index
            .refresh(self.store.as_ref())
            .await
            .map_err(|error| ApiError::Store(error.to_string()))?;
        let (owner, store) = (tag.as_str(), self.store.as_ref());
        let read: Vec<_> = futures::stream::iter(self.session_index.sessions(owner))
            .map(|id| async move {
                let meta = store.meta(&format!("{owner}.{id}")).await;
                (id, meta)
            })
            .buffer_unordered(READ_AT_ONCE)
            .collect()
            .await;
        let mut sessions = Vec::with_capacity(read.len());
        for (id, meta) in read {
            match meta {
                Ok(Some(meta)) => sessions.push((id, meta)),
                Ok(None) => self.session_index.remove(&tag, &id),
                Err(error) => return Err(store_error(&id, error)),
            }
        }
        // As stores list them: most recently updated first, ties by name.
        sessions.sort_by(|(a_id, a), (b_id, b)| b.updated_at.cmp(&a.updated_at).then_with(|| a_id.cmp(b_id)));
        Ok(sessions)
    }
}

/// The public view of a stored session.
fn view(id: &str, meta: &ConversationMeta) -> Value {
    json!({
        "id": id,
        "object": "session",
        "created_at": meta.created_at,
        "updated_at": meta.updated_at,
        "message_count": meta.message_count,
        "user_turns": meta.user_turns,
        "provider": meta.provider,
        "model": meta.model,
        "usage": meta.usage,
        "cost_usd": meta.cost_usd,
        "interrupted": meta.has_checkpoint,
    })
}

/// `POST /v1/sessions`: 409 when the caller has as many sessions as it
/// may.
pub(crate) async fn create(State(shared): State<Arc<Shared>>, caller: Caller) -> Result<Response, ApiError> {
    let tag = caller.0.tag();
    let limit = shared.max_sessions_per_key;
    shared
        .session_index
        .refresh(shared.store.as_ref())
        .await
        .map_err(|error| ApiError::Store(error.to_string()))?;
    let reserved = if let Some(reserved) = shared.session_index.reserve(&tag, limit) {
        reserved
    } else {
        // Some may have been deleted on another instance: look.
        shared.sessions_of(caller).await?;
        shared
            .session_index
            .reserve(&tag, limit)
            .ok_or(ApiError::TooManySessions { limit })?
    };
    let id = new_id(SESSION_PREFIX);
    let session = SessionRef::of(caller.0, &id).ok_or_else(|| ApiError::Store("a session id was malformed".into()))?;
    let meta = shared
        .store
        .create(&session.stored)
        .await
        .map_err(|error| store_error(&id, error))?;
    reserved.created(&id);
    Ok((StatusCode::CREATED, Json(view(&id, &meta))).into_response())
}

/// `GET /v1/sessions`.
pub(crate) async fn list(State(shared): State<Arc<Shared>>, caller: Caller) -> Result<Json<Value>, ApiError> {
    let sessions = shared.sessions_of(caller).await?;
    let data: Vec<Value> = sessions.iter().map(|(id, meta)| view(id, meta)).collect();
    Ok(Json(json!({"object": "list", "data": data})))
}

/// `GET /v1/sessions/{id}`: the session and its transcript.
pub(crate) async fn show(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let session = SessionRef::of(caller.0, &id).ok_or_else(|| not_found(&id))?;
    let conversation = shared
        .store
        .transcript(&session.stored)
        .await
        .map_err(|error| store_error(&id, error))?
        .ok_or_else(|| not_found(&id))?;
    let mut shown = view(&id, &conversation.meta);
    shown["messages"] = serde_json::to_value(&conversation.messages).unwrap_or_default();
    Ok(Json(shown))
}

/// `DELETE /v1/sessions/{id}`: waits for a run of it in this instance to
/// end first.
pub(crate) async fn delete(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let session = SessionRef::of(caller.0, &id).ok_or_else(|| not_found(&id))?;
    let _turn = shared.session_locks.lock(&session.stored).await;
    let deleted = shared.store.delete(&session.stored).await;
    if matches!(deleted, Ok(()) | Err(StoreError::NotFound { .. })) {
        shared.session_index.remove(&caller.0.tag(), &id);
    }
    deleted.map_err(|error| store_error(&id, error))?;
    Ok(StatusCode::NO_CONTENT)
}

/// One turn at a time per session in this instance: a run holds its
/// session from loading the history to storing its turn, so that the next
/// run continues it. (Instances sharing a store store concurrent turns one
/// after the other, whole; each was run on the history it loaded.)
#[derive(Default, Clone)]
pub(crate) struct SessionLocks {
    locks: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
}

/// A session held by a run; given back when dropped.
pub(crate) struct SessionGuard {
    locks: SessionLocks,
    name: String,
    guard: Option<OwnedMutexGuard<()>>,
}

impl SessionLocks {
    /// Waits for the session `stored` and holds it.
    pub(crate) async fn lock(&self, stored: &str) -> SessionGuard {
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(locks.entry(stored.to_owned()).or_default())
        };
        SessionGuard {
            locks: self.clone(),
            name: stored.to_owned(),
            guard: Some(lock.lock_owned().await),
        }
    }

    /// Sessions held or waited for.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.locks.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.guard = None;
        let mut locks = self.locks.locks.lock().unwrap_or_else(PoisonError::into_inner);
        // Nobody else holds or waits for it: forget it.
        if locks.get(&self.name).is_some_and(|lock| Arc::strong_count(lock) == 1) {
            locks.remove(&self.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::auth::ApiKeys;

    #[test]
    fn a_session_id_is_stored_under_its_owners_tag_and_malformed_ids_are_none() {
        let keys = ApiKeys::from_hashes([crate::hash_key("a"), crate::hash_key("b")]).unwrap_or_else(|e| panic!("{e}"));
        let (Some(a), Some(b)) = (keys.identify("a"), keys.identify("b")) else {
            panic!("both keys are configured")
        };
        let id = new_id(SESSION_PREFIX);
        let (of_a, of_b) = (SessionRef::of(a, &id), SessionRef::of(b, &id));
        assert!(of_a.is_some() && of_b.is_some());
        assert_ne!(of_a.map(|s| s.stored), of_b.map(|s| s.stored), "each key its own");
        for bad in [
            "",
            "sess_",
            "sess_../../x",
            "run_0123456789abcdef01234567",
            "sess_0123456789abcdef0123456z",
        ] {
            assert!(SessionRef::of(a, bad).is_none(), "{bad}");
        }
        let stored = SessionRef::of(a, &id).map(|s| s.stored).unwrap_or_default();
        assert!(agent_core::validate_conversation_name(&stored).is_ok(), "{stored}");
    }

    #[tokio::test]
    async fn a_second_turn_of_a_session_waits_for_the_first_and_the_lock_is_forgotten_after() {
        let locks = SessionLocks::default();
        let first = locks.lock("s").await;
        let second = tokio::spawn({
            let locks = locks.clone();
            async move { drop(locks.lock("s").await) }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!second.is_finished(), "it waits");
        drop(first);
        tokio::time::timeout(Duration::from_secs(5), second)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(locks.len(), 0);
    }
}
