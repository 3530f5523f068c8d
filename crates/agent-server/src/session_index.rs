//! Which sessions each key has: an index by owner, so that listing a key's
//! sessions, and counting them against its limit, reads that key's
//! sessions only instead of every key's.
//!
//! The store stays the truth. The index is filled from one listing of the
//! store when it is first needed, and follows the sessions this instance
//! creates and deletes. Instances sharing a store create sessions the
//! others do not see: so the index adds what a new listing of the store
//! finds when it is asked for more than [`REFRESH`] after the last one
//! (one listing for every key, not one a request). A session found
//! missing from the store (deleted on another instance) is dropped.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use agent_core::{ConversationStore, StoreError};

use crate::sessions::well_formed;

/// How long the index goes without listing the store again, so that
/// sessions created on other instances sharing it show up.
pub(crate) const REFRESH: Duration = Duration::from_secs(30);

/// The sessions of each key, by the key's tag ([`KeyId::tag`](crate::KeyId::tag)).
pub(crate) struct SessionIndex {
    state: Mutex<IndexState>,
    /// One listing of the store at a time.
    listing: tokio::sync::Mutex<()>,
    refresh: Duration,
}

#[derive(Default)]
struct IndexState {
    owners: HashMap<String, Owned>,
    /// When the last listing of the store started.
    listed_at: Option<Instant>,
}

/// One key's sessions.
#[derive(Default)]
struct Owned {
    /// Their public ids.
    ids: BTreeSet<String>,
    /// Sessions being created: they count against the limit already.
    creating: usize,
}

impl SessionIndex {
    /// An empty index that lists the store again after `refresh`.
    pub(crate) fn new(refresh: Duration) -> Self {
        Self {
            state: Mutex::new(IndexState::default()),
            listing: tokio::sync::Mutex::new(()),
            refresh,
        }
    }

    fn lock(&self) -> MutexGuard<'_, IndexState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn fresh(&self) -> bool {
        self.lock()
            .listed_at
            .is_some_and(|listed_at| listed_at.elapsed() < self.refresh)
    }

    /// Adds the sessions of `store` when it was never listed, or not for
    /// the refresh period.
    pub(crate) async fn refresh(&self, store: &dyn ConversationStore) -> Result<(), StoreError> {
        if self.fresh() {
            return Ok(());
        }
        let _listing = self.listing.lock().await;
        if self.fresh() {
            return Ok(());
        }
        let started = Instant::now();
        let metas = store.list().await?;
        let mut state = self.lock();
        for (tag, id) in metas.iter().filter_map(|meta| owner_and_id(&meta.name)) {
            state
                .owners
                .entry(tag.to_owned())
                .or_default()
                .ids
                .insert(id.to_owned());
        }
        state.listed_at = Some(started);
        Ok(())
    }

    /// The sessions of the key `tag`, by public id.
    pub(crate) fn sessions(&self, tag: &str) -> Vec<String> {
        self.lock()
            .owners
            .get(tag)
            .map(|owned| owned.ids.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Room for one more session of `tag`, when it has fewer than `limit`
    /// (sessions being created count); `None` otherwise.
    pub(crate) fn reserve<'a>(&'a self, tag: &str, limit: usize) -> Option<Reservation<'a>> {
        let mut state = self.lock();
        let owned = state.owners.entry(tag.to_owned()).or_default();
        if owned.ids.len() + owned.creating >= limit {
            return None;
        }
        owned.creating += 1;
        Some(Reservation {
            index: self,
            tag: tag.to_owned(),
        })
    }

    /// Forgets the session `id` of `tag` (deleted, or found missing).
    pub(crate) fn remove(&self, tag: &str, id: &str) {
        let mut state = self.lock();
        if let Some(owned) = state.owners.get_mut(tag) {
            owned.ids.remove(id);
            if owned.ids.is_empty() && owned.creating == 0 {
                state.owners.remove(tag);
            }
        }
    }
}

/// Room for a session being created: given back when dropped, unless
/// [`created`](Self::created) says it was.
pub(crate) struct Reservation<'a> {
    index: &'a SessionIndex,
    tag: String,
}

impl Reservation<'_> {
    /// The session `id` was created: it is in the index now.
    pub(crate) fn created(self, id: &str) {
        self.index
            .lock()
            .owners
            .entry(self.tag.clone())
            .or_default()
            .ids
            .insert(id.to_owned());
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut state = self.index.lock();
        if let Some(owned) = state.owners.get_mut(&self.tag) {
            owned.creating = owned.creating.saturating_sub(1);
            if owned.ids.is_empty() && owned.creating == 0 {
                state.owners.remove(&self.tag);
            }
        }
    }
}

/// The owner's tag and the public id of a session stored as `TAG.ID`;
/// `None` for any other conversation of the store.
fn owner_and_id(name: &str) -> Option<(&str, &str)> {
    let (tag, id) = name.split_once('.')?;
    let is_tag = tag.len() == 16 && tag.bytes().all(|byte| byte.is_ascii_hexdigit());
    (is_tag && well_formed(id)).then_some((tag, id))
}

#[cfg(test)]
mod tests {
    use agent_store::InMemoryStore;

    use super::*;

    const A: &str = "0123456789abcdef";
    const B: &str = "fedcba9876543210";

    fn id(n: u8) -> String {
        format!("sess_{n:024x}")
    }

    #[tokio::test]
    async fn a_keys_sessions_are_listed_from_the_index_and_only_its_own() {
        let store = InMemoryStore::new();
        for (tag, n) in [(A, 1), (A, 2), (B, 3)] {
            store
                .create(&format!("{tag}.{}", id(n)))
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
        // Not sessions of the server: another program's conversations.
        for other in ["notes", "0123456789abcdef.draft", "short.sess_000000000000000000000001"] {
            store.create(other).await.unwrap_or_else(|e| panic!("{e}"));
        }
        let index = SessionIndex::new(Duration::from_secs(60));
        index.refresh(&store).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(index.sessions(A), [id(1), id(2)]);
        assert_eq!(index.sessions(B), [id(3)]);
        assert!(index.sessions("0000000000000000").is_empty());

        // Created and deleted here: followed without listing the store.
        store
            .create(&format!("{B}.{}", id(9)))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        index.refresh(&store).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(index.sessions(B), [id(3)], "fresh: the store is not listed again");
        let reserved = index.reserve(A, 10).unwrap_or_else(|| panic!("room"));
        reserved.created(&id(4));
        index.remove(A, &id(1));
        assert_eq!(index.sessions(A), [id(2), id(4)]);
        assert_eq!(index.sessions(B), [id(3)]);
    }

    #[tokio::test]
    async fn a_refresh_adds_sessions_created_elsewhere_and_keeps_those_created_here() {
        let store = InMemoryStore::new();
        let index = SessionIndex::new(Duration::ZERO);
        index.refresh(&store).await.unwrap_or_else(|e| panic!("{e}"));
        index.reserve(A, 10).unwrap_or_else(|| panic!("room")).created(&id(1));
        // Another instance creates one in the shared store.
        store
            .create(&format!("{A}.{}", id(2)))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        index.refresh(&store).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(index.sessions(A), [id(1), id(2)]);
    }

    #[test]
    fn sessions_being_created_count_against_the_limit_until_given_back() {
        let index = SessionIndex::new(Duration::from_secs(60));
        let first = index.reserve(A, 2);
        let second = index.reserve(A, 2);
        assert!(first.is_some() && second.is_some());
        assert!(index.reserve(A, 2).is_none(), "two being created");
        assert!(index.reserve(B, 2).is_some(), "each key has its own limit");
        drop(second);
        if let Some(first) = first {
            first.created(&id(1));
        }
        let third = index.reserve(A, 2);
        assert!(third.is_some(), "the failed creation gave its room back");
        assert!(index.reserve(A, 2).is_none());
    }
}
